"""Ordered verdicts (five levels) in the Bayesian model: cut-point gaps per judge, the
log-likelihood per comparison, LOO and the predictive checks."""

import functools

import arviz as az
import numpy as np
import pytest
from scipy.special import expit

from hja_bayes import fit_hja
from hja_bayes.bayes import (
    ppc_category_rates,
    ppc_judge_win_rates,
    ppc_tie_rates,
    prior_predictive,
    psis_loo,
)

from .bayes_support import ORDINAL_GAPS, ordinal_panel, quiet_sample


@functools.lru_cache(maxsize=None)
def ordinal_posterior():
    data, S, beta = ordinal_panel()
    fit = fit_hja(data, 1, position_bias=True, outcome="ordinal")
    idata = quiet_sample(data, 1, init=fit, seed=2, num_warmup=150, num_samples=150)
    return data, fit, idata


@pytest.fixture(scope="module")
def panel():
    return ordinal_posterior()


def flat(idata, name):
    x = np.asarray(idata.posterior[name])
    return x.reshape((-1,) + x.shape[2:])


def test_the_posterior_holds_the_scales_own_parameters(panel):
    data, fit, idata = panel
    post = idata.posterior
    assert post.attrs["outcome"] == "ordinal"
    assert {"gap_1", "gap_2"} <= set(post.data_vars) and "nu" not in post.data_vars
    assert post["gap_1"].dims == ("chain", "draw", "judge")
    assert np.all(flat(idata, "gap_1") > 0) and np.all(flat(idata, "gap_2") > 0)
    np.testing.assert_array_equal(idata.constant_data["counts"], data.counts)
    assert list(idata.constant_data["category"].values) == list(data.categories)
    assert idata.posterior_predictive["category_counts"].shape == (2, 150, 3, 5)


def test_posterior_means_agree_with_the_map(panel):
    """|posterior mean - MAP| <= 4 MCSE + 0.2 posterior sd for every mu_a - mu_b, beta and
    the cut-point gaps (about 500 verdicts per judge: a near-normal posterior, the priors'
    pull well below 0.1 sd); the gaps' posterior also covers the truth (3.5 sd)."""
    _, fit, idata = panel
    N = len(fit.items)
    a, b = np.triu_indices(N, k=1)
    mu = np.asarray(idata.posterior["mu"])
    cases = {"mu_diff": (mu[..., a] - mu[..., b], fit.mu[a] - fit.mu[b]),
             "beta": (np.asarray(idata.posterior["beta"]), fit.beta),
             "gap_1": (np.asarray(idata.posterior["gap_1"]), fit.aux[:, 0]),
             "gap_2": (np.asarray(idata.posterior["gap_2"]), fit.aux[:, 1])}
    for name, (draws, map_value) in cases.items():
        mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
        mcse = np.asarray(az.mcse(az.convert_to_dataset(draws))["x"])
        assert np.all(np.abs(mean - map_value) <= 4 * mcse + 0.2 * sd), (name, mean - map_value)
    gaps = np.stack([flat(idata, "gap_1"), flat(idata, "gap_2")], axis=-1)
    assert np.all(np.abs(gaps.mean(0) - np.asarray(ORDINAL_GAPS)) < 3.5 * gaps.std(0))


def _cumulative_logit(eta, t1, t2):
    """P(category c) of the five levels, written out: P(Y <= c) = expit(eta + kappa_c),
    kappa = (-t2, -t1, t1, t2) with t1 = gap_1, t2 = gap_1 + gap_2."""
    cum = [expit(eta + k) for k in (-t2, -t1, t1, t2)]
    edges = [np.zeros_like(eta)] + cum + [np.ones_like(eta)]
    return np.stack([edges[c + 1] - edges[c] for c in range(5)], axis=-1)


def test_log_likelihood_is_each_comparisons_category_probability(panel):
    data, _, idata = panel
    ll = idata.log_likelihood["verdicts"]
    stored = np.asarray(ll).reshape(-1, ll.shape[-1])[::29]
    S, beta = flat(idata, "S")[::29], flat(idata, "beta")[::29]
    g1, g2 = flat(idata, "gap_1")[::29], flat(idata, "gap_2")[::29]
    judges, items = list(data.judges), list(data.items)
    k = np.array([judges.index(x) for x in ll["comparison_judge"].values])
    i = np.array([items.index(x) for x in ll["comparison_first"].values])
    j = np.array([items.index(x) for x in ll["comparison_second"].values])
    category = np.array([list(data.categories).index(x) for x in ll["comparison_outcome"].values])
    eta = beta[:, k] + S[:, k, i] - S[:, k, j]
    p = _cumulative_logit(eta, g1[:, k], g1[:, k] + g2[:, k])
    expected = np.log(np.take_along_axis(p, np.broadcast_to(category[None, :, None],
                                                             p.shape[:2] + (1,)), -1)[..., 0])
    np.testing.assert_allclose(stored, expected, rtol=1e-9, atol=1e-12)
    # one comparison per verdict, each category as often as in the data
    np.testing.assert_array_equal(np.bincount(category, minlength=5), data.counts.sum(0))
    ours, theirs = psis_loo(idata), az.loo(idata)
    assert ours.elpd_loo == pytest.approx(theirs.elpd_loo, rel=1e-10)
    assert set(np.unique(ours.outcome)) == set(range(5))


def test_predictive_checks_on_the_scale_and_its_three_outcome_view(panel):
    data, _, idata = panel
    table = ppc_category_rates(idata)
    per_judge = np.stack([np.bincount(data.judge, data.counts[:, c], 3) for c in range(5)], 1)
    np.testing.assert_allclose(table.observed, (per_judge / per_judge.sum(1, keepdims=True)).ravel())
    assert list(table.category[:5]) == list(data.categories)
    assert np.all(table.p_value.between(0.001, 0.999))
    # wins in the collapsed view (the first item's side, the middle category 1/2)
    wins = ppc_judge_win_rates(idata)
    first = wins[wins.item == "(first shown)"]
    n = np.bincount(data.judge, data.n, 3)
    np.testing.assert_allclose(first.observed, np.bincount(data.judge, data.wins, 3) / n)
    ties = ppc_tie_rates(idata)
    np.testing.assert_allclose(ties.observed, np.bincount(data.judge, data.counts[:, 2], 3) / n)
    # the report's figure checks the category shares too (it had checked win rates only)
    from hja_bayes.reporting import posterior_predictive_plot

    right = posterior_predictive_plot(idata).axes[2]
    assert "category shares" in right.get_title()
    drawn = np.concatenate([line.get_ydata() for line in right.lines
                            if line.get_marker() == "o"])  # the points, red or not
    np.testing.assert_allclose(np.sort(drawn), np.sort(table.observed))


def test_prior_predictive_draws_on_the_scale(panel):
    data, _, _ = panel
    prior = prior_predictive(data, 1, position_bias=True, outcome="ordinal", num_samples=200)
    assert prior.outcomes.shape == (200, data.n_cells, 5)
    np.testing.assert_array_equal(prior.outcomes.sum(-1),
                                  np.broadcast_to(data.n, (200, data.n_cells)))
    assert np.all(prior.draws["gap_1"] > 0) and prior.draws["gap_2"].shape == (200, 3)
