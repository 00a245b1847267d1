"""Add comparisons to a fit: ``update_fit`` (``HJAFit.update``), warm-started at the fit.

The new verdicts are merged with the fit's data cell by cell (a cell seen before adds its
counts, a new cell joins; prompts are matched by name), and the solver restarts from the
fit's own solution (its blocks, term coefficients, outcome parameters and final proximal
weight) at the fit's rank, terms, outcome model and ridge.  The optimum is the one a full
refit of the merged data at that rank reaches; only the path is shorter.  The rank is kept:
refit with ``fit_hja(..., rank="bic")`` to choose it again.  New judges or models join after
the fit's own; the model is then fitted afresh to the merged data (no warm start: the fit
has no parameters for them).
"""

from __future__ import annotations

from dataclasses import replace

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..clusters import ClusterCounts
from ..comparisons import Comparisons, aggregate_cells
from ..errors import DataError, DataWarning, HJAError, ParameterError, warn
from ..hja.inputs import LEFT_OUT_ON_REQUEST
from ..likelihood import cells_of, counts_for, judge_totals
from ..likelihood.terms import design_of
from ..names import name_key
from ..summary import number
from ..verdicts import scale_of
from ..hja.refine import refine, refined_state

__all__ = ["merge_comparisons", "newcomers", "refit_from", "refit_with_newcomers",
           "update_fit"]


def _codes(names, known) -> np.ndarray:
    lookup = {n: i for i, n in enumerate(known)}
    return np.array([lookup[n] for n in names], dtype=np.int64)


def _extended(known: tuple[str, ...], names) -> tuple[str, ...]:
    """``known`` followed by the names it lacks, in their order (old codes stay valid)."""
    have = set(known)
    return tuple(known) + tuple(n for n in names if n not in have)


def merge_comparisons(old: Comparisons, new: Comparisons) -> Comparisons:
    """The cells of ``old`` with ``new``'s verdicts added.

    The judges and items are ``old``'s, followed by those only ``new`` names (in its order).

    Raises
    ------
    DataError
        When ``new`` uses another verdict scale, lacks the prompts that ``old`` carries (or
        carries prompts that ``old`` lacks), or carries style features.
    """
    if not isinstance(new, Comparisons):
        raise ParameterError(f"new data must be Comparisons or a DataFrame of verdicts, got "
                             f"{type(new).__name__}")
    if new.categories != old.categories:
        finer = len(new.categories) > len(old.categories) == 3
        raise DataError(f"the new verdicts use the scale {list(new.categories)}, the fit's data "
                        f"{list(old.categories)}: "
                        + ("collapse them to three outcomes first (Comparisons.collapsed()), or "
                           "fit all the verdicts afresh on the finer scale"
                           if finer else "fit all the verdicts afresh on one scale"))
    if new.order_known != old.order_known:
        raise DataError("the new data and the fit's data disagree on whether presentation "
                        "order is known")
    if (new.clusters is None) != (old.clusters is None):
        have = "carry" if old.clusters is not None else "do not carry"
        raise DataError(f"the fit's data {have} prompts (clusters) and the new data "
                        f"{'do not' if old.clusters is not None else 'do'}: read both alike")
    if old.feature_names or new.feature_names:
        raise DataError("update does not merge style features (their transform depends on the "
                        "whole data): refit on all the verdicts (fit_hja, or 'hja-bayes fit')")
    judges, items = _extended(old.judges, new.judges), _extended(old.items, new.items)
    jmap, imap = _codes(new.judges, judges), _codes(new.items, items)
    new_cells = (jmap[new.judge], imap[new.first], imap[new.second])
    names = cluster = None
    if old.clusters is not None:
        names = list(old.clusters.names)
        index = {n: i for i, n in enumerate(names)}
        for n in new.clusters.names:
            if n not in index:
                index[n] = len(names)
                names.append(n)
        cluster = np.array([index[n] for n in new.clusters.names], dtype=np.int64)
        _warn_near_prompts(old.clusters.names, names[len(old.clusters.names):])
        _warn_repeated_entries(old, new, new_cells, cluster, len(judges), len(items))
    merged = _merged_in_order(old, new, new_cells, names, cluster, judges, items)
    if merged is not None:
        return merged if merged.order_known else merged.fold_order()
    # cells not in the readers' order: aggregate everything again
    cells = (old.judge, old.first, old.second, old.counts)
    added = (*new_cells, new.counts)
    if old.clusters is None:
        rows = [np.concatenate(pair) for pair in zip(cells, added)]
        cluster = None
    else:
        oc, nc = old.clusters, new.clusters
        rows = [np.concatenate([a[oc.cell], b[nc.cell]]) for a, b in zip(cells[:3], added[:3])]
        rows.append(np.concatenate([oc.counts, nc.counts]))
        cluster = np.concatenate([oc.cluster, cluster[nc.cluster]])
    merged = aggregate_cells(judges, items, *rows[:3], rows[3], cluster=cluster,
                             cluster_names=names, **_record(old, new))
    # folded data hold each pair once, first < second: the new cells may come the other way
    return merged if merged.order_known else merged.fold_order()


