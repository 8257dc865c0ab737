"""Choosing a kernel's tile shape for a problem: explain every candidate, take the fastest.

    choice = tcsim.choose_tile("kernel10", 1024, 1024, 1024)
    print(choice)            # each candidate in words, the chosen one marked
    choice.params            # {"block_m": 64}: the overrides for tcsim.run / tcsim.trace
    choice.explanation       # the chosen candidate's Explanation

A candidate is a label and the tile parameters it overrides (`TILE_VARIANTS` holds each
kernel's; ``candidates=`` gives others). Each is traced and explained on the problem
(`tcsim.perf.explain`), so the choice has the model's reasons: how many tiles the shape makes,
how many SMs they keep busy and in how many waves, and what limits each one. A candidate whose
tiles do not divide the problem is refused and says why; when none fits, `ProblemSizeError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .gpus import Gpu, MissingRateError
from .gpus import gpu as gpu_named
from .model import Explanation

# wgmma m64n256k16 on 128 x 256 tiles, two consumer warpgroups (the kernels' default), or on
# 64 x 256 tiles with one, which makes twice the tiles: more SMs busy on small and skinny
# problems, more L2 traffic per flop on large ones.
# 64 x 256 runs 5 stages, the most that fit beside one consumer's epilogue buffers (4 for
# 128 x 256); the deeper ring pays on the long-K skinny shapes its tiles are for.
WGMMA_TILES = {"128x256": {}, "64x256": {"block_m": 64, "stages": 5}}
# Narrower wgmma (m64n192k16, m64n128k16, m64n64k16): more tiles again, for problems whose
# 256-wide tiles leave SMs idle or a last wave mostly empty (1024^3 makes 32 tiles of 128 x 256
# for 132 SMs; 3072^3 makes 144, 384 of 128 x 192). Each consumer owns its tile's whole width.
# Their stages are the most that fit in shared memory beside the epilogue's buffers: a deeper
# ring hides more of TMA's round trip, which a narrow tile's short K step leaves exposed
# (docs/benchmarks.md: 64 x 128 at 512x4096x4096, 405 -> 560 TFLOP/s from 4 to 8 stages).
NARROW_TILES = {"128x192": {"block_n": 192, "warp_n": 192},
                "128x128": {"block_n": 128, "warp_n": 128, "stages": 6},
                "64x128": {"block_m": 64, "block_n": 128, "warp_n": 128, "stages": 8},
                "128x64": {"block_n": 64, "warp_n": 64, "stages": 8},
                # three consumers, 3 stages (cuBLAS's tile at 3072^3 and 3000^3): the fewest
                # operand bytes per flop, which pays where rows are not 128-byte aligned and
                # L2 serves TMA in more, smaller requests (3000^3: 413 -> 498 TFLOP/s)
                "192x192": {"block_m": 192, "block_n": 192, "warp_n": 192, "stages": 3},
                # 96 columns (B in 32-column boxes under the 64-byte swizzle): cuBLAS's tile
                # at 1536^3 (nvjet ..._192x96_64x5), 128 tiles for 132 SMs where 128 x 192
                # makes 96; 128 x 96 makes 4/3 the tiles of 128 x 128. The most stages that
                # fit beside kernel10's buffers: 5 (192 x 96), 7 (128 x 96).
                "192x96": {"block_m": 192, "block_n": 96, "warp_n": 96, "stages": 5},
                "128x96": {"block_n": 96, "warp_n": 96, "stages": 7}}
# kernel10 also splits K (`tcsim.kernels.split_k`): S times the blocks, each over 1/S of K,
# for f32 accumulators; the model charges the partials' trip through L2 and the reducer's
# wait for them. With f16 accumulators these candidates are set aside (`Choice.set_aside`).
# Split on the tiles that make few blocks on skinny or deep problems (128 x 128 split 2 was
# the fastest kernel10 at 128x8192x8192 and 256x4096x16384 on the H100).
SPLIT_K = (2, 3, 4)
SPLIT_TILES = {**WGMMA_TILES, "128x128": NARROW_TILES["128x128"]}
# Pairs of blocks in a cluster share B's tile by TMA multicast (`cluster_m`, persistent blocks
# only): L2 serves B once per pair, which pays where L2's read requests limit (rows off
# 128-byte lines: 192 x 192 at 3000^3, 501 -> 579 TFLOP/s on the H100).
CLUSTER_TILES = {"192x192 cluster 2": {**NARROW_TILES["192x192"], "cluster_m": 2}}
TILE_VARIANTS: dict[str, dict[str, dict]] = {
    "kernel7": {**WGMMA_TILES, **NARROW_TILES},
    **{name: {**WGMMA_TILES, **NARROW_TILES, **CLUSTER_TILES} for name in ("kernel8", "kernel9")},
    "kernel10": {**WGMMA_TILES, **NARROW_TILES, **CLUSTER_TILES,
                 **{f"{label} split {s}": {**tile, "splits": s}
                    for label, tile in SPLIT_TILES.items() for s in SPLIT_K}}}


@dataclass(frozen=True)
class Choice:
    """What `choose_tile` returns: the fastest candidate's ``label`` and parameter overrides
    (``params``), every fitting candidate's `Explanation` and the candidates ``refused`` (label
    -> why they cannot run the problem)."""

    kernel: str
    problem: tuple[int, int, int]
    label: str
    params: dict
    explanations: dict[str, Explanation]
    refused: dict[str, str]
    set_aside: tuple[str, ...] = ()  # default variants these parameters do not run (split-K)

    @property
    def explanation(self) -> Explanation:
        return self.explanations[self.label]

    def __str__(self) -> str:
        M, N, K = self.problem
        best = self.explanation
        lines = [f"{self.kernel} on M={M} N={N} K={K}, {best.gpu}: {self.label} tiles, "
                 f"predicted fastest of {len(self.explanations)}"]
        for label, e in self.explanations.items():
            mark = "->" if label == self.label else "  "
            lines.append(f"{mark} {label}: {_in_words(e)}")
        for label, why in self.refused.items():
            lines.append(f"   {label}: cannot run or explain this problem ({why})")
        if self.set_aside:
            lines.append(f"   ({len(self.set_aside)} split-K variants not weighed: they sum "
                         "f32 partials; give accumulate='f32', or --accumulate f32)")
        others = [e.seconds for label, e in self.explanations.items() if label != self.label]
        if others:
            lines.append(f"   {self.label} is predicted {min(others) / best.seconds:.2f}x as "
                         "fast as the next candidate")
        elif not self.refused and self.kernel not in TILE_VARIANTS:
            lines.append(f"   ({self.kernel} has no tile variants of its own: give them as "
                         "tcsim.choose_tile(kernel, M, N, K, candidates={label: overrides}))")
        return "\n".join(lines)


def choose_tile(kernel, M: int, N: int, K: int, *,
                candidates: Mapping[str, Mapping] | None = None,
                gpu: str | Gpu = "H100-SXM", registers: int | None = None,
                beta: float = 0.0, **params) -> Choice:
    """The tile variant of ``kernel`` (a `Kernel` or its name) that `explain` predicts fastest
    on (M, N, K). ``candidates``: label -> tile parameter overrides, by default the kernel's
    `TILE_VARIANTS` (a kernel without any has its own tiles as the one candidate); ``params``
    (accumulate=..., stages=...) apply to every candidate; ``beta`` as in `tcsim.trace`.
    kernel10's variants include split-K (``splits`` 2, 3, 4 on each tile), candidates with
    f32 accumulators only (`default_candidates`)."""
    from ..kernels import ProblemSizeError, kernel_named
    from ..trace import trace

    k = kernel_named(kernel)
    g = gpu_named(gpu)
    set_aside: tuple[str, ...] = ()
    if candidates is None:
        candidates = default_candidates(k, params)
        set_aside = tuple(label for label in TILE_VARIANTS.get(k.name, {})
                          if label not in candidates)
    if not isinstance(candidates, Mapping) or not candidates:
        raise ValueError(f"candidates must be a non-empty mapping of label -> tile parameters, "
                         f"got {candidates!r}")
    explanations, refused = {}, {}
    for label, overrides in candidates.items():
        if not isinstance(overrides, Mapping):
            raise TypeError(f"candidate {label!r}: tile parameters must be a mapping such as "
                            f"{{'block_m': 64}}, got {overrides!r}")
        try:
            t = trace(k, M, N, K, beta=beta, **{**params, **overrides})
        except ProblemSizeError as error:
            refused[label] = str(error)
            continue
        try:
            explanations[label] = t.explain(g, registers)
        except MissingRateError as error:  # a tile whose instruction has no measured rate
            refused[label] = str(error)
    if not explanations:
        raise ProblemSizeError(f"{k.name}: no candidate tile fits and can be explained at "
                               f"M={M} N={N} K={K}: "
                               + "; ".join(f"{label}: {why}" for label, why in refused.items()))
    best = min(explanations, key=lambda label: explanations[label].seconds)
    return Choice(k.name, (M, N, K), best, dict(candidates[best]), explanations, refused,
                  set_aside)


def default_candidates(kernel, params: Mapping) -> dict[str, dict]:
    """The kernel's `TILE_VARIANTS` (its own tiles when it has none); split-K's only with f32
    accumulators, the ones it runs with."""
    variants = TILE_VARIANTS.get(kernel.name)
    if not variants:
        return {_label(kernel.params(**params)): {}}
    f32 = params.get("accumulate", kernel.defaults.accumulate) == "f32"
    return {label: v for label, v in variants.items() if f32 or v.get("splits", 1) == 1}


def _label(p) -> str:
    return f"{p.block_m}x{p.block_n}"


def _in_words(e: Explanation) -> str:
    d = e.details
    busy, tiles = d["busy_sms"], d["tiles"]
    rounds = (f"{e.waves} wave{'s' if e.waves > 1 else ''}" if e.full_waves == e.waves else
              f"{e.waves} waves, the last {e.full_waves - e.waves + 1:.0%} full")
    if d.get("splits", 1) > 1:
        tiles = f"{tiles} tiles x {d['splits']} splits of K = {d['blocks']} blocks"
    else:
        tiles = f"{tiles} tiles"
    return (f"{tiles} over {busy} SMs ({rounds}) at {d['clock_hz'] / 1e9:.2f} GHz, "
            f"predicted {e.seconds * 1e3:.3f} ms ({e.tflops:.0f} TFLOP/s), limited by "
            f"{e.limiter}")
