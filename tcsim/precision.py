"""How the error of a dot product grows with its length K: seed 003's "Compare Precision".

`precision_study` draws f16 vectors a and b of length K and computes their dot product four
ways, then compares each with the exact value:

- ``tc_f16``: a chain of ``m16n8k16.row.col.f16.f16.f16.f16`` tensor-core instructions over K
  in steps of 16, the D of one step the C of the next, from C = 0 (f16 accumulation);
- ``tc_f32``: the same chain with ``m16n8k16.row.col.f32.f16.f16.f32`` (f32 accumulation);
- ``fma_f32``: a sequential loop ``acc = fma(a_k, b_k, acc)`` in float32, each FMA correctly
  rounded to nearest even (what a CUDA core's FFMA does);
- ``round_f16``: the exact value rounded once to f16: the best any f16 result can be, so the
  floor under ``tc_f16``.

The exact value is computed in integers: every product of two f16 values is an integer multiple
of 2**-48 below 2**32, summed in two 40-bit limbs held in int64. The tensor-core chains run on the
simulator (``backend="sim"``, bit-exact with the H100) or on the GPU (``"hw"``).

**Inputs.** Each distribution has its own generator, ``numpy.random.default_rng([seed, i])``
with i its index in `DISTRIBUTIONS`, drawn k-major (k by k, a and b interleaved). So the first K
terms are the same whatever the largest K of the study and whatever other distributions run:
the K = 1024 dot products are the first 1024 terms of the K = 65536 ones, and each study row
can be recomputed alone. Values are drawn in float64 and cast to f16 (that cast is part of the
inputs, not of the error):

- ``uniform``: U[-1, 1]; ``normal``: N(0, 1); ``positive``: U[0, 1] (no cancellation: the sum
  grows like K/4, which is what makes f16 accumulation stagnate);
- ``mixed``: ``sign(u) * 2**(-10 + 14 |u|)`` with u ~ U[-1, 1]: random signs, magnitudes
  log-uniform over the 14 binades [2**-10, 2**4), so products span 2**-20 .. 2**8 and small
  terms meet large running sums.

**Measures** (per K, distribution and method, over the ``dots`` dot products): the relative
error ``|computed - exact| / |exact|`` (median and max; exact zeros are left out and counted),
the absolute error (max), and the error in units of ``sum_k |a_k b_k|`` (median and max), which
does not blow up when the sum cancels. A result that is not finite (f16 overflow past 65504) is
left out of the error figures and counted in ``overflows``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from fractions import Fraction

import numpy as np

from .isa.formats import native_order, same_type
from .isa.validate import integer, positive_extent
from .progress import progress

DISTRIBUTIONS = ("uniform", "normal", "positive", "mixed")
DISTRIBUTION_TEXT = {
    "uniform": "U[-1, 1]",
    "normal": "N(0, 1)",
    "positive": "U[0, 1]",
    "mixed": "sign * 2^U[-10, 4]",
}
METHODS = ("tc_f16", "tc_f32", "fma_f32", "round_f16")
METHOD_TEXT = {
    "tc_f16": "tensor cores, f16 accumulator (m16n8k16 chain)",
    "tc_f32": "tensor cores, f32 accumulator (m16n8k16 chain)",
    "fma_f32": "f32 FMA loop, one correctly rounded FMA per k",
    "round_f16": "exact sum rounded once to f16 (the best an f16 result can be)",
}
F16_ACCUMULATE = "m16n8k16.row.col.f16.f16.f16.f16"
F32_ACCUMULATE = "m16n8k16.row.col.f32.f16.f16.f32"
DEFAULT_KS = (16, 64, 256, 1024, 4096, 16384, 65536)
USABLE_THRESHOLDS = (1e-2, 1e-3)  # median relative error: 1% and 0.1% (about f16's 3 digits)
STEP = 16  # K of one m16n8k16
LANES = 8  # independent dot products per instruction: D[i, i] for i < 8 (B has 8 columns)
SCALE = 48  # a product of two f16 values is an integer multiple of 2**-48
MAX_K = 1 << 22  # the int64 limb sums hold 2**23 terms
_LIMB = 40  # bits per limb of the exact sums
_SEGMENT = 2048  # k values drawn and processed at once: bounds memory, never changes results

MmaFunction = Callable[[str, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


# ---- correctly rounded arithmetic ---------------------------------------------------------------


def round_sum(hi: np.ndarray, lo: np.ndarray, dtype: type) -> np.ndarray:
    """``hi + lo`` rounded once, to nearest even, into float32 or float16.

    ``hi`` is float64 and ``lo`` the exact remainder (``hi + lo`` is the value, ``|lo|`` at most
    half an ulp of ``hi``, as TwoSum leaves them). Casting ``hi`` alone rounds twice, and is
    wrong exactly when ``hi`` sits on a midpoint of the target grid while ``lo`` is not zero:
    then ``lo``'s sign decides. Overflow gives an infinity, as IEEE round-to-nearest does.
    """
    hi = np.asarray(hi, np.float64)
    lo = np.asarray(lo, np.float64)
    with np.errstate(over="ignore"):  # overflow to inf is the IEEE result, not a mistake
        r = hi.astype(dtype)
    idx = np.flatnonzero(lo)  # the cast is already right wherever nothing lies below hi
    if idx.size == 0:
        return r
    h, low, rr = hi.ravel()[idx], lo.ravel()[idx], r.ravel()[idx]
    r64 = rr.astype(np.float64)
    # The neighbour of r on hi's side; the midpoint between them is exact in float64.
    with np.errstate(over="ignore"):
        nb = np.nextafter(rr, np.where(h > r64, np.inf, -np.inf).astype(dtype))
    mid = np.isfinite(r64) & ((r64 + nb.astype(np.float64)) * 0.5 == h)
    out = np.where(mid & (low > 0), np.maximum(rr, nb), rr)
    out = np.where(mid & (low < 0), np.minimum(rr, nb), out)
    # hi exactly at the overflow threshold (max + half an ulp) rounds to inf, unless lo pulls
    # the value below it.
    big = np.finfo(dtype).max
    threshold = float(big) + (float(big) - float(np.nextafter(big, dtype(0)))) / 2
    back = ~np.isfinite(r64) & (np.abs(h) == threshold) & (low * np.sign(h) < 0)
    out = np.where(back, np.copysign(big, h).astype(dtype), out)
    result = r.copy().ravel()
    result[idx] = out
    return result.reshape(r.shape)


def add_f32(acc: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``acc + p`` for float32 ``acc`` and any float64 ``p``, rounded once to float32 (nearest
    even): TwoSum splits the sum into a float64 and its exact remainder, `round_sum` rounds."""
    acc = np.asarray(acc, np.float32)
    p = np.asarray(p, np.float64)
    x = acc.astype(np.float64)
    s = x + p
    t = s - x
    err = (x - (s - t)) + (p - t)  # TwoSum: s + err == x + p exactly
    return round_sum(s, err, np.float32)


