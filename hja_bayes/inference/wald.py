"""Wald inference for a fitted HJA model (fixed panel, many comparisons).

In the tangent chart of the model at the fit (:mod:`hja_bayes.inference.chart`, extended by
the estimated coefficients of the linear terms: position biases, self-preference, style)
the covariance ``C`` of the chart coordinates is the inverse Fisher information, or a
sandwich ``I^-1 M I^-1`` that stays valid when comparisons are dependent within prompts
(:mod:`hja_bayes.inference.information`).  Any smooth quantity ``q(S, beta)`` then gets the
delta-method covariance ``G B C B^T G^T`` with ``G = dq / d(S, beta)``.

Only the data, the fitted scores and term coefficients, the rank, the terms and the outcome
model (with its per-judge parameters, e.g. Davidson's tie propensities nu_k, which get chart
coordinates on the log scale) enter here, so any fitter that returns a point on the model
can be plugged in.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_comparisons, check_positive
from ..comparisons import Comparisons
from ..decomposition import check_rank, free_parameters
from ..errors import DataWarning, IdentifiabilityError, ParameterError, warn
from ..likelihood import outcome_model
from ..likelihood.terms import terms_of
from ..threads import one_blas_thread
from .chart import RANK_TOLERANCE, centre_rows, factor_chart
from .clusters import (
    CR2_MAX_NUMBERS,
    cluster_design,
    cluster_record,
    cr2_numbers,
    warn_few_clusters,
    warn_models_on_few_prompts,
)
from .information import (
    Model,
    chart_information,
    check_clusters,
    check_single_prompts,
    free_aux,
    normal_cov_type,
    score_covariance,
)
from .intervals import Interval
from .result import WaldInference

__all__ = ["Interval", "WaldInference", "cholesky_factor", "condition_number", "constrained",
           "wald_inference"]

#: Default bound on the condition number of the chart information before it is called singular.
MAX_CONDITION = 1e10

#: Up to this dimension the condition number comes from all eigenvalues; above it from the
#: two extreme ones (Lanczos; the smallest through the Cholesky factor).
EXACT_EIGEN_MAX = 1000
#: Relative accuracy of each extreme eigenvalue above EXACT_EIGEN_MAX (ARPACK's ``tol``): a
#: condition number to about 0.1%, for a bound of 1e10 and a message giving three digits.
CONDITION_RTOL = 1e-3


def constrained(info: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``Pi F Pi + s C C^T`` with ``Pi = I - C C^T`` (``C`` orthonormal columns).

    On the complement of ``C`` it is the information restricted to the chart; along ``C``
    it is ``s``, the mean eigenvalue of that restriction, so its extreme eigenvalues (and
    condition number) are those of the chart information, and with ``T`` an orthonormal
    basis of the complement ``T (T^T F T)^-1 T^T = Pi F'^-1 Pi = F'^-1 - C C^T / s``.
    """
    FC = info @ C
    CFC = C.T @ FC
    scale = (np.trace(info) - np.trace(CFC)) / (len(info) - C.shape[1])
    # F - C FC^T - FC C^T + C (CFC + s I) C^T = F - [C, Z] [Z, C]^T, Z = FC - C (CFC + s I) / 2
    Z = FC - C @ (CFC + scale * np.eye(C.shape[1])) / 2
    out = np.hstack([C, Z]) @ np.hstack([Z, C]).T
    np.subtract(info, out, out=out)
    return symmetrized(out)


def symmetrized(a: np.ndarray, block: int = 64) -> np.ndarray:
    """``a`` overwritten by ``(a + a^T) / 2`` (the same numbers), block by block.

    A whole-matrix transpose reads memory across rows: at the information of a leaderboard
    (dimension 3,060) that took 100 ms of ``constrained``'s 170, blocks of 64 x 64 kept in
    cache 30 ms.
    """
    n = len(a)
    for i in range(0, n, block):
        diagonal = a[i:i + block, i:i + block]
        diagonal += diagonal.T.copy()
        diagonal *= 0.5
        for j in range(i + block, n, block):
            lower, upper = a[j:j + block, i:i + block], a[i:i + block, j:j + block]
            mean = (lower + upper.T) * 0.5
            lower[...] = mean
            upper[...] = mean.T
    return a


