"""Bootstrap of a fitted HJA model: resample clusters (prompts) or single comparisons, refit.

Each replicate is warm-started at the original fit, so it costs a fraction of a fit; all
replicates share the fit's padded cell layout and hence its compiled solver step.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..checks import check_integer, check_level
from ..decomposition import canonicalize
from ..errors import (DataWarning, HJAError, HJAWarning, IdentifiabilityError, ParameterError,
                      warn)
from ..inference.information import check_single_prompts
from ..likelihood import cells_of, counts_for
from ..likelihood.terms import design_of
from .refine import SLOW_TERMS, finish, refine
from .result import HJAFit
from .solve import DEFAULT_TAU, fit_rank, make_fit, solve
from .state import SolverState, scores

__all__ = ["Bootstrap", "bootstrap_fit", "refit_without"]

#: Replicates a percentile interval needs beyond each of its limits: with fewer, each limit
#: moves between runs by more than a tenth of the interval's half-width (a normal
#: distribution's 2.5% quantile from n draws has sd ``2.7 sigma / sqrt(n)``: n = 200, 5
#: beyond each limit of a 95% interval, gives 0.19 sigma against a half-width of 1.96 sigma).
MIN_BEYOND = 5


class Bootstrap(NamedTuple):
    """Bootstrap replicates of an HJA fit (one row per replicate).

    Attributes
    ----------
    mu : (n, N)
    gamma : (n, K)
    beta : (n, K)
    S : (n, K, N)
    converged : (n,) bool
    cluster : bool
        Whether clusters (True) or single comparisons (False) were resampled.
    judges, items : tuple of str
    nu : (n, K) or None
        Davidson tie propensities (fits with ``outcome="davidson"``); a judge held at 0 in the
        fit stays at 0.
    unidentified : (n,) bool or None
        Replicates that drew no verdict of some judge or model, or whose models' comparison
        graph fell apart: their estimates rest on the ridge and the warm start, not on data,
        and :meth:`table` leaves them out (:meth:`identified`).
    lacking : tuple of str
        Why, with how many replicates (e.g. ``"model 'x' had no verdicts in 30"``).
    """

    mu: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    S: np.ndarray
    converged: np.ndarray
    cluster: bool
    judges: tuple[str, ...]
    items: tuple[str, ...]
    nu: np.ndarray | None = None
    unidentified: np.ndarray | None = None
    lacking: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """One line: what was resampled and how it went (no arrays)."""
        n = len(self.converged)
        left = int(np.sum(self.unidentified)) if self.unidentified is not None else 0
        return (f"Bootstrap({n:,} replicates resampling "
                f"{'prompts' if self.cluster else 'comparisons'}, "
                f"{int(np.sum(self.converged)):,} converged"
                + (f", {left:,} unidentified" if left else "")
                + f", {len(self.judges)} judges, "
                f"{len(self.items)} models; .table(level) for intervals)")

    def identified(self) -> "Bootstrap":
        """The replicates whose estimates rest on data: unidentified ones (see the class
        notes) left out, with a DataWarning naming who lacked verdicts.

        Raises
        ------
        IdentifiabilityError
            When fewer than two replicates are identified.
        """
        if self.unidentified is None or not np.any(self.unidentified):
            return self
        keep = ~np.asarray(self.unidentified, dtype=bool)
        left, total = int((~keep).sum()), len(keep)
        why = "; ".join(self.lacking)
        if keep.sum() < 2:
            raise IdentifiabilityError(
                f"{left} of {total} bootstrap replicates are unidentified ({why}): "
                "the resampled units are too few for a bootstrap; use the Wald intervals "
                "(fit.intervals()) or the Bayesian model (sample_hja)")
        warn(f"{left} of {total} bootstrap replicates are left out ({why}): their "
             "estimates rest on the ridge, not on data. What is left holds given that every "
             "judge and model is seen; with so few resampled units behind a model or judge its "
             "bootstrap is a rough guide (the cluster-robust intervals, fit.intervals(), or "
             "sample_hja with prompt effects are sounder)", DataWarning)
        per_replicate = ("mu", "gamma", "beta", "S", "converged", "nu", "unidentified")
        return self._replace(**{name: getattr(self, name)[keep] for name in per_replicate
                                if getattr(self, name) is not None})

    def table(self, level: float = 0.95) -> pd.DataFrame:
        """Bootstrap sd and percentile intervals of mu, gamma (and beta when it varies, nu
        with Davidson ties), over the identified replicates (:meth:`identified`).

        Columns: quantity, label, mean, sd, lower, upper.  An HJAWarning says when fewer
        than :data:`MIN_BEYOND` replicates lie beyond each limit (n < 200 at 95%).
        """
        level = check_level(level)
        q = [(1 - level) / 2, (1 + level) / 2]
        kept = self.identified()
        n = len(kept.converged)
        if n * q[0] < MIN_BEYOND - 1e-9:
            warn(f"{n} bootstrap replicates leave {n * q[0]:.2g} beyond each limit of a "
                 f"{level:.0%} percentile interval: its limits are read off the most extreme "
                 f"replicates and move from run to run; {MIN_BEYOND / q[0]:,.0f} or more "
                 "replicates give each limit at least 5 beyond it (bootstrap(n=...))",
                 HJAWarning)
        stuck = int(np.sum(~np.asarray(kept.converged, dtype=bool)))
        if stuck:
            warn(f"{stuck} of {n} bootstrap replicates did not converge and are in the "
                 "table as they stopped (on panels of few verdicts per judge the refits "
                 "wander): read its spread as a rough guide only",
                 HJAWarning)
        frames = []
        for name, draws, labels in (("mu", kept.mu, kept.items), ("gamma", kept.gamma, kept.judges),
                                    ("beta", kept.beta, kept.judges), ("nu", kept.nu, kept.judges)):
            if draws is None or (name == "beta" and not np.any(draws)):
                continue
            lo, hi = np.quantile(draws, q, axis=0)
            frames.append(pd.DataFrame({"quantity": name, "label": list(labels),
                                        "mean": draws.mean(0), "sd": draws.std(0, ddof=1),
                                        "lower": lo, "upper": hi}))
        return pd.concat(frames, ignore_index=True)


def _start(fit: HJAFit) -> SolverState:
    """The solver state of a fit, to warm-start a refit there."""
    with np.errstate(divide="ignore"):
        log_aux = np.log(np.asarray(fit.aux, dtype=float)) if fit.outcome_model.n_aux else None
    return SolverState(jnp.column_stack([fit.gamma, fit.U, fit.coef]),
                       jnp.column_stack([fit.mu, fit.V]), float(fit.tau),
                       None if log_aux is None else jnp.asarray(log_aux), jnp.asarray(fit.theta))


def refit_without(fit: HJAFit, removed, *, tol: float = 1e-10, max_iter: int = 2000) -> HJAFit:
    """The fit refitted without some verdicts, warm-started at it (same rank and terms);
    where that run does not converge, from the standard start instead, if that one does.

    Parameters
    ----------
    fit : HJAFit
    removed : array (units, C)
        Verdicts to take away, per cluster entry (or per cell without clusters) and category
        (see :meth:`~hja_bayes.comparisons.Comparisons.without`).
    tol, max_iter
        Stopping rule of the refit.

    Returns
    -------
    HJAFit
        On the reduced data.

    Raises
    ------
    DataError
        When a judge is left without comparisons or the models' comparison graph falls apart.
    """
    data = fit.data.without(removed)
    data.check_connected()
    outcome = fit.outcome_model
    design = design_of(data, fit.terms)
    cells = cells_of(data, pad=True, outcome=outcome, design=design)
    result = solve(_start(fit), cells, fit.rank, ridge=fit.ridge, tol=tol, max_iter=max_iter,
                   outcome=outcome)
    if not result.converged:  # drifting away from the fit's basin (tiny panels): start afresh
        fresh = fit_rank(data, cells, design, fit.rank, tau=DEFAULT_TAU, ridge=fit.ridge,
                         tol=tol, max_iter=max_iter, warn=False, outcome=outcome)
        if fresh.converged:
            result = fresh
    # with style or self-preference terms, finished as fit_hja finishes them
    return finish(make_fit(data, result, fit.rank, fit.terms, design, cells, fit.ridge, None,
                           outcome), tol=tol)


def _resampled_counts(data, counts, level: str, rng, cluster: bool):
    """Counts per unit (cells or entries, ``counts`` laid out so) of one bootstrap resample,
    and with ``cluster`` each entry's weight (its prompt's draws)."""
    if cluster:  # G draws among the G prompts that hold comparisons (a selection of
        c = data.clusters  # judges may leave some empty)
        held = np.flatnonzero(np.bincount(c.cluster, minlength=c.n_clusters) > 0)
        drawn = np.zeros(c.n_clusters)
        drawn[held] = rng.multinomial(len(held), np.full(len(held), 1.0 / len(held)))
        weight = drawn[c.cluster]
        return _cluster_counts(data, counts, level, weight), weight
    # as many comparisons as there are, each from a unit and category in proportion to its
    # count (a count with a fractional part, ties read as half wins, keeps its weight)
    flat = np.asarray(counts, dtype=np.float64).ravel()
    return rng.multinomial(int(np.rint(flat.sum())), flat / flat.sum()).astype(float).reshape(
        counts.shape), None


def _replicate(data, drawn, weight, level: str):
    """A replicate's data, to finish its fit on: every prompt entry's verdicts counted
    ``weight`` times (a cluster bootstrap), or the counts ``drawn`` per unit (of the
    verdicts collapsed to three outcomes where the outcome model reads them so)."""
    if weight is not None:
        return data.with_counts(np.asarray(data.clusters.counts, dtype=float) * weight[:, None])
    if drawn.shape[1] != data.counts.shape[1]:
        data = data.collapsed()
    return (data if level == "entries" else replace(data, clusters=None)).with_counts(drawn)


def _finished(replicate, fit, S, Z, result, tol: float, converged: bool):
    """A replicate's ``(S, Z, log aux, converged)`` after Fisher scoring from the
    alternation's point (:func:`~hja_bayes.hja.refine.refine`), or as it was where that
    fails."""
    state = result.state
    try:
        done = refine(replicate, np.asarray(S), np.asarray(Z), np.asarray(state.theta),
                      fit.outcome_model, None if state.aux is None else np.asarray(state.aux),
                      fit.terms, fit.rank, fit.ridge, tol=tol)
    except HJAError:
        return S, Z, state.aux, converged
    if not done.converged:
        return S, Z, state.aux, converged
    return done.S, done.Z, done.log_aux, True


def _cluster_counts(data, counts, level: str, weight):
    """Counts per unit of a cluster resample with these entry weights."""
    if level == "entries":
        return counts * weight[:, None]
    c = data.clusters
    entry_counts = counts_for(c.counts, counts.shape[1])
    return np.stack([np.bincount(c.cell, weights=entry_counts[:, a] * weight,
                                 minlength=data.n_cells) for a in range(counts.shape[1])], 1)


@one_blas_thread
def bootstrap_fit(fit: HJAFit, n: int = 200, *, seed: int = 0, cluster: bool = True,
                  tol: float = 1e-9, max_iter: int = 500, progress=None) -> Bootstrap:
    """Bootstrap an HJA fit: resample whole clusters (prompts) or single comparisons, refit.

    Parameters
    ----------
    fit : HJAFit
    n : int
        Replicates.
    seed : int
        Seed of the resampling.
    cluster : bool
        Resample clusters with replacement (needs ``fit.data.clusters``), as a check of the
        cluster-robust intervals; else single comparisons (Chatbot Arena's bootstrap).
        Where a scan kept the prompts in its query engine, each prompt gets a Poisson(1)
        weight per replicate instead, drawn in the engine (the bootstrap at scale; the
        number of prompts then varies around G).
    tol, max_iter
        Stopping rule of each warm-started refit.  With style or self-preference terms each
        replicate is then finished by Fisher scoring, as ``fit_hja`` finishes such fits.
    progress : callable, optional
        Called as ``progress(done, n)`` after each replicate.

    Returns
    -------
    Bootstrap

    Raises
    ------
    ParameterError
        ``cluster=True`` without clusters, or ``n < 2``.
    IdentifiabilityError
        ``cluster=True`` where a model or judge appears on a single prompt (every replicate
        draws that prompt, giving one estimate, or none).
    """
    check_integer(n, "n", 2)
    data = fit.data
    if cluster and data.clusters is None:
        raise ParameterError("cluster=True needs clusters: read the data with cluster=<column>, "
                             "or pass cluster=False to resample single comparisons")
    if cluster:  # a prompt alone behind a model: every replicate draws it or nothing
        check_single_prompts(data, bootstrap=True, count_in_engine=True)
    rng = np.random.default_rng(seed)
    outcome = fit.outcome_model
    design = design_of(data, fit.terms)
    layout = cells_of(data, pad=True, outcome=outcome, design=design)
    m = len(design.X)
    extra = len(layout.judge) - m
    counts = np.asarray(layout.counts)[:m]
    r = fit.rank
    start = _start(fit)
    K, N = len(fit.judges), len(fit.items)
    out = {name: np.empty((n,) + shape) for name, shape in
           (("mu", (N,)), ("gamma", (K,)), ("beta", (K,)), ("S", (K, N)),
            ("nu", (K,) if fit.nu is not None else (0,)))}
    converged = np.empty(n, dtype=bool)
    unidentified = np.zeros(n, dtype=bool)
    lacking = np.zeros(K + N, dtype=np.int64)  # replicates without each judge's, model's verdicts
    split = 0  # replicates whose comparison graph fell apart, everyone seen
    owners = [np.asarray(a)[:m] for a in (layout.judge, layout.first, layout.second)]
    in_engine = cluster and getattr(data.clusters, "in_engine", False)
    if in_engine and design.level != "cells":
        raise ParameterError("terms that vary by prompt (style) need the prompts in memory "
                             "to bootstrap them: scan with incidence='memory'")
    batch = max(1, (1 << 24) // max(1, counts.size))  # replicates drawn by the engine at once
    slow = not in_engine and any(t.name in SLOW_TERMS for t in fit.terms)
    for b in range(n):
        if in_engine:  # Poisson(1) weights per prompt, drawn in the query engine
            if b % batch == 0:
                drawn_batch = data.clusters.poisson_counts(data, min(batch, n - b), seed,
                                                           counts.shape[1], start=b)
            drawn = drawn_batch[b % batch]
        else:
            drawn, weight = _resampled_counts(data, counts, design.level, rng, cluster)
        missing, unidentified[b] = _unseen(drawn, owners, K, N)
        lacking += missing
        split += unidentified[b] and not missing.any()
        cells = layout._replace(counts=jnp.asarray(np.concatenate(
            [drawn, np.zeros((extra, drawn.shape[1]))])))
        result = solve(start, cells, r, ridge=fit.ridge, tol=tol, max_iter=max_iter,
                       outcome=outcome)
        S, Z = scores(result.state.B, result.state.T)
        aux, converged[b] = result.state.aux, result.converged
        if slow:  # finished as fit_hja finishes such fits
            replicate = _replicate(data, drawn, weight, design.level)
            S, Z, aux, converged[b] = _finished(replicate, fit, S, Z, result, tol,
                                                converged[b])
        d = canonicalize(S, 0)
        out["mu"][b], out["gamma"][b] = d.mu, d.gamma
        position = design.column("position")
        out["beta"][b] = 0.0 if position is None else np.asarray(Z)[:, position]
        out["S"][b] = np.asarray(S) - np.asarray(S).mean(1, keepdims=True)
        if fit.nu is not None:
            out["nu"][b] = np.exp(np.asarray(aux))[:, outcome.aux_names.index("nu")]
        if progress is not None:
            progress(b + 1, n)
    names = [f"judge {j!r}" for j in fit.judges] + [f"model {i!r}" for i in fit.items]
    return Bootstrap(out["mu"], out["gamma"], out["beta"], out["S"], converged, cluster,
                     fit.judges, fit.items, out["nu"] if fit.nu is not None else None,
                     unidentified,
                     tuple(f"{names[w]} had no verdicts in {lacking[w]:,}"
                           for w in np.flatnonzero(lacking))
                     + ((f"the models' comparison graph fell apart in {split:,}",) if split else ()))


def _unseen(drawn, owners, K: int, N: int) -> tuple[np.ndarray, bool]:
    """Which judges and models (K + N flags) a replicate's counts leave without verdicts,
    and whether the replicate is unidentified (those, or a pooled comparison graph that
    falls apart)."""
    from scipy.sparse.csgraph import connected_components

    from ..graphs import item_graph

    judge, first, second = owners
    seen = np.asarray(drawn).sum(1) > 0
    missing = np.concatenate([np.bincount(judge[seen], minlength=K) == 0,
                              np.bincount(np.concatenate([first[seen], second[seen]]),
                                          minlength=N) == 0])
    if missing.any():
        return missing, True
    parts = connected_components(item_graph(first[seen], second[seen], N), directed=False)[0]
    return missing, bool(parts > 1)
