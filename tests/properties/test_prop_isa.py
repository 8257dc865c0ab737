"""Properties of the instruction-level entry points: tcsim.mma, mma_regs, fragment(...).pack /
unpack, tcsim.Warp, tcsim.parse and tcsim.profile.

- Bits do not depend on the inputs' memory layout (Fortran order, transposed or strided views,
  read-only, zero-stride broadcasts), and inputs are never modified.
- An empty batch (a batch axis of length 0) works and gives an empty result of the right shape.
- A wrong dtype is a TypeError and a wrong shape a ValueError, naming the operand; a bad
  qualifier is a QualifierError, a bad architecture or operand name a ValueError, whatever
  object is passed.
- A batch too large for this machine is refused before it is allocated.
"""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from prop_inputs import FEW, LAYOUTS, SOME, bits, in_layout, random_values, refused_quickly

import tcsim
from tcsim.isa.qualifier import QualifierError

QUALIFIERS = tcsim.supported_qualifiers()
qualifiers = st.sampled_from(QUALIFIERS)
layouts = st.sampled_from(LAYOUTS)
batches = st.lists(st.integers(0, 3), max_size=2).map(tuple)
seeds = st.integers(0, 2**32 - 1)
# Objects that are not what an argument expects, of many kinds.
junk = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True), st.booleans(),
                 st.binary(max_size=4), st.lists(st.integers(0, 3), max_size=2),
                 st.just(np.array([1, 2])), st.just(object()), st.complex_numbers())


def operands(q: str, batch: tuple, rng) -> list[np.ndarray]:
    """A, B, C of one instruction at matrix level, over ``batch`` (m8n8k4: per product)."""
    spec = tcsim.parse(q)
    return [random_values(spec.format(op).dtype, batch + spec.matrix_shape(op), rng)
            for op in "abc"]


def _runs(q: str, arch: str) -> bool:
    try:
        tcsim.profile(arch).check(tcsim.parse(q))
    except ValueError:
        return False
    return True


@SOME
@given(qualifiers, batches, seeds, st.tuples(layouts, layouts, layouts),
       st.sampled_from(sorted(tcsim.PROFILES)))
def test_mma_bits_do_not_depend_on_layout_and_inputs_are_kept(q, batch, seed, kinds, arch):
    assume(_runs(q, arch))
    rng = np.random.default_rng(seed)
    pairs = [in_layout(x, kind) for x, kind in zip(operands(q, batch, rng), kinds)]
    refs, variants = [p[0] for p in pairs], [p[1] for p in pairs]
    before = [bits(x).copy() for x in variants]
    expected = tcsim.mma(q, *refs, arch=arch)
    got = tcsim.mma(q, *variants, arch=arch)
    spec = tcsim.parse(q)
    assert got.shape == batch + (spec.m, spec.n) == expected.shape
    assert np.array_equal(bits(got), bits(expected))
    for x, b in zip(variants, before):
        assert np.array_equal(bits(x), b)  # not modified


@SOME
@given(qualifiers, batches, seeds, st.tuples(layouts, layouts, layouts))
def test_mma_regs_bits_do_not_depend_on_layout_and_inputs_are_kept(q, batch, seed, kinds):
    rng = np.random.default_rng(seed)
    frags = [tcsim.fragment(q, op) for op in "abcd"]
    regs = [rng.integers(1, 1 << 32, batch + (32, f.registers), dtype=np.uint64)
            .astype(np.uint32) for f in frags[:3]]  # any bits: NaN, inf, subnormals
    pairs = [in_layout(r, kind) for r, kind in zip(regs, kinds)]
    before = [p[1].copy() for p in pairs]
    expected = tcsim.mma_regs(q, *(p[0] for p in pairs))
    got = tcsim.mma_regs(q, *(p[1] for p in pairs))
    assert got.dtype == np.uint32 and got.shape == batch + (32, frags[3].registers)
    assert np.array_equal(got, expected)
    for p, b in zip(pairs, before):
        assert np.array_equal(p[1], b)


