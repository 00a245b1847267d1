"""Wald inference: checked against computations that do not go through hja_bayes.inference.

* the chart: orthonormality, dimension, tangency (derivatives of curves S(t) = A(t) B(t)^T);
* the information: a finite-difference Hessian of a numpy NLL along the basis directions;
* the covariance: an over-parameterised factor chart (A, B, beta) with a pseudo-inverse;
* standard errors: the spread of an independent scipy estimator over simulated replicates;
* the delta method: finite-difference gradients of user-supplied quantities.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import norm

import hja_bayes as hb
from hja_bayes import (
    Comparisons,
    DisconnectedGraphError,
    IdentifiabilityError,
    canonicalize,
    free_parameters,
    simulate,
    tangent_basis,
    wald_inference,
)


# --------------------------------------------------------------------------- helpers
def centred_low_rank(K, N, m, seed):
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((K, m)) @ rng.standard_normal((m, N))
    return S - S.mean(axis=1, keepdims=True)


def numpy_nll(S, beta, data):
    eta = beta[data.judge] + S[data.judge, data.first] - S[data.judge, data.second]
    return float(np.sum(data.n * np.logaddexp(0.0, eta) - data.wins * eta))


def cell_design(data):
    """d eta / d (vec S, beta) for every cell, as a dense (cells, K N + K) matrix."""
    K, N = data.n_judges, data.n_items
    X = np.zeros((data.n_cells, K * N + K))
    rows = np.arange(data.n_cells)
    X[rows, data.judge * N + data.first] += 1.0
    X[rows, data.judge * N + data.second] -= 1.0
    X[rows, K * N + data.judge] = 1.0
    return X


def numerical_gradient(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros((np.size(f(x)), x.size))
    for a in range(x.size):
        e = np.zeros_like(x)
        e.flat[a] = h
        g[:, a] = (np.ravel(f(x + e)) - np.ravel(f(x - e))) / (2 * h)
    return g


def mu_gamma(S):
    S = S - S.mean(axis=1, keepdims=True)
    mu = S.mean(axis=0)
    return mu, S @ mu / (mu @ mu)


def with_wins(data, wins):
    return Comparisons(
        judges=data.judges, items=data.items, judge=data.judge, first=data.first,
        second=data.second, counts=np.column_stack([wins, np.zeros(data.n_cells), data.n - wins]),
    )


# ------------------------------------------------------------------------- the chart
@pytest.mark.parametrize("K,N,r", [(3, 5, 0), (3, 5, 1), (4, 7, 2), (6, 5, 3)])
def test_basis_is_orthonormal_centred_and_has_the_free_parameter_dimension(K, N, r):
    S = centred_low_rank(K, N, r + 1, seed=K * N + r)
    B = tangent_basis(S, r)
    assert B.shape == (K * N, (r + 1) * (K + N - r - 2))
    assert free_parameters(K, N, r) == B.shape[1]
    assert free_parameters(K, N, r, position_bias=True) == B.shape[1] + K
    np.testing.assert_allclose(B.T @ B, np.eye(B.shape[1]), atol=1e-12)
    T = B.T.reshape(-1, K, N)
    np.testing.assert_allclose(T.sum(axis=2), 0.0, atol=1e-12)  # row-centred directions


@pytest.mark.parametrize("K,N,r", [(3, 5, 1), (5, 8, 2)])
def test_basis_spans_exactly_the_derivatives_of_curves_on_the_model(K, N, r):
    m = r + 1
    rng = np.random.default_rng(7)
    A = rng.standard_normal((K, m))
    Bf = rng.standard_normal((N, m))
    Bf -= Bf.mean(axis=0)
    S = A @ Bf.T  # row-centred, rank m
    basis = tangent_basis(S, r)
    d = basis.shape[1]
    # velocity of the curve (A + t dA)(B + t dB)^T, dB centred, at t = 0
    velocities = []
    for _ in range(3 * d):
        dA = rng.standard_normal((K, m))
        dB = rng.standard_normal((N, m))
        dB -= dB.mean(axis=0)
        velocities.append((dA @ Bf.T + A @ dB.T).ravel())
    W = np.array(velocities).T
    np.testing.assert_allclose(W - basis @ (basis.T @ W), 0.0, atol=1e-10)
    assert np.linalg.matrix_rank(W, tol=1e-8) == d

    # a step along any basis direction keeps rank m to second order, unlike a normal one
    sigma_m = np.linalg.svd(S, compute_uv=False)[m - 1]
    t = 1e-3
    for c in range(d):
        step = S + t * basis[:, c].reshape(K, N)
        assert np.linalg.svd(step, compute_uv=False)[m] <= 2 * t**2 / sigma_m + 1e-13
    P, _, Qt = np.linalg.svd(S)
    Q_perp = np.linalg.svd(np.column_stack([np.ones(N), Qt[:m].T]))[0][:, m + 1]
    normal = np.outer(P[:, m], Q_perp)
    assert np.linalg.svd(S + t * normal, compute_uv=False)[m] > 0.5 * t


def test_rank_must_match_the_score_matrix():
    S = centred_low_rank(4, 6, 3, seed=1)
    with pytest.raises(IdentifiabilityError, match="not a point of the rank-1 model"):
        tangent_basis(S, 1)
    with pytest.raises(IdentifiabilityError, match="rank below"):
        tangent_basis(centred_low_rank(4, 6, 1, seed=1), 1)


# ------------------------------------------------------------------- information
def test_information_equals_finite_difference_hessian_along_the_basis():
    data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=300, seed=3,
                           position_bias=0.4)
    inf = wald_inference(data, truth.S, truth.beta, 1, position_bias=True)
    K, N = 3, 5
    B = inf.basis
    assert B.shape == (K * N + K, free_parameters(K, N, 1, position_bias=True))

    def f(x):
        theta = B @ x
        return numpy_nll(truth.S + theta[: K * N].reshape(K, N), truth.beta + theta[K * N:], data)

    d, h = B.shape[1], 1e-3
    H = np.zeros((d, d))
    for a in range(d):
        for b in range(a, d):
            ea, eb = np.eye(d)[a] * h, np.eye(d)[b] * h
            H[a, b] = H[b, a] = (f(ea + eb) - f(ea - eb) - f(-ea + eb) + f(-ea - eb)) / (4 * h * h)
    np.testing.assert_allclose(inf.information, H, atol=1e-5 * np.abs(H).max())
    np.testing.assert_allclose(inf.covariance @ inf.information, np.eye(d), atol=1e-9)


@pytest.mark.parametrize("blocks", ["summed per pair", "one pass per block"])
@pytest.mark.parametrize("rank,position_bias", [(0, False), (1, True), (2, False)])
def test_covariance_agrees_with_an_overparameterised_factor_chart(rank, position_bias, blocks,
                                                                   monkeypatch):
    """Var(q) = g^T J (J^T F J)^+ J^T g in coordinates (A, B, beta), S = A (C B)^T; the
    information's item x item blocks by either of their two assemblies."""
    if blocks == "one pass per block":
        import hja_bayes.inference.information as information

        monkeypatch.setattr(information, "_DENSE_PAIRS_PER_UNIT", 0)
        monkeypatch.setattr(information, "_DENSE_PAIRS", 0)
    data, truth = simulate(n_judges=3, n_items=5, rank=min(rank, 1), comparisons_per_judge=400,
                           seed=11 + rank, position_bias=0.3 if position_bias else 0.0)
    K, N, m = 3, 5, rank + 1
    S = truth.S if rank <= 1 else truth.S + 0.3 * centred_low_rank(K, N, 1, seed=2)
    beta = truth.beta
    inf = wald_inference(data, S, beta, rank, position_bias=position_bias)

    # factor chart: S = A Bt^T with Bt = C Bm (C centres), exactly the rank-m model
    P, sig, Qt = np.linalg.svd(S)
    A, Bm = P[:, :m] * sig[:m], Qt[:m].T
    C = np.eye(N) - 1.0 / N
    Bt = C @ Bm
    J = np.zeros((K * N + K, K * m + N * m + (K if position_bias else 0)))
    for k in range(K):
        for i in range(N):
            for a in range(m):
                J[k * N + i, k * m + a] = Bt[i, a]
                J[k * N + i, K * m + np.arange(N) * m + a] = A[k, a] * C[i]
    if position_bias:
        J[K * N:, K * m + N * m:] = np.eye(K)
    X = cell_design(data)
    p = expit(X @ np.concatenate([S.ravel(), beta]))
    F = X.T @ (X * (data.n * p * (1 - p))[:, None])
    I_theta = J.T @ F @ J
    assert np.linalg.matrix_rank(I_theta, tol=1e-8 * np.abs(I_theta).max()) == inf.basis.shape[1]
    cov_theta = np.linalg.pinv(I_theta, rcond=1e-10, hermitian=True)

    def var_of(q):
        g = numerical_gradient(q, np.concatenate([S.ravel(), beta]))
        gt = g @ J
        return np.einsum("qa,ab,qb->q", gt, cov_theta, gt)

    table = inf.intervals()
    a, b = np.triu_indices(N, k=1)
    expected = {
        "mu": var_of(lambda x: mu_gamma(x[: K * N].reshape(K, N))[0]),
        "gamma": var_of(lambda x: mu_gamma(x[: K * N].reshape(K, N))[1]),
        "mu_diff": var_of(lambda x: (lambda mu: mu[a] - mu[b])(mu_gamma(x[: K * N].reshape(K, N))[0])),
    }
    if position_bias:
        expected["beta"] = var_of(lambda x: x[K * N:])
    assert set(table.quantity) == set(expected)
    for quantity, var in expected.items():
        got = table.loc[table.quantity == quantity, "se"].to_numpy()
        np.testing.assert_allclose(got, np.sqrt(var), rtol=1e-5)

    # judge-specific contrasts S_ki - S_kj and a win probability on the logit scale
    k, i, j = np.array([0, 1, 2]), np.array([0, 1, 3]), np.array([4, 2, 0])
    sd = inf.score_difference(k, i, j)
    np.testing.assert_allclose(sd.estimate, S[k, i] - S[k, j], atol=1e-12)
    np.testing.assert_allclose(
        sd.se, np.sqrt(var_of(lambda x: x[k * N + i] - x[k * N + j])), rtol=1e-5
    )
    wp = inf.win_probability(k, i, j, level=0.9)
    logit = beta[k] + S[k, i] - S[k, j]
    se_logit = np.sqrt(var_of(lambda x: x[K * N + k] + x[k * N + i] - x[k * N + j]))
    z = norm.ppf(0.95)
    np.testing.assert_allclose(wp.estimate, expit(logit), atol=1e-12)
    np.testing.assert_allclose(wp.lower, expit(logit - z * se_logit), rtol=1e-5)
    np.testing.assert_allclose(wp.upper, expit(logit + z * se_logit), rtol=1e-5)


