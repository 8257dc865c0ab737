"""The simulator's checks: each planted bug is caught with a message that names the kernel,
site, block, warp, lane and address; correct kernels raise nothing; the modes work."""

import warnings

import numpy as np
import pytest

import tcsim
from tcsim.kernels import KERNELS, GemmParams
from tcsim.kernels.blocks import shared_tiles
from tcsim.kernels.checks import Access
from tcsim.kernels.kernel import Kernel
from tcsim.kernels.planted import PLANTED

SHAPE = (256, 256, 256)


def _inputs(rng, M=256, N=256, K=256):
    return (rng.uniform(-1, 1, (M, K)).astype(np.float16),
            rng.uniform(-1, 1, (K, N)).astype(np.float16),
            rng.uniform(-1, 1, (M, N)).astype(np.float16))


EXPECTED = {
    "kernel2-missing-barrier": (tcsim.SharedRaceError,
                                r"shared-memory race in block \(0, 0\): warp \d+ lane \d+ "
                                r"\(st\.shared\.v4\.b32 at site 'A_smem_store'\) wrote bytes "
                                r"0x[0-9a-f]+\.\.0x[0-9a-f]+ and warp \d+ lane \d+ \(ldmatrix"),
    "kernel2-tile-offset": (tcsim.GlobalMemoryError,
                            r"site 'A_gmem_load': block \(0, 0\) warp 0 lane 0: A elements "
                            r"\[256, 0:8\] are outside the 256x256 matrix"),
    "kernel7-no-edge-fill": (tcsim.GlobalMemoryError,
                             r"site 'A_tma': block \(1, 0\): the TMA box at A\[128, 0\] reaches "
                             r"A\[200, 0\], past the 200x1000 matrix: its tensor map describes "
                             r"256x1000, and TMA fills zeros only past the map's edge"),
    "kernel2-unaligned-ldmatrix": (tcsim.SharedAddressError,
                                   r"site 'A_smem_ldmatrix' .*warp 0 lane 0: address 0x8 is "
                                   r"not aligned to 16 bytes"),
    "kernel2-uninitialized-tail": (tcsim.UninitializedReadError,
                                   r"block \(0, 0\) warp \d+ lane \d+ reads shared bytes "
                                   r"0x[0-9a-f]+\.\.0x[0-9a-f]+ at site 'B_smem_ldmatrix'.*"
                                   r"nothing wrote"),
    "kernel6-early-wait": (tcsim.AsyncCopyRaceError,
                           r"site 'A_smem_ldmatrix' while a cp\.async into them is in flight"),
    "kernel7-skip-first-waits": (
        tcsim.StageRaceError,
        r"block \(0, 0\): role 'consumers' reads shared bytes 0x0\.\.0xf at site 'wgmma' "
        r"while the TMA copy at site 'A_tma' may still be writing them: the copy completes on "
        r"full\[0\] phase 0, which role 'consumers' did not wait for"),
    "kernel7-early-release": (
        tcsim.StageRaceError,
        r"role 'producer' overwrites shared bytes 0x0\.\.0xf at site 'A_tma' while consumers' "
        r"wgmma at site 'wgmma' \(group 1\) may still be reading them: role 'consumers' did "
        r"not retire that group \(wgmma.wait_group\)"),
    "kernel7-short-expect-tx": (
        tcsim.TransactionError,
        r"site 'B_tma': the copy's 8192 bytes take full\[0\]'s transaction count to -8192: "
        r"the arrive\.expect_tx of phase 0 announced 8192 bytes too few, so that phase "
        r"completed before this copy landed"),
    "kernel7-descriptor-swizzle": (
        tcsim.DescriptorLayoutError,
        r"the wgmma at site 'wgmma' reads operand a through MatrixDescriptor .*swizzle 64B as "
        r"a K-major tile.*element \(1, 0\) should be A\[1, 0\], and it reads A\[0, 32\]"),
    # kernel10's epilogue (two buffers of C per warp, four chunks of 64 columns): the third
    # chunk's C lands in the first chunk's buffer, whose TMA store may still read it.
    "kernel10-no-store-wait": (
        tcsim.StageRaceError,
        r"role 'consumers' overwrites shared bytes 0x[0-9a-f]+\.\.0x[0-9a-f]+ at site 'C_tma' "
        r"while consumers' TMA stores at site 'D_tma' \(group 1\) may still be reading them: "
        r"that group has not retired \(cp\.async\.bulk\.wait_group\.read\)"),
    "kernel10-skip-c-wait": (
        tcsim.StageRaceError,
        r"role 'consumers' reads shared bytes 0x[0-9a-f]+\.\.0x[0-9a-f]+ at site 'C_ldmatrix' "
        r"while the TMA copy at site 'C_tma' may still be writing them: the copy completes on "
        r"c_full\[0\] phase 0, which role 'consumers' did not wait for"),
    # kernel10 issuing a TMA store of D without fence.proxy.async after its stmatrix.
    "kernel10-no-fence": (
        tcsim.ProxyFenceError,
        r"the TMA store at site 'D_tma' of role 'consumers' reads shared bytes "
        r"0x[0-9a-f]+\.\.0x[0-9a-f]+, which role 'consumers' stored at site 'D_stmatrix' with "
        r"no fence\.proxy\.async since: the async proxy may read them stale"),
}
# kernel7's stages are first refilled at the fifth K tile: its plants run with 16.
SHAPES = {name: (256, 256, 1024) for name in PLANTED if name.startswith("kernel7")}
SHAPES.update({name: (128, 256, 128) for name in PLANTED if name.startswith("kernel10")})
SHAPES["kernel7-no-edge-fill"] = (200, 256, 1000)  # a ragged shape: the bug needs an edge
# kernel10 reads C only when beta is not 0: its plants run with alpha 1, beta 0.5.
SCALARS = {name: (1.0, 0.5) for name in PLANTED if name.startswith("kernel10")}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_planted_bug_is_caught_and_named(name, rng):
    error, message = EXPECTED[name]
    with pytest.raises(error, match=message) as caught:
        tcsim.run(PLANTED[name], *_inputs(rng, *SHAPES.get(name, SHAPE)),
                  *SCALARS.get(name, ()))
    assert isinstance(caught.value, tcsim.SimulationError)
    if not isinstance(caught.value, tcsim.TransactionError):  # a barrier's, not an address's
        assert caught.value.where["site"] and "address" in caught.value.where
    assert str(caught.value).startswith(name)


