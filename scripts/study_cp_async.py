"""Study: cp.async's shared-side wavefronts against Nsight Compute, global and shared varied.

    python scripts/study_cp_async.py OUT.jsonl [--seed S] [--deadline SECONDS] [--only ca|cg]

One warp, one cp.async (tcsim/hw/smem_probes.cu): lane l writes shared byte ``shared[l]`` from
global byte ``SMEM_BYTES + source[l]`` of the source buffer. The patterns vary both sides on
purpose (pairs of lanes, one 128-byte global line into various shared places, permuted sources,
duplicates, random sets), to find the rule behind the cases notes/cp-async-counters.md lists.
Every ldgsts counter this ncu offers is recorded, one JSON line per pattern.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time

import numpy as np

from tcsim.hw.launch import Launch
from tcsim.hw.profile import find_ncu, profile
from tcsim.hw.smem_probes import SMEM_BYTES, probe_launch

GLOBAL_BYTES = 1024 * 1024
BASE_METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
)


def ldgsts_metrics() -> tuple[str, ...]:
    """Every counter whose name mentions ldgsts and that counts wavefronts or conflicts."""
    text = subprocess.run([find_ncu(), "--query-metrics", "--chip", "gh100"],
                          capture_output=True, text=True).stdout
    names = sorted({m.group(0) for m in re.finditer(r"\S*ldgsts\S*", text)})
    print("ldgsts metrics:", *names, sep="\n  ")
    print("data-stage wavefront metrics:",
          *sorted({m.group(0) for m in re.finditer(r"l1tex__data_pipe_lsu_wavefronts\S*", text)}),
          sep="\n  ")
    keep = [n + ".sum" for n in names
            if ("wavefronts" in n or "conflicts" in n) and "shared" in n]
    keep += ["l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
             "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access_lookup_miss.sum",
             "l1tex__t_set_conflicts_pipe_lsu_mem_global_op_ldgsts_cache_access.sum",
             "l1tex__data_pipe_lsu_wavefronts.sum"]
    return tuple(dict.fromkeys(list(BASE_METRICS) + keep))


def _pattern(w, shared, source, family, label):
    return {"width": w, "shared": [None if a is None else int(a) for a in shared],
            "source": [int(g) for g in source], "family": family, "label": label}


def patterns(rng: np.random.Generator, widths=(4, 8, 16)) -> list[dict]:
    lanes = np.arange(32)
    out = []
    for w in widths:
        contiguous = w * lanes
        sixteen = 16 * lanes
        # Pairs: lanes 0 and j, every relation of their shared and global places.
        for j in (1, 16):
            for ds in sorted({0, w, 2 * w, 16, 32, 48, 64, 112, 128, 128 + w, 256}):
                for dg in sorted({w, 16, 64, 128, 256}):
                    shared = [None] * 32
                    source = sixteen.copy()
                    shared[0], shared[j] = 0, ds
                    source[0], source[j] = 0, dg
                    out.append(_pattern(w, shared, source, "pair", f"lanes 0,{j} ds={ds} dg={dg}"))
        # One global line (8 lanes of 16-byte sources, or 128 bytes of w-byte ones).
        n = 128 // w
        line_lanes = range(n)
        layouts = {f"stride {k}": [k * w * i for i in line_lanes] for k in (1, 2, 3, 4, 5, 8, 9)}
        layouts["reversed"] = [w * (n - 1 - i) for i in line_lanes]
        layouts["shifted by w"] = [w * (i + 1) for i in line_lanes]
        layouts["shifted by 64"] = [64 + w * i for i in line_lanes]
        layouts["two halves 256 apart"] = [w * i + (256 - 64 if i >= n // 2 else 0)
                                           for i in line_lanes]
        layouts["xor 1"] = [w * (i ^ 1) for i in line_lanes]
        layouts["xor 4"] = [w * (i ^ (n // 2)) for i in line_lanes]
        for t in range(4):
            layouts[f"permuted {t}"] = [w * int(i) for i in rng.permutation(n)]
        for t in range(3):
            layouts[f"random chunks {t}"] = [w * int(i) for i in rng.choice(64, n, replace=False)]
        for name, sh in layouts.items():
            for gname, g in (("line", contiguous[:n]), ("line permuted",
                                                          w * rng.permutation(n))):
                shared = list(sh) + [None] * (32 - n)
                source = np.concatenate([g, sixteen[n:]])
                out.append(_pattern(w, shared, source, "line", f"{name} / {gname}"))
        # Full warp: shared contiguous with sources moved, and the reverse.
        sources = {"contiguous": contiguous, "16 apart": sixteen, "reversed": contiguous[::-1],
                   "lines swapped": (contiguous + 128) % (32 * w),
                   "two lines apart": 2 * contiguous,
                   "permuted": w * rng.permutation(32), "shifted by 16": contiguous + 16}
        for gname, g in sources.items():
            out.append(_pattern(w, contiguous, g, "warp", f"shared contiguous / {gname}"))
        for k in (2, 3, 4, 8, 33):
            for gname in ("contiguous", "16 apart"):
                out.append(_pattern(w, k * w * lanes, sources[gname], "warp",
                                    f"stride {k} / {gname}"))
        # Duplicated destinations.
        for groups in (1, 2, 4, 8, 16):
            dest = [w * 4 * (lane * groups // 32) for lane in range(32)]
            for gname in ("contiguous", "16 apart"):
                out.append(_pattern(w, dest, sources[gname], "duplicates",
                                    f"{groups} addresses in lane blocks / {gname}"))
            dest = [w * 4 * (lane % groups) for lane in range(32)]
            out.append(_pattern(w, dest, contiguous, "duplicates",
                                f"{groups} addresses cycled / contiguous"))
        for t in range(6):
            k = int(rng.integers(2, 9))
            dest = [w * int(x) for x in rng.choice(rng.integers(0, 256 // w, k), 32)]
            out.append(_pattern(w, dest, contiguous, "duplicates", f"random from {k} #{t}"))
        # Random sets.
        for t in range(12):
            shared = [w * int(x) for x in rng.choice(4096 // w, 32, replace=False)]
            g = w * rng.choice(GLOBAL_BYTES // w // 4, 32, replace=False) if t % 2 else contiguous
            if t % 3 == 2:
                shared = [a if rng.random() < 0.6 else None for a in shared]
            out.append(_pattern(w, shared, g, "random", f"random #{t}"))
    return out


def permutation_patterns(rng: np.random.Generator) -> list[dict]:
    """cp.async.cg: how a 128-byte line's 16-byte chunks may move within one shared segment.

    Pairs of lanes copying chunks (a, b) of one line to chunks (x, y) of one segment, in both lane
    orders; then random permutations of whole and partial lines."""
    out = []
    for a, b in ((0, 1), (0, 2), (0, 4), (1, 2), (2, 5), (3, 6)):
        for x in range(8):
            for y in range(8):
                if x == y:
                    continue
                shared, source = [None] * 32, list(16 * np.arange(32) + 4096)
                shared[0], shared[1], source[0], source[1] = 16 * x, 16 * y, 16 * a, 16 * b
                out.append({"width": 16, "cg": True, "shared": shared, "source": source,
                            "family": "cg pair", "label": f"src {a},{b} -> dst {x},{y}"})
    for t in range(60):
        k = (8, 8, 6, 4, 3)[t % 5]
        src = rng.permutation(8)[:k]
        dst = rng.permutation(8)[:k]
        shared = [16 * int(d) for d in dst] + [None] * (32 - k)
        source = [16 * int(g) for g in src] + list(16 * np.arange(k, 32) + 4096)
        out.append({"width": 16, "cg": True, "shared": shared, "source": source,
                    "family": "cg permutation", "label": f"{k} chunks #{t}"})
    return out


def scattered_patterns(rng: np.random.Generator) -> list[dict]:
    """cp.async.ca with sources in many 128-byte lines; shared side free of conflicts."""
    out = []
    for w in (4, 8, 16):
        lanes = np.arange(32)
        for k in (0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 32):
            for name, source in (("same bank", 128 * lanes), ("distinct banks", 132 * lanes)):
                source = (source // w) * w
                shared = [int(w * lane) if lane < k else None for lane in lanes]
                out.append({"width": w, "shared": shared, "source": [int(g) for g in source],
                            "family": "scattered", "label": f"{k} lanes, one line each, {name}"})
        for lines in (2, 3, 4, 5, 6, 8):
            source = w * lanes + 128 * (lanes % lines) * 4
            out.append({"width": w, "shared": [int(w * lane) for lane in lanes],
                        "source": [int(g) for g in source % 16384], "family": "scattered",
                        "label": f"lanes cycle over {lines} lines"})
    return out


def line_set_patterns(rng: np.random.Generator) -> list[dict]:
    """cp.async.ca, one lane per 128-byte line: which sets of lines the tag stage takes at once.

    Lane i reads chunk i % 8 of line ``lines[i]`` and writes its own 16-byte shared chunk, so
    neither side has bank conflicts; only the number of tag-stage passes can vary."""
    out = []
    sets = {f"stride {s} x {k}": [s * i for i in range(k)]
            for s in (1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512) for k in (3, 4, 5, 8)
            if s * (k - 1) < GLOBAL_BYTES // 128}
    for t in range(24):
        k = (4, 5, 6, 8)[t % 4]
        sets[f"random lines #{t}"] = [int(x) for x in rng.choice(GLOBAL_BYTES // 128, k, False)]
    for name, lines in sets.items():
        for w in (4, 16):
            shared = [16 * i if i < len(lines) else None for i in range(32)]
            source = [128 * ln + 16 * (i % 8) for i, ln in enumerate(lines)]
            source += [0] * (32 - len(source))
            out.append({"width": w, "shared": shared, "source": source, "family": "line sets",
                        "label": name, "lines": lines})
    return out


def small_patterns(rng: np.random.Generator) -> list[dict]:
    """cp.async.ca: a few lanes of one lane group, sources in up to three consecutive lines,
    destinations colliding on purpose (to separate how phases of different lines overlap)."""
    out = []
    for w in (16, 8, 4):
        group = 128 // w
        for t in range(200):
            k = int(rng.integers(2, min(group, 7) + 1))
            lanes = sorted(int(x) for x in rng.choice(group, k, replace=False))
            lines = int(rng.integers(1, 4))
            shared, source = [None] * 32, [0] * 32
            for lane in lanes:
                line, offset = int(rng.integers(0, lines)), int(rng.integers(0, 128 // w))
                source[lane] = 128 * line + w * offset
                shared[lane] = w * int(rng.integers(0, 256 // w))
            out.append({"width": w, "shared": shared, "source": source, "family": "small",
                        "label": f"{k} lanes over {lines} lines #{t}"})
    return out


def launch(p: dict, src: np.ndarray) -> Launch:
    spelling = ("cp.async.cg.shared.global.16" if p.get("cg") else
                f"cp.async.ca.shared.global.{p['width']}")
    return probe_launch(spelling, p["shared"], src, p["source"], label=p["label"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--deadline", type=float, default=480.0)
    ap.add_argument("--batch", type=int, default=120)
    ap.add_argument("--only", choices=("ca", "cg"))
    ap.add_argument("--round", type=int, default=1, help="1: the survey; 2: permutations, "
                    "scattered sources; 3: sets of lines; 4: small colliding sets")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    rng = np.random.default_rng(seed)
    todo = []
    if args.round == 4:
        todo = small_patterns(rng)
    elif args.round == 3:
        todo = line_set_patterns(rng)
    elif args.round == 2:
        todo = permutation_patterns(rng) + scattered_patterns(rng)
    elif args.only != "ca":
        todo += [dict(p, cg=True) for p in patterns(rng, (16,))]
    if args.round == 1 and args.only != "cg":
        todo += patterns(rng, (4, 8, 16))
    metrics = ldgsts_metrics()
    src = np.zeros((SMEM_BYTES + GLOBAL_BYTES) // 4, np.uint32)
    start = time.time()
    print(f"seed {seed}: {len(todo)} patterns")
    done = 0
    with open(args.out, "a") as f:
        for i in range(0, len(todo), args.batch):
            if time.time() - start > args.deadline:
                break
            batch = todo[i:i + args.batch]
            counters = profile([launch(p, src) for p in batch], metrics)
            for p, c in zip(batch, counters):
                f.write(json.dumps(dict(p, seed=seed, ncu=c), default=int) + "\n")
            done += len(batch)
            print(f"{done} patterns in {time.time() - start:.0f} s", flush=True)
    print(f"study: {done} of {len(todo)} patterns measured, seed {seed}")


if __name__ == "__main__":
    main()