# --------------------------------------------------------- replicates (calibration)
def fit_factors(data, S0, beta0, m):
    """Independent MAP: L-BFGS on S = A (C B)^T and beta, started at (S0, beta0)."""
    K, N = data.n_judges, data.n_items
    X = cell_design(data)
    P, sig, Qt = np.linalg.svd(S0)
    x0 = np.concatenate([(P[:, :m] * sig[:m]).ravel(), Qt[:m].T.ravel(), beta0])

    def unpack(x):
        A = x[: K * m].reshape(K, m)
        Bm = x[K * m: K * m + N * m].reshape(N, m)
        return A, Bm - Bm.mean(axis=0), x[K * m + N * m:]

    def fun(x):
        A, Bt, beta = unpack(x)
        S = A @ Bt.T
        eta = X @ np.concatenate([S.ravel(), beta])
        value = np.sum(data.n * np.logaddexp(0.0, eta) - data.wins * eta)
        r = data.n * expit(eta) - data.wins
        g = X.T @ r
        G = g[: K * N].reshape(K, N)
        gB = G.T @ A
        return value, np.concatenate([(G @ Bt).ravel(), (gB - gB.mean(axis=0)).ravel(), g[K * N:]])

    res = minimize(fun, x0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "ftol": 1e-15, "gtol": 1e-9})
    A, Bt, beta = unpack(res.x)
    # the NLL is ~1e4 here, so L-BFGS stops on float precision with a gradient ~1e-4: with an
    # information of order 1e2-1e3 that leaves the estimates ~1e-6 off, far below their sd
    assert np.abs(res.jac).max() < 1e-3, res.message
    return A @ Bt.T, beta


