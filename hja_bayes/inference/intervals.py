"""Wald intervals: the interval type, normal or t quantiles, and the Jacobians of the
quantities every table reports (the consensus, the sensitivities, the terms' coefficients)."""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import check_level

__all__ = ["Interval", "core_gradient", "flat_jacobian", "interval", "quantile"]


class Interval(NamedTuple):
    """Point estimate with a Wald standard error and a two-sided confidence interval.

    Attributes
    ----------
    estimate, se, lower, upper : ndarray
        Arrays of the shape of the quantity (0-d for a scalar).
    df : ndarray or None
        Degrees of freedom of the t quantile of each interval (Satterthwaite's, under the
        CR2 cluster-robust covariance); None: normal quantiles.
    """

    estimate: np.ndarray
    se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    df: np.ndarray | None = None


def flat_jacobian(q: Callable, S: jax.Array, Z: jax.Array, theta: jax.Array):
    """Value of ``q(S, Z, theta)`` and its Jacobians (outputs flattened) with respect to S,
    Z and theta: ``(value, dS (size, K, N), dZ (size, K, q), dtheta (size, g))``.

    One ``jax.jacfwd`` or ``jax.jacrev`` over all outputs at once, whichever is cheaper.
    """

    def flat(S_, Z_, theta_):
        value = jnp.asarray(q(S_, Z_, theta_), dtype=S_.dtype)
        return jnp.ravel(value), value

    size = jax.eval_shape(flat, S, Z, theta)[0].size
    jac_fn = jax.jacfwd if size > S.size + Z.size + theta.size else jax.jacrev
    (dS, dZ, dtheta), value = jac_fn(flat, argnums=(0, 1, 2), has_aux=True)(S, Z, theta)
    return (np.asarray(value), np.asarray(dS).reshape((size,) + S.shape),
            np.asarray(dZ).reshape((size,) + Z.shape), np.asarray(dtheta).reshape(size, -1))


def core_gradient(S, Z, theta, rows: slice = slice(None)
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The quantities every table reports, ``(mu, gamma, vec Z, theta)`` stacked (gamma and
    mu as :func:`~hja_bayes.decomposition.canonicalize` defines them, at any rank), and
    their Jacobians with respect to S, Z and theta, in closed form (NumPy):
    ``(value, dS (size, K, N), dZ (size, K, q), dtheta (size, g))``.

    With ``S_c`` the row-centred scores, ``mu = S_c^T 1 / K`` and
    ``gamma = S_c mu / |mu|^2``:

    * ``d mu_n / d S_jm = (delta_nm - 1/N) / K`` (for every judge j);
    * ``d gamma_k / d S_jm = (delta_kj mu_m + (S_c,km - 2 gamma_k mu_m) / K) / |mu|^2``
      (the rows of ``S_c`` sum to zero, and ``mu`` is centred);
    * Z and theta enter as themselves.

    The same numbers as JAX's reverse mode through ``canonicalize`` without compiling it
    (0.3 s of a command-line fit's first run).  ``rows`` picks a slice of the quantities
    (``value`` stays whole): a leaderboard of 1,000 models would otherwise hold 1,000 x K x
    1,000 numbers of ``dS`` at once.
    """
    S = np.asarray(S, dtype=float)
    Z, theta = np.asarray(Z, dtype=float), np.ravel(np.asarray(theta, dtype=float))
    K, N = S.shape
    Sc = S - S.mean(axis=1, keepdims=True)
    mu = Sc.mean(axis=0)
    norm2 = mu @ mu
    gamma = Sc @ mu / norm2
    q, g = Z.size, theta.size
    index = np.arange(N + K + q + g)[rows]
    size = index.size
    dS = np.zeros((size, K, N))
    mu_rows = index < N
    dS[mu_rows] = (np.where(index[mu_rows, None] == np.arange(N), 1.0, 0.0) - 1.0 / N)[
        :, None, :] / K
    gamma_rows = (index >= N) & (index < N + K)
    k = index[gamma_rows] - N
    dS[gamma_rows] = (np.eye(K)[k, :, None] * mu
                      + (Sc[k] - 2.0 * gamma[k, None] * mu)[:, None, :] / K) / norm2
    dZ = np.where(index[:, None] - (N + K) == np.arange(q), 1.0, 0.0)
    dtheta = np.where(index[:, None] - (N + K + q) == np.arange(g), 1.0, 0.0)
    value = np.concatenate([mu, gamma, Z.ravel(), theta])
    return value, dS, dZ.reshape((size,) + Z.shape), dtheta


def quantile(level: float, df=None):
    """The two-sided critical value: normal, or Student t with ``df`` (array; inf: normal)."""
    # imported on use: the package imports light (and scipy.stats costs a command-line
    # fit most of a second: the t quantile comes from scipy.special)
    from scipy.special import ndtri, stdtrit

    level = check_level(level)
    if df is None:
        return float(ndtri(0.5 + level / 2))
    df = np.asarray(df, dtype=float)
    finite = np.isfinite(df)
    return np.where(finite, stdtrit(np.where(finite, df, 1.0), 0.5 + level / 2),
                    float(ndtri(0.5 + level / 2)))


def interval(estimate, variance, level, df=None) -> Interval:
    """Wald interval from estimates and their variances (same number of entries); with
    ``df``, t quantiles of those degrees of freedom."""
    estimate = np.asarray(estimate, dtype=float)
    se = np.sqrt(np.clip(np.asarray(variance, dtype=float), 0.0, None)).reshape(estimate.shape)
    if df is not None:
        df = np.asarray(df, dtype=float).reshape(estimate.shape)
    z = quantile(level, df)
    return Interval(estimate, se, estimate - z * se, estimate + z * se, df)
