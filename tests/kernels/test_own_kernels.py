"""A user's kernels (examples/own_kernel.py, the kernels of docs/own-kernel.md: row-major with
bank conflicts, swizzled, padded, Hopper) through every entry point a built-in kernel goes
through: tcsim.run, tcsim.trace, Trace.compare, Trace.explain / tcsim.perf.explain and the
command line, by object and by spec.

Their bits are checked against references that share nothing with the schedules: the exact
integer product, and chains of the single-instruction models (`tcsim.mma`, `tcsim.wgmma`,
each proven against the H100 on its own) along K; their bank conflicts against a count made
here from the layouts' formulas.
"""

import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gemm_inputs import gemm_inputs
from wgmma_chain import chained_wgmma

import tcsim
from tcsim.cli import main
from tcsim.kernels import kernel_named

ROOT = Path(__file__).resolve().parents[2]
FILE = "examples/own_kernel.py"
LADDER = ("mine", "mine_swizzled", "mine_padded")


@pytest.fixture(autouse=True)
def at_the_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # specs are relative paths and modules, as a user types them


def own(name: str):
    return kernel_named(f"{FILE}:{name}")


def mma_chain(A, B):
    """D's bits: m16n8k8 products along K, 8 at a time, every 16 x 8 tile of D at once."""
    M, K = A.shape
    N = B.shape[1]
    a = A.reshape(M // 16, 1, 16, K)
    b = B.reshape(K, N // 8, 8).transpose(1, 0, 2)[None]
    acc = np.zeros((M // 16, N // 8, 16, 8), np.float16)
    for k in range(0, K, 8):
        acc = tcsim.mma("m16n8k8.row.col.f16.f16.f16.f16", a[..., k:k + 8], b[..., k:k + 8, :],
                        acc)
    return acc.transpose(0, 2, 1, 3).reshape(M, N).view(np.uint16)


# ---- tcsim.run --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LADDER)
def test_run_gives_the_chain_of_products(name, rng):
    for M, N, K in ((128, 128, 32), (256, 384, 96)):
        A, B, _, _, _ = gemm_inputs(rng, M, N, K)
        want = mma_chain(A, B)
        assert np.array_equal(tcsim.run(own(name), A, B).view(np.uint16), want)
        assert np.array_equal(tcsim.run(f"{FILE}:{name}", A, B).view(np.uint16), want)


@pytest.mark.parametrize("name", LADDER + ("mine_hopper",))
def test_run_gives_the_exact_product_of_small_integers(name, rng):
    M, N, K = 128, 256, 128
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    A[0, 0] = 3  # never all zeros
    D = tcsim.run(own(name), A, B)
    assert np.array_equal(D.astype(np.int64), A.astype(np.int64) @ B.astype(np.int64))


def test_the_hopper_kernel_gives_the_chain_of_wgmma(rng):
    for M, N, K in ((64, 256, 64), (192, 512, 256)):
        A, B, _, _, _ = gemm_inputs(rng, M, N, K)
        D = tcsim.run(own("mine_hopper"), A, B)
        want = chained_wgmma(A, B, np.zeros((M, N), np.float16), 1.0, 0.0, "f16", block_n=256)
        assert np.array_equal(D.view(np.uint16), want)


def test_a_kernel_that_stores_a_at_b_refuses_c(rng):
    A, B, C, _, _ = gemm_inputs(rng, 128, 128, 32)
    with pytest.raises(ValueError, match="mine stores A @ B"):
        tcsim.run(own("mine"), A, B, C)


# ---- tcsim.trace ------------------------------------------------------------------------------


def ldmatrix_wavefronts(byte_addresses: np.ndarray) -> int:
    """Wavefronts of ldmatrix instructions, counted here: rows (..., 32 lanes) of 16 bytes, 8
    lanes a phase; a phase takes as many wavefronts as the most distinct 4-byte words any of
    the 32 banks must serve."""
    words = byte_addresses.reshape(-1, 8, 1) // 4 + np.arange(4)  # (phases, 8 rows, 4 words)
    total = 0
    for phase in words.reshape(-1, 32):
        distinct = np.unique(phase)
        total += int(np.bincount(distinct % 32, minlength=32).max())
    return total


def test_the_row_major_kernel_s_conflicts_are_the_banks_own():
    """mine at 1024^3: 64 blocks x 32 K tiles, each warp (64 x 64 at (wr, wc)) reads A by
    ldmatrix.x4 at rows wr*64 + 16i + lane % 16, columns 16j + 8 (lane // 16) of a 128 x 32
    row-major tile, and B by .x4.trans at rows 8s + lane % 8, columns wc*64 + 32g + 8 (lane //
    8) of a 32 x 128 one after it."""
    lane = np.arange(32)
    a, b = [], []
    for warp in range(4):
        wr, wc = divmod(warp, 2)
        for i in range(4):
            for j in range(2):
                a.append(((wr * 64 + 16 * i + lane % 16) * 32 + 16 * j + lane // 16 * 8) * 2)
        for s in range(4):
            for g in range(2):
                b.append(8192 + ((8 * s + lane % 8) * 128 + wc * 64 + 32 * g + lane // 8 * 8) * 2)
    times = 64 * 32
    t = tcsim.trace(own("mine"), 1024, 1024, 1024)
    for site, addresses in (("A_ldmatrix", a), ("B_ldmatrix", b)):
        assert t.sites[site].executions == len(addresses) * times
        assert t.sites[site].wavefronts == ldmatrix_wavefronts(np.array(addresses)) * times
        assert t.sites[site].ideal == 4 * len(addresses) * times
    assert t.sites["A_ldmatrix"].conflicts == 3 * 4 * 32 * times  # 4-way in each phase
    assert t.sites["B_ldmatrix"].conflicts == 7 * 4 * 32 * times  # 8-way


def test_the_cures_remove_the_ldmatrix_conflicts():
    base = tcsim.trace(own("mine"), 1024, 1024, 1024)
    for name in ("mine_swizzled", "mine_padded"):
        t = tcsim.trace(own(name), 1024, 1024, 1024)
        for site in ("A_ldmatrix", "B_ldmatrix"):
            assert t.sites[site].conflicts == 0
            assert t.sites[site].wavefronts == base.sites[site].ideal
        assert t.totals["smsp__inst_executed_pipe_tensor_op_hmma.sum"] == 1024**3 // (16 * 8 * 8)


@pytest.mark.parametrize("name", LADDER + ("mine_hopper",))
def test_the_exhaustive_trace_counts_the_same_and_finds_no_race(name):
    shape = (128, 512, 256)
    fast = tcsim.trace(own(name), *shape)
    full = tcsim.trace(f"{FILE}:{name}", *shape, exhaustive=True, checks="collect")
    assert full.problems == []
    assert full.totals == fast.totals and fast.kernel == name


def test_compare_puts_two_user_kernels_side_by_side():
    text = tcsim.trace(own("mine"), 1024, 1024, 1024).compare(
        tcsim.trace(own("mine_padded"), 1024, 1024, 1024))
    assert text.startswith("mine vs mine_padded")
    row = next(line.split() for line in text.splitlines() if line.startswith("B_ldmatrix"))
    assert row == ["B_ldmatrix", "2,097,152", "1,835,008", "262,144", "0"]


# ---- explain, from the Kernel object ----------------------------------------------------------


def test_explain_reads_the_kernel_object_not_a_registry_name():
    from dataclasses import replace

    # a user's kernel that happens to share a built-in's name: its own tiles count
    mine_as_kernel1 = replace(own("mine_padded"), name="kernel1")
    t = tcsim.trace(mine_as_kernel1, 4096, 4096, 4096)
    for e in (t.explain(), tcsim.perf.explain(t)):
        assert e.occupancy.shared_bytes_per_block == 128 * 40 * 2 + 32 * 136 * 2  # padded
        assert e.occupancy.warps_per_block == 4 and e.kernel == "kernel1"
    builtin = tcsim.trace("kernel1", 4096, 4096, 4096).explain()
    assert builtin.occupancy.shared_bytes_per_block == 256 * 64 * 2 + 64 * 128 * 2
    # a trace made by hand (no object) still finds a built-in by its name
    by_hand = replace(tcsim.trace("kernel1", 4096, 4096, 4096), kernel_object=None)
    assert by_hand.explain().seconds == builtin.seconds


def test_explain_sees_the_conflicts_and_the_hopper_kernel():
    slow = tcsim.trace(own("mine"), 4096, 4096, 4096).explain()
    fast = tcsim.trace(own("mine_swizzled"), 4096, 4096, 4096).explain()
    assert slow.limiter == "shared" and "bank conflicts" in slow.reason
    assert fast.seconds < slow.seconds
    hopper = tcsim.trace(own("mine_hopper"), 4096, 4096, 4096)
    assert hopper.explain().units["tensor"] > 0
    with pytest.raises(ValueError, match="mine_hopper needs sm_90a"):
        hopper.explain("A100-SXM4-80GB" if "A100-SXM4-80GB" in tcsim.perf.gpu_names()
                       else "T4")


# ---- the command line -------------------------------------------------------------------------


def test_the_command_line_takes_files_and_modules(capsys):
    assert main(["trace", f"{FILE}:mine", "1024", "1024", "1024"]) == 0
    assert capsys.readouterr().out.startswith("mine on M=1024 N=1024 K=1024")
    assert main(["compare", f"{FILE}:mine", "examples.own_kernel:mine_swizzled", "1024",
                 "1024", "1024"]) == 0
    assert capsys.readouterr().out.startswith("mine vs mine_swizzled")
    assert main(["explain", "examples.own_kernel:mine_padded", "4096", "4096", "4096",
                 "--gpu", "H100-SXM"]) == 0
    assert capsys.readouterr().out.startswith("mine_padded on M=4096")
    assert main(["trace", f"{FILE}:mine", "1024", "1024", "1024", "--block_m", "64",
                 "--json"]) == 0
    assert '"block_m": 64' in capsys.readouterr().out


@pytest.mark.parametrize("spec, message", [
    ("nowhere/own.py:mine", "kernel 'nowhere/own.py:mine': no file nowhere/own.py"),
    ("examples:mine", "kernel 'examples:mine': examples has no 'mine'; its Kernels: none"),
    ("no_such_package.kernels:mine", "no module named 'no_such_package'"),
    (f"{FILE}:nope", f"{FILE} has no 'nope'; its Kernels: mine, mine_hopper, mine_padded, "
                     "mine_swizzled"),
    (f"{FILE}:PARAMS", "PARAMS is a GemmParams, not a tcsim.Kernel"),
    (f"{FILE}:", "is named FILE.py:NAME or package.module:NAME"),
    ("tests:", "is named FILE.py:NAME or package.module:NAME"),
    ("examples/:mine", "no file examples/ (it is a directory)"),
])
def test_a_spec_that_leads_nowhere_is_one_clear_line(spec, message, capsys):
    assert main(["trace", spec, "1024", "1024", "1024"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tcsim: error: ") and message in err, err
    with pytest.raises(ValueError, match="kernel"):
        tcsim.trace(spec, 1024, 1024, 1024)


def test_a_file_that_fails_to_load_says_why(tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("import tcsim\nx = 1 / 0\n")
    assert main(["trace", f"{broken}:mine", "128", "128", "32"]) == 2
    assert "running " in (err := capsys.readouterr().err) and "ZeroDivisionError" in err
    (tmp_path / "bad_module.py").write_text("raise RuntimeError('not today')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ValueError, match="importing bad_module raised RuntimeError: not "
                                             "today"):
            kernel_named("bad_module:mine")
    finally:
        sys.path.remove(str(tmp_path))


def test_a_file_loads_as_a_script_once(tmp_path):
    (tmp_path / "helpers.py").write_text("BLOCK_M = 64\n")
    (tmp_path / "mykernel.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from dataclasses import replace
        from helpers import BLOCK_M  # a neighbour, as a script imports it
        from examples.own_kernel import mine
        small = replace(mine, name="small", defaults=replace(mine.defaults, block_m=BLOCK_M,
                                                             warp_m=32))
    """))
    spec = f"{tmp_path / 'mykernel.py'}:small"
    first = kernel_named(spec)
    assert first is kernel_named(spec) and first.params().block_m == 64
    assert str(tmp_path) not in sys.path  # the script's folder was on the path only to load
    os.chdir(tmp_path)
    assert kernel_named("mykernel.py:small") is first


def test_d_elements_no_instruction_stores_are_refused_not_left_zero(rng):
    """A schedule whose epilogue forgets half of D (a newcomer's bug: the 16-row tile offset
    times 0, so every warp stores its first 16 rows over and over) stops with
    UnwrittenOutputError naming the count and the first element, instead of a D half zeros."""
    mine = own("mine")
    guide = sys.modules[mine.program.__module__]

    def store_d(m, p, acc):  # the guide's store_d with the bug
        frag = tcsim.fragment(p.qualifier, "d")
        first = np.moveaxis(frag.coords[:, 0::2], 0, 1)
        warp_row = m.warp_row.reshape(-1, 1, 1, 1, 1) * p.warp_m
        warp_col = m.warp_col.reshape(-1, 1, 1, 1, 1) * p.warp_n
        tile_m = np.arange(p.tiles_m).reshape(-1, 1, 1, 1) * 0  # should be * 16
        tile_n = np.arange(p.tiles_n).reshape(-1, 1, 1) * 8
        m.store_global("D_store", "D", warp_row + tile_m + first[..., 0],
                       warp_col + tile_n + first[..., 1], np.moveaxis(acc, -1, -2)[..., None])

    def program(m, p, A_smem, B_smem):
        acc = m.zeros(p.warps, p.tiles_m, p.tiles_n, 32, 2)
        for k in m.k_tiles():
            guide.copy_tile(m, p, A_smem, k)
            guide.copy_tile(m, p, B_smem, k)
            m.sync()
            a, b = guide.a_fragments(m, p, A_smem), guide.b_fragments(m, p, B_smem)
            for step in range(p.block_k // 8):
                acc = m.mma("mma", a[..., :, step, None, :, :], b[..., None, step, :, :, :], acc)
            m.sync()
        store_d(m, p, acc)

    forgetful = tcsim.Kernel("forgetful", "mine, storing 16 of each warp's 64 rows", program,
                             mine.tiles, mine.defaults, takes_c=False)
    A = rng.uniform(-1, 1, (128, 64)).astype(np.float16)
    B = rng.uniform(-1, 1, (64, 256)).astype(np.float16)
    with pytest.raises(tcsim.SimulationError,
                       match=r"stored nothing to 24,576 of D's 32,768 elements, the first at "
                             r"row 16, column 0 \(block tile \(0, 0\)\)"):
        tcsim.run(forgetful, A, B)
    D = tcsim.run(forgetful, A, B, checks="off")  # what a GPU would leave: rows 16..63 unset
    assert not D[16:64].any() and D[:16].any()


@pytest.mark.parametrize("shape", [(32,), (5, 32), (5, 7, 32), (4, 2, 16)])
def test_per_lane_values_without_the_warp_axis_are_refused_by_site(shape):
    """A newcomer's slip: addresses built without m.warp (shape (k steps, 32), ...). The trace
    would count the extra axes as warps' instructions; every entry point refuses instead,
    naming the site and the shape."""
    mine = own("mine")

    def program(m, p, A_smem, B_smem):
        m.ldmatrix("B_ldmatrix", "x4.trans", np.zeros(shape, np.int64))

    sloppy = tcsim.Kernel("sloppy", "addresses without the warp axis", program, mine.tiles,
                          mine.defaults, takes_c=False)
    A = np.ones((128, 32), np.float16)
    B = np.ones((32, 128), np.float16)
    for entry in (lambda: tcsim.trace(sloppy, 128, 128, 32), lambda: tcsim.run(sloppy, A, B)):
        with pytest.raises(ValueError, match=rf"site 'B_ldmatrix': shared addresses of shape "
                                             rf"\({shape[0]},.*the issuing warps first"):
            entry()


def test_a_traces_header_names_its_tiles_so_an_override_shows():
    mine = own("mine")
    assert str(tcsim.trace(mine, 256, 256, 64)).startswith(
        "mine on M=256 N=256 K=64, 128x128x32 tiles")
    assert str(tcsim.trace(mine, 256, 256, 64, block_m=64, warp_m=32)).startswith(
        "mine on M=256 N=256 K=64, 64x128x32 tiles")
