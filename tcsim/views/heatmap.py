"""Bank-conflict heatmaps of one warp-wide access (`tcsim.memory.access`): phases down, banks
across.

Each cell is the number of distinct 4-byte words a phase needs from a bank; a phase costs as
many wavefronts as its fullest bank, so a row of 1s is conflict-free and a tall column is a
conflict. `heatmap_text` draws it for a terminal (`Access.heatmap()`), `heatmap_html` for a
notebook (an Access's ``_repr_html_``; `tcsim.views` hangs both on `Access`); `heatmap_figure`
draws it with matplotlib (the optional ``docs`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..memory.banks import BANKS

if TYPE_CHECKING:
    from ..memory.access import Access


def heatmap_text(acc: Access) -> str:
    """The access's words per (phase, bank) as a text grid, with each phase's wavefronts."""
    head = "phase  " + "".join(f"{b:>3}" for b in range(BANKS)) + "   wavefronts"
    lines = [str(acc), head]
    for p, row in enumerate(acc.words):
        cells = "".join(f"{int(n):>3}" if n else "  ." for n in row)
        lines.append(f"{p:>5}  {cells}   {int(row.max())}")
    return "\n".join(lines)


def heatmap_html(acc: Access) -> str:
    """The grid as an HTML table, cells shaded by words (what a notebook shows for an Access):
    white none, pale one, red more than one (a conflict)."""
    head = "".join(f"<th>{b}</th>" for b in range(BANKS))
    rows = []
    for p, row in enumerate(acc.words):
        cells = "".join(
            f'<td style="text-align:center;background:'
            f'{"#fff" if not n else "#fde0dd" if n == 1 else "#e34a33"}">{int(n) or ""}</td>'
            for n in row)
        rows.append(f"<tr><th>{p}</th>{cells}<td>{int(row.max())}</td></tr>")
    return (f"<div><b>{acc}</b><table style='font-size:10px;border-collapse:collapse'>"
            f"<tr><th>phase</th>{head}<th>wavefronts</th></tr>{''.join(rows)}</table></div>")


def heatmap_figure(acc: Access, ax=None):
    """A matplotlib heatmap of words per (phase, bank); returns the figure."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("heatmap_figure needs matplotlib: pip install 'tcsim[docs]'") from exc
    words = np.asarray(acc.words)
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 0.5 + 0.35 * words.shape[0]))
    else:
        fig = ax.figure
    image = ax.imshow(words, cmap="Reds", vmin=0, vmax=max(2, int(words.max())), aspect="auto")
    ax.set_xlabel("bank")
    ax.set_ylabel("phase")
    ax.set_xticks(range(0, BANKS, 4))
    ax.set_yticks(range(words.shape[0]))
    ax.set_title(f"{acc.instruction}: {acc.wavefronts} wavefronts, {acc.conflicts} conflicts",
                 fontsize=9)
    for (p, b), n in np.ndenumerate(words):
        if n:
            ax.text(b, p, str(int(n)), ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="words")
    return fig
