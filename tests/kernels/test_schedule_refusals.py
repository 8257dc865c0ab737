"""A user's schedule that misuses the Machine is refused the same way by `tcsim.trace` (which
moves no bits) and `tcsim.run` (which does), with an error naming the kernel, the site and
the instruction: registers of the wrong shape or type (a tile or type override the schedule
was not written for), an operand name that is not one, C in a kernel that reads none, and a
`__syncthreads` that only some lanes reach."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from gemm_inputs import gemm_inputs
from repo_script import load

import tcsim
from tcsim import GemmParams, Kernel, RowMajor, SharedTile
from tcsim.kernels.checks import DivergentWarpError

ROOT = Path(__file__).resolve().parents[2]
PARAMS = GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64, warp_k=32)


def example():
    """examples/own_kernel.py as a module (the guide's kernels and their pieces)."""
    return load("examples/own_kernel.py", "own_kernel_pieces")


def both(kernel, M=128, N=128, K=64, **params):
    """What trace and run each raise (a list of two exceptions; None where one passed)."""
    rng = np.random.default_rng()
    A, B = gemm_inputs(rng, M, N, K)[:2]
    raised = []
    for call in (lambda: tcsim.trace(kernel, M, N, K, **params),
                 lambda: tcsim.run(kernel, A, B, **params)):
        try:
            call()
        except Exception as error:  # noqa: BLE001 - the test inspects what it is
            raised.append(error)
        else:
            raised.append(None)
    return raised


def assert_named(raised, kind, *words):
    for error in raised:
        assert type(error) is kind, repr(error)
        for word in words:
            assert word in str(error), (word, str(error))


# ---- registers --------------------------------------------------------------------------------

def test_an_override_the_guides_schedule_cannot_take_is_refused_by_trace_as_by_run():
    """`mine` keeps m16n8k8 f16 accumulators (two registers a lane) whatever the params say:
    with accumulate="f32" (four) or mma_k=16 (A in four registers) trace used to count a
    plausible trace of the wrong instruction."""
    unguarded = dataclasses.replace(example().mine, requires=lambda p: None)
    for override, operand in ((dict(accumulate="f32"), "C"), (dict(mma_k=16), "A")):
        raised = both(unguarded, **override)
        assert_named(raised, ValueError, "mine site 'mma'", "mma.sync.aligned.m16n8k",
                     f"{operand} registers", "requires=")


def test_the_guides_kernels_refuse_what_their_epilogue_cannot_store_by_name():
    for name in ("mine", "mine_swizzled", "mine_padded"):
        kernel = getattr(example(), name)
        for override in (dict(accumulate="f32"), dict(mma_k=16)):
            with pytest.raises(ValueError, match="mine and its cures run m16n8k8 with f16"):
                tcsim.trace(kernel, 128, 128, 64, **override)


def mma_kernel(a_registers=2, b_registers=1, c_registers=2, dtype=np.uint32):
    """One m16n8k8 per warp and K tile on zero registers of the given counts."""
    def program(m, p):
        acc = m.zeros(p.warps, 32, c_registers).astype(dtype)
        a, b = m.zeros(p.warps, 32, a_registers), m.zeros(p.warps, 32, b_registers)
        for _ in m.k_tiles():
            acc = m.mma("mma", a, b, acc)

    return Kernel("mma_only", "mma on zeros", program, lambda p: (), PARAMS, takes_c=False)


@pytest.mark.parametrize("counts, operand", [((2, 4, 2), "B"), ((1, 1, 2), "A"),
                                             ((2, 1, 4), "C")])
def test_mma_registers_of_the_wrong_count_are_refused_by_both(counts, operand):
    raised = both(mma_kernel(*counts))
    assert_named(raised, ValueError, "mma_only site 'mma'",
                 "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", f"{operand} registers",
                 "(..., 32, ")


def test_mma_registers_that_are_not_uint32_are_refused_by_both():
    assert_named(both(mma_kernel(dtype=np.int64)), TypeError, "mma_only site 'mma'", "uint32")


def copy_kernel(mutate, tile_operand="A"):
    """Copies A's tile to shared memory and D's first columns, ``mutate`` applied to what
    store_shared gets."""
    def tiles(p):
        return (SharedTile(tile_operand, RowMajor(p.block_m, p.block_k), base=0),)

    def program(m, p, smem):
        thread = m.warp * 32 + m.lane
        vector = np.arange(4)[:, None] * p.threads + thread[:, None, :]
        row, col = vector // 4, vector % 4 * 8
        regs = m.load_global("A_load", "A", row, col)
        m.store_shared("A_store", smem.address(row, col), mutate(regs))
        m.sync()
        m.store_global("D_store", "D", row, col, regs)

    return Kernel("copying", "a test copy", program, tiles, PARAMS, takes_c=False)


@pytest.mark.parametrize("mutate, kind, words", [
    (lambda r: r[..., :3], ValueError, "(..., 32, 4)"),
    (lambda r: r[..., :1, :], ValueError, "(..., 32, 4)"),  # lane 0's registers in every lane
    (lambda r: r.astype(np.float32), TypeError, "uint32"),
    (lambda r: r[..., :3, :, :], ValueError, "do not match the lanes' addresses"),
])
def test_store_shared_registers_are_checked_by_both(mutate, kind, words):
    raised = both(copy_kernel(mutate))
    assert_named(raised, kind, "copying site 'A_store'", "st.shared.v4.b32", words)


def test_the_twin_generator_meets_the_same_refusal():
    from tcsim.hw.kernels import schedule_twin

    with pytest.raises(TypeError, match="copying site 'A_store'.*uint32"):
        schedule_twin.source(copy_kernel(lambda r: r.astype(np.float32)), 128, 128, 32)


def test_store_global_registers_are_checked_by_both():
    def program(m, p):
        regs = m.zeros(p.warps, 32, 3)
        m.store_global("D_store", "D", m.warp * 0 + m.lane // 4, m.lane % 4 * 8, regs)

    kernel = Kernel("storing", "a bad store", program, lambda p: (), PARAMS, takes_c=False)
    assert_named(both(kernel), ValueError, "storing site 'D_store'", "st.global",
                 "(..., 32, 1 or 2 or 4)")


# ---- operands ---------------------------------------------------------------------------------

def operand_kernel(operand, takes_c=True, store=False):
    def program(m, p):
        rows, cols = m.warp * 0 + m.lane // 4, m.lane % 4 * 8
        regs = m.load_global("load", "A" if store else operand, rows, cols)
        m.store_global("store", operand if store else "D", rows, cols, regs)

    return Kernel("operands", "one load", program, lambda p: (), PARAMS, takes_c=takes_c)


@pytest.mark.parametrize("operand", ["a", "X", "d_", 3])
def test_an_unknown_operand_is_refused_naming_the_site_and_the_operands(operand):
    assert_named(both(operand_kernel(operand)), ValueError, "operands site 'load'",
                 f"no operand {operand!r}", "A, B, C, D")


def test_c_in_a_kernel_that_reads_no_c_is_refused():
    raised = both(operand_kernel("C", takes_c=False))
    assert_named(raised, ValueError, "operands site 'load'", "reads no C", "takes_c=False")
    tcsim.trace(operand_kernel("C", takes_c=True), 128, 128, 64)  # the same, reading C


@pytest.mark.parametrize("operand", ["A", "B", "C"])
def test_a_store_to_an_input_is_refused(operand):
    assert_named(both(operand_kernel(operand, store=True)), ValueError, "operands site 'store'",
                 "a store goes to D", f"not {operand} (A, B and C")


# ---- a divergent __syncthreads ----------------------------------------------------------------

def test_a_sync_that_only_some_lanes_reach_is_a_divergent_warp():
    module = example()

    def program(m, p, A_smem, B_smem):
        with m.lanes(m.lane < 16):
            m.sync()  # bar.sync is barrier.sync.aligned: undefined unless the whole warp
        module.program(m, p, A_smem, B_smem)

    kernel = dataclasses.replace(module.mine, name="mine_divergent", program=program)
    assert_named(both(kernel), DivergentWarpError, "mine_divergent site 'sync'", "bar.sync",
                 "16 active lanes")
    with pytest.raises(DivergentWarpError):
        tcsim.trace(kernel, 128, 128, 64, exhaustive=True)
    healthy = dataclasses.replace(module.mine, name="mine_again")
    assert both(healthy) == [None, None]
