"""Linear terms in the Bayesian model: position bias, self-preference, style (per judge and
shared) as sampled coefficients with their own priors."""

import functools
import pathlib
import re

import arviz as az
import jax
import numpy as np
import pytest
from numpyro.infer.util import log_density
from scipy import stats

from hja_bayes import ParameterError, compare_intervals, fit_hja, sample_hja
from hja_bayes.bayes import HJAPriors, psis_loo
from hja_bayes.bayes.model import (
    RawCoordinates,
    constrain,
    default_chart,
    hja_model,
    term_layout,
)
from hja_bayes.bayes.outcomes import stack_counts
from hja_bayes.likelihood import cells_of, outcome_model
from hja_bayes.likelihood.terms import design_of, terms_of

from .bayes_support import quiet_sample, style_panel


@functools.lru_cache(maxsize=None)
def styled():
    """Shared style and self-preference of two judges, rank 1, no prompt effects."""
    data, _, owners = style_panel()
    fit = fit_hja(data, 1, style="shared", self_preference=owners)
    idata = quiet_sample(data, 1, init=fit, prompt_effects=False, seed=3, num_warmup=150,
                         num_samples=150)
    return data, fit, idata


@pytest.fixture(scope="module")
def panel():
    return styled()


def test_log_density_with_terms_matches_an_independent_computation():
    """Per-judge style, self-preference (judge 2 owns no model: held at 0) and position
    bias: the model's log density is the Bernoulli log-likelihood of every (prompt, cell)
    entry with eta = beta_k + S_ki - S_kj + theta_k d + lambda_k s, plus normal priors of
    the coefficients at their own scales."""
    data, _, owners = style_panel(n_prompts=6)
    K, N, r = 3, 5, 1
    terms = terms_of(True, "per_judge", owners)
    design = design_of(data, terms)
    assert design.level == "entries" and design.names == ("position", "style:length", "self")
    cells = cells_of(data, outcome=outcome_model("half"), design=design)
    priors = HJAPriors(beta_scale=0.7, style_scale=0.5, self_scale=1.3)
    rng = np.random.default_rng(4)
    raw = RawCoordinates(*(np.asarray(rng.normal(size=n)) for n in (N - 1, K - 1, K - 1)),
                         rng.normal(size=(N - 2, 1)), rng.normal(size=K))
    coef = rng.normal(size=K + 2)  # style of judges 0, 1, 2, then self of judges 0, 1
    params = {"z_mu": raw.z_mu, "z_gamma": raw.z_gamma, "l_free": raw.l_free, "w": raw.w,
              "beta_raw": raw.beta, "coef_raw": coef}
    chart = default_chart(K, N)
    value = jax.jit(lambda p: log_density(
        hja_model, (cells, chart, stack_counts(cells)),
        dict(rank=r, position_bias=True, terms=term_layout(design), priors=priors), p)[0])(params)
    gamma, mu, U, V, beta = (np.asarray(x) for x in constrain(raw, chart, r))
    S = np.outer(gamma, mu) + U @ V.T
    c = data.clusters
    k, i, j = data.judge[c.cell], data.first[c.cell], data.second[c.cell]
    d = c.features[:, 0]
    own = np.array([0, 1, -1])[k]
    lam = np.array([coef[3], coef[4], 0.0])
    eta = (beta[k] + S[k, i] - S[k, j] + coef[:3][k] * d
           + lam[k] * ((i == own).astype(float) - (j == own)))
    wins, n = c.counts[:, 0] + c.counts[:, 1] / 2, c.counts.sum(1)
    expected = np.sum(wins * eta - n * np.logaddexp(0, eta))
    expected += stats.norm.logpdf(raw.z_mu, 0, priors.mu_scale).sum()
    expected += stats.norm.logpdf(raw.z_gamma, 0, priors.gamma_scale).sum()
    expected += stats.norm.logpdf(raw.l_free, 0, priors.U_scale).sum()
    expected += stats.norm.logpdf(raw.w).sum() - 0.5 * np.sum(
        (raw.w.T @ raw.w / (N - 2) - 1) ** 2) / priors.gram_pin**2
    expected += stats.norm.logpdf(raw.beta, 0, 0.7).sum()
    expected += stats.norm.logpdf(coef[:3], 0, 0.5).sum() + stats.norm.logpdf(coef[3:], 0, 1.3).sum()
    assert float(value) == pytest.approx(expected, rel=1e-12, abs=1e-9)


