"""A speed-of-light `Explanation` (`tcsim.perf.model`) as HTML (what a notebook shows for one;
`tcsim.views` hangs it on `Explanation` as its ``_repr_html_``): the predicted time, the
limiter, and each unit's share."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..perf.model import Explanation


def explanation_html(e: Explanation) -> str:
    """The prediction, the limiter and its reason, a table of units, and the advice."""
    rows = "".join(f"<tr><td>{escape(unit, False)}</td><td>{s * 1e3:.3f} ms</td>"
                   f"<td>{s / e.seconds:.0%}</td></tr>"
                   for unit, s in [*e.units.items(), ("latency", e.latency)])
    return (f"<b>{escape(e.kernel, False)}</b> {e.problem} on {escape(e.gpu, False)}: "
            f"<b>{e.seconds * 1e3:.3f} ms</b>, limited by <b>{escape(e.limiter, False)}</b>"
            f"<br>{escape(e.reason, False)}<table><tr><th>unit</th><th>time</th>"
            f"<th>share</th></tr>{rows}</table>next: {escape(e.advice, False)}")
