"""What the staged epilogues' contention study measured on the H100 (docs/kernels.md, "What the
extra wavefronts are"; docs/evidence/study_epilogue_contention_kernel9_kernel10.json and
..._kernel9_all_loads.json, written by scripts/study_epilogue_contention.py), against the
trace the current code computes: the addresses' wavefronts (ncu's SASS-derived counters) equal
it at every launch, kernel9 and kernel10 with nothing else at the shared-memory banks count
exactly it, and the twins as they run count more, a different number at each launch of the
same inputs. And the hw test's log with those SASS-derived counters
(docs/evidence/hw_hopper_counters_sass.jsonl: every Hopper counter case) against the trace."""

import json
from pathlib import Path

import pytest

import tcsim
from tcsim.kernels import kernel_named

EVIDENCE = Path(__file__).parents[2] / "docs/evidence"
STUDY = json.loads((EVIDENCE / "study_epilogue_contention_kernel9_kernel10.json").read_text())
# the second run: kernel9's quiet variant waits for all four loads of C before its first store
KERNEL9 = json.loads((EVIDENCE / "study_epilogue_contention_kernel9_all_loads.json").read_text())
HW_LOG = [json.loads(line) for line in
          (EVIDENCE / "hw_hopper_counters_sass.jsonl").read_text().splitlines() if line.strip()]
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum"
SASS = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
SASS_CONFLICTS = "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_{}sm.sum"


def _trace(case: str) -> dict:
    name, shape, acc = case.split()
    M, N, K = map(int, shape.split("x"))
    return tcsim.trace(name, M, N, K, accumulate=acc, beta=1.0).totals


TRACES = {case: _trace(case) for case in {r["case"] for r in STUDY["launches"]}}


def _launches(variant: str, kernel: str, study=STUDY) -> list[dict]:
    return [r for r in study["launches"] if r["variant"] == variant and r["kernel"] == kernel]


@pytest.mark.parametrize("study", [STUDY, KERNEL9], ids=["both", "kernel9_all_loads"])
def test_the_study_ran_on_the_h100_and_every_variant_kept_d(study):
    assert study["device"].startswith("NVIDIA H100")
    assert study["preflight"] == []  # every variant's D equalled the twin's
    assert {r["variant"] for r in study["launches"]} == set(study["variants"])


@pytest.mark.parametrize("row", STUDY["sass"] + KERNEL9["sass"],
                         ids=lambda r: f"{r['case']} {r['variant']}")
def test_the_addresses_wavefronts_equal_the_trace_at_every_launch(row):
    trace = TRACES[row["case"]]
    for op in ("ld", "st"):
        sass = row["ncu"][SASS.format(op)] + row["ncu"][SASS.format(op + "sm")]
        assert sass == trace[WAVEFRONTS.format(op)], (row["case"], op)
        assert row["ncu"][SASS_CONFLICTS.format(op)] == 0 == trace[CONFLICTS.format(op)]


@pytest.mark.parametrize("kernel, study", [("kernel10", STUDY), ("kernel9", KERNEL9)])
def test_with_nothing_beside_its_epilogues_counts_the_trace_exactly(kernel, study):
    quiet = _launches("quiet", kernel, study)
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


def _hw_label(record) -> str:
    return f"{record['kernel']} {record['shape']} beta {record['beta']} {record['params']}"


@pytest.mark.parametrize("record", HW_LOG, ids=_hw_label)
def test_every_hopper_counter_case_needs_the_trace_s_wavefronts_by_its_addresses(record):
    """The hw test's exact rule (tests/hw/test_hopper_hw.py, `ADDRESSED`) on its log: ld.shared
    plus ldmatrix and st.shared plus stmatrix wavefronts, and ldmatrix's and stmatrix's
    conflicts, as ncu derives them from the addresses, are the trace's."""
    M, N, K = record["shape"]
    try:
        kernel_named(record["kernel"]).params(accumulate=record["accumulate"], **record["params"])
    except TypeError as exc:  # the run had kernel10's split-K (another branch) merged in
        pytest.skip(f"a parameter this tree's kernel does not have yet: {exc}")
    trace = tcsim.trace(record["kernel"], M, N, K, accumulate=record["accumulate"],
                        beta=record["beta"], **record["params"])
    for op in ("ld", "st"):
        sass = record["ncu"][SASS.format(op)] + record["ncu"][SASS.format(op + "sm")]
        assert sass == trace.totals.get(WAVEFRONTS.format(op), 0), op
        conflicts = sum(s.conflicts for s in trace.sites.values()
                        if s.instruction.startswith(f"{op}matrix"))
        assert record["ncu"][SASS_CONFLICTS.format(op)] == conflicts, op
