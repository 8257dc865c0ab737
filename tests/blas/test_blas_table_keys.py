"""Every call the plan table measured, made again through tcsim.blas's own functions, must
find its own measured plan: the key tcsim.blas computes from NumPy arrays (shapes, strides,
flags) must be the key the table stored for the sweep's call. A mismatch sends a table call to
a neighbour's plan (seen on the H100: matmul float16 748 x 1 x 90 with B given transposed
took the plan of 424 x 1 x 48, another kernel, and got 1 of 748 elements wrong)."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import ml_dtypes
import numpy as np
import pytest

import tcsim.blas as blas
from tcsim.blas.calls import matmul_call
from tcsim.blas.kernels import read
from tcsim.blas.table import (
    ALIGNMENT_STEP,
    MODELLED_SLACK,
    CallKey,
    Entry,
    key_of_sweep_call,
    matrix_aligned,
    nearest,
    table,
)

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
          "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
FP8_OUT = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
SMALL = 1 << 20  # elements of A and B: calls this small are made with real arrays


def _calls():
    data = json.loads(gzip.decompress(resources.files("tcsim.blas")
                                      .joinpath("plans_h100.json.gz").read_bytes()))
    return [e["call"] for e in data["entries"] if "plan" in e]


def _matrix(rng, rows, cols, dtype, transposed=False, batch=()):
    """Random values in torch's memory order: a transposed view (x.t()) when ``transposed``."""
    shape = batch + ((cols, rows) if transposed else (rows, cols))
    if dtype == np.int8:
        x = rng.integers(-128, 128, shape).astype(np.int8)
    else:
        x = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    return np.swapaxes(x, -1, -2) if transposed else x


def _args(call, rng):
    """(op, args, kwargs) of tcsim.blas for a sweep call, operands laid out as the sweep's."""
    op, M, N, K = call["op"], call["M"], call["N"], call["K"]
    if op == "scaled_mm":
        A = _matrix(rng, M, K, DTYPES[call["a"]])
        B = _matrix(rng, K, N, DTYPES[call["b"]], transposed=True)
        if call["scales"] == "row":
            sa, sb = np.ones((M, 1), np.float32), np.ones((1, N), np.float32)
        else:
            sa, sb = np.float32(1), np.float32(1)
        kwargs = dict(out_dtype=FP8_OUT.get(call["out"], call["out"]),
                      use_fast_accum=call["fast"])
        if call.get("bias"):
            kwargs["bias"] = _matrix(rng, 1, N, ml_dtypes.bfloat16)[0]
        return "scaled_mm", (A, B, sa, sb), kwargs
    if op == "int_mm":
        return "int_mm", (_matrix(rng, M, K, np.int8), _matrix(rng, K, N, np.int8)), {}
    dtype = DTYPES[call["dtype"]]
    flags = dict(allow_tf32=bool(call.get("tf32")),
                 allow_reduced_precision_reduction=call.get("reduced", True))
    layout = call.get("layout", "NN")
    batch = (call["batch"],) if op == "bmm" else ()
    A = _matrix(rng, M, K, dtype, layout[0] == "T", batch)
    B = _matrix(rng, K, N, dtype, layout[1] == "T", batch)
    if op in ("matmul", "bmm"):
        return "matmul", (A, B), flags
    if op == "addmm":
        C = _matrix(rng, M, N, dtype)
        return "addmm", (C, A, B), dict(flags, beta=call["beta"], alpha=call["alpha"])
    if op == "addmm_bias":
        return "addmm", (_matrix(rng, 1, N, dtype)[0], A, B), flags
    weight = _matrix(rng, N, K, dtype)
    bias = _matrix(rng, 1, N, dtype)[0] if call["bias"] else None
    return "linear", (A, weight, bias), flags


def _size(call):
    return (call["M"] * call["K"] + call["K"] * call["N"]) * call.get("batch", 1)


