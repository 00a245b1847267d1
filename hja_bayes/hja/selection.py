"""Choosing the disagreement rank: BIC and cross-validation over single comparisons."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..btl import fit_per_judge_btl
from ..checks import check_integer
from ..comparisons import Comparisons
from ..decomposition import bic, check_rank, free_parameters, max_rank
from ..errors import ParameterError
from ..likelihood import HALF, Cells, cells_of, outcome_model
from ..likelihood.terms import design_of, terms_of
from .inputs import check_fit_inputs, deprecated_ties
from .refine import refined
from .result import DEFAULT_RIDGE
from .solve import INIT_RIDGE, INIT_TOL, SolveResult, fit_rank, make_fit, solve, state_nll

__all__ = ["PATIENCE", "cannot_win_bic", "candidate_ranks", "check_patience", "rank_criteria",
           "rank_search", "split_comparisons"]


def split_comparisons(data: Comparisons, n_folds: int, seed: int | np.random.Generator = 0,
                      pad: bool = False, cells: Cells | None = None) -> list[Cells]:
    """Randomly assign every single comparison to one of ``n_folds`` folds.

    Works on the aggregated units: each unit's counts in every category are split by
    multinomial draws, which is the same as assigning each comparison to a fold uniformly
    at random.  A count that is not a whole number (counts read with ties as half wins)
    sends its fractional part, as one piece, to a fold drawn alike: the folds still sum to
    the counts.

    Returns
    -------
    list of Cells
        ``n_folds`` unit sets laid out like ``cells`` (default ``cells_of(data, pad)``; a
        unit may hold 0).
    """
    check_integer(n_folds, "n_folds", 2)
    rng = np.random.default_rng(seed)
    probs = np.full(n_folds, 1.0 / n_folds)
    layout = cells_of(data, pad=pad) if cells is None else cells
    counts = np.asarray(layout.counts)
    whole = np.floor(counts)
    # (units, C, folds): each category's verdicts of each unit spread over the folds
    parts = rng.multinomial(whole.astype(np.int64), probs).astype(float)
    fraction = counts - whole
    if np.any(fraction > 0):
        fold = rng.integers(n_folds, size=counts.shape)
        np.put_along_axis(parts, fold[..., None],
                          np.take_along_axis(parts, fold[..., None], -1) + fraction[..., None], -1)
    return [layout._replace(counts=jnp.asarray(parts[:, :, f]))
            for f in range(n_folds)]


def candidate_ranks(data: Comparisons, top: int | None = None) -> list[int]:
    """Ranks 0..``top`` (default: the identifiable maximum, at most 4)."""
    limit = max_rank(data.n_judges, data.n_items)
    top = min(limit, 4) if top is None else check_rank(top, data.n_judges, data.n_items)
    return list(range(top + 1))


#: A BIC candidate is checked for early stopping only after this many iterations ...
STOP_AFTER = 30
#: ... at its pace over this many recent iterations.
PACE_WINDOW = 15


def cannot_win_bic(cells: Cells, penalty: float, best_bic: float, max_iter: int,
                   outcome=HALF):
    """A ``stop`` rule for :func:`~hja_bayes.hja.solve.solve`: True once a rank candidate
    cannot bring its BIC below ``best_bic`` (the best of the smaller ranks) within its
    remaining iterations.

    After :data:`STOP_AFTER` iterations the NLL is extrapolated at twice its mean decrease
    over the last :data:`PACE_WINDOW` iterations until ``max_iter``; if even that leaves
    ``2 NLL + penalty`` above ``best_bic``, the candidate is stopped.  This is what a
    candidate above the true rank looks like when the proximal solver crawls (the extra
    singular value creeping to zero, or scores drifting under a tiny ridge): each
    iteration buys almost nothing and the BIC penalty already decides.  The rule is asked
    between chunks of steps (every :data:`~hja_bayes.hja.solve.STEPS_PER_CHECK`); the pace
    is measured from the latest look at least :data:`PACE_WINDOW` iterations back.
    """
    history: list[tuple[int, float]] = []

    def stop(it: int, objective: float, state) -> bool:
        if it + PACE_WINDOW < STOP_AFTER or not np.isfinite(best_bic):
            return False
        nll = state_nll(state, cells, outcome)
        history.append((it, nll))
        back = [(i, f) for i, f in history if i <= it - PACE_WINDOW]
        if it < STOP_AFTER or not back:
            return False
        then, nll_then = back[-1]
        pace = max(nll_then - nll, 0.0) / (it - then)
        floor = nll - 2.0 * pace * (max_iter - it)
        return 2.0 * floor + penalty > best_bic

    return stop


#: A rank candidate whose BIC is more than this above the
#: best of the smaller ranks is not finished by Fisher scoring (see :func:`rank_search`).
FINISH_WITHIN = 10.0


#: Default ``patience`` of a rank search: it stops after this many consecutive candidates
#: that did not improve the criterion (see :func:`rank_search`).
PATIENCE = 1


def check_patience(patience) -> None:
    """``patience`` is None or an integer >= 1 (else a ParameterError)."""
    if patience is not None and (isinstance(patience, bool)
                                 or not isinstance(patience, (int, np.integer)) or patience < 1):
        raise ParameterError(f"patience must be an integer >= 1 or None, got {patience!r}")


def rank_search(data: Comparisons, ranks, *, terms=(), design, cells, cv_folds, seed, tau,
                ridge, tol, max_iter, cv, outcome=HALF, report=None,
                patience: int | None = None, quick_compile: bool = False
                ) -> tuple[pd.DataFrame, dict[int, SolveResult]]:
    """Criteria table and the full-data solver result of every candidate rank fitted.

    Every candidate runs in blocks as wide as the largest one (the rank is data), so the
    search compiles one solver step.  Cross-validation folds start from the full-data
    solution, so an outcome parameter held at its boundary there (a judge that never tied)
    is held in every fold, and a free one stays free (kept finite by the ridge when a fold
    has none of that judge's ties).  Without cross-validation, a candidate that cannot beat
    the best BIC of the smaller ranks is stopped early (:func:`cannot_win_bic`; column
    ``stopped_early``, its NLL and BIC are those where it stopped).

    ``patience``: once this many consecutive candidates (in increasing rank) have not
    lowered the best criterion so far (the BIC, or the held-out NLL with ``cv``), the
    larger ranks are not fitted: their rows have ``skipped`` True, NaN criteria and
    ``n_iter`` 0, and they have no solver result.  None fits every candidate.
    ``quick_compile`` is passed to every run of the solver.

    Every candidate fitted to the full data is finished by Fisher scoring
    (:func:`~hja_bayes.hja.refine.refined`), as ``fit_hja`` finishes a fit at a given rank,
    so the ranks are compared at their optima (with style and self-preference terms the
    alternation alone stopped 0.07 short of the NLL on PRD at rank 1); by BIC only where the
    BIC as the alternation left it is within :data:`FINISH_WITHIN` of the best before it
    (farther, the gap is far more than finishing moves, 0.13 in BIC on PRD, and the
    candidate's row says where the alternation stopped), under ``cv`` every one (any can be
    chosen).  A candidate stopped early, or not converged, is not finished; nor are the
    folds' fits under ``cv``.
    """
    ranks = [check_rank(r, data.n_judges, data.n_items) for r in ranks]
    if not ranks or len(set(ranks)) < len(ranks):
        raise ParameterError(f"ranks must be distinct candidate ranks, at least one, got {ranks}")
    ranks = sorted(ranks)
    check_patience(patience)
    check_integer(seed, "seed")
    if cv:  # a fold of nothing holds nothing out; folds beyond the comparisons are empty
        check_integer(cv_folds, "cv_folds", 2)
        if cv_folds > data.n_comparisons:
            raise ParameterError(f"cv_folds={cv_folds} exceeds the {data.n_comparisons:g} "
                                 "comparisons: most folds would hold none")
    S0 = fit_per_judge_btl(data, ridge=INIT_RIDGE, tol=INIT_TOL)
    folds = split_comparisons(data, cv_folds, seed, cells=cells) if cv else []
    n_terms = int(np.sum(design.free)) + len(design.global_names)
    K, N = data.n_judges, data.n_items
    width = max(ranks)
    rows, solutions = [], {}
    best_bic = best = np.inf
    idle = 0  # consecutive candidates that did not improve the criterion
    n_aux = 0  # the outcome model's estimated parameters (as fit.n_params counts them)
    for r in ranks:
        penalty = bic(0.0, r, K, N, data.n_comparisons)  # BIC less its 2 NLL term
        if patience is not None and idle >= patience:
            rows.append(dict(rank=r, nll=np.nan,
                             n_params=free_parameters(K, N, r, False) + n_terms + n_aux,
                             bic=np.nan, cv_nll=np.nan, n_iter=0, converged=False,
                             stopped_early=False, skipped=True))
            if report is not None:
                report(rows[-1])
            continue
        stop = None if cv else cannot_win_bic(cells, penalty, best_bic, max_iter, outcome)
        result = fit_rank(data, cells, design, r, tau=tau, ridge=ridge,
                          tol=tol, max_iter=max_iter, S0=S0, warn=False, outcome=outcome,
                          width=width, stop=stop, quick_compile=quick_compile)
        start = result.state._replace(tau=tau)  # the folds' start: the solver's own state
        nll = state_nll(result.state, cells, outcome)
        if result.converged and (cv or 2.0 * nll + penalty < best_bic + FINISH_WITHIN):
            # to the optimum, which the alternation can approach slowly (refine.polish)
            got = refined(make_fit(data, result, r, terms, design, cells, ridge, None, outcome),
                          tol=tol)
            if got is not None:
                result, nll = got
        solutions[r] = result
        if result.state.aux is not None:  # log values (-inf: held at 0), the same at every rank
            n_aux = int(np.isfinite(np.asarray(result.state.aux)).sum())
        cv_nll = np.nan
        if cv:
            cv_nll = 0.0
            for test in folds:
                train = solve(start, cells.minus(test), r, ridge=ridge, tol=tol,
                              max_iter=max_iter, outcome=outcome, quick_compile=quick_compile)
                cv_nll += state_nll(train.state, test, outcome)
        rows.append(dict(rank=r, nll=nll,
                         n_params=free_parameters(K, N, r, False) + n_terms + n_aux,
                         bic=2.0 * nll + penalty, cv_nll=cv_nll, n_iter=result.n_iter,
                         converged=result.converged, stopped_early=result.stopped_early,
                         skipped=False))
        best_bic = min(best_bic, rows[-1]["bic"])
        criterion = cv_nll if cv else rows[-1]["bic"]
        idle = idle + 1 if not criterion < best else 0
        best = min(best, criterion)
        if report is not None:
            report(rows[-1])
    return pd.DataFrame(rows), solutions


@one_blas_thread
def rank_criteria(data: Comparisons, ranks=None, *, position_bias=False, cv_folds=5, seed=0,
                  tau=30.0, ridge=DEFAULT_RIDGE, tol=1e-10, max_iter=2000, cv=True,
                  outcome="half", style=None, self_preference=None,
                  ties=None, patience=None) -> pd.DataFrame:
    """BIC and K-fold cross-validated held-out NLL for every candidate rank.

    Cross-validation is over single comparisons (see :func:`split_comparisons`); the
    held-out NLL is summed over folds.  ``outcome``, ``style`` and ``self_preference`` as
    in :func:`~hja_bayes.hja.fit_hja` (``ties``: deprecated alias of ``outcome``).
    ``patience`` (default None: every candidate) stops the search as in
    :func:`rank_search`.

    Returns
    -------
    DataFrame with columns rank, nll, n_params, bic, cv_nll (NaN when ``cv=False``),
    n_iter, converged, stopped_early, skipped (see :func:`rank_search`).
    """
    check_fit_inputs(data, position_bias)
    ranks = candidate_ranks(data) if ranks is None else ranks
    model = outcome_model(deprecated_ties(ties, outcome), data.categories)
    terms = terms_of(position_bias, style, self_preference)
    design = design_of(data, terms)
    cells = cells_of(data, pad=True, outcome=model, design=design)
    table, _ = rank_search(data, ranks, terms=terms, design=design, cells=cells,
                           cv_folds=cv_folds, seed=seed, tau=tau, ridge=ridge, tol=tol,
                           max_iter=max_iter, cv=cv, outcome=model, patience=patience)
    return table
