"""Inline PTX spelled once: the pieces every probe generator writes the same way."""


def operands(first: int, count: int) -> str:
    """A brace list of ``count`` asm operands from ``%first``: ``{%4, %5, %6}``."""
    return "{" + ", ".join(f"%{first + i}" for i in range(count)) + "}"
