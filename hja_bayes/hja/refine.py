"""Fisher scoring on the model's chart: the local solver behind ``update``.

Started at a fit and given a little more data, the optimum moves a little.  The anchored
proximal alternation (:mod:`hja_bayes.hja.solve`) converges linearly from any start, at a
rate set by the coupling of its two blocks, so a warm start saves only the logarithm of the
distance it no longer has to travel (on MT-Bench with position bias: 49 iterations instead
of 55).  Here all the parameters move together instead: in the factor coordinates of the
tangent chart at the current point (:class:`~hja_bayes.inference.chart.FactorChart`, the
Wald intervals' chart) the step solves ``F delta = -g``, with ``g`` the gradient of the
penalised negative log-likelihood and ``F`` its expected information plus the penalty's
curvature (assembled from per-unit weights, :mod:`hja_bayes.inference.information`); the
score matrix moves to ``S + dS`` and back onto the rank-(r + 1) model by truncating its
singular values (a retraction), the terms' coefficients and the outcome model's parameters
move linearly.  Steps are halved until the objective decreases.  For ties counted 1/2 the
expected information of the linear predictor is the observed one, so near the optimum the
steps are Newton steps; two or three reach the solver's tolerance.  The information (the
costly part: one pass over the units per pair of chart columns) is assembled at the start
and reused by later steps while full steps are taken and contract fast (a chord method: near
the optimum it changes little; on sparse data it moves, and a slow contraction has it
assembled anew, :data:`SLOW_CHORD`); convergence is declared with the information of the
point itself, or by reused information when the steps' contraction bounds the gap left.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import HJAError
from ..inference.chart import factor_chart
from ..inference.information import Model, chart_information, free_aux
from ..inference.wald import _curvature, constrained
from ..likelihood import log_likelihood, score

__all__ = ["POLISH_MAX_PARAMS", "Refined", "SLOW_TERMS", "finish", "polish", "refine",
           "refined", "refined_state"]


#: A step by reused information whose Newton decrement is above ``SLOW_CHORD^2`` times the
#: previous one's (a contraction ``theta = sqrt(ratio)`` slower than this) is taken with the
#: information of its own point instead: on sparse data (10% of MT-Bench) the information
#: moves enough between steps that reusing it converged linearly (13 steps at a ratio of
#: about 0.28 in the objective's gap).
SLOW_CHORD = 0.25


class Refined(NamedTuple):
    """Where Fisher scoring stopped."""

    S: np.ndarray
    Z: np.ndarray
    log_aux: np.ndarray | None
    theta: np.ndarray
    n_iter: int
    converged: bool
    nll: float  # the negative log-likelihood there, without the penalties


def _penalised(model: Model, design, ridge: float) -> tuple[float, float]:
    """The solver's objective, NLL + ridge/2 |S|^2 + the terms' ridges + ridge/2 |aux|^2,
    and the NLL alone."""
    units, _, eta, aux = model.units()
    nll = -float(np.sum(log_likelihood(model.outcome, eta, aux, units.counts)))
    rho, rho_g = design.penalties(ridge)
    penalty = ridge * np.sum(model.S ** 2) + np.sum(rho * model.coef ** 2) \
        + np.sum(rho_g * model.theta ** 2)
    if model.outcome.n_aux:
        finite = np.isfinite(model.log_aux)
        penalty += ridge * np.sum(np.where(finite, model.log_aux, 0.0) ** 2)
    return nll + 0.5 * penalty, nll


def _gradient(model: Model, chart, design, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """Gradient of the penalised objective in the chart's factor coordinates, and its
    Euclidean gradient with respect to S (K x N)."""
    K, N, m = chart.shape
    units, design_u, eta, aux = model.units()
    s = -np.asarray(score(model.outcome, eta, aux, units.counts))  # d NLL / d(eta, aux)
    eta_cols, aux_cols = chart.local_columns()
    g = np.zeros(chart.dim)
    k = units.judge
    where_first, where_second = model.positions()
    R = (np.bincount(where_first, s[:, 0], K * N)
         - np.bincount(where_second, s[:, 0], K * N)).reshape(K, N)
    # per judge, the derivative along each judge-local coordinate: the A rows' (a judge's
    # sum of s (Q_i - Q_j)) is R Q; the terms' columns and the extra parameters are summed
    # unit by unit
    terms = np.column_stack([design_u.X, design_u.Xg]) * s[:, :1]
    per_judge = np.column_stack([R @ chart.Q, _judge_sums(k, terms, K)])
    # a column's coordinate depends on the judge only: add the judges' sums (judges may
    # share a coordinate)
    for cols, values in ((eta_cols, per_judge), (aux_cols, _judge_sums(k, s[:, 1:], K))):
        for c in range(cols.shape[1]):
            ok = cols[:, c] >= 0
            np.add.at(g, cols[ok, c], values[ok, c])
    y = chart.y_offset
    grad_S = R + ridge * model.S  # the A rows' likelihood part is in ``per_judge`` already
    g[: K * m] += (ridge * model.S @ chart.Q).ravel()
    g[y:] += (grad_S.T @ chart.P).ravel()
    # the penalties of the coefficients and parameters
    rho, rho_g = design.penalties(ridge)
    penalty_coef = (rho * model.coef).ravel()[chart.coef]
    g[chart.coef_offset: chart.aux_offset] += penalty_coef
    if chart.free.size:
        g[chart.aux_offset: chart.global_offset] += ridge * np.ravel(model.log_aux)[chart.free]
    g[chart.global_offset: y] += rho_g * model.theta
    return g, grad_S


def _judge_sums(judge: np.ndarray, values: np.ndarray, K: int) -> np.ndarray:
    """``values`` (units, c) summed per judge: (K, c)."""
    return np.stack([np.bincount(judge, values[:, c], K) for c in range(values.shape[1])],
                    axis=1) if values.shape[1] else np.zeros((K, 0))


def _curvature_term(chart, grad_S, sigma) -> np.ndarray:
    """The second-order part of ``S(A, Y) = (P Sigma + A)(Q + Y Sigma^-1)^T``: the bilinear
    form ``<grad_S, A Sigma^-1 Y^T>`` as a (dim, dim) matrix (A-Y blocks only)."""
    K, N, m = chart.shape
    H = np.zeros((chart.dim, chart.dim))
    for a in range(m):
        block = grad_S / sigma[a]  # d^2 / dA[k, a] dY[n, a]
        rows = np.arange(K) * m + a
        cols = chart.y_offset + np.arange(N) * m + a
        H[np.ix_(rows, cols)] = block
        H[np.ix_(cols, rows)] = block.T
    return H


def _moved(model: Model, chart, sigma, delta, t: float) -> Model:
    """The point ``t delta`` away: ``S = (P Sigma + t A)(Q + t Y Sigma^-1)^T`` (rank r + 1,
    rows centred), the coefficients and parameters moved linearly."""
    K, N, m = chart.shape
    A = delta[: K * m].reshape(K, m)
    Y = delta[chart.y_offset:].reshape(N, m)
    S = (chart.P * sigma + t * A) @ (chart.Q + t * Y / sigma).T
    Z = model.coef.copy().ravel()
    Z[chart.coef] += t * delta[chart.coef_offset: chart.aux_offset]
    log_aux = model.log_aux
    if chart.free.size:
        log_aux = np.array(log_aux, dtype=float).ravel()
        log_aux[chart.free] += t * delta[chart.aux_offset: chart.global_offset]
        log_aux = log_aux.reshape(np.shape(model.log_aux))
    theta = model.theta + t * delta[chart.global_offset: chart.y_offset]
    return model.moved(S, Z.reshape(model.coef.shape), theta, log_aux)


#: Largest chart for which :func:`_cho_solve` uses NumPy.  NumPy has no triangular solve, and
#: two general ones cost O(d^3) against SciPy's O(d^2), but loading SciPy costs about 0.1 s in a
#: fresh process (``benchmarks/bench_update.py``): below 100 coordinates (MT-Bench: 46) the two
#: solves take under 0.1 ms.
NUMPY_SOLVE_MAX = 100


def _cho_solve(factor: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``H^-1 g`` from the lower Cholesky factor of ``H`` (see :data:`NUMPY_SOLVE_MAX`)."""
    if len(g) <= NUMPY_SOLVE_MAX:
        return np.linalg.solve(factor.T, np.linalg.solve(factor, g))
    from scipy.linalg import cho_solve

    return cho_solve((factor, True), g, check_finite=False)


