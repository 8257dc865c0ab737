"""Regressions of issue 37: each input that once broke an entry point (a numpy or Python
exception, a silent acceptance, wrong bits) now gets the right answer or a typed error that
names the problem (docs/errors.md); and the first hour of a new user (mma's zero C, the kernel
list, a closed pipe, progress, the docs' printed examples)."""

import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from cli_run import run_cli

import tcsim
from tcsim.isa.qualifier import QualifierError
from tcsim.memory import (
    ColumnMajor,
    DescriptorError,
    RowMajor,
    SharedMemory,
    SharedMemoryError,
    Swizzle,
    Swizzled,
    access,
    canonical_tile,
)
from tcsim.perf import gpu, occupancy
from tcsim.trace import count_wmma

ROOT = Path(__file__).resolve().parent.parent


# ---- 1. tcsim mma with default options ---------------------------------------------------


@pytest.mark.parametrize("q", [q for q in tcsim.supported_qualifiers()
                               if q.startswith("m8n8k4") or ".s32." in q])
def test_1_cli_mma_runs_quad_pair_and_integer_qualifiers_with_defaults(q):
    code, out, err = run_cli(["mma", q])
    assert (code, err) == (0, ""), err
    # The printed D is the exact sum of the printed products and C, rounded as D's type says.
    products = [float(a) * float(b) for a, b in re.findall(r"= (\S+) \* (\S+)\n", out)]
    c = float(re.search(r"C\[0,0\] = (\S+)", out).group(1))
    d = float(re.search(r"D\[0,0\] = (\S+)", out).group(1))
    assert len(products) == tcsim.parse(q).k
    if ".s32." in q:  # exact integers, wrapped or clamped to s32
        total = int(sum(products)) + int(c)
        want = max(-2**31, min(2**31 - 1, total)) if "satfinite" in q else \
            (total + 2**31) % 2**32 - 2**31
        assert d == want
    else:
        assert np.isfinite(d) and abs(d - (sum(products) + c)) <= 1e-2 * (abs(c) + 1)


@pytest.mark.parametrize("dist", ["uniform_bits", "extremes", "s32_edge"])
def test_1_cli_mma_takes_every_distribution_it_suggests_for_integers(dist):
    code, out, err = run_cli(["mma", "m16n8k32.row.col.satfinite.s32.s8.u8.s32",
                              "--distribution", dist])
    assert (code, err) == (0, ""), err
    assert f"{dist} inputs" in out


def test_1_cli_mma_refuses_a_float_distribution_for_integers_naming_the_choices():
    code, out, err = run_cli(["mma", "m16n8k16.row.col.s32.s8.s8.s32", "--distribution",
                              "cancel"])
    assert code == 2 and "uniform_bits, extremes, s32_edge" in err and err.count("\n") == 1


# ---- 2. Trace.compare -------------------------------------------------------------------


def test_2_compare_of_hopper_kernels_prints_their_wgmma_sites():
    a = tcsim.trace(tcsim.kernel7, 256, 512, 256)
    b = tcsim.trace(tcsim.kernel8, 256, 512, 256)
    text = a.compare(b)
    wgmma = [line for line in text.splitlines() if line.startswith("wgmma ")]
    assert len(wgmma) == 1
    # 256x512 over 128x256 tiles, K = 256 in k16 steps: 4 tiles x 2 consumer warpgroups x 16
    # wgmma, counted per warp (4 a warpgroup) as Nsight Compute counts instructions.
    assert a.sites["wgmma"].executions == 4 * 2 * 16 * 4
    assert wgmma[0].split()[1] == f"{a.sites['wgmma'].wavefronts:,}"
    code, out, err = run_cli(["compare", "kernel7", "kernel8", "256", "512", "256"])
    assert (code, err) == (0, "") and out.startswith("kernel7 vs kernel8")


@pytest.mark.parametrize("other", [None, "kernel2", 42, {}])
def test_2_compare_refuses_what_is_not_a_trace(other):
    with pytest.raises(TypeError, match="compare takes another Trace"):
        tcsim.trace(tcsim.kernel1, 256, 128, 64).compare(other)


# ---- 3. explain, occupancy, GPU names ---------------------------------------------------------


@pytest.mark.parametrize("registers, error", [(0, ValueError), (-1, ValueError),
                                              (256, ValueError), (1.5, TypeError),
                                              ("32", TypeError), (True, TypeError)])
