"""tcsim.hw.verify's CPU side: the errors a user's CUDA file meets before the GPU (no file, bad
shapes, a compile error with the file's own name and line, no such kernel), compiled by nvcc
alone as `check_compiles` does (the guide's CUDA files among them), and the report a
`Verification` prints, on arrays that differ in known places.

The GPU side (bits and counters of the guide's kernels): tests/hw/test_own_kernel_hw.py.
"""

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import tcsim
from tcsim import hw
from tcsim.hw.runtime import source_kernels
from tcsim.hw.verify import Verification, read_source
from tcsim.kernels import ProblemSizeError, kernel_named

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PAGE = ROOT / "docs" / "own-kernel.md"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="nvcc (the CUDA compiler) is not installed here")


def own(name: str):
    return kernel_named(f"{EXAMPLES / 'own_kernel.py'}:{name}")


# ---- before anything compiles -----------------------------------------------------------------


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'nowhere/mine\.cu' does not exist"):
        hw.verify(own("mine"), "nowhere/mine.cu", 256, 256, 256)
    with pytest.raises(FileNotFoundError, match="is a folder, not a file"):
        hw.check_compiles(own("mine"), tmp_path)
    with pytest.raises(TypeError, match="the path of a .cu file"):
        hw.verify(own("mine"), 42, 256, 256, 256)


def test_shapes_the_tiles_do_not_divide_are_refused_before_the_gpu():
    with pytest.raises(ProblemSizeError, match="M=200 is not a multiple of block_m=128"):
        hw.verify(own("mine"), EXAMPLES / "own_kernel.cu", 200, 256, 256)
    with pytest.raises(ProblemSizeError, match="K must be a positive integer, got 0"):
        hw.verify(own("mine_hopper"), EXAMPLES / "own_kernel_hopper.cu", 64, 256, 0)


def test_a_bad_entry_or_define_is_refused():
    with pytest.raises(ValueError, match="entry must be the name of the file's kernel"):
        hw.verify(own("mine"), EXAMPLES / "own_kernel.cu", 256, 256, 256, entry="my kernel")
    with pytest.raises(TypeError, match=r"defines\['PAD'\] must be an integer"):
        hw.verify(own("mine"), EXAMPLES / "own_kernel.cu", 256, 256, 256,
                  defines={"PAD": 8.0})
    with pytest.raises(ValueError, match="'8PAD' is not a macro name"):
        hw.verify(own("mine"), EXAMPLES / "own_kernel.cu", 256, 256, 256, defines={"8PAD": 1})


def test_the_compilers_see_the_users_file_name_and_lines():
    source = read_source(EXAMPLES / "own_kernel.cu")
    first, rest = source.text.split("\n", 1)
    assert first == f'#line 1 "{EXAMPLES / "own_kernel.cu"}"'
    assert rest == (EXAMPLES / "own_kernel.cu").read_text()


def test_the_kernels_a_source_declares():
    text = """// __global__ void commented_out()
    extern "C" __global__ void CLUSTER_DIMS __launch_bounds__((BM / WM) * 32, 1) first(int a) {}
    /* __global__ void hidden() */
    template <int X> __global__ void second(float* x) {}
    __global__
    void third(GEMM_PARAMS) {}"""
    assert source_kernels(text) == ["first", "second", "third"]


# ---- nvcc alone (no GPU) ----------------------------------------------------------------------


@needs_nvcc
@pytest.mark.parametrize("name, file, options", [
    ("mine", "own_kernel.cu", {}),
    ("mine_swizzled", "own_kernel.cu", {"entry": "mine"}),
    ("mine_padded", "own_kernel.cu", {"entry": "mine", "defines": {"PAD": 8}}),
    ("mine_hopper", "own_kernel_hopper.cu", {})])
def test_the_guides_cuda_files_compile_as_verify_compiles_them(name, file, options):
    hw.check_compiles(own(name), EXAMPLES / file, **options)


@needs_nvcc
def test_a_compile_error_shows_nvccs_message_with_the_users_file_and_line(tmp_path):
    path = tmp_path / "my kernel.cu"
    path.write_text('#include "gemm_common.cuh"\n\n'
                    'extern "C" __global__ void mine(GEMM_PARAMS) {\n'
                    '  D[0] = undeclared_value;\n'
                    '}\n')
    with pytest.raises(hw.CompileError) as caught:
        hw.check_compiles(own("mine"), path)
    message = str(caught.value)
    assert f"{path}(4): error" in message and "undeclared_value" in message
    assert "source.cu" not in message  # the temporary copy's name never shows
    assert isinstance(caught.value, ValueError)  # a documented tcsim error (docs/errors.md)