def _factor(model: Model, chart, design, ridge: float, grad_S, sigma, C) -> np.ndarray:
    """Cholesky factor of the penalised information on the chart (shifted where indefinite).

    Raises
    ------
    HJAError
        When even the shifted matrix is singular.
    """
    F = chart_information(model, chart)
    F[np.diag_indices_from(F)] += _curvature(chart, design, ridge)
    H = constrained(F + _curvature_term(chart, grad_S, sigma), C)
    try:
        return np.linalg.cholesky(H)
    except np.linalg.LinAlgError:  # indefinite away from the optimum: shift it
        eig = np.linalg.eigvalsh(H)
        H[np.diag_indices_from(H)] += 1.5 * abs(eig[0]) + 1e-8 * abs(eig[-1])
        try:
            return np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            raise HJAError("singular information on the chart") from None


def _chord_converged(decrement: float, last: float | None, bound: float) -> bool:
    """Whether a step by reused information shows the optimum within ``bound``.

    The chord iteration contracts the distance to the optimum by a factor ``theta`` per
    step, estimated by the ratio of successive step lengths in the reused information's
    norm, ``sqrt(decrement / last)``; the distance left is then at most ``1 / (1 - theta)``
    steps, and the objective's gap at most ``(1 + theta) / (1 - theta)^2`` times the
    decrement (the information at the optimum within a factor ``1 + theta`` of the reused
    one).  This is the stopping rule of simplified Newton iterations in implicit ODE solvers
    (Hairer and Wanner, *Solving ODEs II*, IV.8), with a contraction of at most 1/2 required.
    """
    if last is None or last <= 0:
        return False
    theta = np.sqrt(decrement / last)
    return theta <= 0.5 and decrement * (1 + theta) / (1 - theta) ** 2 <= bound


