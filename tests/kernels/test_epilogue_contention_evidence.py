"""What the staged epilogues' contention study measured on the H100 (docs/kernels.md, "What the
extra wavefronts are"; docs/evidence/study_epilogue_contention_kernel9_kernel10.json, written by
scripts/study_epilogue_contention.py), against the trace the current code computes: the
addresses' wavefronts (ncu's SASS-derived counters) equal it at every launch, kernel10 with
nothing else at the shared-memory banks counts exactly it, and the twin as it runs counts
more, a different number at each launch of the same inputs."""

import json
from pathlib import Path

import pytest

import tcsim

LOG = Path(__file__).parents[2] / "docs/evidence/study_epilogue_contention_kernel9_kernel10.json"
STUDY = json.loads(LOG.read_text())
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum"
SASS = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
SASS_CONFLICTS = "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_{}sm.sum"


def _trace(case: str) -> dict:
    name, shape, acc = case.split()
    M, N, K = map(int, shape.split("x"))
    return tcsim.trace(name, M, N, K, accumulate=acc, beta=1.0).totals


TRACES = {case: _trace(case) for case in {r["case"] for r in STUDY["launches"]}}


def _launches(variant: str, kernel: str) -> list[dict]:
    return [r for r in STUDY["launches"] if r["variant"] == variant and r["kernel"] == kernel]


def test_the_study_ran_on_the_h100_and_every_variant_kept_d():
    assert STUDY["device"].startswith("NVIDIA H100")
    assert STUDY["preflight"] == []  # every variant's D equalled the twin's
    assert {r["variant"] for r in STUDY["launches"]} == set(STUDY["variants"])


@pytest.mark.parametrize("row", STUDY["sass"], ids=lambda r: f"{r['case']} {r['variant']}")
def test_the_addresses_wavefronts_equal_the_trace_at_every_launch(row):
    trace = TRACES[row["case"]]
    for op in ("ld", "st"):
        sass = row["ncu"][SASS.format(op)] + row["ncu"][SASS.format(op + "sm")]
        assert sass == trace[WAVEFRONTS.format(op)], (row["case"], op)
        assert row["ncu"][SASS_CONFLICTS.format(op)] == 0 == trace[CONFLICTS.format(op)]


def test_kernel10_with_nothing_beside_its_epilogues_counts_the_trace_exactly():
    quiet = _launches("quiet", "kernel10")
    assert len(quiet) == 3
    for row in quiet:
        trace = TRACES[row["case"]]
        for op in ("ld", "st"):
            assert row["ncu"][WAVEFRONTS.format(op)] == trace[WAVEFRONTS.format(op)] > 0
            assert row["ncu"][CONFLICTS.format(op)] == 0


@pytest.mark.parametrize("kernel", ["kernel9", "kernel10"])
def test_the_twin_as_it_runs_counts_more_and_a_different_number_each_launch(kernel):
    """Five launches of the same inputs: each over the trace, by different amounts, and
    wavefronts less conflicts never under the trace nor more than 17% over it (the part
    ncu does not call conflicts: kernel10's ldmatrix beside the other consumer's wgmma)."""
    rows = _launches("default", kernel)
    assert len(rows) == 5
    trace = TRACES[rows[0]["case"]]
    for op in ("ld", "st"):
        counts = [row["ncu"][WAVEFRONTS.format(op)] for row in rows]
        want = trace[WAVEFRONTS.format(op)]
        assert min(counts) > want and len(set(counts)) == 5, (op, counts)
        for row in rows:
            less = row["ncu"][WAVEFRONTS.format(op)] - row["ncu"][CONFLICTS.format(op)]
            assert want <= less <= 1.17 * want, (op, less)
