"""A posterior as what a design believes now: the consensus draws of a posterior sample that
describes the same model as the fit the design is computed at."""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError

__all__ = ["consensus_draws"]


def consensus_draws(fit, posterior) -> np.ndarray:
    """The posterior's consensus draws, (draws, N), on the fit's scale.

    ``mu_marginal`` when the posterior has prompt effects (the population-averaged scale of
    ``fit_hja``), else ``mu``.  The posterior must come from the fit's model: the same
    judges and models in the same order, rank, position bias, outcome model and terms
    (``sample_hja(data, rank, init=fit)``, or ``load_posterior`` of the fit's folder).

    Raises
    ------
    ParameterError
        Not an InferenceData with a posterior group, another model, or fewer than two draws.
    """
    from ..bayes.compare import check_posterior
    from ..bayes.convert import posterior_draws
    from ..bayes.ranks import consensus_name

    check_posterior(posterior, fit)
    draws = np.asarray(posterior_draws(posterior, consensus_name(posterior)), dtype=float)
    if draws.shape[0] < 2 or not np.all(np.isfinite(draws)):
        raise ParameterError("the posterior needs at least two finite draws of the consensus")
    return draws