def refine(data, S, Z, theta, outcome, log_aux, terms, rank: int, ridge: float, *,
           tol: float = 1e-10, max_iter: int = 25) -> Refined:
    """Fisher scoring on the chart from ``(S, Z, theta, log_aux)`` to the penalised optimum.

    Stops when the Newton decrement ``-g^T delta / 2`` (the predicted decrease of the
    objective to the optimum) falls below ``tol`` relative to the objective: stricter than
    the proximal solver's rule, a relative change below ``tol`` in one of its steps.  Steps
    reuse the last information assembled until one must be shortened; a decrement below
    ``tol`` by reused information ends the iteration when the steps contract fast enough to
    bound the gap left (:func:`_chord_converged`), else it is checked again with the
    information at the point.

    Raises
    ------
    HJAError
        When the chart is not defined at a point (a rank collapse) or the information is
        singular; the caller falls back to the proximal solver.
    """
    model = Model(data, S, Z, theta, outcome, log_aux, terms)
    design = model.design()
    f, nll = _penalised(model, design, ridge)
    if not np.isfinite(f):  # a verdict the start deems impossible: no decrement can be read
        raise HJAError(f"the objective is not finite at the start ({f})")
    factor = None
    last = None  # the previous full step's decrement by the same information
    for it in range(1, max_iter + 1):
        chart = factor_chart(model.S, rank, coef_free=design.free, n_aux=outcome.n_aux,
                             free=free_aux(model.log_aux) if outcome.n_aux else None,
                             n_global=len(design.global_names))
        sigma = np.einsum("ka,kn,na->a", chart.P, model.S, chart.Q)
        g, grad_S = _gradient(model, chart, design, ridge)
        C = chart.constraints()
        g = g - C @ (C.T @ g)
        fresh = factor is None or factor.shape[0] != chart.dim
        while True:
            if fresh:
                factor = _factor(model, chart, design, ridge, grad_S, sigma, C)
            delta = -_cho_solve(factor, g)
            delta -= C @ (C.T @ delta)
            decrement = -float(g @ delta) / 2
            if decrement > tol * max(1.0, abs(f)):
                if not fresh and last is not None and decrement > SLOW_CHORD ** 2 * last:
                    fresh = True  # the reused information contracts slowly: assemble anew
                    continue
                break
            if fresh or _chord_converged(decrement, last, tol * max(1.0, abs(f))):
                return Refined(model.S, model.coef, model.log_aux, model.theta, it - 1, True,
                               nll)
            fresh = True
        t = 1.0
        while True:
            trial = _moved(model, chart, sigma, delta, t)
            f_new, nll_new = _penalised(trial, design, ridge)
            if np.isfinite(f_new) and f_new <= f - 1e-4 * t * decrement:
                break
            t /= 2
            if t < 1e-8:
                return Refined(model.S, model.coef, model.log_aux, model.theta, it, False, nll)
        if t < 1:  # the step needed shortening: the next one assembles the information anew
            factor = None
        last = decrement if t == 1 else None
        model, f, nll = trial, f_new, nll_new
    return Refined(model.S, model.coef, model.log_aux, model.theta, max_iter, False, nll)