@SOME
@given(qualifiers, st.sampled_from("abcd"), batches, seeds, layouts)
def test_pack_and_unpack_do_not_depend_on_layout(q, op, batch, seed, kind):
    frag = tcsim.fragment(q, op)
    rng = np.random.default_rng(seed)
    matrix = random_values(frag.format.dtype, batch + (frag.rows, frag.cols), rng)
    ref, variant = in_layout(matrix, kind)
    kept = bits(variant).copy()
    regs = frag.pack(variant)
    assert regs.shape == batch + (32, frag.registers)
    assert np.array_equal(regs, frag.pack(ref))
    assert np.array_equal(bits(variant), kept)
    ref_regs, variant_regs = in_layout(regs, kind)
    back = frag.unpack(variant_regs)
    assert np.array_equal(bits(back), bits(frag.unpack(ref_regs)))
    assert np.array_equal(bits(back), bits(ref))


WRONG_DTYPES = (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64,
                np.bool_, np.complex64)


@SOME
@given(qualifiers, st.integers(0, 2), st.sampled_from(WRONG_DTYPES), seeds)
def test_a_wrong_dtype_is_a_type_error_naming_the_operand(q, which, dtype, seed):
    ops = operands(q, (2,), np.random.default_rng(seed))
    if ops[which].dtype == np.dtype(dtype):
        return
    ops[which] = ops[which].astype(dtype)
    with pytest.raises(TypeError, match=f"{'ABC'[which]}: expected dtype"):
        tcsim.mma(q, *ops)


@SOME
@given(qualifiers, st.integers(0, 2), st.sampled_from(["rows", "cols", "flat", "swap"]), seeds)
def test_a_wrong_shape_is_a_value_error_naming_the_operand(q, which, how, seed):
    ops = operands(q, (2,), np.random.default_rng(seed))
    x = ops[which]
    rows, cols = x.shape[-2:]
    if how == "swap" and rows == cols:
        how = "rows"
    ops[which] = {"rows": lambda: np.resize(x, (2, rows + 1, cols)),
                  "cols": lambda: x[..., :-1],
                  "flat": lambda: x.reshape(-1),
                  "swap": lambda: np.swapaxes(x, -1, -2)}[how]()
    with pytest.raises(ValueError, match=f"{'ABC'[which]}: expected a matrix of shape"):
        tcsim.mma(q, *ops)


@SOME
@given(qualifiers, st.integers(0, 2), st.sampled_from([-1, 1]), st.booleans())
def test_a_wrong_register_count_or_dtype_is_refused(q, which, delta, wrong_dtype):
    frags = [tcsim.fragment(q, op) for op in "abc"]
    regs = [np.ones((2, 32, f.registers), np.uint32) for f in frags]
    if wrong_dtype:
        regs[which] = regs[which].astype(np.int64)
        with pytest.raises(TypeError, match="registers must be uint32"):
            tcsim.mma_regs(q, *regs)
        return
    n = frags[which].registers + delta
    if n < 1:
        n = frags[which].registers + 1
    regs[which] = np.ones((2, 32, n), np.uint32)
    with pytest.raises(ValueError, match=r"expected registers of shape \(\.\.\., 32, "):
        tcsim.mma_regs(q, *regs)
    regs[which] = np.ones((2, 31, frags[which].registers), np.uint32)
    with pytest.raises(ValueError, match="expected registers of shape"):
        tcsim.mma_regs(q, *regs)


