"""Pictures of tcsim's models: the one home for presentation code (SVG, HTML, text grids,
matplotlib figures).

Models never import this package; each view takes a model's data and draws it. The display
hooks that a model object answers to are hung on the model classes here, and ``import tcsim``
imports this package, so they are there before any model object exists: a `FragmentMap` and
an `Access` show as coloured tables in a notebook (a wgmma fragment, a `Trace` and a speed
`Explanation` as plain ones), and ``Access.heatmap()`` prints its grid.
matplotlib is imported inside the functions, so ``import tcsim.views`` works without it;
install it with ``pip install 'tcsim[docs]'``.
"""

from ..isa.fragments import FragmentMap
from ..isa.wgmma.fragments import WarpgroupFragment
from ..memory.access import Access
from ..perf.model import Explanation
from ..trace import Trace
from .fragments import fragment_html, fragment_svg, lane_color, warpgroup_fragment_html
from .heatmap import heatmap_figure, heatmap_html, heatmap_text
from .perf import explanation_html
from .precision import matplotlib_missing, plot_precision
from .trace import trace_html

FragmentMap._repr_html_ = fragment_html
WarpgroupFragment._repr_html_ = warpgroup_fragment_html  # 128 lanes: a table of text
Access._repr_html_ = heatmap_html
Access.heatmap = heatmap_text
Trace._repr_html_ = trace_html
Explanation._repr_html_ = explanation_html

__all__ = ["explanation_html", "fragment_html", "fragment_svg", "heatmap_figure", "heatmap_html",
           "heatmap_text", "lane_color", "matplotlib_missing", "plot_precision", "trace_html",
           "warpgroup_fragment_html"]
