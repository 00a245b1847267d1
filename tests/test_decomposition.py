import jax
import numpy as np
import pytest

from hja_bayes import IdentifiabilityError, canonicalize, compose
from hja_bayes.decomposition import constraint_violations


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