def _warn_repeated_entries(old, new, new_cells, cluster, n_judges: int, n_items: int) -> None:
    """Warn where new verdicts fall on (prompt, judge, ordered pair) entries that ``old``
    holds while ``old`` has one verdict per entry: verdicts read again count twice, and
    the merge cannot tell them from new ones."""
    oc, nc = old.clusters, new.clusters
    if not len(oc.cell) or oc.n.max() > 1:
        return

    def keys(prompt, judge, first, second):
        return ((prompt * n_judges + judge) * n_items + first) * n_items + second

    held = keys(oc.cluster, old.judge[oc.cell], old.first[oc.cell], old.second[oc.cell])
    judge, first, second = (c[nc.cell] for c in new_cells)
    again = np.isin(keys(cluster[nc.cluster], judge, first, second), held)
    if again.any():
        warn(f"{number(nc.n[again].sum())} of the {number(nc.n.sum())} new verdicts fall on "
             "(prompt, judge, ordered pair) entries the fit's data already hold, where they "
             "held one verdict each: new verdicts there are fine, but verdicts the fit already "
             "counted, read again, now count twice (an update cannot tell them apart)",
             DataWarning)


def _record(old: Comparisons, new: Comparisons) -> dict:
    """What the merged data say about their reading: both sides' tallies, ``old``'s scale."""
    return dict(
        categories=old.categories, order_known=old.order_known,
        rows_read=old.rows_read + new.rows_read, rows_used=old.rows_used + new.rows_used,
        rejected={r: old.rejected.get(r, 0) + new.rejected.get(r, 0)  # old's order, then new's
                  for r in dict.fromkeys([*old.rejected, *new.rejected])},
        # judges every row of which was rejected, on both sides, unless the other has theirs
        dropped_judges=tuple(j for j in dict.fromkeys([*old.dropped_judges, *new.dropped_judges])
                             if j not in set(old.judges) | set(new.judges)),
        cluster_column=old.cluster_column or new.cluster_column,  # an earlier save lacks it
        rejected_by_judge={j: old.rejected_by_judge.get(j, 0) + new.rejected_by_judge.get(j, 0)
                           for j in dict.fromkeys([*old.rejected_by_judge,
                                                   *new.rejected_by_judge])})


def _insert_sorted(keys: np.ndarray, extra: np.ndarray):
    """``(at, added)``: the keys of ``extra`` missing from the strictly increasing ``keys``
    (sorted, unique) and where :func:`numpy.insert` puts them."""
    u = np.unique(extra)
    pos = np.searchsorted(keys, u)
    known = (pos < len(keys)) & (keys[np.minimum(pos, len(keys) - 1)] == u)
    return pos[~known], u[~known]


