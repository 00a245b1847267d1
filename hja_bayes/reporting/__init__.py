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

# eager: the function shares its module's name, which a lazy attribute could not shadow
from .fitted import wald  # noqa: E402
from .leaderboard import leaderboard, table_meta  # noqa: E402

#: Where each public name lives; modules load on first use, so a leaderboard does not pay
#: for matplotlib (figures) and a figure does not pay for the HTML renderer.
_HOMES = {
    "bias_plot": "biases", "bias_table": "biases",
    "leaderboard_by": "categories",
    "Report": "content", "build_report": "content",
    "convergence_table": "convergence",
    "ReportFiles": "files", "report": "files",
    "render_html": "html",
    "judge_table": "judges",
    "render_markdown": "markdown",
    "battle_counts": "observed", "observed_win_fraction": "observed",
    "pairwise_table": "pairwise",
    "forest_plot": "plots", "judge_map": "judge_plots", "observed_heatmap": "plots",
    "residual_heatmap": "plots", "win_probability_heatmap": "plots",
    "posterior_predictive_plot": "posterior_plots", "prior_predictive_plot": "posterior_plots",
    "rank_posterior_plot": "posterior_plots",
    "to_scale": "scales",
}


def __getattr__(name):
    import importlib
    import importlib.util

    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a module, e.g. biases
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Report",
    "ReportFiles",
    "battle_counts",
    "bias_plot",
    "bias_table",
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
