"""The public fitters: ``fit_hja`` (MAP with rank choice) and the ``fit_btl_svd`` baseline."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Literal

import numpy as np

from ..threads import one_blas_thread
from ..btl import fit_per_judge_btl
from ..checks import check_flag, check_integer, check_positive, check_probability
from ..comparisons import Comparisons
from ..decomposition import check_rank
from ..errors import DataError, DataWarning, IdentifiabilityError, ParameterError, warn
from ..likelihood import cells_of, outcome_model
from ..likelihood.terms import design_of, terms_of
from ..position_locked import warn_locked_judges
from . import kernels
from .inputs import (LEFT_OUT_ON_REQUEST, MIN_JUDGE_COMPARISONS, check_fit_inputs,
                     deprecated_ties, judges_to_leave_out, warn_tie_only_judges,
                     warn_unused_levels)
from .refine import finish
from .result import DEFAULT_RIDGE, HJAFit
from .selection import PATIENCE, candidate_ranks, check_patience, rank_search
from .solve import DEFAULT_TAU, SolveResult, fit_rank, make_fit, warn_not_converged

__all__ = ["fit_hja", "fit_btl_svd", "uncontrolled"]


@one_blas_thread
def fit_hja(
    data: Comparisons,
    rank: int | Literal["bic", "cv"] = 1,
    *,
    position_bias: bool = False,
    tau: float = DEFAULT_TAU,
    ridge: float = DEFAULT_RIDGE,
    tol: float = 1e-10,
    max_iter: int = 2000,
    max_rank: int | None = None,
    cv_folds: int = 5,
    seed: int = 0,
    reanchor: bool = True,
    progress: bool = False,
    outcome: str | None = None,
    style=None,
    self_preference=None,
    min_judge_comparisons: int = MIN_JUDGE_COMPARISONS,
    leave_out=(),
    patience: int | None = PATIENCE,
    quick_compile: bool = False,
    ties: str | None = None,
) -> HJAFit:
    """Fit the HJA model by the anchored proximal alternating algorithm with ReAnchor.

    Parameters
    ----------
    data : Comparisons
    rank : int, "bic" or "cv"
        Disagreement rank r (0 is JA-Ranking, ``S = gamma mu^T``), or a rule to choose it
        among 0..``max_rank``: BIC, or ``cv_folds``-fold cross-validation over single
        comparisons (held-out NLL).  The criteria of every candidate are in
        ``fit.rank_table``; under BIC a candidate that cannot beat the smaller ranks' best
        BIC even at its current pace is stopped early (``stopped_early``, see
        :func:`~hja_bayes.hja.selection.cannot_win_bic`), and the search ends after
        ``patience`` candidates in a row that did not improve the criterion.
    position_bias : bool or Position
        Add a per-judge logit bonus ``beta_k`` for the first-shown item (needs order); a
        :class:`~hja_bayes.likelihood.terms.Position` term sets its own ridge.
    tau : float
        Proximal weight of the block steps (default 30, the paper's).
    ridge : float
        Penalty ``ridge/2 (|S|_F^2 + |beta|^2)``, a N(0, 1/ridge) prior on every score:
        keeps estimates finite under perfect separation (default 0.01, i.e. prior sd 10
        logits; the Wald intervals use the penalised information).
    tol : float
        Stop when the relative change of the objective falls below ``tol``.
    max_iter : int
        Most outer iterations; if reached, a ConvergenceWarning and ``converged=False``.
    max_rank : int, optional
        Largest candidate rank for "bic"/"cv" (default min(identifiable maximum, 4)).
    cv_folds, seed : int
        Cross-validation folds and their random seed.
    reanchor : bool
        Apply ReAnchor after every iteration (turn off only for ablations).
    progress : bool
        On stderr: each rank candidate as it is fitted (iterations, NLL, BIC, CV), and the
        objective every 25 iterations of a single-rank fit.
    outcome : {"half", "davidson", "ordinal"}, optional
        The outcome model.  "half" (the default, None; Chatbot Arena's convention and the
        papers'; on ordered verdicts a DataWarning says their grades are collapsed):
        a tie counts 1/2 to each side of a Bernoulli likelihood.  "davidson": three
        outcomes, ``P(first) = e^{eta/2}/Z``, ``P(tie) = nu_k/Z``, ``P(second) =
        e^{-eta/2}/Z`` with a tie propensity ``nu_k`` per judge, estimated on the log scale
        with the judge block (under the same ridge); a judge that never tied has nu_k held
        at 0 (reported so by ``summary()``).  The scores keep their meaning: the odds of
        first over second are ``e^eta`` in both.  "ordinal": verdicts on the data's ordered
        scale (e.g. ``A>>B .. B>>A``), a cumulative logit with symmetric per-judge cut points
        (:mod:`~hja_bayes.likelihood.outcomes.ordinal`).  The three-outcome models read an
        ordered scale collapsed to (first, tie, second).
    style : None, "per_judge", "shared" or :class:`~hja_bayes.likelihood.terms.Style`
        Control for the answers' style features (the data must carry them: read with
        ``features=``): ``theta_k^T (x_qi - x_qj)`` in every verdict's logit, one
        coefficient per judge and feature ("per_judge", ``theta_k = theta + delta_k``) or
        one per feature ("shared").  mu is then the style-controlled consensus; the data
        are summed per (prompt, cell) entry instead of per cell.
    self_preference : None, True, mapping judge -> model, or :class:`~hja_bayes.likelihood.terms.SelfPreference`
        Add ``lambda_k`` for judge k's own model (True: judges named like a model).  Not
        identified at the full rank nor where more judges have one than the disagreement
        leaves room for ((K - r - 1)(N - r - 2) in all): refused there, and left out of a
        rank search.
    patience : int or None
        For "bic"/"cv": the search goes up the ranks and stops once this many consecutive
        candidates have not lowered the best BIC (or held-out NLL) so far; the larger ranks
        are not fitted and ``fit.rank_table`` marks them ``skipped`` (criteria NaN).
        Default 1 (see :data:`~hja_bayes.hja.selection.PATIENCE`); None fits every
        candidate up to ``max_rank``.
    quick_compile : bool
        Compile the solver for one fit rather than for many: on a small panel its program
        then compiles in less than half the time (Chatbot Arena: 0.5 s of CPU instead of
        1.2 s) and runs a step three times slower (1.1 ms instead of 0.36 ms), and panels
        up to :data:`~hja_bayes.hja.kernels.QUICK_SIZE` count as small (Chatbot Arena with
        four style features: a first fit in 1.4 s instead of 1.9 s).  The command line sets
        it, as a process that fits once spends more time compiling than fitting.  The
        estimates are the same.
    ties : str, optional
        Deprecated alias of ``outcome``.
    min_judge_comparisons : int
        Judges with fewer comparisons are left out (default 10) when the median judge made
        at least ten times as many, and so are, with
        ``position_bias``, judges whose every verdict went to one slot; each is named in a
        DataWarning, in ``fit.excluded_judges`` and in ``fit.summary()``.  Every judge
        weighs equally in the consensus, so a judge with a handful of verdicts would move
        it as much as one with thousands.
    leave_out : str or iterable of str
        Judges to leave out by name, e.g. one locked on a presentation slot
        (:mod:`~hja_bayes.position_locked`); recorded in ``fit.excluded_judges`` and
        ``fit.summary()`` like those the rules above leave out (without a warning: asked
        for).  A name not in the data is a DataError.

    Returns
    -------
    HJAFit

    Raises
    ------
    ParameterError
        ``rank`` neither an integer nor "bic"/"cv"; a non-positive ``tau``, negative
        ``ridge`` or ``tol``; an unknown ``outcome``; ``patience`` neither None nor an
        integer >= 1.
    IdentifiabilityError
        Rank not identifiable (r + 1 > min(K, N - 1): the message states the maximum); no
        consensus (|mu| = 0); position bias requested on folded data.
    DisconnectedGraphError
        The pooled comparison graph is disconnected.
    DataError
        ``leave_out`` names a judge not in the data, or every judge is left out.
    """
    outcome = deprecated_ties(ties, outcome)
    if outcome is None and len(getattr(data, "categories", "___")) != 3:  # the grades unused
        warn(f"the verdicts are on an ordered scale of {len(data.categories)} levels, read as "
             "three outcomes (outcome='half', the default): pass outcome='ordinal' to use "
             "their grades (hja-bayes fit does), or outcome='half' to say so", DataWarning)
    outcome = outcome_model(outcome or "half", data.categories
                            if isinstance(data, Comparisons) else None)
    if isinstance(data, Comparisons):  # the judges left out are not checked nor warned of
        data, excluded = _leave_out(data, position_bias, min_judge_comparisons, leave_out,
                                    outcome.name)
    check_fit_inputs(data, position_bias)
    warn_tie_only_judges(data, outcome.name)
    if not position_bias:
        warn_locked_judges(data)
    if outcome.name == "ordinal":
        warn_unused_levels(data)
    check_positive(tau, "tau")
    check_positive(ridge, "ridge", allow_zero=True)
    check_probability(tol, "tol", open_high=True)  # relative: at 1 every step passes
    check_integer(max_iter, "max_iter", 1)
    check_integer(cv_folds, "cv_folds", 2)
    check_integer(seed, "seed")
    check_flag(reanchor, "reanchor")
    check_patience(patience)
    terms = terms_of(position_bias, style, self_preference)
    design = design_of(data, terms)
    cells = cells_of(data, pad=True, outcome=outcome, design=design)
    printer = (lambda it, f: print(f"  iteration {it}: objective {f:.6f}", file=sys.stderr,
                                   flush=True) if it % 25 == 0 else None) if progress else None
    if isinstance(rank, str):
        if rank.lower() not in ("bic", "cv"):
            raise ParameterError(f"rank must be an integer, 'bic' or 'cv', got {rank!r}")
        rule = rank.lower()
        ranks = candidate_ranks(data, max_rank)
        _refuse_unidentified_self(data, terms, design, ranks[0])  # then at every rank
        ranks = [r for r in ranks if not _self_unidentified(data, terms, design, r)]
        table, solutions = rank_search(
            data, ranks, terms=terms, design=design, cells=cells,
            cv_folds=cv_folds, seed=seed, tau=tau, ridge=ridge, tol=tol, max_iter=max_iter,
            cv=rule == "cv", outcome=outcome, report=_report_candidate if progress else None,
            patience=patience, quick_compile=quick_compile)
        r = int(table["rank"][table["bic" if rule == "bic" else "cv_nll"].idxmin()])
        if reanchor:  # the search already fitted (and finished) the chosen rank
            result = solutions[r]
            if not result.converged:
                warn_not_converged(r, result, tol)
            return replace(make_fit(data, result, r, terms, design, cells, ridge, table,
                                    outcome, table["nll"][table["rank"] == r].iloc[0]),
                           excluded_judges=excluded)
    else:
        r, table = check_rank(rank, data.n_judges, data.n_items), None
        _refuse_unidentified_self(data, terms, design, r)
    result = fit_rank(data, cells, design, r, tau=tau, ridge=ridge, tol=tol,
                      max_iter=max_iter, reanchored=reanchor, progress=printer, outcome=outcome,
                      quick_compile=quick_compile)
    return finish(replace(make_fit(data, result, r, terms, design, cells, ridge, table,
                                   outcome), excluded_judges=excluded), tol=tol)


#: Terms that bias the consensus when left out: what a controlled fit controls for.
BIAS_TERMS = ("style", "self")


def uncontrolled(fit: HJAFit, **options) -> HJAFit:
    """The same model fitted without its bias terms (style, self-preference), for comparison.

    Same data, rank, outcome model, position bias and ridge; ``options`` go to
    :func:`fit_hja` (e.g. ``tol``).  Returns ``fit`` itself when it has no bias terms.
    """
    if not any(t.name in BIAS_TERMS for t in fit.terms):
        return fit
    position = next((t for t in fit.terms if t.name == "position"), False)
    plain = fit_hja(fit.data, fit.rank, position_bias=position, ridge=fit.ridge,
                    outcome=fit.outcome, **options)
    return replace(plain, excluded_judges=fit.excluded_judges)  # its data are without them


def _refuse_unidentified_self(data: Comparisons, terms, design, rank: int) -> None:
    why = _self_unidentified(data, terms, design, rank)
    if why:
        raise IdentifiabilityError(f"self-preference is not identified at rank {rank}: {why}"
                                   + ("; fit a smaller rank" if rank else ""))


def _self_unidentified(data: Comparisons, terms, design, rank: int) -> str:
    """Why the self-preference coefficients cannot be told from the scores at ``rank`` ("" if
    they can, as far as counting shows).

    ``lambda_k`` moves one cell of S, judge k's score of its own model.  Scores are known up
    to a shift per judge, so S lives in K x (N - 1) dimensions, and the model's S (rank
    r + 1) can move along every direction but a (K - r - 1)(N - r - 2)-dimensional normal
    space; the coefficients are identified only if their cells, projected there, are
    independent, so at most that many in all, and at most K - r - 1 for judges owning the
    same model.  At the full rank (per-judge Bradley–Terry) none is.
    """
    term = next((t for t in terms if t.name == "self"), None)
    if term is None:
        return ""
    K, N = data.n_judges, data.n_items
    own = term.own_items(data)[design.free[:, design.column("self")]]
    if not len(own):  # no judge's own model among its verdicts: nothing to identify
        return ""
    normal = max(K - rank - 1, 0) * max(N - rank - 2, 0)
    if normal == 0:
        return (f"it is the full rank for {K} judges and {N} models, where each judge's own "
                "score absorbs it")
    if len(own) > normal:
        return (f"{len(own)} judges have a coefficient, and the disagreement U V^T of rank "
                f"{rank} absorbs all but {normal} single judge-model cells of the scores "
                f"((K - r - 1)(N - r - 2) for {K} judges and {N} models)")
    shared = np.bincount(own).max()
    if shared > K - rank - 1:
        return (f"{shared} judges own {data.items[int(np.argmax(np.bincount(own)))]!r}, and at "
                f"rank {rank} at most {K - rank - 1} (K - r - 1) can have a coefficient for the "
                "same model")
    return ""


def _report_candidate(row: dict) -> None:
    """One stderr line per rank candidate of the search."""
    if row.get("skipped"):
        print(f"  rank {row['rank']}: skipped (the criterion stopped improving at a smaller rank)",
              file=sys.stderr, flush=True)
        return
    cv = "" if np.isnan(row["cv_nll"]) else f", CV NLL {row['cv_nll']:.3f}"
    state = ("" if row["converged"] else " (stopped early: cannot beat the best BIC so far)"
             if row.get("stopped_early") else " (NOT converged)")
    print(f"  rank {row['rank']}: {row['n_iter']} iterations{state}, NLL {row['nll']:.3f}, "
          f"BIC {row['bic']:.3f}{cv}", file=sys.stderr, flush=True)


def _leave_out(data: Comparisons, position_bias: bool, min_comparisons: int, requested=(),
               outcome: str = "half"):
    """The data without the judges asked to be left out and those :func:`judges_to_leave_out`
    names, and those judges with the reason (the rules' warned of)."""
    check_integer(min_comparisons, "min_judge_comparisons")
    if requested is None:  # no judge asked to be left out
        requested = ()
    try:
        requested = [requested] if isinstance(requested, str) else list(requested)
    except TypeError:
        raise ParameterError(f"leave_out names judges (a name or a list of names), got "
                             f"{requested!r}") from None
    unknown = [j for j in requested if j not in data.judges]
    if unknown:
        raise DataError(f"leave_out names judges that are not in the data: {unknown}; the "
                        f"judges are {list(data.judges)}")
    excluded = dict.fromkeys(requested, LEFT_OUT_ON_REQUEST)
    ruled = {name: why for name, why in judges_to_leave_out(
        data, position_bias, min_comparisons, outcome).items() if name not in excluded}
    excluded.update(ruled)
    if not excluded:
        return data, {}
    kept = [j for j in data.judges if j not in excluded]
    if not kept:
        raise DataError("every judge was left out: " + "; ".join(
            f"{name}: {why}" for name, why in excluded.items()))
    if ruled:
        warn("left out of the fit: " + "; ".join(
            f"judge {name!r} {why}" for name, why in ruled.items()), DataWarning)
    data = data.select_judges(kept)
    data.check_connected()
    return data, excluded


@one_blas_thread
def fit_btl_svd(data: Comparisons, rank: int = 1, *, ridge: float = 1e-3) -> HJAFit:
    """Baseline "BTL+SVD": per-judge Bradley–Terry, then the canonical rank-r truncation.

    Returns an :class:`HJAFit` (``n_iter = 0``) so it can be compared like for like.
    """
    check_fit_inputs(data, False)
    r = check_rank(rank, data.n_judges, data.n_items)
    design = design_of(data)
    state = kernels.init(fit_per_judge_btl(data, ridge=ridge), r, np.zeros((data.n_judges, 0)), 0.0)
    return make_fit(data, SolveResult(state, 0, True), r, (), design,
                    cells_of(data, pad=True, design=design), ridge)