def fma_f32(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """``fma(a, b, acc)`` in float32 for f16 a and b: ``a * b + acc`` rounded once to nearest even.

    The f16 product has at most 22 significant bits, so it is exact in float64, and `add_f32`
    rounds its sum with the accumulator once. (For a 22-bit product and a 24-bit accumulator the
    float64 sum is inexact only when one term is below 2**-29 of the other, far from any float32
    midpoint, so a plain cast would happen to be right too; TwoSum makes that no assumption.)
    Works elementwise on arrays.
    """
    a = np.asarray(a, np.float16)
    b = np.asarray(b, np.float16)
    return add_f32(acc, a.astype(np.float64) * b.astype(np.float64))


# ---- the exact sum in integers ------------------------------------------------------------------


def _limb_sums(p: np.ndarray) -> np.ndarray:
    """Sum over axis 0 of exact f16 products ``p`` (float64) in units of 2**-48, as two limbs
    (..., 2) int64: the value is ``limbs[..., 0] * 2**40 + limbs[..., 1]``.

    A product of two f16 values is an integer multiple of 2**-48 below 2**32, so P = p * 2**48
    is an integer below 2**80. Its two 40-bit halves (floor and remainder, exact in float64)
    each sum exactly in int64 for up to 2**23 terms.
    """
    scaled = p * 2.0**SCALE
    high = np.floor(scaled * 2.0**-_LIMB)
    low = scaled - high * 2.0**_LIMB  # 0 <= low < 2**40, exact
    return np.stack([high.astype(np.int64).sum(0), low.astype(np.int64).sum(0)], axis=-1)


def _limbs_to_ints(limbs: np.ndarray) -> list[int]:
    """Python ints (units of 2**-48) of limb sums (..., 2), flattened."""
    return [(high << _LIMB) + low for high, low in limbs.reshape(-1, 2).tolist()]


def _products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b in float64: exact, since an f16 significand has 11 bits."""
    return a.astype(np.float64) * b.astype(np.float64)


def exact_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact sums over axis 0 of ``a * b`` (f16 arrays, finite) as an object array of
    Fractions, shape ``a.shape[1:]``."""
    a, b = _check_f16(a, "a"), _check_f16(b, "b")
    ints = _limbs_to_ints(_limb_sums(_products(a, b)))
    out = np.empty(len(ints), object)
    out[:] = [Fraction(n, 1 << SCALE) for n in ints]
    return out.reshape(a.shape[1:])


def _check_f16(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x)
    if not same_type(x.dtype, np.dtype(np.float16)):
        raise TypeError(f"{name}: expected dtype float16, got {x.dtype}")
    x = native_order(x)
    if not np.isfinite(x).all():
        raise ValueError(f"{name}: the exact reference needs finite inputs")
    return x


def _round_exact(ints: list[int], dtype: type) -> np.ndarray:
    """Exact values n * 2**-48 rounded once to ``dtype`` (float64 hi, exact remainder lo)."""
    hi = [n / (1 << SCALE) for n in ints]  # int / int: correctly rounded float64
    lo = [(n - int(h * 2.0**SCALE)) / (1 << SCALE) for n, h in zip(ints, hi)]
    return round_sum(np.array(hi, np.float64), np.array(lo, np.float64), dtype)


# ---- the four computations, streamed over k -----------------------------------------------------


def _mma_function(backend: str) -> tuple[str, MmaFunction]:
    """("sim" or "hw", mma function) for a backend name; "auto" takes the GPU when usable."""
    if backend not in ("auto", "sim", "hw"):
        raise ValueError(f"backend must be 'auto', 'sim' or 'hw', got {backend!r}")
    if backend != "sim":
        from . import hw  # imports no CuPy until a GPU function runs

        reason = hw.unavailable_reason()
        if reason is None:
            return "hw", hw.mma
        if backend == "hw":
            raise hw.HardwareUnavailable(f"backend 'hw' needs an NVIDIA GPU with CuPy: {reason}")
    from .isa.mma import mma

    return "sim", lambda q, A, B, C: mma(q, A, B, C, arch="sm_90")


class _Accumulators:
    """The running state of the four methods for a batch of dot products (..., n)."""

    def __init__(self, shape: tuple[int, ...], mma_fn: MmaFunction):
        self.shape = shape
        self.mma = mma_fn
        self.groups = -(-shape[-1] // LANES)
        tiles = shape[:-1] + (self.groups,)
        self.c16 = np.zeros(tiles + (16, 8), np.float16)
        self.c32 = np.zeros(tiles + (16, 8), np.float32)
        self.fma = np.zeros(shape, np.float32)
        self.limbs = np.zeros(shape + (2,), np.int64)
        self.abs_sum = np.zeros(shape, np.float64)
        self.k = 0

    def feed(self, a: np.ndarray, b: np.ndarray) -> None:
        """Add the terms a[k] * b[k] (arrays (n, ...shape), f16, n a multiple of 16)."""
        n = a.shape[0]
        p = _products(a, b)
        self.abs_sum += np.abs(p).sum(0)
        self.limbs += _limb_sums(p)
        for k in range(n):  # the FMA loop is sequential in k; vectorized over the dots
            self.fma = add_f32(self.fma, p[k])
        # Tensor cores: instruction g of a step holds dots 8g..8g+7 on its diagonal, A's row i
        # and B's column i the two vectors of dot 8g + i; A's rows 8..15 stay zero.
        pad = self.groups * LANES - self.shape[-1]
        if pad:
            widths = [(0, 0)] * (a.ndim - 1) + [(0, pad)]
            a, b = np.pad(a, widths), np.pad(b, widths)
        steps = n // STEP
        lead = a.shape[1:-1]
        a = a.reshape((steps, STEP) + lead + (self.groups, LANES))
        b = b.reshape((steps, STEP) + lead + (self.groups, LANES))
        order = (0,) + tuple(range(2, 2 + len(lead) + 1)) + (a.ndim - 1, 1)
        A = np.zeros((steps,) + lead + (self.groups, 16, STEP), np.float16)
        A[..., :LANES, :] = a.transpose(order)  # (step, ..., group, row i, k)
        order_b = (0,) + tuple(range(2, 2 + len(lead) + 1)) + (1, a.ndim - 1)
        B = np.ascontiguousarray(b.transpose(order_b))  # (step, ..., group, k, column j)
        for s in range(steps):  # D of one step is C of the next
            self.c16 = self.mma(F16_ACCUMULATE, A[s], B[s], self.c16)
            self.c32 = self.mma(F32_ACCUMULATE, A[s], B[s], self.c32)
        self.k += n

    def results(self) -> tuple[dict[str, np.ndarray], list[int], np.ndarray]:
        """({method: values (flat float64)}, exact ints in units of 2**-48, sum |a b| (flat))."""
        idx = np.arange(LANES)
        n = self.shape[-1]
        diag16 = self.c16[..., idx, idx].reshape(self.shape[:-1] + (-1,))[..., :n]
        diag32 = self.c32[..., idx, idx].reshape(self.shape[:-1] + (-1,))[..., :n]
        exact = _limbs_to_ints(self.limbs)
        values = {
            "tc_f16": diag16.astype(np.float64).ravel(),
            "tc_f32": diag32.astype(np.float64).ravel(),
            "fma_f32": self.fma.astype(np.float64).ravel(),
            "round_f16": _round_exact(exact, np.float16).astype(np.float64),
        }
        return values, exact, self.abs_sum.ravel()


@dataclass(frozen=True)
class DotProducts:
    """The dot products of `dot_products`, each method's results (float16/float32 arrays), the
    exact values (object array of Fractions) and ``sum_k |a_k b_k|``."""

    tc_f16: np.ndarray
    tc_f32: np.ndarray
    fma_f32: np.ndarray
    round_f16: np.ndarray
    exact: np.ndarray
    abs_sum: np.ndarray
    backend: str


def dot_products(a: np.ndarray, b: np.ndarray, backend: str = "sim") -> DotProducts:
    """The dot products over axis 0 of f16 arrays a and b, (K, ...) with K a multiple of 16,
    computed the four ways of the study (module docstring) and exactly."""
    a, b = _check_f16(a, "a"), _check_f16(b, "b")
    if a.shape != b.shape or a.ndim < 1:
        raise ValueError(f"a and b must have one shape (K, ...), got {a.shape} and {b.shape}")
    if a.shape[0] == 0 or a.shape[0] % STEP:
        raise ValueError(f"K = {a.shape[0]} must be a positive multiple of {STEP}")
    shape = a.shape[1:]
    a2 = a.reshape(a.shape[0], 1, -1)
    b2 = b.reshape(b.shape[0], 1, -1)
    name, fn = _mma_function(backend)
    acc = _Accumulators(a2.shape[1:], fn)
    acc.feed(a2, b2)
    values, exact, abs_sum = acc.results()
    frac = np.empty(len(exact), object)
    frac[:] = [Fraction(n, 1 << SCALE) for n in exact]
    return DotProducts(
        tc_f16=values["tc_f16"].astype(np.float16).reshape(shape),
        tc_f32=values["tc_f32"].astype(np.float32).reshape(shape),
        fma_f32=values["fma_f32"].astype(np.float32).reshape(shape),
        round_f16=values["round_f16"].astype(np.float16).reshape(shape),
        exact=frac.reshape(shape), abs_sum=abs_sum.reshape(shape), backend=name)


def draw(distribution: str, k: int, dots: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The study's inputs: f16 arrays a and b of shape (k, dots) for one distribution."""
    gen = _generator(distribution, seed)
    x = _draw(gen, distribution, k, dots)
    return x[:, 0], x[:, 1]


def _generator(distribution: str, seed: int) -> np.random.Generator:
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {distribution!r}; "
                         f"choose from {', '.join(DISTRIBUTIONS)}")
    return np.random.default_rng([seed, DISTRIBUTIONS.index(distribution)])


def _draw(gen: np.random.Generator, distribution: str, n: int, dots: int) -> np.ndarray:
    """(n, 2, dots) f16: n more k values of a ([:, 0]) and b ([:, 1]), k-major."""
    size = (n, 2, dots)
    if distribution == "uniform":
        x = gen.uniform(-1.0, 1.0, size)
    elif distribution == "normal":
        x = gen.standard_normal(size)
    elif distribution == "positive":
        x = gen.uniform(0.0, 1.0, size)
    else:  # mixed: random sign, magnitude log-uniform over [2**-10, 2**4)
        u = gen.uniform(-1.0, 1.0, size)
        x = np.sign(u) * np.exp2(-10.0 + 14.0 * np.abs(u))
    return x.astype(np.float16)


# ---- the table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrecisionRow:
    """Error figures of one method at one K and distribution (None: no finite result)."""

    k: int
    distribution: str
    method: str
    count: int  # dot products
    overflows: int  # results that are not finite (f16 past 65504: inf)
    exact_zero: int  # exact sums of 0, left out of the relative error
    median_rel: float | None
    max_rel: float | None
    max_abs: float | None
    median_norm: float | None  # |error| / sum |a_k b_k|
    max_norm: float | None
    toward_zero: float | None  # share of inexact results smaller in magnitude than exact


def _stats(k: int, distribution: str, method: str, values: np.ndarray, exact: list[int],
           abs_sum: np.ndarray) -> PrecisionRow:
    """One row from a method's results (float64), the exact sums (units of 2**-48) and
    sum |a_k b_k|; a loop per dot product, not per term."""
    finite = np.isfinite(values)
    errors, rel, norms = [], [], []
    zero = smaller = inexact = 0
    unit = 1 << SCALE
    for v, n, s, ok in zip(values.tolist(), exact, abs_sum.tolist(), finite.tolist()):
        if not ok:
            continue
        num, den = v.as_integer_ratio()
        # Every result here is a multiple of 2**-48 (den <= 2**48): the error is an exact int.
        scaled = Fraction(num, den) * unit if den > unit else num * (unit // den)
        diff = scaled - n
        errors.append(float(abs(diff) / unit))
        norms.append(float(abs(diff) / unit / s) if s else 0.0)
        if n == 0:
            zero += 1
        else:
            rel.append(float(abs(diff) / abs(n)))
        if diff:
            inexact += 1
            smaller += abs(scaled) < abs(n)  # the error points toward zero

    def median(x: list) -> float | None:
        return float(np.median(x)) if x else None

    def largest(x: list) -> float | None:
        return float(np.max(x)) if x else None

    return PrecisionRow(k=k, distribution=distribution, method=method, count=len(values),
                        overflows=int((~finite).sum()), exact_zero=zero,
                        median_rel=median(rel), max_rel=largest(rel), max_abs=largest(errors),
                        median_norm=median(norms), max_norm=largest(norms),
                        toward_zero=smaller / inexact if inexact else None)


@dataclass
class PrecisionTable:
    """The rows of a precision study and the parameters that produced them."""

    params: dict
    rows: list[PrecisionRow]

    def row(self, k: int, distribution: str, method: str) -> PrecisionRow:
        for r in self.rows:
            if (r.k, r.distribution, r.method) == (k, distribution, method):
                return r
        raise ValueError(f"no row for K={k!r}, distribution {distribution!r}, method "
                         f"{method!r}; the study has K in {self.params['ks']}, distributions "
                         f"{self.params['distributions']} and methods {list(METHODS)}")

    def usable_limit(self, threshold: float = 1e-2, method: str = "tc_f16",
                     statistic: str = "median_rel") -> dict[str, int | None]:
        """Per distribution, the smallest K of the study at which ``method`` stops being usable:
        its ``statistic`` (a PrecisionRow field) exceeds ``threshold``, or any result overflows.
        None: usable at every K studied."""
        if statistic not in {f.name for f in fields(PrecisionRow)} - {"k", "distribution",
                                                                       "method"}:
            raise ValueError(f"unknown statistic {statistic!r}")
        out: dict[str, int | None] = {}
        for dist in self.params["distributions"]:
            out[dist] = None
            for k in sorted(self.params["ks"]):
                r = self.row(k, dist, method)
                value = getattr(r, statistic)
                if r.overflows or (value is not None and value > threshold):
                    out[dist] = k
                    break
        return out

    def to_json(self) -> str:
        # One row a line: a regenerated file diffs row by row.
        rows = ",\n  ".join(json.dumps(asdict(r)) for r in self.rows)
        return (f'{{"study": "tcsim.precision",\n "params": {json.dumps(self.params)},\n'
                f' "rows": [\n  {rows}\n ]\n}}\n')

    @classmethod
    def from_json(cls, text: str) -> PrecisionTable:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("study") != "tcsim.precision":
            raise ValueError("not a tcsim precision study (no \"study\": \"tcsim.precision\")")
        return cls(params=data["params"], rows=[PrecisionRow(**r) for r in data["rows"]])

    def __str__(self) -> str:
        p = self.params
        lines = [
            f"{p['dots']} dot products of length K per distribution, seed {p['seed']}, "
            f"tensor cores on backend {p['backend']}.",
            "rel: |computed - exact| / |exact|, median and max; norm: median |computed - exact|"
            " / sum |a_k b_k|;",
            "to 0: share of inexact results smaller in magnitude than exact; inf: results that"
            " overflowed.",
        ]
        rel_methods = METHODS
        norm_methods = METHODS[:3]
        zero_methods = METHODS[1:3]
        head = (f"{'K':>7}  " + "".join(f"{m + ' rel':<17}" for m in rel_methods)
                + "".join(f"{_SHORT[m] + ' norm':<10}" for m in norm_methods)
                + "".join(f"{_SHORT[m] + ' to 0':<10}" for m in zero_methods) + "inf")
        for dist in p["distributions"]:
            lines += ["", f"{dist}: {DISTRIBUTION_TEXT[dist]}", head]
            for k in sorted(p["ks"]):
                rows = {m: self.row(k, dist, m) for m in METHODS}
                text = f"{k:7d}  "
                text += "".join(f"{_num(rows[m].median_rel)} {_num(rows[m].max_rel)}".ljust(17)
                                for m in rel_methods)
                text += "".join(_num(rows[m].median_norm).ljust(10) for m in norm_methods)
                text += "".join(_share(rows[m].toward_zero).ljust(10) for m in zero_methods)
                infs = [f"{m}:{r.overflows}" for m, r in rows.items() if r.overflows]
                lines.append(text + (" ".join(infs) if infs else "0"))
        dists = p["distributions"]
        lines += ["", "f16 accumulation (tc_f16) stops being usable at the first K where its median"
                  " relative error", f"exceeds the threshold or a result overflows ('-': not "
                  f"within K <= {max(p['ks'])}):",
                  "  threshold  " + "".join(f"{d:<10}" for d in dists)]
        for threshold in USABLE_THRESHOLDS:
            limits = self.usable_limit(threshold)
            lines.append(f"  {threshold:<9.0e}  " + "".join(
                f"{limits[d] if limits[d] else '-':<10}" for d in dists))
        return "\n".join(line.rstrip() for line in lines)


_SHORT = {"tc_f16": "tc16", "tc_f32": "tc32", "fma_f32": "fma"}


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return "0" if x == 0 else f"{x:.1e}"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def precision_study(
    ks: Sequence[int] = DEFAULT_KS,
    distributions: Sequence[str] = DISTRIBUTIONS,
    dots: int = 256,
    seed: int = 0,
    backend: str = "auto",
) -> PrecisionTable:
    """Error of f16 dot products of each length K in ``ks``, four ways (module docstring).

    ``dots`` dot products per distribution; every K a positive multiple of 16. ``backend``:
    "sim" (tcsim.mma), "hw" (tcsim.hw.mma, on the GPU) or "auto" (the GPU when usable).
    """
    if isinstance(ks, Sequence) and not isinstance(ks, (str, bytes)) and not len(ks):
        raise ValueError("ks is empty: give at least one K (a positive multiple of 16)")
    ks = sorted(set(positive_extent(ks, "ks")))  # one K alone is taken as [K]
    if any(k % STEP for k in ks) or ks[-1] > MAX_K:
        raise ValueError(f"every K must be a positive multiple of {STEP} up to {MAX_K}, "
                         f"got {ks}")
    if isinstance(distributions, str):  # one name alone, not its letters
        distributions = [distributions]
    distributions = list(dict.fromkeys(distributions))
    for d in distributions:
        _generator(d, 0)  # names checked before any work
    if not distributions:
        raise ValueError("no distributions given")
    dots = integer(dots, "dots", minimum=1)
    seed = integer(seed, "seed", minimum=0)
    name, fn = _mma_function(backend)
    gens = [_generator(d, seed) for d in distributions]
    acc = _Accumulators((len(distributions), dots), fn)
    rows: list[PrecisionRow] = []
    # Segments end at every K of the study and at every multiple of _SEGMENT.
    ends = sorted(set(ks) | set(range(_SEGMENT, ks[-1], _SEGMENT)))
    start = 0
    with progress(ks[-1], f"precision_study up to K={ks[-1]}") as tick:
        for end in ends:
            x = np.stack([_draw(g, d, end - start, dots) for g, d in zip(gens, distributions)],
                         1)
            acc.feed(x[:, :, 0], x[:, :, 1])  # (n, distribution, dot)
            if end in ks:
                values, exact, abs_sum = acc.results()
                per = dots
                for i, dist in enumerate(distributions):
                    part = slice(i * per, (i + 1) * per)
                    for method in METHODS:
                        rows.append(_stats(end, dist, method, values[method][part],
                                           exact[part], abs_sum[part]))
            tick(end - start)
            start = end
    params = {"ks": ks, "distributions": distributions, "dots": dots, "seed": seed,
              "backend": name}
    return PrecisionTable(params=params, rows=rows)


__all__ = ["DISTRIBUTIONS", "METHODS", "DotProducts", "PrecisionRow", "PrecisionTable",
           "add_f32", "dot_products", "draw", "exact_dots", "fma_f32", "precision_study",
           "round_sum"]
