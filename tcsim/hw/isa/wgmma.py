"""wgmma.mma_async on the GPU (sm_90a), with the signatures of `tcsim.wgmma` and
`tcsim.wgmma_regs`, plus where the operands sit in shared memory.

One warpgroup runs one instruction (tcsim/hw/isa/wgmma_probes.py says how). The host lays A (for
A from shared memory) and B out as `tcsim.memory.canonical_tile` does, K-major or, with a
transpose, MN-major, under the chosen swizzle; the probe copies the tiles' 16-byte chunks to
those offsets and issues the wgmma with the tiles' descriptors. Registers go through the
warpgroup fragment maps of `tcsim.isa.wgmma`, the tables the simulator reads.

Kernels: each (qualifier, A source) is compiled on its own from the generator's source for it
(`wgmma_probes.probe_kernel`). `prepare` compiles many at once on a thread pool (NVRTC releases
the GIL).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache

import numpy as np

from ...isa.wgmma import check_options, parse_wgmma, wgmma_fragment
from ...isa.wgmma.spec import WgmmaSpec
from ...memory.descriptors import DescriptorTile, SwizzleMode, canonical_tile
from .. import runtime
from ..launch import Launch, launch
from .wgmma_probes import _HEADER, probe_kernel, probe_name

ARCH = "sm_90a"
ALIGN = 1024  # the probe aligns its shared-memory window to the 128B swizzle's repeat
BATCH_BYTES = 1 << 28  # host and device bytes per launch


@dataclass(frozen=True)
class Staging:
    """Where one instruction's shared-memory operands go: the descriptors (for a window at
    address 0), the window offset of every 16-byte chunk, and for A and B the order in which
    the operand matrix's bytes fill those chunks."""

    desc_a: int
    desc_b: int
    chunk_offsets: np.ndarray  # uint32 (chunks,)
    a_order: np.ndarray | None  # byte indices into A's (64, K) bytes; None: A in registers
    b_order: np.ndarray  # byte indices into B^T's (N, K) bytes
    window_bytes: int
    tiles: tuple[DescriptorTile, ...]


def _chunks(tile: DescriptorTile) -> tuple[np.ndarray, np.ndarray]:
    """(window offsets of the tile's 16-byte chunks, the matrix bytes in chunk order)."""
    e = tile.element_bytes
    offsets = (tile.offsets[..., None] + np.arange(e)).ravel() + tile.start
    order = np.argsort(offsets, kind="stable")
    chunks = offsets[order].reshape(-1, 16)
    whole = np.array_equal(chunks, chunks[:, :1] + np.arange(16))
    if not whole or (chunks[:, 0] % 16).any():
        raise AssertionError("a canonical tile's bytes must fill whole 16-byte chunks")
    return chunks[:, 0].astype(np.uint32), order


def _swizzle_for(rows: int, element_bytes: int, major: str, swizzle: str | None) -> SwizzleMode:
    """The swizzle of one operand tile. An MN-major swizzled tile must be whole atoms along
    M/N; ``None`` picks 128B, or for such a tile the widest swizzle whose atoms it fills."""
    if swizzle is None:
        modes = [SwizzleMode.B128, SwizzleMode.B64, SwizzleMode.B32, SwizzleMode.NONE]
        fits = [m for m in modes if major == "K" or m is SwizzleMode.NONE
                or (rows * element_bytes) % m.width == 0]
        return fits[0]
    mode = SwizzleMode.parse(swizzle)
    if major == "MN" and mode is not SwizzleMode.NONE and (rows * element_bytes) % mode.width:
        raise ValueError(f"an MN-major operand of {rows} rows ({rows * element_bytes} bytes) is "
                         f"not whole {mode} swizzle atoms ({mode.width} bytes); choose a "
                         f"smaller swizzle, none, or swizzle=None to pick one")
    return mode