#: Fits with more free parameters than this are not polished (the information is dense).
POLISH_MAX_PARAMS = 1000


def refined_state(done: Refined, tau: float):
    """Fisher scoring's point as a solver state, for ``make_fit``: blocks B = [S | Z] and
    T = I hold S and Z (S = B[:, :N] T^T; make_fit takes the canonical decomposition)."""
    from .state import SolverState

    return SolverState(np.column_stack([done.S, done.Z]), np.eye(done.S.shape[1]), float(tau),
                       done.log_aux, np.asarray(done.theta, dtype=float))


def refined(fit, *, tol: float):
    """Fisher scoring (:func:`refine`) from ``fit``: the solver result at the optimum and the
    negative log-likelihood there, or None where it fails, does not converge, moves nothing,
    or the model is too large (``POLISH_MAX_PARAMS``)."""
    from .solve import SolveResult

    if fit.n_params > POLISH_MAX_PARAMS:
        return None
    outcome = fit.outcome_model
    with np.errstate(divide="ignore"):
        log_aux = np.log(np.asarray(fit.aux, dtype=float)) if outcome.n_aux else None
    try:
        done = refine(fit.data, fit.S, fit.coef, fit.theta, outcome, log_aux, fit.terms,
                      fit.rank, fit.ridge, tol=tol)
    except HJAError:
        return None
    if not done.converged or done.n_iter == 0:
        return None
    return SolveResult(refined_state(done, fit.tau), fit.n_iter + done.n_iter, True), done.nll


def polish(fit, *, tol: float):
    """``fit`` carried to its optimum by Fisher scoring on the chart (:func:`refined`), or
    ``fit`` itself where that fails or the model is too large (``POLISH_MAX_PARAMS``).

    The proximal alternation stops when one step changes the objective by less than ``tol``
    (relative), and its steps can shrink long before the optimum where the objective is
    flat along some direction: with style or self-preference coefficients, which trade off
    against the scores (on PRD at rank 1 with both, it stopped 0.065 above the optimum's
    NLL with coefficients 1.1 away, reached after 5,000 more steps, or 17 of these); with
    position bias (Chatbot Arena at rank 1: S 1.5e-3 away, one step); with a judge that
    saw two pairs at rank 2 (S 0.032 away, the objective 9e-6 above; 2,000 more steps
    left it 1.2e-4 away) or one of few verdicts beside judges of many.  Where the
    alternation had stopped at the optimum, this costs one assembly of the information
    (3-4 ms on MT-Bench and Chatbot Arena) and changes nothing.
    """
    from dataclasses import replace

    from .solve import make_fit
    from ..likelihood.terms import design_of

    got = refined(fit, tol=tol)
    if got is None:
        return fit
    result, nll = got
    table = fit.rank_table
    if table is not None:  # the chosen rank's row says where the fit ended
        table, row = table.copy(), table["rank"] == fit.rank
        table.loc[row, "bic"] += 2 * (nll - table.loc[row, "nll"])
        table.loc[row, "nll"] = nll
        table.loc[row, "n_iter"] = result.n_iter
    out = make_fit(fit.data, result, fit.rank, fit.terms, design_of(fit.data, fit.terms), None,
                   fit.ridge, table, fit.outcome_model, nll)
    return replace(out, excluded_judges=dict(fit.excluded_judges))


#: Terms whose coefficients trade off against the scores, where the alternation slows down
#: most (bootstrap replicates are finished only with them: see ``fit.bootstrap``).
SLOW_TERMS = ("style", "self")


def finish(fit, *, tol: float):
    """:func:`polish` for a converged fit; ``fit`` itself where it did not converge."""
    return polish(fit, tol=tol) if fit.converged else fit
