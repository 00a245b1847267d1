"""The structured (factor-coordinate) Wald computations against dense ones, and the size of
the interval table on a larger panel."""

import itertools

import numpy as np
import pytest

import hja_bayes as hb
from hja_bayes.inference import ALL_PAIRS_MAX_ITEMS, tangent_basis, wald_inference
from hja_bayes.inference.wald import (
    CONDITION_RTOL,
    EXACT_EIGEN_MAX,
    cholesky_factor,
    condition_number,
)

from .test_inference import cell_design as dense_design


def dense_covariances(data, S, beta, rank, position_bias, ridge):
    """Fisher, sandwich and cluster covariances of the orthonormal chart, dense and direct:
    the (cells x params) design times the tangent basis, logistic weights and scores
    computed here (ties count 1/2)."""
    K, N = data.n_judges, data.n_items
    B = tangent_basis(S, rank)
    full = np.zeros((K * N + K, B.shape[1] + (K if position_bias else 0)))
    full[: K * N, : B.shape[1]] = B
    if position_bias:
        full[K * N:, B.shape[1]:] = np.eye(K)
    Xc = dense_design(data) @ full  # (cells, d)
    eta = beta[data.judge] + S[data.judge, data.first] - S[data.judge, data.second]
    p = 1 / (1 + np.exp(-eta))
    n = data.first_wins + data.ties + data.second_wins
    info = Xc.T @ (Xc * (n * p * (1 - p))[:, None]) + ridge * np.eye(Xc.shape[1])
    bread = np.linalg.inv(info)
    # single comparisons: outcome 1 (first wins), 1/2 (tie), 0 (second wins)
    w_single = sum(count * (y - p) ** 2 for count, y in
                   ((data.first_wins, 1.0), (data.ties, 0.5), (data.second_wins, 0.0)))
    meat_sandwich = Xc.T @ (Xc * w_single[:, None])
    c = data.clusters
    G = c.n_clusters
    score = (c.first_wins + 0.5 * c.ties) - (c.first_wins + c.ties + c.second_wins) * p[c.cell]
    per_cluster = np.zeros((G, Xc.shape[1]))
    np.add.at(per_cluster, c.cluster, score[:, None] * Xc[c.cell])
    meat_cluster = per_cluster.T @ per_cluster * G / (G - 1)
    return full, info, {"fisher": bread, "sandwich": bread @ meat_sandwich @ bread,
                        "cluster": bread @ meat_cluster @ bread}


@pytest.fixture(scope="module", params=[(1, True), (2, False)], ids=["r1_bias", "r2"])
def case(request):
    rank, position_bias = request.param
    data, truth = hb.simulate(n_judges=4, n_items=7, rank=rank, comparisons_per_judge=500,
                              seed=21 + rank, tie_prob=0.1, questions=12,
                              question_correlation=0.4,
                              position_bias=0.3 if position_bias else 0.0)
    S = truth.S - truth.S.mean(axis=1, keepdims=True)
    beta = truth.beta if position_bias else np.zeros(4)
    ridge = 0.05
    return data, S, beta, rank, position_bias, ridge, dense_covariances(
        data, S, beta, rank, position_bias, ridge)


