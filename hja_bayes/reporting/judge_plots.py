"""Figures of the judges: sensitivity gamma_k against leverage h_k, or sensitivity alone.

Each judge's gamma carries its Wald interval and, from a posterior, its credible interval
drawn just below it (the columns of :func:`~hja_bayes.reporting.judge_table`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..diagnostics import RHO_THRESHOLD
from ..inference import WaldInference
from .judges import judge_table
from .plots import (
    CREDIBLE_COLOR,
    FLAG_COLOR,
    FOREST_MODELS,
    MUTED_COLOR,
    WALD_COLOR,
    _label_inches,
    _short,
    tick_labels,
)

__all__ = ["judge_map"]


#: A judge map whose largest leverage exceeds this many times the median draws it on a
#: square-root scale.
SPREAD_OUT = 4.0


def judge_map(
    fit, level: float = 0.95, *, idata=None, inference: WaldInference | None = None,
    table=None
) -> Figure:
    """Judges placed by sensitivity gamma_k (x, with Wald interval) and leverage h_k (y).

    A judge far right agrees strongly with the consensus direction; a judge high up departs
    from it in a structured way.  Judges flagged as high-leverage (both) are drawn in red.
    Points are labelled with their judge's name, flagged judges first, then by leverage;
    a label whose point sits on one already labelled is left out (the judge table names
    every judge).
    At rank 0 there is no leverage (S = gamma mu^T): the figure then shows each judge's
    sensitivity with its interval, one judge per line.

    Parameters
    ----------
    fit : HJAFit
    level : float
    idata : arviz.InferenceData, optional
        Posterior draws of the fit's model: each judge's credible interval of gamma is
        drawn just below its Wald interval (``gamma_marginal`` with prompt effects).
    inference : WaldInference, optional
    table : DataFrame, optional
        A :func:`~hja_bayes.reporting.judge_table` table to draw (its credible columns,
        when it has them, are drawn too).

    Returns
    -------
    matplotlib.figure.Figure
    """
    judges = (judge_table(fit, idata, level=level, inference=inference) if table is None
              else table)
    if "leverage" not in judges.columns:
        return _sensitivity_plot(judges, level)
    fig = Figure(figsize=(7.0, 4.8), layout="constrained")
    ax = fig.add_subplot()
    ax.margins(x=0.2, y=0.12)  # room for the point labels
    flag = judges["high_leverage"].to_numpy(dtype=bool)
    for mask, color, label in ((~flag, WALD_COLOR, "judge"),
                               (flag, FLAG_COLOR, "|γ|, h above the medians, ρ > "
                                                   f"{RHO_THRESHOLD:g}")):
        if not mask.any():
            continue
        sub = judges[mask]
        ax.errorbar(
            sub["gamma"], sub["leverage"],
            xerr=[sub["gamma"] - sub["gamma_lower"], sub["gamma_upper"] - sub["gamma"]],
            fmt="o", color=color, capsize=3, label=f"{label} (Wald {level:.0%})",
        )
    x, y = judges["gamma"].to_numpy(float), judges["leverage"].to_numpy(float)
    # behind each judge's own point, a wide translucent band: set below it, one judge's
    # credible interval had sat on a neighbour's label
    _credible(ax, judges, y, level, band=True)
    # flagged judges first, then the most departing ones; a label that would sit on one
    # already drawn is left out (the judge table names every point)
    order = np.lexsort((-y, ~flag))
    ax.axvline(1.0, color=MUTED_COLOR, linestyle=":", linewidth=0.8)
    ax.set_xlabel(f"sensitivity γ_k ({level:.0%} intervals; panel mean is 1)")
    ax.set_ylabel("leverage h_k = ‖(UVᵀ)_k‖")
    if np.nanmax(y) > SPREAD_OUT * np.nanmedian(y) > 0:  # one far judge (MT-Bench's and
        # Arena's locked one, 12-17 against 0-5) had squeezed the rest into a fifth
        ax.set_yscale("function", functions=(lambda v: np.sqrt(np.clip(v, 0, None)),
                                             np.square))
        ax.set_ylim(bottom=0)
        ax.set_ylabel("leverage h_k = ‖(UVᵀ)_k‖ (square-root scale)")
    ax.set_title("Judges: sensitivity against leverage", fontsize=10)
    ax.grid(alpha=0.3)
    # below the axes: inside, "best" had still covered a judge's interval
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3,
              frameon=False)
    _label_points(fig, ax, [_short(j) for j in judges["judge"]], x, y, order)
    return fig


def _credible(ax, judges, y, level: float, band: bool = False) -> None:
    """Each judge's credible interval of gamma at heights ``y`` (when the table has one): a
    bar with caps, or (``band``) a wide translucent band behind the Wald interval."""
    if "gamma_cred_lower" not in judges.columns:
        return
    lo, hi = (judges[c].to_numpy(float) for c in ("gamma_cred_lower", "gamma_cred_upper"))
    style = dict(elinewidth=7, alpha=0.35, capsize=0, zorder=1) if band else dict(capsize=3)
    ax.errorbar((lo + hi) / 2, y, xerr=(hi - lo) / 2, fmt="none", color=CREDIBLE_COLOR,
                label=f"credible {level:.0%}", **style)


#: Where a point's label may go, in points from it: upper right, lower right, upper left,
#: lower left (with the text's alignment).
LABEL_SPOTS = (((4, 4), "left"), ((4, -11), "left"), ((-4, 4), "right"), ((-4, -11), "right"))


def _label_points(fig, ax, names, x, y, order) -> None:
    """Label the points, taken in ``order``, where the label overlaps no other label or
    point (the first of :data:`LABEL_SPOTS` that is free); a point with no free spot, or on
    a point already named, stays unlabelled (the judge table names every point).  Sizes
    are measured on the laid-out figure, in display units."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # the constrained layout, so positions are final
    renderer = fig.canvas.get_renderer()
    radius = 4 * fig.dpi / 72  # a marker's half width, in display units
    centres = ax.transData.transform(np.column_stack([x, y]))
    markers = [Bbox.from_extents(px - radius, py - radius, px + radius, py + radius)
               for px, py in centres]
    taken, named = [], []
    for i in order:
        if any(np.hypot(*(centres[i] - centres[k])) < 2 * radius for k in named):
            continue  # on a point already named: one label stands for the crowd
        for offset, align in LABEL_SPOTS:
            text = ax.annotate(names[i], (x[i], y[i]), textcoords="offset points",
                               xytext=offset, fontsize=7, ha=align)
            box = text.get_window_extent(renderer).expanded(1.05, 1.1)
            if not any(box.overlaps(other) for k, other in enumerate(markers) if k != i) \
                    and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                named.append(i)
                break
            text.remove()


