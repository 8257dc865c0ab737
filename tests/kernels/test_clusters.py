"""Thread-block clusters (``cluster_m=2``, kernel8 .. kernel10): pairs of persistent blocks
compute vertically adjacent tiles of one block column, each copying half of B's 64-column
boxes and multicasting them to both (`tcsim.kernels.kernel7`, the twin's CLUSTER_M).

What is checked here: every refusal; the tile order (each pair of blocks on one column, one
tile each, every tile once); the trace's TMA counts against counts worked out from the shape
(B's L2 reads halved, A's not, the bytes arriving at each SM whole); the bits against a
NumPy reference; the race checks still catching planted bugs; explain pricing the halved L2
traffic; the default twins' SASS free of cluster instructions. The H100 checks the twin
against tcsim.run and Nsight Compute (tests/hw/test_cluster_hw.py)."""

import dataclasses

import numpy as np
import pytest
from sass import ToolkitMissing, kernel_sass, opcode

import tcsim
from tcsim.kernels import ProblemSizeError, kernel_named
from tcsim.kernels.planted import PLANTED
from tcsim.kernels.scheduler import block_tiles
from tcsim.trace import TMA_LD_BYTES, TMA_LD_INST, Tracer

CLUSTER = {"cluster_m": 2, "persistent_blocks": 4}


@pytest.mark.parametrize("name, params, match", [
    ("kernel7", {"cluster_m": 2}, "needs persistent blocks"),
    ("kernel10", {"cluster_m": 2, "persistent_blocks": 5}, "multiple of 2"),
    ("kernel10", {"cluster_m": 2, "splits": 2, "accumulate": "f32"}, "split-K"),
    ("kernel10", {"cluster_m": 3}, "cluster_m must be 1 or 2"),
    ("kernel10", {"cluster_m": 0}, "cluster_m"),
    ("kernel6", {"cluster_m": 2}, "warp-specialized"),
    ("kernel11", {"cluster_m": 2}, "warp-specialized f16/bf16"),
])
def test_clusters_refuse_what_the_twin_would_get_wrong(name, params, match):
    with pytest.raises(ValueError, match=match):
        tcsim.trace(name, 256, 512, 256, **params)


def test_tiles_along_m_must_pair_up(rng):
    # 600 rows: 5 tiles of 128; the twin's tiles_m / CLUSTER_M would drop the last row
    with pytest.raises(ProblemSizeError, match="5 tiles along M .* cluster_m=2"):
        tcsim.trace("kernel10", 600, 512, 256, **CLUSTER)
    A = rng.standard_normal((600, 64)).astype(np.float16)
    B = rng.standard_normal((64, 256)).astype(np.float16)
    with pytest.raises(ProblemSizeError, match="not a multiple of cluster_m=2"):
        tcsim.run("kernel10", A, B, **CLUSTER)
    tcsim.trace("kernel10", 700, 512, 256, **CLUSTER)  # 6 tiles, the last ragged: fine


def test_default_leaves_the_twin_without_clusters():
    k = kernel_named("kernel10")
    assert "CLUSTER_M" not in k.defines(k.defaults)
    assert k.defines(k.params(**CLUSTER))["CLUSTER_M"] == 2


