"""Pictures of tcsim's models: the one home for presentation code (SVG, HTML, text grids,
matplotlib figures).

Models never import this package; each view takes a model's data and draws it. The display
hooks that a model object answers to are hung on the model classes here, and ``import tcsim``
imports this package, so they are there before any model object exists: a `FragmentMap` and
an `Access` show as coloured tables in a notebook, and ``Access.heatmap()`` prints its grid.
matplotlib is imported inside the functions, so ``import tcsim.views`` works without it;
install it with ``pip install 'tcsim[docs]'``.
"""

from ..isa.fragments import FragmentMap
from ..memory.access import Access
from .fragments import fragment_html, fragment_svg, lane_color
from .heatmap import heatmap_figure, heatmap_html, heatmap_text
from .precision import matplotlib_missing, plot_precision

FragmentMap._repr_html_ = fragment_html
Access._repr_html_ = heatmap_html
Access.heatmap = heatmap_text

__all__ = ["fragment_html", "fragment_svg", "heatmap_figure", "heatmap_html", "heatmap_text",
           "lane_color", "matplotlib_missing", "plot_precision"]
