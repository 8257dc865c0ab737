"""The compiled engine's loop nests: the step chains over tiles of outputs (numba).

`tcsim.blas.compiled` prepares the operands (exact values and exponent fields, gathered into
the steps' order with the padding's zeros) and calls `chain` (mma steps) or `fp8_chain`
(fp8 wgmma steps). Each tile of outputs runs through every step with its accumulators in
cache; a step is the adder's fused addition
(`tcsim.isa.adder.fused_step`): the alignment exponent, every term truncated toward zero to
``F`` fraction bits below it as an integer, the integers added exactly, the sum rounded toward
zero to f32. The terms are exact in the work dtype: a product of two inputs has at most 22
significant bits, and the dtype holds every product and every scaled product that is not
below one quantum (what is below one truncates to zero either way). Inner loops run along a
row of outputs, so the compiler vectorizes them.

Without numba the functions stay plain Python (slow, but the same arithmetic).
"""

from __future__ import annotations

import numpy as np

try:
    import numba
    from llvmlite import ir
    from numba import prange, types
    from numba.extending import intrinsic
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None
    prange = range

if numba is not None:
    _jit = numba.njit(cache=True, nogil=True)
    _inline = numba.njit(cache=True, nogil=True, inline="always")  # vectorized with its caller
    _parallel = numba.njit(cache=True, nogil=True, parallel=True)

    def _bitcast(source, target, llvm_type):
        @intrinsic
        def cast(typingctx, x):
            if x != source:
                return None
            return target(source), lambda context, builder, sig, args: builder.bitcast(
                args[0], llvm_type)
        return cast

    # Reinterpreting bits (what a view does for an array), so that loops stay vectorizable.
    as_float64 = _bitcast(types.int64, types.float64, ir.DoubleType())
    as_int64 = _bitcast(types.float64, types.int64, ir.IntType(64))
    as_int32 = _bitcast(types.float32, types.int32, ir.IntType(32))
    as_float32 = _bitcast(types.int32, types.float32, ir.FloatType())
else:  # pragma: no cover - the same arithmetic in plain Python
    def _jit(f):
        return f

    _parallel = _inline = _jit

    def as_float64(x):
        return np.int64(x).view(np.float64)

    def as_int64(x):
        return np.float64(x).view(np.int64)

    def as_int32(x):
        return np.float32(x).view(np.int32)

    def as_float32(x):
        return np.int32(x).view(np.float32)

# Exponent of a zero (or infinite/NaN) operand: far below every real exponent, so a product
# with such a factor never sets the alignment, and the sum of two still fits an int32.
ZERO = -(1 << 20)
# Outputs per tile: rows x columns whose accumulators and B's rows stay in cache for a step.
TILE_ROWS = 4
TILE_COLS = 512  # 128: 1.4x as long on the project's machine (per-row work of each step)
UNROLL = 4  # products per pass over a row of outputs; a step's products are a multiple of it
SMALLEST_NORMAL = 2.0**-126  # f32's
SUBNORMAL_STEPS = 2.0**149  # f32's subnormals are multiples of 2**-149
NAN_BITS = 0x7FFFFFFF  # the NaN sm_90 writes to f32 (AdderRule.nan_bits)
EXPONENT_MASK = 0x7F800000  # f32's exponent field: all ones for infinities and NaN


