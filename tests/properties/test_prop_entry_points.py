"""Properties of the entry points added after the first property tests (issue 37): wgmma,
WMMA, fp8 and integer mma.sync, fragments' locate, wgmma descriptors' tiles, layouts' spans,
the speed model, the precision study, the Hopper kernels (kernel7 .. kernel10) and the
command line's every subcommand.

- Results are checked against an independent reference: small integers, whose products and
  sums every type holds exactly, so that D must be the float64 (or int64) result.
- Any batch shapes that broadcast work, empty ones included, and C may be left out (zeros).
- Bad input of any kind gets a TypeError or ValueError that names it (docs/errors.md), never
  another exception, a silent acceptance or wrong bits.
- Every subcommand of `tcsim` runs with its default options and exits 0 (verify: 2 without a
  GPU), on every instruction and kernel it takes.
"""

import argparse

import numpy as np
import pytest
from cli_run import run_cli
from hypothesis import assume, given
from hypothesis import strategies as st
from prop_inputs import FEW, LAYOUTS, SOME, bits, in_layout

import tcsim
from tcsim.isa.qualifier import QualifierError
from tcsim.kernels import HOPPER_KERNELS, KERNELS, SEED_KERNELS, ProblemSizeError
from tcsim.memory import (
    ColumnMajor,
    DescriptorError,
    RowMajor,
    TensorOpMultiplicand,
    canonical_tile,
)
from tcsim.perf import gpu, gpu_names, occupancy

MMA = tcsim.supported_qualifiers()
WGMMA = [q for q in tcsim.supported_wgmma_qualifiers()
         if int(q.split("n")[1].split("k")[0]) in (8, 16, 24, 64)]
WMMA = tcsim.supported_wmma_qualifiers()
ALL_KERNELS = {**KERNELS, **HOPPER_KERNELS, **SEED_KERNELS}
seeds = st.integers(0, 2**32 - 1)
junk = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True), st.booleans(),
                 st.text(max_size=4), st.binary(max_size=3), st.lists(st.integers(0, 3),
                                                                     max_size=2),
                 st.just(np.array([1, 2])), st.just(object()), st.complex_numbers())


def spec_of(q: str):
    if q.startswith("wmma"):
        return tcsim.parse_wmma(q)
    return tcsim.parse_wgmma(q) if tcsim.is_wgmma_qualifier(q) else tcsim.parse(q)


def small_integers(spec, op: str, batch: tuple, rng) -> np.ndarray:
    """Operand ``op`` of small integers (never all zeros): exact in every type, and so are
    their products and sums (K <= 32: |A @ B| <= 288)."""
    x = rng.integers(-3, 4, batch + spec.matrix_shape(op))
    if x.size and not x.any():
        x.reshape(-1)[0] = 1
    return x.astype(spec.format(op).dtype)


def big_endian(x: np.ndarray) -> np.ndarray:
    """``x`` stored big-endian (numpy's own types; ml_dtypes' have one byte order)."""
    return x.astype(x.dtype.newbyteorder(">")) if x.dtype.kind in "fiu" else x


# Three batch shapes that broadcast together, empty axes included.
batch_triples = st.sampled_from([((), (), ()), ((2,), (2,), (2,)), ((1,), (3,), (1,)),
                                 ((3,), (1,), (1,)), ((1,), (1,), (3,)), ((2, 1), (1, 3), ()),
                                 ((0,), (), ()), ((1, 0), (1,), (3, 1)), ((0, 2), (2,), (1,))])


# ---- every instruction against exact arithmetic ----------------------------------------------


@SOME
@given(st.sampled_from(MMA + WGMMA + WMMA), batch_triples, seeds, st.booleans(),
       st.sampled_from(LAYOUTS + ("big-endian",)))
