"""The driver: iterate the kernels to convergence with the fail-safe, and build the result."""

from __future__ import annotations

import math
import warnings
from typing import Callable, NamedTuple

import numpy as np

from ..btl import fit_per_judge_btl
from ..comparisons import Comparisons
from ..decomposition import bic, canonicalize
from ..errors import ConvergenceWarning, IdentifiabilityError
from ..likelihood import HALF, OutcomeModel, counts_for, judge_totals, negative_log_likelihood
from ..likelihood.terms import Design
from . import kernels
from .result import HJAFit
from .state import SolverState, scores

__all__ = ["SolveResult", "solve", "fit_rank", "initial_state", "make_fit", "INIT_RIDGE", "INIT_TOL"]

MU_FLOOR = 1e-8
SIGMA_FLOOR = 1e-10
TAU_SHRINK = 0.5
TAU_MIN = 0.03
TAU_FAIL = 1e12
#: Ridge of the per-judge BTL start: a judge whose verdicts are (nearly) separated gets huge
#: unpenalised scores that would dominate the starting consensus; a mild ridge keeps it tame.
INIT_RIDGE = 0.1
#: Gradient tolerance of the per-judge BTL start: a start need not be exact (the solver
#: iterates to ``tol`` from there), and at 1,000 models each Newton step costs milliseconds.
INIT_TOL = 1e-6


class SolveResult(NamedTuple):
    """Final state of a run of the driver."""

    state: SolverState
    n_iter: int
    converged: bool
    stopped_early: bool = False


def solve(state: SolverState, cells, rank: int, *, ridge: float, tol: float,
          max_iter: int, reanchored: bool = True,
          progress: Callable[[int, float], None] | None = None,
          outcome: OutcomeModel = HALF,
          stop: Callable[[int, float, SolverState], bool] | None = None) -> SolveResult:
    """Run outer steps from ``state`` until the relative change of the objective is below ``tol``.

    After each accepted step tau is halved (down to a floor); the fail-safe undoes a step
    whose ReAnchor collapsed the consensus or the r-th singular value (or whose objective is
    not finite) and multiplies tau by 10.  ``outcome`` is the outcome model (its per-judge
    parameters travel in ``state.aux``).  ``stop(iteration, objective, state)``, called after
    every accepted step that has not converged, ends the run early when it returns True
    (``stopped_early``; a rank search uses it for candidates that cannot win).
    """
    if state.aux is None:
        state = state._replace(aux=np.zeros((state.B.shape[0], outcome.n_aux)))
    if state.theta is None:
        state = state._replace(theta=np.zeros(cells.Xg.shape[-1]))
    f = float(kernels.objective_jit(state.B, state.T, cells, ridge, outcome, state.aux,
                                    state.theta))
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        new, info = kernels.step(state, cells, rank=rank, ridge=ridge, reanchored=reanchored,
                                 outcome=outcome)
        f_new = float(info.objective)
        if (float(info.mu_norm) < MU_FLOOR or float(info.sigma_r) < SIGMA_FLOOR
                or not math.isfinite(f_new)):
            state = state._replace(tau=state.tau * 10.0)  # fail-safe: undo, move more cautiously
            if state.tau > TAU_FAIL:
                raise IdentifiabilityError(
                    "the consensus or the disagreement rank collapsed during fitting "
                    "(|mu| or the r-th singular value went to zero); try a smaller rank"
                )
            continue
        state = new._replace(tau=max(new.tau * TAU_SHRINK, TAU_MIN))
        if progress is not None:
            progress(it, f_new)
        done = abs(f - f_new) <= tol * max(1.0, abs(f_new))
        f = f_new
        if done:
            converged = True
            break
        if stop is not None and stop(it, f, state):
            return SolveResult(state, it, False, stopped_early=True)
    return SolveResult(state, it, converged)


