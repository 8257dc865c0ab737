"""`tcsim blas`: every op runs and reports its plan and error; the statistics are right against
ml_dtypes' own rounding; every bad argument is one line on stderr with exit status 2."""

import re
import sys

import ml_dtypes
import numpy as np
import pytest

from tcsim.blas.report import errors
from tcsim.cli import main


@pytest.fixture
def seed(rng, capsys) -> str:
    """A fresh --seed for the command, shown on stderr to replay a failure."""
    value = str(int(rng.integers(2**31)))
    capsys.readouterr()  # the rng fixture's own line, out of the command's stdout
    print(f"--seed {value}", file=sys.stderr)
    return value


def _run(capsys, *argv: str) -> str:
    assert main(["blas", *argv]) == 0
    return capsys.readouterr().out


def _stat(out: str, label: str) -> tuple[float, float]:
    m = re.search(rf"{label}\s+max (\S+)\s+mean (\S+)", out)
    return float(m.group(1)), float(m.group(2))


def _share(out: str, label: str) -> int:
    return int(re.search(rf"{label}\s*:?\s+(\d+) of", out).group(1))


@pytest.mark.parametrize("argv", [
    ["matmul", "48", "40", "300", "--dtype", "bf16"],
    ["matmul", "32", "24", "256", "--layout", "NT"],
    ["linear", "40", "24", "300"],
])
def test_f16_bf16_ops_round_once_from_f32(capsys, argv, seed):
    out = _run(capsys, *argv, "--seed", seed)
    M, N = int(argv[1]), int(argv[2])
    assert "kernel" in out and "accumulate  f32" in out
    # f32 accumulation, then one rounding: a quarter of an ulp on average (half an ulp at
    # most, but where the result nearly cancels, the f32 sum's own error can be an ulp or two
    # of a tiny output), and nearly all outputs correctly rounded
    assert 0.15 < _stat(out, r"ulps of \w+")[1] < 0.4
    assert _share(out, "correctly rounded") > 0.95 * M * N


def test_addmm_rounds_twice_when_its_plan_says_so(capsys, seed):
    out = _run(capsys, "addmm", "40", "32", "200", "--dtype", "bf16", "--seed", seed)
    # torch's addmm with beta = alpha = 1: A @ B is rounded to bf16 before C is added (a
    # second rounding), so where C cancels A @ B the error is many ulps of the small result
    assert "rounded to the output type, then + C" in out
    assert _stat(out, r"ulps of bfloat16")[0] > 2
    assert 0.5 * 1280 < _share(out, "correctly rounded") < 1280


def test_tf32_rounds_the_inputs_and_it_shows_in_the_error(capsys, seed):
    plain = _run(capsys, "matmul", "32", "32", "512", "--dtype", "f32", "--seed", seed)
    tf32 = _run(capsys, "matmul", "32", "32", "512", "--dtype", "f32", "--tf32", "--seed", seed)
    assert "rounded to tf32" in tf32 and "rounded to tf32" not in plain
    # tf32 keeps 10 fraction bits of f32's 23: the mean error grows by orders of magnitude
    assert _stat(tf32, "relative error")[1] > 100 * _stat(plain, "relative error")[1]
    assert _share(tf32, "differ from NumPy's float32 matmul rounded to float32") > 900


def test_fp8_fast_accumulation_loses_more_than_promoted(capsys, seed, rng):
    args = ["scaled_mm", "32", "32", "4096", "--out", "float32", "--seed", seed]
    promoted = _run(capsys, *args)
    fast = _run(capsys, *args, "--fast")
    assert "every 4 wgmma steps" in promoted and "fast accumulation" in fast
    # The printed relative errors of normal inputs swing with the few sums that cancel to
    # near zero (once the promoted mean came out larger); the median absolute error does not:
    # fast / promoted was 4.5x to 5.5x over 12 seeds.
    from tcsim import blas

    A, B = (rng.standard_normal(shape).astype(ml_dtypes.float8_e4m3fn)
            for shape in ((32, 4096), (4096, 32)))
    one = np.float32(1)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    median = {fast_: np.median(np.abs(blas.scaled_mm(A, B, one, one, out_dtype=np.float32,
                                                     use_fast_accum=fast_) - exact))
              for fast_ in (False, True)}
    assert median[True] > 3 * median[False]


