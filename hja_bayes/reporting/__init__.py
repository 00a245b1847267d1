"""Reports of a fitted model: tables, figures, and one self-contained HTML file.

The report layer arranges results computed by the fit, inference and diagnostics modules;
it computes no statistics of its own.
"""

from .content import Report, build_report
from .files import ReportFiles, report
from .html import render_html
from .markdown import render_markdown
from .leaderboard import judge_table, leaderboard, pairwise_table, to_scale, wald
from .plots import (
    forest_plot,
    judge_map,
    posterior_predictive_plot,
    rank_posterior_plot,
    residual_heatmap,
    win_probability_heatmap,
)

__all__ = [
    "Report",
    "ReportFiles",
    "build_report",
    "forest_plot",
    "judge_map",
    "judge_table",
    "leaderboard",
    "pairwise_table",
    "posterior_predictive_plot",
    "rank_posterior_plot",
    "render_html",
    "render_markdown",
    "report",
    "residual_heatmap",
    "to_scale",
    "wald",
    "win_probability_heatmap",
]
