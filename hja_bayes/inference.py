"""Wald inference for a fitted HJA model (fixed panel, many comparisons).

The rank-r HJA model is the set of row-centred K x N score matrices of rank at most
``m = r + 1``.  At a fitted ``S = P Sigma Q^T`` (P: K x m, Q: N x m, both orthonormal) the
tangent space of that set is

    { P M Q^T + X Q^T + P Y^T :  X^T P = 0,  Y^T Q = 0,  Y^T 1 = 0 }

of dimension ``m (K + N - m - 1) = (r + 1)(K + N - r - 2)``.  An orthonormal basis of it (in
the flattened, row-major coordinates of S, extended by the K position biases when they are
estimated) is a local chart of the model.  In that chart the expected information is
``I = B^T F B`` with F the information of (S, beta) over cells
(:func:`hja_bayes.likelihood.fisher_blocks`), and the asymptotic covariance of the chart
coordinates is ``I^{-1}``.  Any smooth quantity ``q(S, beta)`` then gets the delta-method
covariance ``G B I^{-1} B^T G^T`` with ``G = dq / d(S, beta)``.

Only the data, the fitted ``(S, beta)``, the rank and whether position bias was estimated
enter here, so any fitter that returns a point on the model can be plugged in.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from .checks import check_level, indices_of
from .comparisons import Comparisons
from .decomposition import canonicalize, check_rank, free_parameters
from .errors import IdentifiabilityError, ParameterError
from .likelihood import cells_of, fisher_blocks

__all__ = [
    "Interval",
    "WaldInference",
    "chart_information",
    "tangent_basis",
    "wald_inference",
]

#: Default bound on the condition number of the chart information before it is called singular.
MAX_CONDITION = 1e10
#: Relative size of the (r+2)-th singular value of S above which S is not of rank <= r+1.
RANK_TOLERANCE = 1e-6


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


def _orthonormal_complement(A: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the orthogonal complement of the columns of ``A`` (full rank)."""
    n, k = A.shape
    left = np.linalg.svd(A, full_matrices=True)[0]
    return left[:, k:]