@_parallel
def chain(av, ea, bv, eb, group, F, zero_rule, zero_exponent, mark_zero_acc, hi, specials,
          ao, bo, acc0_bits, out_bits):
    """The chain over all outputs of a batch, tiles in parallel; ``out_bits`` (count, M, N)
    int32 gets the f32 results' bits (every array has the batch as its leading axis).

    ``av``/``ea`` (count, M, P) and ``bv``/``eb`` (count, P, N): the products' operands in
    step order, P a multiple of ``group`` (the products of one fused step): exact values (0
    for zeros, infinities and NaN) and exponent fields (`ZERO` for those). ``zero_rule``:
    zeros bring ``zero_exponent`` to the alignment; ``mark_zero_acc``: a zero accumulator
    takes no part in the alignment (else it aligns at f32's emin). ``hi``: the largest useful
    inverse quantum exponent for products (below the smallest product exponent all products
    are zero).
    ``specials``: whether an input holds an infinity or NaN; then ``ao``/``bo`` hold the
    operands' values in float64. ``acc0_bits``: the f32 accumulators' start.
    """
    count, M, N = av.shape[0], av.shape[1], bv.shape[2]
    steps = bv.shape[1] // group
    # Per step and column of B: whether it has a zero (of B or of the padding), an inf or NaN.
    b_zero = np.zeros((count, steps, N), np.bool_)
    b_special = np.zeros((count, steps, N), np.bool_)
    for i in prange(count):
        for g in range(steps):
            for p in range(g * group, (g + 1) * group):
                for n in range(N):
                    if eb[i, p, n] == ZERO:
                        b_zero[i, g, n] = True
                        if specials and not np.isfinite(bo[i, p, n]):
                            b_special[i, g, n] = True
    row_tiles = (M + TILE_ROWS - 1) // TILE_ROWS
    col_tiles = (N + TILE_COLS - 1) // TILE_COLS
    tiles = row_tiles * col_tiles
    for t in prange(count * tiles):  # every batch element's tiles in one parallel loop
        i, u = t // tiles, t % tiles
        m0 = (u // col_tiles) * TILE_ROWS
        n0 = (u % col_tiles) * TILE_COLS
        tile(av[i], ea[i], bv[i], eb[i], group, F, zero_rule, zero_exponent, mark_zero_acc, hi,
             specials, ao[i], bo[i], acc0_bits[i], out_bits[i], b_zero[i], b_special[i],
             m0, min(M, m0 + TILE_ROWS), n0, min(N, n0 + TILE_COLS))


@_jit
def tile(av, ea, bv, eb, group, F, zero_rule, zero_exponent, mark_zero_acc, hi, specials,
         ao, bo, acc0_bits, out_bits, b_zero, b_special, m0, m1, n0, n1):
    """Rows [m0, m1) x columns [n0, n1) through every step (arguments as `chain`'s)."""
    rows, w = m1 - m0, n1 - n0
    steps = bv.shape[0] // group
    acc_bits = np.empty((rows, w), np.int32)  # the f32 accumulators, as bits
    acc = acc_bits.view(np.float32)
    # Exponents as float32 (exact for these integers): 16 lanes in a vector, where numba's
    # integer arithmetic would widen them to int64.
    acc_e = np.empty((rows, w), np.float32)
    # Outputs that met an infinity or NaN hold its bits here: no finite term changes them.
    is_special = np.zeros((rows, w), np.bool_)
    special_bits = np.zeros((rows, w), np.int32)
    any_special = False
    emax = np.empty(w, np.float32)
    scale = np.empty(w, av.dtype)  # 1 / quantum for the products, a power of two
    # The step's sum in two int32 halves, each of at most 8 terms below 2**27 (and the
    # accumulator's term below 2**26): no half overflows.
    sums = np.empty((2, w), np.int32)
    for r in range(rows):
        for j in range(w):
            b = acc0_bits[m0 + r, n0 + j]
            if (b & EXPONENT_MASK) == EXPONENT_MASK:
                is_special[r, j] = True
                any_special = True
                special_bits[r, j] = b
                b = 0
            acc_bits[r, j] = b
        exponents(acc_bits[r], acc_e[r], mark_zero_acc)
    for g in range(steps):
        first = g * group
        for r in range(rows):
            m = m0 + r
            row_zero = False
            row_special = False
            if zero_rule or specials:
                for p in range(first, first + group):
                    if ea[m, p] == ZERO:
                        row_zero = True
                        if specials and not np.isfinite(ao[m, p]):
                            row_special = True
            # The alignment: the largest product exponent and the accumulator's.
            alignment(emax, acc_e, r, ea, eb, m, first, group, n0, n1)
            if zero_rule:
                for j in range(w):
                    if row_zero or b_zero[g, n0 + j] or acc[r, j] == 0:
                        emax[j] = larger(emax[j], zero_exponent)
            # 1 / quantum for the products (exact in their dtype) and the accumulator's term
            # (24 bits, below 2**(F + 1) once scaled: exact in float64).
            for j in range(w):
                inverse = F - np.int64(emax[j])
                scale[j] = power_of_two(smaller(inverse, hi))
                sums[0, j] = np.int32(np.float64(acc[r, j]) * power_of_two(smaller(inverse, 1000)))
                sums[1, j] = 0
            # The products' terms, each truncated toward zero by the conversion.
            for p in range(first, first + group, UNROLL):
                add_terms(sums[((p - first) // UNROLL) % 2], av, bv, m, p, n0, n1, scale)
            overflow = False
            for j in range(w):
                bits = round_to_f32(np.int64(sums[0, j]) + np.int64(sums[1, j]),
                                    np.int64(emax[j]) - F)
                acc_bits[r, j] = bits
                overflow |= (bits & EXPONENT_MASK) == EXPONENT_MASK
            if overflow or any_special or specials:
                any_special |= settle_specials(ao, bo, first, group, m, n0, row_special,
                                               b_special[g, n0:n1], acc_bits[r],
                                               is_special[r], special_bits[r])
            exponents(acc_bits[r], acc_e[r], mark_zero_acc)
    for r in range(rows):
        for j in range(w):
            out_bits[m0 + r, n0 + j] = special_bits[r, j] if is_special[r, j] else acc_bits[r, j]


@_inline
def add_terms(out, av, bv, m, p, n0, n1, scale):
    """out[j] += the four products of row m's k = p..p+3 with column n0 + j, each scaled by
    scale[j] and truncated toward zero by the conversion to an integer."""
    a0, a1, a2, a3 = av[m, p], av[m, p + 1], av[m, p + 2], av[m, p + 3]
    b0, b1, b2, b3 = bv[p, n0:n1], bv[p + 1, n0:n1], bv[p + 2, n0:n1], bv[p + 3, n0:n1]
    for j in range(n1 - n0):
        s = scale[j]
        out[j] += (np.int32(a0 * b0[j] * s) + np.int32(a1 * b1[j] * s)
                   + np.int32(a2 * b2[j] * s) + np.int32(a3 * b3[j] * s))


@_inline
def alignment(emax, acc_e, r, ea, eb, m, first, group, n0, n1):
    """emax[j] = the largest exponent among row m's products with column n0 + j over the
    step's k, and the accumulator's (acc_e[r, j])."""
    for j in range(n1 - n0):
        emax[j] = acc_e[r, j]
    for p in range(first, first + group, UNROLL):
        e0, e1, e2, e3 = ea[m, p], ea[m, p + 1], ea[m, p + 2], ea[m, p + 3]
        b0, b1, b2, b3 = eb[p, n0:n1], eb[p + 1, n0:n1], eb[p + 2, n0:n1], eb[p + 3, n0:n1]
        for j in range(n1 - n0):
            emax[j] = larger(larger(emax[j], larger(e0 + b0[j], e1 + b1[j])),
                             larger(e2 + b2[j], e3 + b3[j]))


@_inline
def larger(a, b):
    """max(a, b) for numbers that are not NaN, as a select the compiler vectorizes."""
    return a if a > b else b


@_inline
def smaller(a, b):
    """min(a, b) for numbers that are not NaN."""
    return a if a < b else b


@_inline
def power_of_two(e):
    """2.0**e as float64, for an int64 e within float64's normal exponents."""
    return as_float64((e + 1023) << 52)


@_inline
def round_to_f32(total, exponent):
    """The f32 bits of total * 2**exponent rounded toward zero: subnormals kept, overflow to
    infinity. ``total`` has at most 34 bits, so float64 holds it exactly; a zero comes out
    as +0 (an integer's zero has no sign), as sm_90 writes it."""
    # Keep the top 24 significant bits (toward zero), then scale: exact in float64.
    x = as_float64(as_int64(np.float64(total)) & np.int64(-0x20000000))
    y = x * power_of_two(larger(exponent, -1000))
    if abs(y) < SMALLEST_NORMAL:  # f32's subnormals: toward zero onto their grid (2**-149)
        y = np.float64(np.int64(y * SUBNORMAL_STEPS)) * (1 / SUBNORMAL_STEPS)
    return as_int32(np.float32(y))  # exact, or beyond f32's range: infinity


@_inline
def exponents(acc_bits, acc_e, mark_zero_acc):
    """acc_e = each f32 accumulator's exponent field less the bias (emin for subnormals; `ZERO`
    for zeros when ``mark_zero_acc``), as float32."""
    for j in range(acc_bits.shape[0]):
        e = larger((acc_bits[j] >> 23) & 0xFF, 1) - 127
        acc_e[j] = ZERO if mark_zero_acc and (acc_bits[j] & 0x7FFFFFFF) == 0 else e


@_jit
def settle_specials(ao, bo, first, group, m, n0, row_special, b_special, acc_bits, is_special,
                    special_bits):
    """After a step of one row of a tile: outputs that met an infinity or NaN take the IEEE
    outcome (NaN as `NAN_BITS`, or the infinity) and keep it; an overflow is an infinity.
    Their accumulators are set to zero (no longer read). Returns whether any output is
    special."""
    any_special = False
    for j in range(acc_bits.shape[0]):
        if row_special or b_special[j]:
            special_bits[j] = ieee(ao, bo, first, group, m, n0 + j, is_special[j],
                                   special_bits[j])
            is_special[j] = True
        elif is_special[j]:  # inf + finite terms = inf; NaN stays NaN
            if (special_bits[j] & 0x7FFFFFFF) > EXPONENT_MASK:
                special_bits[j] = NAN_BITS
        elif (acc_bits[j] & EXPONENT_MASK) == EXPONENT_MASK:  # overflow: an infinity
            is_special[j] = True
            special_bits[j] = acc_bits[j]
        if is_special[j]:
            acc_bits[j] = 0
            any_special = True
    return any_special


@_jit
def ieee(ao, bo, first, group, m, n, was_special, bits):
    """The bits of an output that meets an infinity or NaN at a step: the IEEE outcome of its
    products and its accumulator (``bits`` if ``was_special``, else finite): NaN as
    `NAN_BITS`, or the infinity. Finite parts cannot reach infinity in float64."""
    s = 0.0
    if was_special:
        s = np.float64(as_float32(bits))
    for p in range(first, first + group):
        s += ao[m, p] * bo[p, n]
    if np.isnan(s):
        return np.int32(NAN_BITS)
    return np.int32(EXPONENT_MASK) if s > 0 else np.int32(-0x800000)  # +inf, -inf


# ---- fp8 wgmma steps ------------------------------------------------------------------------


@_jit
def fp8_chain(av, ea, bv, eb, group, F, hi, mask, promotion, out):
    """fp8 wgmma steps over all outputs; ``out`` (M, N) float32. One thread: the caller runs
    blocks of rows on tcsim's thread pool (numba's own threads must not be entered from
    several threads at once).

    As `chain`, with the fp8 rule: no zero floor (zeros drop out of the alignment), the
    tensor core's f32 result truncated to the bits ``mask`` keeps, and every ``promotion``
    steps (0: never) the accumulator added to an f32 register sum (to nearest) and restarted
    from zero. Inputs are finite (the caller settles infinities and NaN); fp8 products
    cannot make the f32 sums overflow."""
    M, N = av.shape[0], bv.shape[1]
    row_tiles = (M + TILE_ROWS - 1) // TILE_ROWS
    col_tiles = (N + TILE_COLS - 1) // TILE_COLS
    for t in range(row_tiles * col_tiles):
        m0 = (t // col_tiles) * TILE_ROWS
        n0 = (t % col_tiles) * TILE_COLS
        fp8_tile(av, ea, bv, eb, group, F, hi, mask, promotion, out,
                 m0, min(M, m0 + TILE_ROWS), n0, min(N, n0 + TILE_COLS))


@_jit
def fp8_tile(av, ea, bv, eb, group, F, hi, mask, promotion, out, m0, m1, n0, n1):
    """Rows [m0, m1) x columns [n0, n1) through every fp8 step (arguments as `fp8_chain`'s)."""
    rows, w = m1 - m0, n1 - n0
    steps = bv.shape[0] // group
    acc_bits = np.zeros((rows, w), np.int32)
    acc = acc_bits.view(np.float32)
    acc_e = np.full((rows, w), np.float32(ZERO))
    register = np.zeros((rows, w), np.float32)
    emax = np.empty(w, np.float32)
    scale = np.empty(w, np.float32)
    total = np.empty(w, np.int32)  # 32 terms below 2**15 and the accumulator's below 2**14
    pending = 0
    for g in range(steps):
        first = g * group
        for r in range(rows):
            m = m0 + r
            alignment(emax, acc_e, r, ea, eb, m, first, group, n0, n1)
            for j in range(w):
                inverse = F - np.int64(emax[j])
                scale[j] = power_of_two(smaller(inverse, hi))
                total[j] = np.int32(np.float64(acc[r, j]) * power_of_two(smaller(inverse, 1000)))
            for p in range(first, first + group, UNROLL):
                add_terms(total, av, bv, m, p, n0, n1, scale)
            for j in range(w):
                acc_bits[r, j] = round_to_f32(np.int64(total[j]), np.int64(emax[j]) - F) & mask
            exponents(acc_bits[r], acc_e[r], True)
        pending += 1
        if promotion and (pending == promotion or g == steps - 1):
            for r in range(rows):
                for j in range(w):
                    register[r, j] += acc[r, j]
                    acc_bits[r, j] = 0
                    acc_e[r, j] = ZERO
            pending = 0
    for r in range(rows):
        for j in range(w):
            out[m0 + r, n0 + j] = register[r, j] if promotion else acc[r, j]
