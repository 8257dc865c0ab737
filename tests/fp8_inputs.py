"""fp8 inputs and comparisons shared by kernel11's tests (tests/kernels/test_kernel11.py on the
CPU, tests/hw/test_kernel11_hw.py on the H100): random fp8 bits with the special values drawn on
purpose, scales of either sign, and a bit-for-bit comparison that takes NaN for NaN."""

import ml_dtypes
import numpy as np

FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
MIXES = [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3")]
OUTS = {"f32": np.dtype(np.float32), "bf16": np.dtype(ml_dtypes.bfloat16),
        "f16": np.dtype(np.float16)}
EXPONENT_BITS = {"e4m3": 0x78, "e5m2": 0x7C}


def fp8_matrix(rng, shape, kind: str, specials: bool) -> np.ndarray:
    """Uniformly random finite fp8 bits; with ``specials``, a tenth made subnormal (exponent
    bits cleared), one NaN, for e5m2 one +inf and one -inf, and a few zeros next to them."""
    dtype = FP8[kind]
    bits = rng.integers(0, 256, shape, dtype=np.uint8)
    bad = ~np.isfinite(bits.view(dtype).astype(np.float32))
    bits[bad] = rng.integers(0, 0x70, int(bad.sum()), dtype=np.uint8)
    if specials:
        sub = rng.random(shape) < 0.1
        bits[sub] &= ~np.uint8(EXPONENT_BITS[kind])
        flat = bits.reshape(-1)
        at = rng.choice(flat.size, size=min(flat.size, 6), replace=False)
        flat[at[0]] = 0x7F  # NaN in both formats
        if kind == "e5m2":
            flat[at[1:3]] = (0x7C, 0xFC)  # +inf, -inf
        flat[at[3:]] = rng.choice([0x00, 0x80], size=at[3:].size)  # +0, -0
    return bits.view(dtype)


def inputs(rng, M, N, K, a="e4m3", b="e4m3", specials=True):
    A = fp8_matrix(rng, (M, K), a, specials)
    B = fp8_matrix(rng, (K, N), b, specials)
    if specials and M > 2:
        A[rng.integers(M)] = 0  # a zero row: +0 outputs (or NaN where B's column holds one)
    # scales of either sign from 2^-6 to 2^6: large enough that f16 outputs overflow
    sa, sb = (np.float32(rng.choice([-1, 1]) * 2.0 ** rng.uniform(-6, 6)) for _ in range(2))
    return A, B, sa, sb


def row_scales(rng, M, N):
    """Row-wise scales of either sign, 2^-8 .. 2^8, with some rows of scale_a 2^120 and
    columns of scale_b 2^-120: there only cuBLAS's order (scale_b first) neither overflows
    nor loses bits to f32 subnormals."""
    sa, sb = ((rng.choice([-1, 1], size) * 2.0 ** rng.uniform(-8, 8, size)).astype(np.float32)
              for size in ((M, 1), (1, N)))
    sa[rng.integers(5)::5] = 2.0 ** 120
    sb[:, rng.integers(3)::3] = 2.0 ** -120
    return sa, sb


def assert_same_bits(D, R):
    """Bit for bit, NaN for NaN: tcsim.blas gives its NaN as 0x7fc00000 / 0x7fc0, the tensor
    core, cvt and cuBLAS (measured: tests/hw/test_kernel11_hw.py) the canonical 0x7fffffff /
    0x7fff."""
    assert D.dtype == R.dtype and D.shape == R.shape
    nan_d, nan_r = np.isnan(D.astype(np.float32)), np.isnan(R.astype(np.float32))
    assert np.array_equal(nan_d, nan_r), f"NaN at {np.argwhere(nan_d != nan_r)[:5]}"
    u = f"u{D.itemsize}"
    wrong = (D.view(u) != R.view(u)) & ~nan_d
    assert not wrong.any(), (f"{int(wrong.sum())} elements differ, the first at "
                             f"{np.argwhere(wrong)[0]}")
