"""The judge-bias table and figure: position bias, style and self-preference per judge.

It arranges the Wald intervals of the fit's linear-predictor terms
(:meth:`~hja_bayes.inference.WaldInference.coefficients`): one row per judge, and for style
a "(panel)" row with the panel's value (the mean of the judges' coefficients, or the shared
one).  Nothing is estimated here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..threads import one_blas_thread
from ..checks import check_level
from ..inference import WaldInference
from .fitted import check_fit, wald
from .leaderboard import table_meta
from .plots import tick_labels

__all__ = ["PANEL", "bias_columns", "bias_plot", "bias_table"]

#: Label of the row holding the panel's value of a style coefficient.
PANEL = "(panel)"


def bias_columns(fit) -> list[str]:
    """The fit's bias coefficients as table column names: ``beta`` (position), each
    ``style:<feature>``, ``self``."""
    names = ["beta" if n == "position" else n for n in fit.coef_names]
    return names + [n for n in fit.theta_names if n not in names]


@one_blas_thread
def bias_table(fit, level: float = 0.95, *, inference: WaldInference | None = None) -> pd.DataFrame:
    """One row per judge with each bias coefficient and its Wald interval.

    Parameters
    ----------
    fit : HJAFit
    level : float
    inference : WaldInference, optional
        Reused instead of the fit's.

    Returns
    -------
    DataFrame
        ``judge``, then for each coefficient ``c`` of :func:`bias_columns` the columns ``c``,
        ``c_lower``, ``c_upper``: ``beta`` the position bias (logit bonus of the answer
        shown first), ``style:<feature>`` the pull of a one-sd difference in that feature
        (as transformed: ``attrs["meta"]["feature_transform"]``),
        ``self`` the bonus of the judge's own model.  NaN where a judge has no such
        coefficient.  With style, a last row ``(panel)`` holds the panel's value.
        ``attrs["meta"]`` as for every table.
    """
    check_fit(fit, "bias table")
    level = check_level(level)
    inference = wald(fit, inference)
    judges = list(fit.judges)
    style = [n for n in bias_columns(fit) if n.startswith("style:")]
    rows = judges + ([PANEL] if style else [])
    table = pd.DataFrame({"judge": rows})
    for column in bias_columns(fit):
        name = "position" if column == "beta" else column
        values = np.full((3, len(rows)), np.nan)
        if name in fit.coef_names:
            iv = inference.coefficients(name, level)
            values[:, : len(judges)] = np.vstack([iv.estimate, iv.lower, iv.upper])
        if column in style:
            iv = inference.panel_coefficient(name, level)
            values[:, -1] = [float(iv.estimate), float(iv.lower), float(iv.upper)]
        table[column], table[f"{column}_lower"], table[f"{column}_upper"] = values
    table.attrs["meta"] = table_meta(fit, "judge_biases", level, "logit",
                                     coefficients=bias_columns(fit),
                                     feature_transform=fit.data.feature_transform or None)
    return table


def bias_plot(table: pd.DataFrame, level: float = 0.95) -> Figure:
    """Each bias coefficient per judge with its interval, one panel per coefficient.

    Parameters
    ----------
    table : DataFrame
        A :func:`bias_table`.
    level : float
        The table's level (for the title).

    Returns
    -------
    matplotlib.figure.Figure
    """
    columns = [c for c in table.columns if c != "judge" and not c.endswith(("_lower", "_upper"))]
    n = len(table)
    width = max((len(j) for j in tick_labels(table["judge"])), default=5)
    fig = Figure(figsize=(1.4 + 0.07 * width + 2.6 * max(len(columns), 1), 1.3 + 0.35 * n),
                 layout="constrained")
    y = np.arange(n)[::-1]
    for p, column in enumerate(columns):
        ax = fig.add_subplot(1, max(len(columns), 1), p + 1)
        est = table[column].to_numpy(dtype=float)
        lo, hi = table[f"{column}_lower"].to_numpy(float), table[f"{column}_upper"].to_numpy(float)
        panel = (table["judge"] == PANEL).to_numpy()
        shown = np.isfinite(est)
        for rows, marker, color in ((shown & ~panel, "o", "#1f5fa8"), (shown & panel, "D", "#c0392b")):
            if rows.any():
                ax.errorbar(est[rows], y[rows], xerr=[est[rows] - lo[rows], hi[rows] - est[rows]],
                            fmt=marker, color=color, capsize=3, markersize=5)
        ax.axvline(0.0, color="#555555", linewidth=0.8, linestyle=":")
        ax.set_yticks(y, tick_labels(table["judge"]) if p == 0 else [""] * n)
        ax.set_ylim(-0.6, n - 0.4)
        ax.set_title("position β" if column == "beta" else column.replace("style:", "style: "),
                     fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"Judge biases (logit scale), {level:.0%} intervals", fontsize=10)
    return fig
