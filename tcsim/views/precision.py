"""The precision study drawn: relative error against K, one panel per distribution."""

from __future__ import annotations

from pathlib import Path

from ..precision import METHODS, USABLE_THRESHOLDS, PrecisionTable

USABLE = USABLE_THRESHOLDS[0]  # the line a median must stay under for f16 to be usable

# One colour per method, the same in every panel.
COLORS = {"tc_f16": "#d62728", "tc_f32": "#1f77b4", "fma_f32": "#2ca02c", "round_f16": "#7f7f7f"}
LABELS = {
    "tc_f16": "tensor cores, f16 accumulator",
    "tc_f32": "tensor cores, f32 accumulator",
    "fma_f32": "f32 FMA loop",
    "round_f16": "exact, rounded to f16",
}


def matplotlib_missing() -> str | None:
    """None when matplotlib can be imported; otherwise a sentence saying how to install it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "drawing needs matplotlib: pip install 'tcsim[docs]' (or matplotlib)"
    return None


def plot_precision(table: PrecisionTable, path: str | Path) -> Path:
    """Draw ``table`` as an SVG at ``path``: relative error against K (log-log), one panel per
    distribution, one colour per method; the median solid, the max dashed. A K where a method
    overflowed is marked with an x at the top of its panel. Returns the path."""
    reason = matplotlib_missing()
    if reason is not None:
        raise ImportError(reason)
    import matplotlib
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    dists = list(table.params["distributions"])
    ks = sorted(table.params["ks"])
    # Fixed ids and no date: the same table gives the same file.
    with matplotlib.rc_context({"svg.hashsalt": "tcsim-precision", "svg.fonttype": "none",
                                "font.size": 9}):
        fig = Figure(figsize=(3.2 * len(dists), 3.6), layout="constrained")
        axes = fig.subplots(1, len(dists), sharey=True, squeeze=False)[0]
        for ax, dist in zip(axes, dists):
            for method in METHODS:
                rows = [table.row(k, dist, method) for k in ks]
                for stat, style in (("median_rel", "-"), ("max_rel", "--")):
                    # Zero errors and overflowed-only rows cannot sit on a log axis: gaps.
                    ys = [getattr(r, stat) or float("nan") for r in rows]
                    ax.plot(ks, ys, style, color=COLORS[method], marker="o", markersize=2.5,
                            linewidth=1.2 if stat == "median_rel" else 0.9,
                            label=LABELS[method] if stat == "median_rel" else None)
                over = [k for k, r in zip(ks, rows) if r.overflows]
                if over:
                    ax.plot(over, [1.0] * len(over), "x", color=COLORS[method], markersize=7,
                            transform=ax.get_xaxis_transform(), clip_on=False)
            ax.axhline(USABLE, color="black", linewidth=0.6, linestyle=":")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(dist)
            ax.set_xlabel("K (dot product length)")
            ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
        axes[0].set_ylabel("|computed - exact| / |exact|")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=len(METHODS),
                   frameon=False, title=f"median solid, max dashed; {table.params['dots']} dot "
                   f"products per K; dotted: {USABLE:g}; x: overflow")
        path = Path(path)
        fig.savefig(path, format="svg", metadata={"Date": None})
    return path
