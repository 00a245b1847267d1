"""The driver: iterate the kernels to convergence with the fail-safe, and build the result."""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import numpy as np

from ..btl import fit_per_judge_btl
from ..comparisons import Comparisons
from ..decomposition import bic, canonical_decomposition, canonicalize
from ..errors import ConvergenceWarning, IdentifiabilityError, warn
from ..likelihood import HALF, OutcomeModel, counts_for, judge_totals
from ..likelihood.terms import Design
from . import kernels, loop
from .result import HJAFit
from .state import SolverState, scores

__all__ = ["SolveResult", "solve", "fit_rank", "initial_state", "make_fit", "INIT_RIDGE", "INIT_TOL"]

#: Outer steps the device runs between two looks of the host (progress, ``stop``) on a small
#: panel (:func:`~hja_bayes.hja.kernels.small_panel`): a run that converges within them costs
#: one transfer; a long one, one per this many steps.  A large panel's step takes tens of
#: milliseconds or more, so there the host looks after every step, and the program has no
#: loop (which compiles 0.5 s faster at 200,000 cells).
STEPS_PER_CHECK = 25
#: A fit that did not converge with mean(gamma)^2 below this share of mean(gamma^2) is said to
#: drift towards no consensus: in 900 simulated small panels (3 or 5 judges, 5 models, 15 to
#: 100 verdicts each) the fits that did not converge had shares of 5e-4 to 7e-4, every
#: converged one 0.013 or more.
NO_CONSENSUS = 0.01
#: Ridge of the per-judge BTL start: a judge whose verdicts are (nearly) separated gets huge
#: unpenalised scores that would dominate the starting consensus; a mild ridge keeps it tame.
INIT_RIDGE = 0.1
#: Gradient tolerance of the per-judge BTL start: a start need not be exact (the solver
#: iterates to ``tol`` from there), and at 1,000 models each Newton step costs milliseconds.
INIT_TOL = 1e-6
#: The proximal weight a fit starts from (``fit_hja``'s ``tau``).
DEFAULT_TAU = 30.0


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
          stop: Callable[[int, float, SolverState], bool] | None = None,
          quick_compile: bool = False) -> SolveResult:
    """Run outer steps from ``state`` until the relative change of the objective is below ``tol``.

    After each accepted step tau is halved (down to a floor); the fail-safe undoes a step
    whose ReAnchor collapsed the consensus or the r-th singular value (or whose objective is
    not finite) and multiplies tau by 10.  The steps, the fail-safe and the convergence test
    run on the device in chunks of :data:`STEPS_PER_CHECK` (:func:`~.loop.run_steps`;
    one step at a time on large panels); between chunks the host reads where the run stands,
    once.  ``outcome`` is the outcome model (its per-judge parameters travel in
    ``state.aux``; the panel-wide coefficients in ``state.theta``).  ``progress(iteration,
    objective)`` is called for every accepted step, after the chunk that took it.
    ``stop(iteration, objective, state)``, called after every chunk that has not converged,
    ends the run early when it returns True (``stopped_early``; a rank search uses it for
    candidates that cannot win).  ``quick_compile``: see :func:`~.loop.run_steps`
    (``quick``).
    """
    if state.aux is None:
        state = state._replace(aux=np.zeros((state.B.shape[0], outcome.n_aux)))
    if state.theta is None:
        state = state._replace(theta=np.zeros(cells.Xg.shape[-1]))
    # the objective at the start, left on the device for the first chunk
    f = loop.objective_jit(state.B, state.T, cells, float(ridge), outcome, state.aux,
                              state.theta)
    it, converged = 0, False
    chunk = STEPS_PER_CHECK if kernels.small_panel(cells, state.T, quick_compile) else 1
    while it < max_iter:
        # scalars as Python numbers and the objective as a device value, so every chunk of a
        # run (and of the next run) calls one compiled program
        state, info = loop.run_steps(state._replace(tau=float(state.tau)), cells, f,
                                        rank=int(rank), ridge=float(ridge), tol=float(tol),
                                        limit=min(chunk, max_iter - it), chunk=chunk,
                                        reanchored=reanchored, outcome=outcome,
                                        quick=quick_compile)
        f = info.objective
        n, objective, converged, failed, tau, trace = jax.device_get(
            (info.n_steps, info.objective, info.converged, info.failed, state.tau, info.trace))
        state = state._replace(tau=float(tau))
        if progress is not None:
            for i in np.flatnonzero(np.isfinite(trace[:n])):
                progress(it + int(i) + 1, float(trace[i]))
        it += int(n)
        if failed:
            raise IdentifiabilityError(
                "the consensus or the disagreement rank collapsed during fitting "
                "(|mu| or the r-th singular value went to zero); try a smaller rank"
            )
        if converged:
            break
        if stop is not None and stop(it, float(objective), state):
            return SolveResult(state, it, False, stopped_early=True)
    return SolveResult(state, it, bool(converged))


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
             stop=None, quick_compile: bool = False) -> SolveResult:
    """Solve one rank from the standard start; warn when it does not converge.

    ``cells`` and ``design``: the data's units with the terms' design (see
    :func:`~hja_bayes.likelihood.cells_of`).  ``width`` lays the blocks out with that many
    disagreement columns (default ``rank``: a rank search uses its largest candidate, so
    every candidate runs one compiled step); ``stop`` and ``quick_compile`` are passed to
    :func:`solve`.
    """
    state = initial_state(data, rank, design, tau, S0, outcome, width)
    result = solve(state, cells, rank, ridge=ridge, tol=tol, max_iter=max_iter,
                   reanchored=reanchored, progress=progress, outcome=outcome, stop=stop,
                   quick_compile=quick_compile)
    if warn and not result.converged:
        warn_not_converged(rank, result, tol)
    return result


