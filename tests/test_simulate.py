import numpy as np
import pytest

from hja_bayes import IdentifiabilityError, simulate
from hja_bayes.decomposition import Decomposition, constraint_violations


def test_truth_is_canonical_and_heterogeneity_respected():
    data, t = simulate(n_judges=5, n_items=9, rank=2, comparisons_per_judge=50, heterogeneity=0.7, seed=3)
    viol = constraint_violations(Decomposition(t.gamma, t.mu, t.U, t.V, t.D))
    assert max(viol.values()) < 1e-10
    consensus = np.outer(t.gamma, t.mu)
    ratio = np.linalg.norm(t.S - consensus) / np.linalg.norm(consensus)
    assert ratio == pytest.approx(0.7, rel=1e-10)
    assert np.all(t.gamma > 0)
    assert data.comparisons_per_judge().tolist() == [50.0] * 5


def test_same_seed_same_panel_and_win_rates_match_model():
    a, t = simulate(n_judges=2, n_items=4, rank=1, comparisons_per_judge=200_000, seed=11, position_bias=0.4)
    b, _ = simulate(n_judges=2, n_items=4, rank=1, comparisons_per_judge=200_000, seed=11, position_bias=0.4)
    np.testing.assert_array_equal(a.wins, b.wins)
    p = 1 / (1 + np.exp(-(t.beta[a.judge] + t.S[a.judge, a.first] - t.S[a.judge, a.second])))
    ybar = a.wins / a.n
    z = (ybar - p) / np.sqrt(p * (1 - p) / a.n)
    assert np.max(np.abs(z)) < 4.5  # 24 cells, normal approximation


def test_ties_and_order():
    data, _ = simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=20_000, seed=2, tie_prob=0.2)
    frac = data.ties.sum() / data.n.sum()
    assert abs(frac - 0.2) < 4 * np.sqrt(0.2 * 0.8 / data.n.sum())
    assert not data.one_orientation_only


def test_unidentifiable_rank_rejected():
    with pytest.raises(IdentifiabilityError, match="maximum rank is 2"):
        simulate(n_judges=3, n_items=8, rank=3)


def davidson_probabilities(eta, nu):
    z = np.exp(eta / 2) + np.exp(-eta / 2) + nu
    return np.exp(eta / 2) / z, nu / z


def test_davidson_outcomes_follow_the_model():
    data, t = simulate(n_judges=2, n_items=4, rank=1, comparisons_per_judge=100_000, seed=12,
                       position_bias=0.3, outcome="davidson", nu=[0.5, 0.0])
    np.testing.assert_array_equal(t.nu, [0.5, 0.0])
    eta = t.beta[data.judge] + t.S[data.judge, data.first] - t.S[data.judge, data.second]
    p_first, p_tie = davidson_probabilities(eta, t.nu[data.judge])
    for count, p in ((data.first_wins, p_first), (data.ties, p_tie)):
        sd = np.sqrt(np.maximum(p * (1 - p), 1e-300) / data.n)
        z = np.where(p > 0, (count / data.n - p) / sd, count)
        assert np.max(np.abs(z)) < 4.5  # 24 cells per statistic, normal approximation
    assert data.ties[data.judge == 1].sum() == 0  # nu = 0: Bradley-Terry, no ties


def test_davidson_with_prompts_keeps_the_marginals():
    # many prompts: the coupling within a prompt barely touches a judge's total tie count
    data, t = simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=40_000, seed=4,
                       outcome="davidson", nu=[0.3, 1.2], questions=4000, question_correlation=0.5)
    assert data.clusters is not None
    eta = t.S[data.judge, data.first] - t.S[data.judge, data.second]
    _, p_tie = davidson_probabilities(eta, t.nu[data.judge])
    for k in range(2):
        m = data.judge == k
        expected = np.sum(data.n[m] * p_tie[m])
        sd = np.sqrt(np.sum(data.n[m] * p_tie[m] * (1 - p_tie[m])))
        assert abs(data.ties[m].sum() - expected) < 4.5 * sd


def test_a_panel_without_judges_or_with_one_model_is_a_parameter_error():
    # n_judges=0 had been "rank 1 is not identifiable ... the maximum rank is -1"
    from hja_bayes.errors import ParameterError

    with pytest.raises(ParameterError, match="n_judges must be an integer >= 1, got 0"):
        simulate(n_judges=0)
    with pytest.raises(ParameterError, match="n_items must be an integer >= 2, got 1"):
        simulate(n_items=1)
    for name in ("position_bias", "self_preference"):  # a NaN had simulated silently
        with pytest.raises(ParameterError, match=f"{name} must be finite"):
            simulate(**{name: float("nan")})


def test_arguments_that_would_do_nothing_or_be_cut_are_parameter_errors():
    from hja_bayes.errors import ParameterError

    # had been ignored (no prompts), cut to 2 prompts, numpy's "high <= 0", an arbitrary
    # non-canonical V with U = 0, and a style term of no features
    for kwargs, message in [(dict(question_correlation=0.5), "pass questions > 0"),
                            (dict(questions=2.5), "questions must be an integer >= 0"),
                            (dict(questions=-3), "questions must be an integer >= 0"),
                            (dict(rank=1, heterogeneity=0.0), "simulate it at rank=0"),
                            (dict(questions=5, style=1.0, n_features=0),
                             "n_features must be an integer >= 1"),
                            # ignored; NumPy's TypeError; "must broadcast to (1,)"
                            (dict(categories=3), "pass outcome=\"ordinal\" with it"),
                            (dict(seed="abc"), "seed must be an integer >= 0, got 'abc'"),
                            (dict(position_bias=[0.1, 0.2, 0.3]),
                             "position_bias must be finite, one number"),
                            # NumPy's ValueError, a TypeError, and a scale of repeated labels
                            (dict(questions=3, question_sizes="abc"),
                             "question_sizes must hold 3 positive numbers"),
                            (dict(outcome="ordinal", categories=2.5),
                             "categories must be the number of levels or their labels"),
                            (dict(outcome="ordinal", categories=["a", "a", "b"]),
                             "categories must differ")]:
        with pytest.raises(ParameterError, match=message):
            simulate(n_judges=3, n_items=4, **kwargs)
    assert simulate(n_judges=3, n_items=4, rank=0, heterogeneity=0.0)[0].n_comparisons > 0