def test_wald_standard_errors_match_the_spread_over_replicates():
    """K=3, N=5, r=1 with position bias: fixed design, outcomes redrawn R times."""
    data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=4000, seed=2,
                           position_bias=0.3)
    K, N, R = 3, 5, 60
    assert data.n_cells == K * N * (N - 1)
    p = expit(truth.beta[data.judge] + truth.S[data.judge, data.first]
              - truth.S[data.judge, data.second])
    rng = np.random.default_rng(123)
    a, b = np.triu_indices(N, k=1)
    estimates, ses = [], []
    for _ in range(R):
        rep = with_wins(data, rng.binomial(data.n.astype(int), p).astype(float))
        S_hat, beta_hat = fit_factors(rep, truth.S, truth.beta, 2)
        mu, gamma = mu_gamma(S_hat)
        estimates.append(np.concatenate([mu[a] - mu[b], gamma, beta_hat]))
        table = wald_inference(rep, S_hat, beta_hat, 1, position_bias=True).intervals()
        ses.append(np.concatenate([table.loc[table.quantity == q, "se"].to_numpy()
                                   for q in ("mu_diff", "gamma", "beta")]))
    empirical = np.std(np.array(estimates), axis=0, ddof=1)
    wald = np.median(np.array(ses), axis=0)
    # the sd of R normal draws has relative standard error ~ 1 / sqrt(2 (R - 1)); allow 3.5 of
    # them for each of the 16 quantities (a miss at that level is rare: about 5e-4 each)
    tolerance = 3.5 / np.sqrt(2 * (R - 1))
    ratio = empirical / wald
    assert np.all(np.abs(ratio - 1) < tolerance), ratio
    # pooled over quantities the agreement is much tighter
    assert abs(np.mean(ratio) - 1) < tolerance / 2, ratio


