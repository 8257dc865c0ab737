"""mma.sync semantics: ``D = A @ B + C`` with the tensor core's exact arithmetic.

`mma_regs` is the instruction as the warp sees it (per-lane 32-bit registers in, registers out);
`mma` is the same at matrix level and gives exactly ``unpack(mma_regs(pack(A), pack(B),
pack(C)))``. Both run on any leading batch shape. The arithmetic on bit patterns is
`tcsim.isa.arithmetic.mma_bits`; the chunked, threaded engine both use is `tcsim.isa.engine`.
"""

from __future__ import annotations

import numpy as np

from .allocator import tune_allocator
from .arithmetic import mma_bits
from .engine import execute, flatten, stacked_inputs
from .fragments import check_batch, check_matrix, mma_fragment, store_batch_last
from .profiles import ArchProfile, profile
from .qualifier import MmaSpec, parse


def mma(
    qualifier: str,
    A: np.ndarray,
    B: np.ndarray,
    C: np.ndarray | None = None,
    arch: str | ArchProfile = "sm_90",
) -> np.ndarray:
    """``D = A @ B + C`` for one mma.sync instruction, bit-exact, over any batch shape.

    A is (..., M, K), B is (..., K, N), C is (..., M, N) (None: zeros, for D = A @ B); dtypes
    as the qualifier's types say:
    float16, ml_dtypes.bfloat16, float32 (f32, and tf32, whose low 13 bits the hardware
    ignores), ml_dtypes.float8_e4m3fn / float8_e5m2, int8, uint8 or int32 (s32).
    Returns D (..., M, N) in D's dtype. A wgmma qualifier ("m64n128k16.f32.f16.f16") runs
    `tcsim.isa.wgmma.wgmma` with its default options.
    """
    from .wgmma import is_wgmma_qualifier, wgmma  # the one family above mma.sync

    if is_wgmma_qualifier(qualifier):
        return wgmma(qualifier, A, B, C, arch=arch)
    spec = parse(qualifier)
    C = spec.zero_c(A, B) if C is None else C
    bits = [_matrix_bits(spec, op, x) for op, x in zip("abc", (A, B, C))]
    check_batch(spec, bits)
    # Same bits as unpack(mma_regs(pack(A), pack(B), pack(C))), without the register shuffles.
    return spec.format("d").from_bits(mma_bits(spec, *bits, profile(arch)))


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
    tune_allocator()
    fa, fb, fc, fd = (mma_fragment(spec, op) for op in "abcd")
    regs = [f.check_registers(x) for f, x in zip((fa, fb, fc), (a, b, c))]
    check_batch(spec, regs)
    if spec.products_per_warp > 1 or not _runs_on_adder(spec):
        return _via_matrices(spec, regs, profile(arch))
    batch, (a, b, c) = flatten(regs)
    d = np.empty((a.shape[0], 32, fd.registers), np.uint32)
    d_elements = fd.from_registers(d)  # a view: (n, 32, elements) in D's storage type

    def load(s: int, e: int):
        ab = stacked_inputs(spec, e - s, fa.format.uint)
        fa.registers_to_batch_last(a[s:e], out=ab[:, :spec.m], transpose=True)
        fb.registers_to_batch_last(b[s:e], out=ab[:, spec.m:])
        return ab, fc.registers_to_batch_last(c[s:e])

    def store(s: int, e: int, bits: np.ndarray) -> None:
        store_batch_last(d_elements[s:e], fd.batch_last_elements(bits))

    execute(spec, profile(arch).check(spec), a.shape[0], load, store)
    return d.reshape(batch + d.shape[1:])


def _matrix_bits(spec: MmaSpec, operand: str, x) -> np.ndarray:
    """Bit patterns of one product's operand matrix (..., rows, cols), checked."""
    fmt = spec.format(operand)
    name = f"{spec.qualifier} {operand.upper()}"
    return fmt.to_bits(check_matrix(name, fmt, spec.matrix_shape(operand), x))


def _runs_on_adder(spec: MmaSpec) -> bool:
    """Whether the instruction is one pass of the fused adder (not a lowering or integers)."""
    return spec.family not in ("fp8", "int8")


def _via_matrices(spec: MmaSpec, regs, arch: ArchProfile) -> np.ndarray:
    """Registers through matrices: for m8n8k4, a warp's four stacked quad-pair products one
    product at a time; for lowered and integer instructions, their matrix-level engines."""
    frags = [mma_fragment(spec, op) for op in "abcd"]
    per = spec.products_per_warp
    mats = []
    for frag, r in zip(frags, regs):
        m = frag.scatter_bits(frag.from_registers(r))  # (..., 4 * rows, cols)
        mats.append(m.reshape(m.shape[:-2] + (per, frag.rows // per, frag.cols)))
    D = mma_bits(spec, *mats, arch)  # (..., 4, 8, 8)
    D = D.reshape(D.shape[:-3] + (frags[3].rows, frags[3].cols))
    return frags[3].to_registers(frags[3].gather_bits(D))
