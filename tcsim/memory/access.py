"""Bank accounting of one warp-wide shared-memory access: wavefronts, ideal, conflicts.

Shared memory has 32 banks of 4 bytes; bank = (byte address // 4) % 32. The hardware serves a
warp's request in *phases* of at most 128 bytes of requested data, and each phase takes as many
*wavefronts* as the most distinct 4-byte words it needs from any one bank (lanes reading the
same word are served together: a broadcast). ``conflicts = wavefronts - ideal``, as Nsight
Compute counts them, where ``ideal`` is the wavefronts the same phases take without conflicts
(one each).

Phases by instruction (each rule measured with Nsight Compute on an H100; see
docs/bank-conflicts.md):

- ``ld/st.shared`` of 8, 16 or 32 bits per lane: the whole warp is one phase.
- 64 bits per lane (``.b64``, ``.v2.b32``): half-warps (lanes 0-15, 16-31), except a load
  whose quarter-warps each read one address, which is served as one phase.
- 128 bits per lane (``.v4.b32``, ``.v2.b64``): quarter-warps of 8 lanes, except such a
  uniform-quarter load, which goes by half-warps.
- ``ldmatrix`` / ``stmatrix`` ``.xN``: one phase per 8x8 matrix, from the 8 row addresses that
  lanes ``8i .. 8i+7`` supply (16 bytes each).
- ``cp.async`` (shared side of 4, 8 or 16 bytes): its writes depend on the global sources
  too; `tcsim.memory.async_copy` owns those rules.

A phase in which no lane takes part costs nothing. The ideal count is one wavefront per phase,
except for wide loads, where it is the requested bytes over 128, counted per group of lanes
(see `_phases`). This module owns the parsing of the PTX
spellings and the counting; `tcsim.memory.SharedMemory` applies it to every access it performs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from ..isa.validate import integer, integer_array
from .async_copy import bypass_copy, cached_copy
from .banks import BANK_BYTES, BANKS

WARP = 32
# The most shared memory one block can have on sm_90: 227 KB. Addresses are offsets in the
# block's shared-memory window, so none reaches this far.
SM90_BLOCK_LIMIT = 227 * 1024


class SharedMemoryError(ValueError):
    """A shared-memory access the hardware would reject, or addresses that are not addresses:
    misaligned, out of range, negative, or not integers (floats, NaN, bools, strings)."""


@dataclass(frozen=True)
class SharedInstruction:
    """A shared-memory instruction as the bank model sees it."""

    spelling: str
    kind: str  # "ld", "st", "ldmatrix", "stmatrix", "cp.async"
    bytes_per_address: int  # bytes each supplied address covers (a row for ldmatrix)
    address_lanes: tuple[tuple[int, ...], ...]  # lanes that supply addresses, per phase group
    matrices: int = 0  # ldmatrix/stmatrix .xN
    transpose: bool = False

    @property
    def is_store(self) -> bool:
        return self.kind in ("st", "stmatrix", "cp.async")

    @property
    def alignment(self) -> int:
        return self.bytes_per_address


_WIDTH = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "b32": 4, "u32": 4,
          "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}


def parse_instruction(spelling: str) -> SharedInstruction:
    """``"ld.shared.v4.b32"``, ``"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"``, ..."""
    if not isinstance(spelling, str):
        raise TypeError(f"a shared-memory instruction is a PTX spelling such as "
                        f"'ld.shared.b32', got {spelling!r}")
    return _parse_instruction(spelling)


@cache
def _parse_instruction(spelling: str) -> SharedInstruction:
    s = spelling.strip()
    parts = s.split(".")
    if parts[0] in ("ld", "st"):
        m = re.fullmatch(r"(ld|st)\.shared(?:::cta)?(?:\.v([24]))?\.(\w+)", s)
        if not m or m.group(3) not in _WIDTH:
            raise ValueError(
                f"{spelling!r}: expected ld.shared or st.shared with a type such as .b32, "
                f"optionally .v2/.v4 (for example 'ld.shared.v4.b32')"
            )
        width = _WIDTH[m.group(3)] * int(m.group(2) or 1)
        if width > 16:
            raise ValueError(f"{spelling!r}: {width} bytes per lane; at most 16 are possible")
        return SharedInstruction(s, m.group(1), width, _lane_phases(width))
    if parts[0] in ("ldmatrix", "stmatrix"):
        m = re.fullmatch(
            r"(ldmatrix|stmatrix)\.sync\.aligned\.m8n8\.x([124])(\.trans)?\.shared(?:::cta)?\.b16",
            s,
        )
        if not m:
            raise ValueError(
                f"{spelling!r}: expected {parts[0]}.sync.aligned.m8n8.x1|x2|x4[.trans].shared.b16"
            )
        n = int(m.group(2))
        lanes = tuple(tuple(range(8 * i, 8 * i + 8)) for i in range(n))
        return SharedInstruction(s, m.group(1), 16, lanes, matrices=n,
                                 transpose=bool(m.group(3)))
    if parts[0] == "cp":
        m = re.fullmatch(r"cp\.async\.(ca|cg)\.shared(?:::cta)?\.global(?:\.L2::\w+)?\.(4|8|16)", s)
        if not m or (m.group(1) == "cg" and m.group(2) != "16"):
            raise ValueError(
                f"{spelling!r}: expected cp.async.ca.shared.global.{{4,8,16}} or "
                f"cp.async.cg.shared.global.16 (the copy size as the last part)"
            )
        width = int(m.group(2))
        return SharedInstruction(s, "cp.async", width, _lane_phases(width))
    raise ValueError(
        f"{spelling!r}: not a shared-memory instruction tcsim models "
        f"(ld.shared, st.shared, ldmatrix, stmatrix, cp.async)"
    )


def _lane_phases(width: int) -> tuple[tuple[int, ...], ...]:
    per_phase = max(1, min(WARP, 128 // max(width, 4)))
    return tuple(tuple(range(p, p + per_phase)) for p in range(0, WARP, per_phase))


@dataclass(frozen=True, repr=False)
class Access:
    """The accounting of one warp-wide access. Its pictures are views: `tcsim.views` hangs
    ``heatmap()`` (words per phase and bank as text) and the notebook table on this class
    (models never import views; ``import tcsim`` imports them)."""

    instruction: str
    wavefronts: int
    ideal: int
    # words[phase][bank]: distinct 4-byte words the phase needs from each bank.
    words: np.ndarray
    # Set when the count falls outside what was measured to match the hardware.
    caveat: str | None = None

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    def __str__(self) -> str:
        text = (f"{self.instruction}: {self.wavefronts} wavefronts, ideal {self.ideal}, "
                f"{self.conflicts} bank conflicts")
        return text + (f" (caveat: {self.caveat})" if self.caveat else "")

    def __repr__(self) -> str:  # one line in a REPL too, not the words table
        return f"<Access {self}>"


def _as_addresses(addresses, instruction: str = "", site: str | None = None,
                  sources: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """32 lane addresses (None for a lane that supplies none) -> (int64, active), checked to
    be integers (not floats, bools or strings) and non-negative; `SharedMemoryError` names the
    first lane that is not. ``sources``: cp.async's global addresses, which every lane gives."""
    prefix = f"{instruction}{_at(site)}: " if instruction else ""
    plural, one = ("source addresses", "global source") if sources else ("addresses", "address")
    shape = addresses.shape if isinstance(addresses, np.ndarray) else None
    if shape is None:
        try:
            addresses = list(addresses)
        except TypeError:
            raise SharedMemoryError(f"{prefix}expected 32 lane {plural}, got "
                                    f"{addresses!r}") from None
        shape = (len(addresses),)
    if shape != (WARP,):
        raise SharedMemoryError(f"{prefix}expected 32 lane {plural}, got "
                                f"{shape[0] if len(shape) == 1 else 'shape ' + str(shape)}")
    what = f"{instruction} {plural}{_at(site)}" if instruction else plural
    return integer_array(addresses, what, optional=not sources,
                         name=lambda lane: f"lane {lane} {one}", error=SharedMemoryError,
                         type_error=SharedMemoryError)


