"""Reports of a fitted model: tables, figures, and one self-contained HTML file.

The report layer arranges results computed by the fit, inference and diagnostics modules;
it computes no statistics of its own (the observed tables are counts of the data).

Modules: ``leaderboard`` (the ranking, default and Arena styles, table metadata),
``categories`` (one leaderboard per category),
``judges`` and ``pairwise`` (the other tables), ``observed`` (counts of the data),
``convergence`` (the sampler's diagnostics), ``plots`` (figures), ``sentences`` (the
words), ``content`` (a Report, gathered), ``formatting``, ``html`` and ``markdown``
(rendering), ``files`` (writing a report folder).
"""

from .categories import leaderboard_by
from .content import Report, build_report
from .convergence import convergence_table
from .files import ReportFiles, report
from .html import render_html
from .judges import judge_table
from .leaderboard import leaderboard, table_meta, wald
from .markdown import render_markdown
from .observed import battle_counts, observed_win_fraction
from .pairwise import pairwise_table
from .plots import (
    forest_plot,
    judge_map,
    observed_heatmap,
    residual_heatmap,
    win_probability_heatmap,
)
from .posterior_plots import posterior_predictive_plot, prior_predictive_plot, rank_posterior_plot
from .scales import to_scale

__all__ = [
    "Report",
    "ReportFiles",
    "battle_counts",
    "build_report",
    "convergence_table",
    "forest_plot",
    "judge_map",
    "judge_table",
    "leaderboard",
    "leaderboard_by",
    "observed_heatmap",
    "observed_win_fraction",
    "pairwise_table",
    "posterior_predictive_plot",
    "prior_predictive_plot",
    "rank_posterior_plot",
    "render_html",
    "render_markdown",
    "report",
    "residual_heatmap",
    "table_meta",
    "to_scale",
    "wald",
    "win_probability_heatmap",
]
