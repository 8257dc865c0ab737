"""The fragment tables of docs/wgmma.md, printed from tcsim's warpgroup maps.

``python scripts/wgmma_tables.py`` prints what docs/wgmma.md shows between its
``<!-- wgmma-tables -->`` markers; tests/test_wgmma_docs.py keeps the two equal.
"""

from tcsim.isa.wgmma import wgmma_fragment

# (qualifier, operand, matrix rows shown): warp 0's 16 rows and the first two of warp 1.
SHOWN = (("m64n16k16.f32.f16.f16", "d", 18), ("m64n8k8.f32.tf32.tf32", "a", 18))


def excerpt(qualifier: str, operand: str, rows: int) -> str:
    """The first ``rows`` matrix rows of a map's table (FragmentMap.table's format)."""
    lines = wgmma_fragment(qualifier, operand).table().splitlines()
    return "\n".join(lines[:2 + rows] + [f"  ... rows {rows}..63: lanes + 32 every 16 rows"])


def tables() -> str:
    return "\n".join(f"```text\n{excerpt(*shown)}\n```\n" for shown in SHOWN)


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    print(tables(), end="")