def condition_number(info: np.ndarray, factor: np.ndarray | None) -> float:
    """Ratio of the extreme eigenvalues of a symmetric matrix (inf unless positive definite);
    above :data:`EXACT_EIGEN_MAX` rows each eigenvalue to :data:`CONDITION_RTOL`.

    ``factor`` is its lower Cholesky factor, None when it has none.
    """
    if len(info) <= EXACT_EIGEN_MAX:
        eig = np.linalg.eigvalsh(info)
        return float(eig[-1] / eig[0]) if eig[0] > 0 and factor is not None else float("inf")
    if factor is None:
        return float("inf")
    from scipy.linalg import cho_solve
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    start = np.random.default_rng(0).standard_normal(len(info))
    inverse = LinearOperator(
        info.shape, matvec=lambda x: cho_solve((factor, True), x, check_finite=False),
        dtype=float)
    # each end to CONDITION_RTOL: a shorter Lanczos basis than ARPACK's default 20 vectors
    # (the ends of an information's spectrum are found in fewer products of either kind)
    ends = dict(k=1, which="LA", v0=start, tol=CONDITION_RTOL, ncv=min(12, len(info) - 1),
                return_eigenvectors=False)
    try:
        top = eigsh(info, **ends)[0]
        bottom = 1 / eigsh(inverse, **ends)[0]
    except ArpackNoConvergence:  # pragma: no cover - then all eigenvalues, slowly
        eig = np.linalg.eigvalsh(info)
        bottom, top = eig[0], eig[-1]
    return float(top / bottom) if bottom > 0 else float("inf")