@cache
def staging(qualifier: str, a_source: str, trans_a: bool, trans_b: bool,
            swizzle: str | None = None) -> Staging:
    """The shared-memory plan of one instruction form (cached); ``swizzle`` as
    `_swizzle_for` takes it."""
    spec = parse_wgmma(qualifier)
    ea = spec.format("a").storage_bits // 8
    eb = spec.format("b").storage_bits // 8
    a_major, b_major = ("MN" if trans_a else "K"), ("MN" if trans_b else "K")
    ta = canonical_tile(spec.m, spec.k, ea, a_major, _swizzle_for(spec.m, ea, a_major, swizzle))
    b_start = -(-ta.nbytes // ALIGN) * ALIGN if a_source == "smem" else 0
    tb = canonical_tile(spec.n, spec.k, eb, b_major, _swizzle_for(spec.n, eb, b_major, swizzle),
                        start=b_start)
    b_offsets, b_order = _chunks(tb)
    if a_source == "smem":
        a_offsets, a_order = _chunks(ta)
        offsets, tiles = np.concatenate([a_offsets, b_offsets]), (ta, tb)
    else:
        offsets, a_order, tiles = b_offsets, None, (tb,)
    return Staging(ta.descriptors[0].encode(), tb.descriptors[0].encode(), offsets, a_order,
                   b_order, b_start + tb.nbytes, tiles)


# ---- kernels -----------------------------------------------------------------------------------

_compiled: set[tuple[str, str]] = set()


@cache
def probe_source(key: tuple[str, str]) -> str:
    """The CUDA text of the probe of (qualifier, A source) alone."""
    return _HEADER + probe_kernel(*key)


def _compile(key: tuple[str, str]) -> None:
    """Compile the probe kernel of (qualifier, A source) for sm_90a (once per process)."""
    runtime.function(probe_source(key), probe_name(parse_wgmma(key[0]), key[1]), arch=ARCH)
    _compiled.add(key)


def require_wgmma() -> None:
    """Raise `HardwareUnavailable` unless the GPU runs wgmma (sm_90a: H100, H200)."""
    runtime.require()
    cc = runtime.compute_capability()
    if cc != "90":
        raise runtime.HardwareUnavailable(f"wgmma.mma_async needs an sm_90a GPU (H100, H200); "
                                          f"this one is sm_{cc}")


def prepare(keys, threads: int | None = None) -> None:
    """Compile the probe kernels of (qualifier, A source) pairs at once, on a thread pool."""
    require_wgmma()
    import cupy

    device = cupy.cuda.Device().id
    todo = sorted({(parse_wgmma(q).qualifier, a) for q, a in keys} - set(_compiled))

    def one(key):
        with cupy.cuda.Device(device):
            _compile(key)

    try:
        with ThreadPoolExecutor(threads or min(16, os.cpu_count() or 1)) as pool:
            list(pool.map(one, todo))
    except Exception:  # should NVRTC or CuPy refuse threads, compile one at a time
        for key in todo:
            _compile(key)


# ---- running -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Batch:
    """One probe launch's inputs as the kernel takes them (host arrays): ``tiles`` uint8
    (count, chunks * 16), the 16-byte chunks of each instruction's operand tiles in window
    order; ``a`` A's registers (count, 128, 4) or None; ``c`` (count, 128, n) registers."""

    key: tuple[str, str]
    plan: Staging
    mode: int  # bit 0 scale-d, bits 1-4 negate A, negate B, transpose A, transpose B
    tiles: np.ndarray
    a: np.ndarray | None
    c: np.ndarray
    d_registers: int


def _bytes_of(bits: np.ndarray, n: int) -> np.ndarray:
    return np.ascontiguousarray(bits).view(np.uint8).reshape(n, -1)


def _batches(spec: WgmmaSpec, a, b, c, in_registers: bool, opts, swizzle):
    """The probe launches for a flat batch (host side only), each of at most BATCH_BYTES."""
    a_source = "registers" if in_registers else "smem"
    plan = staging(spec.qualifier, a_source, opts.trans_a, opts.trans_b, swizzle)
    mode = (opts.scale_d | (opts.scale_a == -1) << 1 | (opts.scale_b == -1) << 2
            | opts.trans_a << 3 | opts.trans_b << 4)
    nd = wgmma_fragment(spec, "d").registers
    per = 16 * plan.chunk_offsets.size + 4 * 128 * (c.shape[-1] + nd + 4)
    step = max(1, BATCH_BYTES // per)
    for s in range(0, c.shape[0], step):
        e = min(c.shape[0], s + step)
        bt = _bytes_of(np.swapaxes(b[s:e], -1, -2), e - s)[:, plan.b_order]
        parts = [bt] if in_registers else [_bytes_of(a[s:e], e - s)[:, plan.a_order], bt]
        yield Batch((spec.qualifier, a_source), plan, int(mode),
                     np.ascontiguousarray(np.concatenate(parts, axis=1)),
                     np.ascontiguousarray(a[s:e]) if in_registers else None,
                     np.ascontiguousarray(c[s:e]), nd)


def _run(batch: Batch) -> np.ndarray:
    """Launch one probe batch on the GPU: D's registers (count, 128, n)."""
    import cupy

    count = batch.c.shape[0]
    ga = batch.a if batch.a is not None else np.zeros(1, np.uint32)
    gd = cupy.empty((count, 128, batch.d_registers), cupy.uint32)
    plan = batch.plan
    launch(Launch(probe_source(batch.key), probe_name(parse_wgmma(batch.key[0]), batch.key[1]),
                  (count,), (128,),
                  [batch.tiles, plan.chunk_offsets, np.int32(plan.chunk_offsets.size),
                   np.uint64(plan.desc_a), np.uint64(plan.desc_b), ga, batch.c, gd,
                   np.int32(batch.mode)], shared_bytes=plan.window_bytes + ALIGN, arch=ARCH))
    return gd.get()


def wgmma_regs(qualifier: str, a: np.ndarray, B: np.ndarray, c: np.ndarray, *, scale_d=1,
               scale_a=1, scale_b=1, trans_a=False, trans_b=False,
               swizzle: str | None = None) -> np.ndarray:
    """One wgmma per instruction on the GPU, same contract as `tcsim.wgmma_regs`: ``a`` A's
    registers (uint32 (..., 128, 4), A from registers) or the matrix A (from shared memory),
    ``B`` the matrix B, ``c`` the accumulator registers. ``swizzle``: the shared-memory layout
    of the operands there, "128B", "64B", "32B" or "none"; None: 128B where the tile allows
    it (an MN-major tile must be whole swizzle atoms), else the widest that fits."""
    spec = parse_wgmma(qualifier)
    in_registers = np.asarray(a).dtype == np.uint32
    opts = check_options(spec, scale_d, scale_a, scale_b, trans_a, trans_b,
                         a_in_registers=in_registers)
    require_wgmma()
    fa, fc, fd = (wgmma_fragment(spec, op) for op in "acd")
    c = fc.check_registers(c)
    a = fa.check_registers(a) if in_registers else spec.format("a").to_bits(np.asarray(a))
    b = spec.format("b").to_bits(np.asarray(B))
    batch = np.broadcast_shapes(np.shape(a)[:-2], b.shape[:-2], c.shape[:-2])
    n = int(np.prod(batch, dtype=np.int64))
    a, b, c = (np.broadcast_to(x, batch + x.shape[-2:]).reshape((n,) + x.shape[-2:])
               for x in (a, b, c))
    d = [_run(batch) for batch in _batches(spec, a, b, c, in_registers, opts, swizzle)]
    d = np.concatenate(d) if d else np.empty((0, 128, fd.registers), np.uint32)
    return d.reshape(batch + (128, fd.registers))


def wgmma(qualifier: str, A: np.ndarray, B: np.ndarray, C: np.ndarray, *, scale_d=1,
          scale_a=1, scale_b=1, trans_a=False, trans_b=False, a_source: str = "smem",
          swizzle: str | None = None) -> np.ndarray:
    """``D = scale_d * C + (scale_a * A) @ (scale_b * B)`` computed by the GPU's wgmma; same
    contract as `tcsim.wgmma`. ``a_source``: "smem" (A read through a descriptor) or
    "registers"; ``swizzle``: the shared-memory layout of the operands there."""
    spec = parse_wgmma(qualifier)
    fa, fc, fd = (wgmma_fragment(spec, op) for op in "acd")
    if a_source not in ("smem", "registers"):
        raise ValueError(f"a_source must be 'smem' or 'registers', got {a_source!r}")
    a = fa.pack(A) if a_source == "registers" else fa.check_matrix(A)
    d = wgmma_regs(spec.qualifier, a, B, fc.pack(C), scale_d=scale_d, scale_a=scale_a,
                   scale_b=scale_b, trans_a=trans_a, trans_b=trans_b, swizzle=swizzle)
    return fd.unpack(d)


def shared_bytes(spec: WgmmaSpec | str, a_source: str = "smem", trans_a: bool = False,
                 trans_b: bool = False, swizzle: str | None = None) -> int:
    """Dynamic shared memory one probe block asks for."""
    q = spec.qualifier if isinstance(spec, WgmmaSpec) else parse_wgmma(spec).qualifier
    return staging(q, a_source, trans_a, trans_b, swizzle).window_bytes + ALIGN
