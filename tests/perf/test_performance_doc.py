"""docs/performance.md's validation table is what benchmarks/bench_explain.py makes of the
logged H100 run, with the model as it is now: a change to the model or the constants that moves
a prediction must update the page (python benchmarks/bench_explain.py --table LOG)."""

import importlib.util
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("nvcc") is None,
                    reason="the table's occupancy uses ptxas's registers: needs nvcc")
def test_the_validation_table_is_the_logged_run_predicted_now():
    text = (ROOT / "docs" / "performance.md").read_text()
    found = re.search(r"<!-- explain-table (\S+) -->\n(.*?)\n<!-- end explain-table -->", text,
                      re.S)
    assert found, "docs/performance.md lost its explain-table markers"
    spec = importlib.util.spec_from_file_location("bench_explain",
                                                  ROOT / "benchmarks" / "bench_explain.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.table(str(ROOT / found.group(1)))
    assert found.group(2).strip() == bench.render(rows).strip(), (
        "docs/performance.md is stale: paste python benchmarks/bench_explain.py --table "
        f"{found.group(1)}")
    assert len(rows) == 32 and all(r["measured_ms"] > 0 for r in rows)
