"""Bayesian HJA model (NumPyro): the model, NUTS sampling to ArviZ, posterior checks.

:func:`sample_hja` starts NUTS at the MAP of :func:`~hja_bayes.fit_hja` and returns an
``arviz.InferenceData`` whose posterior holds canonical (identified) draws;
:mod:`~hja_bayes.bayes.checks` compares them with Wald intervals, checks the posterior
predictive, compares ranks by PSIS-LOO and summarises the items' rank distribution.
"""

from .checks import (
    RankComparison,
    RankPosterior,
    bayesian_p_value,
    compare_intervals,
    compare_ranks,
    plot_calibration,
    plot_ppc_win_rates,
    plot_rank_posterior,
    ppc_calibration,
    ppc_judge_win_rates,
    ppc_pair_win_rates,
    rank_comparison,
    rank_posterior,
)
from .model import HJAPriors, hja_model
from .sample import sample_hja

__all__ = [
    "HJAPriors",
    "RankComparison",
    "RankPosterior",
    "bayesian_p_value",
    "compare_intervals",
    "compare_ranks",
    "hja_model",
    "plot_calibration",
    "plot_ppc_win_rates",
    "plot_rank_posterior",
    "ppc_calibration",
    "ppc_judge_win_rates",
    "ppc_pair_win_rates",
    "rank_comparison",
    "rank_posterior",
    "sample_hja",
]