def _at(site: str | None) -> str:
    return f" at site {site!r}" if site else ""


def check_addresses(inst: SharedInstruction, addr: np.ndarray, active: np.ndarray,
                    size: int | None = None, site: str | None = None) -> None:
    """Raise `SharedMemoryError` for a misaligned or out-of-range address, naming the lane.

    ``size``: the block's shared memory in bytes; by default the whole window one block can
    have (`SM90_BLOCK_LIMIT`)."""
    where = _at(site)
    limit = SM90_BLOCK_LIMIT if size is None else size
    misaligned = active & (addr % inst.alignment != 0)
    outside = active & (addr + inst.bytes_per_address > limit)
    bad = misaligned | outside
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])  # the first offending lane, as a debugger would stop
        a = int(addr[lane])
        if misaligned[lane]:
            raise SharedMemoryError(
                f"{inst.spelling}{where}: lane {lane} address {a:#x} is not aligned to "
                f"{inst.alignment} bytes"
            )
        memory = f"shared memory of {size} bytes" if size is not None else (
            f"the shared-memory window of {SM90_BLOCK_LIMIT} bytes (SM90_BLOCK_LIMIT, the most "
            f"one block can have; give size= for less)")
        raise SharedMemoryError(
            f"{inst.spelling}{where}: lane {lane} address {a:#x} (+{inst.bytes_per_address} "
            f"bytes) is outside {memory}"
        )


