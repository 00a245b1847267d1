"""Wald intervals: the interval type, normal or t quantiles, and the Jacobians of the
quantities every table reports (the consensus, the sensitivities, the terms' coefficients)."""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import check_level
from ..decomposition import canonicalize
from ..jitting import stored_jit

__all__ = ["Interval", "core_jacobian", "core_quantities", "core_quantities_jit", "flat_jacobian",
           "interval", "quantile"]


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


def core_quantities(S: jax.Array, Z: jax.Array, theta: jax.Array) -> jax.Array:
    """(mu, gamma, vec Z, theta) stacked: gamma and mu do not depend on the rank, so rank 0
    is used."""
    d = canonicalize(S, 0)
    return jnp.concatenate([d.mu, d.gamma, jnp.ravel(Z), theta])


core_quantities_jit = stored_jit(core_quantities)
core_jacobian = stored_jit(jax.jacrev(core_quantities, argnums=(0, 1, 2)),
                           name=f"{__name__}.core_jacobian")


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
