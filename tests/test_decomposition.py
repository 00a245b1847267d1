import warnings

import jax
import numpy as np
import pytest

from hja_bayes import IdentifiabilityError, ParameterError, canonicalize, compose
from hja_bayes.errors import DataWarning
from hja_bayes.decomposition import check_rank, constraint_violations


def random_rank(K, N, q, seed):
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((K, q)) @ rng.standard_normal((q, N))
    return S - S.mean(axis=1, keepdims=True) + rng.standard_normal(K)[:, None]  # row shifts


@pytest.mark.parametrize("K,N,r", [(4, 8, 0), (4, 8, 1), (6, 5, 2), (10, 30, 3)])
def test_exact_and_idempotent_on_rank_r_plus_one(K, N, r):
    S = random_rank(K, N, r + 1, seed=K + N + r)
    Sc = S - S.mean(axis=1, keepdims=True)
    d = canonicalize(S, r)
    assert max(constraint_violations(d).values()) < 1e-10
    np.testing.assert_allclose(compose(d.gamma, d.mu, d.U, d.V), Sc, atol=1e-10)
    d2 = canonicalize(compose(d.gamma, d.mu, d.U, d.V), r)
    for a, b in zip(d, d2):
        np.testing.assert_allclose(a, b, atol=1e-10)


def test_consequences_of_the_constraints():
    S = random_rank(5, 7, 3, seed=0)
    Sc = S - S.mean(axis=1, keepdims=True)
    d = canonicalize(S, 2)
    np.testing.assert_allclose(d.mu, Sc.mean(axis=0), atol=1e-12)
    one = np.ones(5)
    np.testing.assert_allclose(d.gamma, 5 * Sc @ Sc.T @ one / np.sum((one @ Sc) ** 2), atol=1e-10)
    mu = np.asarray(d.mu)
    proj = Sc @ (np.eye(7) - np.outer(mu, mu) / (mu @ mu))
    np.testing.assert_allclose(np.asarray(d.U) @ np.asarray(d.V).T, proj, atol=1e-10)


@pytest.mark.parametrize("K,N,r", [(4, 6, 0), (4, 6, 1), (6, 5, 2), (10, 30, 3)])
def test_jit_and_vmap_agree_with_the_concrete_path(K, N, r):
    # concrete matrices are decomposed in NumPy, traced ones in JAX: the two must agree,
    # signs included, on full-rank matrices (every residual direction present)
    S = np.stack([random_rank(K, N, min(K, N), seed=s) for s in range(3)])
    batched = jax.vmap(jax.jit(lambda x: canonicalize(x, r)))(S)
    for b in range(3):
        concrete = canonicalize(S[b], r)
        assert all(isinstance(x, np.ndarray) for x in concrete)
        for traced, exact in zip(batched, concrete):
            np.testing.assert_allclose(traced[b], exact, atol=1e-10)


def test_no_consensus_is_an_error():
    S = np.array([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0]])
    with pytest.raises(IdentifiabilityError, match="no consensus"):
        canonicalize(S, 0)


def test_rank_too_large_is_an_error():
    with pytest.raises(IdentifiabilityError, match="maximum rank is 3"):
        canonicalize(np.ones((4, 8)), 4)


def test_a_negative_rank_is_a_bad_parameter_not_an_identifiability_limit():
    with pytest.raises(ParameterError, match="rank must be 0 or more.*got -1"):
        check_rank(-1, 4, 8)


def test_tied_disagreement_strengths_are_warned_about():
    # two residual directions of exactly equal strength: U and V's columns are not
    # identified (any rotation of the pair fits), S is
    N, K = 6, 4
    basis, _ = np.linalg.qr(np.column_stack([np.ones(N), np.arange(N), np.eye(N)[:, :2]]))
    mu, V = basis[:, 1], basis[:, 2:4] * np.sqrt(N)
    judges, _ = np.linalg.qr(np.column_stack([np.ones(K),
                                              np.random.default_rng(0).standard_normal((K, 2))]))
    loadings = judges[:, 1:]  # orthonormal, centred: the residual's two strengths are equal
    S = np.outer(np.ones(K), 2 * mu) + 0.5 * loadings @ V.T
    with pytest.warns(DataWarning, match="tied singular values"):
        d = canonicalize(S, 2)
    np.testing.assert_allclose(d.D[0], d.D[1], rtol=1e-12)
    np.testing.assert_allclose(compose(d.gamma, d.mu, d.U, d.V), S - S.mean(1, keepdims=True),
                               atol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        canonicalize(S + 0.1 * np.outer(loadings[:, 0], V[:, 0]), 2)  # strengths apart
