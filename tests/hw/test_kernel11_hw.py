"""kernel11, the fp8 rung, on the H100 (sm_90a): its CUDA twin (scaled.cuh) against `tcsim.run`
and against ``torch._scaled_mm(..., use_fast_accum=False)``, every element, on random fp8 bits
with subnormals, NaN, e5m2 infinities, zero rows and f16 overflow drawn on purpose
(tests/fp8_inputs.py): each mix torch takes, per-tensor and row-wise scales, bf16, f16 and f32
outputs, a ragged M, K up to 4096, several tiles per persistent block; the planted bugs' twins;
and its traces against Nsight Compute.

``TCSIM_HW_LOG`` names a JSON-lines file that receives every comparison for the docs.
"""

import numpy as np
import pytest
from fp8_inputs import FP8, MIXES, OUTS, inputs, row_scales
from hw_log import log_hw

import tcsim
from tcsim import hw
from tcsim.hw import runtime
from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile
from tcsim.kernels import kernel_named
from tcsim.trace import HOPPER_METRICS, METRICS

pytestmark = [pytest.mark.hw, pytest.mark.usefixtures("sm90a")]

kernel11 = kernel_named("kernel11")
# Any M; N and K multiples of 16 (torch's rule): a ragged M with a whole and a partial last K
# tile, K = 4096, a single small tile, and several tiles per block.
SHAPES = [(1000, 512, 1024), (256, 384, 4096), (8, 16, 16), (130, 272, 656)]
PERSISTENT = {"persistent_blocks": 5, "group_m": 3}  # several tiles per block, short groups


def differing(D, R) -> tuple[int, int]:
    """(elements whose bits differ, of which NaN in both with other NaN bits)."""
    u = f"u{D.itemsize}"
    wrong = D.view(u) != R.view(u)
    nan = np.isnan(D.astype(np.float32)) & np.isnan(R.astype(np.float32))
    return int(wrong.sum()), int((wrong & nan).sum())


def compare(label: str, D, R, **record) -> None:
    """Every element bit for bit, NaN bits included (logged)."""
    assert D.dtype == R.dtype and D.shape == R.shape, (D.dtype, R.dtype, D.shape, R.shape)
    differ, nan_bits = differing(D, R)
    log_hw({"test": "kernel11", "what": label, **record, "differ": differ,
            "nan_bits_differ": nan_bits, "elements": int(D.size),
            "device": runtime.device_name()})
    if differ:
        u = f"u{D.itemsize}"
        at = tuple(int(i) for i in np.argwhere(D.view(u) != R.view(u))[0])
        raise AssertionError(f"{label} {record}: {differ} of {D.size} differ ({nan_bits} only "
                             f"in NaN bits); the first at {at}: {D[at]!r} "
                             f"({int(D.view(u)[at]):#x}) against {R[at]!r} "
                             f"({int(R.view(u)[at]):#x})")


@pytest.mark.parametrize("out", list(OUTS))
@pytest.mark.parametrize("mix", MIXES, ids="x".join)
def test_per_tensor_scales_match_the_run_bit_for_bit(mix, out, rng):
    for M, N, K in SHAPES:
        A, B, sa, sb = inputs(rng, M, N, K, *mix)
        sim = tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS[out])
        got = hw.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS[out])
        compare("twin vs run", got, sim, mix=list(mix), out=out, shape=[M, N, K],
                scales="tensor")


@pytest.mark.parametrize("mix, out", [(("e4m3", "e4m3"), "bf16"), (("e4m3", "e5m2"), "f32")])
def test_several_tiles_per_block_match_the_run_bit_for_bit(mix, out, rng):
    """5 persistent blocks over 8 x 6 tiles in groups of 3 block rows: the stages and barrier
    phases run on from tile to tile, the partial sums start again at each."""
    M, N, K = 1000, 768, 1024
    A, B, sa, sb = inputs(rng, M, N, K, *mix)
    sim = tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS[out], **PERSISTENT)
    got = hw.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS[out], **PERSISTENT)
    compare("twin vs run", got, sim, mix=list(mix), out=out, shape=[M, N, K],
            params=PERSISTENT, scales="tensor")


@pytest.mark.parametrize("specials", [True, False])
def test_row_wise_scales_match_the_run_bit_for_bit(specials, rng):
    """scale_a per row, scale_b per column (rows of 2^120 and columns of 2^-120: only cuBLAS's
    order, scale_b first, keeps those bits)."""
    for (M, N, K), params in [*((s, {}) for s in SHAPES), ((1000, 768, 1024), PERSISTENT)]:
        A, B, _, _ = inputs(rng, M, N, K, specials=specials)
        sa, sb = row_scales(rng, M, N)
        out = OUTS["bf16"]
        sim = tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=out, **params)
        got = hw.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=out, **params)
        compare("twin vs run", got, sim, mix=["e4m3", "e4m3"], out="bf16", shape=[M, N, K],
                params=params, scales="row", specials=specials)


