"""Documentation blocks that tcsim draws must be what tcsim prints today."""

import re
from pathlib import Path

from tcsim.memory import access

DOCS = Path(__file__).resolve().parent.parent / "docs"
HEATMAP = re.compile(r"<!-- tcsim-heatmap (\S+) (.+?) -->\n```text\n(.*?)\n```", re.S)


def test_heatmaps_in_bank_conflicts_doc_are_current():
    text = (DOCS / "bank-conflicts.md").read_text()
    blocks = HEATMAP.findall(text)
    assert len(blocks) >= 3
    for instruction, expression, shown in blocks:
        addresses = eval(expression, {"__builtins__": {"range": range}})
        assert access(instruction, addresses).heatmap() == shown, instruction
