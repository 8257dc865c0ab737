"""The engines of tcsim.blas agree bit for bit, and the NumPy engine is tcsim.mma chained.

- The NumPy engine (`tcsim.blas.chain`, one wide instruction per block of rows) equals chaining
  `tcsim.mma` by hand, one m16n8 instruction per tile and step: an independent path through
  the instruction model (runs everywhere, numba or not).
- The compiled engine (`tcsim.blas.compiled`, numba) equals the NumPy engine over random plans
  (f16/bf16/tf32 mma and fp8 wgmma) and inputs drawn to hold subnormals, zeros of both
  signs, cancellation, overflow, infinities and NaN (skipped where numba is not installed;
  CI installs no numba).
- The compiled engine's loop nest, as plain Python where numba is absent, equals it too on
  tiny GEMMs, so its arithmetic is checked in CI as well.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcsim
import tcsim.blas as blas
from tcsim.blas import chain, compiled
from tcsim.blas.plan import ORDERS, Plan
from tcsim.isa.formats import BF16, E4M3, E5M2, F16, F32, TF32

# The mma instructions cuBLAS's f16/bf16/tf32 kernels chain, with their input format and the
# numpy dtype tcsim.mma takes for it.
INSTRUCTIONS = {
    "m16n8k16.row.col.f32.f16.f16.f32": (F16, np.float16),
    "m16n8k8.row.col.f32.f16.f16.f32": (F16, np.float16),
    "m16n8k16.row.col.f32.bf16.bf16.f32": (BF16, ml_dtypes.bfloat16),
    "m16n8k8.row.col.f32.bf16.bf16.f32": (BF16, ml_dtypes.bfloat16),
    "m16n8k8.row.col.f32.tf32.tf32.f32": (TF32, np.float32),
    "m16n8k4.row.col.f32.tf32.tf32.f32": (TF32, np.float32),
}

FP8 = {  # the fp8 wgmma instructions of cuBLAS's fp8 kernels, with A's and B's formats
    "m64n8k32.f32.e4m3.e4m3": (E4M3, E4M3),
    "m64n8k32.f32.e4m3.e5m2": (E4M3, E5M2),
    "m64n8k32.f32.e5m2.e4m3": (E5M2, E4M3),
}

# Chances of each kind of element; the rest are normal numbers of a spread of binades.
MIXES = {
    "plain": dict(zero=0.0, subnormal=0.0, huge=0.0, special=0.0),
    "zeros": dict(zero=0.4, subnormal=0.0, huge=0.0, special=0.0),
    "tiny": dict(zero=0.1, subnormal=0.5, huge=0.0, special=0.0),
    "huge": dict(zero=0.05, subnormal=0.05, huge=0.3, special=0.0),
    "specials": dict(zero=0.1, subnormal=0.1, huge=0.1, special=0.01),
    "everything": dict(zero=0.2, subnormal=0.2, huge=0.2, special=0.05),
}


def draw_bits(rng: np.random.Generator, fmt, shape, mix: dict, spread: int) -> np.ndarray:
    """Bit patterns of ``fmt``: normal numbers with exponents within ``spread`` binades of 1,
    and by ``mix``'s chances zeros (+0 and -0), subnormals, numbers of the top binade, and
    infinities and NaNs (random payloads). tf32's ignored low bits are random. Never all
    zeros."""
    frac_shift = fmt.ignored_low_bits
    exp_shift = frac_shift + fmt.fraction_bits
    sign_shift = exp_shift + fmt.exponent_bits
    top = (1 << fmt.exponent_bits) - 1  # the all-ones field
    field = np.clip(fmt.bias + rng.integers(-spread, spread + 1, shape), 1, top - 1)
    fraction = rng.integers(0, 1 << fmt.fraction_bits, shape)
    kind = rng.random(shape)
    edges = np.cumsum([mix["zero"], mix["subnormal"], mix["huge"], mix["special"]])
    zero, sub = kind < edges[0], (kind >= edges[0]) & (kind < edges[1])
    huge, special = (kind >= edges[1]) & (kind < edges[2]), (kind >= edges[2]) & (kind < edges[3])
    field[zero | sub] = 0
    fraction[zero] = 0
    fraction[sub] |= 1  # nonzero
    field[huge] = top - 1
    field[special] = top
    fraction[special & (rng.random(shape) < 0.5)] = 0  # half infinities, half NaNs
    bits = ((rng.integers(0, 2, shape) << sign_shift) | (field << exp_shift)
            | (fraction << frac_shift) | rng.integers(0, 1 << frac_shift, shape))
    bits = bits.astype(fmt.uint)
    if not bits.any():
        bits.reshape(-1)[0] = fmt.uint(fmt.bias << exp_shift)  # 1.0
    return bits


def cancel(rng: np.random.Generator, fmt, A: np.ndarray, B: np.ndarray) -> None:
    """Make some neighbouring products cancel exactly: A[:, k + 1] = A[:, k] and
    B[k + 1] = -B[k] (sign bit flipped)."""
    sign = fmt.uint(1 << (fmt.storage_bits - 1))
    for k in range(0, A.shape[1] - 1, 2):
        if rng.random() < 0.5:
            A[:, k + 1] = A[:, k]
            B[k + 1] = B[k] ^ sign


@st.composite
def gemms(draw, big: bool = True, fp8: bool = False):
    """(plan, A bits, B bits, init or None) for a random small GEMM: an mma plan, or with
    ``fp8`` also fp8 wgmma plans (which start from zero)."""
    names = sorted(INSTRUCTIONS) + (sorted(FP8) if fp8 else [])
    instruction = draw(st.sampled_from(names))
    M = draw(st.integers(1, 9 if big else 5))
    # Big enough, N crosses the compiled engine's tiles of 512 columns.
    N = draw(st.one_of(st.integers(1, 12), st.integers(500, 520))) if big else draw(
        st.integers(1, 9))
    K = draw(st.integers(1, 80 if big else 40))
    mix = MIXES[draw(st.sampled_from(sorted(MIXES)))]
    spread = draw(st.sampled_from([2, 12, 60, 200]))
    rng = np.random.default_rng(draw(st.integers(0, 2**63 - 1)))
    splits, order = draw(st.integers(1, 4)), draw(st.sampled_from(ORDERS))
    if instruction in FP8:
        fa, fb = FP8[instruction]
        plan = Plan("wgmma_fp8", instruction, k_tile=draw(st.sampled_from([32, 64, 128])),
                    splits=splits, order=order,
                    promotion=draw(st.sampled_from([None, 1, 2, 4])))
        return (plan, draw_bits(rng, fa, (M, 32 * K), mix, spread),
                draw_bits(rng, fb, (32 * K, N), mix, spread), None)
    fmt = INSTRUCTIONS[instruction][0]
    plan = Plan("mma", instruction, k_tile=draw(st.sampled_from([16, 32, 64])),
                splits=splits, order=order,
                round_inputs=draw(st.sampled_from([None, "tf32"])) if fmt is TF32 else None)
    A = draw_bits(rng, fmt, (M, K), mix, spread)
    B = draw_bits(rng, fmt, (K, N), mix, spread)
    if draw(st.booleans()):
        cancel(rng, fmt, A, B)
    init = None
    if draw(st.booleans()):  # an accumulator loaded with C (f32), up to f32's largest
        init = draw_bits(rng, F32, (M, N), mix, spread).view(np.float32)
    return plan, A, B, init


def run(engine: str, plan, A, B, init, rows_per_call: int | None = None) -> np.ndarray:
    """chain.accumulate's bits on ``engine`` (``rows_per_call``: the compiled engine's)."""
    with pytest.MonkeyPatch.context() as patch, np.errstate(all="ignore"):
        patch.setenv(compiled.ENGINE_VARIABLE, engine)
        if rows_per_call is not None:
            patch.setattr(compiled, "ROWS_PER_CALL", rows_per_call)
        return chain.accumulate(plan, A, B, init=init).view(np.uint32)


def assert_same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    diff = np.argwhere(got != want)
    assert diff.size == 0, (
        f"{what}: {len(diff)} of {want.size} outputs differ; first at {tuple(diff[0])}: "
        f"{got[tuple(diff[0])]:#010x} != {want[tuple(diff[0])]:#010x}")


# ---- the NumPy engine is tcsim.mma chained by hand --------------------------------------


def by_hand(plan: Plan, A: np.ndarray, B: np.ndarray, init) -> np.ndarray:
    """Each split range's f32 result, chaining `tcsim.mma` over 16 x 8 tiles: per step, one
    instruction per tile with the step's K slice (zero padded), from zero (or ``init``)."""
    fmt, dtype = INSTRUCTIONS[plan.instruction]
    k = plan.step_k
    M, K = A.shape
    N = B.shape[1]
    Mp, Np = -(-M // 16) * 16, -(-N // 8) * 8  # whole tiles; padded rows/columns are zeros
    parts = []
    for i, (start, end) in enumerate(plan.ranges(K)):
        D = np.zeros((Mp // 16, Np // 8, 16, 8), np.float32)
        if init is not None and i == 0:
            c = np.zeros((Mp, Np), np.float32)
            c[:M, :N] = init
            D[...] = c.reshape(Mp // 16, 16, Np // 8, 8).transpose(0, 2, 1, 3)
        for s, e in plan.steps(start, end):
            a = np.zeros((Mp, k), fmt.uint)
            b = np.zeros((k, Np), fmt.uint)
            a[:M, :e - s] = A[:, s:e]
            b[:e - s, :N] = B[s:e]
            a_tiles = a.view(dtype).reshape(Mp // 16, 1, 16, k)
            b_tiles = b.view(dtype).reshape(k, Np // 8, 8).transpose(1, 0, 2)[None]
            with np.errstate(all="ignore"):
                D = tcsim.mma(plan.instruction, a_tiles, b_tiles, D)
        full = D.transpose(0, 2, 1, 3).reshape(Mp, Np)
        parts.append(full[:M, :N])
    return np.stack(parts).view(np.uint32)


@settings(max_examples=40, deadline=None)
@given(gemms(big=False))
def test_numpy_engine_is_tcsim_mma_chained_by_hand(case):
    plan, A, B, init = case
    plan = plan.with_(round_inputs=None)  # input rounding is not the chain's business
    want = by_hand(plan, A, B, init)
    assert_same_bits(run("numpy", plan, A, B, init), want,
                     f"NumPy engine vs tcsim.mma by hand, {plan.instruction}")


# ---- the compiled engine is the NumPy engine --------------------------------------------

needs_numba = pytest.mark.skipif(
    not compiled.available(),
    reason="numba is not installed (pip install 'tcsim[fast]'): no compiled engine to check")


@needs_numba
@settings(max_examples=150, deadline=None)
@given(gemms(fp8=True), st.sampled_from([256, 3]))
def test_compiled_engine_is_bit_identical_to_the_numpy_engine(case, rows):
    plan, A, B, init = case
    want = run("numpy", plan, A, B, init)
    got = run("numba", plan, A, B, init, rows_per_call=rows)  # 3: several calls of the loops
    assert_same_bits(got, want, f"compiled vs NumPy engine, {plan}")


@settings(max_examples=80, deadline=None)
@given(gemms(big=False))
def test_compiled_arithmetic_matches_the_numpy_engine_on_tiny_gemms(case):
    """Runs the compiled engine's loops (as plain Python where numba is absent)."""
    plan, A, B, init = case
    want = run("numpy", plan, A, B, init)
    if plan.round_inputs == "tf32":
        A, B = chain._to_tf32(A), chain._to_tf32(B)
    with np.errstate(all="ignore"):
        got = compiled.accumulate(plan, A, B, init).view(np.uint32)
    assert_same_bits(got, want, f"compiled loops vs NumPy engine, {plan}")


SPECIAL_CASES = [  # (a row, b column, the f32 bits sm_90 writes)
    ([np.inf, 0.0], [0.0, 1.0], 0x7FFFFFFF),  # inf * 0 is NaN, written as 0x7FFFFFFF
    ([np.inf, 1.0], [1.0, -np.inf], 0x7FFFFFFF),  # +inf + -inf
    ([np.inf, 1.0], [1.0, 1.0], 0x7F800000),  # +inf
    ([-np.inf, np.nan], [0.5, 0.0], 0x7FFFFFFF),  # NaN in, the canonical NaN out
    ([2.0**127, 2.0**127], [2.0**127, 2.0**127], 0x7F800000),  # 2**255: overflow to +inf
    ([2.0**127, 2.0**127] + [0.0] * 14 + [-(2.0**127)], [2.0**127] * 17, 0x7F800000),  # stays
    ([-1.0, 1.0], [1.0, 1.0], 0),  # exact cancellation: +0
    ([-0.0, -0.0], [1.0, 1.0], 0),  # -0 + -0: sm_90 writes +0
    # 2**-140 - 2**-160: the padding's zeros bring exponent -133 to the alignment, so the
    # quantum is 2**-158 and -2**-160 truncates to 0 (aligned at -140 it would not, and the
    # sum would round toward zero to 2**-140 - 2**-149, 0x1FF)
    ([2.0**-70, -(2.0**-80)], [2.0**-70, 2.0**-80], 0x200),
]


@pytest.mark.parametrize("engine", ["numpy", "compiled"])
@pytest.mark.parametrize("a, b, want", SPECIAL_CASES)
def test_cases_with_known_outcomes(engine, a, b, want):
    """Outcomes known without any engine (IEEE's rules and sm_90's NaN and zero), on bf16."""
    plan = Plan("mma", "m16n8k16.row.col.f32.bf16.bf16.f32", k_tile=16)
    A = np.array([a], ml_dtypes.bfloat16).view(np.uint16)
    B = np.array(b, ml_dtypes.bfloat16).reshape(-1, 1).view(np.uint16)
    with np.errstate(all="ignore"):
        if engine == "numpy":
            got = run("numpy", plan, A, B, None)
        else:
            got = compiled.accumulate(plan, A, B).view(np.uint32)
    assert got[0, 0, 0] == want, f"{got[0, 0, 0]:#010x} != {want:#010x}"


# ---- choosing the engine ------------------------------------------------------------------


def test_engine_variable(monkeypatch):
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "numpy")
    assert compiled.engine() == "numpy"
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "cuda")
    with pytest.raises(compiled.EngineUnavailableError, match="names no engine"):
        compiled.engine()
    x = np.ones((2, 2), np.float16)
    with pytest.raises(ValueError, match="TCSIM_ENGINE='cuda' names no engine"):
        blas.matmul(x, x)  # whatever plan the call takes
    monkeypatch.delenv(compiled.ENGINE_VARIABLE)
    assert compiled.engine() == ("numba" if compiled.available() else "numpy")


def test_asking_for_numba_without_it_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(compiled, "available", lambda: False)
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "numba")
    with pytest.raises(compiled.EngineUnavailableError, match=r"pip install 'tcsim\[fast\]'"):
        compiled.engine()
    plan = Plan("mma", "m16n8k16.row.col.f32.f16.f16.f32", k_tile=16)
    A = np.ones((2, 16), np.float16).view(np.uint16)
    with pytest.raises(ImportError, match="numba is not installed"):
        chain.accumulate(plan, A, A.T.copy())
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "auto")  # unset or auto: NumPy, silently
    assert chain.accumulate(plan, A, A.T.copy())[0, 0, 0] == 16


@needs_numba
def test_the_chain_runs_on_the_compiled_engine_when_numba_is_there(monkeypatch):
    monkeypatch.delenv(compiled.ENGINE_VARIABLE, raising=False)
    calls = []
    real = compiled.accumulate
    monkeypatch.setattr(compiled, "accumulate", lambda *a, **k: calls.append(1) or real(*a, **k))
    plan = Plan("mma", "m16n8k16.row.col.f32.f16.f16.f32", k_tile=16)
    A = np.ones((2, 16), np.float16).view(np.uint16)
    assert chain.accumulate(plan, A, A.T.copy())[0, 0, 0] == 16
    assert calls == [1]
    monkeypatch.setenv(compiled.ENGINE_VARIABLE, "numpy")
    chain.accumulate(plan, A, A.T.copy())
    assert calls == [1]


@needs_numba
def test_calls_from_several_threads_at_once():
    """numba's workqueue threads abort the process when two Python threads enter a parallel
    loop at once; the engine lets one in at a time (a fresh process, on that layer)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np
        from concurrent.futures import ThreadPoolExecutor
        import tcsim.blas as blas
        A = np.random.default_rng().standard_normal((256, 256)).astype(np.float16)
        want = blas.matmul(A, A)
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda _: blas.matmul(A, A), range(8)))
        import numba
        print(numba.threading_layer(), all(np.array_equal(g, want) for g in got))
    """)
    import os
    from pathlib import Path

    here = str(Path(tcsim.__file__).resolve().parents[1])  # the tcsim under test
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", TCSIM_ENGINE="numba",
               PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["workqueue", "True"]


@needs_numba
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_public_calls_agree_on_both_engines(monkeypatch, dtype):
    """tcsim.blas.matmul (batched, B broadcast, A transposed in memory; tf32 for float32),
    with progress counting every row once, on both engines."""
    rng = np.random.default_rng()
    A = np.asfortranarray(rng.standard_normal((3, 300, 40)).astype(dtype))  # (3, M, K)
    B = rng.standard_normal((40, 24)).astype(dtype)
    results, rows = {}, {}
    for engine in ("numpy", "numba"):
        monkeypatch.setenv(compiled.ENGINE_VARIABLE, engine)
        done = []
        results[engine] = blas.matmul(A, B, allow_tf32=dtype == np.float32,
                                      progress=done.append)
        rows[engine] = sum(done)
    assert results["numba"].tobytes() == results["numpy"].tobytes()
    assert rows["numba"] == rows["numpy"] == 3 * 300