# ----------------------------------------------------------------- delta method
def test_user_quantities_match_finite_difference_delta_method():
    data, truth = simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=500, seed=5,
                           position_bias=0.2)
    K, N = 4, 6
    inf = wald_inference(data, truth.S, truth.beta, 1, position_bias=True)

    def strength(S, beta):  # the leading disagreement strength D_1 (goes through an SVD)
        return canonicalize(S, 1).D[0]

    def mixed(S, beta):  # a vector mixing scores and position biases nonlinearly
        import jax.numpy as jnp
        return jnp.stack([jnp.log(jnp.sum(jnp.exp(S[0]))), beta[1] * S[2, 3], jnp.tanh(beta[0])])

    def numpy_D1(x):
        S = x[: K * N].reshape(K, N)
        S = S - S.mean(axis=1, keepdims=True)
        mu = S.mean(axis=0)
        resid = S - np.outer(S @ mu / (mu @ mu), mu)
        return np.linalg.svd(resid, compute_uv=False)[0] ** 2 / (N * K)

    def numpy_mixed(x):
        S, beta = x[: K * N].reshape(K, N), x[K * N:]
        return np.array([np.log(np.sum(np.exp(S[0]))), beta[1] * S[2, 3], np.tanh(beta[0])])

    x = np.concatenate([inf.S.ravel(), inf.beta])
    for q, q_np in ((strength, numpy_D1), (mixed, numpy_mixed)):
        G = numerical_gradient(q_np, x) @ inf.basis
        expected = np.sqrt(np.diag(G @ inf.covariance @ G.T))
        iv = inf.contrast(q, level=0.8)
        np.testing.assert_allclose(iv.estimate, q_np(x), atol=1e-10)
        np.testing.assert_allclose(np.ravel(iv.se), expected, rtol=1e-6)
        np.testing.assert_allclose(np.ravel(inf.se(q)), expected, rtol=1e-6)
        z = norm.ppf(0.9)
        np.testing.assert_allclose(iv.upper - iv.lower, 2 * z * iv.se, rtol=1e-12)
    assert np.shape(inf.contrast(strength).estimate) == ()
    assert inf.contrast(mixed).se.shape == (3,)