@pytest.mark.parametrize("group_m", [0, 3, 16])
@pytest.mark.parametrize("shape", [(1024, 768, 64), (700, 1000, 64)])
def test_a_cluster_computes_one_block_column_a_tile_each(shape, group_m):
    """Blocks 2c and 2c + 1 form cluster c: at every turn they compute tiles (2R, col) and
    (2R + 1, col); every tile is computed once."""
    M, N, _ = shape
    p = kernel_named("kernel10").params(cluster_m=2, persistent_blocks=6, group_m=group_m,
                                        block_n=128, warp_n=128)
    tiles_m, tiles_n = -(-M // 128), -(-N // 128)
    per_block = {}
    first = 0
    for rows, cols in block_tiles(p, M, N):
        for i in range(rows.shape[0]):
            per_block[first + i] = list(zip(rows[i].tolist(), cols[i].tolist()))
        first += rows.shape[0]
    assert len(per_block) == 6
    for b in range(0, 6, 2):
        left, right = per_block[b], per_block[b + 1]
        assert len(left) == len(right)
        for (r0, c0), (r1, c1) in zip(left, right):
            assert c0 == c1 and r0 % 2 == 0 and r1 == r0 + 1
    every = sorted(t for tiles in per_block.values() for t in tiles)
    assert every == [(r, c) for r in range(tiles_m) for c in range(tiles_n)]


@pytest.mark.parametrize("name", ["kernel8", "kernel10"])
def test_trace_halves_bs_reads_from_l2_and_keeps_what_arrives(name):
    """512 x 1024 x 1024 on 128 x 256 tiles: 4 x 4 tiles, 16 K tiles; per tile and K tile
    A is one box of 128 x 64 (16 KiB) and B four boxes of 64 x 64 (8 KiB each). In a
    cluster each block issues A and two of B's boxes (multicast: read once); the other two
    arrive from its partner."""
    M, N, K = 512, 1024, 1024
    turns = 4 * 4 * 16  # tiles x K tiles
    one, two = (tcsim.trace(name, M, N, K, accumulate="f32", persistent_blocks=4,
                            cluster_m=c) for c in (1, 2))
    assert one.totals[TMA_LD_INST] == turns * 5
    assert two.totals[TMA_LD_INST] == turns * 3
    # every SM still receives A and all of B (Nsight Compute's xbar-to-L1 bytes)
    assert one.totals[TMA_LD_BYTES] == two.totals[TMA_LD_BYTES] == turns * (16384 + 4 * 8192)
    sites = two.sites
    assert sites["A_tma"].sectors * 32 == turns * 16384  # A unchanged
    assert sites["B_tma"].sectors * 32 == turns * 2 * 8192  # B from L2: half
    assert sites["B_tma"].instruction.endswith(".multicast::cluster")
    assert sites["B_multicast_in"].sectors * 32 == turns * 2 * 8192
    assert sites["B_multicast_in"].executions == 0
    # the consumers read the whole stage from shared memory, as before
    for key in ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum",
                "smsp__inst_executed_pipe_tensor_op_gmma.sum"):
        assert one.totals[key] == two.totals[key]


@pytest.mark.parametrize("tile, boxes, box", [
    ({"block_m": 192, "block_n": 192, "warp_n": 192, "stages": 3}, 3, 8192),
    ({"block_n": 64, "warp_n": 64}, 1, 8192),
    ({"block_m": 192, "block_n": 96, "warp_n": 96, "stages": 5}, 3, 4096)])