def warn_not_converged(rank: int, result: SolveResult, tol: float) -> None:
    """The ConvergenceWarning of a rank that hit ``max_iter``; it says so where the solver
    was drifting towards judges whose score rows cancel in their mean (no consensus)."""
    why = ""
    S = np.asarray(scores(np.asarray(result.state.B), np.asarray(result.state.T))[0])
    with np.errstate(divide="ignore", invalid="ignore"):  # |mu| = 0: no gamma at all
        gamma = canonical_decomposition(S, 0, xp=np).gamma
    if np.all(np.isfinite(gamma)) and np.mean(gamma) ** 2 < NO_CONSENSUS * np.mean(gamma ** 2):
        why = (f"; it was drifting towards judges whose score rows cancel in their mean "
               f"(gamma from {gamma.min():.3g} to {gamma.max():.3g}, summing to "
               f"{len(gamma)}): these verdicts identify no consensus at rank {rank}, and "
               "intervals of mu and gamma there are not to be trusted (more verdicts per "
               "judge, or the Bayesian model, whose prior keeps gamma finite)")
    warn(
        f"HJA rank {rank}: no convergence after {result.n_iter} iterations (relative change "
        f"of the objective still above tol={tol:g}); estimates may be inaccurate{why}",
        ConvergenceWarning,
    )


def state_nll(state: SolverState, cells, outcome: OutcomeModel = HALF) -> float:
    """The negative log-likelihood (no ridge) at a solver state (compiled, see
    :func:`~.loop.nll_jit`)."""
    return float(loop.nll_jit(state.B, state.T, cells, outcome, state.aux, state.theta))


def make_fit(data: Comparisons, result: SolveResult, rank: int, terms: tuple, design: Design,
             cells, ridge: float, rank_table=None, outcome: OutcomeModel = HALF,
             nll: float | None = None) -> HJAFit:
    """The :class:`HJAFit` of a solver result, in canonical coordinates; ``nll``, the
    negative log-likelihood at the result where the caller has it (else computed from
    ``cells``)."""
    S, Z = scores(np.asarray(result.state.B), np.asarray(result.state.T))
    d = canonicalize(S, rank)
    gamma, mu, U, V, D = (np.asarray(x) for x in d)
    S = np.outer(gamma, mu) + U @ V.T
    log_aux = np.asarray(result.state.aux) if outcome.n_aux else None
    theta = np.zeros(0) if result.state.theta is None else np.asarray(result.state.theta)
    if nll is None:
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