def test_every_instruction_is_exact_on_small_integers_over_any_batch(q, batches, seed,
                                                                     with_c, layout):
    spec = spec_of(q)
    rng = np.random.default_rng(seed)
    A, B, C = (small_integers(spec, op, b, rng) for op, b in zip("abc", batches))
    if spec.integer:  # s32 accumulators: C anywhere short of wrapping
        C = rng.integers(-2**30, 2**30, C.shape).astype(np.int32)
    given_ = [big_endian(x) if layout == "big-endian" else in_layout(x, layout)[1]
              for x in (A, B, C)]
    reference = [in_layout(x, layout)[0] if layout != "big-endian" else x
                 for x in (A, B, C)]
    kept = [bits(x).copy() for x in given_]
    run = tcsim.wmma if q.startswith("wmma") else tcsim.mma
    D = run(q, *given_[:2], *(given_[2:] if with_c else []))
    A, B, C = reference
    exact = A.astype(np.float64) @ B.astype(np.float64)  # without C: over A's and B's batch
    exact = exact + C.astype(np.float64) if with_c else exact
    assert D.shape == exact.shape and D.dtype == spec.format("d").dtype
    assert np.array_equal(D.astype(np.float64), exact)
    for x, b in zip(given_, kept):  # inputs are never modified
        assert np.array_equal(bits(x), b)


@SOME
@given(st.sampled_from([q for q in MMA if ".s32." in q]), batch_triples, seeds)
def test_integer_mma_regs_wraps_or_saturates_as_s32_over_any_batch(q, batches, seed):
    spec = tcsim.parse(q)
    rng = np.random.default_rng(seed)
    A, B = (rng.integers(np.iinfo(spec.format(op).dtype).min,
                         np.iinfo(spec.format(op).dtype).max + 1,
                         b + spec.matrix_shape(op)).astype(spec.format(op).dtype)
            for op, b in zip("ab", batches))
    C = rng.integers(-2**31, 2**31, batches[2] + (16, 8)).astype(np.int32)
    frags = [tcsim.fragment(q, op) for op in "abcd"]
    d = tcsim.mma_regs(q, *(f.pack(x) for f, x in zip(frags, (A, B, C))))
    total = A.astype(np.int64) @ B.astype(np.int64) + C
    want = np.clip(total, -2**31, 2**31 - 1) if spec.saturate else \
        (total + 2**31) % 2**32 - 2**31
    assert np.array_equal(frags[3].unpack(d).astype(np.int64), want)


# ---- qualifier spellings ---------------------------------------------------------------------


@st.composite
def respelled(draw):
    """A supported qualifier with its shape spelled otherwise: a sign, a space, an underscore,
    a leading zero or a non-ASCII digit inserted somewhere in it."""
    q = draw(st.sampled_from(MMA + WGMMA))
    shape, rest = q.split(".", 1)
    at = draw(st.integers(0, len(shape)))
    char = draw(st.sampled_from([" ", "+", "-", "_", "0", "\t", "\u0661", "00"]))
    return shape[:at] + char + shape[at:] + "." + rest


@SOME
@given(respelled())
def test_a_shape_spelled_otherwise_is_refused(text):
    assume(text.strip() not in MMA + tcsim.supported_wgmma_qualifiers())
    parse = tcsim.parse_wgmma if tcsim.is_wgmma_qualifier(text) else tcsim.parse
    with pytest.raises(QualifierError):
        parse(text)
    with pytest.raises(QualifierError):
        tcsim.fragment(text, "a")


# ---- fragments' locate ------------------------------------------------------------------------

fragments = st.one_of(
    st.tuples(st.sampled_from(MMA), st.sampled_from("abcd")).map(lambda t: tcsim.fragment(*t)),
    st.tuples(st.sampled_from(WGMMA), st.sampled_from("acd")).map(
        lambda t: tcsim.wgmma_fragment(*t)),
    st.tuples(st.sampled_from(WMMA), st.sampled_from("abcd")).map(
        lambda t: tcsim.wmma_fragment(*t)))
coordinates = st.one_of(st.integers(-300, 300), st.integers(-300, 300).map(np.int16), junk)


@SOME
@given(fragments, coordinates, coordinates)
def test_locate_answers_inside_the_matrix_and_refuses_the_rest(frag, row, col):
    inside = all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 <= x < n
                 for x, n in ((row, frag.rows), (col, frag.cols)))
    if not inside:
        with pytest.raises((TypeError, ValueError), match="locate"):
            frag.locate(row, col)
        return
    lane, register, part = frag.locate(row, col)
    assert 0 <= lane < frag.coords.shape[0] and 0 <= part < frag.per_register
    assert tuple(frag.coords[lane, register * frag.per_register + part]) == (row, col)


