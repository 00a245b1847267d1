"""Wald inference for a fitted HJA model (fixed panel, many comparisons).

In the tangent chart of the model at the fit (:mod:`hja_bayes.inference.chart`, extended by
the K position biases when they are estimated) the covariance ``C`` of the chart coordinates
is the inverse Fisher information, or a sandwich ``I^-1 M I^-1`` that stays valid when
comparisons are dependent within prompts (:mod:`hja_bayes.inference.information`).  Any
smooth quantity ``q(S, beta)`` then gets the delta-method covariance ``G B C B^T G^T`` with
``G = dq / d(S, beta)``.

Only the data, the fitted ``(S, beta)``, the rank and whether position bias was estimated
enter here, so any fitter that returns a point on the model can be plugged in.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..checks import check_choice, check_level, check_positive, indices_of
from ..comparisons import Comparisons
from ..decomposition import canonicalize, check_rank, free_parameters
from ..errors import IdentifiabilityError, ParameterError
from ..likelihood import cells_of
from .chart import RANK_TOLERANCE, centre_rows, tangent_basis
from .information import (
    COV_TYPES,
    chart_information,
    default_cov_type,
    score_covariance,
)

__all__ = ["Interval", "WaldInference", "wald_inference"]

#: Default bound on the condition number of the chart information before it is called singular.
MAX_CONDITION = 1e10


class Interval(NamedTuple):
    """Point estimate with a Wald standard error and a two-sided confidence interval.

    Attributes
    ----------
    estimate, se, lower, upper : ndarray
        Arrays of the shape of the quantity (0-d for a scalar).
    """

    estimate: np.ndarray
    se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def _flat_jacobian(q: Callable, S: jax.Array, beta: jax.Array):
    """Value of ``q`` and its Jacobian (outputs flattened) with respect to (vec S, beta).

    One ``jax.jacfwd`` or ``jax.jacrev`` over all outputs at once, whichever is cheaper.
    """

    def flat(S_, beta_):
        value = jnp.asarray(q(S_, beta_), dtype=S_.dtype)
        return jnp.ravel(value), value

    size = jax.eval_shape(flat, S, beta)[0].size
    jac_fn = jax.jacfwd if size > S.size + beta.size else jax.jacrev
    (dS, dbeta), value = jac_fn(flat, argnums=(0, 1), has_aux=True)(S, beta)
    G = jnp.concatenate([dS.reshape(size, -1), dbeta.reshape(size, -1)], axis=1)
    return np.asarray(value), np.asarray(G)


def _core_quantities(S: jax.Array, beta: jax.Array) -> jax.Array:
    """(mu, gamma, beta) stacked: gamma and mu do not depend on the rank, so rank 0 is used."""
    d = canonicalize(S, 0)
    return jnp.concatenate([d.mu, d.gamma, beta])


_core_jacobian = jax.jit(jax.jacrev(_core_quantities, argnums=(0, 1)))


def _z(level: float) -> float:
    from scipy.special import ndtri  # imported on use: the package imports light

    return float(ndtri(0.5 + check_level(level) / 2))


def _interval(estimate, variance, level) -> Interval:
    """Wald interval from estimates and their variances (same number of entries)."""
    estimate = np.asarray(estimate, dtype=float)
    se = np.sqrt(np.clip(np.asarray(variance, dtype=float), 0.0, None)).reshape(estimate.shape)
    z = _z(level)
    return Interval(estimate, se, estimate - z * se, estimate + z * se)


@dataclass(frozen=True, eq=False)
class WaldInference:
    """Wald (delta-method) inference at a fitted HJA score matrix.

    Build it with :func:`wald_inference`.

    Attributes
    ----------
    basis : ndarray (K N + K, dim)
        Orthonormal chart basis in (vec S, beta) coordinates (the beta rows are zero when
        position bias is not estimated).
    information : ndarray (dim, dim)
        Expected Fisher information in the chart (plus the ridge's curvature).
    covariance : ndarray (dim, dim)
        The asymptotic covariance of the chart coordinates: ``I^-1`` for
        ``cov_type="fisher"``, else the sandwich ``I^-1 M I^-1``.
    S : ndarray (K, N)
        The fitted scores, rows centred.
    beta : ndarray (K,)
        The fitted position biases (zeros when not estimated).
    rank : int
    position_bias : bool
    judges, items : tuple of str
        Names, from the data.
    condition_number : float
        Of ``information``.
    cov_type : str
        "fisher", "sandwich" or "cluster".
    n_clusters : int
        Clusters behind a cluster-robust covariance (0 otherwise).
    """

    basis: np.ndarray
    information: np.ndarray
    covariance: np.ndarray
    S: np.ndarray
    beta: np.ndarray
    rank: int
    position_bias: bool
    judges: tuple[str, ...]
    items: tuple[str, ...]
    condition_number: float
    cov_type: str = "fisher"
    n_clusters: int = 0

    # ----------------------------------------------------------- delta method
    def covariance_of(self, q: Callable) -> tuple[np.ndarray, np.ndarray]:
        """Estimate and delta-method covariance of a smooth quantity ``q(S, beta)``.

        Parameters
        ----------
        q : callable
            ``q(S, beta) -> scalar or array``, differentiable by JAX (it may call
            :func:`~hja_bayes.decomposition.canonicalize`).  ``S`` is passed row-centred.

        Returns
        -------
        estimate : ndarray, shape of q's output
        covariance : ndarray (q.size, q.size)
            ``G B C B^T G^T`` with ``G`` the Jacobian of q (one ``jax.jacfwd``/``jacrev``
            over all outputs at once).
        """
        S, beta = jnp.asarray(self.S), jnp.asarray(self.beta)
        value, G = _flat_jacobian(q, S, beta)
        GB = G @ self.basis
        return value, GB @ self.covariance @ GB.T

    def se(self, q: Callable) -> np.ndarray:
        """Wald standard error of every output of ``q(S, beta)`` (delta method)."""
        estimate, cov = self.covariance_of(q)
        return np.sqrt(np.clip(np.diagonal(cov), 0.0, None)).reshape(np.shape(estimate))

    def contrast(self, q: Callable, level: float = 0.95) -> Interval:
        """Estimate, standard error and Wald interval of ``q(S, beta)``.

        Parameters
        ----------
        q : callable
            ``q(S, beta) -> scalar or array``, differentiable by JAX.
        level : float
            Confidence level of the two-sided interval ``estimate +- z se``.

        Returns
        -------
        Interval

        Examples
        --------
        Any differentiable function of the scores works, e.g. the leading disagreement
        strength ``D_1`` of the canonical decomposition:
        ``inference.contrast(lambda S, b: canonicalize(S, 1).D[0])``.
        """
        estimate, cov = self.covariance_of(q)
        return _interval(estimate, np.diagonal(cov), level)

    # ------------------------------------------------------ standard quantities
    @cached_property
    def _core_covariance(self) -> tuple[np.ndarray, np.ndarray]:
        S, beta = jnp.asarray(self.S), jnp.asarray(self.beta)
        value = np.asarray(_core_quantities(S, beta))
        dS, dbeta = _core_jacobian(S, beta)
        G = np.concatenate([np.asarray(dS).reshape(value.size, -1), np.asarray(dbeta)], axis=1)
        GB = G @ self.basis
        return value, GB @ self.covariance @ GB.T

    def _item_index(self, item) -> np.ndarray:
        return indices_of(item, self.items, "item")

    def _judge_index(self, judge) -> np.ndarray:
        return indices_of(judge, self.judges, "judge")

    def mu(self, level: float = 0.95) -> Interval:
        """Consensus scores mu_i (the mean of the judges' centred score rows)."""
        value, cov = self._core_covariance
        N = len(self.items)
        return _interval(value[:N], np.diagonal(cov)[:N], level)

    def gamma(self, level: float = 0.95) -> Interval:
        """Judge sensitivities gamma_k (``sum(gamma) = K``)."""
        value, cov = self._core_covariance
        N, K = len(self.items), len(self.judges)
        return _interval(value[N:N + K], np.diagonal(cov)[N:N + K], level)

    def position_biases(self, level: float = 0.95) -> Interval:
        """Per-judge position biases beta_k (only when they were estimated)."""
        if not self.position_bias:
            raise IdentifiabilityError("position bias was not estimated in this fit")
        value, cov = self._core_covariance
        N, K = len(self.items), len(self.judges)
        return _interval(value[N + K:], np.diagonal(cov)[N + K:], level)

    def mu_differences(self, level: float = 0.95) -> tuple[list[tuple[int, int]], Interval]:
        """``mu_a - mu_b`` for every pair of items ``a < b`` (in the data's item order).

        Returns
        -------
        pairs : list of (a, b)
            Item indices of each difference.
        Interval
            One entry per pair.
        """
        value, cov = self._core_covariance
        N = len(self.items)
        a, b = np.triu_indices(N, k=1)
        C = cov[:N, :N]
        est = value[a] - value[b]
        var = C[a, a] + C[b, b] - 2 * C[a, b]
        return list(zip(a.tolist(), b.tolist())), _interval(est, var, level)

    def score_difference(self, judge, first, second, level: float = 0.95) -> Interval:
        """Judge-specific contrast ``S[k, i] - S[k, j]``.

        Parameters
        ----------
        judge, first, second : str, int or array-like of them
            Judge and the two items, by name or index; arrays are broadcast together.
        level : float
            Confidence level.

        Returns
        -------
        Interval
            Of the broadcast shape.

        Raises
        ------
        ParameterError
            For an unknown name or an index out of range.
        """
        k, i, j = np.broadcast_arrays(
            self._judge_index(judge), self._item_index(first), self._item_index(second)
        )
        return self.contrast(lambda S, beta: S[k, i] - S[k, j], level)

    def win_probability(self, judge, first, second, level: float = 0.95) -> Interval:
        """Probability that ``judge`` prefers ``first`` (shown first) over ``second``.

        ``p = expit(beta_k + S[k, i] - S[k, j])``.  The interval is computed on the logit
        scale and mapped through the logistic function (so it stays inside (0, 1)); ``se``
        is the delta-method standard error on the probability scale.

        Parameters
        ----------
        judge, first, second : str, int or array-like of them
            Judge, the item shown first and the item shown second, by name or index; arrays
            are broadcast together.
        level : float
            Confidence level.

        Returns
        -------
        Interval
            Of the broadcast shape, on the probability scale.
        """
        k, i, j = np.broadcast_arrays(
            self._judge_index(judge), self._item_index(first), self._item_index(second)
        )
        logit = self.contrast(lambda S, beta: beta[k] + S[k, i] - S[k, j], level)
        from scipy.special import expit

        p = expit(logit.estimate)
        return Interval(p, p * (1 - p) * logit.se, expit(logit.lower), expit(logit.upper))

    def intervals(self, level: float = 0.95) -> pd.DataFrame:
        """Tidy table of Wald intervals for mu, gamma, beta and every mu difference.

        Parameters
        ----------
        level : float
            Confidence level.

        Returns
        -------
        DataFrame
            Columns ``quantity`` ("mu", "gamma", "beta" (only with position bias),
            "mu_diff"), ``label`` (item, judge, or "a - b"), ``estimate``, ``se``,
            ``lower``, ``upper``.
        """
        frames = []

        def add(quantity, labels, iv):
            frames.append(pd.DataFrame({
                "quantity": quantity, "label": list(labels), "estimate": iv.estimate,
                "se": iv.se, "lower": iv.lower, "upper": iv.upper,
            }))

        add("mu", self.items, self.mu(level))
        add("gamma", self.judges, self.gamma(level))
        if self.position_bias:
            add("beta", self.judges, self.position_biases(level))
        pairs, differences = self.mu_differences(level)
        add("mu_diff", [f"{self.items[a]} - {self.items[b]}" for a, b in pairs], differences)
        return pd.concat(frames, ignore_index=True)


def wald_inference(
    data: Comparisons,
    S,
    beta=None,
    rank: int = 0,
    *,
    position_bias: bool = False,
    cov_type: str | None = None,
    ridge: float = 0.0,
    max_condition: float = MAX_CONDITION,
    rank_tolerance: float = RANK_TOLERANCE,
) -> WaldInference:
    """Wald inference at a fitted rank-``rank`` HJA model.

    Parameters
    ----------
    data : Comparisons
        The data the model was fitted to.
    S : array (K, N)
        Fitted scores, of rank at most ``rank + 1`` once rows are centred.
    beta : array (K,) or None
        Fitted position biases; None means zeros.  Must be zero when ``position_bias`` is
        false.
    rank : int
        Disagreement rank r of the fit.
    position_bias : bool
        Whether beta was estimated (it then gets its own chart coordinates).
    cov_type : {"fisher", "sandwich", "cluster"}, optional
        Covariance of the estimates: the inverse Fisher information (comparisons
        independent), the sandwich with each comparison its own unit, or the cluster-robust
        sandwich with comparisons summed within each cluster (prompt) of ``data.clusters``
        and the small-sample factor G/(G-1).  Default: "cluster" when the data carry
        clusters, else "fisher".
    ridge : float
        The fit's penalty ``ridge/2 (|S|^2 + |beta|^2)``: its curvature, ``ridge`` times the
        identity in the orthonormal chart, is added to the information (the curvature of the
        penalised objective, which keeps a separated judge's intervals finite).
    max_condition : float
        Largest acceptable condition number of the chart information.
    rank_tolerance : float
        See :func:`tangent_basis`.

    Returns
    -------
    WaldInference

    Raises
    ------
    DisconnectedGraphError
        When the pooled comparison graph is disconnected.
    IdentifiabilityError
        When ``S`` is not a rank-(r+1) point, position bias is asked for on folded data, or
        the information in the chart is singular or ill-conditioned (the message gives its
        condition number).

    Notes
    -----
    When every pair of items was shown in one orientation only
    (``data.one_orientation_only``), position bias is identified, if at all, only through the
    low-rank structure of S; expect wide beta intervals, or a singular information at high
    rank.

    Examples
    --------
    >>> from hja_bayes import simulate
    >>> data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=400)
    >>> inf = wald_inference(data, truth.S, rank=1)
    >>> inf.information.shape
    (10, 10)
    >>> list(inf.intervals().columns)
    ['quantity', 'label', 'estimate', 'se', 'lower', 'upper']
    """
    data.check_connected()
    S = centre_rows(S)
    K, N = S.shape
    if (K, N) != (data.n_judges, data.n_items):
        raise ParameterError(
            f"S has shape {S.shape} but the data have {data.n_judges} judges and "
            f"{data.n_items} items"
        )
    rank = check_rank(rank, K, N)
    beta = np.zeros(K) if beta is None else np.asarray(beta, dtype=float)
    if beta.shape != (K,):
        raise ParameterError(f"beta must have shape ({K},), got {beta.shape}")
    if position_bias and not data.order_known:
        raise IdentifiabilityError(
            "position bias needs the presentation order, and these data were folded "
            "(fold_order): fit and infer with position_bias=False"
        )
    if not position_bias and np.any(beta != 0):
        raise IdentifiabilityError(
            "beta is non-zero but position_bias=False: pass position_bias=True if it was estimated"
        )
    cov_type = default_cov_type(data) if cov_type is None else check_choice(cov_type, "cov_type", COV_TYPES)
    basis_S = tangent_basis(S, rank, rank_tolerance=rank_tolerance)
    info = chart_information(S, beta, cells_of(data, pad=True), basis_S, position_bias)
    info = info + check_positive(ridge, "ridge", allow_zero=True) * np.eye(len(info))
    eig, vectors = np.linalg.eigh(info)
    condition = float(eig[-1] / eig[0]) if eig[0] > 0 else float("inf")
    if not condition <= max_condition:
        raise IdentifiabilityError(
            f"the Fisher information of the rank-{rank} model is singular or ill-conditioned "
            f"(condition number {condition:.3g} > {max_condition:g}): some direction of the "
            "model is not identified by these comparisons (e.g. a judge whose own comparisons "
            "do not link all items at a high rank, or position bias confounded with the scores)"
        )
    inverse = (vectors / eig) @ vectors.T  # symmetric by construction
    d = basis_S.shape[1]
    if position_bias:
        basis = np.zeros((K * N + K, d + K))
        basis[: K * N, :d] = basis_S
        basis[K * N:, d:] = np.eye(K)
    else:
        basis = np.vstack([basis_S, np.zeros((K, d))])
    if cov_type == "fisher":
        covariance = inverse
    else:
        meat = score_covariance(data, S, beta, basis, cov_type)
        covariance = inverse @ meat @ inverse
        covariance = (covariance + covariance.T) / 2
    expected = free_parameters(K, N, rank, position_bias)
    if basis.shape[1] != expected:  # pragma: no cover - a broken invariant, not bad input
        raise AssertionError(f"chart dimension {basis.shape[1]} != free parameters {expected}")
    return WaldInference(
        basis=basis, information=info, covariance=covariance, S=S, beta=beta, rank=rank,
        position_bias=bool(position_bias), judges=data.judges, items=data.items,
        condition_number=condition, cov_type=cov_type,
        n_clusters=data.clusters.n_clusters if cov_type == "cluster" else 0,
    )