def _groups(size: int) -> list[range]:
    return [range(start, start + size) for start in range(0, WARP, size)]


def _uniform_quarters(addr: np.ndarray, active: np.ndarray) -> bool:
    """Whether the active lanes of every quarter-warp share one address."""
    for quarter in _groups(8):
        lanes = [lane for lane in quarter if active[lane]]
        if len(set(addr[lanes].tolist())) > 1:
            return False
    return True


def _phases(inst: SharedInstruction, addr, active) -> tuple[list[range], object]:
    """The lane groups served one after another, and how the ideal count is taken.

    Measured on the H100 (docs/bank-conflicts.md): 64- and 128-bit loads whose quarter-warps
    each read a single address are served a warp (64-bit) or a half-warp (128-bit) at a time;
    otherwise wide loads and stores go by half-warps (64-bit) and quarter-warps (128-bit).
    The ideal is one wavefront per phase ("phases") or, given lane groups, the sum over groups
    of the bytes requested over 128, groups of 256 bytes' worth of lanes (the whole warp at 64
    bits, half-warps at 128).
    """
    width = inst.bytes_per_address
    if inst.kind in ("ldmatrix", "stmatrix"):
        return [range(8 * i, 8 * i + 8) for i in range(inst.matrices)], "phases"
    ideal_groups = _groups(256 // width) if width > 4 else None
    if width <= 4:
        return _groups(WARP), "phases"
    if inst.kind == "ld" and _uniform_quarters(addr, active):
        return _groups(32 if width == 8 else 16), "phases"
    return _groups(16 if width == 8 else 8), ideal_groups if inst.kind == "ld" else "phases"


def access(instruction: str, addresses, *, size: int | None = None,
           site: str | None = None, sources=None) -> Access:
    """Wavefronts, ideal wavefronts and bank conflicts of one warp-wide access.

    ``addresses``: the 32 lanes' byte addresses in the block's shared memory, integers from 0
    up to ``size`` (by default the `SM90_BLOCK_LIMIT` bytes one block can have); a lane with
    None supplies none (for ldmatrix/stmatrix only lanes ``0 .. 8N-1`` supply row addresses,
    and each of them must). Floats (even whole ones), NaN, bools, strings and negative numbers raise
    `SharedMemoryError` naming the lane, as do misaligned or out-of-range addresses.
    ``sources``: for ``cp.async`` only, the lanes' global byte addresses (non-negative
    integers), which shape how the copy is written (`tcsim.memory.async_copy`); by default
    lane l copies from ``l * width``, a contiguous, 128-byte aligned range.
    """
    return _access(instruction, addresses, size, site, sources)[0]


def _access(instruction: str, addresses, size: int | None, site: str | None,
            sources) -> tuple[Access, np.ndarray, np.ndarray]:
    """`access`, and the lanes' checked addresses and active mask."""
    inst = parse_instruction(instruction)
    if size is not None:
        size = integer(size, "size", minimum=1, maximum=SM90_BLOCK_LIMIT,
                       why=" bytes (SM90_BLOCK_LIMIT)")
    addr, active = _as_addresses(addresses, inst.spelling, site)
    if inst.kind in ("ldmatrix", "stmatrix"):
        used = np.zeros(WARP, bool)
        used[: 8 * inst.matrices] = True
        if not active[used].all():  # a row with no address: the hardware reads one anyway
            lane = int(np.argmin(active[used]))
            raise SharedMemoryError(
                f"{inst.spelling}{_at(site)}: lane {lane} supplies no row address (None); "
                f"lanes 0..{8 * inst.matrices - 1} each give one row of the "
                f".x{inst.matrices} matrices")
        active = active & used
    check_addresses(inst, addr, active, size, site)
    if inst.kind == "cp.async":
        if sources is not None:
            sources, _ = _as_addresses(sources, inst.spelling, site, sources=True)
        return _copy_access(inst, addr, active, sources), addr, active
    if sources is not None:
        raise ValueError("sources (global addresses) apply to cp.async only")
    words_per_address = max(1, inst.bytes_per_address // BANK_BYTES)
    phases, ideal_rule = _phases(inst, addr, active)
    table = np.zeros((len(phases), BANKS), np.int64)
    for p, lanes in enumerate(phases):
        lanes = [lane for lane in lanes if active[lane]]
        if not lanes:
            continue
        first = addr[lanes] // BANK_BYTES
        words = (first[:, None] + np.arange(words_per_address)[None, :]).ravel()
        words = np.unique(words)  # lanes reading (or writing) the same word share it
        table[p] = np.bincount(words % BANKS, minlength=BANKS)
    wavefronts = int(table.max(axis=1).sum())
    if ideal_rule == "phases":
        ideal = int((table.max(axis=1) > 0).sum())
    else:
        ideal = sum(-(-int(active[list(g)].sum()) * inst.bytes_per_address // 128)
                    for g in ideal_rule)
    acc = Access(inst.spelling, wavefronts, ideal, table, _partial_caveat(inst, active))
    return acc, addr, active


PARTIAL_CAVEAT = ("64- and 128-bit ld.shared with partly active half- or quarter-warps: when the "
                  "hardware serves two of them together, and how Nsight Compute counts the ideal "
                  "then, is not fully modeled")


def _partial_caveat(inst: SharedInstruction, active: np.ndarray) -> str | None:
    """Sparse wide loads: exact in most measured cases, but not in all (docs/bank-conflicts.md)."""
    if inst.kind != "ld" or inst.bytes_per_address < 8:
        return None
    size = 16 if inst.bytes_per_address == 8 else 8
    counts = active.reshape(-1, size).sum(axis=1)
    return PARTIAL_CAVEAT if ((counts > 0) & (counts < size)).any() else None


def _copy_access(inst: SharedInstruction, addr, active, sources) -> Access:
    width = inst.bytes_per_address
    sources = width * np.arange(WARP) if sources is None else sources
    misaligned = active & (sources % width != 0)
    if misaligned.any():
        lane = int(np.flatnonzero(misaligned)[0])
        raise SharedMemoryError(f"{inst.spelling}: lane {lane} global source "
                                f"{int(sources[lane]):#x} is not aligned to {width} bytes")
    caveat = None
    if inst.spelling.startswith("cp.async.cg"):
        wavefronts, ideal, table = bypass_copy(addr, sources, active)
    else:
        wavefronts, ideal, table, caveat = cached_copy(width, addr, sources, active)
    words = np.array(table, np.int64).reshape(-1, BANKS)
    return Access(inst.spelling, wavefronts, ideal, words, caveat)
