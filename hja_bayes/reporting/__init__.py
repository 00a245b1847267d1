"""Reports of a fitted model: tables, figures, and one self-contained HTML file.

The report layer arranges results computed by the fit, inference and diagnostics modules;
it computes no statistics of its own.
"""

from .html import Report, ReportFiles, build_report, render_html, render_markdown, report
from .leaderboard import judge_table, leaderboard, pairwise_table, to_scale, wald
from .plots import forest_plot, judge_map, residual_heatmap, win_probability_heatmap
from .posterior_plots import posterior_predictive_plot, prior_predictive_plot, rank_posterior_plot

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
    "prior_predictive_plot",
    "rank_posterior_plot",
    "render_html",
    "render_markdown",
    "report",
    "residual_heatmap",
    "to_scale",
    "wald",
    "win_probability_heatmap",
]