@pytest.mark.parametrize("cov_type", ["fisher", "sandwich", "CR1"])
def test_structured_covariances_equal_the_dense_computation(case, cov_type):
    """(CR2 is checked against a dense computation in test_few_clusters.py.)"""
    data, S, beta, rank, position_bias, ridge, (full, info, expected) = case
    inf = wald_inference(data, S, beta, rank, position_bias=position_bias, cov_type=cov_type,
                         ridge=ridge)
    cov_type = "cluster" if cov_type == "CR1" else cov_type
    scale = np.abs(expected[cov_type]).max()
    np.testing.assert_allclose(inf.covariance, expected[cov_type], rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(inf.information, info, rtol=0, atol=1e-8 * np.abs(info).max())
    np.testing.assert_allclose(inf.basis, full[: inf.basis.shape[0]], atol=1e-12)
    # a quantity's covariance from the factor coordinates equals the dense delta method
    K, N = data.n_judges, data.n_items
    G = np.zeros((N, K * N + K))  # mu = column mean of the (row-centred) scores
    for k in range(K):
        G[:, k * N: (k + 1) * N] = (np.eye(N) - 1.0 / N) / K
    dense_mu = G @ full @ expected[cov_type] @ full.T @ G.T
    np.testing.assert_allclose(inf.mu_covariance()[1], dense_mu, rtol=0,
                               atol=1e-8 * np.abs(dense_mu).max())


def test_the_factor_chart_maps_onto_the_orthonormal_chart(case):
    data, S, beta, rank, position_bias, ridge, _ = case
    inf = wald_inference(data, S, beta, rank, position_bias=position_bias, ridge=ridge)
    chart = inf.chart
    K, N, m = chart.shape
    T = chart.tangent_map()
    np.testing.assert_allclose(T.T @ T, np.eye(T.shape[1]), atol=1e-12)
    np.testing.assert_allclose(chart.constraints().T @ T, 0.0, atol=1e-12)
    # phi -> (vec S, beta): dS = A Q^T + P Y^T
    J = np.zeros((K * N + (K if position_bias else 0), chart.dim))
    for col in range(chart.dim):
        e = np.zeros(chart.dim)
        e[col] = 1.0
        A = e[: K * m].reshape(K, m)
        Y = e[chart.y_offset:].reshape(N, m)
        J[: K * N, col] = (A @ chart.Q.T + chart.P @ Y.T).ravel()
        J[K * N:, col] = e[chart.coef_offset: chart.aux_offset]
    np.testing.assert_allclose(J @ T, inf.basis, atol=1e-12)


@pytest.mark.parametrize("blocks", ["summed per pair", "one pass per block"])
@pytest.mark.parametrize("outcome", ["half", "davidson"])
def test_information_with_terms_equals_the_dense_sum_over_units(outcome, blocks, monkeypatch):
    """``sum_u D_u^T W_u D_u`` with each unit's derivative ``D_u`` written out from the
    chart's layout: ``Q_i - Q_j`` at the judge's A row, the design at its estimated
    coefficients and at the panel-wide ones, ``+-P_k`` at the items' Y rows, 1 at the
    judge's tie parameter; style (panel-wide), self-preference and position bias (per judge),
    either assembly of the blocks."""
    from hja_bayes.inference import information as info_module
    from hja_bayes.inference.chart import factor_chart
    from hja_bayes.inference.information import Model, chart_information, free_aux
    from hja_bayes.likelihood import information, outcome_model

    if blocks == "one pass per block":
        monkeypatch.setattr(info_module, "_DENSE_PAIRS_PER_UNIT", 0)
        monkeypatch.setattr(info_module, "_DENSE_PAIRS", 0)
    data, truth = hb.simulate(n_judges=4, n_items=5, rank=1, comparisons_per_judge=600,
                              questions=20, style=np.array([[0.8]]), self_preference=0.5,
                              position_bias=0.3, tie_prob=0.2, seed=8)
    fit = hb.fit_hja(data, rank=1, position_bias=True, style="shared",
                     self_preference=truth.owners, outcome=outcome)
    model_of = outcome_model(outcome)
    log_aux = np.log(fit.aux) if model_of.n_aux else None
    model = Model(data, fit.S, fit.coef, fit.theta, model_of, log_aux, fit.terms)
    design = model.design()
    chart = factor_chart(fit.S, 1, coef_free=design.free, n_aux=model_of.n_aux,
                         free=None if log_aux is None else free_aux(log_aux),
                         n_global=len(design.global_names))
    assert chart.n_global == 1 and chart.coef.size == 2 * 4  # position and self, per judge
    units, design, eta, aux = model.units()
    K, N, m = chart.shape
    k, i, j = units.judge, units.first, units.second
    D = np.zeros((len(k), 1 + model_of.n_aux, chart.dim))
    u = np.arange(len(k))
    for a in range(m):
        D[u, 0, k * m + a] = chart.Q[i, a] - chart.Q[j, a]
        D[u, 0, chart.y_offset + i * m + a] += chart.P[k, a]
        D[u, 0, chart.y_offset + j * m + a] -= chart.P[k, a]
    q = design.X.shape[1]
    for place, flat in enumerate(chart.coef):  # estimated coefficient (judge, column)
        mine = k == flat // q
        D[u[mine], 0, chart.coef_offset + place] = design.X[mine, flat % q]
    D[:, 0, chart.global_offset] = design.Xg[:, 0]
    for place, judge in enumerate(chart.free):  # estimated tie parameters
        D[k == judge, 1, chart.aux_offset + place] = 1.0
    W = information(model_of, eta, aux, units.counts.sum(axis=1))
    dense = np.einsum("ulp,ulm,umq->pq", D, W, D)
    F = chart_information(model, chart)
    np.testing.assert_allclose(F, dense, rtol=0, atol=1e-10 * np.abs(dense).max())
    if outcome == "davidson":
        assert chart.free.size == 4


@pytest.mark.parametrize("spectrum", ["geometric", "even"])
def test_condition_number_from_extreme_eigenvalues_matches_all_eigenvalues(spectrum):
    """To CONDITION_RTOL, on a spread spectrum and on an evenly spaced one (whose ends are
    the slowest for Lanczos)."""
    rng = np.random.default_rng(3)
    n = EXACT_EIGEN_MAX + 50
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    eig = np.geomspace(1e-3, 1e3, n) if spectrum == "geometric" else np.linspace(1.0, 13.0, n)
    A = (Q * eig) @ Q.T
    A = (A + A.T) / 2
    assert condition_number(A, cholesky_factor(A)) == pytest.approx(eig[-1] / eig[0],
                                                                     rel=CONDITION_RTOL)
    A[0, 0] = -1.0
    assert cholesky_factor(A) is None and condition_number(A, None) == float("inf")


@pytest.fixture(scope="module")
def larger():
    N = ALL_PAIRS_MAX_ITEMS + 30
    data, truth = hb.simulate(n_judges=3, n_items=N, rank=0, comparisons_per_judge=6000, seed=5)
    return data, wald_inference(data, truth.S, None, 0)


def test_intervals_of_a_larger_panel_list_the_neighbours_in_the_ranking(larger):
    data, inf = larger
    N, K = data.n_items, data.n_judges
    table = inf.intervals()
    assert table.quantity.value_counts().to_dict() == {"mu": N, "gamma": K, "mu_diff": N - 1}
    mu = table[table.quantity == "mu"].set_index("label")["estimate"]
    order = list(mu.sort_values(ascending=False, kind="stable").index)
    diff = table[table.quantity == "mu_diff"]
    assert list(diff.label) == [f"{a} - {b}" for a, b in itertools.pairwise(order)]
    assert np.all(diff.estimate.to_numpy() >= 0)
    _, C = inf.mu_covariance()
    a, b = (np.array([data.items.index(x) for x in col]) for col in (order[:-1], order[1:]))
    np.testing.assert_allclose(diff.se, np.sqrt(C[a, a] + C[b, b] - 2 * C[a, b]), rtol=1e-10)


def test_intervals_pairs_argument(larger):
    data, inf = larger
    N = data.n_items
    count = inf.intervals(pairs="all").quantity.value_counts()["mu_diff"]
    assert count == N * (N - 1) // 2
    assert "mu_diff" not in set(inf.intervals(pairs="none").quantity)
    some = inf.intervals(pairs=[("item3", "item0"), (5, 7)]).query("quantity == 'mu_diff'")
    assert list(some.label) == ["item3 - item0", "item5 - item7"]
    with pytest.raises(hb.ParameterError, match="pairs"):
        inf.intervals(pairs="some")
    with pytest.raises(hb.ParameterError, match="pairs"):
        inf.intervals(pairs=[("item1",)])
    with pytest.raises(hb.ParameterError, match="unknown item"):
        inf.intervals(pairs=[("item1", "nope")])