def cholesky_factor(info: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor, or None when ``info`` is not (numerically) positive definite."""
    from scipy.linalg import LinAlgError, cholesky

    try:
        return cholesky(info, lower=True, check_finite=False)
    except (LinAlgError, np.linalg.LinAlgError):
        return None


@one_blas_thread
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
    outcome: str = "half",
    aux=None,
    terms=None,
    coef=None,
    theta=None,
    ties: str | None = None,
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
        false.  (With ``terms``, the biases are the ``"position"`` column of ``coef``.)
    rank : int
        Disagreement rank r of the fit.
    position_bias : bool
        Whether beta was estimated (it then gets its own chart coordinates).
    cov_type : {"fisher", "sandwich", "cluster", "CR2", "CR1"}, optional
        Covariance of the estimates: the inverse Fisher information (comparisons
        independent), the sandwich with each comparison its own unit, or the cluster-robust
        sandwich with comparisons summed within each cluster (prompt) of ``data.clusters``.
        "cluster" (statsmodels' name) is the bias-reduced linearisation "CR2" (Bell and
        McCaffrey; R's clubSandwich), whose intervals use t quantiles with Satterthwaite
        degrees of freedom contrast by contrast (:mod:`~hja_bayes.inference.clusters`);
        "CR1" is the older G/(G-1) factor with normal quantiles (statsmodels' default).
        Default: "cluster" when the data carry clusters, else "fisher".  With fewer than
        :data:`~hja_bayes.inference.clusters.FEW_CLUSTERS` effective clusters a DataWarning
        names G and the effective G.
    ridge : float
        The fit's penalty ``ridge/2 (|S|^2 + |coefficients|^2)``: its curvature (each term's
        own ridge where it has one) is added to the information (the curvature of the
        penalised objective, which keeps a separated judge's intervals finite).
    max_condition : float
        Largest acceptable condition number of the chart information.
    rank_tolerance : float
        See :func:`tangent_basis`.
    outcome : {"half", "davidson", "ordinal"}
        The outcome model of the fit (``ties``: its deprecated alias).
    aux : array (K,) or (K, n_aux), optional
        The fitted per-judge parameters of the outcome model on their natural scale
        (Davidson: nu_k >= 0); required for models that have them.  Each positive one gets a
        chart coordinate (its logarithm, under the same ridge curvature); a zero one is held
        at the boundary and gets none.
    terms : tuple, optional
        The fit's linear-predictor terms (:mod:`hja_bayes.likelihood.terms`); default: the
        position bias when ``position_bias``.
    coef : array (K, q), optional
        The fitted per-judge term coefficients, in the columns of the terms' design
        (required with ``terms``).
    theta : array (g,), optional
        The fitted panel-wide coefficients (shared style).

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
        condition number).  (With few clusters, the result itself refuses a family of
        quantities whose free dimension exceeds G - 1, see
        :meth:`~hja_bayes.inference.WaldInference.mu_covariance`.)

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
    check_comparisons(data)
    data.check_connected()
    S = centre_rows(S)
    K, N = S.shape
    if (K, N) != (data.n_judges, data.n_items):
        raise ParameterError(
            f"S has shape {S.shape} but the data have {data.n_judges} judges and "
            f"{data.n_items} items"
        )
    rank = check_rank(rank, K, N)
    if terms is None:
        terms = terms_of(position_bias)
        beta = np.zeros(K) if beta is None else np.asarray(beta, dtype=float)
        if beta.shape != (K,):
            raise ParameterError(f"beta must have shape ({K},), got {beta.shape}")
        if not position_bias and np.any(beta != 0):
            raise IdentifiabilityError(
                "beta is non-zero but position_bias=False: pass position_bias=True if it was estimated"
            )
        coef = beta[:, None] if position_bias else np.zeros((K, 0))
    position_bias = any(t.name == "position" for t in terms)
    if position_bias and not data.order_known:
        raise IdentifiabilityError(
            "position bias needs the presentation order, and these data were folded "
            "(fold_order): fit and infer with position_bias=False"
        )
    cov_type, small_sample = normal_cov_type(cov_type, data)
    if cov_type == "cluster":
        check_clusters(data)
        check_single_prompts(data)  # the judges kept: the fit's data
        warn_few_clusters(data, small_sample)
        warn_models_on_few_prompts(data)
    if ties is not None:
        warn("ties= is deprecated: use outcome= (same values)", DeprecationWarning)
        outcome = ties
    model_outcome = outcome_model(outcome, data.categories)
    m = model_outcome.n_aux
    log_aux = None
    if m:
        if aux is None:
            raise ParameterError(f"outcome={model_outcome.name!r} needs the fitted "
                                 f"{list(model_outcome.aux_names)} (aux=)")
        aux = np.asarray(aux, dtype=float).reshape(K, -1) if np.size(aux) == K * m else np.asarray(aux)
        if aux.shape != (K, m) or not np.all(np.isfinite(aux)) or np.any(aux < 0):
            raise ParameterError(f"aux must hold {K} x {m} finite non-negative values, got shape {aux.shape}")
        with np.errstate(divide="ignore"):
            log_aux = np.log(aux)
    model = Model(data, S, np.zeros((K, 0)) if coef is None else coef,
                  np.zeros(0) if theta is None else theta, model_outcome, log_aux, terms)
    design = model.design()
    if model.coef.shape != (K, len(design.names)) or model.theta.shape != (len(design.global_names),):
        raise ParameterError(
            f"coef must have shape ({K}, {len(design.names)}) for the columns "
            f"{list(design.names)} and theta ({len(design.global_names)},), got "
            f"{model.coef.shape} and {model.theta.shape}")
    chart = factor_chart(S, rank, coef_free=design.free, n_aux=m,
                         free=free_aux(log_aux) if m else None,
                         n_global=len(design.global_names), rank_tolerance=rank_tolerance)
    info = chart_information(model, chart)
    style = any(t.name == "style" for t in terms)
    # style features come from the user: one that is a function of the models (a per-model
    # flag: provider, "uses markdown") is held apart from the scores by the ridge alone,
    # and the cluster-robust covariance, blind along that direction, would call it precise
    held = (condition_number(bare := constrained(info, chart.constraints()),
                             cholesky_factor(bare)) if style and ridge > 0 else 0.0)
    info[np.diag_indices_from(info)] += _curvature(chart, design, check_positive(
        ridge, "ridge", allow_zero=True))
    info = constrained(info, chart.constraints())
    factor = cholesky_factor(info)
    condition = max(condition_number(info, factor), held)
    if not condition <= max_condition:
        why = ("e.g. a judge whose own comparisons do not link all items at a high rank, or "
               "position bias confounded with the scores")
        if any(t.name == "self" for t in terms):
            why += ("; self-preference is identified only through the consensus structure, "
                    "not at a rank where each judge's own score can absorb it")
        if style:
            named = dict.fromkeys(n.split(":", 1)[1] for n in design.names + design.global_names
                                  if n.startswith("style:"))
            why = (f"e.g. a style feature (of {', '.join(named)}) that is a function of the "
                   "models alone, a per-model value such as a provider or 'uses markdown': "
                   "its coefficient cannot be told from the models' scores, only the ridge "
                   "separates them; drop it, or give it values that vary between answers of "
                   "one model; or " + why)
            features = getattr(data.clusters, "features", None)
            flat = [] if features is None else [
                name for name, column in zip(data.feature_names, np.asarray(features).T)
                if not np.any(column)]
            if flat:  # kept by a fit saved before such features were left out
                why = (f"the style feature(s) {flat} never vary in these data, so their "
                       "coefficients are the ridge's (a fit saved by an earlier version kept "
                       "them): refit, which leaves them out; or " + why)
            if data.feature_transform.startswith("raw"):
                why += ("; with feature_transform='raw' the features keep their units: one "
                        "far from 1 (characters, tokens) breaks the scale, 'relative' or "
                        "'difference' standardise them")
        raise IdentifiabilityError(
            f"the Fisher information of the rank-{rank} model is singular or ill-conditioned "
            f"(condition number {condition:.3g} > {max_condition:g}): some direction of the "
            f"model is not identified by these comparisons ({why})"
        )
    meat = design_cr2 = None
    if small_sample == "CR2" and getattr(data.clusters, "in_engine", False):
        warn(
            "the prompts stay in the scan's query engine, where only the CR1 meat (prompt "
            "scores summed there) is computed: the cluster-robust intervals use CR1 "
            "(G/(G-1), normal quantiles); scan with incidence='memory' for CR2",
            DataWarning)
        small_sample = "CR1"
    if small_sample == "CR2" and cr2_numbers(data, chart) > CR2_MAX_NUMBERS:
        warn(
            f"the CR2 covariance would keep {cr2_numbers(data, chart):,} numbers for "
            f"{data.clusters.n_clusters:,} clusters in a chart of dimension {chart.dim:,}: "
            "the cluster-robust intervals use CR1 (G/(G-1), normal quantiles) instead, which "
            "differs from CR2 by O(1/G) with this many clusters", DataWarning)
        small_sample = "CR1"
    if small_sample == "CR2":
        design_cr2 = cluster_design(model, chart, factor, chart.constraints())
        root = factor @ design_cr2.adjusted
        meat = root @ root.T
    elif cov_type != "fisher":
        meat = score_covariance(model, chart, cov_type)
    expected = (free_parameters(K, N, rank, False) + chart.coef.size + chart.free.size
                + chart.n_global)
    if chart.chart_dim != expected:  # pragma: no cover - a broken invariant, not bad input
        raise AssertionError(f"chart dimension {chart.chart_dim} != free parameters {expected}")
    position = design.column("position")
    return WaldInference(
        chart=chart, factor=factor, meat=meat, S=S,
        beta=np.zeros(K) if position is None else model.coef[:, position].copy(), rank=rank,
        position_bias=position_bias, judges=data.judges, items=data.items,
        condition_number=condition, cov_type=cov_type,
        n_clusters=data.clusters.n_clusters if cov_type == "cluster" else 0,
        small_sample=small_sample, cluster_design=design_cr2,
        clustering=cluster_record(data, small_sample) if cov_type == "cluster" else {},
        outcome=model_outcome.name, aux=aux, aux_names=tuple(model_outcome.aux_names),
        coef=model.coef, coef_names=design.names, coef_free=design.free, theta=model.theta,
        theta_names=design.global_names, tied_judges=_tied_judges(data),
    )


def _tied_judges(data) -> np.ndarray:
    """Judges (bool, (K,)) whose every verdict is a tie (middle grades of an ordered scale
    included): their gamma gets no interval (``Quantities.gamma`` says why)."""
    from ..categories import collapse_counts

    three = collapse_counts(data.counts)
    return np.bincount(data.judge, three[:, 0] + three[:, 2], data.n_judges) == 0


def _curvature(chart, design, ridge: float) -> np.ndarray:
    """The penalty's curvature along every chart coordinate: the fit's ridge, or a term's own
    ridge along its coefficients."""
    rho, rho_g = design.penalties(ridge)
    out = np.full(chart.dim, ridge)
    out[chart.coef_offset: chart.aux_offset] = np.broadcast_to(
        rho, design.free.shape).ravel()[chart.coef]
    out[chart.global_offset: chart.y_offset] = rho_g
    return out
