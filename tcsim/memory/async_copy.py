"""The shared-memory side of ``cp.async``: how its writes form wavefronts, from global sources.

A ``cp.async`` lane copies 4, 8 or 16 bytes from a global address to a shared one, so where
the data comes from shapes how it is written. Both rules below were fitted to Nsight Compute
on an H100 (sm_90) with one-warp probes that vary the shared and the global addresses
independently (``scripts/study_cp_async.py``; docs/bank-conflicts.md has the evidence).

``cp.async.ca`` (through L1; the hardware counters ``l1tex__data_pipe_lsu_wavefronts_mem_shared``
and ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts``):

- The L1 tag stage takes the request's 128-byte global lines at most four at a time, in the
  order their first lane appears (a *pass*). Lanes are also split into groups of 128 bytes'
  worth (the whole warp at 4 bytes, half-warps at 8, quarter-warps at 16). Each (group, pass)
  is written separately; the ideal is one wavefront for each.
- Within one, lanes are gathered into *phases*: first-fit in lane order, where two lanes clash
  if their global words share a bank (even the same word: no broadcast on this side).
- The phases are pipelined: phase p starts one cycle after phase p-1's first write; a lane
  writes at the first cycle from its phase's start at which none of its banks is taken. Lanes
  writing the same shared word still take a cycle each. The wavefronts are the cycles used.
- Exact on all 935 measured patterns with one phase per pass, or with several phases whose
  writes do not collide in a bank. When several phases' writes collide, the overlap is only
  partly understood (144 of 174 such probes exact): the result carries a caveat. So it does
  when a pass holds non-consecutive lines: lines that collide in L1's sets (an undocumented
  address hash) take extra tag passes, which this rule does not predict.

``cp.async.cg`` (L1 bypass, 16 bytes; only the SASS-level counters
``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts_cache_bypass`` see it):

- Identical destinations are written once. Lanes are grouped by (global line, shared 128-byte
  segment); the ideal equals the wavefronts (the conflict counter stayed 0).
- In a group, a wavefront moves whole 32-byte global sectors: it maps the line's four sectors
  onto the segment's four by a rotation or reflection of the cycle 0-1-2-3, flips the 16-byte
  halves uniformly or not at all, and takes sectors that use the same halves (both, the low
  or the high one). Lanes reading one sector travel together when they can.
- The wavefronts of a group are the fewest such moves that cover it.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import product

import numpy as np

from .banks import BANKS, banks, words

LINE = 128  # bytes in a global line and in a shared bank row
LINES_PER_PASS = 4
SET_CONFLICT_CAVEAT = ("cp.async.ca reads non-consecutive 128-byte lines in one tag pass: L1 "
                       "set conflicts can add passes (and wavefronts) that tcsim does not model")
OVERLAP_CAVEAT = ("cp.async.ca phases (global reads that clash) write colliding shared banks: "
                  "how such phases overlap is only partly modeled")


def cached_copy(width: int, shared: np.ndarray, sources: np.ndarray, active: np.ndarray):
    """``cp.async.ca``: (wavefronts, ideal, per-phase bank words, caveat or None)."""
    lanes = np.flatnonzero(active)
    lines = sources // LINE
    order = list(dict.fromkeys(int(line) for line in lines[lanes]))  # by first lane
    pass_of = {line: i // LINES_PER_PASS for i, line in enumerate(order)}
    per_group = LINE // width
    wavefronts = ideal = 0
    table, caveat = [], None
    for start in range(0, 32, per_group):
        passes = defaultdict(list)
        for lane in lanes[(lanes >= start) & (lanes < start + per_group)]:
            passes[pass_of[int(lines[lane])]].append(int(lane))
        for p in sorted(passes):
            cycles, phases = _pipelined(passes[p], width, shared, sources)
            per_bank = np.bincount([w % BANKS for lane in passes[p]
                                    for w in words(int(shared[lane]), width)], minlength=BANKS)
            if phases > 1 and per_bank.max() > 1:
                caveat = OVERLAP_CAVEAT
            wavefronts += cycles
            ideal += 1
            table.append(per_bank)
    runs = [order[i:i + LINES_PER_PASS] for i in range(0, len(order), LINES_PER_PASS)]
    if not all(max(run) - min(run) == len(run) - 1 for run in runs):
        caveat = SET_CONFLICT_CAVEAT
    return wavefronts, ideal, table, caveat


def _pipelined(lanes: list[int], width: int, shared, sources) -> tuple[int, int]:
    """(cycles, phases) of one (group, pass): phases by global bank clashes, pipelined writes."""
    phases: list[tuple[list[int], set[int]]] = []  # (lanes, global banks they read)
    for lane in lanes:
        read = banks(int(sources[lane]), width)
        for phase, taken in phases:
            if not read & taken:
                phase.append(lane)
                taken |= read
                break
        else:
            phases.append(([lane], set(read)))
    busy: dict[int, set[int]] = defaultdict(set)  # bank -> cycles it is written
    start, last = 0, -1
    for phase, _ in phases:
        first = None
        for lane in phase:
            written = banks(int(shared[lane]), width)
            cycle = start
            while any(cycle in busy[b] for b in written):
                cycle += 1
            for b in written:
                busy[b].add(cycle)
            first = cycle if first is None else min(first, cycle)
            last = max(last, cycle)
        start = first + 1
    return last + 1, len(phases)


def bypass_copy(shared: np.ndarray, sources: np.ndarray, active: np.ndarray):
    """``cp.async.cg`` of 16 bytes: (wavefronts, ideal, per-group bank words)."""
    groups: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    written = set()
    for lane in np.flatnonzero(active):
        s, g = int(shared[lane]), int(sources[lane])
        if s in written:  # an identical destination is written once
            continue
        written.add(s)
        groups[(g // LINE, s // LINE)].append(((g % LINE) // 16, (s % LINE) // 16))
    wavefronts = sum(_fewest_moves(chunks) for chunks in groups.values())
    table = [np.bincount([w % BANKS for _, d in chunks for w in words(16 * d, 16)],
                         minlength=BANKS) for chunks in groups.values()]
    return wavefronts, wavefronts, table


# A move maps sector s of the line to sector (sign * s + shift) % 4 of the segment and the
# 16-byte half h to h ^ flip.
_MOVES = list(product((1, -1), range(4), (0, 1)))


def _one_move(chunks: list[tuple[int, int]]) -> bool:
    """Whether one wavefront can write these (source chunk, destination chunk) pairs."""
    halves = defaultdict(set)
    for src, _ in chunks:
        halves[src >> 1].add(src & 1)
    if len({frozenset(h) for h in halves.values()}) > 1:
        return False
    return any(all(dst >> 1 == (sign * (src >> 1) + shift) % 4 and dst & 1 == (src & 1) ^ flip
                   for src, dst in chunks) for sign, shift, flip in _MOVES)


def _fewest_moves(chunks: list[tuple[int, int]]) -> int:
    """The fewest wavefronts covering a group: an exact set cover over its sector units."""
    by_sector = defaultdict(list)
    for pair in chunks:
        by_sector[pair[0] >> 1].append(pair)
    units = []
    for pairs in by_sector.values():  # a sector's lanes travel together when one move fits
        units += [pairs] if _one_move(pairs) else [[p] for p in pairs]
    n = len(units)
    fits = [_one_move([p for i in range(n) if m >> i & 1 for p in units[i]])
            for m in range(1 << n)]
    best = [0] + [n] * ((1 << n) - 1)
    for m in range(1, 1 << n):
        low, sub = m & -m, m
        while sub:  # subsets holding the lowest unit, so each cover is counted once
            if sub & low and fits[sub]:
                best[m] = min(best[m], best[m ^ sub] + 1)
            sub = (sub - 1) & m
    return best[-1]