def test_3_explain_registers_are_integers_from_1_to_255(registers, error):
    t = tcsim.trace(tcsim.kernel1, 256, 128, 64)
    with pytest.raises(error, match="registers"):
        t.explain(registers=registers)


def test_3_explain_takes_255_registers_and_numpy_integers():
    t = tcsim.trace(tcsim.kernel1, 256, 128, 64)
    assert t.explain(registers=255).occupancy.registers_per_thread == 255
    assert t.explain(registers=np.int32(64)).occupancy.registers_per_thread == 64


@pytest.mark.parametrize("warps, error", [(0, ValueError), (-2, ValueError), (2.0, TypeError)])
def test_3_occupancy_warps_are_positive_integers(warps, error):
    with pytest.raises(error, match="warps"):
        occupancy(gpu("H100-SXM"), warps, 32, "the caller", 0)


@pytest.mark.parametrize("bad", [None, "kernel1", {"kernel": "kernel1"}])
def test_3_perf_explain_refuses_what_is_not_a_trace(bad):
    with pytest.raises(TypeError, match="explain takes a Trace"):
        tcsim.perf.explain(bad)


def test_3_an_unknown_or_wrongly_cased_gpu_is_a_value_error_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"did you mean 'H100-SXM'\?.*known: H100-SXM"):
        gpu("h100-sxm")
    with pytest.raises(ValueError, match="unknown GPU 'V100'; known: H100-SXM"):
        tcsim.trace(tcsim.kernel1, 256, 128, 64).explain("V100")
    with pytest.raises(TypeError, match="GPU name"):
        gpu(7)


