"""Joint rank intervals and tiers against direct computations and simulation."""

import numpy as np
import pytest

import hja_bayes as hb
from hja_bayes.inference.ranking import (max_abs_t, neighbour_probabilities, rank_intervals,
                                         simultaneous_critical_value)


def test_critical_value_of_independent_pairs_matches_the_exact_quantile():
    # two items with independent scores: one difference, so the "max" is |Z|: c = 1.96;
    # the simulated quantile (20k draws) has a standard error of about 0.02
    c = simultaneous_critical_value(np.eye(2), 0.95)
    assert c == pytest.approx(1.96, abs=0.06)
    # more items: the simultaneous value lies between the single and the Bonferroni value
    c5 = simultaneous_critical_value(np.eye(5), 0.95)
    assert 2.5 < c5 < 3.29


def test_tiers_hold_only_pairwise_indistinguishable_models():
    rng = np.random.default_rng(0)
    estimate = np.sort(rng.normal(size=12))[::-1]
    cov = np.diag(rng.uniform(0.01, 0.2, 12))
    r = rank_intervals(estimate, cov)
    for t in np.unique(r.tier):
        members = np.flatnonzero(r.tier == t)
        assert not r.better[np.ix_(members, members)].any()
    assert np.all(r.lower <= np.argsort(np.argsort(-estimate)) + 1)
    assert np.all(np.argsort(np.argsort(-estimate)) + 1 <= r.upper)
    p = neighbour_probabilities(estimate, cov)
    assert np.isnan(p[-1]) and np.all(p[:-1] >= 0.5)


def test_joint_rank_coverage_in_simulation():
    """All true ranks inside their intervals, jointly, in >= ~95% of panels.

    40 simulated panels; the joint coverage is ~0.97 (conservative). A binomial(40, 0.95)
    falls below 34 with probability < 1%, so 34 is the floor.
    """
    covered = 0
    for rep in range(40):
        data, truth = hb.simulate(n_judges=4, n_items=7, rank=0, comparisons_per_judge=400,
                                  seed=900 + rep)
        fit = hb.fit_hja(data, rank=0)
        wald = fit.wald
        mu = wald.mu()
        cov = wald.covariance_of(lambda S, b: hb.canonicalize(S, 0).mu)[1]
        r = rank_intervals(mu.estimate, cov)
        true_rank = np.argsort(np.argsort(-truth.mu)) + 1
        covered += bool(np.all((r.lower <= true_rank) & (true_rank <= r.upper)))
    assert covered >= 34


@pytest.mark.parametrize("seed, by_draws, uneven", [(0, False, False), (1, False, False),
                                                    (0, True, False), (0, True, True),
                                                    (2, True, True)])
def test_the_max_over_pairs_visits_few_pairs_and_equals_every_pair_visited(
        seed, by_draws, uneven, monkeypatch):
    # the direct computation: every pair of every draw at once, (draws, N, N); by_draws:
    # the way of large panels, which bounds pairs by per-model scales; uneven: variances
    # 0.04 and 9 mixed, a few models measured against each other closely (a sparse panel's
    # covariance, where the nearest-se bound alone had visited nearly every pair)
    monkeypatch.setattr("hja_bayes.inference.ranking._EVERY_PAIR_MAX", 2)
    if by_draws:
        monkeypatch.setattr("hja_bayes.inference.ranking._ROWS_MAX", 10)
    rng = np.random.default_rng(seed)
    N = 40
    A = rng.normal(size=(N, N)) / np.sqrt(N)
    cov = A @ A.T * 0.05 + np.diag(rng.uniform(0.01, 0.2, N))
    if uneven:
        L = np.diag(np.where(rng.random(N) < 0.5, 0.2, 3.0))
        for a, b in rng.choice(N, (6, 2), replace=False):  # close pairs: b mostly a's part
            L[b] = L[b, b] * (0.98 * np.eye(N)[a] + 0.2 * np.eye(N)[b])
        cov = L @ L.T + 0.01 * A @ A.T
    cov[:, 7], cov[7, :] = cov[:, 3], cov[3, :]  # model 7 a copy of model 3: se 0 between
    cov[7, 7] = cov[3, 3]
    centre = np.eye(N) - 1.0 / N
    cov = centre @ cov @ centre  # centred scores: a singular covariance
    v = np.diag(cov)
    se = np.sqrt(np.clip(v[:, None] + v[None, :] - 2 * cov, 0.0, None))
    se[3, 7] = se[7, 3] = 0.0
    z = rng.normal(size=(3000, N)) @ np.linalg.cholesky(cov + 1e-9 * np.eye(N)).T
    z /= np.sqrt(rng.chisquare(5, size=(3000, 1)) / 5)  # heavy tails, as with few prompts
    with np.errstate(divide="ignore", invalid="ignore"):
        every = np.abs(z[:, :, None] - z[:, None, :]) / se
    keep = np.triu(se > 0, 1)
    direct = np.where(keep, every, 0.0).max(axis=(1, 2))
    np.testing.assert_array_equal(max_abs_t(z, se), direct)
    assert not max_abs_t(z[:, :2], np.zeros((2, 2))).any()  # no pair with an se: 0


def test_what_is_not_a_covariance_or_its_scores_is_refused():
    """A negative variance, a matrix that is not positive semi-definite, NaN, text, a vector
    or a non-square matrix: each a ParameterError (a negative variance had been clipped to
    se 0, every pair then counted as decided)."""
    est = [1.0, 0.0, -1.0]
    bad = {"negative variance": -np.eye(3),
           "positive semi-definite": np.array([[1.0, 2.0, 0], [2.0, 1.0, 0], [0, 0, 1.0]]),
           "finite": np.full((3, 3), np.nan), "dimension": np.ones(3),
           "square": np.ones((3, 2))}
    for match, cov in bad.items():
        with pytest.raises(hb.ParameterError, match=match):
            rank_intervals(est, cov)
        with pytest.raises(hb.ParameterError, match=match):
            simultaneous_critical_value(cov)
    with pytest.raises(hb.ParameterError, match="numbers"):
        rank_intervals(["a", "b"], np.eye(2))
    with pytest.raises(hb.ParameterError, match="draws must be an integer >= 1"):
        rank_intervals(est, np.eye(3), draws=0)
    with pytest.raises(hb.ParameterError, match="df must be a number or an N x N array"):
        neighbour_probabilities([1.0, 0.0], np.eye(2), df=np.ones(2))
    # a number of degrees of freedom for every pair is the array of that number
    np.testing.assert_array_equal(neighbour_probabilities([1.0, 0.0], np.eye(2), df=4.0),
                                  neighbour_probabilities([1.0, 0.0], np.eye(2),
                                                          df=np.full((2, 2), 4.0)))
