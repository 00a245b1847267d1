"""Davidson ties in the Bayesian model: nu_k per judge, three-outcome likelihood, LOO, PPC."""

import functools

import arviz as az
import jax
import numpy as np
import pytest
from numpyro.infer import Predictive

from hja_bayes import ParameterError, fit_hja, judge_table, sample_hja, simulate
from hja_bayes.bayes import HJAPriors, psis_loo
from hja_bayes.bayes.model import default_chart, hja_model
from hja_bayes.bayes.priors import aux_prior
from hja_bayes.likelihood import cells_of, outcome_model

from .bayes_support import quiet_sample

#: Judge 0 never ties (nu = 0 in the truth): its nu must be held at 0.
NU = np.array([0.0, 0.5, 1.5])


@functools.lru_cache(maxsize=None)
def davidson_panel():
    data, truth = simulate(3, 5, 1, 1500, seed=7, position_bias=0.3, outcome="davidson", nu=NU)
    fit = fit_hja(data, 1, position_bias=True, outcome="davidson")
    return data, truth, fit, quiet_sample(data, 1, init=fit, seed=4)


@pytest.fixture(scope="module")
def panel():
    return davidson_panel()


def test_nu_is_in_the_posterior_and_a_judge_that_never_tied_stays_at_zero(panel):
    data, _, fit, idata = panel
    assert np.bincount(data.judge, data.ties, 3)[0] == 0 < np.bincount(data.judge, data.ties, 3)[1]
    nu = np.asarray(idata.posterior["nu"])
    assert nu.shape == (2, 300, 3) and list(idata.posterior["nu"].dims[2:]) == ["judge"]
    assert np.all(nu[..., 0] == 0.0) and fit.nu[0] == 0.0
    assert np.all(nu[..., 1:] > 0)
    assert idata.posterior.attrs["outcome"] == "davidson"


def test_posterior_of_nu_covers_the_truth(panel):
    # ~1500 comparisons per judge: the posterior sd of nu is ~0.05-0.1; the truth must lie
    # within 3.3 posterior sd of the mean (two-sided 0.1% each, fixed seed)
    _, truth, fit, idata = panel
    nu = np.asarray(idata.posterior["nu"]).reshape(-1, 3)[:, 1:]
    mean, sd = nu.mean(0), nu.std(0)
    assert np.all(np.abs(mean - truth.nu[1:]) < 3.3 * sd), (mean, sd, truth.nu)
    # and the posterior agrees with the MAP to a fraction of its sd
    assert np.all(np.abs(mean - fit.nu[1:]) < 0.5 * sd)


def _davidson_log_prob(eta, nu, outcome):
    """log P(outcome) of one comparison, written out from Davidson (1970)."""
    z = np.exp(eta / 2) + np.exp(-eta / 2) + nu
    p = {"first": np.exp(eta / 2) / z, "tie": nu / z, "second": np.exp(-eta / 2) / z}
    return np.log(p[outcome])


def test_log_likelihood_is_each_comparisons_three_outcome_probability(panel):
    data, _, _, idata = panel
    post = idata.posterior
    S = np.asarray(post["S"]).reshape(-1, 3, 5)[::37]
    beta = np.asarray(post["beta"]).reshape(-1, 3)[::37]
    nu = np.asarray(post["nu"]).reshape(-1, 3)[::37]
    ll = idata.log_likelihood["verdicts"]
    stored = np.asarray(ll).reshape(-1, ll.shape[-1])[::37]
    judges, items = list(data.judges), list(data.items)
    k = np.array([judges.index(x) for x in ll["comparison_judge"].values])
    i = np.array([items.index(x) for x in ll["comparison_first"].values])
    j = np.array([items.index(x) for x in ll["comparison_second"].values])
    outcome = ll["comparison_outcome"].values
    eta = beta[:, k] + S[:, k, i] - S[:, k, j]
    expected = np.empty_like(eta)
    for name in ("first", "tie", "second"):
        m = outcome == name
        assert m.any()
        expected[:, m] = _davidson_log_prob(eta[:, m], nu[:, k[m]], name)
    np.testing.assert_allclose(stored, expected, rtol=1e-10, atol=1e-12)
    # one comparison per verdict, each outcome as often as in the data
    assert (outcome == "tie").sum() == data.ties.sum()
    assert (outcome == "first").sum() == data.first_wins.sum()


def test_psis_loo_over_three_outcomes_equals_arviz(panel):
    _, _, _, idata = panel
    ours, theirs = psis_loo(idata), az.loo(idata)
    assert ours.elpd_loo == pytest.approx(theirs.elpd_loo, rel=1e-10)
    assert ours.p_loo == pytest.approx(theirs.p_loo, rel=1e-8)
    assert set(np.unique(ours.outcome)) == {0, 1, 2}