def test_the_stage_race_is_found_whichever_role_runs_first(rng, monkeypatch):
    """Happens-before, not the interleaving the executor happens to run: with the consumers
    run first, the bug is caught again (as a read of bytes nothing wrote yet, or as the
    producer's later overwrite of a chunk the consumers read unordered)."""
    from tcsim.kernels import hopper

    original = hopper.HopperInstructions.run_roles
    monkeypatch.setattr(hopper.HopperInstructions, "run_roles",
                        lambda self, *roles: original(self, *roles[::-1]))
    with pytest.raises((tcsim.StageRaceError, tcsim.UninitializedReadError)):
        tcsim.run(PLANTED["kernel7-skip-first-waits"], *_inputs(rng, 256, 256, 1024))
    with pytest.raises(tcsim.StageRaceError, match="did not retire"):
        tcsim.run(PLANTED["kernel7-early-release"], *_inputs(rng, 256, 256, 1024))
    tcsim.run("kernel7", *_inputs(rng, 256, 256, 1024))  # the correct kernel: no false alarm


def test_a_wrong_descriptor_is_refused_even_with_the_checks_off(rng):
    """With the checks off, the 64-byte-swizzle descriptor of K step 2 (64 bytes into its
    512-byte pattern) is one the descriptor model refuses: no silently wrong bits."""
    from tcsim.memory.descriptors import DescriptorError

    with pytest.raises(DescriptorError, match=r"start address 0x40 lies 64 bytes into its "
                                              r"512-byte 64B swizzle pattern"):
        tcsim.run(PLANTED["kernel7-descriptor-swizzle"], *_inputs(rng), checks="off")


