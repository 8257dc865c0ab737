"""The executor: a schedule run on real bits, many blocks at once (`tcsim.run`).

Global memory is the caller's matrices as f16 bit patterns; each block in flight has its own
shared memory (a uint32 word array); registers are uint32 arrays with the blocks on the first
axis. Every mma.sync goes through `tcsim.mma_regs`, so the tensor-core bits are the model's.
Blocks run in groups so that registers and shared memory stay within ``MAX_REGISTER_BYTES``.
"""

from __future__ import annotations

import numpy as np

from ..isa.fragments import ldmatrix_fragment
from ..isa.mma import mma_regs
from ..isa.validate import check_memory, real_scalar
from ..memory.access import parse_instruction
from .kernel import Kernel
from .machine import Machine
from .params import GemmParams, ProblemSizeError

MAX_REGISTER_BYTES = 256 << 20  # a bound on one group's accumulators, to size the groups


class Executor(Machine):
    def __init__(self, kernel: str, params: GemmParams, A: np.ndarray, B: np.ndarray,
                 C: np.ndarray, D: np.ndarray, alpha: np.float32, beta: np.float32,
                 checks: str = "raise") -> None:
        M, K = A.shape
        N = B.shape[1]
        super().__init__(kernel, params, M, N, K, checks)
        self.alpha, self.beta = np.float32(alpha), np.float32(beta)
        self.memory = {"A": A.reshape(-1), "B": B.reshape(-1), "C": C.reshape(-1),
                       "D": D.reshape(-1)}

    def begin_blocks(self, rows, cols) -> None:
        super().begin_blocks(rows, cols)
        self.shared = np.zeros((rows.size, self.params.shared_bytes // 4), np.uint32)

    def k_tiles(self, start=0, stop=None):
        return iter(range(start, self.k_tile_count if stop is None else stop))

    def _block_index(self, ndim: int) -> np.ndarray:
        return np.arange(self.block_rows.size).reshape((-1,) + (1,) * ndim)

    def _load_global(self, site, spelling, operand, offsets, vector):
        values = self.memory[operand][offsets[..., None] + np.arange(vector)]
        return np.ascontiguousarray(values).view(np.uint32)

    def _store_global(self, site, spelling, operand, offsets, registers):
        values = np.ascontiguousarray(registers, np.uint32).view(np.uint16)
        self.memory[operand][offsets[..., None] + np.arange(values.shape[-1])] = values

    def _store_shared(self, site, addresses, registers):
        words = addresses[..., None] // 4 + np.arange(4)
        self.shared[self._block_index(words.ndim), words] = registers

    def _copy_async(self, site, operand, offsets, addresses):
        self._store_shared(site, addresses, self._load_global(site, "", operand, offsets, 8))

    def _ldmatrix(self, site, spelling, addresses, rows):
        inst = parse_instruction(spelling)
        words = rows[..., None] // 4 + np.arange(4)
        data = self.shared[self._block_index(words.ndim), words]  # (blocks, ..., 8N, 4)
        frag = ldmatrix_fragment(inst.matrices, inst.transpose)
        return frag.to_registers(frag.gather_bits(data.view(np.uint16)))

    def _mma(self, site, a, b, c):
        return mma_regs(self.params.qualifier, a, b, c)


def run(kernel: Kernel | str, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None,
        alpha: float = 1.0, beta: float = 0.0, *, checks: str = "raise",
        **params) -> np.ndarray:
    """``D = alpha * A @ B + beta * C`` computed by ``kernel``'s schedule, bit for bit.

    A (M, K), B (K, N) and C (M, N) are float16 matrices in any memory layout (C None reads
    as zeros); alpha and beta are real numbers, rounded to float32 as the CUDA twin receives
    them (a finite one that overflows float32 is refused). ``params`` override the kernel's
    tile parameters. Returns D (M, N) float16. A problem whose arrays would not fit in this
    machine's memory raises `ProblemSizeError` before anything is allocated.

    ``checks`` ("raise", "warn" or "off"): what a race or an uninitialized shared read does
    (`tcsim.SimulationError` subclasses; docs/checks.md). A bad address always raises.
    """
    from . import kernel_named

    kernel = kernel_named(kernel)
    p = kernel.params(**params)
    if checks == "collect":
        raise ValueError("tcsim.run returns D: use checks='warn', or tcsim.trace(..., "
                         "checks='collect') to gather the problems")
    alpha, beta = (real_scalar(x, name, dtype=np.float32)
                   for x, name in ((alpha, "alpha"), (beta, "beta")))
    return execute(kernel, p, *check_operands(kernel, p, A, B, C), alpha, beta, checks)


def check_operands(kernel: Kernel, p: GemmParams, A, B, C) -> tuple[np.ndarray, ...]:
    """A, B, C as float16 matrices of matching shapes the tiles divide (C None: zeros)."""
    A, B = _matrix("A", A), _matrix("B", B)
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K:
        raise ValueError(f"A is {M}x{K} but B is {K2}x{N}: B needs {K} rows")
    if C is not None:
        C = _matrix("C", C)
        if C.shape != (M, N):
            raise ValueError(f"C must be {M}x{N} (M x N), got {C.shape[0]}x{C.shape[1]}")
    p.check_problem(M, N, K, kernel.name)
    # A, B and C in one contiguous copy each (at worst), and D: refused before any of them.
    check_memory(2 * (M * K + K * N + 2 * M * N), f"{kernel.name} on M={M}, N={N}, K={K}",
                 error=ProblemSizeError)
    return A, B, np.zeros((M, N), np.float16) if C is None else C


def _matrix(name: str, x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != np.float16:
        raise TypeError(f"{name} must be float16 (the ladder's kernels are f16 GEMMs), "
                        f"got {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {x.shape}")
    return x


def execute(kernel, params: GemmParams, A, B, C, alpha: float, beta: float,
            checks: str = "raise") -> np.ndarray:
    """Run ``kernel``'s schedule on every block; D as float16 (M, N)."""
    A, B, C = (np.ascontiguousarray(x).view(np.uint16) for x in (A, B, C))
    D = np.zeros(C.shape, np.uint16)
    ex = Executor(kernel.name, params, A, B, C, D, np.float32(alpha), np.float32(beta), checks)
    grid_n, grid_m = params.grid(ex.M, ex.N)
    rows, cols = (x.ravel() for x in np.divmod(np.arange(grid_m * grid_n), grid_n))
    acc_bytes = params.warps * params.warp_m * params.warp_n * (2 if params.accumulate == "f16"
                                                                else 4)
    group = max(1, MAX_REGISTER_BYTES // (8 * acc_bytes))  # temporaries are several times acc
    for start in range(0, rows.size, group):
        ex.begin_blocks(rows[start:start + group], cols[start:start + group])
        kernel.issue(ex)
        ex.end_blocks()
    return D.view(np.float16)
