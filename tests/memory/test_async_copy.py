"""cp.async's shared-side accounting against Nsight Compute counts recorded on an H100.

docs/evidence/cp_async_study_2026-11-22.jsonl.gz holds 1,930 one-warp probes from
scripts/study_cp_async.py (shared and global addresses varied independently) with their
counters. Every cp.async.cg count and every cp.async.ca count the model gives without a caveat
must equal the hardware's.
"""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tcsim.hw.memory.smem import measured
from tcsim.memory import SharedMemory, access
from tcsim.memory.access import SharedMemoryError

EVIDENCE = Path(__file__).parents[2] / "docs/evidence/cp_async_study_2026-11-22.jsonl.gz"
LANES = np.arange(32)


def _records():
    with gzip.open(EVIDENCE, "rt") as f:
        return [json.loads(line) for line in f]


def test_the_model_matches_every_recorded_probe_it_claims():
    records = [r for r in _records() if any(a is not None for a in r["shared"])]
    checked, caveated, wrong = 0, 0, []
    for r in records:
        a = access(r["instruction"], r["shared"], sources=r["source"])
        if a.caveat:
            caveated += 1
            assert ".ca." in r["instruction"]
            continue
        checked += 1
        hw = measured(r["instruction"], r["ncu"])
        if (a.wavefronts, a.conflicts) != hw:
            wrong.append(f"{r['instruction']} [{r['label']}]: H100 {hw}, "
                         f"tcsim {(a.wavefronts, a.conflicts)}")
    assert not wrong, "\n".join(wrong)
    assert checked > 1400 and caveated < 450


# Single facts from the same evidence, each a rule of the model.
def test_cached_copy_pipelines_lines_and_serializes_each_lines_bank():
    # 4-byte copies; lanes 8q..8q+7 all write shared word 4q and read 128-byte line q: each
    # line's eight writes queue on one bank, and line q starts one cycle after line q-1's first
    # write: 8 + 3 wavefronts (the quarter-warp model said 32). Colliding phases: a caveat.
    shared = [16 * (lane // 8) for lane in LANES]
    a = access("cp.async.ca.shared.global.4", shared, sources=16 * LANES)
    assert (a.wavefronts, a.conflicts) == (11, 10) and "partly modeled" in a.caveat
    # The same writes from one 128-byte line: no pipeline, 8 writes per bank.
    a = access("cp.async.ca.shared.global.4", shared, sources=4 * LANES)
    assert (a.wavefronts, a.conflicts) == (8, 7)


def test_cached_copy_takes_four_lines_per_tag_pass():
    # One lane per line, lines 0..k-1, no bank conflicts: one wavefront per four lines.
    for k, expected in ((3, 1), (4, 1), (5, 2), (8, 2)):
        shared = [16 * lane if lane < k else None for lane in LANES]
        a = access("cp.async.ca.shared.global.16", shared, sources=128 * LANES + 16 * (LANES % 8))
        assert (a.wavefronts, a.ideal, a.caveat) == (expected, expected, None)


def test_cached_copy_from_scattered_lines_carries_a_caveat():
    # Lines 0, 3, 6 went through L1 in two tag passes on the H100 (a set conflict).
    shared = [16 * lane if lane < 3 else None for lane in LANES]
    a = access("cp.async.ca.shared.global.16", shared, sources=384 * LANES)
    assert a.caveat and "set conflicts" in a.caveat and "caveat" in str(a)


@pytest.mark.parametrize("chunks, destination, wavefronts", [
    (range(8), range(8), 1),                        # a line to a segment as it is
    (range(8), [c ^ 4 for c in range(8)], 1),       # an XOR swizzle of the 16-byte chunks
    (range(8), [7 - c for c in range(8)], 1),       # reversed: a reflection, halves flipped
    (range(8), [c + 1 for c in range(8)], 3),       # one chunk of padding: two moves + spill
    (range(8), [3 * c for c in range(8)], 6),       # stride 3 chunks
    ([1, 2], [1, 2], 2),                            # two sectors using different halves
    ([0, 2], [6, 0], 1),                            # sectors 0, 1 to 3, 0: a rotation
    ([0, 1], [2, 1], 2),                            # one sector split over two
])
def test_bypass_copy_moves_whole_sectors(chunks, destination, wavefronts):
    chunks, destination = list(chunks), list(destination)
    shared = [16 * d for d in destination] + [None] * (32 - len(chunks))
    sources = [16 * c for c in chunks] + [0] * (32 - len(chunks))
    a = access("cp.async.cg.shared.global.16", shared, sources=sources)
    assert (a.wavefronts, a.conflicts) == (wavefronts, 0)


def test_bypass_copy_writes_an_identical_destination_once():
    a = access("cp.async.cg.shared.global.16", [0] * 32, sources=16 * LANES)
    assert a.wavefronts == 1


def test_default_sources_are_one_contiguous_range():
    shared = [16 * lane for lane in LANES]
    assert access("cp.async.ca.shared.global.16", shared).wavefronts == 4
    assert access("cp.async.ca.shared.global.4", [4 * lane for lane in LANES]).wavefronts == 1
    assert access("cp.async.cg.shared.global.16", shared).wavefronts == 4


def test_shared_memory_store_passes_sources_through():
    # Contiguous 4-byte writes from four lines (sources 16 apart): 4 wavefronts on the H100;
    # from one line (the default sources) they would be 1.
    sm = SharedMemory(4096)
    values = np.arange(32 * 4, dtype=np.uint8).reshape(32, 4)
    sm.store("cp.async.ca.shared.global.4", [4 * lane for lane in LANES], values, site="copy",
             sources=16 * LANES)
    assert sm.totals()["copy"]["wavefronts"] == 4
    assert np.array_equal(sm.view(0, np.uint8, 128).reshape(32, 4), values)


def test_bad_sources_are_named():
    shared = [16 * lane for lane in LANES]
    with pytest.raises(SharedMemoryError, match="lane 3 global source 0x31 is not aligned"):
        access("cp.async.cg.shared.global.16", shared, sources=[16 * i + (i == 3) for i in LANES])
    with pytest.raises(ValueError, match="32 lane source addresses"):
        access("cp.async.cg.shared.global.16", shared, sources=[0] * 31)
    with pytest.raises(ValueError, match="apply to cp.async only"):
        access("st.shared.v4.b32", shared, sources=16 * LANES)
