"""Thread-block clusters on the GPU (``cluster_m=2``, the twin's CLUSTER_M): the twin's D
against tcsim.run bit for bit (ragged shapes with misaligned rows, several turns per block,
grouped tile orders, bf16, beta 0), and its counters against the trace under Nsight Compute
(tests/kernels/test_clusters.py checks the same on the CPU).

``TCSIM_HW_LOG`` names a JSON-lines file that receives every comparison for the docs.
"""

import numpy as np
import pytest
from hw_log import log_hw
from test_hopper_hw import compare_counters, typed_inputs

import tcsim
from tcsim import hw
from tcsim.hw import runtime
from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile
from tcsim.trace import TMA_LD_BYTES, TMA_LD_INST

pytestmark = [pytest.mark.hw, pytest.mark.usefixtures("sm90a")]

# (M, N, K), tile params: rows of 1200 and 1552 bytes (16 bytes into a sector every other
# row, as 3000's 6000-byte rows), ragged in M, N and K; 6 x 5 and 8 x 4 tiles on 4 and 6
# blocks (several turns each, a ragged last one), one aligned shape with K >= 4096.
CASES = [((700, 600, 520), {"block_n": 128, "warp_n": 128, "persistent_blocks": 4}),
         ((1000, 776, 1000), {"persistent_blocks": 6, "group_m": 2}),
         ((256, 512, 4096), {"persistent_blocks": 2})]


@pytest.mark.parametrize("name, accumulate", [("kernel8", "f32"), ("kernel9", "f16"),
                                              ("kernel10", "f16"), ("kernel10", "f32")])
def test_cluster_twin_matches_run_bit_for_bit(name, accumulate, rng):
    for (M, N, K), params in CASES:
        options = {"accumulate": accumulate, "cluster_m": 2, **params}
        A, B, C, alpha, beta = typed_inputs(rng, M, N, K)
        sim = tcsim.run(name, A, B, C, alpha, beta, **options).view(np.uint16)
        got = hw.run(name, A, B, C, alpha, beta, **options).view(np.uint16)
        differ = int((sim != got).sum())
        log_hw({"test": "cluster_bits", "kernel": name, "shape": [M, N, K], **options,
                "differ": differ, "elements": M * N, "device": runtime.device_name()})
        assert differ == 0, f"{name} {options} {M}x{N}x{K}: {differ} of {M * N} differ"


WIDE = {"block_m": 192, "block_n": 192, "warp_n": 192, "stages": 3}  # three boxes of B


@pytest.mark.parametrize("tile, accumulate", [(WIDE, "f32"), (WIDE, "f16"),
                                              ({"block_n": 64, "warp_n": 64}, "f32")])
def test_round_robin_boxes_match_run_bit_for_bit(tile, accumulate, rng):
    """B's boxes go round robin (rank 0 copies two of 192 columns' three, rank 1 one; of 64
    columns' one box, rank 1 none): the twin's D equals tcsim.run's."""
    for M, N, K in ((700, 600, 520), (1000, 776, 1000)):
        options = {"accumulate": accumulate, "cluster_m": 2, "persistent_blocks": 4, **tile}
        A, B, C, alpha, beta = typed_inputs(rng, M, N, K)
        sim = tcsim.run("kernel10", A, B, C, alpha, beta, **options).view(np.uint16)
        got = hw.run("kernel10", A, B, C, alpha, beta, **options).view(np.uint16)
        differ = int((sim != got).sum())
        log_hw({"test": "cluster_round_robin", "shape": [M, N, K], **options, "differ": differ,
                "elements": M * N, "device": runtime.device_name()})
        assert differ == 0, f"{options} {M}x{N}x{K}: {differ} of {M * N} differ"


@pytest.mark.parametrize("beta0", [None, 0.0])
def test_cluster_twin_in_bf16_and_with_beta_zero(beta0, rng):
    M, N, K = 1000, 776, 1000
    options = {"inputs": "bf16", "output": "bf16", "accumulate": "f32", "cluster_m": 2,
               "persistent_blocks": 6}
    A, B, C, alpha, beta = typed_inputs(rng, M, N, K, "bf16", "bf16")
    beta = beta if beta0 is None else beta0
    sim = tcsim.run("kernel10", A, B, C, alpha, beta, **options).view(np.uint16)
    got = hw.run("kernel10", A, B, C, alpha, beta, **options).view(np.uint16)
    differ = int((sim != got).sum())
    log_hw({"test": "cluster_bf16", "beta": float(beta), "differ": differ,
            "device": runtime.device_name()})
    assert differ == 0, f"bf16 beta={beta}: {differ} of {M * N} differ"


