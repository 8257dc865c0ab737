"""The CUDA twin of a schedule, generated from the schedule itself (a user's `Kernel` too).

A built-in kernel's twin calls a template of ``gemm.cuh`` or is hand-written; a kernel of your
own has neither, so its twin is written here from what its schedule issues, for one problem
(parameters, M, N, K). The schedule runs on a `Recorder`: a `Machine` whose registers hold
ids instead of bits. Every register a load, ldmatrix, mma or the epilogue produces gets an id
that names one variable of the twin (the same name in every thread) and the thread it lives
in; schedules move registers with reshape, moveaxis and indexing only, so the ids a consuming
instruction receives say exactly which variable feeds each of its operand registers. Each
warp-wide instruction is recorded with its PTX spelling (the Machine's, which the tracer
counts) and every thread's address as a pattern plus a literal: the patterns, the distinct
per-thread vectors, sit in a ``__constant__`` table. So the twin issues the schedule's
instructions, at the schedule's addresses, in the schedule's order (but the epilogue's global
loads, arithmetic and stores, which go store by store: `_near_use`): its D bits are
`tcsim.run`'s and its Nsight Compute counters `tcsim.trace`'s. A K loop whose iterations issue
the same instructions (global coordinates a whole number of K tiles apart), or do so after its
first few (a pipeline filling its stages), stays a loop; another is unrolled.

What the generator needs, refused otherwise with `UnsupportedScheduleError` naming the site:
data stays in its thread (no value moves between lanes or warps); registers are only moved,
never computed on (the epilogue's ``f16(alpha * acc + beta * C)`` is the machine's
`Machine.epilogue_words`, which the twin issues as ``epilogue_pair``); every warp issues every
instruction (addresses shaped ``(warps, ..., 32)``, all lanes active); every block issues the
same instructions relative to its tile (checked on the grid's corners, edges' middles and
centre). The mma.sync family: ``ld.global``, ``st.global``, ``ld.shared``, ``st.shared``,
``cp.async`` with its groups, ``ldmatrix``, ``stmatrix``, ``mma.sync``, ``bar.sync``; and
Hopper's roles, mbarriers, TMA loads and wgmma (`tcsim.hw.kernels.hopper_twin` says how, and
what it refuses). TMA stores, WMMA, local memory and persistent blocks are refused, naming
`tcsim.hw.verify` for a twin written by hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ...isa.fragments import mma_fragment
from ...kernels.machine import CP_ASYNC, OFF, ST_SHARED, Machine
from .hopper_twin import HopperRecorder, HopperWriter, hopper_head, is_hopper
from .twin_stream import (  # noqa: F401 - UnsupportedScheduleError and Op are this module's API
    HAND_WRITTEN,
    WARP,
    Loop,
    Op,
    Role,
    UnsupportedScheduleError,
    flatten,
)

CONSTANT_BYTES = 64 * 1024  # __constant__ memory a module may hold
MAX_STEP = 8  # the most K tiles one step of a generated loop covers (a pipeline's stages)


class Recorder(HopperRecorder, Machine):
    """Runs a schedule on register ids and records its instructions (see the module
    docstring). ``patterns`` may be shared by recorders of several blocks, so that their
    streams compare as they are."""

    def __init__(self, kernel, params, M: int, N: int, K: int, beta: float = 0.0,
                 patterns: dict | None = None) -> None:
        super().__init__(kernel.name, params, M, N, K, "off", kernel.shared_bytes(params))
        self.beta = np.float32(beta)  # what the schedule sees (reads_c)
        self.kernel_object = kernel
        self.threads = WARP * params.warps  # the block's
        self.patterns = {} if patterns is None else patterns  # vector bytes -> index
        self.next_var = 1  # 0 is the zero register
        self.stream: list = []
        self.k = None  # the K tile of the loop iteration being recorded
        self.where: tuple = ()  # the last global access: (operand, k_tile, relative offsets)
        self._hopper_init()
        # where instructions go now (a loop iteration's list, a role's), and who issues them:
        # ``issuing_warps`` warps from thread ``first`` on (the block's, or a role's)
        self._enter(None)

    # ---- structure -----------------------------------------------------------------------

    def k_tiles(self, start: int = 0, stop: int | None = None) -> Iterator[int]:
        stop = self.k_tile_count if stop is None else stop
        if self.k is not None:
            raise self._refuse("", "a K loop inside a K loop")
        loop, outer = Loop(int(start)), self.body
        self.body.append(loop)
        try:
            for k in range(int(start), int(stop)):
                self.body, self.k = [], k
                loop.iterations.append(self.body)
                yield k
        finally:
            self.body, self.k = outer, None

    @contextmanager
    def lanes(self, mask) -> Iterator[None]:
        if not np.asarray(mask, bool).all():
            raise self._refuse("", "m.lanes(mask) with idle lanes (a predicated instruction)")
        yield

    def sync(self) -> None:
        if self.role is not None:
            raise self._refuse("", f"a bar.sync (m.sync) inside role {self.role.name!r}: "
                                   f"the other roles never reach it")
        self.body.append(Op("sync", spelling="bar.sync 0"))

    def commit_group(self) -> None:
        self.body.append(Op("commit", spelling="cp.async.commit_group",
                            warps=self.issuing_warps))

    def wait_group(self, pending: int) -> None:
        self.body.append(Op("wait", spelling="cp.async.wait_group", count=int(pending),
                            warps=self.issuing_warps))

    def zeros(self, *shape: int) -> np.ndarray:
        return np.zeros((1,) + shape, np.uint32)  # id 0: the zero register, in every thread

    def allocate_local(self, size: int) -> None:
        if size:
            raise self._refuse("", "local memory (allocate_local)")

    # ---- addresses -----------------------------------------------------------------------

    def global_elements(self, site, operand, rows, cols, k_tile, vector, clip=False):
        offsets = super().global_elements(site, operand, rows, cols, k_tile, vector, clip)
        if clip and (offsets == OFF).any():
            raise self._refuse(site, "lanes predicated off at the matrix's edge (a ragged "
                                     "shape): the generated twin moves every lane")
        p, row, col = self.params, int(self.block_rows[0]), int(self.block_cols[0])
        k_tile = int(k_tile) if operand in ("A", "B") else 0  # C and D have no K tiles
        ncols = self.shapes[operand][1]
        origin = {"A": row * p.block_m * ncols + k_tile * p.block_k,
                  "B": k_tile * p.block_k * ncols + col * p.block_n}.get(
            operand, row * p.block_m * ncols + col * p.block_n)
        self.where = (operand, k_tile, offsets[0] - origin)
        return offsets

    def _issues(self, site: str, what: str, values: np.ndarray) -> np.ndarray:
        """Per-thread values (warps, ..., 32) as (instructions, threads): one row per
        instruction a warp issues, the issuing threads along it."""
        values = np.asarray(values)
        w = self.issuing_warps
        if values.ndim < 2 or values.shape[0] != w or values.shape[-1] != WARP:
            whose = f" of role {self.role.name!r}" if self.role else ""
            raise self._refuse(site, f"{what} of shape {values.shape}: every warp{whose} "
                                     f"issues every instruction, so they must be shaped "
                                     f"(warps={w}, ..., 32)")
        return np.moveaxis(values.reshape(w, -1, WARP), 1, 0).reshape(-1, w * WARP)

    def _pattern(self, site: str, row: np.ndarray) -> tuple[int, int]:
        """(pattern index, literal) with ``row == pattern + literal`` thread by thread (the
        issuing threads'; 0 for the block's others)."""
        literal = int(row[0])
        pattern = np.zeros(self.threads, np.int64)
        pattern[self.first:self.first + row.size] = row.astype(np.int64) - literal
        if np.abs(pattern).max(initial=0) >= 2**31:
            raise self._refuse(site, "per-thread offsets that do not fit 32 bits")
        key = pattern.astype(np.int32).tobytes()
        return self.patterns.setdefault(key, len(self.patterns)), literal

    def _global_issues(self, site: str, shape=None) -> list[tuple[str, int, int, int]]:
        operand, k_tile, offsets = self.where
        offsets = offsets if shape is None else np.broadcast_to(offsets, shape)
        return [(operand, *self._pattern(site, row), k_tile)
                for row in self._issues(site, f"{operand} coordinates", offsets)]

    def _shared_issues(self, site: str, addresses) -> list[tuple[int, int]]:
        return [self._pattern(site, row)
                for row in self._issues(site, "shared addresses", addresses)]

    # ---- registers -----------------------------------------------------------------------

    def _produce(self, batch: tuple[int, ...], registers: int) -> tuple[np.ndarray, np.ndarray]:
        """New variables for instructions issued over ``batch`` (warps, ..., 32): the ids
        (1, *batch, registers) the schedule receives, and the variables (instructions,
        registers)."""
        tiles = batch[1:-1]
        count = int(np.prod(tiles, dtype=np.int64)) * registers
        if (self.next_var + count) * self.threads >= 2**32:
            raise self._refuse("", f"more than {2**32 // self.threads:,} registers in all "
                                   f"(a smaller K, or a loop the generator can keep)")
        variables = self.next_var + np.arange(count, dtype=np.int64).reshape(*tiles, registers)
        self.next_var += count
        thread = self.thread.reshape((batch[0],) + (1,) * len(tiles) + (WARP, 1))
        ids = variables[None, ..., None, :] * self.threads + thread
        return ids.astype(np.uint32)[None], variables.reshape(-1, registers)

    def _consume(self, site: str, what: str, ids, batch: tuple[int, ...]) -> np.ndarray:
        """The variables (instructions, registers) that feed an instruction issued over
        ``batch`` (warps, ..., 32), from the ids the schedule passes."""
        ids = np.asarray(ids)
        if ids.dtype.kind not in "ui":
            raise self._refuse(site, f"{what} of dtype {ids.dtype}: registers are computed on "
                                     f"(the twin only moves them)")
        registers = ids.shape[-1] if ids.ndim else 1
        try:
            ids = np.broadcast_to(ids, (1, *batch, registers))[0]
        except ValueError:
            raise self._refuse(site, f"{what} of shape {ids.shape} do not broadcast to the "
                                     f"instruction's (1, {', '.join(map(str, batch))}, "
                                     f"registers)") from None
        w = self.issuing_warps
        ids = ids.reshape(w, -1, WARP, registers).astype(np.int64)
        ids = ids.transpose(1, 3, 0, 2).reshape(-1, registers, w * WARP)  # (inst, reg, thread)
        var, thread = ids // self.threads, ids % self.threads
        zero = ids == 0
        bad = ~zero & ((var >= self.next_var) | (var == 0) | (ids > np.iinfo(np.uint32).max))
        moved = ~zero & ~bad & (thread != self.first + np.arange(w * WARP))
        mixed = var != var[..., :1]
        for problem, why in ((bad, "a value no instruction produced (arithmetic on registers)"),
                             (moved, "a register of another thread (a value moved between "
                                     "lanes or warps: the twin has no shuffles)"),
                             (mixed, "different registers in different threads")):
            if problem.any():
                i, r, t = (int(x[0]) for x in np.nonzero(problem))
                raise self._refuse(site, f"{what}: instruction {i} register {r} holds, in warp "
                                         f"{t // WARP} lane {t % WARP}, {why}")
        self._fresh(site, what, var[..., 0])
        return var[..., 0]

    # ---- instructions --------------------------------------------------------------------

    def _emit(self, ops) -> None:
        self.body.extend(replace(op, warps=self.issuing_warps) for op in ops)

    def _load_global(self, site, spelling, operand, offsets, vector):
        registers = vector * self.params.element_bytes(operand) // 4
        issues = self._global_issues(site)
        ids, out = self._produce(offsets.shape[1:], registers)
        self._emit(Op("ld_global", site, spelling, tuple(map(int, o)), glob=g)
                   for o, g in zip(out, issues))
        return ids

    def _store_global(self, site, spelling, operand, offsets, registers):
        issues = self._global_issues(site)
        inputs = self._consume(site, "registers", registers, offsets.shape[1:])
        self._emit(Op("st_global", site, spelling, ins=tuple(map(int, i)), glob=g)
                   for i, g in zip(inputs, issues))

    def _load_shared(self, site, spelling, addresses, width, active=None):
        if active is not None and not np.all(active):
            raise UnsupportedScheduleError(
                f"{self.kernel} site {site!r}: an ld.shared with lanes predicated off; the "
                f"CUDA twin generator needs every lane active; {HAND_WRITTEN}")
        issues = self._shared_issues(site, addresses)
        ids, out = self._produce(addresses.shape, width // 4)
        self._emit(Op("ld_shared", site, spelling, tuple(map(int, o)), shared=s)
                   for o, s in zip(out, issues))
        return ids

    def _store_shared(self, site, addresses, registers):
        issues = self._shared_issues(site, addresses)
        inputs = self._consume(site, "registers", registers, addresses.shape)
        self._emit(Op("st_shared", site, ST_SHARED, ins=tuple(map(int, i)), shared=s)
                   for i, s in zip(inputs, issues))

    def _copy_async(self, site, operand, offsets, addresses):
        shape = np.broadcast_shapes(offsets.shape[1:], addresses.shape)
        shared = self._shared_issues(site, np.broadcast_to(addresses, shape))
        self._emit(Op("cp_async", site, CP_ASYNC, shared=s, glob=g)
                   for s, g in zip(shared, self._global_issues(site, shape)))

    def _ldmatrix(self, site, spelling, addresses, rows):
        issues = self._shared_issues(site, addresses)
        ids, out = self._produce(addresses.shape, rows.shape[-1] // 8)
        self._emit(Op("ldmatrix", site, spelling, tuple(map(int, o)), shared=s)
                   for o, s in zip(out, issues))
        return ids

    def _stmatrix(self, site, spelling, addresses, rows, registers):
        issues = self._shared_issues(site, addresses)
        inputs = self._consume(site, "registers", registers, addresses.shape)
        self._emit(Op("stmatrix", site, spelling, ins=tuple(map(int, i)), shared=s)
                   for i, s in zip(inputs, issues))

    def _mma(self, site, a, b, c):
        q = self.params.qualifier
        batch = np.broadcast_shapes(*(np.shape(x)[:-2] for x in (a, b, c)))
        if len(batch) < 2 or batch[1] != self.issuing_warps:
            raise self._refuse(site, f"mma operands of batch shape {batch}: every warp issues "
                                     f"every instruction, so the warps axis (after the blocks "
                                     f"axis) must be {self.issuing_warps}")
        lanes = batch[1:] + (WARP,)
        ins = [self._consume(site, f"mma operand {op}", x, lanes).reshape(
            -1, mma_fragment(q, op).registers) for op, x in (("a", a), ("b", b), ("c", c))]
        ids, out = self._produce(lanes, mma_fragment(q, "d").registers)
        self._emit(Op("mma", site, "mma.sync.aligned." + q, tuple(map(int, o)),
                      tuple(map(int, (*ia, *ib, *ic))))
                   for o, ia, ib, ic in zip(out, *ins))
        return ids

    def epilogue_words(self, acc, c):
        """One ``epilogue_pair`` per f16 pair of D: variables from the accumulator's pair of
        elements and C's word."""
        acc, c = np.asarray(acc), np.asarray(c)
        pairs = c.shape[-2]
        batch = np.broadcast_shapes(acc.shape[:-2], c.shape[:-2])[1:] + (WARP,)
        acc_vars = self._consume("epilogue", "accumulators", acc, batch)  # (inst, regs)
        per_pair = acc_vars.shape[1] // pairs
        c_vars = self._consume("epilogue", "C's words", c[..., None], batch[:-1] +
                               (pairs, WARP))  # (inst * pairs, 1)
        ids, out = self._produce(batch[:-1] + (pairs, WARP), 1)
        self._emit(Op("epilogue", "epilogue", "epilogue_pair", (int(o[0]),),
                      (*map(int, acc_vars[i // pairs, i % pairs * per_pair:][:per_pair]),
                       int(cv[0])))
                   for i, (o, cv) in enumerate(zip(out, c_vars)))
        return ids[..., 0]

    # ---- what the generator refuses ------------------------------------------------------

    def _refuse(self, site: str, what: str) -> UnsupportedScheduleError:
        at = f" site {site!r}" if site else ""
        return UnsupportedScheduleError(
            f"{self.kernel}{at}: the CUDA twin generator cannot mirror {what}; {HAND_WRITTEN}")

    def _unsupported(family: str):  # noqa: N805 - a factory of methods
        def refuse(self, *args, **kwargs):
            raise self._refuse(args[0] if args and isinstance(args[0], str) else "", family)
        return refuse

    wmma_load_global = wmma_load_shared = _unsupported("WMMA (wmma.load)")
    wmma_store_global = wmma_store_shared = _unsupported("WMMA (wmma.store)")
    wmma_mma = _unsupported("WMMA (wmma.mma)")
    load_local = store_local = _unsupported("local memory (ld.local, st.local)")
    tma_store = _unsupported("TMA stores (cp.async.bulk.tensor to global memory)")
    bulk_commit = bulk_wait_read = _unsupported("bulk groups (cp.async.bulk.commit_group, "
                                                "wait_group.read)")
    _wmma_load = _wmma_store = _wmma_mma = _unsupported("WMMA")
    _load_local = _store_local = _unsupported("local memory")
    del _unsupported


def record(kernel, p, M: int, N: int, K: int, beta: float = 0.0,
           block: tuple[int, int] = (0, 0), patterns: dict | None = None) -> Recorder:
    """``kernel``'s schedule with parameters ``p`` recorded for the block at tile ``block``
    (row, column) of an (M, N, K) problem."""
    recorder = Recorder(kernel, p, M, N, K, beta, patterns)
    recorder.begin_blocks(np.array([block[0]]), np.array([block[1]]))
    kernel.issue(recorder)
    return recorder


@dataclass
class Program:
    """A schedule's instructions for one problem, as every block issues them."""

    kernel: object
    params: object
    problem: tuple[int, int, int]
    stream: list  # Op, Loop and Role
    patterns: list[np.ndarray]  # per-thread int32 vectors
    arrays: list = field(default_factory=list)  # wgmma accumulators (hopper_twin)
    accumulator_of: dict = field(default_factory=dict)  # variable -> (array, register)

    def executed(self) -> dict[str, int]:
        """Warp-level instructions executed by the whole grid, by PTX spelling (what the
        twin issues; `tcsim.trace` counts the same from the schedule)."""
        M, N, _ = self.problem
        grid_n, grid_m = self.params.grid(M, N)
        blocks = grid_m * grid_n
        out: dict[str, int] = {}
        for op in flatten(self.stream):
            out[op.spelling] = out.get(op.spelling, 0) + blocks * (op.warps or self.params.warps)
        return out


def program(kernel, M: int, N: int, K: int, beta: float = 0.0, **params) -> Program:
    """The instructions of ``kernel``'s schedule on an (M, N, K) problem (``params``
    override its tiles), checked to be the same for every block (`_program`)."""
    from ...kernels import kernel_named

    kernel = kernel_named(kernel)
    p = kernel.params(**params)
    M, N, K = p.check_problem(M, N, K, kernel.name)
    return _program(kernel, p, M, N, K, bool(np.float32(beta) != 0))


@lru_cache(maxsize=16)
def _program(kernel, p, M: int, N: int, K: int, reads_c: bool) -> Program:
    patterns: dict = {}
    grid_n, grid_m = p.grid(M, N)
    first = record(kernel, p, M, N, K, float(reads_c), (0, 0), patterns)
    if p.persistent_blocks or kernel.launch_shape(p, M, N) != (p.grid(M, N), (p.threads,)):
        raise UnsupportedScheduleError(
            f"{kernel.name}: the CUDA twin generator mirrors one block per tile of D, of "
            f"{p.threads} threads; not persistent blocks or another launch shape; "
            f"{HAND_WRITTEN}")
    # the grid's corners and one block inside stand for every block
    others = {(r, c) for r in {0, grid_m - 1, grid_m // 2} for c in {0, grid_n - 1, grid_n // 2}}
    for block in sorted(others - {(0, 0)}):
        other = record(kernel, p, M, N, K, float(reads_c), block, patterns)
        _same_blocks(kernel.name, first.stream, other.stream, block)
    vectors = [np.frombuffer(key, np.int32) for key in patterns]
    return Program(kernel, p, (M, N, K), first.stream, vectors, first.arrays,
                   first.accumulator_of)


def _same_blocks(name: str, first: list, other: list, block: tuple[int, int]) -> None:
    a, b = list(flatten(first)), list(flatten(other))
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            raise UnsupportedScheduleError(
                f"{name} site {x.site or y.site!r}: block {block} issues {y.spelling} "
                f"differently from block (0, 0) ({x.spelling}) at instruction {i}; the CUDA "
                f"twin generator needs every block to issue the same instructions relative to "
                f"its tile; {HAND_WRITTEN}")
    if len(a) != len(b):
        raise UnsupportedScheduleError(
            f"{name}: block {block} issues {len(b)} instructions, block (0, 0) {len(a)}; the "
            f"CUDA twin generator needs every block to issue the same; {HAND_WRITTEN}")


# ---- CUDA ------------------------------------------------------------------------------------


def entry_name(kernel) -> str:
    """The twin's ``extern "C"`` name: the kernel's, as a C identifier."""
    return "twin_" + re.sub(r"\W", "_", kernel.name)


def source(kernel, M: int, N: int, K: int, beta: float = 0.0, *, loops: bool = True,
           **params) -> str:
    """The CUDA text of ``kernel``'s generated twin for an (M, N, K) problem (``params``
    override its tiles; ``beta`` only as far as whether it is 0, which decides whether a
    schedule reads C). ``loops=False`` unrolls every K loop."""
    from ...kernels import kernel_named

    kernel = kernel_named(kernel)
    p = kernel.params(**params)
    M, N, K = p.check_problem(M, N, K, kernel.name)
    return _source(kernel, p, M, N, K, bool(np.float32(beta) != 0), loops)


def registers(kernel, M: int, N: int, K: int, beta: float = 0.0, *, arch: str = "sm_90",
              **params) -> int:
    """Registers per thread that ptxas gives ``kernel``'s generated twin for an (M, N, K)
    problem (nvcc needed; a twin with wgmma, TMA or mbarriers compiles for sm_90a): what
    ``Trace.explain(registers=...)`` takes for a kernel of your own, whose twin tcsim does not
    compile by itself (see docs/own-kernel.md, "Explain it")."""
    import tempfile
    from pathlib import Path

    from ...perf.occupancy import ptxas_registers

    text = source(kernel, M, N, K, beta, **params)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "twin.cu"
        path.write_text(text)
        found = ptxas_registers(str(path), entry_name(kernel),
                                "sm_90a" if '#include "hopper.cuh"' in text else arch)
    if found is None:
        raise ValueError(f"ptxas reported no register count for {entry_name(kernel)}")
    return found


@lru_cache(maxsize=16)
def _source(kernel, p, M: int, N: int, K: int, reads_c: bool, loops: bool) -> str:
    return _Writer(_program(kernel, p, M, N, K, reads_c), loops).text()


class _Writer(HopperWriter):
    """Writes a `Program` as CUDA: one variable per register, each instruction inline PTX
    (the Hopper instructions as calls of hopper.cuh's helpers: `hopper_twin`)."""

    def __init__(self, prog: Program, loops: bool) -> None:
        self.loops = loops
        self.p = prog.params
        self.names: dict[int, str] = {0: "0u"}
        for var, (array, j) in prog.accumulator_of.items():
            as_word = "__float_as_uint({})" if prog.arrays[array].ctype == "float" else "{}"
            self.names[var] = as_word.format(f"acc{array}[{j}]")
        self.lines: list[str] = []
        self.indent = "  "
        self.scope: list[Role | None] = [None]  # the role being written (None: the block)
        self.loop_count = 0
        self.prog = Program(prog.kernel, prog.params, prog.problem, _near_use(prog.stream),
                            prog.patterns, prog.arrays, prog.accumulator_of)
        self.uses = _uses(self.prog.stream)
        self.hopper = any(is_hopper(op) for op in flatten(self.prog.stream))

    def text(self) -> str:
        prog, p = self.prog, self.prog.params
        M, N, K = prog.problem
        threads = p.threads
        if len(prog.patterns) * threads * 4 > CONSTANT_BYTES:
            raise UnsupportedScheduleError(
                f"{prog.kernel.name}: {len(prog.patterns)} distinct per-thread address patterns "
                f"need {len(prog.patterns) * threads * 4:,} bytes of __constant__ memory, more "
                f"than its {CONSTANT_BYTES:,}; {HAND_WRITTEN}")
        if self.hopper:
            self.lines += self.declarations(None)
        self.items(prog.stream)
        table = ",\n".join("  {" + ", ".join(map(str, v)) + "}" for v in prog.patterns)
        maps = [name for name, _ in prog.kernel.tensor_maps(p, M, N, K)]
        parameters = "".join(f", const __grid_constant__ TensorMap tensor_{x}" for x in maps)
        head = [
            f"// CUDA twin of {prog.kernel.name}: {prog.kernel.summary}.",
            f"// Generated by tcsim.hw.kernels.schedule_twin from its schedule for M={M}, "
            f"N={N}, K={K},",
            f"// {p.as_dict()} (not committed).",
            *(hopper_head(p.output == "bf16") if self.hopper else ['#include "gemm_common.cuh"',
                                                                   ""]),
            f"__constant__ int tcsim_patterns[{max(1, len(prog.patterns))}][{threads}] = {{",
            table or "  {0}", "};", "",
            f'extern "C" __global__ void __launch_bounds__({threads}) '
            f"{entry_name(prog.kernel)}(GEMM_PARAMS{parameters}) {{"]
        if self.hopper:  # TMA writes 128-byte swizzled boxes where descriptors read them
            head += ["#ifdef TCSIM_HOPPER",
                     "  extern __shared__ __align__(1024) unsigned char tcsim_shared[];"]
        else:
            head += ["  extern __shared__ __align__(128) unsigned char tcsim_shared[];"]
        head += ["  const uint32_t smem = shared_address(tcsim_shared);",
                 "  const int t = threadIdx.x;"]
        if self.hopper:
            head.append("  const uint64_t desc_base = smem >> 4;  // a descriptor's address "
                        "field: bytes / 16")
        head += [*self.preload(), *self.bases()]
        tail = ["#else", '  asm volatile("trap;");  // TMA, mbarriers and wgmma need sm_90a',
                "#endif"] if self.hopper else []
        return "\n".join([*head, *self.lines, *tail, "}", ""])

    def preload(self) -> list[str]:
        """Each thread's patterns, read once into registers before anything else: read where
        they are used, the per-thread constant loads arrive while the block stores its tiles,
        and Nsight Compute counts shared-store conflicts that depend on timing (measured on the
        H100: kernel4's generated twin at 256x128x64 showed 48 to 101 such conflicts, and 0
        with this preamble). Volatile, so that the compiler cannot read them again later; a
        barrier after every thread has them."""
        patterns = self.prog.patterns
        lines = [f"  const int tp{i} = *(volatile const int*)&tcsim_patterns[{i}][t];"
                 for i in range(len(patterns))]
        if patterns:  # wait for them (a test on all of them that never holds), then go on
            folded = np.bitwise_xor.reduce(np.array(patterns), axis=0)
            never = int(np.setdiff1d(np.arange(len(folded) + 1), folded)[0])
            lines += [f"  if (({' ^ '.join(f'tp{i}' for i in range(len(patterns)))}) == "
                      f"{never}) asm volatile(\"trap;\");", "  __syncthreads();"]
        return lines

    def bases(self) -> list[str]:
        """Pointers to the block's tile of each operand the schedule touches."""
        p, (_, N, K) = self.p, self.prog.problem
        used = sorted({op.glob[0] for op in flatten(self.prog.stream)
                       if op.glob and op.kind != "tma_load"})
        origin = {"A": f"blockIdx.y * {p.block_m * K}LL", "B": f"blockIdx.x * {p.block_n}LL"}
        out = []
        for x in used:
            at = origin.get(x, f"(blockIdx.y * {p.block_m * N}LL + blockIdx.x * {p.block_n})")
            const = "" if x == "D" else "const "
            out.append(f"  {const}char* g{x} = ({const}char*){x} + "
                       f"{p.element_bytes(x)}LL * {at};")
        return out

    # ---- structure -----------------------------------------------------------------------

    def items(self, stream) -> None:
        for item in stream:
            if isinstance(item, Loop):
                self.loop(item)
            elif isinstance(item, Role):
                self.role(item)
            else:
                self.op(item, None)

    def role(self, role: Role) -> None:
        """A role's threads run its body; a role of one thread, on its first thread."""
        end = role.first + WARP * role.warps
        test = f"t < {end}" if not role.first else f"t >= {role.first} && t < {end}"
        outer = self.indent
        self.lines.append(f"{outer}if ({test}) {{  // role {role.name}")
        self.indent += "  "
        if role.registers:
            way, count = role.registers
            self.lines.append(f"{self.indent}setmaxnreg_{way}<{count}>();")
        self.scope.append(role)
        self.lines += self.declarations(role.first)
        if role.scope == "thread":
            self.lines.append(f"{self.indent}if (t == {role.first}) {{  // one thread issues "
                              f"all of it")
            self.indent += "  "
        self.items(role.body)
        if role.scope == "thread":
            self.indent = self.indent[:-2]
            self.lines.append(f"{self.indent}}}")
        self.scope.pop()
        self.indent = outer
        self.lines.append(f"{outer}}}")

    def declarations(self, role: int | None) -> list[str]:
        """The wgmma accumulator arrays a role (or the block) holds, zeros."""
        return [f"{self.indent}{a.ctype} acc{i}[{a.registers}] = {{}};"
                for i, a in enumerate(self.prog.arrays) if a.role == role]

    def scope_arrays(self) -> list[int]:
        role = self.scope[-1]
        first = role.first if role else None
        return [i for i, a in enumerate(self.prog.arrays) if a.role == first]

    def scope_first(self) -> int:
        role = self.scope[-1]
        return role.first if role else 0

    # ---- loops ---------------------------------------------------------------------------

    def loop(self, loop: Loop) -> None:
        """A K loop as a CUDA loop over ``step`` K tiles at a time, after the first ``peel``
        iterations, which differ (a pipeline filling its stages), or unrolled."""
        found = None
        for peel in range(min(MAX_STEP, len(loop.iterations)) + 1) if self.loops else ():
            rest = Loop(loop.start + peel, loop.iterations[peel:])
            for step in range(1, MAX_STEP + 1):
                plan = _loop_plan(id(loop), rest, self.uses, step, peel)
                if plan:
                    found = peel, step, rest, plan
                    break
            if found:
                break
        if not found:
            self.unrolled(loop.start, loop.iterations)
            return
        peel, step, rest, (positions, carried, steps) = found
        self.unrolled(loop.start, loop.iterations[:peel])
        number, self.loop_count = self.loop_count, self.loop_count + 1
        indent = self.indent
        body_names = {var: f"b{number}_{q}" for var, q in positions[0].items()}
        if body_names:
            self.lines.append(f"{indent}uint32_t {', '.join(body_names.values())};")
        # a value one step hands the next: its own variable, set at the end of the body
        carry_names = {}
        for outer, q in carried.values():
            if (outer, q) not in carry_names:
                carry_names[outer, q] = f"c{number}_{len(carry_names)}"
                self.lines.append(f"{indent}uint32_t {carry_names[outer, q]} = "
                                  f"{self.name(outer)};")
        end = rest.start + len(steps) * step
        advance = f"k += {step}" if step > 1 else "k++"
        self.lines.append(f"{indent}for (int k = {rest.start}; k < {end}; {advance}) {{")
        self.indent += "  "
        inner = dict(body_names)
        for j, op in enumerate(steps[0]):
            reads = [carry_names[carried[j, s]] if (j, s) in carried else
                     inner.get(v) or self.name(v) for s, v in enumerate(op.ins)]
            self.op(op, rest.start, reads, [inner[v] for v in op.outs])
        by_q = {q: name for name, q in ((body_names[v], q) for v, q in positions[0].items())}
        for (_, q), name in carry_names.items():
            self.lines.append(f"{self.indent}{name} = {by_q[q]};")
        self.indent = indent
        self.lines.append(f"{indent}}}")
        for var, q in positions[-1].items():  # after the loop: its last step's values
            self.names[var] = by_q[q]
        self.unrolled(end, rest.iterations[end - rest.start:])  # what whole steps leave

    def unrolled(self, start: int, iterations: list[list]) -> None:
        for i, body in enumerate(iterations):
            self.lines.append(f"{self.indent}// K tile {start + i}")
            self.items(body)

    # ---- instructions --------------------------------------------------------------------

    def name(self, var: int) -> str:
        return self.names.get(var) or self.names.setdefault(var, f"v{var}")

    def op(self, op: Op, k_start, reads=None, writes=None) -> None:
        indent = self.indent
        reads = reads if reads is not None else [self.name(v) for v in op.ins]
        if writes is None:
            writes = [self.name(v) for v in op.outs]
            if writes:
                self.lines.append(f"{indent}uint32_t {', '.join(writes)};")
        statement = self.hopper_statement(op, k_start) if is_hopper(op) else \
            self.statement(op, reads, writes, k_start)
        guard = None if self.scope[-1] and self.scope[-1].scope == "thread" else \
            {"thread": f"t == {self.scope_first()}", "lane0": "t % 32 == 0"}.get(op.issuer)
        self.lines.append(f"{indent}if ({guard}) {statement}" if guard else indent + statement)

    def statement(self, op: Op, reads: list[str], writes: list[str], k_start) -> str:
        kind, sp = op.kind, op.spelling
        if kind == "sync":
            return "__syncthreads();"
        if kind == "commit":
            return 'asm volatile("cp.async.commit_group;" ::: "memory");'
        if kind == "wait":
            return f'asm volatile("cp.async.wait_group {op.count};" ::: "memory");'
        if kind == "epilogue":
            *acc, c = reads
            if self.p.accumulate == "f16":
                x0, x1 = f"f16_to_f32({acc[0]} & 0xffffu)", f"f16_to_f32({acc[0]} >> 16)"
            else:
                x0, x1 = (f"__uint_as_float({a})" for a in acc)
            return f"{writes[0]} = epilogue_pair({x0}, {x1}, {c}, alpha, beta);"
        if kind == "mma":
            counts = [mma_fragment(self.p.qualifier, x).registers for x in "abc"]
            d = len(writes)
            groups, at = [_braces(range(d))], d
            for n in counts:
                groups.append(_braces(range(at, at + n)))
                at += n
            outs = ", ".join(f'"=r"({w})' for w in writes)
            ins = ", ".join(f'"r"({r})' for r in reads)
            return f'asm volatile("{sp} {", ".join(groups)};" : {outs} : {ins});'
        shared = self.shared_address(op) if op.shared else None
        glob = self.global_address(op, k_start) if op.glob else None
        if kind == "cp_async":
            return (f'asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: '
                    f'"r"({shared}), "l"({glob}) : "memory");')
        address = f'"r"({shared})' if shared else f'"l"({glob})'
        vector = kind in ("ldmatrix", "stmatrix")  # always a {list}
        if writes:  # loads: ld.global, ld.shared, ldmatrix
            outs = ", ".join(f'"=r"({w})' for w in writes)
            regs = _braces(range(len(writes))) if vector or len(writes) > 1 else "%0"
            return (f'asm volatile("{sp} {regs}, [%{len(writes)}];" : {outs} : {address} : '
                    f'"memory");')
        regs = _braces(range(1, len(reads) + 1)) if vector or len(reads) > 1 else "%1"
        ins = ", ".join(f'"r"({r})' for r in reads)
        return f'asm volatile("{sp} [%0], {regs};" :: {address}, {ins} : "memory");'

    @staticmethod
    def shared_address(op: Op) -> str:
        pattern, literal = op.shared
        return f"smem + (uint32_t)(tp{pattern} + {literal})"

    def global_address(self, op: Op, k_start) -> str:
        operand, pattern, literal, k_tile = op.glob
        p, N = self.p, self.prog.problem[1]
        stride = {"A": p.block_k, "B": p.block_k * N}.get(operand, 0)
        if k_start is None or not stride:
            k = f" + {literal + k_tile * stride}LL"
        else:  # in a loop: the K tile is k plus the distance the schedule gave
            shift = k_tile - k_start
            k = f" + {literal}LL + (long long)(k{f' + {shift}' if shift else ''}) * {stride}"
        return (f"g{operand} + {p.element_bytes(operand)}LL * "
                f"((long long)tp{pattern}{k})")



def _near_use(stream) -> list:
    """``stream`` with each run of epilogue instructions (global loads through L1, the
    epilogue's arithmetic, global stores) issued store by store, each after the loads and
    arithmetic it needs, as the hand-written twins do. The same instructions at the same
    addresses; but a burst of L1-cached loads with no store between lets ptxas hoist them
    above the block's last shared-memory reads, and their L1 fills, arriving while other
    warps read, show in Nsight Compute as bank conflicts of those reads (measured on the
    H100: kernel4's generated twin, f32, 512x256x320: 25 of them)."""
    out: list = []
    run: list[Op] = []

    def flush() -> None:
        producers = {v: op for op in run for v in op.outs}
        done: set[int] = set()
        ordered: list[Op] = []

        def emit(op: Op) -> None:
            for v in op.ins:
                if v in producers and id(producers[v]) not in done:
                    emit(producers[v])
            done.add(id(op))
            ordered.append(op)

        for op in run:
            if op.kind == "st_global":
                emit(op)
        out.extend(ordered + [op for op in run if id(op) not in done])
        run.clear()

    for item in stream:
        cached_load = isinstance(item, Op) and item.kind == "ld_global" and \
            ".cg" not in item.spelling
        if cached_load or (isinstance(item, Op) and item.kind in ("epilogue", "st_global")):
            run.append(item)
        else:
            flush()
            out.append(replace(item, body=_near_use(item.body)) if isinstance(item, Role)
                       else item)
    flush()
    return out


def _braces(numbers) -> str:
    return "{" + ", ".join(f"%{i}" for i in numbers) + "}"


def _uses(stream, out: dict | None = None) -> dict[int, set]:
    """variable -> the places that read it: (id of its loop, iteration) or (None, None)."""
    out = {} if out is None else out
    for item in stream:
        if isinstance(item, Role):
            _uses(item.body, out)
            continue
        bodies = enumerate(item.iterations) if isinstance(item, Loop) else [(None, [item])]
        for i, body in bodies:
            for op in body:
                for v in op.ins:
                    out.setdefault(v, set()).add((id(item) if i is not None else None, i))
    return out


def _loop_plan(number: int, loop: Loop, uses: dict, step: int = 1, peel: int = 0):
    """How to write ``loop`` as a CUDA loop over ``step`` K tiles at a time (a pipeline's
    stages rotate, so its iterations repeat every ``stages``), or None when those steps
    differ: the steps' instructions, each step's variables by position, and the reads that
    one step hands the next ((instruction, slot) -> (the variable read in the first step, the
    position the previous step wrote it at)). Iterations after the last whole step are left
    to be unrolled. ``loop`` holds the iterations of loop ``number`` (its id in ``uses``)
    after its first ``peel``."""
    n = len(loop.iterations) // step
    if n < 2:
        return None
    iterations = [[op for body in loop.iterations[i * step:(i + 1) * step] for op in body]
                  for i in range(n)]
    positions = []
    for body in iterations:
        where: dict[int, int] = {}
        for op in body:
            for v in op.outs:
                where[v] = len(where)
        positions.append(where)

    def shape(i: int) -> list:
        here, k = positions[i], loop.start + i * step
        out = []
        for op in iterations[i]:
            glob = op.glob and (*op.glob[:3], op.glob[3] - k)
            ins = tuple(("L", here[v]) if v in here else ("X",) for v in op.ins)
            out.append((op.kind, op.site, op.spelling, op.shared, glob, op.count, len(op.outs),
                        ins, op.args, op.issuer))
        return out

    reference = shape(0)
    if any(shape(i) != reference for i in range(1, n)):
        return None
    carried = {}
    for j, op in enumerate(iterations[0]):
        for s, x in enumerate(op.ins):
            if reference[j][7][s] != ("X",):
                continue
            later = [iterations[i][j].ins[s] for i in range(1, n)]
            if all(v == x for v in later):
                continue  # the same value every step
            qs = {positions[i - 1].get(v) for i, v in zip(range(1, n), later)}
            if len(qs) != 1 or None in qs:
                return None
            carried[j, s] = (x, qs.pop())
    for i, where in enumerate(positions):  # values read outside their step
        for v in where:
            for loop_number, iteration in uses.get(v, ()):
                inside = loop_number == number and peel <= iteration < peel + n * step
                if inside and (iteration - peel) // step in (i, i + 1):
                    continue
                if inside or i != n - 1:
                    return None
    return positions, carried, iterations


def launch(kernel, p, A, B, C, D, alpha: float = 1.0, beta: float = 0.0, label: str = ""):
    """The `tcsim.hw.launch.Launch` of ``kernel``'s generated twin with parameters ``p`` on
    the arrays given as they are (see `tcsim.hw.kernels.twin.device_launch`)."""
    from ..launch import Launch

    (M, K), N = A.shape, B.shape[1]
    M, N, K = p.check_problem(M, N, K, kernel.name)
    reads_c = bool(np.float32(beta) != 0)
    text = _source(kernel, p, M, N, K, reads_c, True)
    # wgmma, TMA and mbarriers exist on sm_90a only, whatever the kernel declares
    hopper = any(is_hopper(op) for op in flatten(_program(kernel, p, M, N, K, reads_c).stream))
    return Launch(text, entry_name(kernel), p.grid(M, N), (p.threads,),
                  [A, B, C, D, float(alpha), float(beta), M, N, K],
                  label or f"{kernel.name} (generated twin)", {}, kernel.shared_bytes(p),
                  "sm_90a" if hopper else kernel.arch, tuple(kernel.tensor_maps(p, M, N, K)))
