"""Whole-posterior ArviZ calls work at every rank (U, V, D are left out at rank 0)."""

import warnings

import arviz as az
import matplotlib
import numpy as np
import pytest

from .bayes_support import panel, panel_rank0

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def posteriors():
    return {0: panel_rank0()[1], 1: panel()[3]}


@pytest.mark.parametrize("rank", [0, 1])
def test_summary_trace_forest_and_loo_on_the_whole_posterior(posteriors, rank):
    import matplotlib.pyplot as plt

    idata = posteriors[rank]
    assert ("U" in idata.posterior) == (rank > 0) and ("D" in idata.posterior) == (rank > 0)
    summary = az.summary(idata)
    assert np.isfinite(summary["mean"]).all() and np.isfinite(summary["r_hat"]).all()
    with warnings.catch_warnings():
        # ArviZ 0.x's plotting calls matplotlib APIs deprecated in 3.11 (not ours to fix)
        warnings.simplefilter("ignore", matplotlib.MatplotlibDeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)  # matplotlib layout notices
        az.plot_trace(idata, compact=True)
        az.plot_forest(idata, combined=True)
    plt.close("all")
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo)


def test_compare_across_ranks(posteriors):
    table = az.compare(posteriors)
    assert set(table.index) == {0, 1}
