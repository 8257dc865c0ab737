"""Plots of tcsim's models: the one home for presentation code that needs matplotlib.

Models (``tcsim.precision`` ...) never import this package; each view takes a model's result
and draws it. matplotlib is imported inside the functions, so ``import tcsim.views`` works
without it; install it with ``pip install 'tcsim[docs]'``.
"""

from .precision import matplotlib_missing, plot_precision

__all__ = ["matplotlib_missing", "plot_precision"]