# ------------------------------------------------------------- tables and edge cases
def test_rank_zero_is_ja_ranking_and_the_table_is_tidy():
    data, truth = simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300, seed=8)
    inf = wald_inference(data, truth.S, None, 0)
    assert inf.information.shape == (3 + 4 - 2,) * 2
    table = inf.intervals(level=0.9)
    assert list(table.columns) == ["quantity", "label", "estimate", "se", "lower", "upper"]
    assert table.quantity.value_counts().to_dict() == {"mu": 4, "gamma": 3, "mu_diff": 6}
    assert list(table.loc[table.quantity == "gamma", "label"]) == list(data.judges)
    assert "item0 - item3" in set(table.label)
    assert np.all(np.isfinite(table[["estimate", "se", "lower", "upper"]].to_numpy()))
    assert np.all(table.se > 0)
    mu_rows = table[table.quantity == "mu"]
    np.testing.assert_allclose(mu_rows.estimate, truth.mu, atol=1e-12)
    np.testing.assert_allclose(table.loc[table.quantity == "gamma", "estimate"].sum(), 3.0)
    with pytest.raises(IdentifiabilityError, match="not estimated"):
        inf.position_biases()


def test_position_bias_rows_appear_with_judge_names():
    data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=400, seed=9,
                           position_bias=0.5)
    inf = wald_inference(data, truth.S, truth.beta, 1, position_bias=True)
    table = inf.intervals()
    beta_rows = table[table.quantity == "beta"]
    assert list(beta_rows.label) == list(data.judges)
    np.testing.assert_allclose(beta_rows.estimate, truth.beta, atol=1e-12)
    assert np.all((beta_rows.lower < beta_rows.estimate) & (beta_rows.estimate < beta_rows.upper))
    np.testing.assert_allclose(inf.position_biases().se, beta_rows.se)
    # names and indices address the same contrast
    by_name = inf.score_difference("judge1", "item0", "item2")
    by_index = inf.score_difference(1, 0, 2)
    assert by_name == by_index
    with pytest.raises(IdentifiabilityError, match="non-zero but position_bias=False"):
        wald_inference(data, truth.S, truth.beta, 1)
    with pytest.raises(IdentifiabilityError, match="folded"):
        wald_inference(data.fold_order(), truth.S, truth.beta, 1, position_bias=True)


def test_disconnected_graph_is_a_clear_error():
    counts = pd.DataFrame({
        "judge": ["j1", "j1", "j2"], "model_a": ["a", "c", "a"], "model_b": ["b", "d", "b"],
        "n": [10, 10, 10], "wins": [6, 4, 5],
    })
    data = Comparisons.from_counts(counts)
    S = np.array([[1.0, -1.0, 0.5, -0.5], [2.0, -2.0, 1.0, -1.0]])
    with pytest.raises(DisconnectedGraphError, match="2 groups"):
        wald_inference(data, S, None, 0)


def test_singular_information_is_a_clear_error():
    # judge j1 never links {a, b} with {c, d}; at full rank its row is then not identified
    pairs_j1 = [("a", "b"), ("c", "d")]
    pairs_j2 = [(x, y) for x in "abcd" for y in "abcd" if x < y]
    rows = [("j1", x, y) for x, y in pairs_j1] + [("j2", x, y) for x, y in pairs_j2]
    counts = pd.DataFrame(rows, columns=["judge", "model_a", "model_b"]).assign(n=20, wins=11)
    data = Comparisons.from_counts(counts)
    S0 = np.outer([1.0, 1.5], [1.0, 0.5, -0.5, -1.0])
    assert wald_inference(data, S0, None, 0).condition_number < 1e4  # rank 0 borrows strength
    S1 = np.array([[1.0, 0.5, -0.5, -1.0], [0.2, 1.0, -1.5, 0.3]])
    with pytest.raises(IdentifiabilityError, match="condition number"):
        wald_inference(data, S1, None, 1)