def test_cluster_traces_match_nsight_compute(rng):
    """Every counter of test_hopper_hw's comparison on clustered kernels: TMA instructions
    (this block's A and its half of B's boxes), TMA bytes arriving at each SM (A and all of
    B: a multicast counts in every SM it reaches), the wgmma and their shared-memory
    wavefronts, the epilogues'. Rows of whole 32-byte sectors: exact."""
    cases = [(name, (512, 1024, 1024), acc, {"cluster_m": 2, "persistent_blocks": 4, **tile},
              beta0)
             for name in ("kernel8", "kernel10") for tile in ({}, {"block_n": 128, "warp_n": 128})
             for acc, beta0 in (("f32", None), ("f16", 0.0))]
    cases.append(("kernel10", (768, 768, 512), "f32", {"cluster_m": 2, "persistent_blocks": 4,
                                                       **WIDE}, None))
    compare_counters(cases, rng)


def test_cluster_traces_at_misaligned_rows(rng):
    """Rows 16 bytes into a sector every other row (N = 600, 776), ragged M, N and K: every
    counter exact but the TMA bytes, where a multicast costs more than the model says. The
    first run (cluster-result-1, H100): ncu = trace + 499,200 bytes at 700x600x520 (128x128)
    and + 1,792,000 at 1000x776x1000 (128x256), 5% and 6% over, the same for kernel8 and
    kernel10 (f16, f32, beta 0 or not); the rows of whole sectors count exactly (above).
    Which box rows cost the extra sectors is not settled yet (docs/kernels.md, "Clusters"),
    so those bytes are held within 0 .. 10% over the trace."""
    cases = [(name, shape, acc, {"cluster_m": 2, **params}, beta0)
             for name in ("kernel8", "kernel10") for shape, params in CASES[:2]
             for acc, beta0 in (("f32", None), ("f16", 0.0))]
    compare_counters(cases, rng, bounded={TMA_LD_BYTES: (1.0, 1.1)})


# What L2 serves the TMA loads, against the trace's L2 side: the TMA sites' sectors (A_tma and
# the multicast B_tma; not B_multicast_in, which L2 does not serve again).
L2_SIDE = ("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_requests_srcunit_tex_op_read.sum",
           "l1tex__m_xbar2l1tex_read_sectors_pipe_tma.sum", "launch__cluster_dim_x")


def test_multicast_reads_b_from_l2_once_per_cluster(rng):
    """kernel10, beta 0 (no C read), 1024 x 2048 x 1024 on 128 x 256 tiles, with and without
    clusters: each launch's TMA instructions and arriving bytes equal the trace's. With
    clusters, L2 serves exactly the trace's L2 sectors, A's and half of B's (the first run:
    1,048,576 = 524,288 + 524,288). Without clusters L2 served fewer sectors than A's and
    B's (955,480 of 1,572,864 in the first run): blocks that ask for the same lines at about
    the same time are served together, which the trace does not model, so that side is held
    to at most the trace's."""
    M, N, K = 1024, 2048, 1024
    A, B, C, alpha, _ = typed_inputs(rng, M, N, K, edge=False)
    launches, traces = [], []
    for c in (1, 2):
        params = {"accumulate": "f32", "persistent_blocks": 8, "cluster_m": c}
        launches.append(twin_launch("kernel10", A, B, C, alpha, 0.0, label=f"cluster {c}",
                                    **params))
        traces.append(tcsim.trace("kernel10", M, N, K, beta=0.0, **params))
    measured = profile(launches, (TMA_LD_INST, TMA_LD_BYTES) + L2_SIDE)
    l2 = [sum(s.sectors for s in t.sites.values() if s.space == "tma") for t in traces]
    log_hw({"test": "cluster_l2", "shape": [M, N, K],
            "trace": [{k: t.totals[k] for k in (TMA_LD_INST, TMA_LD_BYTES)} |
                      {"l2_sectors": sectors} for t, sectors in zip(traces, l2)],
            "ncu": measured, "device": runtime.device_name()})
    bad = [f"cluster_m={c} {metric}: trace {t.totals[metric]:,}, ncu {got[metric]:,.0f}"
           for c, t, got in zip((1, 2), traces, measured) for metric in (TMA_LD_INST, TMA_LD_BYTES)
           if t.totals[metric] != got[metric]]
    assert not bad, "\n".join(bad)
    assert measured[1]["launch__cluster_dim_x"] == 2
    served = [got["lts__t_sectors_srcunit_tex_op_read.sum"] for got in measured]
    assert served[1] == l2[1], f"with clusters L2 served {served[1]:,.0f}, trace {l2[1]:,}"
    assert served[0] <= l2[0], f"without clusters L2 served {served[0]:,.0f}, trace {l2[0]:,}"
    assert l2[1] * 3 == l2[0] * 2  # B twice A (128 x 256 tiles): A + B / 2 is 2/3 of A + B
