"""The NumPyro HJA model and its unconstrained <-> constrained map."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro.infer import Predictive
from numpyro.infer.util import log_density
from scipy import stats
from scipy.special import gammaln

from hja_bayes import canonicalize, simulate
from hja_bayes.bayes.model import (
    HJAPriors,
    RawCoordinates,
    chart_at,
    constrain,
    default_chart,
    hja_model,
    raw_sizes,
    unconstrain,
)
from hja_bayes.decomposition import free_parameters
from hja_bayes.bayes.outcomes import stack_counts
from hja_bayes.likelihood import cells_of


constrain_jit = jax.jit(constrain, static_argnums=2)


def random_raw(rng, K, N, r, position_bias=False):
    sizes = raw_sizes(K, N, r)
    return RawCoordinates(
        jnp.asarray(rng.normal(size=sizes["z_mu"])), jnp.asarray(rng.normal(size=sizes["z_gamma"])),
        jnp.asarray(rng.normal(size=sizes["l_free"])), jnp.asarray(rng.normal(size=(N - 2, r))),
        jnp.asarray(rng.normal(size=K) if position_bias else np.zeros(0)))


@pytest.mark.parametrize("K,N,r", [(3, 5, 0), (4, 6, 1), (5, 7, 2), (4, 8, 3)])
def test_raw_coordinates_count_identified_parameters_plus_pinned_gram(K, N, r):
    sizes = raw_sizes(K, N, r)
    sampled = sizes["z_mu"] + sizes["z_gamma"] + sizes["l_free"] + sizes["w"]
    assert sizes["identified"] == free_parameters(K, N, r)
    assert sampled - sizes["identified"] == r * (r + 1) // 2


@pytest.mark.parametrize("K,N,r", [(3, 5, 0), (4, 6, 1), (5, 7, 2), (4, 8, 3)])
def test_every_raw_point_satisfies_the_constraints(K, N, r):
    rng = np.random.default_rng(K * 100 + N * 10 + r)
    for chart in (default_chart(K, N), chart_at(canonicalize(rng.normal(size=(K, N)), r))):
        for _ in range(3):
            gamma, mu, U, V, beta = (np.asarray(x) for x in constrain_jit(random_raw(rng, K, N, r), chart, r))
            assert abs(mu.sum()) < 1e-12 and abs(gamma.sum() - K) < 1e-12
            assert np.abs(U.sum(axis=0)).max(initial=0) < 1e-12
            assert np.abs(V.sum(axis=0)).max(initial=0) < 1e-12
            assert np.abs(mu @ V).max(initial=0) < 1e-11
            assert np.abs(V.T @ V - N * np.eye(r)).max(initial=0) < 1e-11
            assert np.all(beta == 0)


@pytest.mark.parametrize("r,position_bias", [(0, False), (1, False), (2, True)])
def test_unconstrain_inverts_constrain(r, position_bias):
    data, truth = simulate(5, 7, r, 100, seed=3, position_bias=0.3 * position_bias)
    d = canonicalize(truth.S, r)
    beta = truth.beta if position_bias else None
    for chart in (chart_at(d), default_chart(5, 7)):
        raw = unconstrain(d, beta, chart)
        gamma, mu, U, V, b = constrain(raw, chart, r)
        np.testing.assert_allclose(np.outer(gamma, mu) + U @ V.T, truth.S, atol=1e-12)
        np.testing.assert_allclose(b, truth.beta, atol=1e-15)
        np.testing.assert_allclose(gamma, d.gamma, atol=1e-12)
        np.testing.assert_allclose(mu, d.mu, atol=1e-12)
    raw = unconstrain(d, beta, chart_at(d))
    if r:  # at its own chart the MAP sits where L is diagonal and W^T W = (N - 2) I
        np.testing.assert_allclose(raw.w.T @ raw.w, 5 * np.eye(r), atol=1e-12)


def test_pinned_gram_coordinates_are_invisible():
    """V depends on the raw W only through its orthonormal factor: W -> W T (T upper
    triangular, positive diagonal) changes W^T W but not V, so the likelihood never sees it."""
    rng = np.random.default_rng(0)
    K, N, r = 4, 7, 2
    chart = default_chart(K, N)
    raw = random_raw(rng, K, N, r)
    T = np.array([[1.7, 0.4], [0.0, 0.6]])
    V1 = constrain(raw, chart, r)[3]
    V2 = constrain(raw._replace(w=raw.w @ T), chart, r)[3]
    np.testing.assert_allclose(V1, V2, atol=1e-12)


def test_log_density_matches_an_independent_computation():
    """Model log density = binomial log-pmf (scipy) without its coefficient (the constant the
    "ties 1/2" outcome model drops) + Gaussian priors + Bartlett + Gram pin."""
    K, N, r = 3, 6, 2
    data, _ = simulate(K, N, r, 200, seed=5, position_bias=0.3)
    priors = HJAPriors(mu_scale=2.0, gamma_scale=0.7, U_scale=1.5, beta_scale=0.8, gram_pin=0.2)
    chart = default_chart(K, N)
    raw = random_raw(np.random.default_rng(1), K, N, r, position_bias=True)
    params = {"z_mu": raw.z_mu, "z_gamma": raw.z_gamma, "l_free": raw.l_free, "w": raw.w,
              "beta_raw": raw.beta}
    value = jax.jit(lambda p: log_density(
        hja_model, (cells_of(data), chart, stack_counts(cells_of(data))),
        dict(rank=r, position_bias=True, priors=priors), p)[0])(params)
    gamma, mu, U, V, beta = (np.asarray(x) for x in constrain(raw, chart, r))
    S = np.outer(gamma, mu) + U @ V.T
    eta = beta[data.judge] + S[data.judge, data.first] - S[data.judge, data.second]
    assert not data.ties.any()
    expected = stats.binom.logpmf(data.wins, data.n, 1 / (1 + np.exp(-eta))).sum()
    expected -= (gammaln(data.n + 1) - gammaln(data.wins + 1) - gammaln(data.n - data.wins + 1)).sum()
    expected += stats.norm.logpdf(np.asarray(raw.z_mu), 0, 2.0).sum()
    expected += stats.norm.logpdf(np.asarray(raw.z_gamma), 0, 0.7).sum()
    expected += stats.norm.logpdf(np.asarray(raw.l_free), 0, 1.5).sum()
    expected += stats.norm.logpdf(np.asarray(raw.beta), 0, 0.8).sum()
    w = np.asarray(raw.w)
    expected += stats.norm.logpdf(w).sum()
    expected += np.log(abs(raw.l_free[0]))  # Bartlett factor |L_00|^(r-1), r = 2
    expected -= 0.5 * np.sum((w.T @ w / (N - 2) - np.eye(r)) ** 2) / 0.2**2
    assert float(value) == pytest.approx(expected, rel=1e-12, abs=1e-9)


def test_prior_predictive_runs_and_follows_the_prior():
    K, N = 3, 6
    data, _ = simulate(K, N, 1, 300, seed=2)
    draws = 400
    prior = Predictive(hja_model, num_samples=draws)(
        jax.random.PRNGKey(0), cells_of(data), default_chart(K, N), rank=1)
    counts = np.asarray(prior["outcomes"])
    assert counts.shape == (draws, data.n_cells, 3)
    assert np.all(counts >= 0) and np.all(counts == np.round(counts))
    np.testing.assert_array_equal(counts.sum(-1), np.broadcast_to(data.n, (draws, data.n_cells)))
    assert not counts[..., 1].any()  # "ties count 1/2" predicts no ties
    # mu ~ N(0, s^2 (I - 11^T/N)): per-item sd s sqrt(1 - 1/N); sample-sd error ~ 1/sqrt(2 draws)
    sd = np.asarray(prior["mu"]).std(axis=0)
    target = HJAPriors().mu_scale * np.sqrt(1 - 1 / N)
    assert np.all(np.abs(sd / target - 1) < 4 / np.sqrt(2 * draws))
    # gamma - 1 ~ N(0, I - 11^T/K), summing to K
    gamma = np.asarray(prior["gamma"])
    np.testing.assert_allclose(gamma.sum(axis=1), K, atol=1e-12)
    assert np.all(np.abs(gamma.std(axis=0) / np.sqrt(1 - 1 / K) - 1) < 4 / np.sqrt(2 * draws))