def test_bad_arguments_are_clear_errors():
    data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=200, seed=4)
    with pytest.raises(hb.ParameterError, match="shape"):
        wald_inference(data, truth.S[:, :4], None, 1)
    with pytest.raises(IdentifiabilityError, match="not a point of the rank-0 model"):
        wald_inference(data, truth.S, None, 0)
    inf = wald_inference(data, truth.S, None, 1)
    with pytest.raises(hb.ParameterError, match="unknown item"):
        inf.score_difference(0, "item0", "nope")
    with pytest.raises(hb.ParameterError, match="level"):
        inf.intervals(level=1.5)


def test_the_constrained_information_is_symmetrised_block_by_block_to_the_same_numbers():
    """``constrained`` averages a matrix with its transpose in cache-sized blocks: the same
    numbers as ``(A + A^T) / 2`` at sizes around the block's, and the projection's
    definition (``Pi F Pi + s C C^T``) holds."""
    from hja_bayes.inference.wald import constrained, symmetrized

    rng = np.random.default_rng(3)
    for n in (1, 5, 63, 64, 65, 129, 200):
        A = rng.normal(size=(n, n))
        np.testing.assert_array_equal(symmetrized(A.copy(), block=64), (A + A.T) / 2)
    n = 130
    F = rng.normal(size=(n, n))
    F = F @ F.T
    C = np.linalg.qr(rng.normal(size=(n, 4)))[0]
    Pi = np.eye(n) - C @ C.T
    s = np.trace(Pi @ F @ Pi) / (n - 4)
    out = constrained(F, C)
    np.testing.assert_allclose(out, Pi @ F @ Pi + s * C @ C.T, atol=1e-10 * np.abs(F).max())
    np.testing.assert_array_equal(out, out.T)


def test_core_gradient_equals_autodiff_and_finite_differences():
    """The closed-form Jacobian of (mu, gamma, vec Z, theta) against JAX's reverse mode
    through the canonical decomposition, and central differences of a NumPy recomputation."""
    import jax
    import jax.numpy as jnp

    from hja_bayes.inference.intervals import core_gradient

    def core_quantities(S, Z, theta):  # as the canonical decomposition defines them
        d = canonicalize(S, 0)
        return jnp.concatenate([d.mu, d.gamma, jnp.ravel(Z), theta])

    def by_numpy(S):  # mu and gamma from their definitions, nothing shared
        Sc = S - S.mean(axis=1, keepdims=True)
        mu = Sc.mean(axis=0)
        return np.concatenate([mu, Sc @ mu / (mu @ mu)])

    rng = np.random.default_rng(5)
    for K, N, q, g in [(3, 5, 0, 0), (6, 9, 2, 3)]:
        S = rng.normal(size=(K, N)) + np.outer(rng.uniform(0.5, 2, K), np.linspace(-1, 1, N))
        Z, theta = rng.normal(size=(K, q)), rng.normal(size=g)
        value, dS, dZ, dtheta = core_gradient(S, Z, theta)
        args = (jnp.asarray(S), jnp.asarray(Z), jnp.asarray(theta))
        np.testing.assert_allclose(value, core_quantities(*args), atol=1e-12)
        for mine, theirs in zip((dS, dZ, dtheta),
                                jax.jacrev(core_quantities, argnums=(0, 1, 2))(*args)):
            np.testing.assert_allclose(mine, theirs, atol=1e-12)
        h = 1e-6
        for k, n in [(0, 0), (K - 1, N - 1), (1, 2)]:
            E = np.zeros((K, N))
            E[k, n] = h
            fd = (by_numpy(S + E) - by_numpy(S - E)) / (2 * h)
            np.testing.assert_allclose(dS[: N + K, k, n], fd, atol=1e-8)
        for rows in (slice(0, 2), slice(N - 1, N + 2), slice(N + K - 1, None)):  # in blocks
            part = core_gradient(S, Z, theta, rows)
            np.testing.assert_array_equal(part[0], value)
            for whole, block in zip((dS, dZ, dtheta), part[1:]):
                np.testing.assert_array_equal(block, whole[rows])
