import math

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit

from hja_bayes.confidence import (
    ConfidenceRanker,
    auroc,
    kl_bernoulli,
    kl_inverse_upper,
    mlp_confidence,
    optimal_margin,
    pac_bayes_kl_bound,
)
from hja_bayes.errors import DataError, HJAError

# one small configuration shared by the tests, so each trainer compiles once
SMALL = dict(n_pairs=512, batch_size=128, n_epochs=12)


def _easy(n, seed):
    """Agreement depends on the first feature; the second is noise."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 2))
    agree = rng.random(n) < expit(6 * (x[:, 0] - 0.4))
    return x, agree


@pytest.fixture(scope="module")
def posterior_fit():
    x, a = _easy(400, 0)
    return ConfidenceRanker(seed=3, learning_rate=3e-2, **SMALL).fit(x, a)


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
    with pytest.raises(DataError):
        pac_bayes_kl_bound(0.2, kl, m, 1.5)


def test_posterior_ranker_learns_and_reports(posterior_fit):
    r = posterior_fit
    x, a = _easy(2000, 1)
    c = r.predict(x)
    assert c.shape == (2000,) and np.all((c >= 0) & (c <= 1))
    # the Bayes-optimal score is x[:, 0]; the learned one should be close to it in AUROC
    assert auroc(c, a) > auroc(x[:, 0], a) - 0.03
    spread = r.predict_spread(x[:50], n_draws=64)
    assert spread.shape == (50,) and np.all(spread > 0)
    assert 1e-3 <= r.margin_ <= 1.0 and len(r.margin_history_) == SMALL["n_epochs"]
    # KL against numpyro's own Normal-Normal divergence
    ref = sum(
        float(dist.kl_divergence(dist.Normal(r.params_[k], r.posterior_scale_[k]), dist.Normal(0.0, r.prior_scale)).sum())
        for k in r.params_
    )
    assert r.kl_divergence() == pytest.approx(ref, rel=1e-10)


def test_pac_bayes_bound_of_a_fit(posterior_fit):
    r = posterior_fit
    b = r.pac_bayes_bound(n_draws=200, seed=1)
    a = r._train_agree
    assert b.m == min(a.sum(), (~a).sum())
    assert b.gibbs_risk <= b.gibbs_risk_upper <= b.bound <= 1.0
    assert b.bound == pytest.approx(pac_bayes_kl_bound(b.gibbs_risk_upper, b.kl, b.m, 0.05))
    assert b.gibbs_risk_upper == pytest.approx(kl_inverse_upper(b.gibbs_risk, math.log(100) / 200))
    assert r.pac_bayes_bound(n_draws=200, seed=1) == b  # same seed, same answer


def test_same_seed_same_result_and_seed_matters():
    x, a = _easy(300, 2)
    kw = dict(posterior=False, **SMALL)
    c1 = ConfidenceRanker(seed=0, **kw).fit(x, a).predict(x)
    c2 = ConfidenceRanker(seed=0, **kw).fit(x, a).predict(x)
    c3 = ConfidenceRanker(seed=1, **kw).fit(x, a).predict(x)
    assert np.array_equal(c1, c2) and not np.allclose(c1, c3)


def test_vanilla_keeps_its_margin_and_adaptive_moves_it():
    x, a = _easy(300, 4)
    van = ConfidenceRanker(posterior=False, margin=0.2, seed=0, **SMALL).fit(x, a)
    assert np.all(van.margin_history_ == 0.2) and van.posterior_scale_ is None
    ada = ConfidenceRanker(posterior=False, seed=0, **SMALL).fit(x, a)
    assert ada.margin_ != 0.1
    with pytest.raises(HJAError, match="posterior"):
        ada.pac_bayes_bound()
    assert auroc(ada.predict(x), a) > 0.7


def test_ranker_bad_input():
    x, a = _easy(50, 5)
    r = ConfidenceRanker(**SMALL)
    with pytest.raises(HJAError, match="fit"):
        r.predict(x)
    with pytest.raises(DataError, match="pairs"):
        r.fit(x, np.ones(50))
    with pytest.raises(DataError):
        r.fit(np.where(x > 0.9, np.nan, x), a)
    with pytest.raises(DataError):
        r.fit(x * 2, a)
    with pytest.raises(HJAError):
        ConfidenceRanker(margin="big").fit(x, a)
