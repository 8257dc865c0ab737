"""Pictures of fragment maps (`tcsim.isa.fragments`), drawn from the maps themselves: SVG for
the docs, HTML for notebooks (`tcsim.views` hangs `fragment_html` on `FragmentMap` as its
``_repr_html_``). Each cell is a matrix element, coloured by the lane that holds it and
labelled with the lane and register (``T5 r1.hi``: lane 5, register 1, high 16 bits).

The SVG is written by hand (rectangles and text), so the same map always gives the same bytes
and the committed diagrams can be checked for staleness without any plotting library.
"""

from __future__ import annotations

import colorsys
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..isa.fragments import FragmentMap

CELL_W, CELL_H, MARGIN = 46, 30, 28


def lane_color(lane: int) -> str:
    """A light colour per lane: hue walks the 8 groups (lane // 4), shade the 4 threads."""
    hue = (lane // 4) / 8
    light = 0.62 + 0.08 * (lane % 4)
    r, g, b = colorsys.hls_to_rgb(hue, light, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def fragment_svg(frag: FragmentMap, title: str | None = None) -> str:
    """The map as an SVG image: rows x cols cells with lane colours and labels."""
    width = MARGIN + frag.cols * CELL_W + 4
    top = MARGIN + (18 if title else 0)
    height = top + frag.rows * CELL_H + 4
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="10">']
    if title:
        out.append(f'<text x="4" y="14" font-size="12">{escape(title)}</text>')
    for c in range(frag.cols):
        out.append(f'<text x="{MARGIN + c * CELL_W + CELL_W // 2}" y="{top - 6}" '
                   f'text-anchor="middle">{c}</text>')
    for r in range(frag.rows):
        y = top + r * CELL_H
        out.append(f'<text x="{MARGIN - 4}" y="{y + CELL_H // 2 + 4}" '
                   f'text-anchor="end">{r}</text>')
        for c in range(frag.cols):
            x = MARGIN + c * CELL_W
            lane, reg = frag.register_label(r, c)
            out.append(f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" '
                       f'fill="{lane_color(lane)}" stroke="#555" stroke-width="0.5"/>')
            out.append(f'<text x="{x + CELL_W // 2}" y="{y + 12}" '
                       f'text-anchor="middle">T{lane}</text>')
            out.append(f'<text x="{x + CELL_W // 2}" y="{y + 24}" text-anchor="middle" '
                       f'fill="#333">{reg}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def fragment_html(frag: FragmentMap) -> str:
    """The map as an HTML table (what a notebook shows for a FragmentMap)."""
    head = "".join(f"<th>{c}</th>" for c in range(frag.cols))
    rows = []
    for r in range(frag.rows):
        cells = []
        for c in range(frag.cols):
            lane, reg = frag.register_label(r, c)
            cells.append(f'<td style="background:{lane_color(lane)};text-align:center;'
                         f'font-family:monospace;font-size:10px">T{lane}<br>{reg}</td>')
        rows.append(f"<tr><th>{r}</th>{''.join(cells)}</tr>")
    return (f"<div><b>{escape(frag.name)}</b>: {frag.rows}x{frag.cols} {frag.format.name}, "
            f"{frag.registers} register(s) per lane<table style='border-collapse:collapse'>"
            f"<tr><th></th>{head}</tr>{''.join(rows)}</table></div>")


def warpgroup_fragment_html(frag: FragmentMap) -> str:
    """A wgmma fragment (128 lanes, more than `lane_color` tells apart) as its text table."""
    return "<pre>" + escape(frag.table(), False) + "</pre>"