def test_posterior_predictive_replicates_ties(panel):
    data, _, _, idata = panel
    rep = np.asarray(idata.posterior_predictive["ties"]).reshape(-1, data.n_cells)
    np.testing.assert_array_equal(idata.observed_data["ties"], data.ties)
    per_judge = np.stack([np.bincount(data.judge, r, 3) for r in rep])
    observed = np.bincount(data.judge, data.ties, 3)
    assert np.all(per_judge[:, 0] == 0)  # nu_0 = 0: no replicated ties
    # the observed tie count of each tying judge is inside its 99% predictive interval
    lo, hi = np.quantile(per_judge[:, 1:], [0.005, 0.995], axis=0)
    assert np.all((lo <= observed[1:]) & (observed[1:] <= hi)), (lo, observed, hi)
    wins = np.asarray(idata.posterior_predictive["wins"]).reshape(-1, data.n_cells)
    assert np.all(wins <= data.n + 1e-9) and np.all(rep <= data.n)


def test_implied_prior_tie_probability_is_the_documented_one():
    # nu/(2 + nu) at log nu ~ N(0, 1.5^2): median 1/3, 5% and 95% quantiles 0.041 and 0.855
    data, _ = simulate(3, 4, 0, 20, seed=0)
    out = Predictive(hja_model, num_samples=4000)(
        jax.random.PRNGKey(0), cells_of(data), default_chart(3, 4), rank=0,
        outcome="davidson")
    nu = np.asarray(out["nu"]).ravel()
    p = nu / (2 + nu)
    # 12,000 draws: the quantiles' sampling sd is below 0.01
    np.testing.assert_allclose(np.quantile(p, [0.05, 0.5, 0.95]), [0.041, 1 / 3, 0.855],
                               atol=0.025)
    assert aux_prior(outcome_model("davidson"), HJAPriors()) == (0.0, 1.5)


def test_ties_must_match_the_map():
    data, _ = simulate(3, 4, 0, 200, seed=0, outcome="davidson", nu=0.5)
    fit = fit_hja(data, 0)
    with pytest.raises(ParameterError, match="davidson"):
        sample_hja(data, 0, init=fit, outcome="davidson", num_warmup=5, num_samples=5,
                   num_chains=1, progress_bar=False)


def test_ppc_of_tie_rates(panel):
    from hja_bayes.bayes import ppc_tie_rates

    data, _, _, idata = panel
    table = ppc_tie_rates(idata)
    np.testing.assert_allclose(table.observed, np.bincount(data.judge, data.ties, 3)
                               / np.bincount(data.judge, data.n, 3))
    assert table.predicted_upper[0] == 0.0  # nu_0 held at 0
    assert np.all(table.p_value[1:].between(0.005, 0.995))
    from hja_bayes.reporting import posterior_predictive_plot  # in the report's figure too

    assert "tie rates" in posterior_predictive_plot(idata).axes[2].get_title()


def test_ppc_of_tie_rates_needs_replicated_ties():
    from hja_bayes.bayes import ppc_tie_rates

    from .bayes_support import panel as half_panel

    with pytest.raises(ParameterError, match="davidson"):
        ppc_tie_rates(half_panel()[3])


def test_log_nu_prior_fields_still_override_the_outcome_models_prior():
    davidson, ordinal = outcome_model("davidson"), outcome_model("ordinal")
    with pytest.warns(DeprecationWarning, match="aux_prior"):
        assert aux_prior(davidson, HJAPriors(log_nu_scale=0.5)) == (0.0, 0.5)
    with pytest.warns(DeprecationWarning):  # a model without "nu" keeps its own prior
        assert aux_prior(ordinal, HJAPriors(log_nu_loc=1.0)) == ordinal.prior
    assert aux_prior(ordinal, HJAPriors(aux_prior=(0.5, 2.0))) == (0.5, 2.0)
    with pytest.raises(ParameterError):
        aux_prior(davidson, HJAPriors(aux_prior=(0.0, -1.0)))


def test_the_judge_table_sets_the_credible_nu_beside_the_wald_nu(panel):
    _, _, fit, idata = panel
    table = judge_table(fit, idata, level=0.9)
    nu = np.asarray(idata.posterior["nu"]).reshape(-1, 3)
    np.testing.assert_allclose(table["nu_cred_lower"], np.quantile(nu, 0.05, axis=0))
    np.testing.assert_allclose(table["nu_cred_upper"], np.quantile(nu, 0.95, axis=0))
    assert np.isnan(table["nu_lower"][0]) and table["nu_cred_upper"][0] == 0  # held at 0