def test_the_race_names_both_accesses(rng):
    with pytest.raises(tcsim.SharedRaceError) as caught:
        tcsim.run(PLANTED["kernel2-missing-barrier"], *_inputs(rng))
    other = caught.value.where["other"]
    assert isinstance(other, Access) and other.site == "A_smem_ldmatrix"
    assert other.warp != caught.value.where["warp"]


def test_a_wrong_swizzle_pairing_gives_wrong_bits_but_no_fault(rng):
    A, B, C = _inputs(rng)
    D = tcsim.run(PLANTED["kernel2-read-unswizzled"], A, B, C)
    assert (D.view(np.uint16) != tcsim.run("kernel2", A, B, C).view(np.uint16)).mean() > 0.9


@pytest.mark.parametrize("beta", [0.5, 0.0])
def test_the_tma_epilogue_raises_nothing_with_every_check_on(beta, rng):
    """kernel10 on several tiles per block (its buffers change phase) and with one K tile
    (C is asked for before the only one), reading C and not: no false alarm."""
    tcsim.run("kernel10", *_inputs(rng, 256, 512, 192), 1.0, beta, persistent_blocks=1)
    tcsim.run("kernel10", *_inputs(rng, 128, 512, 64), 1.0, beta)
    t = tcsim.trace("kernel10", 256, 512, 128, exhaustive=True, checks="collect",
                    persistent_blocks=2, beta=beta)
    assert t.problems == []


def test_without_c_the_store_wait_still_guards_the_buffers(rng):
    """With beta 0 no C arrives, but D's words still go into a buffer whose last TMA store
    may be reading it: the plant that skips the wait is caught on that path too."""
    with pytest.raises(tcsim.StageRaceError,
                       match=r"role 'consumers' overwrites shared bytes .* at site 'D_stmatrix' "
                             r"while consumers' TMA stores at site 'D_tma' \(group 1\) may "
                             r"still be reading them"):
        tcsim.run(PLANTED["kernel10-no-store-wait"], *_inputs(rng, 128, 256, 128), 1.0, 0.0)


@pytest.mark.parametrize("name", list(KERNELS))
def test_correct_kernels_raise_nothing_with_every_check_on(name, rng):
    t = tcsim.trace(name, 256, 256, 256, exhaustive=True, checks="collect")
    assert t.problems == []
    tcsim.run(name, *_inputs(rng, 256, 256, 128), checks="raise")


def test_warn_mode_finishes_and_collect_mode_gathers(rng):
    kernel = PLANTED["kernel2-uninitialized-tail"]
    with pytest.warns(RuntimeWarning, match="nothing wrote"):
        D = tcsim.run(kernel, *_inputs(rng), checks="warn")
    assert D.shape == (256, 256)
    t = tcsim.trace(kernel, *SHAPE, exhaustive=True, checks="collect")
    assert t.problems and all(isinstance(p, tcsim.UninitializedReadError) for p in t.problems)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tcsim.run(kernel, *_inputs(rng), checks="off")  # nothing raised, nothing warned
    with pytest.raises(ValueError, match="checks must be one of"):
        tcsim.run(kernel, *_inputs(rng), checks="loud")


def test_a_symbolic_trace_still_checks_addresses():
    with pytest.raises(tcsim.SharedAddressError):
        tcsim.trace(PLANTED["kernel2-unaligned-ldmatrix"], *SHAPE)
    tcsim.trace(PLANTED["kernel2-missing-barrier"], *SHAPE)  # races need exhaustive=True