def _centre_rows(S) -> np.ndarray:
    S = np.asarray(S, dtype=float)
    if S.ndim != 2:
        raise ParameterError(f"S must be a K x N matrix, got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise IdentifiabilityError("the score matrix has non-finite entries")
    return S - S.mean(axis=1, keepdims=True)


def tangent_basis(S, rank: int, *, rank_tolerance: float = RANK_TOLERANCE) -> np.ndarray:
    """Orthonormal basis of the tangent space of the rank-``rank`` HJA model at ``S``.

    The model is the set of row-centred K x N matrices of rank ``m = rank + 1``.  With the
    thin SVD ``S = P Sigma Q^T``, ``P_perp`` an orthonormal basis of ``P``'s complement in
    R^K and ``Q_c`` one of ``{Q, 1}``'s complement in R^N, the basis consists of the
    matrices ``p_a q_b^T``, ``p_a qc_d^T`` and ``pperp_c q_b^T`` (the three kinds of
    tangent direction ``P M Q^T``, ``P Y^T`` and ``X Q^T``), flattened row-major.

    Parameters
    ----------
    S : array (K, N)
        A point of the model (rows are centred here; the likelihood ignores row shifts).
    rank : int
        Disagreement rank r.
    rank_tolerance : float
        ``S`` must have ``sigma_{r+2} <= rank_tolerance * sigma_1`` (rank at most r + 1) and
        ``sigma_{r+1} > 1e-10 * sigma_1`` (rank exactly r + 1, else the tangent space is
        not defined).

    Returns
    -------
    ndarray (K * N, (r + 1)(K + N - r - 2))
        Orthonormal columns; column c reshaped to (K, N) is a tangent direction.

    Raises
    ------
    IdentifiabilityError
        When ``S`` is not (numerically) of rank exactly r + 1, or the rank is not
        identifiable for this K, N.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> S = rng.standard_normal((3, 2)) @ rng.standard_normal((2, 5))
    >>> B = tangent_basis(S, 1)
    >>> B.shape, bool(np.allclose(B.T @ B, np.eye(B.shape[1])))
    ((15, 10), True)
    """
    S = _centre_rows(S)
    K, N = S.shape
    rank = check_rank(rank, K, N)
    m = rank + 1
    left, sigma, right_t = np.linalg.svd(S, full_matrices=False)
    top = sigma[0] if sigma.size else 0.0
    if top <= 0 or sigma[m - 1] <= 1e-10 * top:
        raise IdentifiabilityError(
            f"S has rank below r + 1 = {m} (singular values {np.array2string(sigma[:m + 1], precision=3)}): "
            "the tangent space of the rank-r model is not defined there; fit a smaller rank"
        )
    if sigma.size > m and sigma[m] > rank_tolerance * top:
        raise IdentifiabilityError(
            f"S is not a point of the rank-{rank} model: its singular value {m + 1} is "
            f"{sigma[m] / top:.3g} of the largest (tolerance {rank_tolerance:g}); pass the "
            f"fitted rank-{rank} score matrix"
        )
    P, Q = left[:, :m], right_t[:m].T
    P_perp = _orthonormal_complement(P)
    Q_c = _orthonormal_complement(np.column_stack([np.ones(N) / np.sqrt(N), Q]))
    Q_all = np.column_stack([Q, Q_c])  # orthonormal basis of 1-perp in R^N
    return np.column_stack([np.kron(P, Q_all), np.kron(P_perp, Q)])


def chart_information(
    S, beta, cells, basis: np.ndarray, position_bias: bool
) -> np.ndarray:
    """Expected Fisher information in the chart spanned by ``basis`` (plus beta).

    ``I = B^T F B`` where F is the information of (vec S, beta) over the cells (a judge-block
    matrix, see :func:`hja_bayes.likelihood.fisher_blocks`) and B is ``basis`` (K N x d), extended
    by the K beta coordinates when ``position_bias`` is true.  The block structure is used:
    nothing of size (K N)^2 is formed.

    Parameters
    ----------
    S : array (K, N)
    beta : array (K,)
    cells : hja_bayes.likelihood.Cells
    basis : ndarray (K * N, d)
        From :func:`tangent_basis`.
    position_bias : bool
        Whether beta is a free parameter.

    Returns
    -------
    ndarray (d, d) or (d + K, d + K)
        Chart coordinates first, then beta_1..beta_K.
    """
    S = jnp.asarray(S)
    K, N = S.shape
    SS, Sb, bb = (np.asarray(x) for x in _fisher_blocks(S, jnp.asarray(beta), cells))
    basis = np.asarray(basis)
    Bk = basis.reshape(K, N, -1)
    FB = np.matmul(SS, Bk)  # judge by judge: F is block diagonal in S
    info = basis.T @ FB.reshape(K * N, -1)
    info = (info + info.T) / 2
    if not position_bias:
        return info
    cross = np.einsum("kia,ki->ak", Bk, Sb)
    return np.block([[info, cross], [cross.T, np.diag(bb)]])


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
_fisher_blocks = jax.jit(fisher_blocks)


def _z(level: float) -> float:
    return float(norm.ppf(0.5 + check_level(level) / 2))


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
        Expected Fisher information in the chart.
    covariance : ndarray (dim, dim)
        Its inverse: the asymptotic covariance of the chart coordinates.
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
    S = _centre_rows(S)
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
    basis_S = tangent_basis(S, rank, rank_tolerance=rank_tolerance)
    info = chart_information(S, beta, cells_of(data, pad=True), basis_S, position_bias)
    eig, vectors = np.linalg.eigh(info)
    condition = float(eig[-1] / eig[0]) if eig[0] > 0 else float("inf")
    if not condition <= max_condition:
        raise IdentifiabilityError(
            f"the Fisher information of the rank-{rank} model is singular or ill-conditioned "
            f"(condition number {condition:.3g} > {max_condition:g}): some direction of the "
            "model is not identified by these comparisons (e.g. a judge whose own comparisons "
            "do not link all items at a high rank, or position bias confounded with the scores)"
        )
    covariance = (vectors / eig) @ vectors.T  # symmetric by construction
    d = basis_S.shape[1]
    if position_bias:
        basis = np.zeros((K * N + K, d + K))
        basis[: K * N, :d] = basis_S
        basis[K * N:, d:] = np.eye(K)
    else:
        basis = np.vstack([basis_S, np.zeros((K, d))])
    expected = free_parameters(K, N, rank, position_bias)
    if basis.shape[1] != expected:  # pragma: no cover - a broken invariant, not bad input
        raise AssertionError(f"chart dimension {basis.shape[1]} != free parameters {expected}")
    return WaldInference(
        basis=basis, information=info, covariance=covariance, S=S, beta=beta, rank=rank,
        position_bias=bool(position_bias), judges=data.judges, items=data.items,
        condition_number=condition,
    )