def test_every_measured_call_finds_its_own_plan():
    t = table()
    first = {}
    for e in t.entries:  # where two calls share a key, the table answers with the first
        first.setdefault(e.key, e)
    rng = np.random.default_rng(7)
    small = [c for c in _calls() if _size(c) <= SMALL]
    assert len(small) > 3500
    wrong = []
    for call in small:
        op, args, kwargs = _args(call, rng)
        plan = blas.plan(op, *args, **kwargs)
        want = first[key_of_sweep_call(call)].plan
        if not plan.source.startswith("measured") or plan.with_(source="") != want.with_(
                source=""):
            wrong.append((call, plan.source))
    assert not wrong, f"{len(wrong)} table calls do not find their own plan, e.g. {wrong[:3]}"


def test_large_measured_calls_are_measured():
    t = table()
    large = [c for c in _calls() if _size(c) > SMALL]
    assert large
    for call in large:
        assert t.choose(key_of_sweep_call(call))[1] == "measured", call


@pytest.mark.parametrize("M,N,K", [(748, 1, 90), (1, 96, 40), (30, 20, 1)])
def test_a_matrix_with_a_dimension_of_one_reads_row_major(M, N, K):
    # torch hands cuBLAS a dense matrix with a dimension of 1 as row-major, whatever its
    # strides (it is contiguous): the layouts that differ only there are one call.
    rng = np.random.default_rng(M + N + K)
    for layout in ("NN", "NT", "TN", "TT"):
        _, args, kwargs = _args(dict(op="matmul", dtype="float16", M=M, N=N, K=K,
                                     layout=layout), rng)
        got = matmul_call(*args, **kwargs).key.cls[3]
        assert got[0] == ("N" if 1 in (M, K) else layout[0]), (layout, got)
        assert got[1] == ("N" if 1 in (K, N) else layout[1]), (layout, got)
        assert key_of_sweep_call(dict(op="matmul", dtype="float16", M=M, N=N, K=K,
                                      layout=layout)).cls[3] == got


# ---- the rule for shapes the table does not hold: one-row and one-column calls -----------

def _f32(rng, batch, M, N, K):
    return (rng.standard_normal((batch, M, K)).astype(np.float32),
            rng.standard_normal((batch, K, N)).astype(np.float32))


def test_a_one_column_call_takes_a_one_column_neighbour_tcsim_models():
    # H100, hw test run 3: bmm float32 18 x 1 x 353, batch 2, ran gemvx (grid [5, 1, 2]); the
    # plain nearest call (20 x 1 x 1229) ran dot_kernel, which tcsim has no model of, and the
    # call was refused.
    plan = blas.plan("matmul", *_f32(np.random.default_rng(1), 2, 18, 1, 353))
    assert "gemvx" in plan.kernel and plan.source.startswith("nearest measured call ")
    assert "x1x" in plan.source.split("nearest measured call ")[1].split(",")[0]


def test_a_one_row_call_takes_a_one_row_neighbour():
    # H100, run 3: bmm float32 1 x 688 x 360, batch 3, ran gemvNSP; the plain nearest was
    # 8 x 840 x 880 (a CUTLASS SIMT SGEMM with split-K 13): 1649 of 2064 elements wrong.
    plan = blas.plan("matmul", *_f32(np.random.default_rng(2), 3, 1, 690, 350))
    assert plan.source.startswith("nearest measured call 1x"), plan.source
    assert "sgemm" not in plan.kernel


def test_gemv_nsp_16_4_runs_the_blocks_24_threads():
    # Measured since (blas_sweep --set open, whole outputs of 11 float32 probes): the 24 y
    # threads of its [32, 24] blocks share K in blocks of 4, added pairwise over 32 lanes.
    plan = blas.plan("matmul", *_f32(np.random.default_rng(2), 3, 1, 688, 360))
    assert plan.source.startswith("measured") and "gemvNSP_kernel<float" in plan.kernel
    assert (plan.lanes, plan.lane_width, plan.lane_reduction) == (24, 4, "tree")