def test_a_sync_aligned_instruction_in_a_divergent_branch(rng):
    def program(m, p, A_smem, B_smem):
        with m.lanes(np.arange(32) < 16):
            m.ldmatrix("A_smem_ldmatrix", "x1", np.zeros((p.warps, 32), np.int64))

    kernel = Kernel("divergent", "ldmatrix under if (lane < 16)", program,
                    lambda p: shared_tiles(p, False),
                    GemmParams(block_m=64, block_n=64, block_k=32, warp_m=32, warp_n=32,
                               warp_k=16))
    with pytest.raises(tcsim.DivergentWarpError, match=r"with 16 active lanes \(lane 16"):
        tcsim.trace(kernel, 64, 64, 32)


def test_a_write_over_an_in_flight_copy(rng):
    def program(m, p, A_smem, B_smem):
        rows, cols = np.zeros((p.warps, 32), np.int64), np.arange(32) * 8 % p.block_k
        addresses = A_smem.address(np.broadcast_to(np.arange(32) // 4, (p.warps, 32)) +
                                   8 * np.arange(p.warps)[:, None], cols)
        m.copy_async("A_cp_async", "A", rows, cols, 0, addresses)
        m.commit_group()
        m.store_shared("A_smem_store", addresses, m.zeros(p.warps, 32, 4))

    kernel = Kernel("overwrite", "st.shared over a pending cp.async", program,
                    lambda p: shared_tiles(p, False),
                    GemmParams(block_m=64, block_n=64, block_k=32, warp_m=32, warp_n=32,
                               warp_k=16))
    A, B, C = _inputs(rng, 64, 64, 32)
    with pytest.raises(tcsim.AsyncCopyRaceError, match="while an earlier cp.async"):
        tcsim.run(kernel, A, B, C)


@pytest.mark.parametrize("pending", [-1, 1.5, True])
def test_wgmma_wait_refuses_a_bad_count(pending):
    from dataclasses import replace

    kernel = replace(tcsim.kernel7, name="bad-wait", program=lambda m, p: m.wgmma_wait(pending))
    with pytest.raises(ValueError, match="wgmma.wait_group takes a count of pending groups"):
        tcsim.trace(kernel, 128, 256, 64)


def _fence_checker():
    from tcsim.kernels.checks import Report
    from tcsim.kernels.happens_before import PhaseChecker

    checker = PhaseChecker(Report("fences", "collect"), 1024, lambda: "block (0, 0)")
    checker.switch("consumers")
    return checker


def test_proxy_fences_by_the_writing_role_and_tma_copies_clear_the_marks():
    """The fence check alone: a TMA store or wgmma reading a role's unfenced stores is a
    ProxyFenceError; the writing role's fence clears it, another role's does not, and bytes a
    TMA copy wrote since hold no generic store."""
    from tcsim.kernels.roles import Barriers

    bytes_ = np.arange(0, 64)
    c = _fence_checker()
    c.access("D_stmatrix", bytes_, write=True)
    c.bulk_read("D_tma", bytes_)
    c.fence_proxy()
    c.bulk_read("D_tma", bytes_)
    c.switch("producer")
    c.access("A_st", bytes_ + 128, write=True)  # and no fence
    c.switch("consumers")
    c.access("B_st", bytes_ + 256, write=True)
    c.fence_proxy()  # the consumers' fence does not cover the producer's stores
    c.wgmma_read("wgmma", "a", 0, (bytes_ + 128).reshape(4, 16), 2, "K")
    errors = [e for e in c.report.problems if isinstance(e, tcsim.ProxyFenceError)]
    assert len(errors) == 2
    assert "the TMA store at site 'D_tma'" in str(errors[0])
    assert "the wgmma at site 'wgmma'" in str(errors[1])
    assert "role 'producer' stored at site 'A_st'" in str(errors[1])
    c = _fence_checker()
    c.access("C_st", bytes_, write=True)
    full = Barriers("full", 512, 1, 1)
    c.tma_write("C_tma", "C", bytes_.reshape(4, 16), 0, 0, full, 0)
    c.bulk_read("D_tma", bytes_)
    assert not any(isinstance(e, tcsim.ProxyFenceError) for e in c.report.problems)
