"""Bayesian HJA model (NumPyro): the model, NUTS sampling to ArviZ, posterior checks.

:func:`sample_hja` starts NUTS near the MAP of :func:`~hja_bayes.fit_hja` and returns an
``arviz.InferenceData`` whose posterior holds canonical (identified) draws aligned to the
MAP.  The modules, one job each:

* :mod:`~hja_bayes.bayes.model` (the NumPyro model), :mod:`~hja_bayes.bayes.coordinates`
  (its reparameterisation), :mod:`~hja_bayes.bayes.priors` (prior scales),
  :mod:`~hja_bayes.bayes.outcomes` (the outcome model's counts and parameters, on the
  likelihood seam), :mod:`~hja_bayes.bayes.prompts` (answer-quality effects),
  :mod:`~hja_bayes.bayes.prior` (implied priors, prior predictive);
* :mod:`~hja_bayes.bayes.problem` (the request and the MAP as a start),
  :mod:`~hja_bayes.bayes.run` (NUTS), :mod:`~hja_bayes.bayes.laplace` (starts and mass
  matrix; :mod:`~hja_bayes.bayes.arrow` builds it for sampled answer effects),
  :mod:`~hja_bayes.bayes.align` (canonical draws aligned to the MAP),
  :mod:`~hja_bayes.bayes.assemble` (replicated data, log-likelihood),
  :mod:`~hja_bayes.bayes.convert` (the ``InferenceData`` layout),
  :mod:`~hja_bayes.bayes.diagnose` (warnings; :mod:`~hja_bayes.bayes.mixing` computes
  R-hat and ESS for every entry at once);
* :mod:`~hja_bayes.bayes.ppc` (posterior predictive checks), :mod:`~hja_bayes.bayes.loo`
  (PSIS-LOO over comparisons, rank choice), :mod:`~hja_bayes.bayes.compare` (Wald against
  credible intervals), :mod:`~hja_bayes.bayes.ranks` (posterior of the items' ranks).

The figures live in :mod:`hja_bayes.reporting.posterior_plots`; ``plot_calibration``,
``plot_ppc_win_rates`` and ``plot_rank_posterior`` are re-exported here.  Names are loaded
on first use, so importing this package loads neither NumPyro nor ArviZ nor matplotlib.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "HJAPriors": ".priors",
    "hja_model": ".model",
    "sample_hja": ".run",
    "PromptMode": ".run",
    "prompt_effects_mode": ".run",
    "default_prompt_method": ".problem",
    "compare_intervals": ".compare",
    "FIRST_SHOWN": ".ppc",
    "bayesian_p_value": ".ppc",
    "ppc_calibration": ".ppc",
    "ppc_judge_win_rates": ".ppc",
    "ppc_pair_win_rates": ".ppc",
    "ppc_tie_rates": ".ppc",
    "ppc_category_rates": ".ppc",
    "LooResult": ".loo",
    "RankComparison": ".loo",
    "compare_ranks": ".loo",
    "psis_loo": ".loo",
    "rank_comparison": ".loo",
    "RankPosterior": ".ranks",
    "rank_posterior": ".ranks",
    "PriorPredictive": ".prior",
    "prior_predictive": ".prior",
    "implied_win_probabilities": ".prior",
    "plot_calibration": "..reporting.posterior_plots",
    "plot_ppc_win_rates": "..reporting.posterior_plots",
    "plot_rank_posterior": "..reporting.posterior_plots",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
