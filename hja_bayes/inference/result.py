"""The result of Wald inference: intervals for the standard quantities, the linear terms'
coefficients and any smooth ``q(S, beta)`` by the delta method, from the covariance of the
chart coordinates."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..checks import check_level, indices_of
from ..decomposition import canonicalize
from ..errors import IdentifiabilityError
from .chart import FactorChart
from .clusters import ClusterDesign, satterthwaite
from .pairs import item_pairs

__all__ = ["Interval", "WaldInference"]


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


def _flat_jacobian(q: Callable, S: jax.Array, Z: jax.Array, theta: jax.Array):
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


def _core_quantities(S: jax.Array, Z: jax.Array, theta: jax.Array) -> jax.Array:
    """(mu, gamma, vec Z, theta) stacked: gamma and mu do not depend on the rank, so rank 0
    is used."""
    d = canonicalize(S, 0)
    return jnp.concatenate([d.mu, d.gamma, jnp.ravel(Z), theta])


_core_jacobian = jax.jit(jax.jacrev(_core_quantities, argnums=(0, 1, 2)))


def _z(level: float, df=None):
    """The two-sided critical value: normal, or Student t with ``df`` (array; inf: normal)."""
    from scipy.special import ndtri  # imported on use: the package imports light

    level = check_level(level)
    if df is None:
        return float(ndtri(0.5 + level / 2))
    from scipy.stats import t as student

    df = np.asarray(df, dtype=float)
    return np.where(np.isfinite(df), student.ppf(0.5 + level / 2, np.where(
        np.isfinite(df), df, 1.0)), float(ndtri(0.5 + level / 2)))


def _interval(estimate, variance, level, df=None) -> Interval:
    """Wald interval from estimates and their variances (same number of entries); with
    ``df``, t quantiles of those degrees of freedom."""
    estimate = np.asarray(estimate, dtype=float)
    se = np.sqrt(np.clip(np.asarray(variance, dtype=float), 0.0, None)).reshape(estimate.shape)
    if df is not None:
        df = np.asarray(df, dtype=float).reshape(estimate.shape)
    z = _z(level, df)
    return Interval(estimate, se, estimate - z * se, estimate + z * se, df)


@dataclass(frozen=True, eq=False)
class WaldInference:
    """Wald (delta-method) inference at a fitted HJA score matrix.

    Build it with :func:`wald_inference`.  It keeps the chart in factor coordinates
    (:class:`~hja_bayes.inference.chart.FactorChart`), the Cholesky factor of the
    information there and, for a sandwich, the meat: every variance is computed from those
    for the quantities asked for, so nothing of size (K N)^2 or (pairs of items) is formed.
    :attr:`basis`, :attr:`information` and :attr:`covariance` give the same objects in the
    orthonormal tangent chart of :func:`~hja_bayes.inference.tangent_basis`; they are formed
    on first use (dense, (K N) x dim for the basis: meant for small panels).

    Attributes
    ----------
    chart : FactorChart
        The factor coordinates at the fit (with beta and the estimated extra parameters).
    factor : ndarray (chart.dim, chart.dim)
        Lower Cholesky factor of the information in the factor coordinates, made
        invertible along the chart's constraints (see
        :func:`~hja_bayes.inference.wald.constrained`); the ridge's curvature included.
    meat : ndarray (chart.dim, chart.dim) or None
        The sandwich's meat in the factor coordinates (None for ``cov_type="fisher"``).
    S : ndarray (K, N)
        The fitted scores, rows centred.
    beta : ndarray (K,)
        The fitted position biases (zeros when not estimated).
    rank : int
    position_bias : bool
    judges, items : tuple of str
        Names, from the data.
    condition_number : float
        Of the information in the chart.
    cov_type : str
        "fisher", "sandwich" or "cluster".
    n_clusters : int
        Clusters behind a cluster-robust covariance (0 otherwise).
    small_sample : str or None
        For "cluster": "CR2" (bias-reduced, t quantiles with Satterthwaite degrees of
        freedom per quantity) or "CR1" (G/(G-1), normal quantiles).
    cluster_design : ClusterDesign or None
        The whitened per-cluster design behind CR2 (:mod:`~hja_bayes.inference.clusters`).
    clustering : dict
        What the cluster-robust intervals rest on: ``cluster_column``, ``n_clusters``,
        ``effective_clusters``, ``small_sample``, ``df`` (empty for other covariances).
    outcome : str
        The outcome model ("half", "davidson" or "ordinal").
    aux : ndarray (K, n_aux)
        The outcome model's per-judge parameters on their natural scale (Davidson: nu_k);
        0 where held at the boundary.
    aux_names : tuple of str
        Their names (``("nu",)``).
    coef : ndarray (K, q)
        The per-judge term coefficients (``"position"`` is beta), named by ``coef_names``;
        ``coef_free`` marks the estimated ones.
    theta : ndarray (g,)
        The panel-wide coefficients (shared style), named by ``theta_names``.
    """

    chart: FactorChart
    factor: np.ndarray
    meat: np.ndarray | None
    S: np.ndarray
    beta: np.ndarray
    rank: int
    position_bias: bool
    judges: tuple[str, ...]
    items: tuple[str, ...]
    condition_number: float
    cov_type: str = "fisher"
    n_clusters: int = 0
    outcome: str = "half"
    aux: np.ndarray | None = None
    aux_names: tuple[str, ...] = ()
    coef: np.ndarray | None = None
    coef_names: tuple[str, ...] = ()
    coef_free: np.ndarray | None = None
    theta: np.ndarray | None = None
    theta_names: tuple[str, ...] = ()
    small_sample: str | None = None
    cluster_design: ClusterDesign | None = field(default=None, repr=False)
    clustering: dict = field(default_factory=dict)

    def __post_init__(self):
        K = len(self.judges)
        if self.coef is None:
            names = ("position",) if self.position_bias else ()
            object.__setattr__(self, "coef", np.asarray(self.beta, float).reshape(K, 1)[:, :len(names)])
            object.__setattr__(self, "coef_names", names)
        if self.coef_free is None:
            object.__setattr__(self, "coef_free", np.ones(self.coef.shape, dtype=bool))
        if self.theta is None:
            object.__setattr__(self, "theta", np.zeros(0))

    @property
    def ties(self) -> str:
        """Deprecated name of :attr:`outcome`."""
        import warnings

        warnings.warn("WaldInference.ties is deprecated: use .outcome", DeprecationWarning,
                      stacklevel=2)
        return self.outcome

    # ------------------------------------------------ the orthonormal chart (small panels)
    @cached_property
    def _tangent_map(self) -> np.ndarray:
        return self.chart.tangent_map()

    @cached_property
    def basis(self) -> np.ndarray:
        """Orthonormal chart basis (K N + K q + K n_aux + g, dim) in (vec S, vec Z, log aux,
        theta) coordinates: ``Z`` the K x q per-judge term coefficients (with position bias
        alone, q = 1 and Z is beta; a coefficient not estimated has a zero row), ``n_aux``
        the outcome model's per-judge parameters (0 for ties counted 1/2), ``theta`` the g
        panel-wide coefficients."""
        chart = self.chart
        K, N, _ = chart.shape
        m, free, q, g = chart.n_aux, chart.free, chart.n_coef_columns, chart.n_global
        basis_S = chart.score_basis()
        d, c = basis_S.shape[1], chart.coef.size
        basis = np.zeros((K * N + K * q + K * m + g, d + c + free.size + g))
        basis[: K * N, :d] = basis_S
        basis[K * N + chart.coef, d + np.arange(c)] = 1.0
        basis[K * N + K * q + free, d + c + np.arange(free.size)] = 1.0
        basis[K * N + K * q + K * m + np.arange(g), d + c + free.size + np.arange(g)] = 1.0
        return basis

    @cached_property
    def information(self) -> np.ndarray:
        """Expected Fisher information (dim, dim) in the orthonormal chart (plus the ridge's
        curvature)."""
        LT = self.factor.T @ self._tangent_map
        return LT.T @ LT

    @cached_property
    def covariance(self) -> np.ndarray:
        """The asymptotic covariance (dim, dim) of the orthonormal chart coordinates:
        ``I^-1`` for ``cov_type="fisher"``, else the sandwich ``I^-1 M I^-1``."""
        return self._chart_covariance(self._tangent_map.T)

    # ----------------------------------------------------------- delta method
    @cached_property
    def _constraints(self) -> np.ndarray:
        return self.chart.constraints()

    def _whitened(self, G: np.ndarray) -> np.ndarray:
        """``L^-1 Pi G^T`` (dim, q): gradients in whitened chart coordinates, where the
        Fisher covariance is the identity."""
        from scipy.linalg import solve_triangular

        C = self._constraints
        projected = G.T - C @ (C.T @ G.T)
        return solve_triangular(self.factor, projected, lower=True, check_finite=False)

    def _df(self, G: np.ndarray) -> np.ndarray | None:
        """Satterthwaite degrees of freedom of the quantities with gradients ``G`` (q, dim)
        under CR2; None (normal quantiles) for the other covariances."""
        return self._df_whitened(self._whitened(G)) if self.small_sample == "CR2" else None

    def _df_whitened(self, X: np.ndarray) -> np.ndarray | None:
        if self.small_sample != "CR2":
            return None
        df = satterthwaite(self.cluster_design, X)
        self._check_variance(X, df)
        return df

    def _check_variance(self, X: np.ndarray, df: np.ndarray) -> None:
        """A cluster-robust variance that is zero along a quantity: refused (IdentifiabilityError)."""
        fisher = np.sum(X * X, axis=0)
        robust = np.sum((self.cluster_design.adjusted.T @ X) ** 2, axis=0)
        bad = (fisher > 0) & ((robust <= 1e-10 * fisher) | ~np.isfinite(df))
        if np.any(bad):
            raise IdentifiabilityError(
                f"the cluster scores do not vary along {int(bad.sum())} of the quantities "
                f"asked for: with {self._clusters_text()} their cluster-robust variance is 0 "
                "(a cluster alone determines them, or there are too few clusters). Use more "
                "prompts, fit.bootstrap(wild=True), or cov_type='fisher' if the verdicts are "
                "independent")

    def _clusters_text(self) -> str:
        c = self.clustering
        column = f" of column {c['cluster_column']!r}" if c.get("cluster_column") else ""
        return f"G = {c.get('n_clusters', self.n_clusters)} clusters{column}"

    def check_joint(self, count: int, what: str) -> None:
        """Refuse a joint statement about ``count`` free quantities from a cluster-robust
        covariance of rank at most G - 1 < count (some combination would get variance 0).

        Raises
        ------
        IdentifiabilityError
        """
        if self.cov_type != "cluster":
            return
        G = self.clustering.get("n_clusters", self.n_clusters)
        if count > G - 1:
            raise IdentifiabilityError(
                f"{what} make {count} free statements at once, but a cluster-robust "
                f"covariance from {self._clusters_text()} has rank at most G - 1 = {G - 1}, so "
                "some combination of them would get variance 0. Name the prompt column (more "
                "clusters), use per-quantity intervals (fit.intervals(), fit.bootstrap(wild="
                "True)), or cov_type='fisher' / 'sandwich' if the verdicts are independent")

    def _chart_covariance(self, G: np.ndarray) -> np.ndarray:
        """``G H G^T`` (or ``G H M H G^T``) for gradients ``G`` (q, chart.dim) in the factor
        coordinates, ``H`` the inverse information on the chart: two triangular solves."""
        from scipy.linalg import solve_triangular

        X = self._whitened(G)
        if self.meat is None:
            out = X.T @ X
        else:
            Y = solve_triangular(self.factor, X, lower=True, trans="T", check_finite=False)
            out = Y.T @ (self.meat @ Y)
        return (out + out.T) / 2

    def _beta_of(self, Z):
        """The position biases within the coefficients ``Z`` (zeros without them)."""
        if "position" in self.coef_names:
            return Z[:, self.coef_names.index("position")]
        return jnp.zeros(Z.shape[0], dtype=Z.dtype)

    def _arrays(self):
        return (jnp.asarray(self.S), jnp.asarray(self.coef, dtype=float),
                jnp.asarray(self.theta, dtype=float))

    def covariance_of_terms(self, q: Callable) -> tuple[np.ndarray, np.ndarray]:
        """Estimate and delta-method covariance of a smooth ``q(S, Z, theta)`` of the scores,
        the per-judge term coefficients (K x q, columns ``coef_names``) and the panel-wide
        ones (``theta_names``); see :meth:`covariance_of`."""
        value, G = self._gradient_of_terms(q)
        return value, self._chart_covariance(G)

    def _gradient_of_terms(self, q: Callable) -> tuple[np.ndarray, np.ndarray]:
        value, dS, dZ, dtheta = _flat_jacobian(q, *self._arrays())
        return value, self.chart.pullback(dS, dZ, dtheta)

    def _interval_of_terms(self, q: Callable, level: float) -> Interval:
        """Interval of every output of ``q(S, Z, theta)``: t quantiles under CR2."""
        value, G = self._gradient_of_terms(q)
        cov = self._chart_covariance(G)
        return _interval(value, np.diagonal(cov), level, self._df(G))

    def degrees_of_freedom(self, q: Callable) -> np.ndarray:
        """Satterthwaite degrees of freedom of every output of ``q(S, beta)`` under CR2 (the
        t quantile of its interval); inf for the other covariances (normal quantiles).

        Raises
        ------
        IdentifiabilityError
            Under CR2, when the clusters carry no information about an output (its
            cluster-robust variance is 0).
        """
        value, G = self._gradient_of_terms(lambda S, Z, theta: q(S, self._beta_of(Z)))
        df = self._df(G)
        return np.full(np.shape(value), np.inf) if df is None else df.reshape(np.shape(value))

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
            over all outputs at once), computed in the factor coordinates.
        """
        return self.covariance_of_terms(lambda S, Z, theta: q(S, self._beta_of(Z)))

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
        return self._interval_of_terms(lambda S, Z, theta: q(S, self._beta_of(Z)), level)

    # ------------------------------------------------------ standard quantities
    @cached_property
    def _core_gradient(self) -> tuple[np.ndarray, np.ndarray]:
        arrays = self._arrays()
        value = np.asarray(_core_quantities(*arrays))
        dS, dZ, dtheta = _core_jacobian(*arrays)
        return value, self.chart.pullback(np.asarray(dS), np.asarray(dZ), np.asarray(dtheta))

    @cached_property
    def _core_covariance(self) -> tuple[np.ndarray, np.ndarray]:
        value, G = self._core_gradient
        return value, self._chart_covariance(G)

    @cached_property
    def _core_whitened(self) -> np.ndarray:
        return self._whitened(self._core_gradient[1])

    @cached_property
    def _core_df(self) -> np.ndarray | None:
        """Degrees of freedom of (mu, gamma, vec Z, theta) under CR2 (None otherwise); a
        quantity whose cluster-robust variance is 0 gets NaN here and is refused on use."""
        if self.small_sample != "CR2":
            return None
        return satterthwaite(self.cluster_design, self._core_whitened)

    def _core_interval(self, index, level) -> Interval:
        value, cov = self._core_covariance
        df = self._core_df
        if df is not None:
            self._check_variance(self._core_whitened[:, index], df[index])
            df = df[index]
        return _interval(value[index], np.diagonal(cov)[index], level, df)

    def _item_index(self, item) -> np.ndarray:
        return indices_of(item, self.items, "item")

    def _judge_index(self, judge) -> np.ndarray:
        return indices_of(judge, self.judges, "judge")

    def mu_covariance(self) -> tuple[np.ndarray, np.ndarray]:
        """Consensus scores mu and their covariance matrix (N x N, singular: sum(mu) = 0).

        The joint statements made from it (rank intervals, tiers) need the N - 1 free
        scores' covariance to be of full rank: a cluster-robust one from G clusters has rank
        at most G - 1, so with G < N it is refused (IdentifiabilityError, see
        :meth:`check_joint`).
        """
        value, cov = self._core_covariance
        N = len(self.items)
        self.check_joint(N - 1, f"the scores of {N} models")
        return value[:N].copy(), cov[:N, :N].copy()

    def mu_degrees_of_freedom(self) -> tuple[np.ndarray, np.ndarray]:
        """Degrees of freedom of every mu_i and of every difference mu_a - mu_b (N x N, inf
        on the diagonal): Satterthwaite's under CR2, inf (normal quantiles) otherwise."""
        N = len(self.items)
        if self.small_sample != "CR2":
            return np.full(N, np.inf), np.full((N, N), np.inf)
        X = self._core_whitened[:, :N]
        a, b = np.triu_indices(N, 1)
        pair = self._df_whitened(X[:, a] - X[:, b]) if a.size else np.zeros(0)
        out = np.full((N, N), np.inf)
        out[a, b] = out[b, a] = pair
        self._check_variance(X, self._core_df[:N])
        return self._core_df[:N].copy(), out

    def mu(self, level: float = 0.95) -> Interval:
        """Consensus scores mu_i (the mean of the judges' centred score rows)."""
        return self._core_interval(np.arange(len(self.items)), level)

    def gamma(self, level: float = 0.95) -> Interval:
        """Judge sensitivities gamma_k (``sum(gamma) = K``)."""
        N, K = len(self.items), len(self.judges)
        return self._core_interval(np.arange(N, N + K), level)

    def position_biases(self, level: float = 0.95) -> Interval:
        """Per-judge position biases beta_k (only when they were estimated)."""
        if not self.position_bias:
            raise IdentifiabilityError("position bias was not estimated in this fit")
        return self.coefficients("position", level)

    def coefficients(self, name: str, level: float = 0.95) -> Interval:
        """A linear term's coefficient by column name: per judge (shape (K,); NaN se and
        bounds for a judge whose coefficient was not estimated) for ``"position"``,
        ``"self"`` and per-judge ``"style:<feature>"``; one panel-wide value (shape ())
        for a shared style feature.

        Raises
        ------
        IdentifiabilityError
            When the fit has no such coefficient (the message lists those it has).
        """
        N, K = len(self.items), len(self.judges)
        q = len(self.coef_names)
        if name in self.coef_names:
            c = self.coef_names.index(name)
            free = np.asarray(self.coef_free)[:, c]
            index = N + K + np.arange(K) * q + c
            iv = self._core_interval(index[free], level)
            out = [np.full(K, np.nan) for _ in range(5)]
            out[0] = self._core_covariance[0][index]
            for x, y in zip(out[1:], iv[1:]):
                if y is not None:
                    x[free] = y
            return Interval(*out[:4], None if iv.df is None else out[4])
        if name in self.theta_names:
            index = N + K + K * q + self.theta_names.index(name)
            iv = self._core_interval(np.array([index]), level)
            return Interval(*(x[0] for x in iv))
        raise IdentifiabilityError(f"the fit has no term coefficient {name!r}; it has "
                                   f"{list(self.coef_names) + list(self.theta_names)}")

    def panel_coefficient(self, name: str, level: float = 0.95) -> Interval:
        """The panel's value of a term coefficient: the mean over the judges that have it of a
        per-judge coefficient (per-judge style ``theta = mean_k theta_k``), or the shared one."""
        if name in self.theta_names:
            return self.coefficients(name, level)
        return self._judge_contrast(name, level, excess=False)

    def coefficient_excess(self, name: str, level: float = 0.95) -> Interval:
        """Each judge's excess over the panel value, ``delta_k = theta_k - theta`` (sums to 0
        over the judges that have the coefficient; NaN for the others)."""
        return self._judge_contrast(name, level, excess=True)

    def _judge_contrast(self, name: str, level: float, excess: bool) -> Interval:
        if name not in self.coef_names:
            raise IdentifiabilityError(f"the fit has no per-judge coefficient {name!r}; it has "
                                       f"{list(self.coef_names)}")
        c = self.coef_names.index(name)
        have = np.asarray(self.coef_free)[:, c]
        weights = have / have.sum()
        if not excess:
            return self._linear(lambda Z: Z[:, c] @ weights, level)
        iv = self._linear(lambda Z: Z[:, c] - Z[:, c] @ weights, level)
        nan = np.where(have, 1.0, np.nan)
        return Interval(iv.estimate * nan, iv.se * nan, iv.lower * nan, iv.upper * nan,
                        None if iv.df is None else iv.df * nan)

    def _linear(self, f, level: float) -> Interval:
        return self._interval_of_terms(lambda S, Z, theta: f(Z), level)

    def outcome_parameters(self, name: str = "nu", level: float = 0.95) -> Interval:
        """The outcome model's per-judge parameter ``name`` (Davidson: the tie propensity nu_k).

        The interval is a Wald interval for ``log nu_k`` mapped back, ``nu_k exp(+- z se)``,
        so it stays positive; ``se`` is the delta-method standard error on the natural
        scale.  A judge whose parameter is held at 0 (it never tied) has estimate 0 and NaN
        for se, lower and upper: the data give no interval there, only the boundary.

        Raises
        ------
        IdentifiabilityError
            When the fit's outcome model has no parameter of that name.
        """
        if name not in self.aux_names:
            raise IdentifiabilityError(
                f"the {self.outcome!r} outcome model has no per-judge parameter {name!r}"
                + (f" (it has {list(self.aux_names)})" if self.aux_names else "")
            )
        K = len(self.judges)
        m = len(self.aux_names)
        a = self.aux_names.index(name)
        value = np.asarray(self.aux, dtype=float)[:, a]
        G = np.zeros((K, self.chart.dim))
        position = np.searchsorted(self.chart.free, np.arange(K) * m + a)
        estimated = np.isin(np.arange(K) * m + a, self.chart.free)
        G[estimated, self.chart.aux_offset + position[estimated]] = 1.0
        var = np.diagonal(self._chart_covariance(G))
        df = self._df(G[estimated]) if estimated.any() else None
        if df is not None:
            full = np.full(K, np.inf)
            full[estimated] = df
            df = full
        z = _z(level, df)
        se_log = np.sqrt(np.clip(var, 0.0, None))
        held = value <= 0
        se_log = np.where(held, np.nan, se_log)
        return Interval(value, value * se_log, value * np.exp(-z * se_log),
                        value * np.exp(z * se_log), df)

    def pairs(self, pairs="all") -> np.ndarray:
        """Item index pairs ``(a, b)`` named by ``pairs``: see :func:`~hja_bayes.inference.pairs.item_pairs`
        ("adjacent" follows the estimated mu, best first)."""
        return item_pairs(pairs, self.items, self._core_covariance[0][: len(self.items)])

    def mu_differences(self, level: float = 0.95, pairs="all") -> tuple[list[tuple[int, int]], Interval]:
        """``mu_a - mu_b`` for the pairs of items named by ``pairs`` (see
        :func:`~hja_bayes.inference.pairs.item_pairs`; default every pair ``a < b`` in the
        data's item order).

        Returns
        -------
        pairs : list of (a, b)
            Item indices of each difference.
        Interval
            One entry per pair.
        """
        value, cov = self._core_covariance
        N = len(self.items)
        index = self.pairs(pairs)
        a, b = index[:, 0], index[:, 1]
        C = cov[:N, :N]
        est = value[a] - value[b]
        var = C[a, a] + C[b, b] - 2 * C[a, b]
        df = None
        if self.small_sample == "CR2" and a.size:
            X = self._core_whitened
            df = self._df_whitened(X[:, a] - X[:, b])
        return list(zip(a.tolist(), b.tolist())), _interval(est, var, level, df)

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
        return Interval(p, p * (1 - p) * logit.se, expit(logit.lower), expit(logit.upper),
                        logit.df)

    def intervals(self, level: float = 0.95, pairs=None) -> pd.DataFrame:
        """Tidy table of Wald intervals for mu, gamma, beta and differences of mu.

        Parameters
        ----------
        level : float
            Confidence level.
        pairs : "all", "adjacent", "none", None or sequence of (item, item)
            Which differences ``mu_a - mu_b`` get rows (see
            :func:`~hja_bayes.inference.pairs.item_pairs`).  Default
            (None): every pair up to :data:`ALL_PAIRS_MAX_ITEMS` models (N (N - 1) / 2
            rows), above that the N - 1 neighbours in the ranking ("adjacent"); ask for
            ``pairs="all"`` to get every pair of a large panel.  The full covariance of mu
            is :meth:`mu_covariance`.

        Returns
        -------
        DataFrame
            Columns ``quantity`` ("mu", "gamma", "beta" (only with position bias), the other
            term coefficients ("self", "style:<feature>": per judge, and for style also the
            panel value labelled "(panel)"), the outcome model's parameters (e.g. "nu", see
            :meth:`outcome_parameters`), "mu_diff"), ``label`` (item, judge, "(panel)" or
            "a - b"), ``estimate``, ``se``, ``lower``, ``upper``; under the CR2
            cluster-robust covariance also ``df``, the Satterthwaite degrees of freedom of
            each row's t quantile.  ``attrs`` records ``level``, ``cov_type``,
            ``small_sample`` and, for a cluster-robust covariance, ``cluster_column``,
            ``n_clusters``, ``effective_clusters`` and ``df`` (how the degrees of freedom
            were found).
        """
        frames = []
        cr2 = self.small_sample == "CR2"

        def add(quantity, labels, iv):
            frame = pd.DataFrame({
                "quantity": quantity, "label": list(labels), "estimate": iv.estimate,
                "se": iv.se, "lower": iv.lower, "upper": iv.upper,
            })
            if cr2:
                frame["df"] = np.inf if iv.df is None else iv.df
            frames.append(frame)

        add("mu", self.items, self.mu(level))
        add("gamma", self.judges, self.gamma(level))
        for name in self.coef_names:
            add("beta" if name == "position" else name, self.judges, self.coefficients(name, level))
            if name.startswith("style:"):
                iv = self.panel_coefficient(name, level)
                add(name, ["(panel)"], Interval(*(None if x is None else np.atleast_1d(x)
                                                  for x in iv)))
        for name in self.theta_names:
            iv = self.coefficients(name, level)
            add(name, ["(panel)"], Interval(*(None if x is None else np.atleast_1d(x)
                                                  for x in iv)))
        for name in self.aux_names:
            add(name, self.judges, self.outcome_parameters(name, level))
        index, differences = self.mu_differences(level, pairs)
        add("mu_diff", [f"{self.items[a]} - {self.items[b]}" for a, b in index], differences)
        table = pd.concat(frames, ignore_index=True)
        table.attrs.update({"level": float(level), "cov_type": self.cov_type,
                            "small_sample": self.small_sample, **self.clustering})
        return table
