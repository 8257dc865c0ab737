"""Bank accounting: counts measured on the H100 with Nsight Compute (design notes), the
ldmatrix maps against the mma fragments, and errors."""

import numpy as np
import pytest

import tcsim
from tcsim.memory import SharedMemory, SharedMemoryError, access


# Nsight Compute on an H100 (shared/design.md): a warp's 32-bit loads at word stride 1, 2, 4,
# 8, 32, 33 take 1, 2, 4, 8, 32, 1 wavefronts; 128-bit loads at 16-byte stride 1, 2, 8 take
# 4, 8, 32; ldmatrix.x2 on rows 128 B apart takes 16 (14 conflicts), with a 16-byte-chunk XOR
# swizzle 2.
@pytest.mark.parametrize("stride, wavefronts", [(1, 1), (2, 2), (4, 4), (8, 8), (32, 32),
                                                (33, 1)])
def test_32_bit_strides(stride, wavefronts):
    a = access("ld.shared.b32", [4 * stride * lane for lane in range(32)])
    assert (a.wavefronts, a.ideal, a.conflicts) == (wavefronts, 1, wavefronts - 1)


@pytest.mark.parametrize("stride, wavefronts", [(1, 4), (2, 8), (8, 32)])
def test_128_bit_strides(stride, wavefronts):
    a = access("ld.shared.v4.b32", [16 * stride * lane for lane in range(32)])
    assert (a.wavefronts, a.ideal) == (wavefronts, 4)


def test_ldmatrix_rows_128_bytes_apart_and_swizzled():
    plain = access("ldmatrix.sync.aligned.m8n8.x2.shared.b16", [128 * r for r in range(32)])
    assert (plain.wavefronts, plain.conflicts) == (16, 14)
    swizzled = access("ldmatrix.sync.aligned.m8n8.x2.shared.b16",
                      [128 * r + 16 * (r % 8) for r in range(32)])
    assert (swizzled.wavefronts, swizzled.conflicts) == (2, 0)


def test_broadcast_and_inactive_lanes():
    assert access("ld.shared.b32", [0] * 32).wavefronts == 1
    assert access("ld.shared.b32", [None] * 31 + [4]).wavefronts == 1
    assert access("ld.shared.b32", [None] * 32).wavefronts == 0
    # two lanes, same bank, different words: one conflict
    assert access("ld.shared.b32", [0, 128] + [None] * 30).conflicts == 1


def test_errors_name_site_lane_and_address():
    with pytest.raises(SharedMemoryError, match=r"site 'A_tile'.*lane 3 address 0x6"):
        access("ld.shared.b32", [0, 4, 8, 6] + [None] * 28, site="A_tile")
    with pytest.raises(SharedMemoryError, match="outside shared memory of 1024 bytes"):
        access("st.shared.v4.b32", [1024] + [None] * 31, size=1024)
    with pytest.raises(ValueError, match="expected ld.shared or st.shared"):
        access("ld.global.b32", [0] * 32)
    with pytest.raises(ValueError, match="32 lane addresses"):
        access("ld.shared.b32", [0] * 16)


def test_ldmatrix_from_row_major_tiles_gives_the_mma_fragments(rng):
    q = "m16n8k8.row.col.f32.f16.f16.f32"
    sm = SharedMemory(8192)
    A = rng.standard_normal((16, 8)).astype(np.float16)
    B = rng.standard_normal((8, 8)).astype(np.float16)
    sm.view(0, np.float16, 128)[:] = A.ravel()  # row-major, 16-byte rows
    sm.view(4096, np.float16, 64)[:] = B.ravel()  # row-major K x N
    a = sm.ldmatrix("ldmatrix.sync.aligned.m8n8.x2.shared.b16", [16 * r for r in range(32)],
                    site="A")
    b = sm.ldmatrix("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
                    [4096 + 16 * r for r in range(32)], site="B")
    assert np.array_equal(a, tcsim.fragment(q, "a").pack(A))
    assert np.array_equal(b, tcsim.fragment(q, "b").pack(B))
    totals = sm.totals()
    assert totals["A"]["wavefronts"] == 2 and totals["B"]["conflicts"] == 0


def test_stmatrix_inverts_ldmatrix(rng):
    sm = SharedMemory(4096)
    rows = [int(r) * 16 for r in rng.permutation(200)[:32]]
    regs = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint64).astype(np.uint32)
    for spelling in ("stmatrix.sync.aligned.m8n8.x4.shared.b16",
                     "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16"):
        sm.stmatrix(spelling, rows, regs)
        back = sm.ldmatrix(spelling.replace("stmatrix", "ldmatrix"), rows)
        assert np.array_equal(back, regs)


def test_loads_and_stores_move_bytes_and_total_per_site():
    sm = SharedMemory(2048)
    values = np.arange(32 * 16, dtype=np.uint8).reshape(32, 16)
    sm.store("st.shared.v4.b32", [16 * lane for lane in range(32)], values, site="st")
    got = sm.load("ld.shared.v4.b32", [16 * lane for lane in range(32)], site="ld")
    assert np.array_equal(got, values)
    sm.load("ld.shared.v4.b32", [32 * lane for lane in range(32)], site="ld")
    t = sm.totals()
    assert t["ld"] == {"instruction": "ld.shared.v4.b32", "executions": 2, "wavefronts": 12,
                       "ideal": 8, "conflicts": 4}
    assert t["st"]["wavefronts"] == 4


# Counted by Nsight Compute on an H100 (2026-11-22; docs/evidence/hw_smem_run*.jsonl): how
# wide loads merge quarter-warps that read one address and how their ideal is counted
# (cp.async: tests/memory/test_async_copy.py).
ODD = [lane if lane % 2 else None for lane in range(32)]
MEASURED = [
    ("ld.shared.b64", [0] * 32, 1, 0),
    ("ld.shared.v4.b32", [0] * 32, 2, 0),
    ("ld.shared.b64", [0 if lane < 16 else 32 for lane in range(32)], 1, 0),
    ("ld.shared.v2.b32", [(lane // 8) * 32 for lane in range(32)], 1, 0),
    ("ld.shared.b64", [0 if lane in (0, 16) else None for lane in range(32)], 1, 0),
    ("ld.shared.b64", [lane * 8 if lane in (0, 16) else None for lane in range(32)], 2, 1),
    ("ld.shared.b64", [0] * 31 + [8], 2, 0),
    ("ld.shared.b64", [(lane % 16) * 8 for lane in range(32)], 2, 0),
    ("ld.shared.b64", [None if a is None else a * 8 for a in ODD], 2, 1),
    ("ld.shared.v4.b32", [None if a is None else a * 16 for a in ODD], 4, 2),
    ("st.shared.b64", [0] * 32, 2, 0),
    ("st.shared.b64", [None if a is None else a * 8 for a in ODD], 2, 0),
]


@pytest.mark.parametrize("instruction, addresses, wavefronts, conflicts", MEASURED)
def test_counts_measured_with_nsight(instruction, addresses, wavefronts, conflicts):
    a = access(instruction, addresses)
    assert (a.wavefronts, a.conflicts) == (wavefronts, conflicts)
