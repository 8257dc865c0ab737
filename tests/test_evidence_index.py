"""docs/evidence/README.md indexes every evidence file: a file without a row, or a row naming a
file that is not there, fails here (the naming rule for new files is in that README)."""

import re
from pathlib import Path

import pytest

EVIDENCE = Path(__file__).resolve().parent.parent / "docs" / "evidence"


def test_every_evidence_file_has_a_row_and_every_row_a_file():
    if not (EVIDENCE / "README.md").is_file():
        pytest.skip(f"no {EVIDENCE} beside the tests (source tree absent)")
    rows = set(re.findall(r"^\| `([^`]+)` \|", (EVIDENCE / "README.md").read_text(), re.M))
    files = {p.name for p in EVIDENCE.iterdir() if p.name != "README.md"}
    assert files and rows
    assert sorted(files - rows) == [], "evidence files without a row in docs/evidence/README.md"
    assert sorted(rows - files) == [], "rows in docs/evidence/README.md without a file"
