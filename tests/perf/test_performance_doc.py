"""docs/performance.md's validation table is what benchmarks/bench_explain.py makes of the
logged H100 run, with the model as it is now: a change to the model or the constants that moves
a prediction must update the page (python benchmarks/bench_explain.py --table LOG)."""

import re
import shutil
from pathlib import Path

import pytest
from repo_script import load

ROOT = Path(__file__).resolve().parents[2]


def _bench_explain():
    return load("benchmarks/bench_explain.py")


@pytest.mark.skipif(shutil.which("nvcc") is None,
                    reason="the table's occupancy uses ptxas's registers: needs nvcc")
def test_the_validation_table_is_the_logged_run_predicted_now():
    text = (ROOT / "docs" / "performance.md").read_text()
    found = re.search(r"<!-- explain-table ([^>]+?) -->\n(.*?)\n<!-- end explain-table -->",
                      text, re.S)
    assert found, "docs/performance.md lost its explain-table markers"
    bench = _bench_explain()
    logs = found.group(1).split()
    rows = bench.table([str(ROOT / log) for log in logs])
    assert found.group(2).strip() == bench.render(rows).strip(), (
        "docs/performance.md is stale: paste python benchmarks/bench_explain.py --table "
        f"{found.group(1)}")
    kernels = {r["kernel"] for r in rows}  # every kernel of the library, at both shapes
    assert len(rows) == 48 and all(r["measured_ms"] > 0 for r in rows)
    assert kernels == set(bench.tcsim.kernels.KERNELS) | set(bench.tcsim.kernels.HOPPER_KERNELS) \
        | set(bench.tcsim.kernels.SEED_KERNELS)


@pytest.mark.skipif(shutil.which("nvcc") is None,
                    reason="the table's occupancy uses ptxas's registers: needs nvcc")
def test_the_article_table_is_the_model_now():
    text = (ROOT / "docs" / "performance.md").read_text()
    found = re.search(r"<!-- article-table -->\n(.*?)\n<!-- end article-table -->", text, re.S)
    assert found, "docs/performance.md lost its article-table markers"
    bench = _bench_explain()
    assert found.group(1).strip() == bench.article_table().strip(), (
        "docs/performance.md is stale: paste python benchmarks/bench_explain.py --article")


def test_nsight_computes_busiest_unit_is_named_by_the_models_rule():
    """The l1tex data pipe is "shared" when shared memory makes most of it, else "l1"; no unit
    60% busy is latency, whatever its share."""
    bench = _bench_explain()
    sol = bench.SOL
    quiet = dict.fromkeys(sol.values(), 10.0)
    assert bench.ncu_limiter({**quiet, sol["l1"]: 79.0, sol["shared"]: 48.0}) == "shared"
    assert bench.ncu_limiter({**quiet, sol["l1"]: 96.4, sol["shared"]: 0.0}) == "l1"
    assert bench.ncu_limiter({**quiet, sol["l1"]: 55.0, sol["shared"]: 50.0}) == "latency"
    assert bench.ncu_limiter({**quiet, sol["tensor"]: 93.0, sol["l1"]: 59.0}) == "tensor"
