"""The result of Wald inference: intervals for the standard quantities, the linear terms'
coefficients and any smooth ``q(S, beta)`` by the delta method, from the covariance of the
chart coordinates."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..threads import one_blas_thread
from ..errors import IdentifiabilityError, ParameterError, warn
from .chart import FactorChart
from .clusters import ClusterDesign, satterthwaite
from .few_verdicts import warn_few_verdicts
from .intervals import (
    Interval,
    core_gradient,
    flat_jacobian,
    interval,
)
from .quantities import Quantities

__all__ = ["Interval", "WaldInference"]

#: About this many numbers of the core quantities' Jacobian in (S, Z, theta) are held at a
#: time on their way to the chart (8 MB: a leaderboard of 1,000 models and 20 judges would
#: otherwise allocate 160 MB for every table).
_CORE_BLOCK = 1 << 20


@dataclass(frozen=True, eq=False)
class WaldInference(Quantities):
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
    tied_judges : ndarray of bool (K,) or None
        Judges that tied every verdict: no interval for their gamma (:meth:`gamma`).
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
    tied_judges: np.ndarray | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        """One line: the covariance, the panel and the rank (no arrays)."""
        how = {"cluster": f"cluster-robust ({self.small_sample}, {self._clusters_text()})"}.get(
            self.cov_type, self.cov_type)
        return (f"WaldInference({how} covariance, {len(self.judges)} judges, "
                f"{len(self.items)} models, rank {self.rank}; .intervals(level) for the table)")

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
        warn("WaldInference.ties is deprecated: use .outcome", DeprecationWarning)
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
                "prompts, or cov_type='fisher' if the verdicts are independent")

    def _clusters_text(self) -> str:
        c = self.clustering
        column = f" of column {c['cluster_column']!r}" if c.get("cluster_column") else ""
        return f"G = {c.get('n_clusters', self.n_clusters)} clusters{column}"

    def joint_refusal(self, count: int, what: str) -> str | None:
        """Why a joint statement about ``count`` free quantities cannot be made (None when
        it can): a cluster-robust covariance from G clusters has rank at most G - 1, so with
        G - 1 < ``count`` some combination of them would get variance 0.  Statements about
        one quantity at a time (an interval of mu_i, of mu_a - mu_b) are not affected."""
        if self.cov_type != "cluster":
            return None
        G = self.clustering.get("n_clusters", self.n_clusters)
        if count <= G - 1:
            return None
        return (f"{what} make {count} free statements at once, but a cluster-robust "
                f"covariance from {self._clusters_text()} has rank at most G - 1 = {G - 1}, "
                "so some combination of them would get variance 0")

    def check_joint(self, count: int, what: str) -> None:
        """Refuse a joint statement about ``count`` free quantities from a cluster-robust
        covariance of rank at most G - 1 < count (:meth:`joint_refusal`).

        Raises
        ------
        IdentifiabilityError
        """
        refusal = self.joint_refusal(count, what)
        if refusal is not None:
            raise IdentifiabilityError(
                f"{refusal}. Name the prompt column (more clusters), use per-quantity "
                "intervals (fit.intervals(), the leaderboard's score intervals, "
                "fit.bootstrap(wild=True)), or cov_type='fisher' / 'sandwich' if the verdicts "
                "are independent")

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
        # device_put, not jnp.asarray: JAX compiles a program for every asarray of a new shape
        return tuple(jax.device_put([np.asarray(self.S, dtype=float),
                                     np.asarray(self.coef, dtype=float),
                                     np.asarray(self.theta, dtype=float)]))

    def covariance_of_terms(self, q: Callable) -> tuple[np.ndarray, np.ndarray]:
        """Estimate and delta-method covariance of a smooth ``q(S, Z, theta)`` of the scores,
        the per-judge term coefficients (K x q, columns ``coef_names``) and the panel-wide
        ones (``theta_names``); see :meth:`covariance_of`."""
        value, G = self._gradient_of_terms(q)
        return value, self._chart_covariance(G)

    def _gradient_of_terms(self, q: Callable) -> tuple[np.ndarray, np.ndarray]:
        value, dS, dZ, dtheta = flat_jacobian(q, *self._arrays())
        return value, self.chart.pullback(dS, dZ, dtheta)

    def _interval_of_terms(self, q: Callable, level: float) -> Interval:
        """Interval of every output of ``q(S, Z, theta)``: t quantiles under CR2."""
        value, G = self._gradient_of_terms(q)
        cov = self._chart_covariance(G)
        return interval(value, np.diagonal(cov), level, self._df(G))

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
        if not callable(q):
            raise ParameterError(
                f"contrast takes a function q(S, beta) of the scores, got {type(q).__name__}; "
                "the difference of two models' scores is in intervals(pairs=[(a, b)])")
        _check_contrast(q, np.asarray(self.S), np.asarray(self._beta_of(self.coef)),
                        len(self.items))
        return self._interval_of_terms(lambda S, Z, theta: q(S, self._beta_of(Z)), level)

    # ------------------------------------------------------ standard quantities
    @cached_property
    @one_blas_thread
    def _core_gradient(self) -> tuple[np.ndarray, np.ndarray]:
        # a block of quantities at a time: their Jacobian in (S, Z, theta) is K x N numbers
        # each, of which the chart keeps dim
        value = core_gradient(self.S, self.coef, self.theta, slice(0))[0]
        G = np.empty((value.size, self.chart.dim))
        step = max(1, _CORE_BLOCK // self.S.size)
        for start in range(0, value.size, step):
            rows = slice(start, start + step)
            G[rows] = self.chart.pullback(*core_gradient(self.S, self.coef, self.theta, rows)[1:])
        return value, G

    @cached_property
    @one_blas_thread
    def _core_covariance(self) -> tuple[np.ndarray, np.ndarray]:
        value, G = self._core_gradient
        cov = self._chart_covariance(G)
        N = len(self.items)
        warn_few_verdicts(self._few_verdicts_se(np.diagonal(cov)), self.rank, value[:N],
                          cov[:N, :N])
        return value, cov

    def _few_verdicts_se(self, core_variance) -> np.ndarray:
        """The standard errors of the gamma_k that the few-verdicts rule reads: the larger,
        per judge, of the covariance's and the Fisher information's (a cluster-robust
        covariance of a few prompts can put them below what the verdicts' number allows:
        0.25 against 0.42 on MT-Bench's first 3 questions)."""
        N, K = len(self.items), len(self.judges)
        se = np.sqrt(np.clip(np.asarray(core_variance)[N:N + K], 0.0, None))
        if self.meat is None:
            return se
        fisher = np.sqrt((self._whitened(self._core_gradient[1][N:N + K]) ** 2).sum(axis=0))
        return np.maximum(se, fisher)

    def few_verdicts_se(self) -> np.ndarray:
        """Per judge, the standard error of gamma_k that the few-verdicts warning and the
        report's note read (:mod:`~hja_bayes.inference.few_verdicts`): the larger of this
        covariance's and the Fisher information's."""
        return self._few_verdicts_se(np.diagonal(self._core_covariance[1]))

    @cached_property
    @one_blas_thread
    def _core_whitened(self) -> np.ndarray:
        return self._whitened(self._core_gradient[1])

    @cached_property
    @one_blas_thread
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
        return interval(value[index], np.diagonal(cov)[index], level, df)


def _check_contrast(q: Callable, S: np.ndarray, beta: np.ndarray, N: int) -> None:
    """``q`` evaluated once on NumPy arrays, where an index beyond the models is an error
    (under JAX it is clamped silently: ``S.mean(0)[17]`` of 5 models is the last one's)."""
    try:
        value = np.asarray(q(S, beta), dtype=float)
    except IndexError as exc:
        raise ParameterError(f"q(S, beta) indexes beyond the scores ({exc}): S is judges x "
                             f"models ({S.shape[0]} x {N}), in the order of fit.items") from None
    except TypeError as exc:
        raise ParameterError(f"q must take (S, beta), the judges x models scores and the "
                             f"position biases, and return numbers: {exc}") from None
    except ValueError as exc:
        raise ParameterError(f"q(S, beta) must return numbers: {exc}") from None
    except AttributeError:  # JAX's own array methods (S.at[...]): checked by JAX alone
        return
    if not np.all(np.isfinite(value)):
        raise ParameterError("q(S, beta) is not finite at the estimates")