def test_scaled_mm_mixed_fp8_types_and_int_mm(capsys):
    out = _run(capsys, "scaled_mm", "32", "32", "256", "--a", "e4m3", "--b", "e5m2",
               "--out", "bfloat16", "--fast")
    assert "m64n8k32.f32.e4m3.e5m2" in out and "elements of bfloat16" in out
    out = _run(capsys, "int_mm", "64", "32", "256")
    assert "2048 of 2048 elements equal the exact sum" in out


def test_the_seed_draws_other_inputs(capsys, seed):
    first = _run(capsys, "matmul", "32", "32", "256", "--seed", seed)
    again = _run(capsys, "matmul", "32", "32", "256", "--seed", seed)
    other = _run(capsys, "matmul", "32", "32", "256", "--seed", str(int(seed) + 1))
    assert first == again and _stat(first, "relative error") != _stat(other, "relative error")


def test_error_statistics_against_ml_dtypes_rounding(rng):
    exact = rng.standard_normal((16, 8)) * 3
    single = exact.astype(np.float32)
    D = exact.astype(np.float32).astype(ml_dtypes.bfloat16)  # correctly rounded (nearest even)
    e = errors(D, exact, single)
    assert e.correctly_rounded == 128 and e.differ_from_numpy == 0
    assert 0 < e.max_ulps <= 0.5 and e.max_relative <= 2.0**-8
    # one element one ulp away (towards zero): 0.5..1.5 ulps off, no longer correctly rounded
    bits = D.view(np.uint16).copy()
    bits[3, 4] -= 1
    off = bits.view(ml_dtypes.bfloat16)
    e = errors(off, exact, single)
    assert e.correctly_rounded == 127 and e.differ_from_numpy == 1
    assert 0.5 <= e.max_ulps <= 1.5
    ints = rng.integers(-1000, 1000, (8, 8))
    e = errors(ints.astype(np.int32), ints.astype(np.float64), ints)
    assert e.correctly_rounded == 64 and e.differ_from_numpy == 0


@pytest.mark.parametrize("argv, words", [
    (["matmul", "0", "8", "8"], "M must be at least 1"),
    (["matmul", "8", "8", "x"], "invalid int value"),
    (["matmul", "8", "8", "8", "--seed", "-1"], "--seed"),
    (["gemv", "8", "8", "8"], "invalid choice"),
    (["matmul", "8", "8", "8", "--dtype", "f64"], "invalid choice"),
    (["matmul", "8", "8", "8", "--fast"], "applies to scaled_mm only"),
    (["linear", "8", "8", "8", "--out", "f32"], "applies to scaled_mm only"),
    (["int_mm", "32", "32", "256", "--dtype", "bf16"], "does not apply to int_mm"),
    (["scaled_mm", "32", "32", "256", "--layout", "NT"], "does not apply to scaled_mm"),
    (["linear", "8", "8", "8", "--layout", "TN"], "does not apply to linear"),
    (["matmul", "8", "8", "8", "--tf32"], "--tf32 applies to --dtype f32"),
    (["scaled_mm", "32", "32", "256", "--a", "e5m2", "--b", "e5m2"], "e5m2"),
    (["scaled_mm", "32", "32", "100"], "multiples of 16"),
    (["int_mm", "8", "32", "256"], "M > 16"),
    (["matmul", "100000", "100000", "100000"], "memory"),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, words):
    try:
        code = main(["blas", *argv])
    except SystemExit as done:  # argparse's own errors
        code = done.code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2 and "\n" not in err and err.startswith("tcsim"), err
    assert words in err and not captured.out


def test_the_layout_reaches_the_call(capsys):
    # torch's x.t() views make cuBLAS choose among other kernels: the four layouts find their
    # kernels among different measured calls
    kernels = {re.search(r"kernel\s+(\S+)", _run(capsys, "matmul", "64", "64", "1024",
                                                  "--layout", layout)).group(1)
               for layout in ("NN", "NT", "TN", "TT")}
    assert len(kernels) >= 3
