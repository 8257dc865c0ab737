"""A page's Python blocks run in order in one namespace, as a reader runs them, and what each
prints: the ```text block right after a ```python block is its output.

    python tests/doc_blocks.py docs/own-kernel.md    rewrite those outputs from a run

(run from the repository root; tests/test_docs.py checks that the page shows what its blocks
print today).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

# a python block, and the text block that follows it (after at most one blank line), if any
BLOCK = re.compile(r"```python\n(.*?)```\n(\n?```text\n(.*?)```\n)?", re.S)


def run_blocks(page: Path) -> list[tuple[str, str | None, str]]:
    """(code, the output the page shows or None, what the code prints) for each block."""
    namespace: dict = {"__name__": "__doc__"}
    out = []
    for match in BLOCK.finditer(page.read_text()):
        code, shown = match.group(1), match.group(3)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, page.name, "exec"), namespace)
        out.append((code, shown, printed.getvalue()))
    return out


def check_blocks(blocks, page: Path) -> None:
    """Each block with an output block under it prints that output (trailing spaces aside)."""
    lines = lambda text: [line.rstrip() for line in text.rstrip().splitlines()]  # noqa: E731
    for code, text, printed in blocks:
        if text is not None:
            assert lines(printed) == lines(text), \
                f"block {code[:60]!r}... prints otherwise: run python tests/doc_blocks.py {page}"


def rewrite(page: Path) -> int:
    """Write each block's printed output into the text block after it; the blocks changed."""
    results = iter(run_blocks(page))
    changed = 0

    def output(match: re.Match) -> str:
        nonlocal changed
        code, shown, printed = next(results)
        if shown is None:
            return match.group(0)
        changed += shown != printed
        return f"```python\n{code}```\n\n```text\n{printed}```\n"

    page.write_text(BLOCK.sub(output, page.read_text()))
    return changed


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"{name}: {rewrite(Path(name))} output block(s) rewritten")
