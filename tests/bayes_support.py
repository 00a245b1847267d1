"""Posterior samples shared by the Bayesian test modules (sampled once per session)."""

import functools
import warnings

from hja_bayes import ConvergenceWarning, fit_hja, sample_hja, simulate

SETTINGS = dict(num_warmup=300, num_samples=300, num_chains=2, progress_bar=False)


def quiet_sample(*args, **kwargs):
    """sample_hja with short test settings.  R-hat of 600 draws can exceed 1.01 by chance,
    so the ConvergenceWarning is silenced here (the warning has its own tests)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return sample_hja(*args, **{**SETTINGS, **kwargs})


@functools.lru_cache(maxsize=None)
def panel():
    """Well-conditioned panel: 3 judges, 5 items, rank 1, position bias, 1500 comparisons
    each; its MAP fit and a posterior sample.  Returns (data, truth, fit, idata)."""
    data, truth = simulate(3, 5, 1, 1500, seed=11, position_bias=0.4)
    fit = fit_hja(data, 1, position_bias=True)
    return data, truth, fit, quiet_sample(data, 1, init=fit, seed=1)


@functools.lru_cache(maxsize=None)
def panel_rank0():
    """The same data at rank 0 (short run), for rank comparisons."""
    data, _, _, _ = panel()
    fit = fit_hja(data, 0, position_bias=True)
    return fit, quiet_sample(data, 0, init=fit, seed=3, num_warmup=200, num_samples=200)
