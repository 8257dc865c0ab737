"""The executor: a schedule run on real bits, many blocks at once (`tcsim.run`).

Global memory is the caller's matrices as f16 bit patterns; each block in flight has its own
shared memory (a uint32 word array); registers are uint32 arrays with the blocks on the first
axis. Every mma.sync goes through `tcsim.mma_regs`, so the tensor-core bits are the model's.
Blocks run in groups so that registers and shared memory stay within ``MAX_REGISTER_BYTES``.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ..isa.fragments import ldmatrix_fragment
from ..isa.mma import mma_regs
from ..isa.validate import check_memory, real_scalar
from ..isa.wgmma import wgmma_regs
from ..isa.wmma import wmma_fragment, wmma_regs
from ..memory.access import parse_instruction
from ..memory.descriptors import MatrixDescriptor
from ..progress import progress
from .checks import UnwrittenOutputError
from .happens_before import PhaseChecker
from .kernel import Kernel
from .machine import OFF, Machine
from .params import DTYPES, GemmParams, ProblemSizeError, tile_count
from .roles import Waiting, interleave
from .scheduler import block_units
from .split_k import k_range, workspace_bytes

MAX_REGISTER_BYTES = 256 << 20  # a bound on one group's accumulators, to size the groups


class Executor(Machine):
    def __init__(self, kernel: str, params: GemmParams, A: np.ndarray, B: np.ndarray,
                 C: np.ndarray, D: np.ndarray, alpha: np.float32, beta: np.float32,
                 checks: str = "raise", shared_bytes: int | None = None,
                 scales: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        M, K = A.shape
        N = B.shape[0] if params.b_k_major else B.shape[1]  # fp8's B: N rows of K
        super().__init__(kernel, params, M, N, K, checks, shared_bytes)
        self.alpha, self.beta = np.float32(alpha), np.float32(beta)
        self.memory = {"A": A.reshape(-1), "B": B.reshape(-1), "C": C.reshape(-1),
                       "D": D.reshape(-1)}
        if "W" in self.shapes:  # split-K's f32 partials (`tcsim.kernels.split_k`)
            self.memory["W"] = np.zeros(np.prod(self.shapes["W"]), np.uint32)
        if scales is not None:  # fp8's row-wise scales, f32 bits
            self.memory.update(SA=scales[0].view(np.uint32), SB=scales[1].view(np.uint32))
        self.stored = np.zeros(D.size, bool)  # D's elements some instruction stored
        self.progress = _Share(lambda done: None, 0)  # `execute` gives each group its share
        self.role = None  # the role running now (warp-specialized kernels)

    def begin_blocks(self, rows, cols, split: int = 0) -> None:
        super().begin_blocks(rows, cols, split)
        self.shared = np.zeros((self.block_rows.size, -(-self.shared_bytes // 4)), np.uint32)
        self.local = None  # each thread's local memory, made by the first local access
        # Roles order their accesses through mbarrier phases: happens-before, not intervals.
        self.phases = None if self.report.mode == "off" else PhaseChecker(
            self.report, self.shared_bytes, lambda: self.describe(0, None, None))

    def _local_words(self) -> np.ndarray:
        if self.local is None:
            self.local = np.zeros((self.block_rows.size, self.params.warps, 32,
                                   self.local_bytes // 4), np.uint32)
        return self.local

    def k_tiles(self, start=0, stop=None):
        for k in range(start, self.k_tile_count if stop is None else stop):
            yield k
            self.progress.step(self.role, self.block_rows.size)  # a K tile of each block

    def _block_index(self, ndim: int) -> np.ndarray:
        return np.arange(self.block_rows.size).reshape((-1,) + (1,) * ndim)

    def _load_global(self, site, spelling, operand, offsets, vector):
        on = offsets[..., None] != OFF  # lanes predicated off get zeros
        values = self.memory[operand][np.where(on, offsets[..., None], 0) + np.arange(vector)]
        return np.ascontiguousarray(np.where(on, values, 0)).view(np.uint32)

    def _store_global(self, site, spelling, operand, offsets, registers):
        memory = self.memory[operand]
        values = np.ascontiguousarray(registers, np.uint32).view(memory.dtype)
        on = offsets != OFF  # lanes predicated off store nothing
        elements = offsets[on][..., None] + np.arange(values.shape[-1])
        memory[elements] = np.broadcast_to(values, offsets.shape + values.shape[-1:])[on]
        self._stored(operand, elements)

    def _stored(self, operand: str, elements) -> None:
        if operand == "D":
            self.stored[elements] = True

    def _load_shared(self, site, spelling, addresses, width, active=None):
        self._role_access(site, addresses, write=False)
        words = addresses[..., None] // 4 + np.arange(width // 4)
        data = self.shared[self._block_index(words.ndim), words]
        return data if active is None else np.where(active[..., None], data, np.uint32(0))

    def _role_access(self, site, addresses, write: bool) -> None:
        """A role's own shared access takes part in the happens-before checks."""
        if self.phases and self.phases.role:
            self.phases.access(site, addresses, write)

    def _local_index(self, offsets, width):
        """Index arrays into ``self.local`` for each lane's ``width`` bytes at ``offsets``
        (warps, ..., 32): (block, warp, lane, word)."""
        words = offsets[..., None] // 4 + np.arange(width // 4)
        block = self._block_index(words.ndim)
        warp = np.arange(offsets.shape[0]).reshape((-1,) + (1,) * (words.ndim - 1))
        lane = np.arange(32)[:, None]
        return block, warp, lane, words

    def _load_local(self, site, spelling, offsets, width):
        return self._local_words()[self._local_index(offsets, width)]

    def _store_local(self, site, spelling, offsets, registers):
        self._local_words()[self._local_index(offsets, 4 * registers.shape[-1])] = registers

    def _wmma_load(self, site, spec, operand, layout, space, stride, matrix, offsets):
        frag = wmma_fragment(spec, operand)
        if space == "global":
            return frag.to_registers(self.memory[matrix][offsets])
        view, index = self._shared_elements(spec, operand, offsets)
        return frag.to_registers(view[index])

    def _wmma_store(self, site, spec, layout, space, stride, matrix, offsets, registers):
        bits = wmma_fragment(spec, "d").from_registers(registers)
        if space == "global":
            self.memory[matrix][offsets] = bits
            self._stored(matrix, offsets)
        else:
            view, index = self._shared_elements(spec, "d", offsets)
            view[index] = bits

    def _shared_elements(self, spec, operand, offsets) -> tuple[np.ndarray, tuple]:
        """Shared memory as the fragment's 16- or 32-bit elements, and the index of the
        elements at byte ``offsets``."""
        size = spec.element_bytes(operand)
        view = self.shared.view(np.uint16 if size == 2 else np.uint32)
        return view, (self._block_index(offsets.ndim), offsets // size)

    def _wmma_mma(self, site, spec, a, b, c):
        return wmma_regs(spec.qualifier, a, b, c)

    def _store_shared(self, site, addresses, registers):
        self._role_access(site, addresses, write=True)
        words = addresses[..., None] // 4 + np.arange(4)
        self.shared[self._block_index(words.ndim), words] = registers

    def _copy_async(self, site, operand, offsets, addresses):
        vector = self.params.vector
        self._store_shared(site, addresses, self._load_global(site, "", operand, offsets, vector))

    def _ldmatrix(self, site, spelling, addresses, rows):
        inst = parse_instruction(spelling)
        self._role_access(site, rows, write=False)
        words = rows[..., None] // 4 + np.arange(4)
        data = self.shared[self._block_index(words.ndim), words]  # (blocks, ..., 8N, 4)
        frag = ldmatrix_fragment(inst.matrices, inst.transpose)
        return frag.to_registers(frag.gather_bits(data.view(np.uint16)))

    def _stmatrix(self, site, spelling, addresses, rows, registers):
        inst = parse_instruction(spelling)
        frag = ldmatrix_fragment(inst.matrices, inst.transpose)
        matrix = frag.scatter_bits(frag.from_registers(registers))  # (blocks, ..., 8N, 8)
        self._role_access(site, rows, write=True)
        words = rows[..., None] // 4 + np.arange(4)
        self.shared[self._block_index(words.ndim), words] = \
            np.ascontiguousarray(matrix).view(np.uint32)

    def _mma(self, site, a, b, c):
        return mma_regs(self.params.qualifier, a, b, c)

    # ---- Hopper: bits move when an instruction issues; barriers keep their phases ------------

    def _who(self, what: str) -> str:
        return f"{self.kernel} {what}"

    def _arrive(self, barriers, index, count, expect_tx):
        if self.phases:
            self.phases.release(barriers, index)
        for _ in range(count):
            if barriers.arrive(index, expect_tx,
                               self._who(f"arrive on {barriers.label(index)}")) and self.phases:
                self.phases.complete(barriers, index)
            expect_tx = 0

    def _wait(self, barriers, index, parity):
        if not barriers.completed(index, parity):
            yield Waiting(barriers, index, parity)
        if self.phases:
            self.phases.acquire(barriers, index)

    def _tma_load(self, site, operand, tensor_map, destination, rows, cols, barriers, index,
                  multicast=False):
        e = tensor_map.element_bytes
        elements, inside = tensor_map.box_elements(rows, cols)  # (blocks, box rows, box cols)
        values = np.where(inside, self.memory[operand][elements], 0)
        view = self.shared.view(np.dtype(f"u{e}"))
        offsets = tensor_map.box_offsets(destination)
        if self.phases:
            self.phases.tma_write(site, operand, offsets, int(rows[0]), int(cols[0]), barriers,
                                  index)
        view[:, offsets // e] = values
        if barriers.pay(index, tensor_map.box_bytes, self._who(f"site {site!r}")) \
                and self.phases:
            self.phases.complete(barriers, index)

    def _tma_received(self, site, operand, tensor_map, destination, rows, cols, barriers,
                      index):
        # the other block's copy of the same box (the symmetric cluster): the same bits land
        self._tma_load(site, operand, tensor_map, destination, rows, cols, barriers, index)

    def _tma_store(self, site, operand, tensor_map, source, rows, cols):
        e = tensor_map.element_bytes
        offsets = tensor_map.box_offsets(source)
        if self.phases:
            self.phases.bulk_read(site, offsets)
        elements, inside = tensor_map.box_elements(rows, cols)  # (blocks, box rows, box cols)
        values = self.shared.view(np.dtype(f"u{e}"))[:, offsets // e]
        self.memory[operand][elements[inside]] = values[inside]  # TMA clips the box
        self._stored(operand, elements[inside])

    def _bulk_commit(self):
        if self.phases:
            self.phases.bulk_commit()

    def _fence_proxy_async(self):
        if self.phases:
            self.phases.fence_proxy()

    def _bulk_wait_read(self, pending):
        if self.phases:
            self.phases.bulk_retire(pending)

    def _wgmma(self, site, spec, desc_a, desc_b, acc, trans_b):
        a = self._descriptor_tile(site, spec, "a", desc_a, "K", spec.m)  # (blocks, groups, 64, K)
        b = self._descriptor_tile(site, spec, "b", desc_b, "MN" if trans_b else "K", spec.n)
        A, B = (spec.format(op).from_bits(x) for op, x in (("a", a), ("b", b.swapaxes(-1, -2))))
        return wgmma_regs(spec.qualifier, A, B, acc)

    def _descriptor_tile(self, site, spec, operand, descriptors, major, rows):
        """The (blocks, warpgroups, rows, K) elements each warpgroup's descriptor reads."""
        e = spec.format(operand).storage_bits // 8
        view = self.shared.view(np.dtype(f"u{e}"))
        addresses = np.stack([_descriptor_addresses(int(d), e, major, rows)
                              for d in descriptors])
        if self.phases:
            for d, at in zip(descriptors, addresses):
                self.phases.wgmma_read(site, operand, int(d), at, e, major)
        return view[self._block_index(addresses.ndim), addresses // e]

    def _wgmma_commit(self):
        if self.phases:
            self.phases.commit()

    def _wgmma_wait(self, pending):
        if self.phases:
            self.phases.retire(pending)

    def _run_roles(self, roles):
        def resume(name: str) -> None:
            self.role = name
            if self.phases:
                self.phases.switch(name)

        interleave(roles, self.kernel, resume)
        self.role = None


@cache
def _descriptor_addresses(value: int, element_bytes: int, major: str, rows: int) -> np.ndarray:
    """Byte addresses (rows, K) that a wgmma reads through descriptor ``value``."""
    return MatrixDescriptor.decode(value).layout(element_bytes, major, rows).addresses()


def run(kernel: Kernel | str, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None,
        alpha: float = 1.0, beta: float = 0.0, *, checks: str = "raise", scale_a=None,
        scale_b=None, out_dtype=None, **params) -> np.ndarray:
    """``D = alpha * A @ B + beta * C`` computed by ``kernel``'s schedule, bit for bit.

    A (M, K), B (K, N) and C (M, N) are float16 matrices in any memory layout (C None reads
    as zeros), or of the types the parameters name: ``inputs="bf16"`` takes A and B as
    ``ml_dtypes.bfloat16``, ``output="bf16"`` C and D (the Hopper rungs); alpha and beta are
    real numbers, rounded to float32 as the CUDA twin receives them (a finite one that
    overflows float32 is refused). ``params`` override the kernel's tile parameters. Returns
    D (M, N) of the output type (float16 unless told). A problem whose arrays would not fit in this
    machine's memory raises `ProblemSizeError` before anything is allocated.

    ``checks`` ("raise", "warn" or "off"): what a race or an uninitialized shared read does
    (`tcsim.SimulationError` subclasses; docs/checks.md). A bad address always raises.

    A scaled kernel (kernel11, fp8) computes ``torch._scaled_mm``'s
    ``D = out_dtype(scale_a * scale_b * (A @ B))`` instead: A and B are
    ``ml_dtypes.float8_e4m3fn`` or ``float8_e5m2`` (their dtypes give ``inputs`` and
    ``inputs_b``), ``scale_a`` and ``scale_b`` one f32 value each (per tensor), ``out_dtype``
    float16, bfloat16 or float32; no C, alpha or beta (`tcsim.kernels.scaled`).
    """
    from . import kernel_named
    from .scaled import scaled_arguments

    kernel = kernel_named(kernel)
    scale = scales = None
    if kernel.scaled or (scale_a, scale_b, out_dtype) != (None, None, None):
        scale, params = scaled_arguments(kernel, A, B, C, alpha, beta, scale_a, scale_b,
                                         out_dtype, params)
        if isinstance(scale, tuple):  # row-wise: vectors in global memory
            scale, scales = None, tuple(np.ascontiguousarray(x) for x in scale)
        alpha = 1.0
    p = kernel.params(**params)
    kernel.check_epilogue(C, alpha, beta)
    if checks == "collect":
        raise ValueError("tcsim.run returns D: use checks='warn', or tcsim.trace(..., "
                         "checks='collect') to gather the problems")
    alpha, beta = (real_scalar(x, name, dtype=np.float32)
                   for x, name in ((alpha, "alpha"), (beta, "beta")))
    if scale is not None:  # the epilogue's one f32 factor (`tcsim.kernels.scaled.scaled_words`)
        alpha = scale
    return execute(kernel, p, *check_operands(kernel, p, A, B, C), alpha, beta, checks,
                   scales)


def check_operands(kernel: Kernel, p: GemmParams, A, B, C) -> tuple[np.ndarray, ...]:
    """A, B, C as matrices of the kernel's types and matching shapes the tiles divide (C
    None: zeros)."""
    A, B = _matrix("A", A, p.inputs), _matrix("B", B, p.b_inputs)
    (M, K), (K2, N) = A.shape, B.shape
    if K2 != K:
        raise ValueError(f"A is {M}x{K} but B is {K2}x{N}: B needs {K} rows")
    if C is not None:
        C = _matrix("C", C, p.output)
        if C.shape != (M, N):
            raise ValueError(f"C must be {M}x{N} (M x N), got {C.shape[0]}x{C.shape[1]}")
    p.check_problem(M, N, K, kernel.name)
    # A, B and C in one contiguous copy each (at worst), and D: refused before any of them.
    a, b, c = (p.element_bytes(x) for x in "ABC")
    workspace = workspace_bytes(p, M, N) if p.splits > 1 else 0  # split-K's partials
    check_memory(a * M * K + b * K * N + 2 * c * M * N + workspace,
                 f"{kernel.name} on M={M}, N={N}, K={K}", error=ProblemSizeError)
    return A, B, np.zeros((M, N), p.output_dtype) if C is None else C


def _matrix(name: str, x, dtype: str) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != DTYPES[dtype]:
        raise TypeError(f"{name} must be {DTYPES[dtype]} for this kernel (its {name} elements "
                        f"are {dtype}; bf16 is ml_dtypes.bfloat16, e4m3 and e5m2 "
                        f"ml_dtypes.float8_e4m3fn and float8_e5m2), got {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {x.shape}")
    return x


def execute(kernel, params: GemmParams, A, B, C, alpha: float, beta: float,
            checks: str = "raise", scales=None) -> np.ndarray:
    """Run ``kernel``'s schedule on every block; D (M, N) of the kernel's output type."""
    if params.b_k_major:  # fp8: B lies in memory N rows of K (cuBLAS's TN)
        B = B.T
    A, B, C = (np.ascontiguousarray(x) for x in (A, B, C))
    A, B, C = (x.view(np.dtype(f"u{x.itemsize}")) for x in (A, B, C))
    D = np.zeros_like(C)
    ex = Executor(kernel.name, params, A, B, C, D, np.float32(alpha), np.float32(beta), checks,
                  kernel.shared_bytes(params), scales)
    groups = block_units(params, ex.M, ex.N)
    acc_bytes = params.warps * params.warp_m * params.warp_n * (2 if params.accumulate == "f16"
                                                                else 4)
    local_bytes = params.threads * kernel.local_bytes(params)
    # temporaries are several times acc
    group = max(1, MAX_REGISTER_BYTES // (8 * acc_bytes + local_bytes))
    k_tiles = tile_count(ex.K, params.block_k)
    work = sum(rows.size * np.subtract(*k_range(k_tiles, params.splits, split)[::-1])
               for split, rows, _ in groups)  # K tiles of every tile (and split)
    label = f"tcsim.run {kernel.name} M={ex.M} N={ex.N} K={ex.K}"
    with progress(work, label) as tick:
        for split, rows, cols in groups:
            for start in range(0, rows.shape[0], group):
                ex.begin_blocks(rows[start:start + group], cols[start:start + group], split)
                ex.progress = _Share(tick, rows[start:start + group].size * ex.k_tile_count)
                kernel.issue(ex)
                ex.end_blocks()
                ex.progress.finish()
    if not ex.stored.all() and ex.report.mode != "off":
        missing = np.flatnonzero(~ex.stored)
        r, c = divmod(int(missing[0]), ex.N)
        ex.report(UnwrittenOutputError(
            f"{kernel.name}: the schedule stored nothing to {missing.size:,} of D's "
            f"{ex.M * ex.N:,} elements, the first at row {r}, column {c} (block tile "
            f"({r // params.block_m}, {c // params.block_n})): they would hold whatever the "
            f"GPU's memory held", site="D", element=(r, c), count=int(missing.size)))
    return D.view(params.output_dtype)


class _Share:
    """One group of blocks' share of a run's progress: its K tiles as the schedule steps
    through them (each role of a warp-specialized kernel walks the K loop: the furthest
    counts), never more than its share, and what is left when the group ends."""

    def __init__(self, tick, share: int) -> None:
        self.tick, self.left = tick, share
        self.walked: dict = {}  # role -> K tiles it has stepped through

    def step(self, role, done: int) -> None:
        before = max(self.walked.values(), default=0)
        self.walked[role] = self.walked.get(role, 0) + done
        self._credit(max(self.walked.values()) - before)

    def finish(self) -> None:
        self._credit(self.left)

    def _credit(self, done: int) -> None:
        done = min(done, self.left)
        if done > 0:
            self.left -= done
            self.tick(done)