@needs_nvcc
def test_the_kernels_constants_reach_the_file(tmp_path):
    path = tmp_path / "sizes.cu"
    path.write_text('#include "gemm_common.cuh"\n'
                    '#if BM != 64 || PAD != 3\n#error "wrong constants"\n#endif\n'
                    'extern "C" __global__ void mine(GEMM_PARAMS) {}\n')
    hw.check_compiles(own("mine"), path, block_m=64, defines={"PAD": 3})
    with pytest.raises(hw.CompileError, match=r"sizes\.cu:3:2: error: #error \"wrong constants"):
        hw.check_compiles(own("mine"), path, defines={"PAD": 3})  # BM is mine's 128


@needs_nvcc
def test_includes_resolve_in_the_users_folder_before_tcsims(tmp_path):
    (tmp_path / "gemm_common.cuh").write_text("#define MY_OWN_COMMON 1\n")
    (tmp_path / "mine.cu").write_text('#include "gemm_common.cuh"\n'
                                      '#ifndef MY_OWN_COMMON\n#error "tcsim\'s header"\n#endif\n'
                                      'extern "C" __global__ void mine() {}\n')
    hw.check_compiles(own("mine"), tmp_path / "mine.cu")


@needs_nvcc
def test_a_missing_kernel_lists_the_files_kernels(tmp_path):
    with pytest.raises(hw.CompileError,
                       match=r"no kernel named 'mine_swizzled' \(its kernels: mine\)"):
        hw.check_compiles(own("mine_swizzled"), EXAMPLES / "own_kernel.cu")
    path = tmp_path / "mangled.cu"  # no extern "C": the kernel's name is C++-mangled
    path.write_text('#include "gemm_common.cuh"\n__global__ void mine(GEMM_PARAMS) {}\n')
    with pytest.raises(hw.CompileError, match=r"its kernels: _Z4mine\w+\); .*extern \"C\""):
        hw.check_compiles(own("mine"), path)


# ---- the report -------------------------------------------------------------------------------


def report(rng, changes, counters=None, shape=(256, 384), tile=(128, 128)):
    """A Verification of a random D against a copy with ``changes``: (row, col) -> f16 bits."""
    expected = rng.uniform(-4, 4, shape).astype(np.float16)
    expected[expected == 0] = 1  # no zeros: a change to -0 or +0 stays visible in the floats
    got = expected.copy()
    for (row, col), bits in changes.items():
        got.view(np.uint16)[row, col] = bits
    return Verification("mine", "/home/me/mine.cu", "mine", (shape[0], shape[1], 64), {}, 7,
                        expected, got, tile, counters, "NVIDIA H100 80GB HBM3")


def test_equal_bits_say_so(rng):
    v = report(rng, {})
    assert v.bits_equal and v.ok and v.counters_equal is None
    assert len(v.differing) == 0 and v.tiles == {}
    text = str(v)
    assert text.splitlines()[0] == ("mine as /home/me/mine.cu (kernel mine), M=256 N=384 K=64, "
                                    "seed 7, on NVIDIA H100 80GB HBM3")
    assert "bits: equal (98,304 elements of D)" in text
    assert "counters: not measured" in text


def test_differing_elements_show_position_both_values_and_tiles(rng):
    changes = {(3, 5): 0x3C00, (130, 7): 0x7E00, (255, 383): 0x8000}  # 1.0, NaN, -0
    v = report(rng, changes)
    assert not v.bits_equal and not v.ok
    assert v.differing.tolist() == [[3, 5], [130, 7], [255, 383]]
    assert v.tiles == {(0, 0): 1, (1, 0): 1, (1, 2): 1}
    text = str(v)
    assert "bits: 3 of 98,304 elements of D differ, in 3 of 6 tiles of 128 x 128" in text
    lines = text.splitlines()
    row = next(line for line in lines if line.strip().startswith("(3, 5)"))
    before = int(v.expected.view(np.uint16)[3, 5])
    assert f"0x{before:04x} ({float(v.expected[3, 5]):.5g})" in row
    assert row.rstrip().endswith("0x3c00 (1)")
    assert next(line for line in lines if "(130, 7)" in line).rstrip().endswith("0x7e00 (nan)")
    assert next(line for line in lines if "(255, 383)" in line).rstrip().endswith("0x8000 (-0)")
    assert "(0, 0): 1   (1, 0): 1   (1, 2): 1" in text