def _entry(M, N, K, modelled=True, cls=None):
    plan = blas.Plan("ffma", "fma.rn.f32.f32", 1, kernel=f"k{M}x{N}x{K}") if modelled else None
    return Entry(CallKey(cls or CLS, M, N, K), plan, (f"k{M}x{N}x{K}",))


CLS = ("matmul", "float32", "float32", "NN", False, ("", ""))
F16 = ("matmul", "float16", "float16", "NN", False, ("", ""))


def test_the_rule_prefers_a_modelled_neighbour_only_within_its_slack():
    key = CallKey(CLS, 100, 1, 400)  # rows of A: 1600 bytes, aligned
    near = _entry(100, 1, 420, modelled=False)  # distance 0.07
    close = _entry(100, 1, 1132)  # 1.50: within MODELLED_SLACK of the nearest
    far = _entry(100, 1, 3200)  # 3: beyond it
    wide = _entry(100, 8, 400)  # nearer than `close`, but eight columns, not one
    assert nearest([near, close, far, wide], key) is close
    assert nearest([near, far, wide], key) is near  # refused: no modelled call close enough
    assert nearest([far, wide], key) is far
    assert nearest([wide], key) is wide  # no one-column call at all: the nearest
    assert MODELLED_SLACK == 2.0
    # Calls of more rows and columns keep the plain nearest, modelled or not.
    key = CallKey(CLS, 100, 16, 400)
    assert nearest([_entry(100, 16, 420, False), _entry(100, 16, 800)], key).plan is None


def test_the_rule_keeps_to_the_alignment_of_the_matrix_rows():
    # float16, a matrix times one column: A's rows of K = 88 are 176 bytes (aligned), of 89
    # and 90 not; on the H100 K = 88 ran nvjet and K = 89, 90 gemvx.
    assert matrix_aligned(CallKey(F16, 100, 1, 88)) and not matrix_aligned(
        CallKey(F16, 100, 1, 90))
    assert matrix_aligned(CallKey(F16, 1, 64, 90)) and not matrix_aligned(
        CallKey(F16, 1, 60, 90))  # one row: B's rows, N long
    odd, even = _entry(100, 1, 89, cls=F16), _entry(100, 1, 64, cls=F16)  # 0.02 + 1, 0.46
    assert nearest([odd, even], CallKey(F16, 100, 1, 88)) is even
    aligned, wider = _entry(100, 1, 88, cls=F16), _entry(100, 1, 122, cls=F16)  # 1.03, 0.44
    assert nearest([aligned, wider], CallKey(F16, 100, 1, 90)) is wider
    assert ALIGNMENT_STEP == 1.0


def test_gemv_nsp_lanes_come_from_the_template():
    name = ("void gemvNSP_kernel<float, float, float, float, 1, {}, 4, 1024, false, "
            "cublasGemvParamsEx<int, float> >(cublasGemvParamsEx<int, float>)")
    for threads in (32, 16):
        lanes = read([name.format(threads)], "f32").lanes
        assert lanes[0] == (threads, 4, "tree")  # 32: measured, 6 of 6 order probes
        assert (threads * 4, 1, "tree") in lanes  # one accumulator per element of a block


@pytest.mark.parametrize("dtype,batch,M,K", [("float16", 1, 576, 72), ("bfloat16", 1, 32, 104),
                                             ("bfloat16", 3, 64, 160)])
def test_one_column_calls_on_aligned_rows_take_nvjet(dtype, batch, M, K):
    # H100, hw test run 3: these held-out calls (a matrix times one column, rows of A
    # 16-byte aligned) ran nvjet kernels.
    rng = np.random.default_rng(M)
    A = rng.standard_normal((batch, M, K)).astype(DTYPES[dtype])
    B = rng.standard_normal((batch, K, 1)).astype(DTYPES[dtype])
    assert blas.plan("matmul", A, B).kernel.startswith("nvjet_sm90_")