def test_coefficients_are_in_the_posterior_with_their_names(panel):
    data, fit, idata = panel
    post = idata.posterior
    assert post.attrs["units"] == "entries" and post.attrs["prompt_effects"] == 0
    assert list(post["term"].values) == list(fit.coef_names) == ["self"]
    assert list(post["shared_term"].values) == list(fit.theta_names) == ["style:length"]
    assert post["coef"].dims == ("chain", "draw", "judge", "term")
    assert np.all(np.asarray(post["coef"])[..., 2, 0] == 0.0)  # judge 2 owns no model
    assert idata.constant_data["entry_X"].shape == (len(data.clusters.cell), 1)
    assert idata.log_likelihood["verdicts"].shape[-1] == int(data.n.sum())
    assert psis_loo(idata).elpd_loo == pytest.approx(az.loo(idata).elpd_loo, rel=1e-10)
    # convergence diagnostics cover them
    rhat = az.rhat(post[["coef", "theta"]].isel(judge=[0, 1]))  # judge 2's is held
    assert float(rhat["theta"].max()) < 1.05 and float(rhat["coef"].max()) < 1.05


def test_posterior_of_the_coefficients_agrees_with_the_map(panel):
    """|posterior mean - MAP| <= 4 MCSE + 0.2 posterior sd for lambda_k, theta and every
    mu_a - mu_b (1,800 verdicts: the N(0, 1) priors pull by under 0.05 sd here)."""
    _, fit, idata = panel
    post = idata.posterior
    N = len(fit.items)
    a, b = np.triu_indices(N, k=1)
    mu = np.asarray(post["mu"])
    cases = {"self": (np.asarray(post["coef"])[..., :2, 0], fit.coef[:2, 0]),
             "theta": (np.asarray(post["theta"]), fit.theta),
             "mu_diff": (mu[..., a] - mu[..., b], fit.mu[a] - fit.mu[b])}
    for name, (draws, map_value) in cases.items():
        mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
        mcse = np.asarray(az.mcse(az.convert_to_dataset(draws))["x"])
        assert np.all(np.abs(mean - map_value) <= 4 * mcse + 0.2 * sd), (name, mean - map_value)
    table = compare_intervals(fit, idata).set_index(["quantity", "label"])
    assert table.loc[("style:length", "(panel)"), "post_mean"] == pytest.approx(
        float(np.asarray(post["theta"]).mean()))
    assert {("self", "judge0"), ("self", "judge1")} <= set(table.index)
    # judge 2 owns no model: its coefficient is held at 0 on both sides and has no row (it
    # had a row of NaN, in the Wald table too)
    assert ("self", "judge2") not in table.index
    rows = fit.intervals()
    assert rows.loc[rows.quantity == "self", "label"].tolist() == ["judge0", "judge1"]
    assert np.isfinite(rows[["estimate", "se", "lower", "upper"]]).all().all()


def test_compare_intervals_has_the_panel_value_of_a_per_judge_style():
    """The panel value of a per-judge style (the mean of the judges' coefficients) has a
    posterior side: the mean over the judges, draw by draw (it had a Wald row only)."""
    data, _, _ = style_panel(n_prompts=6)
    fit = fit_hja(data, 0, style="per_judge")
    idata = quiet_sample(data, 0, init=fit, style="per_judge", prompt_effects=False, seed=2,
                         num_chains=1, num_warmup=40, num_samples=40)
    table = compare_intervals(fit, idata).set_index(["quantity", "label"])
    row = table.loc[("style:length", "(panel)")]
    draws = np.asarray(idata.posterior["coef"])[..., 0].mean(axis=-1).ravel()
    assert row["post_mean"] == pytest.approx(draws.mean())
    assert row["eti_lower"] == pytest.approx(np.quantile(draws, 0.025))
    wald = fit.wald.panel_coefficient("style:length")
    assert row["wald_estimate"] == pytest.approx(float(wald.estimate))
    assert row["wald_se"] == pytest.approx(float(wald.se))
    judges = table.xs("style:length", level="quantity")
    assert list(judges.index) == [*fit.judges, "(panel)"]


def test_terms_must_match_the_map():
    data, _, owners = style_panel(n_prompts=4)
    fit = fit_hja(data, 0, style="shared")
    with pytest.raises(ParameterError, match="terms"):
        sample_hja(data, 0, init=fit, style="per_judge", num_warmup=5, num_samples=5,
                   progress_bar=False)


def test_the_model_module_knows_no_outcome_parameter_by_name():
    """The outcome model owns its extra parameters: the NumPyro model's source names none."""
    source = pathlib.Path(hja_model.__code__.co_filename).read_text()
    assert not re.search(r"\bnu\b|log_nu|davidson|gap_\d", source, flags=re.IGNORECASE)
