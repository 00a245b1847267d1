"""hja_bayes: rank LLMs from pairwise comparisons by a panel of judges, with honest uncertainty.

Importing the package changes two pieces of JAX's global configuration, for the whole process:

* it turns on 64-bit floats (``jax_enable_x64``).  The constraints, likelihoods and
  information matrices here are checked to 1e-8, beyond float32, and JAX fixes the float
  width per process, so the package cannot keep float64 to itself.  Other JAX code in the
  same process then also computes in float64 by default.
* it points JAX's persistent compilation cache at ``~/.cache/hja_bayes`` (see
  :mod:`hja_bayes.cache`; ``HJA_BAYES_CACHE=off`` before the import turns that off, and a
  cache you configured yourself is kept).

Plotting, ArviZ, NumPyro, the confidence ranker and the adaptive design (``next_comparisons``,
``plan``) load on first use.
"""

import jax as _jax

_jax.config.update("jax_enable_x64", True)

from .cache import enable_compilation_cache as _enable_compilation_cache  # noqa: E402

_enable_compilation_cache()

from . import methods as _methods  # noqa: E402, F401  (the classes' upward methods)
from .btl import BTLFit, fit_per_judge_btl, fit_pooled_btl  # noqa: E402
from .comparisons import ComparisonSummary, Comparisons  # noqa: E402
from .decomposition import Decomposition, canonicalize, compose, free_parameters  # noqa: E402
from .hja import HJAFit, fit_btl_svd, fit_hja, rank_criteria  # noqa: E402
from .diagnostics import (  # noqa: E402
    Biclustering,
    JudgeLeverage,
    bicluster_residual,
    judge_leverage,
)
from .errors import (  # noqa: E402
    ConvergenceWarning,
    DataError,
    DataWarning,
    DisconnectedGraphError,
    HJAError,
    HJAWarning,
    IdentifiabilityError,
    ParameterError,
)
from .features import style_features  # noqa: E402
from .inference import (  # noqa: E402
    Interval,
    WaldInference,
    tangent_basis,
    wald_inference,
)
from .inference.agreement import Agreement, agreement  # noqa: E402
from .persistence import load_fit, load_posterior, save_fit  # noqa: E402
from .simulate import SimulationTruth, simulate  # noqa: E402
from .version import __version__  # noqa: E402, F401

#: Names whose modules load on first use: plotting, ArviZ, NumPyro and the confidence ranker
#: take seconds to import and most uses need none of them.
_LAZY = {
    **{name: "reporting" for name in (
        "bias_table", "forest_plot", "judge_map", "judge_table", "leaderboard", "leaderboard_by",
        "observed_heatmap", "pairwise_table", "posterior_predictive_plot", "prior_predictive_plot",
        "rank_posterior_plot", "report", "residual_heatmap", "win_probability_heatmap")},
    **{name: "bayes" for name in ("HJAPriors", "compare_intervals", "sample_hja")},
    # the defining modules: ``hja_bayes.design.plan`` is also the module's name, which an
    # explicit ``import hja_bayes.design.plan`` binds on the package
    "next_comparisons": "design.next", "plan": "design.plan",
}
_LAZY_MODULES = ("bayes", "confidence", "datasets", "design", "reporting")


def __getattr__(name):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))



__all__ = [
    "Agreement",
    "BTLFit",
    "Biclustering",
    "ComparisonSummary",
    "Comparisons",
    "ConvergenceWarning",
    "DataError",
    "DataWarning",
    "Decomposition",
    "DisconnectedGraphError",
    "HJAError",
    "HJAFit",
    "HJAWarning",
    "HJAPriors",
    "IdentifiabilityError",
    "Interval",
    "ParameterError",
    "JudgeLeverage",
    "SimulationTruth",
    "WaldInference",
    "agreement",
    "bias_table",
    "bicluster_residual",
    "canonicalize",
    "compare_intervals",
    "compose",
    "confidence",
    "datasets",
    "design",
    "fit_btl_svd",
    "fit_hja",
    "fit_per_judge_btl",
    "fit_pooled_btl",
    "forest_plot",
    "free_parameters",
    "judge_leverage",
    "judge_map",
    "judge_table",
    "leaderboard",
    "leaderboard_by",
    "load_fit",
    "load_posterior",
    "next_comparisons",
    "observed_heatmap",
    "pairwise_table",
    "plan",
    "posterior_predictive_plot",
    "prior_predictive_plot",
    "rank_posterior_plot",
    "rank_criteria",
    "report",
    "residual_heatmap",
    "sample_hja",
    "save_fit",
    "simulate",
    "style_features",
    "tangent_basis",
    "wald_inference",
    "win_probability_heatmap",
]