def test_planted_bugs_change_the_bits_as_their_schedules_do(rng):
    """The plants' twins (PLANT_ macros) give their schedules' bits, and those differ from
    kernel11's: a promotion every 5 steps, and row-wise scale_a applied first."""
    M, N, K = 256, 256, 1024
    A, B, sa, sb = inputs(rng, M, N, K)
    name = "kernel11-promotion-off-by-one"
    sim = tcsim.run(name, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32)
    got = hw.run(name, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32)
    compare("planted twin vs run", got, sim, kernel=name, shape=[M, N, K])
    right = hw.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32)
    assert differing(got, right)[0] > 0
    A, B, _, _ = inputs(rng, M, N, K, specials=False)
    sa, sb = row_scales(rng, M, N)
    name = "kernel11-scale-a-first"
    sim = tcsim.run(name, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS["bf16"])
    got = hw.run(name, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS["bf16"])
    compare("planted twin vs run", got, sim, kernel=name, shape=[M, N, K])
    right = hw.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS["bf16"])
    assert differing(got, right)[0] > 0


# Shapes with at least 128 tiles of cuBLAS's 128 x 128, where tcsim.blas's plans have no split-K.
TORCH_SHAPES = [(1000, 2048, 1024), (2048, 1024, 4096)]
TORCH_FP8 = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
TORCH_OUT = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def scaled_mm_on_the_gpu(torch, A, B, sa, sb, out: str) -> np.ndarray:
    """``torch._scaled_mm(A, B, sa, sb, out_dtype, use_fast_accum=False)`` on these bits: B
    column-major (K, N), as cuBLAS's TN asks."""
    a, bt = (torch.from_numpy(np.ascontiguousarray(x).view(np.uint8)).cuda().view(
        getattr(torch, TORCH_FP8[kind])) for x, kind in ((A, _kind(A)), (B.T, _kind(B))))
    scale = (torch.from_numpy(np.array(s, np.float32)).cuda() for s in (sa, sb))
    d = torch._scaled_mm(a, bt.t(), *scale, out_dtype=getattr(torch, TORCH_OUT[out]),
                         use_fast_accum=False)
    torch.cuda.synchronize()
    d = d.cpu()
    if out == "f32":
        return d.numpy()
    return d.view(torch.int16).numpy().view(OUTS[out])


def _kind(x) -> str:
    return next(k for k, v in FP8.items() if np.dtype(v) == x.dtype)


@pytest.mark.parametrize("out", list(OUTS))
@pytest.mark.parametrize("mix", MIXES, ids="x".join)
def test_per_tensor_scales_match_torch_scaled_mm(mix, out, rng):
    torch = pytest.importorskip("torch", reason="torch is not installed: nothing to compare with")
    for M, N, K in TORCH_SHAPES:
        A, B, sa, sb = inputs(rng, M, N, K, *mix)
        got = hw.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS[out])
        ref = scaled_mm_on_the_gpu(torch, A, B, sa.reshape(()), sb.reshape(()), out)
        compare("twin vs torch._scaled_mm", got, ref, mix=list(mix), out=out, shape=[M, N, K],
                scales="tensor", torch=torch.__version__)


def test_row_wise_scales_match_torch_scaled_mm(rng):
    torch = pytest.importorskip("torch", reason="torch is not installed: nothing to compare with")
    for M, N, K in TORCH_SHAPES:
        A, B, _, _ = inputs(rng, M, N, K)
        sa, sb = row_scales(rng, M, N)
        got = hw.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS["bf16"])
        ref = scaled_mm_on_the_gpu(torch, A, B, sa, sb, "bf16")
        compare("twin vs torch._scaled_mm", got, ref, mix=["e4m3", "e4m3"], out="bf16",
                shape=[M, N, K], scales="row", torch=torch.__version__)


def test_trace_matches_nsight_compute(rng):
    """Every metric of METRICS and HOPPER_METRICS equal to the trace: the wgmma k32 and their
    shared-memory wavefronts, the TMA boxes (ragged ones included), the predicated pair
    stores of each output type, and the row-wise scales' loads."""
    cases = [((1000, 512, 1024), "e4m3", "e4m3", "bf16", 0, {}),
             ((512, 1024, 4096), "e4m3", "e5m2", "f32", 0, {}),
             ((130, 272, 656), "e5m2", "e4m3", "f16", 0, {}),
             ((1000, 512, 1024), "e4m3", "e4m3", "bf16", 1, {}),
             ((768, 384, 640), "e4m3", "e4m3", "bf16", 1, PERSISTENT),
             ((768, 384, 640), "e4m3", "e4m3", "f32", 0,
              {"block_n": 64, "warp_n": 64, **PERSISTENT})]
    launches = []
    for (M, N, K), a, b, out, rows, params in cases:
        A, B, sa, sb = inputs(rng, M, N, K, a, b, specials=False)
        if rows:
            sa, sb = row_scales(rng, M, N)
        launches.append(twin_launch(kernel11, A, B, scale_a=sa, scale_b=sb,
                                    out_dtype=OUTS[out], label=f"kernel11 {M}x{N}x{K} {out}",
                                    **params))
    counters = profile(launches, METRICS + HOPPER_METRICS)
    bad = []
    for ((M, N, K), a, b, out, rows, params), measured in zip(cases, counters):
        options = {"inputs": a, "inputs_b": b, "output": out, "row_scales": rows, **params}
        predicted = tcsim.trace(kernel11, M, N, K, **options).totals
        log_hw({"test": "kernel11_counters", "shape": [M, N, K], "params": options,
                "trace": predicted, "ncu": measured, "device": runtime.device_name()})
        for metric, value in measured.items():
            if predicted.get(metric, 0) != value:
                bad.append(f"{M}x{N}x{K} {options} {metric}: trace "
                           f"{predicted.get(metric, 0):,}, ncu {value:,.0f}")
    assert not bad, f"{len(bad)} counters differ:\n" + "\n".join(bad)