# ---- descriptors' tiles and layouts ----------------------------------------------------------

tiles = st.tuples(st.integers(1, 8).map(lambda r: 8 * r), st.integers(1, 3),
                  st.sampled_from([1, 2, 4]), st.sampled_from(["K", "MN"]),
                  st.sampled_from(["none", "32B", "64B", "128B"]))


@FEW
@given(tiles, seeds, st.sampled_from(["<", ">"]))
def test_a_tile_unpacks_what_it_packs_in_either_byte_order(shape, seed, order):
    rows, steps, element, major, swizzle = shape
    try:
        tile = canonical_tile(rows, steps * 32 // element, element, major, swizzle)
    except DescriptorError:  # a combination wgmma has no canonical tile for
        return
    rng = np.random.default_rng(seed)
    dtype = np.dtype(f"{order}u{element}") if element > 1 else np.dtype(np.uint8)
    matrix = rng.integers(0, 2**(8 * element), (2, tile.rows, tile.k),
                          dtype=np.uint64).astype(dtype)
    data = tile.pack(matrix)
    assert data.dtype == np.uint8 and data.shape == (2, tile.nbytes)
    assert np.array_equal(tile.unpack(data, dtype), matrix)
    # Each element's bytes sit, little-endian, at its offset: read them back by hand.
    offsets = tile.offsets.ravel()
    by_hand = sum(data[1, offsets + i].astype(np.uint64) << np.uint64(8 * i)
                  for i in range(element))
    assert np.array_equal(by_hand, matrix[1].ravel().astype(np.uint64))


@SOME
@given(st.one_of(junk, st.lists(st.integers(-300, 300), min_size=0, max_size=5),
                 st.just(np.zeros(3, np.uint8)), st.just(np.full(4096, 256))),
       st.one_of(st.sampled_from([np.float16, "f2", ">f2", np.float32, "bogus", None]), junk))
def test_unpack_refuses_what_is_not_the_tiles_bytes(data, dtype):
    tile = canonical_tile(64, 16, 2, "K", "32B")
    with pytest.raises((TypeError, ValueError)):
        tile.unpack(data, dtype)


@SOME
@given(st.sampled_from(["RowMajor", "ColumnMajor", "TensorOp"]), st.integers(0, 70),
       st.integers(0, 70))
def test_layouts_give_int64_offsets_or_refuse_the_span(kind, row_bits, col_bits):
    rows, cols = 1 << row_bits, 1 << col_bits
    try:
        layout = {"RowMajor": lambda: RowMajor(rows, cols, pad=8),
                  "ColumnMajor": lambda: ColumnMajor(rows, cols),
                  "TensorOp": lambda: TensorOpMultiplicand(16, 64, shape=(max(rows, 8),
                                                                           max(cols, 64)))}[kind]()
    except ValueError as error:
        assert "2**63" in str(error)
        assert rows * cols > 2**60
        return
    far = (layout.shape[0] - 1, layout.shape[1] - 1)
    offset = layout.offset(*far)
    assert 0 <= offset < layout.capacity < 2**63 + 1
    assert int(layout.offset(np.array([far[0]]), np.array([far[1]]))[0]) == offset


# ---- the speed model ----------------------------------------------------------------------------


@SOME
@given(st.one_of(st.integers(-3, 300), junk), st.sampled_from(sorted(KERNELS)))
def test_explain_takes_register_counts_a_thread_can_have(registers, name):
    trace = tcsim.trace(name, 256, 256, 256)
    if isinstance(registers, int) and not isinstance(registers, bool) and \
            1 <= registers <= 255:
        try:
            explained = trace.explain(registers=registers)
        except ValueError as error:  # so many registers that no block fits on an SM
            assert "does not fit on an SM" in str(error)
            return
        assert explained.occupancy.registers_per_thread == registers
        assert explained.seconds > 0
        return
    if registers is None:
        return  # the default: ptxas's count or the declared budget
    with pytest.raises((TypeError, ValueError), match="registers"):
        trace.explain(registers=registers)


@SOME
@given(st.one_of(st.text(max_size=10), st.sampled_from([n.lower() for n in gpu_names()]),
                 junk))
def test_gpu_names_are_exact_or_refused_naming_the_known_ones(name):
    if isinstance(name, str) and name in gpu_names():
        assert gpu(name).key == name
        return
    with pytest.raises((TypeError, ValueError), match="GPU"):
        gpu(name)


@SOME
@given(st.one_of(st.integers(-2, 70), junk), st.one_of(st.integers(-2, 300), junk),
       st.one_of(st.integers(-2, 300_000), junk))
def test_occupancy_checks_its_counts(warps, registers, shared):
    try:
        occ = occupancy(gpu("H100-SXM"), warps, registers, "the caller", shared)
    except (TypeError, ValueError) as error:
        assert str(error)
        return
    assert occ.blocks_per_sm >= 1 and occ.warps_per_sm <= 64


@FEW
@given(st.sampled_from(sorted(ALL_KERNELS)), st.sampled_from(sorted(ALL_KERNELS)))
def test_any_two_kernels_compare(first, second):
    M, N, K = (int(np.lcm(int(x), int(y)))
               for x, y in zip(smallest(first), smallest(second)))
    a, b = tcsim.trace(first, M, N, K), tcsim.trace(second, M, N, K)
    text = a.compare(b)
    assert text.startswith(f"{first} vs {second} on M, N, K = ({M}, {N}, {K})")


# ---- the Hopper kernels ----------------------------------------------------------------------

hopper = st.sampled_from(sorted(HOPPER_KERNELS))
size = st.one_of(st.integers(-2, 1024), st.sampled_from([128, 256, 512, 2**31, 2**40]), junk)


@SOME
@given(hopper, size, size, size)
def test_hopper_trace_sizes_are_problem_size_errors_or_fine(name, M, N, K):
    try:
        t = tcsim.trace(name, M, N, K)
    except ProblemSizeError as error:
        assert str(error)
        return
    except TypeError as error:  # not an integer at all
        assert "must be" in str(error)
        return
    assert t.problem == (M, N, K)


@FEW
@given(hopper, seeds, st.tuples(*[st.sampled_from(LAYOUTS[:-1])] * 2), st.booleans())
def test_hopper_kernels_are_exact_on_small_integers_in_any_layout(name, seed, kinds, with_c):
    rng = np.random.default_rng(seed)
    p = HOPPER_KERNELS[name].params()
    M, N, K = p.block_m, p.block_n, p.block_k * p.stages
    A = rng.integers(-2, 3, (M, K)).astype(np.float16)
    B = rng.integers(-2, 3, (K, N)).astype(np.float16)
    C = rng.integers(-8, 9, (M, N)).astype(np.float16)
    (refA, givenA), (refB, givenB) = in_layout(A, kinds[0]), in_layout(B, kinds[1])
    D = tcsim.run(name, givenA, givenB, C if with_c else None, beta=1.0 if with_c else 0.0)
    want = refA.astype(np.float64) @ refB.astype(np.float64) + (C if with_c else 0)
    assert np.array_equal(D.astype(np.float64), want)


# ---- precision ----------------------------------------------------------------------------------


@SOME
@given(st.one_of(st.lists(st.one_of(st.integers(-20, 70), junk), max_size=3), junk),
       st.one_of(st.integers(-1, 3), junk), st.one_of(st.integers(-1, 3), junk))
def test_precision_study_refuses_what_it_cannot_study(ks, dots, seed):
    try:
        table = tcsim.precision_study(ks=ks, dots=dots, seed=seed, backend="sim")
    except (TypeError, ValueError) as error:
        assert str(error)
        return
    assert {r.k for r in table.rows} == set(table.params["ks"])
    assert all(k % 16 == 0 and k > 0 for k in table.params["ks"])


# ---- the command line: every subcommand with its default options -------------------------------


def smallest(name: str) -> list[str]:
    p = ALL_KERNELS[name].params()
    return [str(p.block_m), str(p.block_n), str(p.block_k * max(p.stages, 1))]


def test_every_mma_and_wgmma_qualifier_runs_with_the_defaults():
    failed = {}
    for q in MMA + WGMMA:
        code, out, err = run_cli(["mma", q])
        if code or err or "D[0,0] = " not in out:
            failed[q] = err
    assert not failed


def test_every_layout_prints_with_the_defaults():
    failed = {}
    for q, operands in [(q, "abcd") for q in MMA] + [(q, "acd") for q in WGMMA[:6]]:
        for op in operands:
            code, out, err = run_cli(["layout", q, op])
            rows, cols = tcsim.fragment(q, op).rows, tcsim.fragment(q, op).cols
            if code or err or len(out.splitlines()) != rows + 2 or f"{rows}x{cols}" not in out:
                failed[q, op] = err
    assert not failed


@pytest.mark.parametrize("name", sorted(ALL_KERNELS))
def test_trace_compare_and_explain_run_every_kernel_with_the_defaults(name):
    mnk = smallest(name)
    for argv in (["trace", name, *mnk], ["trace", name, *mnk, "--json"],
                 ["compare", name, name, *mnk], ["explain", name, *mnk]):
        code, out, err = run_cli(argv)
        assert (code, err) == (0, ""), (argv, err)
        assert name in out


@pytest.mark.parametrize("argv", [["demo"], ["precision"], ["--version"]])
def test_the_other_subcommands_run_with_the_defaults(argv):
    code, out, err = run_cli(argv)
    assert (code, err) == (0, ""), err
    assert out.strip()


def test_docs_writes_the_fragment_pages_with_the_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default directory is ./docs
    code, out, err = run_cli(["docs"])
    assert (code, err) == (0, "") and (tmp_path / "docs" / "fragments.md").is_file()


def test_verify_runs_with_the_defaults_or_says_why_not():
    from tcsim import hw

    if hw.unavailable_reason() is None:
        pytest.skip("a GPU is here: tcsim verify is the hw tests' business")
    code, out, err = run_cli(["verify"])
    assert code == 2 and "no GPU check possible here" in out and err == ""


@pytest.mark.parametrize("op", ["matmul", "addmm", "linear", "scaled_mm", "int_mm"])
def test_blas_runs_every_op_with_the_defaults(op):
    code, out, err = run_cli(["blas", op, "64", "32", "128"])
    assert (code, err) == (0, ""), err
    assert "kernel" in out and ("error against float64" in out or "exact int32" in out)


def subcommands() -> list[str]:
    from tcsim.cli import build_parser

    parser = build_parser()
    return sorted(next(a for a in parser._actions
                       if isinstance(a, argparse._SubParsersAction)).choices)


# The subcommands the tests above run with their defaults: a new one must join them.
RUN_WITH_DEFAULTS = {"demo", "layout", "mma", "trace", "compare", "explain", "docs",
                     "precision", "verify", "blas"}


def test_every_subcommand_is_run_with_its_defaults_above():
    assert set(subcommands()) == RUN_WITH_DEFAULTS


@pytest.mark.parametrize("command", subcommands())
def test_every_subcommand_answers_help(command):
    code, out, err = run_cli([command, "--help"])
    assert code == 0 and out.startswith("usage: tcsim " + command) and err == ""


# (No --json or --plot: they write files.)
explain_options = st.lists(st.one_of(st.sampled_from(["--gpu", "--registers", "--beta", "--k",
                                                      "--dots", "--seed"]),
                                     st.text(alphabet="-.0123456789aHTx", max_size=6)),
                           max_size=4)


@SOME
@given(st.sampled_from(["explain", "precision", "compare"]), explain_options)
def test_explain_precision_and_compare_options_succeed_or_are_one_line(command, options):
    argv = [command] + ({"explain": ["kernel1", "256", "128", "64"],
                         "compare": ["kernel7", "kernel1", "256", "256", "256"],
                         "precision": ["--k", "16", "--dots", "2"]}[command]) + options
    code, out, err = run_cli(argv)
    if code == 0 and not err:
        return
    assert code == 2, (argv, code, err)
    assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
