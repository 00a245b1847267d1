"""Choosing the disagreement rank: BIC and cross-validation over single comparisons."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..btl import fit_per_judge_btl
from ..comparisons import Comparisons
from ..decomposition import bic, check_rank, free_parameters, max_rank
from ..likelihood import HALF, Cells, cells_of, negative_log_likelihood, outcome_model
from .inputs import check_fit_inputs
from .result import DEFAULT_RIDGE
from .solve import INIT_RIDGE, SolveResult, fit_rank, solve
from .state import scores

__all__ = ["candidate_ranks", "rank_criteria", "rank_search", "split_comparisons"]


def split_comparisons(data: Comparisons, n_folds: int, seed: int | np.random.Generator = 0,
                      pad: bool = False) -> list[Cells]:
    """Randomly assign every single comparison to one of ``n_folds`` folds.

    Works on the aggregated cells: each cell's first-wins, second-wins and ties are split by
    multinomial draws, which is the same as assigning each comparison to a fold uniformly
    at random.

    Returns
    -------
    list of Cells
        ``n_folds`` cell sets laid out like ``cells_of(data, pad)`` (a cell may hold 0).
    """
    rng = np.random.default_rng(seed)
    probs = np.full(n_folds, 1.0 / n_folds)
    parts = [rng.multinomial(np.rint(x).astype(np.int64), probs)
             for x in (data.first_wins, data.ties, data.second_wins)]
    layout = cells_of(data, pad=pad)
    extra = len(layout.judge) - data.n_cells
    folds = []
    for f in range(n_folds):
        fw, t, sw = (np.concatenate([p[:, f], np.zeros(extra, np.int64)]).astype(float)
                     for p in parts)
        folds.append(layout._replace(first_wins=jnp.asarray(fw), ties=jnp.asarray(t),
                                     second_wins=jnp.asarray(sw)))
    return folds


def candidate_ranks(data: Comparisons, top: int | None = None) -> list[int]:
    """Ranks 0..``top`` (default: the identifiable maximum, at most 4)."""
    limit = max_rank(data.n_judges, data.n_items)
    top = min(limit, 4) if top is None else check_rank(top, data.n_judges, data.n_items)
    return list(range(top + 1))


def rank_search(data: Comparisons, ranks, *, position_bias, cv_folds, seed, tau, ridge, tol,
                max_iter, cv, outcome=HALF, report=None) -> tuple[pd.DataFrame, dict[int, SolveResult]]:
    """Criteria table and the full-data solver result of every candidate rank.

    Cross-validation folds start from the full-data solution, so an outcome parameter held
    at its boundary there (a judge that never tied) is held in every fold, and a free one
    stays free (kept finite by the ridge when a fold has none of that judge's ties).
    """
    ranks = [check_rank(r, data.n_judges, data.n_items) for r in ranks]
    cells = cells_of(data, pad=True)
    S0 = fit_per_judge_btl(data, ridge=INIT_RIDGE)
    folds = split_comparisons(data, cv_folds, seed, pad=True) if cv else []
    K, N = data.n_judges, data.n_items
    rows, solutions = [], {}
    for r in ranks:
        result = fit_rank(data, cells, r, position_bias=position_bias, tau=tau, ridge=ridge,
                          tol=tol, max_iter=max_iter, S0=S0, warn=False, outcome=outcome)
        solutions[r] = result
        S, beta = scores(result.state.B, result.state.T, r)
        nll = float(negative_log_likelihood(S, beta, cells, outcome=outcome, aux=result.state.aux))
        cv_nll = np.nan
        if cv:
            cv_nll = 0.0
            start = result.state._replace(tau=tau)
            for test in folds:
                train = solve(start, cells.minus(test), r, position_bias=position_bias,
                              ridge=ridge, tol=tol, max_iter=max_iter, outcome=outcome)
                Sf, bf = scores(train.state.B, train.state.T, r)
                cv_nll += float(negative_log_likelihood(Sf, bf, test, outcome=outcome,
                                                        aux=train.state.aux))
        rows.append(dict(rank=r, nll=nll, n_params=free_parameters(K, N, r, position_bias),
                         bic=bic(nll, r, K, N, data.n_comparisons), cv_nll=cv_nll,
                         n_iter=result.n_iter, converged=result.converged))
        if report is not None:
            report(rows[-1])
    return pd.DataFrame(rows), solutions


def rank_criteria(data: Comparisons, ranks=None, *, position_bias=False, cv_folds=5, seed=0,
                  tau=30.0, ridge=DEFAULT_RIDGE, tol=1e-10, max_iter=2000, cv=True,
                  ties="half") -> pd.DataFrame:
    """BIC and K-fold cross-validated held-out NLL for every candidate rank.

    Cross-validation is over single comparisons (see :func:`split_comparisons`); the
    held-out NLL is summed over folds.  ``ties`` selects the outcome model as in
    :func:`~hja_bayes.hja.fit_hja`.

    Returns
    -------
    DataFrame with columns rank, nll, n_params, bic, cv_nll (NaN when ``cv=False``),
    n_iter, converged.
    """
    check_fit_inputs(data, position_bias)
    ranks = candidate_ranks(data) if ranks is None else ranks
    table, _ = rank_search(data, ranks, position_bias=position_bias, cv_folds=cv_folds,
                           seed=seed, tau=tau, ridge=ridge, tol=tol, max_iter=max_iter, cv=cv,
                           outcome=outcome_model(ties))
    return table
