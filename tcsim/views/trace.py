"""A `Trace` as an HTML table (what a notebook shows for one; `tcsim.views` hangs it on
`Trace` as its ``_repr_html_``): one row per instruction site, conflicts shaded."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..trace import Trace


def trace_html(trace: Trace) -> str:
    """The trace's sites: name, instruction, executions, wavefronts, conflicts, sectors, mma."""
    cells = "".join(
        f"<tr><td>{escape(s.name, False)}</td><td><code>{escape(s.instruction, False)}</code>"
        f"</td><td>{s.executions:,}</td><td>{s.wavefronts:,}</td>"
        f"<td{' style=background:#fcc' if s.conflicts else ''}>{s.conflicts:,}</td>"
        f"<td>{s.sectors:,}</td><td>{s.mma:,}</td></tr>"
        for s in trace.sites.values())
    return (f"<b>{escape(trace.kernel, False)}</b> M, N, K = {trace.problem}<table><tr>"
            f"<th>site</th><th>instruction</th><th>executed</th><th>wavefronts</th>"
            f"<th>conflicts</th><th>sectors</th><th>mma</th></tr>{cells}</table>")