@FEW
@given(qualifiers, st.integers(0, 2))
def test_a_batch_larger_than_memory_is_refused_before_allocating(q, which):
    ops = operands(q, (), np.random.default_rng(1))
    # Each operand alone is small; their broadcast is 10**12 instructions.
    shapes = [(1, 1), (1, 1), (1, 1)]
    shapes[which] = (10**6, 1)
    shapes[(which + 1) % 3] = (1, 10**6)
    views = [np.broadcast_to(x, s + x.shape) for x, s in zip(ops, shapes)]
    with refused_quickly(), pytest.raises(ValueError, match="more than this machine's"):
        tcsim.mma(q, *views)
    frags = [tcsim.fragment(q, op) for op in "abc"]
    regs = [np.broadcast_to(np.ones((32, f.registers), np.uint32), s + (32, f.registers))
            for f, s in zip(frags, shapes)]
    with refused_quickly(), pytest.raises(ValueError, match="more than this machine's"):
        tcsim.mma_regs(q, *regs)
    huge = np.broadcast_to(ops[0], (10**7, 10**6) + ops[0].shape)  # one view, 10**13 matrices
    with refused_quickly(), pytest.raises(ValueError, match="more than this machine's"):
        tcsim.mma(q, huge, *ops[1:])
    frag = tcsim.fragment(q, "a")
    matrix = random_values(frag.format.dtype, (frag.rows, frag.cols), np.random.default_rng(2))
    with refused_quickly(), pytest.raises(ValueError, match="more than this machine's"):
        frag.pack(np.broadcast_to(matrix, (10**7, 10**6) + matrix.shape))


@FEW
@given(qualifiers, st.tuples(st.integers(2, 4), st.integers(2, 4)).filter(lambda s: s[0] != s[1]))
def test_batches_that_do_not_broadcast_name_the_operands(q, sizes):
    ops = operands(q, (), np.random.default_rng(3))
    a = np.broadcast_to(ops[0], (sizes[0],) + ops[0].shape)
    b = np.broadcast_to(ops[1], (sizes[1],) + ops[1].shape)
    with pytest.raises(ValueError, match=rf"batch shapes of A \({sizes[0]},\) and B"):
        tcsim.mma(q, a, b, ops[2])


def _mutations(q: str):
    parts = q.split(".")
    return st.tuples(st.integers(0, len(parts) - 1),
                     st.text(alphabet="abcdefmnkorwlsu0123456789x", min_size=0, max_size=5)
                     ).map(lambda t: ".".join(parts[:t[0]] + [t[1]] + parts[t[0] + 1:]))


@SOME
@given(st.one_of(st.text(max_size=40), qualifiers.flatmap(_mutations), junk))
def test_bad_qualifiers_are_qualifier_errors(text):
    if isinstance(text, str) and text.strip().removeprefix("mma.sync.aligned.") in QUALIFIERS:
        return
    for call in (lambda: tcsim.parse(text), lambda: tcsim.fragment(text, "a"),
                 lambda: tcsim.mma(text, np.zeros((16, 8), np.float16),
                                   np.zeros((8, 8), np.float16), np.zeros((16, 8), np.float32))):
        with pytest.raises(QualifierError):
            call()


@SOME
@given(st.one_of(st.text(max_size=12), junk))
def test_bad_arch_and_operand_names_are_value_errors(name):
    q = "m16n8k8.row.col.f32.f16.f16.f32"
    A, B, C = operands(q, (), np.random.default_rng(4))
    if not (isinstance(name, str) and name in tcsim.PROFILES):
        with pytest.raises(ValueError, match="unsupported architecture"):
            tcsim.mma(q, A, B, C, arch=name)
        with pytest.raises(ValueError, match="unsupported architecture"):
            tcsim.profile(name)
    if not (isinstance(name, str) and name.lower() in ("a", "b", "c", "d")):
        with pytest.raises(ValueError, match="operand must be"):
            tcsim.fragment(q, name)


# ---- Warp ---------------------------------------------------------------------------------

register_lists = st.lists(st.one_of(st.integers(-3, 70), st.floats(-3, 70), st.booleans(),
                                    st.text(max_size=2), st.none()), max_size=5)


@SOME
@given(register_lists, st.sampled_from(["read", "write", "load_fragment"]))
def test_warp_register_numbers_are_integers_in_range(regs, method):
    w = tcsim.Warp((2,), registers=64)
    ok = all(isinstance(r, int) and not isinstance(r, bool) and 0 <= r < 64 for r in regs)
    q = "m16n8k8.row.col.f32.f16.f16.f32"
    call = {"read": lambda: w.read(regs),
            "write": lambda: w.write(regs, np.ones((2, 32, len(regs)), np.uint32)),
            "load_fragment": lambda: w.load_fragment(q, "b", np.ones((2, 8, 8), np.float16),
                                                     regs)}[method]
    if ok and (method != "load_fragment" or len(regs) == 1):
        call()
        return
    kinds = (TypeError,) if not all(
        isinstance(r, int) and not isinstance(r, bool) for r in regs) else (IndexError, ValueError)
    with pytest.raises(kinds):
        call()


