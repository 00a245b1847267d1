"""hja_bayes: rank LLMs from pairwise comparisons by a panel of judges, with honest uncertainty.

Importing the package turns on JAX's 64-bit floats (``jax_enable_x64``): the constraints,
likelihoods and Fisher information here are checked to 1e-8, beyond float32.
"""

import jax as _jax

_jax.config.update("jax_enable_x64", True)

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
from .inference import (  # noqa: E402
    Interval,
    WaldInference,
    tangent_basis,
    wald_inference,
)
from .persistence import load_fit, load_posterior, save_fit  # noqa: E402
from .simulate import SimulationTruth, simulate  # noqa: E402
from .reporting import (  # noqa: E402
    forest_plot,
    judge_map,
    judge_table,
    leaderboard,
    leaderboard_by,
    observed_heatmap,
    pairwise_table,
    posterior_predictive_plot,
    rank_posterior_plot,
    report,
    residual_heatmap,
    win_probability_heatmap,
)
from . import datasets  # noqa: E402
from .bayes import HJAPriors, compare_intervals, sample_hja  # noqa: E402
from . import confidence  # noqa: E402

from .version import __version__  # noqa: E402, F401

__all__ = [
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
    "bicluster_residual",
    "canonicalize",
    "compare_intervals",
    "compose",
    "confidence",
    "datasets",
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
    "observed_heatmap",
    "pairwise_table",
    "posterior_predictive_plot",
    "rank_posterior_plot",
    "rank_criteria",
    "report",
    "residual_heatmap",
    "sample_hja",
    "save_fit",
    "simulate",
    "tangent_basis",
    "wald_inference",
    "win_probability_heatmap",
]