def _insert_rows(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``np.insert(a, at, 0, axis=0)`` for a 2-d array, its rows inserted as single items
    (a row's bytes viewed as one void): NumPy's axis-0 insert takes five times as long (2.7
    against 0.5 ms for 200,000 rows of three counts)."""
    a = np.ascontiguousarray(a)
    row = np.dtype((np.void, a.dtype.itemsize * a.shape[1]))
    zero = np.zeros(a.shape[1], dtype=a.dtype).view(row)[0]
    return np.insert(a.view(row).ravel(), at, zero).view(a.dtype).reshape(-1, a.shape[1])


def _merged_in_order(old, new, new_cells, names, cluster, judges,
                     items) -> Comparisons | None:
    """The merge when ``old``'s cells (and prompt entries) are in the readers' order, strictly
    increasing keys: the few new keys are inserted, nothing is sorted again (None otherwise).
    The same cells, entries and order as :func:`aggregate_cells` on all the rows."""
    N = len(items)
    old_keys = (old.judge * N + old.first) * N + old.second
    if np.any(np.diff(old_keys) <= 0):
        return None
    new_keys = (new_cells[0] * N + new_cells[1]) * N + new_cells[2]
    at, added = _insert_sorted(old_keys, new_keys)
    keys = np.insert(old_keys, at, added)
    new_at = np.searchsorted(keys, new_keys)
    counts = _insert_rows(old.counts, at)
    np.add.at(counts, new_at, new.counts)
    cells = dict(judge=np.insert(old.judge, at, added // (N * N)),
                 first=np.insert(old.first, at, (added // N) % N),
                 second=np.insert(old.second, at, added % N))
    clusters = None
    if names is not None:
        oc, nc, m = old.clusters, new.clusters, len(keys)
        old_cell = oc.cell + np.searchsorted(added, old_keys)[oc.cell]  # old cells' new places
        old_entries = oc.cluster * m + old_cell
        if oc.features is not None or np.any(np.diff(old_entries) <= 0):
            return None
        new_entries = cluster[nc.cluster] * m + new_at[nc.cell]
        at, added = _insert_sorted(old_entries, new_entries)
        entry_counts = _insert_rows(oc.counts, at)
        np.add.at(entry_counts, np.searchsorted(np.insert(old_entries, at, added), new_entries),
                  nc.counts)
        clusters = ClusterCounts(tuple(names), np.insert(oc.cluster, at, added // m),
                                 np.insert(old_cell, at, added % m), entry_counts, None)
    return Comparisons(judges=judges, items=items, **cells, counts=counts,
                       clusters=clusters, **_record(old, new))


def _as_comparisons(new_data, old: Comparisons, read_options: dict) -> Comparisons:
    if isinstance(new_data, Comparisons):
        if read_options:  # they had been ignored
            raise ParameterError(f"{', '.join(sorted(read_options))}: options of reading a "
                                 "frame of verdicts, and new_data are Comparisons, already read")
        return new_data
    if isinstance(new_data, pd.DataFrame) or hasattr(new_data, "to_pandas"):
        options = dict(read_options)
        if old.clusters is not None and "cluster" not in options:
            column = old.cluster_column
            if column is None or column not in new_data.columns:
                where = "" if column is None else f" (column {column!r}, which the frame lacks)"
                named = ("cluster='prompt' (next_comparisons names it so)"
                         if "prompt" in new_data.columns else "cluster=<column>")
                raise ParameterError(f"the fit's data carry prompts{where}: pass {named} so "
                                     "the new verdicts get theirs")
            options["cluster"] = column
        if "scale" not in options:  # numeric verdicts on the fit's scale
            options["scale"] = scale_of(old.categories)
        import warnings

        with warnings.catch_warnings():  # a small batch has few verdicts per judge by nature
            warnings.filterwarnings("ignore", message=r".*judges in column .* with a median of")
            return Comparisons.from_frame(new_data, **options)
    raise ParameterError(f"new_data must be Comparisons or a DataFrame of verdicts, got "
                         f"{type(new_data).__name__}")


@one_blas_thread
def update_fit(fit, new_data, *, tol: float = 1e-10, max_iter: int = 2000, **read_options):
    """The fit with ``new_data``'s comparisons added, warm-started at the fit.

    Parameters
    ----------
    fit : HJAFit
    new_data : Comparisons or DataFrame
        New verdicts: new cells and new prompts are fine, and so are new judges and models
        (then the model is fitted afresh to all the verdicts at the fit's rank and terms,
        :func:`refit_with_newcomers`: a warm start needs the fit's own parameters).  A
        DataFrame is read by :meth:`Comparisons.from_frame` with
        ``read_options``; by default its prompts from the fit's prompt column
        (``cluster=``) and numeric verdicts on the fit's scale (``scale=``).  Every verdict
        is added: one the fit already holds counts twice (the fit keeps counts, not rows).
    tol, max_iter
        The solver's stopping rule (``fit_hja``'s defaults).

    Returns
    -------
    HJAFit
        At the fit's rank, terms, outcome model and ridge, on the merged data; equal to a
        full refit of the merged data at that rank to the solver's tolerance.
        ``rank_table`` is dropped (it described the old data); ``excluded_judges`` is kept.

    Raises
    ------
    DataError
        Another verdict scale, prompts on one side only, style features, or verdicts by a
        judge the fit left out by its rules (those of a judge left out on request,
        ``leave_out=``, are left out too, with a DataWarning).
    """
    from ..hja.result import HJAFit

    if not isinstance(fit, HJAFit):
        raise ParameterError(f"update needs an HJAFit, got {type(fit).__name__}")
    new = _as_comparisons(new_data, fit.data, read_options)
    left_out = sorted(set(new.judges) & set(fit.excluded_judges))
    asked = [j for j in left_out if fit.excluded_judges[j] == LEFT_OUT_ON_REQUEST]
    if asked:  # left out on request: their new verdicts are too, and said so
        kept = [j for j in new.judges if j not in asked]
        if not kept:
            raise DataError(f"every new verdict is by a judge the fit leaves out on request "
                            f"({asked})")
        warn(f"{number(new.comparisons_per_judge()[[new.judges.index(j) for j in asked]].sum())}"
             f" new comparisons by {asked} left out, as the fit leaves those judges out on "
             "request", DataWarning)
        new, left_out = new.select_judges(kept), [j for j in left_out if j not in asked]
    if left_out:
        raise DataError(f"the fit left out the judges {left_out} "
                        f"({fit.excluded_judges[left_out[0]]}): refit on all the verdicts "
                        "(fit_hja, or 'hja-bayes fit')")
    data = merge_comparisons(fit.data, new)
    if data.judges != fit.data.judges or data.items != fit.data.items:
        _warn_near_names(fit, newcomers(fit, data))
        return refit_with_newcomers(fit, data, tol=tol, max_iter=max_iter)
    return refit_from(fit, data, tol=tol, max_iter=max_iter)


def newcomers(fit, data: Comparisons) -> dict[str, list[str]]:
    """The judges and models of ``data`` that ``fit`` has not seen (``{"judges": [...],
    "models": [...]}``, empty lists where there are none): not the judges it left out."""
    seen = set(fit.judges) | set(getattr(fit, "excluded_judges", None) or {})
    return {"judges": [j for j in data.judges if j not in seen],
            "models": [i for i in data.items if i not in fit.items]}


def _warn_near_names(fit, new: dict[str, list[str]]) -> None:
    """A DataWarning for new judges or models named like one the fit has (alike once case
    and everything but letters and digits are dropped: ``gpt-35-turbo``, ``GPT-3.5 Turbo``
    for ``gpt-3.5-turbo``): such a slip would otherwise add a model silently.  (Names one
    letter apart are often other versions, ``claude-v2`` beside ``claude-v1``: not named.)"""
    def key(name):
        return "".join(ch for ch in name.casefold() if ch.isalnum())

    near = []
    for what, known in (("judges", list(fit.judges)), ("models", list(fit.items))):
        keys = {key(k): k for k in known}
        for name in new[what]:
            match = keys.get(key(name))
            if match is not None:
                near.append(f"{name!r} (the fit's {match!r})")
    if near:
        warn(f"new names like ones the fit has: {', '.join(near)}: typos? They are added as "
             "new judges or models; correct them in the new verdicts if they are the same",
             DataWarning)


def _warn_near_prompts(known, added) -> None:
    """A DataWarning for new prompt ids written like one the fit has (``"155.0"`` for
    ``"155"``, as pandas writes an id column with a gap): added as new prompts, they would
    count as independent of the fit's and narrow the cluster-robust intervals silently."""
    if not added:  # the keys of every known prompt are not needed (0.6 ms of 2.3 at N=12)
        return
    keys = {name_key(k): k for k in known}
    near = [(name, keys[name_key(name)]) for name in added if name_key(name) in keys]
    if near:
        shown = ", ".join(f"{a!r} (the fit's {b!r})" for a, b in near[:3])
        warn(f"{len(near)} new prompt id(s) written like ones the fit has: {shown}"
             + (" and more" if len(near) > 3 else "") + ": they are added as new prompts; "
             "write them as the fit's data do if they are the same prompts", DataWarning)


def refit_with_newcomers(fit, data: Comparisons, *, tol: float = 1e-10, max_iter: int = 2000):
    """``fit``'s model (rank, position bias, self-preference, outcome model, ridge) fitted
    afresh to ``data``, which add judges or models: :func:`~hja_bayes.hja.fit_hja`, whose
    rules (judges with too few comparisons, a comparison graph that falls apart) apply to
    the newcomers as to a first fit.  The judges the fit left out stay out."""
    from ..hja.fit import fit_hja

    position = next((t for t in fit.terms if t.name == "position"), False)
    own = next((t for t in fit.terms if t.name == "self"), None)
    new_fit = fit_hja(data, fit.rank, position_bias=position, self_preference=own,
                      ridge=fit.ridge, outcome=fit.outcome, tol=tol, max_iter=max_iter)
    return replace(new_fit, rank_table=None,
                   excluded_judges={**fit.excluded_judges, **new_fit.excluded_judges})


def refit_from(fit, data: Comparisons, *, tol: float = 1e-10, max_iter: int = 2000):
    """``fit``'s model fitted to ``data`` (the fit's judges and items), started at ``fit``.

    Fisher scoring on the chart (:func:`~hja_bayes.hja.refine.refine`) from the fit's
    estimates; should it fail (a rank collapse, a singular information, no progress), the
    proximal solver from the fit's state.
    """
    from ..hja.solve import SolveResult, make_fit, solve, warn_not_converged
    from ..hja.state import SolverState

    outcome = fit.outcome_model
    design = design_of(data, fit.terms)
    with np.errstate(divide="ignore"):
        log_aux = np.log(np.asarray(fit.aux, dtype=float)) if outcome.n_aux else None
    if log_aux is not None:  # a judge held at nu = 0 (it never tied) that ties now: freed,
        start = outcome.initial_aux(  # from the standard start (held, every tie had been lost)
            judge_totals(data.judge, counts_for(data.counts, outcome), data.n_judges))
        log_aux = np.where(np.isinf(log_aux) & np.isfinite(start), start, log_aux)
    try:
        done = refine(data, fit.S, fit.coef, fit.theta, outcome, log_aux, fit.terms, fit.rank,
                      fit.ridge, tol=tol)
    except HJAError:
        done = None
    if done is not None and done.converged:  # with the NLL Fisher scoring computed last
        result = SolveResult(refined_state(done, fit.tau), done.n_iter, True)
        cells, nll = None, done.nll
    else:
        cells = cells_of(data, pad=True, outcome=outcome, design=design)
        start = SolverState(jnp.column_stack([fit.gamma, fit.U, fit.coef]),
                            jnp.column_stack([fit.mu, fit.V]), float(fit.tau),
                            None if log_aux is None else jnp.asarray(log_aux),
                            jnp.asarray(fit.theta))
        result = solve(start, cells, fit.rank, ridge=fit.ridge, tol=tol, max_iter=max_iter,
                       outcome=outcome)
        if not result.converged:
            warn_not_converged(fit.rank, result, tol)
        nll = None
    new_fit = make_fit(data, result, fit.rank, fit.terms, design, cells, fit.ridge, None, outcome,
                       nll)
    return replace(new_fit, excluded_judges=dict(fit.excluded_judges))