def test_3_a_tensor_rate_is_asked_of_a_qualifier():
    h100 = gpu("H100-SXM")
    assert h100.tensor_rate("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == \
        h100.tensor["m16n8k16.f32.f16"].value
    for bad in (None, 3, "m16n8k16"):
        with pytest.raises(QualifierError):
            h100.tensor_rate(bad)
    with pytest.raises(ValueError, match="no tensor rate for 'm16n8k32.s32.s8'"):
        h100.tensor_rate("m16n8k32.row.col.satfinite.s32.s8.s8.s32")  # not .satfinite.s32


# ---- 4. DescriptorTile.unpack ------------------------------------------------------------------


def test_4_unpack_checks_its_bytes_and_dtype():
    tile = canonical_tile(64, 32, 2)
    matrix = np.random.default_rng(4).standard_normal((64, 32)).astype(np.float16)
    data = tile.pack(matrix)
    span = rf"\(\.\.\., >= {tile.nbytes}\).*got shape \(10,\)"
    with pytest.raises(DescriptorError, match=span):
        tile.unpack(np.zeros(10, np.uint8), np.float16)
    with pytest.raises(TypeError, match="is a float"):
        tile.unpack(data.astype(np.float32), np.float16)
    with pytest.raises(DescriptorError, match="300 is at or beyond 256"):
        tile.unpack(np.full(tile.nbytes, 300), np.float16)
    with pytest.raises(TypeError, match="'bogus' is not a numpy dtype"):
        tile.unpack(data, "bogus")
    with pytest.raises(DescriptorError, match="float32 is not 2 bytes"):
        tile.unpack(data, np.float32)
    # Integers 0..255 of any integer type, and a big-endian dtype, read the same numbers.
    for given, dtype in ((data, np.float16), (data.astype(np.int64), np.float16),
                         (data.tolist(), np.float16), (data, ">f2")):
        got = tile.unpack(given, dtype)
        assert got.dtype == np.dtype(dtype) and np.array_equal(got.astype(np.float16), matrix)


def test_4_a_tile_larger_than_a_descriptor_addresses_is_refused_before_it_is_built():
    from properties.prop_inputs import refused_quickly

    with refused_quickly(), pytest.raises(DescriptorError, match="more than the 262144"):
        canonical_tile(64, 2**70, 2)
    with pytest.raises(DescriptorError, match="more than the 262144"):
        canonical_tile(256, 1024, 2)  # 512 KiB


def test_4_pack_of_big_endian_values_holds_the_same_numbers():
    tile = canonical_tile(64, 32, 2)
    matrix = np.random.default_rng(5).standard_normal((64, 32)).astype(np.float16)
    assert np.array_equal(tile.pack(matrix.astype(">f2")), tile.pack(matrix))


# ---- 5. qualifier shapes ---------------------------------------------------------------------


@pytest.mark.parametrize("q", ["m16n8k8 .row.col.f32.f16.f16.f32",
                               "m 16n8k8.row.col.f32.f16.f16.f32",
                               "m+16n8k8.row.col.f32.f16.f16.f32",
                               "m1_6n8k8.row.col.f32.f16.f16.f32",
                               "m016n8k08.row.col.f32.f16.f16.f32",
                               "m\u0661\u0666n8k8.row.col.f32.f16.f16.f32"])
def test_5_parse_refuses_odd_shape_spellings(q):
    with pytest.raises(QualifierError, match="is not a shape like m16n8k8"):
        tcsim.parse(q)


@pytest.mark.parametrize("q", ["m064n8k16.f32.f16.f16", "m64n08k16.f32.f16.f16",
                               "m64n8k16 .f32.f16.f16", "m64n+8k16.f32.f16.f16"])
def test_5_parse_wgmma_refuses_odd_shape_spellings(q):
    with pytest.raises(QualifierError, match="is not a shape like m64n128k16"):
        tcsim.parse_wgmma(q)


def test_5_surrounding_whitespace_and_the_prefix_still_parse():
    assert tcsim.parse(" mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 ").qualifier == \
        "m16n8k8.row.col.f32.f16.f16.f32"


# ---- 6. locate ----------------------------------------------------------------------------------


@pytest.mark.parametrize("frag", [tcsim.fragment("m16n8k8.row.col.f32.f16.f16.f32", "a"),
                                  tcsim.wgmma_fragment("m64n8k16.f32.f16.f16", "d")])
def test_6_locate_refuses_rows_and_columns_outside_the_matrix(frag):
    for row, col in ((frag.rows, 0), (0, frag.cols), (-1, 0), (0, -1)):
        with pytest.raises(ValueError, match=r"locate: (row|col) must be"):
            frag.locate(row, col)
    for row, col in ((1.0, 0), ("1", 0), (0, None)):
        with pytest.raises(TypeError, match="must be an integer"):
            frag.locate(row, col)
    lane, reg, part = frag.locate(frag.rows - 1, frag.cols - 1)  # the last element is held
    assert tuple(frag.coords[lane, reg * frag.per_register + part]) == (frag.rows - 1,
                                                                          frag.cols - 1)


# ---- 7. integer mma_regs with batches that broadcast ------------------------------------------


def test_7_integer_mma_regs_broadcasts_c_over_the_products_even_when_empty():
    q = "m16n8k32.row.col.s32.s8.s8.s32"
    fa, fb, fc = (tcsim.fragment(q, op) for op in "abc")
    rng = np.random.default_rng(7)
    A = rng.integers(-128, 128, (1, 16, 32)).astype(np.int8)
    B = rng.integers(-128, 128, (1, 32, 8)).astype(np.int8)
    C = rng.integers(-2**31, 2**31, (3, 16, 8)).astype(np.int32)
    d = tcsim.mma_regs(q, fa.pack(A), fb.pack(B), fc.pack(C))
    want = (A.astype(np.int64) @ B.astype(np.int64) + C).astype(np.int32)  # wraps as s32
    assert np.array_equal(tcsim.fragment(q, "d").unpack(d), want)
    empty = tcsim.mma_regs(q, fa.pack(A)[None, :0], fb.pack(B), fc.pack(C)[:, None])
    assert empty.shape == (3, 0, 32, 4)


# ---- 8. layouts ----------------------------------------------------------------------------------


def test_8_layouts_refuse_spans_beyond_int64():
    with pytest.raises(ValueError, match=r"may span at most 2\*\*63"):
        RowMajor(1 << 62, 1 << 62)
    with pytest.raises(ValueError, match=r"may span at most 2\*\*63"):
        ColumnMajor(3, 2, pad=1 << 62)
    big = RowMajor(1 << 40, 1 << 20)  # 2**60 elements: fine, but not as 1024-byte elements
    assert big.offset(3, 5) == 3 * 2**20 + 5
    with pytest.raises(ValueError, match=r"may span at most 2\*\*63"):
        big.byte_address(3, 5, 1024)


def test_8_offsets_of_shapes_that_do_not_broadcast_are_named():
    with pytest.raises(ValueError, match=r"row of shape \(2,\) and col of shape \(3,\)"):
        RowMajor(4, 4).offset([0, 1], [0, 1, 2])


def test_8_swizzled_checks_its_arguments():
    with pytest.raises(TypeError, match="Swizzled takes a Layout"):
        Swizzled("RowMajor", Swizzle(3, 3, 3))
    with pytest.raises(TypeError, match="Swizzled takes a Swizzle"):
        Swizzled(RowMajor(8, 64), (3, 3, 3))


# ---- 9. ldmatrix / stmatrix row lanes ----------------------------------------------------------


@pytest.mark.parametrize("spelling, lane", [("ldmatrix.sync.aligned.m8n8.x4.shared.b16", 31),
                                            ("ldmatrix.sync.aligned.m8n8.x2.shared.b16", 3),
                                            ("stmatrix.sync.aligned.m8n8.x1.shared.b16", 7)])
def test_9_a_row_lane_without_an_address_is_refused(spelling, lane):
    addresses = [16 * i for i in range(32)]
    addresses[lane] = None
    with pytest.raises(SharedMemoryError, match=f"lane {lane} supplies no row address"):
        access(spelling, addresses)
    memory = SharedMemory(4096)
    with pytest.raises(SharedMemoryError, match=f"lane {lane} supplies no row address"):
        if spelling.startswith("ld"):
            memory.ldmatrix(spelling, addresses)
        else:
            memory.stmatrix(spelling, addresses, np.zeros((32, 1), np.uint32))


def test_9_lanes_beyond_the_rows_may_still_give_none():
    addresses = [16 * i for i in range(8)] + [None] * 24
    assert access("ldmatrix.sync.aligned.m8n8.x1.shared.b16", addresses).wavefronts == 1


# ---- 10. byte order -----------------------------------------------------------------------------


def test_10_big_endian_operands_hold_the_same_numbers():
    rng = np.random.default_rng(10)
    q = "m16n8k8.row.col.f32.f16.f16.f32"
    A = rng.integers(-4, 5, (2, 16, 8)).astype(np.float16)
    B = rng.integers(-4, 5, (2, 8, 8)).astype(np.float16)
    C = rng.integers(-64, 65, (2, 16, 8)).astype(np.float32)
    D = tcsim.mma(q, A.astype(">f2"), B.astype(">f2"), C.astype(">f4"))
    # Small integers: every product and sum is exact, so D is the float64 result.
    assert np.array_equal(D, A.astype(np.float64) @ B.astype(np.float64) + C)
    assert np.array_equal(tcsim.fragment(q, "a").pack(A.astype(">f2")),
                          tcsim.fragment(q, "a").pack(A))


# ---- 11. named messages --------------------------------------------------------------------------


def test_11_count_wmma_checks_stride_and_origin():
    q = "wmma.m16n16k16.row.col.f32.f16.f16.f32"
    with pytest.raises(TypeError, match="stride .* must be an integer, got '64'"):
        count_wmma(q, "a", "row", "shared", "64")
    with pytest.raises(ValueError, match="must be a multiple of 16 bytes"):
        count_wmma(q, "a", "row", "shared", 4)
    with pytest.raises(ValueError, match="stride .* must be a positive integer"):
        count_wmma(q, "a", "row", "shared", -16)
    with pytest.raises(ValueError, match="origin 3 must be a multiple of 32 bytes"):
        count_wmma(q, "a", "row", "global", 16, origin=3)
    with pytest.raises(ValueError, match="origin .* must be a non-negative integer"):
        count_wmma(q, "a", "row", "global", 16, origin=-32)


def test_11_precision_study_names_each_bad_argument():
    with pytest.raises(ValueError, match="ks is empty"):
        tcsim.precision_study(ks=[])
    with pytest.raises(ValueError, match=r"ks\[0\] must be a positive integer, got 0"):
        tcsim.precision_study(ks=0)
    with pytest.raises(TypeError, match=r"ks\[0\] must be an integer, got 16.0"):
        tcsim.precision_study(ks=[16.0])
    with pytest.raises(ValueError, match="dots must be a positive integer, got 0"):
        tcsim.precision_study(ks=[16], dots=0)
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
        tcsim.precision_study(ks=[16], seed=-1)
    one = tcsim.precision_study(ks=16, dots=4, distributions="normal")  # one K, one name
    assert one.params["ks"] == [16] and one.params["distributions"] == ["normal"]
    with pytest.raises(ValueError, match=r"no row for K=32.*K in \[16\]"):
        one.row(32, "normal", "tc_f16")


# ---- first hour ----------------------------------------------------------------------------------


@pytest.mark.parametrize("q", ["m16n8k8.row.col.f32.f16.f16.f32", "m8n8k4.row.row.f16.f16.f16.f16",
                               "m16n8k16.row.col.f32.bf16.bf16.f32",
                               "m16n8k32.row.col.f16.e4m3.e5m2.f16",
                               "m16n8k32.row.col.s32.u8.s8.s32", "m64n24k16.f32.f16.f16",
                               "m64n16k32.s32.s8.s8"])
def test_mma_without_c_is_a_times_b(q):
    spec = tcsim.parse_wgmma(q) if tcsim.is_wgmma_qualifier(q) else tcsim.parse(q)
    rng = np.random.default_rng(11)
    A, B = (rng.integers(-3, 4, (2,) + spec.matrix_shape(op)).astype(spec.format(op).dtype)
            for op in "ab")
    D = tcsim.mma(q, A, B)
    # Small integers: exact in every type, products and sums included.
    want = A.astype(np.float64) @ B.astype(np.float64)
    assert D.shape == (2,) + spec.matrix_shape("d") and D.dtype == spec.format("d").dtype
    assert np.array_equal(D.astype(np.float64), want)


def test_wmma_without_c_is_a_times_b():
    q = "wmma.m16n16k16.row.col.f32.bf16.bf16.f32"
    rng = np.random.default_rng(12)
    A = rng.integers(-3, 4, (16, 16)).astype(ml_dtypes.bfloat16)
    B = rng.integers(-3, 4, (16, 16)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(tcsim.wmma(q, A, B), A.astype(np.float64) @ B.astype(np.float64))


def test_no_kernel_named_lists_every_kernel_it_takes():
    from tcsim.kernels import kernel_named

    with pytest.raises(ValueError, match="no kernel named 'kernel12'") as error:
        kernel_named("kernel12")
    known = str(error.value).split("known:")[1].split("; or a kernel of your own")[0]
    listed = re.findall(r"[\w-]+", known)
    for name in ("kernel1", "kernel6", "kernel7", "kernel10", "wmma_basic", "tf32_puzzle",
                 "kernel2-missing-barrier"):
        assert name in listed
    kernels = [n for n in listed if n.startswith(("kernel", "wmma", "tf32"))]
    assert len(kernels) >= 27
    for name in kernels:  # every name listed is taken
        assert kernel_named(name).name == name


def test_a_closed_pipe_ends_the_command_quietly():
    # A 64x256 table is far more than a pipe holds: the writer meets the closed pipe.
    shell = (f"{sys.executable} -m tcsim layout m64n256k16.f32.f16.f16 d | head -c 10; "
             "exit ${PIPESTATUS[0]}")
    run = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "wgmma m64n"
    assert run.stderr == ""


def test_the_bank_conflicts_examples_print_what_their_comments_show(capsys):
    text = (ROOT / "docs" / "bank-conflicts.md").read_text()
    checked = 0
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        shown = [line[2:] for line in block.splitlines()
                 if re.match(r"# \S+: \d+ wavefronts", line)]
        if not shown:
            continue
        exec(compile(block, "bank-conflicts.md", "exec"), {})
        printed = capsys.readouterr().out.splitlines()
        assert [s.split("  (")[0].rstrip() for s in shown] == printed
        checked += 1
    assert checked == 2


def test_an_access_is_one_line_in_a_repl():
    acc = access("ld.shared.v4.b32", [32 * lane for lane in range(32)])
    assert repr(acc) == "<Access ld.shared.v4.b32: 8 wavefronts, ideal 4, 4 bank conflicts>"


def test_the_readme_says_how_to_start():
    readme = (ROOT / "README.md").read_text()
    for step in ("git clone", "cd tcsim", "python3 -m venv", "Python 3.10 or newer"):
        assert step in readme, step
    speed = readme[readme.index("Speed:"):]
    assert "2-core AMD EPYC" in speed[:200]
