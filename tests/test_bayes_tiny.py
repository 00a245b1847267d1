"""Batched tiny-matrix factorisations against NumPy and SciPy, values and derivatives."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from hja_bayes.bayes.tiny import UNROLL_LIMIT, cho_solve, cholesky, solve_lower_transposed


def spd(batch, D, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(batch, D, D))
    return A @ np.swapaxes(A, 1, 2) + D * np.eye(D), rng


@pytest.mark.parametrize("D", sorted({1, 2, 3, UNROLL_LIMIT, UNROLL_LIMIT + 1, 8, 17}))
def test_factor_and_solves_match_numpy(D):
    H, rng = spd(5, D, D)
    b, z = rng.normal(size=(5, D)), rng.normal(size=(5, 7, D))
    L = np.asarray(cholesky(jnp.asarray(H)))
    np.testing.assert_allclose(L, np.linalg.cholesky(H), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cho_solve(jnp.asarray(L), jnp.asarray(b)),
                               np.linalg.solve(H, b[..., None])[..., 0], rtol=1e-10, atol=1e-12)
    expected = np.stack([scipy.linalg.solve_triangular(L[i], z[i].T, lower=True, trans="T").T
                         for i in range(5)])
    np.testing.assert_allclose(solve_lower_transposed(jnp.asarray(L), jnp.asarray(z)), expected,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(solve_lower_transposed(jnp.asarray(L), jnp.asarray(z[:, 0])),
                               expected[:, 0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("D", [UNROLL_LIMIT, 8])
def test_derivatives_match_jax_linalg(D):
    """Both forms of the factorisation differentiate like LAPACK's (log det and a solve)."""
    H, rng = spd(3, D, 0)
    b = jnp.asarray(rng.normal(size=(3, D)))

    def ours(M):
        L = cholesky(M)
        return jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2))) + jnp.sum(cho_solve(L, b) ** 2)

    def reference(M):
        L = jnp.linalg.cholesky(M)
        x = jnp.linalg.solve(M, b[..., None])[..., 0]
        return jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2))) + jnp.sum(x**2)

    # a symmetric direction: the factorisation reads the lower triangle only
    E = rng.normal(size=H.shape)
    E = jnp.asarray(E + np.swapaxes(E, 1, 2))
    d_ours = jax.jvp(ours, (jnp.asarray(H),), (E,))[1]
    d_ref = jax.jvp(reference, (jnp.asarray(H),), (E,))[1]
    np.testing.assert_allclose(d_ours, d_ref, rtol=1e-10)