def test_many_differences_are_cut_short_with_a_count(rng):
    changes = {(r, c): 0x3C00 for r in range(0, 40, 3) for c in (0, 200)}
    v = report(rng, changes)
    text = str(v)
    shown = [line for line in text.splitlines() if line.strip().startswith("(") and ", " in
             line and "0x" in line]
    assert len(shown) == 10
    assert f"... and {len(changes) - 10:,} more" in text
    assert f"{len(changes)} of 98,304" in text and "in 2 of 6 tiles" in text


def test_counters_table_shows_trace_ncu_and_the_difference(rng):
    counters = {"smsp__inst_executed_op_ldsm.sum": (4096, 4096.0),
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": (0, 81920.0),
                "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": (2048, float("nan"))}
    v = report(rng, {}, counters)
    assert v.counters_equal is False and v.shared_counters_equal is False and not v.ok
    text = str(v)
    assert "counters: 2 of 3 differ, shared memory among them" in text
    line = next(x for x in text.splitlines() if "bank_conflicts" in x)
    assert line.split()[1:] == ["0", "81,920", "+81,920"]
    line = next(x for x in text.splitlines() if "global_op_st" in x)
    assert line.split()[1:] == ["2,048", "n/a", "n/a"]
    line = next(x for x in text.splitlines() if "ldsm" in x)
    assert line.split()[1:] == ["4,096", "4,096"]
    equal = report(rng, {}, {"smsp__inst_executed_op_ldsm.sum": (4096, 4096.0)})
    assert equal.ok and "counters: equal (1 that the trace predicts)" in str(equal)
    global_only = report(rng, {}, {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": (1, 2.0)})
    assert global_only.shared_counters_equal and not global_only.counters_equal


def test_arrays_that_do_not_match_are_refused(rng):
    a = rng.uniform(-1, 1, (4, 4)).astype(np.float16)
    with pytest.raises(ValueError, match="expected and got must be alike"):
        Verification("mine", "x.cu", "mine", (4, 4, 4), {}, 1, a, a.astype(np.float32), (4, 4))


def test_the_guides_example_report_is_what_verify_prints():
    """docs/own-kernel.md's report of mine_padded run from a file without its padding: the
    trace of mine_padded against the counters of the unpadded layout, mine's trace (which
    Nsight Compute matches for mine: tests/hw/test_own_kernel_hw.py)."""
    text = PAGE.read_text()
    section = text[text.index("## On the GPU: your own CUDA file"):]
    shown = section[section.index("```text\n") + 8:]
    shown = shown[:shown.index("```")]
    M, N, K = 1024, 1024, 1024
    padded = tcsim.trace(own("mine_padded"), M, N, K).totals
    unpadded = tcsim.trace(own("mine"), M, N, K).totals
    D = np.ones((M, N), np.float16)  # equal bits: the layout stays inside the block
    v = Verification("mine_padded", "/home/me/kernels/own_kernel.cu", "mine", (M, N, K), {},
                     2718, D, D.copy(), (128, 128),
                     {m: (padded[m], float(unpadded[m])) for m in padded},
                     "NVIDIA H100 80GB HBM3")
    assert shown.rstrip() == str(v)


def test_the_guides_cuda_excerpts_are_the_example_files():
    text = PAGE.read_text()
    section = text[text.index("## On the GPU: your own CUDA file"):text.index("## Reference")]
    excerpts = re.findall(r"```cuda\n(.*?)```", section, re.S)
    files = "".join(path.read_text() for path in sorted(EXAMPLES.glob("*.cu")))
    assert excerpts and all(code in files for code in excerpts)


def test_f32_outputs_show_eight_hex_digits(rng):
    expected = rng.uniform(1, 2, (16, 16)).astype(np.float32)  # never 1.0 exactly
    got = expected.copy()
    got[2, 9] = 1.0
    v = Verification("mine_tf32", "k.cu", "k", (16, 16, 8), {"inputs": "f32"}, 3, expected, got,
                     (16, 16))
    line = next(x for x in str(v).splitlines() if x.strip().startswith("(2, 9)"))
    assert line.rstrip().endswith("0x3f800000 (1)")
    assert f"0x{int(expected.view(np.uint32)[2, 9]):08x}" in line
    assert "inputs=f32" in str(v).splitlines()[0]
