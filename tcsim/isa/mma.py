"""mma.sync semantics: ``D = A @ B + C`` with the tensor core's exact arithmetic.

`mma_regs` is the instruction as the warp sees it (per-lane 32-bit registers in, registers out);
`mma` is the same at matrix level, ``unpack(mma_regs(pack(A), pack(B), pack(C)))``. Both run on
any leading batch shape. Internally the batch is moved to the last axis and cut into chunks
that fit in cache; chunks run on a thread pool (numpy releases the GIL in its loops).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from .adder import ZERO_EXPONENT, fused_step, special_step, work_plan
from .fragments import mma_fragment
from .profiles import AdderRule, ArchProfile, profile
from .qualifier import MmaSpec, parse

CHUNK = 256  # instructions per chunk: the (G, 16, 8, CHUNK) term arrays stay in L2


def mma(
    qualifier: str,
    A: np.ndarray,
    B: np.ndarray,
    C: np.ndarray,
    arch: str | ArchProfile = "sm_90",
) -> np.ndarray:
    """``D = A @ B + C`` for one mma.sync instruction, bit-exact, over any batch shape.

    A is (..., M, K), B is (..., K, N), C is (..., M, N); dtypes float16, ml_dtypes.bfloat16 or
    float32 as the qualifier's types say (tf32 operands are float32 whose low 13 bits are
    ignored, as the hardware ignores them). Returns D (..., M, N) in D's dtype.
    """
    spec = parse(qualifier)
    frags = [mma_fragment(spec, op) for op in "abcd"]
    a, b, c = (f.pack(x) for f, x in zip(frags, (A, B, C)))
    return frags[3].unpack(mma_regs(spec.qualifier, a, b, c, arch))


def mma_regs(
    qualifier: str,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    arch: str | ArchProfile = "sm_90",
) -> np.ndarray:
    """The instruction at register level: uint32 arrays (..., 32, n) in PTX operand order.

    Each of a, b, c holds, lane by lane, the operand registers exactly as the instruction reads
    them (two 16-bit values per register with the lower-indexed element in the low half; f32
    values as bit patterns). Returns d (..., 32, n_d) as the instruction writes it.
    """
    spec = parse(qualifier)
    fa, fb, fc, fd = (mma_fragment(spec, op) for op in "abcd")
    A = fa.scatter_bits(fa.from_registers(a))
    B = fb.scatter_bits(fb.from_registers(b))
    C = fc.scatter_bits(fc.from_registers(c))
    D = mma_bits(spec, A, B, C, profile(arch))
    return fd.to_registers(fd.gather_bits(D))


# ---- the engine on matrices of bit patterns ---------------------------------------------------


def mma_bits(
    spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray, arch: ArchProfile
) -> np.ndarray:
    """D bit patterns (..., M, N) from A (..., M, K), B (..., K, N), C (..., M, N) bit patterns."""
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    n = int(np.prod(batch, dtype=np.int64))
    engine = _Engine(spec, arch.rule(spec.input_type))
    chunks = max(1, -(-n // CHUNK))

    def blocked(x: np.ndarray, rows: int, cols: int, k_first: bool) -> np.ndarray:
        x = np.broadcast_to(x, batch + (rows, cols)).reshape(n, rows, cols)
        x = np.concatenate([x, np.zeros((chunks * CHUNK - n, rows, cols), x.dtype)])
        x = x.reshape(chunks, CHUNK, rows, cols)
        order = (0, 3, 2, 1) if k_first else (0, 2, 3, 1)
        return np.ascontiguousarray(x.transpose(order))

    a = blocked(A, spec.m, spec.k, True)  # (chunks, K, M, CHUNK)
    b = blocked(B, spec.k, spec.n, False)  # (chunks, K, N, CHUNK)
    c = blocked(C, spec.m, spec.n, False)  # (chunks, M, N, CHUNK)
    out = np.empty((chunks, spec.m, spec.n, CHUNK), spec.format("d").uint)

    def work(i: int) -> None:
        out[i] = engine.run(a[i], b[i], c[i])

    pool = _pool()
    if pool is None or chunks < 4:
        for i in range(chunks):
            work(i)
    else:
        list(pool.map(work, range(chunks)))
    d = out.transpose(0, 3, 1, 2).reshape(chunks * CHUNK, spec.m, spec.n)[:n]
    return d.reshape(batch + (spec.m, spec.n))


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor | None:
    threads = int(os.environ.get("TCSIM_THREADS", os.cpu_count() or 1))
    return ThreadPoolExecutor(threads) if threads > 1 else None


class _Engine:
    """One instruction's arithmetic on a chunk laid out batch-last."""

    def __init__(self, spec: MmaSpec, rule: AdderRule) -> None:
        self.spec = spec
        self.rule = rule
        self.fin = spec.format("a")
        self.fc = spec.format("c")
        self.fd = spec.format("d")
        self.plan = work_plan(self.fin, rule.fraction_bits)
        self.zero_exponent = (rule.zero_exponent or {}).get(spec.d_type)
        self.negative_zero_bits = self.fd.uint(1 << (self.fd.storage_bits - 1))

    def _operand(self, bits: np.ndarray):
        fmt = self.fin
        values = fmt.values(bits).astype(self.plan.work, copy=False)
        exps = fmt.exponents(bits, self.plan.exponent)
        if self.zero_exponent is not None:
            exps = np.where(values == 0, self.plan.exponent(ZERO_EXPONENT), exps)
        return values, exps, ~fmt.is_finite(bits)

    def run(self, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray) -> np.ndarray:
        rule, F = self.rule, self.rule.fraction_bits
        a, ea, a_special = self._operand(a_bits)  # (K, M, n)
        b, eb, b_special = self._operand(b_bits)  # (K, N, n)
        acc_bits, acc_fmt = c_bits, self.fc
        k = a.shape[0]
        for start in range(0, k, rule.group_size):
            g = slice(start, min(start + rule.group_size, k))
            dec = acc_fmt.decode(acc_bits)
            sig = np.where(dec.sign, -dec.significand, dec.significand)
            with np.errstate(invalid="ignore", over="ignore"):
                products = a[g][:, :, None, :] * b[g][:, None, :, :]
                exps = ea[g][:, :, None, :] + eb[g][:, None, :, :]
                total, emax = fused_step(
                    products, exps, sig, dec.exponent, acc_fmt.fraction_bits, F,
                    self.plan, self.zero_exponent,
                )
            special = (
                a_special[g].any(axis=0)[:, None, :]
                | b_special[g].any(axis=0)[None, :, :]
                | dec.is_nan | dec.is_inf
            )
            total = np.where(special, 0, total)
            acc_bits = self.fd.round(
                total < 0, np.abs(total), emax - F,
                rule.output_rounding[self.spec.d_type],
                rule.overflow[self.spec.d_type],
                rule.subnormal_outputs,
            )
            if not rule.negative_zero:
                acc_bits = np.where(acc_bits == self.negative_zero_bits, 0, acc_bits)
            if special.any():
                acc_bits = self._specials(acc_bits, special, a[g], b[g], dec)
            acc_fmt = self.fd
        return acc_bits

    def _specials(self, bits, special, a, b, dec):
        acc = np.where(dec.is_nan, np.nan, np.where(dec.is_inf, np.inf, 0.0))
        acc = np.where(dec.sign, -acc, acc)
        is_nan, negative = special_step(
            a.astype(np.float64), b.astype(np.float64), acc
        )
        nan = self.rule.nan_bits[self.spec.d_type]
        inf = np.where(negative, self.fd.inf_bits(True), self.fd.inf_bits(False))
        fixed = np.where(is_nan, nan, inf).astype(bits.dtype)
        return np.where(special, fixed, bits)