@SOME
@given(batches, seeds, st.sampled_from(LAYOUTS))
def test_warp_mma_is_mma_regs_on_its_registers(batch, seed, kind):
    q = "m16n8k16.row.col.f32.bf16.bf16.f32"
    rng = np.random.default_rng(seed)
    w = tcsim.Warp(batch, registers=16)
    values = rng.integers(1, 1 << 32, batch + (32, 16), dtype=np.uint64).astype(np.uint32)
    ref, variant = in_layout(values, kind)
    kept = variant.copy()
    w.write(list(range(16)), variant)
    assert np.array_equal(variant, kept)
    regs = w.regs.copy()
    w.mma(q, d=[12, 13, 14, 15], a=[0, 1, 2, 3], b=[4, 5], c=[8, 9, 10, 11])
    expected = tcsim.mma_regs(q, regs[..., 0:4], regs[..., 4:6], regs[..., 8:12])
    assert np.array_equal(w.regs[..., 12:16], expected)
    assert np.array_equal(w.regs[..., :12], regs[..., :12])  # nothing else changed
    assert w.regs.shape == batch + (32, 16)


@FEW
@given(st.one_of(st.integers(-3, 0), st.integers(256, 10**6), st.floats(1, 64), junk).filter(
    lambda r: not (type(r) is int and 1 <= r <= 255)))
def test_warp_register_counts(registers):
    with pytest.raises((TypeError, ValueError)):
        tcsim.Warp((1,), registers=registers)


@FEW
@given(st.one_of(st.integers(-3, -1), st.floats(0, 4), st.text(min_size=1, max_size=3),
                 st.lists(st.one_of(st.floats(0, 3), st.integers(-3, -1)), min_size=1,
                          max_size=2)))
def test_warp_batch_shapes(batch):
    with pytest.raises((TypeError, ValueError)):
        tcsim.Warp(batch)


def test_warp_larger_than_memory_is_refused_before_allocating():
    with refused_quickly(), pytest.raises(ValueError, match="more than this machine's"):
        tcsim.Warp((10**12,))
    with pytest.raises(ValueError, match="at most 255"):
        tcsim.Warp(1, registers=10**10)
    assert tcsim.Warp((0, 3)).regs.shape == (0, 3, 32, 64)  # an empty batch is fine


# ---- wgmma (the warpgroup instruction) ----------------------------------------------------

WGMMA = [q for q in tcsim.supported_wgmma_qualifiers() if int(q.split("n")[1].split("k")[0]) <= 32]


@FEW
@given(st.sampled_from(WGMMA), st.lists(st.integers(0, 2), max_size=1).map(tuple), seeds,
       st.tuples(layouts, layouts, layouts))
def test_wgmma_bits_do_not_depend_on_layout_and_inputs_are_kept(q, batch, seed, kinds):
    spec = tcsim.parse_wgmma(q)
    rng = np.random.default_rng(seed)
    mats = [random_values(spec.format(op).dtype, batch + spec.matrix_shape(op), rng)
            for op in "abc"]
    pairs = [in_layout(x, kind) for x, kind in zip(mats, kinds)]
    before = [bits(p[1]).copy() for p in pairs]
    expected = tcsim.wgmma(q, *(p[0] for p in pairs))
    got = tcsim.wgmma(q, *(p[1] for p in pairs))
    assert got.shape == batch + (spec.m, spec.n)
    assert np.array_equal(bits(got), bits(expected))
    for p, b in zip(pairs, before):
        assert np.array_equal(bits(p[1]), b)


@FEW
@given(st.one_of(st.text(max_size=30), st.sampled_from(WGMMA).flatmap(_mutations), junk))
def test_bad_wgmma_qualifiers_are_value_errors(text):
    if isinstance(text, str) and text.strip() in tcsim.supported_wgmma_qualifiers():
        return
    with pytest.raises(ValueError):
        tcsim.parse_wgmma(text)
