import math

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit, logit

from hja_bayes.confidence import (
    ConfidenceRanker,
    RankerNotFittedError,
    auroc,
    kl_bernoulli,
    kl_inverse_upper,
    mlp_confidence,
    optimal_margin,
    pac_bayes_kl_bound,
)
from hja_bayes.confidence.network import layer_shapes, prior_scales, unflatten
from hja_bayes.errors import DataError, HJAError, ParameterError

# one small configuration shared by the tests, so each trainer compiles once
SMALL = dict(n_pairs=512, batch_size=128, n_epochs=12, hidden=(16,))


def _easy(n, seed):
    """Agreement depends on the first feature; the second is noise."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 2))
    agree = rng.random(n) < expit(6 * (x[:, 0] - 0.4))
    return x, agree


@pytest.fixture(scope="module")
def posterior_fit():
    x, a = _easy(400, 0)
    return ConfidenceRanker(seed=3, **SMALL).fit(x, a)


def test_mlp_shapes_and_a_hand_computed_network():
    p = {
        "W0": jnp.array([[1.0, -1.0]]),
        "b0": jnp.array([0.0, 0.5]),
        "W1": jnp.array([[2.0], [1.0]]),
        "b1": jnp.array([-1.0]),
    }
    x = jnp.array([[0.25], [0.75]])
    h = np.maximum(np.array([[0.25, 0.25], [0.75, -0.25]]), 0)
    expect = expit(h @ np.array([2.0, 1.0]) - 1.0)
    assert np.allclose(mlp_confidence(p, x), expect)


def test_optimal_margin_matches_a_scalar_minimiser():
    rng = np.random.default_rng(0)
    diff = rng.uniform(-0.5, 0.8, 300)
    for norm, beta in [(12.0, 1e-4), (5.0, 1e-2), (30.0, 1e-3)]:
        def objective(g):
            return np.mean(np.logaddexp(0, (g - diff) / 0.1)) + beta * norm / g

        ref = minimize_scalar(objective, bounds=(1e-3, 1.0), method="bounded", options={"xatol": 1e-10}).x
        assert float(optimal_margin(jnp.asarray(diff), norm, beta, 0.1)) == pytest.approx(ref, abs=1e-5)


def test_kl_inverse_and_pac_bayes_bound():
    for q, c in [(0.0, 0.1), (0.1, 0.05), (0.3, 0.2), (0.7, 0.01)]:
        p = kl_inverse_upper(q, c)
        ref = brentq(lambda t: float(kl_bernoulli(q, t)) - c, q + 1e-15, 1 - 1e-15)
        assert p == pytest.approx(ref, abs=1e-9)
    assert kl_inverse_upper(0.2, 50.0) == 1.0
    m, kl, delta = 2000, 30.0, 0.05
    b = pac_bayes_kl_bound(0.2, kl, m, delta)
    assert float(kl_bernoulli(0.2, b)) == pytest.approx((kl + math.log(2 * math.sqrt(m) / delta)) / m, rel=1e-6)
    assert pac_bayes_kl_bound(0.2, 2 * kl, m, delta) > b > pac_bayes_kl_bound(0.2, kl, 4 * m, delta)
    with pytest.raises(ParameterError):
        pac_bayes_kl_bound(0.2, kl, m, 1.5)
    # a prior chosen among n candidates costs ln(n) in the numerator
    b3 = pac_bayes_kl_bound(0.2, kl, m, delta, n_priors=3)
    assert float(kl_bernoulli(0.2, b3)) == pytest.approx((kl + math.log(3 * 2 * math.sqrt(m) / delta)) / m, rel=1e-6)


def test_posterior_ranker_learns_and_reports(posterior_fit):
    r = posterior_fit
    x, a = _easy(2000, 1)
    c = r.predict_confidence(x)
    assert c.shape == (2000,) and np.all((c >= 0) & (c <= 1))
    # the Bayes-optimal score is x[:, 0]; the learned one should be close to it in AUROC
    assert auroc(c, a) > auroc(x[:, 0], a) - 0.03
    # the reported confidence is calibrated on training data: mean close to the agreement rate
    # (3 binomial standard errors of a rate over 2,000 examples, plus the training-set optimism)
    assert abs(c.mean() - a.mean()) < 3 * np.sqrt(0.25 / 2000) + 0.03
    spread = r.predict_spread(x[:50], n_draws=64)
    assert spread.shape == (50,) and np.all(spread > 0)
    assert r.margin_ == 0.1 and len(r.margin_history_) == SMALL["n_epochs"]
    # KL against numpyro's own Normal-Normal divergence, prior sd 1/sqrt(fan_in) (biases 1/2)
    shapes = layer_shapes(2, SMALL["hidden"])
    prior = unflatten(prior_scales(shapes, 1.0), shapes)
    assert float(prior["W0"][0, 0]) == pytest.approx(1 / np.sqrt(2)) and float(prior["b1"][0]) == 0.5
    ref = sum(
        float(dist.kl_divergence(dist.Normal(r.params_[k], r.posterior_scale_[k]), dist.Normal(0.0, prior[k])).sum())
        for k in r.params_
    )
    assert r.kl_divergence() == pytest.approx(ref, rel=1e-10)


def test_pac_bayes_bound_of_a_fit(posterior_fit):
    r = posterior_fit
    b = r.pac_bayes_bound(n_draws=200, seed=1)
    x, a = _easy(400, 0)
    assert b.m == min(a.sum(), (~a).sum()) and b.covers == "gibbs" and b.n_priors == 1
    assert b.gibbs_risk <= b.gibbs_risk_upper <= b.bound <= 1.0
    assert b.bound == pytest.approx(pac_bayes_kl_bound(b.gibbs_risk_upper, b.kl, b.m, 0.05))
    assert b.gibbs_risk_upper == pytest.approx(kl_inverse_upper(b.gibbs_risk, math.log(100) / 200))
    assert r.pac_bayes_bound(n_draws=200, seed=1) == b  # same seed, same answer
    # the same sample passed explicitly gives the same bound; groups of two use one example each
    assert r.pac_bayes_bound(x, a, n_draws=200, seed=1) == b
    grouped = r.pac_bayes_bound(x, a, groups=np.arange(400) // 2, n_draws=200, seed=1)
    assert grouped.m <= 100 and grouped.m == pytest.approx(min(a.sum(), (~a).sum()) / 2, abs=25)


def test_same_seed_same_result_and_seed_matters():
    x, a = _easy(300, 2)
    kw = dict(posterior=False, **SMALL)
    c1 = ConfidenceRanker(seed=0, **kw).fit(x, a).predict_confidence(x)
    c2 = ConfidenceRanker(seed=0, **kw).fit(x, a).predict_confidence(x)
    c3 = ConfidenceRanker(seed=1, **kw).fit(x, a).predict_confidence(x)
    assert np.array_equal(c1, c2) and not np.allclose(c1, c3)


def test_vanilla_keeps_its_margin_and_adaptive_moves_it():
    x, a = _easy(300, 4)
    van = ConfidenceRanker(posterior=False, margin=0.2, seed=0, **SMALL).fit(x, a)
    assert np.all(van.margin_history_ == 0.2) and van.posterior_scale_ is None
    ada = ConfidenceRanker(posterior=False, margin="adaptive", seed=0, **SMALL).fit(x, a)
    assert ada.margin_ != 0.1 and len(set(ada.margin_history_.tolist())) > 1
    with pytest.raises(HJAError, match="posterior"):
        ada.pac_bayes_bound()
    assert auroc(ada.predict_confidence(x), a) > 0.7


def test_ranker_bad_input():
    x, a = _easy(50, 5)
    r = ConfidenceRanker(**SMALL)
    with pytest.raises(RankerNotFittedError, match="fit"):
        r.predict_confidence(x)
    with pytest.raises(DataError, match="two classes"):
        r.fit(x, np.ones(50))
    with pytest.raises(DataError, match="NaN"):
        r.fit(np.where(x > 0.9, np.nan, x), a)
    for bad in (dict(margin="big"), dict(prior_scale=-1.0), dict(prior_scale="wide"), dict(preprocess="log"),
                dict(hidden=(0,)), dict(n_epochs=0), dict(posterior=False, prior_scale="auto")):
        with pytest.raises(ParameterError):
            ConfidenceRanker(**bad).fit(x, a)
    fitted = ConfidenceRanker(**SMALL).fit(x, a)
    with pytest.raises(DataError, match="features"):
        fitted.predict_confidence(x[:, :1])


def test_predictive_mean_is_blockwise_consistent(posterior_fit):
    x, _ = _easy(2100, 6)  # with 1,000 draws a block holds 512 rows
    many = clone_with(posterior_fit, n_draws=1000)
    whole = many.predict_confidence(x)
    parts = np.concatenate([many.predict_confidence(x[:700]), many.predict_confidence(x[700:])])
    assert np.allclose(whole, parts, rtol=0, atol=1e-12)
    # the confidence is the calibration map applied to the average of the posterior draws
    draws = posterior_fit.predict_draws(x[:100], n_draws=200, seed=posterior_fit.seed + 7919)
    slope, intercept = posterior_fit.calibration_
    assert np.allclose(posterior_fit.predict_confidence(x[:100]), expit(slope * logit(draws.mean(axis=0)) + intercept),
                       atol=1e-12)


def clone_with(fitted, **changes):
    """A fitted ranker's copy with other prediction settings (fitted attributes shared)."""
    import copy

    out = copy.copy(fitted)
    return out.set_params(**changes)
