"""docs/fragments.md and its diagrams, generated from tcsim's fragment tables.

``tcsim docs [DIR]`` (or `write(DIR)`) regenerates ``DIR/fragments.md`` and every
``DIR/figures/*.svg``; tests/test_docs.py fails when the committed files differ from what the
tables draw today. Nothing here knows a layout: every picture and table comes from a
`FragmentMap`, the same data the simulator packs and unpacks with.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

from ..isa.fragments import FragmentMap, ldmatrix_fragment, mma_fragment
from ..isa.qualifier import supported_qualifiers
from ..isa.wmma import fragment_map, parse_wmma, supported_wmma_qualifiers, wmma_fragment
from .fragments import fragment_svg

F16_K8, F16_K16 = "m16n8k8.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f32.f16.f16.f32"
BF16_K8, BF16_K16 = "m16n8k8.row.col.f32.bf16.bf16.f32", "m16n8k16.row.col.f32.bf16.bf16.f32"
TF32_K4, TF32_K8 = "m16n8k4.row.col.f32.tf32.tf32.f32", "m16n8k8.row.col.f32.tf32.tf32.f32"
F16_ACC = "m16n8k8.row.col.f16.f16.f16.f16"
E4M3_K16, E4M3_K32 = "m16n8k16.row.col.f32.e4m3.e4m3.f32", "m16n8k32.row.col.f32.e4m3.e4m3.f32"
S8_K32 = "m16n8k32.row.col.s32.s8.s8.s32"

EXAMPLE = '''import numpy as np, tcsim

q = "m16n8k8.row.col.f32.f16.f16.f32"
A = np.arange(16 * 8).reshape(16, 8).astype(np.float16)  # A[r, c] = 8 r + c
frag = tcsim.fragment(q, "a")
regs = frag.pack(A)                     # (32 lanes, 2 registers) uint32
lane, reg, half = frag.locate(9, 3)     # who holds A[9, 3]?
print(f"A[9, 3] is in lane {lane}, register {reg}, {('low', 'high')[half]} half")
print(f"lane {lane} register {reg} = {int(regs[lane, reg]):#010x}")  # two f16: A[9, 2], A[9, 3]
print(regs.view(np.float16).reshape(32, 4)[lane])    # all of lane 5's elements
assert np.array_equal(frag.unpack(regs), A)          # unpack(pack(A)) is A
'''

SECTIONS = [
    ("mma.sync m16n8k8 / m16n8k16: A with f16 or bf16 inputs",
     "A warp is 8 groups of 4 lanes: group `g = lane // 4`, thread-in-group `t = lane % 4`. "
     "Group g holds rows g and g + 8; thread t holds columns 2t and 2t + 1, two f16 values "
     "per 32-bit register, the lower column in the low half. Register 0 is row g, register 1 "
     "row g + 8; for k16, registers 2 and 3 are the same rows 8 columns on. bf16 is laid out "
     "the same way.",
     [(F16_K8, "a"), (BF16_K8, "a"), (F16_K16, "a"), (BF16_K16, "a")]),
    ("mma.sync m16n8k8 / m16n8k16: B with f16 or bf16 inputs",
     "B is held by columns: lane `l` holds column `n = l // 4`, rows `k = 2 (l % 4)` and "
     "`2 (l % 4) + 1` in register 0 (and the same rows + 8 in register 1 for k16). So a "
     "lane's register is two consecutive K values of one column: what `ldmatrix.trans` "
     "delivers from a row-major B tile.",
     [(F16_K8, "b"), (BF16_K8, "b"), (F16_K16, "b"), (BF16_K16, "b")]),
    ("mma.sync m16n8k4 / m16n8k8 with tf32 inputs",
     "One tf32 value per 32-bit register. A: lane `l` holds rows `g = l // 4` and g + 8 at "
     "column `t = l % 4` (registers 0 and 1), and for k8 column t + 4 (registers 2 and 3). "
     "B: rows t (and t + 4 for k8) of column g.",
     [(TF32_K4, "a"), (TF32_K4, "b"), (TF32_K8, "a"), (TF32_K8, "b")]),
    ("mma.sync m16n8k16 / m16n8k32 with 8-bit inputs (e4m3, e5m2, s8, u8)",
     "Four 8-bit values per 32-bit register, the lowest column (or row) in byte 0 (`.b0`). "
     "A: lane `l` holds rows `g = l // 4` (registers 0, 2) and g + 8 (registers 1, 3), "
     "columns `4 (l % 4)` .. `4 (l % 4) + 3`, and for k32 the same columns + 16 in "
     "registers 2 and 3. B: column g, rows `4 (l % 4)` .. + 3 (register 0) and, for k32, "
     "the same rows + 16 (register 1). Every 8-bit type shares these maps. On sm_90 fp8 is "
     "lowered to f16 `mma.sync` (docs/numerics.md): the low half of each register (bytes 0 "
     "and 1) feeds the first f16 step, the high half the second.",
     [(E4M3_K16, "a"), (E4M3_K16, "b"), (E4M3_K32, "a"), (E4M3_K32, "b")]),
    ("Accumulators C and D (every m16n8 shape)",
     "A 16x8 tile: lane `l` holds row `g = l // 4`, columns `2 (l % 4)` and `2 (l % 4) + 1`, "
     "then the same columns of row g + 8. With f32 (or s32) that is 4 registers (c0..c3); "
     "with f16 the pairs share a register (2 registers), which is exactly the m16n8k8 f16 A "
     "layout.",
     [(F16_K8, "c"), (F16_ACC, "c"), (S8_K32, "c")]),
    ("mma.sync m8n8k4: the Volta quad-pair shape",
     "A warp computes four independent 8x8x4 products, one per *quad-pair*: lanes 4p .. "
     "4p + 3 together with lanes 4p + 16 .. 4p + 19 compute product p. tcsim stacks the four "
     "products, so A is 32x4 (product p in rows 8p .. 8p + 7), B is 16x8 (product p in rows "
     "4p .. 4p + 3) and C and D are 32x8 (rows 8p .. 8p + 7). The row/col "
     "qualifiers change which lane holds which element of A and B; C and D depend only on "
     "their type.",
     [("m8n8k4.row.row.f32.f16.f16.f32", "a"), ("m8n8k4.col.row.f32.f16.f16.f32", "a"),
      ("m8n8k4.row.row.f32.f16.f16.f32", "b"), ("m8n8k4.row.col.f32.f16.f16.f32", "b"),
      ("m8n8k4.row.row.f32.f16.f16.f32", "c"), ("m8n8k4.row.row.f16.f16.f16.f16", "c")]),
]

LDMATRIX_TEXT = (
    "`ldmatrix.sync.aligned.m8n8.xN` loads N 8x8 matrices of 16-bit elements from shared "
    "memory: lanes 8i .. 8i + 7 give the addresses of the 8 rows of matrix i (16 bytes each), "
    "and register i of every lane receives two elements of matrix i. Without `.trans` lane l "
    "gets row `l // 4`, columns `2 (l % 4)` and `2 (l % 4) + 1` (the mma A and accumulator "
    "pattern); with `.trans` it gets column `l // 4`, rows `2 (l % 4)` and `2 (l % 4) + 1` "
    "(the mma B pattern). The stacked matrices are shown as one (8N)x8 matrix: matrix i is "
    "rows 8i .. 8i + 7. `stmatrix` uses the same maps in the other direction.")

WMMA_TEXT = (
    "`wmma.load` fills, `wmma.mma` reads and `wmma.store` writes out fragments that CUDA "
    "calls opaque; on sm_90 they are fixed. tcsim's maps were read off the H100 with probes "
    "(`scripts/capture_wmma.py`; the evidence is in [wmma.md](wmma.md)) and are kept as data "
    "(`tcsim/isa/wmma/maps_sm90.json`): `tcsim.wmma_fragment(qualifier, operand)`, or "
    "`tcsim.isa.wmma.fragment_map(shape, operand, type)`. A map depends only on the shape, "
    "the operand and the element type: row and col layouts, global and shared memory and any "
    "stride gave the same map, and C's `wmma.load` map is D's `wmma.store` map (`*.*` below "
    "stands for any A and B layouts).\n\n"
    "The maps are mma.sync's m16n8k16 fragments, one per 16x8 block: m16n16k16's A is "
    "m16n8k16's A, its B and C are two m16n8k16 fragments side by side (N = 0-7 in registers "
    "0-1 of B and 0-3 of C, N = 8-15 after); m32n8k16 stacks two along M; tf32 m16n16k8's A "
    "is m16n8k8's. m8n32k16 is computed transposed: its C and D are m32n8k16's transposed.\n\n"
    "PTX gives every f16 A and B fragment 8 registers (16 halves per lane), more than most "
    "of them have elements per lane, so those maps hold each element twice or four times, in "
    "one lane (`FragmentMap.copies`): m16n16k16's A repeats registers 0-3 in registers 4-7, "
    "m8n32k16's A holds each element four times. The H100 reads the first copy, and so does "
    "`tcsim.wmma_regs`; the diagrams and tables label the first copy, and each entry says "
    "which registers repeat. bf16 A and B hold each element once, at the lane and register of "
    "f16's first copy, so the f16 diagrams serve bf16 too.")
WMMA = [("m16n16k16", "a", "f16"), ("m16n16k16", "b", "f16"), ("m16n16k16", "c", "f32"),
        ("m16n16k16", "c", "f16"), ("m32n8k16", "a", "f16"), ("m8n32k16", "a", "f16"),
        ("m8n32k16", "b", "f16"), ("m8n32k16", "c", "f32"), ("m16n16k8", "a", "tf32"),
        ("m16n16k8", "b", "tf32")]


def _users() -> dict[bytes, list[str]]:
    """Every (qualifier, operand) that shares each map, keyed by the map's identity. WMMA maps
    do not depend on the layouts, so wmma qualifiers are named with ``*.*`` for them."""
    users: dict[bytes, list[str]] = {}
    for q in supported_qualifiers():
        for op in "abcd":
            users.setdefault(_key(mma_fragment(q, op)), []).append(f"`{q}` {op}")
    for q in supported_wmma_qualifiers():
        s = parse_wmma(q)
        name = f"wmma.{s.shape}.*.*.{s.d_type}.{s.a_type}.{s.b_type}.{s.c_type}"
        for op in "abcd":
            users.setdefault(_key(wmma_fragment(s, op)), []).append(f"`{name}` {op}")
    return {key: list(dict.fromkeys(names)) for key, names in users.items()}


def _key(frag: FragmentMap) -> bytes:
    return f"{frag.rows}x{frag.cols}{frag.format.name}".encode() + frag.coords.tobytes()


def _slug(frag: FragmentMap) -> str:
    return re.sub(r"[^a-z0-9]+", "-", frag.name.lower()).strip("-")


def _repeats(frag: FragmentMap) -> str:
    """Which registers hold the same elements, read off a map that holds each element more
    than once: "registers r0 = r2 and r1 = r3 hold the same elements"."""
    rows, cols = frag.coords[..., 0], frag.coords[..., 1]
    first = frag.element_of[rows, cols]  # each (lane, element): the element of its first copy
    lanes, per = np.arange(frag.coords.shape[0])[:, None], frag.per_register
    source = (first // per).reshape(lanes.size, frag.registers, per)
    if not (np.all(frag.lane_of[rows, cols] == lanes)
            and np.all(first % per == np.arange(frag.elements) % per)
            and np.all(source == source[:1, :, :1])):
        raise ValueError(f"{frag.name}: the copies are not whole registers of one lane")
    same: dict[int, list[int]] = {}
    for reg, src in enumerate(source[0, :, 0]):
        same.setdefault(int(src), []).append(reg)
    groups = [" = ".join(f"r{r}" for r in regs) for regs in same.values()]
    listed = groups[-1] if len(groups) == 1 else f"{', '.join(groups[:-1])} and {groups[-1]}"
    times = {2: "twice", 4: "four times"}.get(frag.copies, f"{frag.copies} times")
    return (f"Each element is held {times}, in one lane: registers {listed} hold the same "
            f"elements. The diagram and the table label the first copy, the one `wmma.mma` "
            f"reads.")


def _entry(frag: FragmentMap, heading: str, users: list[str] | None,
           figures: dict[str, str]) -> list[str]:
    name = _slug(frag) + ".svg"
    title = frag.name if frag.copies == 1 else f"{frag.name}: first of {frag.copies} copies"
    figures[name] = fragment_svg(frag, title)
    lines = [f"### {heading}", ""]
    if users:
        lines += ["Used by " + ", ".join(users) + ".", ""]
    if frag.copies > 1:
        lines += [_repeats(frag), ""]
    lines += [f"![{frag.name}](figures/{name})", "",
              "<details><summary>as text</summary>", "", "```text", frag.table(), "```", "",
              "</details>", ""]
    return lines


def example_output() -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(EXAMPLE, "fragments.md", "exec"), {})
    return buffer.getvalue().rstrip("\n")


def render() -> tuple[str, dict[str, str]]:
    """(the markdown page, {figure file name: svg text})."""
    users = _users()
    figures: dict[str, str] = {}
    lines = [
        "# Fragment layouts", "",
        "<!-- Generated by `tcsim docs` from tcsim's fragment tables; do not edit by hand. -->",
        "",
        "Which lane and register hold which matrix element, for every instruction tcsim "
        "models. Each diagram is drawn from the same `FragmentMap` the simulator uses "
        "(`tcsim.fragment(qualifier, operand)`; `print(...)` shows the text table, and a "
        "notebook shows the coloured grid). A cell is one element (row, column); its colour is "
        "the lane that holds it (one hue per group of 4 lanes, shades for the 4 threads), "
        "`T5` the lane and `r1.hi` the register and half: register 1, high 16 bits (`r1.b2`: "
        "byte 2 of register 1, for 8-bit elements).", "",
        "## Packing a matrix into registers", "",
        "```python", EXAMPLE.rstrip("\n"), "```", "", "prints", "",
        "```text", example_output(), "```", "",
        "Lane 5 is group 1 (rows 1 and 9) and thread 1 (columns 2 and 3), so its register 1 "
        "holds A[9, 2] = 74 (low half) and A[9, 3] = 75 (high half). `tcsim.mma_regs` takes "
        "registers in exactly this form, and `tcsim.hw.mma_regs` hands them to the GPU "
        "unchanged.", "",
    ]
    for title, text, items in SECTIONS:
        lines += [f"## {title}", "", text, ""]
        for qualifier, operand in items:
            frag = mma_fragment(qualifier, operand)
            heading = f"{qualifier} {operand.upper()} ({frag.format.name})"
            lines += _entry(frag, heading, users[_key(frag)], figures)
    lines += ["## wgmma (warpgroups of 128 lanes)", "",
              "wgmma's accumulator and A-from-registers maps span the four warps of a "
              "warpgroup: warp w holds rows 16w .. 16w + 15 in the m16n8 pattern above, "
              "repeated for every 8 columns. They are tabulated, from the same `FragmentMap` "
              "data the simulator and the probes use, in [wgmma.md](wgmma.md) "
              "(`tcsim.wgmma_fragment(qualifier, operand)`).", ""]
    lines += ["## WMMA (wmma.load, wmma.mma, wmma.store)", "", WMMA_TEXT, ""]
    for shape, operand, type_ in WMMA:
        frag = fragment_map(shape, operand, type_)
        lines += _entry(frag, frag.name, users[_key(frag)], figures)
    lines += ["## ldmatrix and stmatrix", "", LDMATRIX_TEXT, ""]
    for matrices in (1, 2, 4):
        for transpose in (False, True):
            frag = ldmatrix_fragment(matrices, transpose)
            lines += _entry(frag, frag.name, None, figures)
    return "\n".join(lines).rstrip("\n") + "\n", figures


def write(directory: str | Path = "docs") -> list[Path]:
    """Write fragments.md and figures/*.svg under ``directory``; returns the paths written."""
    directory = Path(directory)
    page, figures = render()
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    written = [directory / "fragments.md"]
    written[0].write_text(page)
    for name, svg in figures.items():
        path = directory / "figures" / name
        path.write_text(svg)
        written.append(path)
    return written


__all__ = ["render", "write"]
