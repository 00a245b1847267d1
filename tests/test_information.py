"""Sandwich and cluster-robust covariances against a direct per-comparison computation."""

import numpy as np
import pytest

import hja_bayes as hb
from hja_bayes.inference import tangent_basis, wald_inference


@pytest.fixture(scope="module", params=[False, True], ids=["no_bias", "position_bias"])
def tiny(request):
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=1, comparisons_per_judge=300, seed=11,
                          tie_prob=0.1, position_bias=0.3 if request.param else 0.0,
                          questions=15, question_correlation=0.5)
    fit = hb.fit_hja(data, rank=1, position_bias=request.param, ridge=1e-8)
    return data, fit


def rows_of(data):
    """One entry per single comparison: judge, first, second, cluster, outcome w in {1, .5, 0}."""
    c = data.clusters
    out = []
    for e in range(len(c.cell)):
        k, i, j = data.judge[c.cell[e]], data.first[c.cell[e]], data.second[c.cell[e]]
        for w, count in ((1.0, c.first_wins[e]), (0.5, c.ties[e]), (0.0, c.second_wins[e])):
            out += [(k, i, j, c.cluster[e], w)] * int(round(count))
    return np.array(out)


def direct_sandwich(data, fit, cov_type, h=1e-4):
    """H^-1 M H^-1 and H^-1 from single comparisons, written out directly.

    The derivative of each comparison's logit in the chart comes from finite differences
    (the logit is linear in the chart coordinates), its score is ``(w - p) x`` and the
    information ``sum p (1 - p) x x^T``; nothing here calls the package's likelihood code.
    """
    K, N = data.n_judges, data.n_items
    B = tangent_basis(fit.S, fit.rank)
    d = B.shape[1] + (K if fit.position_bias else 0)
    rows = rows_of(data)
    k, i, j, g = (rows[:, c].astype(int) for c in range(4))
    w = rows[:, 4]

    def logit(theta):
        S = fit.S + (B @ theta[:B.shape[1]]).reshape(K, N)
        beta = fit.beta + (theta[B.shape[1]:] if fit.position_bias else 0.0)
        return beta[k] + S[k, i] - S[k, j]

    x = np.empty((len(rows), d))
    for a in range(d):
        e = np.zeros(d)
        e[a] = h
        x[:, a] = (logit(e) - logit(-e)) / (2 * h)
    p = 1.0 / (1.0 + np.exp(-logit(np.zeros(d))))
    scores = (w - p)[:, None] * x
    hessian = (x * (p * (1 - p))[:, None]).T @ x
    if cov_type == "sandwich":
        meat = scores.T @ scores
    else:
        G = data.clusters.n_clusters
        per_cluster = np.zeros((G, d))
        np.add.at(per_cluster, g, scores)
        meat = per_cluster.T @ per_cluster * G / (G - 1)
    bread = np.linalg.inv(hessian)
    return bread @ meat @ bread, bread


@pytest.mark.parametrize("cov_type", ["fisher", "sandwich", "CR1"])
def test_covariance_matches_direct_computation(tiny, cov_type):
    """CR1 here; CR2 and its degrees of freedom are checked in test_few_clusters.py."""
    data, fit = tiny
    inference = wald_inference(data, fit.S, fit.beta, fit.rank, position_bias=fit.position_bias,
                               cov_type=cov_type)
    direct = "sandwich" if cov_type == "sandwich" else "cluster"
    sandwich, fisher = direct_sandwich(data, fit, direct)
    expected = fisher if cov_type == "fisher" else sandwich
    assert inference.covariance.shape == expected.shape
    np.testing.assert_allclose(inference.covariance, expected, rtol=1e-6, atol=1e-10)
    assert inference.cov_type == ("cluster" if cov_type == "CR1" else cov_type)
    assert inference.small_sample == ("CR1" if cov_type == "CR1" else None)


def test_default_is_cluster_when_clusters_are_known(tiny):
    data, fit = tiny
    assert fit.cov_type == "cluster" and fit.wald.cov_type == "cluster"
    assert fit.wald.n_clusters == data.clusters.n_clusters
    plain, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=1)
    fit0 = hb.fit_hja(plain, rank=0)
    assert fit0.cov_type == "fisher"
    with pytest.raises(hb.ParameterError, match="needs clusters"):
        fit0.intervals(cov_type="cluster")
    with pytest.raises(hb.ParameterError, match="cov_type"):
        fit0.intervals(cov_type="robust")


def test_cluster_intervals_cover_under_coupled_verdicts():
    """A small coverage check; the 200-panel study is benchmarks/bench_cluster_intervals.py.

    With rho = 0.7 the Fisher intervals of mu_i - mu_j cover about 60% and the cluster ones
    about 93%.  Over 12 panels x 15 pairs the cluster coverage has a standard error of about
    3 points (pairs in a panel are dependent), so 0.85 is a 2.5-sigma floor and the Fisher
    one must stay clearly below it.
    """
    a, b = np.triu_indices(6, 1)
    hits = {"fisher": [], "cluster": []}
    for rep in range(12):
        data, truth = hb.simulate(n_judges=5, n_items=6, rank=0, comparisons_per_judge=600,
                                  seed=500 + rep, questions=40, question_correlation=0.7)
        fit = hb.fit_hja(data, rank=0)
        for cov_type in hits:
            iv = fit.intervals(cov_type=cov_type).query("quantity == 'mu_diff'")
            true = truth.mu[a] - truth.mu[b]
            hits[cov_type].extend((iv.lower.to_numpy() <= true) & (true <= iv.upper.to_numpy()))
    assert np.mean(hits["cluster"]) >= 0.85
    assert np.mean(hits["fisher"]) < 0.80