def test_odd_box_counts_go_round_robin(tile, boxes, box):
    """B's boxes go round robin, box b to rank b % 2: of 192 columns' three boxes rank 0
    copies two and rank 1 one; of 64 columns' one, rank 0 copies it and rank 1 none; 96
    columns come in three boxes of 32 columns. Either way each column's boxes are read from
    L2 once per pair and arrive in both blocks. 768 x 768 x 512: 8 K tiles, A's box block_m x
    64, B's boxes 64 x 64 (8 KiB) or 64 x 32 (4 KiB)."""
    M, N, K = 768, 768, 512
    bm, bn = tile.get("block_m", 128), tile["block_n"]
    tiles_m, tiles_n, k_tiles = M // bm, N // bn, K // 64
    a_box = bm * 64 * 2
    t = tcsim.trace("kernel10", M, N, K, accumulate="f32", persistent_blocks=4, cluster_m=2,
                    **tile)
    pairs = tiles_m // 2 * tiles_n * k_tiles  # (pair of tiles, K tile)
    assert t.totals[TMA_LD_INST] == tiles_m * tiles_n * k_tiles + pairs * boxes
    assert t.totals[TMA_LD_BYTES] == tiles_m * tiles_n * k_tiles * (a_box + boxes * box)
    assert t.sites["B_tma"].sectors * 32 == pairs * boxes * box
    assert t.sites["B_multicast_in"].sectors * 32 == pairs * boxes * box
    kernel = kernel_named("kernel10")
    p = kernel.params(accumulate="f32", persistent_blocks=4, cluster_m=2, **tile)
    for rank, mine in ((0, -(-boxes // 2)), (1, boxes // 2)):  # one block of each rank
        tracer = Tracer("kernel10", p, M, N, K, exhaustive=True, checks="off",
                        shared_bytes=kernel.shared_bytes(p))
        tracer.begin_blocks(np.array([rank]), np.array([0]))
        kernel.issue(tracer)
        sites = {name: s.sectors * 32 for name, s in tracer.sites.items()}
        assert sites.get("B_tma", 0) == mine * k_tiles * box  # rank 1 of 64 columns: none
        assert sites.get("B_multicast_in", 0) == (boxes - mine) * k_tiles * box
    rng = np.random.default_rng()
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    assert A.any() and B.any()
    want = (A.astype(np.int64) @ B.astype(np.int64)).astype(np.float16)
    got = tcsim.run("kernel10", A, B, accumulate="f32", persistent_blocks=4, cluster_m=2, **tile)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_ragged_trace_splits_each_column_between_the_ranks():
    """At a ragged N (rows of 1200 bytes, half of them 16 bytes into a sector) the last
    column's two boxes cost different sectors; rank 0 copies the first, rank 1 the second,
    so the pair together reads each box once, and what one block reads its partner receives.
    The representative trace (one block of each rank and edge) agrees with the exhaustive
    one, which traces every block at its own rank."""
    M, N, K = 700, 600, 520
    params = {"accumulate": "f32", "block_n": 128, "warp_n": 128, **CLUSTER}
    fast = tcsim.trace("kernel10", M, N, K, **params)
    every = tcsim.trace("kernel10", M, N, K, exhaustive=True, **params)
    plain = tcsim.trace("kernel10", M, N, K, accumulate="f32", block_n=128, warp_n=128,
                        persistent_blocks=4)
    assert fast.totals == every.totals
    for t in (fast, every):
        b = t.sites["B_tma"].sectors
        assert b + t.sites["B_multicast_in"].sectors == plain.sites["B_tma"].sectors
        assert b == t.sites["B_multicast_in"].sectors
    assert fast.totals[TMA_LD_BYTES] == plain.totals[TMA_LD_BYTES]


@pytest.mark.parametrize("name, accumulate", [("kernel8", "f16"), ("kernel9", "f32"),
                                              ("kernel10", "f32"), ("kernel10", "f16")])
def test_bits_equal_a_numpy_reference(name, accumulate, rng):
    """Small integers: every product and sum is exact in f16 and f32, so D is the exact
    A @ B + C whatever the order of the sums, on a ragged shape of 6 x 3 tiles."""
    M, N, K = 700, 320, 200
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    C = rng.integers(-50, 51, (M, N)).astype(np.float16)
    assert A.any() and B.any()
    want = (A.astype(np.int64) @ B.astype(np.int64) + C.astype(np.int64)).astype(np.float16)
    got = tcsim.run(name, A, B, C, 1.0, 1.0, accumulate=accumulate, block_n=128, warp_n=128,
                    **CLUSTER)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_bits_equal_the_kernel_without_clusters(rng):
    M, N, K = 512, 512, 320
    A, B, C = (rng.standard_normal(s).astype(np.float16) for s in ((M, K), (K, N), (M, N)))
    one, two = (tcsim.run("kernel10", A, B, C, 1.5, -0.5, accumulate="f32",
                          persistent_blocks=4, cluster_m=c) for c in (1, 2))
    assert np.array_equal(one.view(np.uint16), two.view(np.uint16))


@pytest.mark.parametrize("plant, error", [("early_release", tcsim.StageRaceError),
                                          ("skip_first_waits", tcsim.SimulationError)])
def test_race_checks_catch_planted_bugs_in_clusters(plant, error, rng):
    """kernel7's plants on clustered persistent blocks: the stages' happens-before checks
    still see the consumers' early release and the skipped waits (K = 1024: 16 K tiles, so
    the 4 stages are refilled), and the correct kernel raises nothing."""
    A, B, C = (rng.standard_normal(s).astype(np.float16)
               for s in ((256, 1024), (1024, 256), (256, 256)))
    params = {"cluster_m": 2, "persistent_blocks": 2}
    tcsim.run("kernel8", A, B, C, 1.0, 0.5, **params)
    with pytest.raises(error):
        tcsim.run(PLANTED[f"kernel7-{plant.replace('_', '-')}"], A, B, C, 1.0, 0.5, **params)


def test_explain_prices_the_halved_l2_traffic():
    M, N, K = 3072, 3072, 3072  # 24 tiles along M
    one, two = (tcsim.trace("kernel10", M, N, K, accumulate="f32", block_n=128, warp_n=128,
                            cluster_m=c).explain() for c in (1, 2))
    tiles, k_tiles = 24 * 24, 48
    b_half = tiles * k_tiles * 8192  # one of B's two 8 KiB boxes a tile and K tile
    assert one.details["l2_bytes"] - two.details["l2_bytes"] == b_half
    assert two.seconds > 0 and two.limiter


def test_explain_prices_bs_l2_requests_once_per_cluster():
    """At 3000^3 (6000-byte rows: most box rows start off a 128-byte line) L2's read
    requests bound the copies; with clusters B's box rows are requested once per pair of
    tile rows: 12 passes over B instead of 24 (128 x 128 tiles)."""
    from tcsim.perf.gpus import gpu

    g = gpu("H100-SXM")
    n = 3000
    starts = np.arange(n)[:, None] * n * 2 + np.arange(0, n, 64)[None, :] * 2
    aligned = int(np.count_nonzero(starts % 128 == 0))
    one_pass = aligned * g["tma_requests_per_aligned_row"] + \
        (starts.size - aligned) * g["tma_requests_per_misaligned_row"]
    one, two = (tcsim.trace("kernel10", n, n, n, accumulate="f32", block_n=128, warp_n=128,
                            cluster_m=c).explain() for c in (1, 2))
    assert one.details["l2_requests"] - two.details["l2_requests"] == pytest.approx(
        12 * one_pass)
    assert two.seconds < one.seconds


def _sass(params: dict) -> list[str]:
    k = kernel_named("kernel10")
    defines = tuple(sorted(k.defines(k.params(**params)).items()))
    try:
        return [opcode(t) for _, t in kernel_sass(k.source, "sm_90a", defines)["kernel10"]]
    except ToolkitMissing as missing:
        pytest.skip(str(missing))


def test_only_the_cluster_twin_multicasts_and_syncs_its_cluster():
    """The default twin has none of the cluster's instructions (hopper.cuh keeps them under
    CLUSTER_M > 1); the cluster twin multicasts B and meets at cluster barriers."""
    default = _sass({"accumulate": "f32"})
    cluster = _sass({"accumulate": "f32", **CLUSTER})
    marks = ("UTMALDG.2D.MULTICAST", "UCGABAR_ARV", "UCGABAR_WAIT")
    assert not [op for op in default if op.startswith(marks)]
    for mark in marks:
        assert any(op.startswith(mark) for op in cluster), mark


@pytest.mark.parametrize("call", ["tma_load", "tma_received"])
def test_a_multicast_without_a_cluster_is_refused_naming_the_site(call):
    def program(m, p, plant=""):
        full = m.mbarriers("full", 0, 1, arrivals=1)
        extra = {"multicast": True} if call == "tma_load" else {}
        getattr(m, call)("B_tma", "B", 1024, 0, 0, 0, full, 0, **extra)

    alone = dataclasses.replace(kernel_named("kernel10"), name="multicast-alone", program=program)
    with pytest.raises(ValueError, match="multicast-alone site 'B_tma'.*cluster"):
        tcsim.trace(alone, 128, 256, 64, accumulate="f32")