def _sensitivity_plot(judges, level: float) -> Figure:
    """Each judge's gamma with its interval, one line per judge (most sensitive on top; of
    many judges the :data:`FOREST_MODELS` most and least sensitive)."""
    board = judges.sort_values("gamma", ascending=False, kind="stable")
    half = FOREST_MODELS // 2
    if len(board) > FOREST_MODELS:
        board = pd.concat([board.head(half), board.tail(half)])
    n = len(board)
    fig = Figure(figsize=(4.4 + _label_inches(board["judge"]), 1.2 + 0.35 * n),
                 layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    ax.errorbar(board["gamma"], y,
                xerr=[board["gamma"] - board["gamma_lower"], board["gamma_upper"] - board["gamma"]],
                fmt="o", color=WALD_COLOR, capsize=3, label=f"Wald {level:.0%}")
    _credible(ax, board, y - 0.22, level)
    ax.axvline(1.0, color=MUTED_COLOR, linestyle=":", linewidth=0.8)
    ax.set_yticks(y, tick_labels(board["judge"]), fontsize=8)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel(f"sensitivity γ_k, {level:.0%} intervals (mean 1)")
    note = "" if n == len(judges) else \
        f" (the {half} most and {half} least sensitive of {len(judges):,} judges)"
    ax.set_title(f"Judge sensitivity{note}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    if "gamma_cred_lower" in board.columns:
        ax.legend(fontsize=8, loc="lower right")
    return fig