def initial_state(data: Comparisons, rank: int, design: Design, tau: float,
                  S0=None, outcome: OutcomeModel = HALF, width: int | None = None) -> SolverState:
    """Start: the canonical truncation of a mildly ridged per-judge BTL; the position bias
    (when a term) from the judge's first-slot win rate, the other term coefficients 0; the
    outcome model's parameters from each judge's totals (for Davidson, log nu_k from the tie
    rate; -inf, i.e. nu_k held at 0, for a judge that never tied).  ``width``: disagreement
    columns of the blocks (default ``rank``)."""
    if S0 is None:
        S0 = fit_per_judge_btl(data, ridge=INIT_RIDGE, tol=INIT_TOL)
    Z0 = np.zeros((data.n_judges, len(design.names)))
    position = design.column("position")
    if position is not None:
        first = np.bincount(data.judge, data.wins, data.n_judges)
        Z0[:, position] = np.log((first + 0.5) / (data.comparisons_per_judge() - first + 0.5))
    totals = judge_totals(data.judge, counts_for(data.counts, outcome), data.n_judges)
    aux = outcome.initial_aux(totals)
    return kernels.init(S0, rank, Z0, tau, aux, width=width,
                        theta0=np.zeros(len(design.global_names)))


def fit_rank(data: Comparisons, cells, design: Design, rank: int, *, tau: float, ridge: float,
             tol: float, max_iter: int, reanchored: bool = True, S0=None, warn: bool = True,
             progress=None, outcome: OutcomeModel = HALF, width: int | None = None,
             stop=None) -> SolveResult:
    """Solve one rank from the standard start; warn when it does not converge.

    ``cells`` and ``design``: the data's units with the terms' design (see
    :func:`~hja_bayes.likelihood.cells_of`).  ``width`` lays the blocks out with that many
    disagreement columns (default ``rank``: a rank search uses its largest candidate, so
    every candidate runs one compiled step); ``stop`` is passed to :func:`solve`.
    """
    state = initial_state(data, rank, design, tau, S0, outcome, width)
    result = solve(state, cells, rank, ridge=ridge, tol=tol, max_iter=max_iter,
                   reanchored=reanchored, progress=progress, outcome=outcome, stop=stop)
    if warn and not result.converged:
        warn_not_converged(rank, result.n_iter, tol)
    return result


def warn_not_converged(rank: int, n_iter: int, tol: float) -> None:
    """The ConvergenceWarning of a rank that hit ``max_iter``."""
    warnings.warn(
        f"HJA rank {rank}: no convergence after {n_iter} iterations (relative change of the "
        f"objective still above tol={tol:g}); estimates may be inaccurate",
        ConvergenceWarning,
        stacklevel=4,
    )


def state_nll(state: SolverState, cells, outcome: OutcomeModel = HALF) -> float:
    """The negative log-likelihood (no ridge) at a solver state."""
    S, Z = scores(state.B, state.T)
    return float(negative_log_likelihood(S, Z, cells, outcome=outcome, aux=state.aux,
                                         theta=state.theta))


def make_fit(data: Comparisons, result: SolveResult, rank: int, terms: tuple, design: Design,
             cells, ridge: float, rank_table=None, outcome: OutcomeModel = HALF) -> HJAFit:
    """The :class:`HJAFit` of a solver result, in canonical coordinates."""
    S, Z = scores(np.asarray(result.state.B), np.asarray(result.state.T))
    d = canonicalize(S, rank)
    gamma, mu, U, V, D = (np.asarray(x) for x in d)
    S = np.outer(gamma, mu) + U @ V.T
    log_aux = np.asarray(result.state.aux) if outcome.n_aux else None
    theta = np.zeros(0) if result.state.theta is None else np.asarray(result.state.theta)
    nll = state_nll(result.state, cells, outcome)
    position = design.column("position")
    return HJAFit(
        gamma=gamma, mu=mu, U=U, V=V, D=D, S=S,
        beta=np.zeros(data.n_judges) if position is None else Z[:, position].copy(),
        rank=rank, position_bias=position is not None, nll=nll,
        bic=bic(nll, rank, data.n_judges, data.n_items, data.n_comparisons),
        n_iter=result.n_iter, converged=result.converged, judges=data.judges,
        items=data.items, data=data, tau=result.state.tau, ridge=ridge, rank_table=rank_table,
        outcome=outcome.name, aux=None if log_aux is None else outcome.natural(log_aux),
        terms=tuple(terms), coef=Z, coef_names=design.names, theta=theta,
        theta_names=design.global_names, coef_free=np.asarray(design.free, dtype=bool),
    )
