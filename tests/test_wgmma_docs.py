"""docs/wgmma.md shows what tcsim computes today: the fragment tables and the example."""

import re
import runpy
from pathlib import Path

TREE = Path(__file__).resolve().parent.parent
DOC = TREE / "docs" / "wgmma.md"


def test_fragment_tables_are_current():
    shown = re.search(r"<!-- wgmma-tables -->\n(.*?)<!-- /wgmma-tables -->", DOC.read_text(),
                      re.S).group(1)
    tables = runpy.run_path(str(TREE / "scripts" / "wgmma_tables.py"))["tables"]
    assert shown == tables(), "run python scripts/wgmma_tables.py and paste its output"


def test_python_example_runs():
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "wgmma.md", "exec"), namespace)
    D, d = namespace["D"], namespace["d"]
    assert D.shape == (100, 64, 128) and d.shape == (100, 128, 64)
    frag = namespace["tcsim"].wgmma_fragment(namespace["q"], "d")
    assert (frag.pack(D) == d).all()
