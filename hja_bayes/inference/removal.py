"""The machinery of the fragility audit: removable units, their one-step effects on a margin,
and the greedy search confirmed by refits (:mod:`~hja_bayes.inference.fragility` states the
method and holds the targets)."""

from __future__ import annotations

import itertools
import warnings
from typing import NamedTuple

import numpy as np

from ..errors import DataError, HJAError, HJAWarning, IdentifiabilityError
from ..likelihood import category_derivatives
from .information import Model

__all__ = ["Search", "Units", "units_of"]


class Units(NamedTuple):
    """The removable verdicts: per unit (a cell, or a (prompt, cell) entry when the terms vary
    by prompt) and data category, and how a removal reaches the refit (entry counts)."""

    counts: np.ndarray  # (U, C) verdicts per unit and data category
    level: str  # "cells" or "entries": what a unit is
    cell: np.ndarray  # (U,) cell of each unit
    entries: np.ndarray | None  # (E, C) entry counts of the data (None without prompts)
    entry_cell: np.ndarray | None
    entry_cluster: np.ndarray | None
    n_clusters: int

    def to_entries(self, removed: np.ndarray) -> np.ndarray:
        """Unit-level removals as the refit takes them (entries, or cells without prompts);
        a cell's verdicts are taken from its entries in their stored order."""
        if self.entries is None or self.level == "entries":
            return removed
        out = np.zeros_like(self.entries)
        for u, c in zip(*np.nonzero(removed)):
            need = removed[u, c]
            for e in np.flatnonzero(self.entry_cell == u):
                take = min(need, self.entries[e, c])
                out[e, c] += take
                need -= take
                if need <= 0:
                    break
        return out


def units_of(fit) -> Units:
    """The fit's units (cells, or prompt entries where a term needs them) with their
    counts and prompts."""
    data = fit.data
    c = data.clusters
    level = "entries" if any(getattr(t, "needs_entries", False) for t in fit.terms) else "cells"
    if c is None:
        counts = np.asarray(data.counts, dtype=float)
        return Units(counts, "cells", np.arange(len(counts)), None, None, None, 0)
    entries = np.asarray(c.counts, dtype=float)
    if level == "entries":
        return Units(entries, level, np.asarray(c.cell), entries, np.asarray(c.cell),
                      np.asarray(c.cluster), c.n_clusters)
    return Units(np.asarray(data.counts, dtype=float), level, np.arange(data.n_cells), entries,
                  np.asarray(c.cell), np.asarray(c.cluster), c.n_clusters)


def _category_map(data_categories: int, model_categories: int) -> np.ndarray:
    """Model category of every data category (identity, or the collapse to three)."""
    if data_categories == model_categories:
        return np.arange(data_categories)
    half = data_categories // 2
    out = np.full(data_categories, 2)
    out[:half] = 0
    if data_categories % 2:
        out[half] = 1
    return out


def _influence(current, original, Z: np.ndarray, inf, level: str) -> np.ndarray:
    """Change of each margin from removing one verdict of each (unit, data category) of
    ``original`` (its cells or entries, ``level``), at the fit ``current``: (U, C, q).

    One Newton step with the information updated for the removal (Sherman-Morrison-Woodbury):
    ``-grad t^T (I - J^T A J)^-1 J^T g = -(J v)^T (1 - A K)^-1 g`` with ``v = I^-1 grad t``,
    ``J`` the verdict's derivative of (eta, aux) in the chart, ``g`` and ``A`` the score and
    minus the Hessian of its log-likelihood in (eta, aux), and ``K = J I^-1 J^T`` its
    leverage.  Without the leverage this is the first-order influence ``-grad t^T I^-1 s``;
    with it, the verdicts that alone inform a direction (a cell seen once) are not
    underrated.
    """
    from scipy.linalg import solve_triangular

    from .clusters import _rows

    chart = inf.chart
    C_ = inf._constraints
    V = solve_triangular(inf.factor, Z, lower=True, trans="T", check_finite=False)
    V = V - C_ @ (C_.T @ V)  # (dim, q): I^-1 grad t in the factor coordinates
    model = Model(original, current.S, current.coef, current.theta, current.outcome_model,
                  None if current.aux is None else _log(current.aux), current.terms)
    units, design, eta, aux = model.units(level)
    eta_cols, aux_cols = chart.local_columns()
    E = len(units.judge)
    L = 1 + chart.n_aux
    direction = np.empty((E, L, V.shape[1]))
    K = np.empty((E, L, L))
    step = max(1, (1 << 21) // (L * chart.dim))
    for start in range(0, E, step):
        index = np.arange(start, min(E, start + step))
        J = _rows(chart, units, design, index, eta_cols, aux_cols)  # (n, L, dim)
        direction[index] = J @ V
        X = J.reshape(-1, chart.dim)
        X = X - (X @ C_) @ C_.T
        W = solve_triangular(inf.factor, X.T, lower=True, check_finite=False)
        W = W.T.reshape(len(index), L, chart.dim)
        K[index] = W @ np.swapaxes(W, 1, 2)
    grad, neg_hess = category_derivatives(model.outcome, eta, aux)  # (E, Cm, L), (E, Cm, L, L)
    inner = np.eye(L) - neg_hess @ K[:, None]  # (E, Cm, L, L)
    if L == 1:
        inner = np.maximum(inner, 0.02)
    adjusted = np.linalg.solve(inner, grad[..., None])[..., 0]  # (1 - A K)^-1 g
    per_model = -np.einsum("ecl,elq->ecq", adjusted, direction)
    mapping = _category_map(original.counts.shape[1], grad.shape[1])
    return per_model[:, mapping, :]


def _prompt_influence(current, Z: np.ndarray, inf) -> np.ndarray:
    """Change of each margin from removing each prompt of ``current.data`` (G, q): one
    Newton step with the information less the prompt's,
    ``-z^T (I - Y_g Y_g^T)^-1 r_g`` in whitened coordinates (``r_g`` the prompt's score)."""
    from .clusters import cluster_design

    model = Model(current.data, current.S, current.coef, current.theta, current.outcome_model,
                  None if current.aux is None else _log(current.aux), current.terms)
    d = cluster_design(model, inf.chart, inf.factor, inf._constraints)
    lev = d.sigma ** 2
    boost = lev / np.maximum(1 - lev, 0.02)
    UZ = d.U.T @ Z  # (R, q)
    Ur = np.einsum("dr,dr->r", d.U, d.raw[:, d.cluster])  # U_col^T r_g of its cluster
    extra = np.zeros((d.n_clusters, Z.shape[1]))
    np.add.at(extra, d.cluster, UZ * (boost * Ur)[:, None])
    return -(d.raw.T @ Z) - extra


def _log(aux):
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(aux, dtype=float))


class Search:
    """Greedy removal with refits for one goal of the audit (an object with ``margins(fit)
    -> (values (q,), whitened gradients (dim, q), inference)``, ``achieved(refit) -> bool``):
    :meth:`run`, then :meth:`shorten`."""

    def __init__(self, fit, goal, unit: str, refit, max_refits: int, max_share: float):
        self.fit, self.goal, self.unit, self.refit_fn = fit, goal, unit, refit
        self.units = units_of(fit)
        self.max_refits, self.max_share = max_refits, max_share
        self.refits = 0
        self.order: list = []  # (unit, category) or prompt, in order of removal

    @property
    def n_units(self) -> int:
        """How many units can be removed: verdicts, or prompts."""
        return self.units.counts.size if self.unit == "verdict" else self.units.n_clusters

    def multiplicity(self) -> np.ndarray:
        """How often each unit can be removed (flat over (unit, category) for verdicts)."""
        if self.unit == "verdict":
            return self.units.counts.ravel().copy()
        return np.ones(self.units.n_clusters)

    def flat(self, u: int):
        """A flat removal index as a unit: (unit, category) for verdicts, else the prompt."""
        C = self.units.counts.shape[1]
        return (int(u // C), int(u % C)) if self.unit == "verdict" else int(u)

    def index(self, u) -> int:
        """The flat removal index of a unit (the inverse of :meth:`flat`)."""
        return u[0] * self.units.counts.shape[1] + u[1] if self.unit == "verdict" else u

    def removed_counts(self, order) -> np.ndarray:
        """What the refit takes: verdicts per entry (or cell) and category."""
        if self.unit == "verdict":
            removed = np.zeros_like(self.units.counts)
            for u, c in order:
                removed[u, c] += 1
            return self.units.to_entries(removed)
        take = np.isin(self.units.entry_cluster, list(order))
        removed = np.zeros_like(self.units.entries)
        removed[take] = self.units.entries[take]
        return removed

    def achieved(self, order) -> tuple[bool, object]:
        """Refit without ``order`` (warnings of the refit kept quiet) and check the goal."""
        self.refits += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HJAWarning)
            try:
                f = self.refit_fn(self.removed_counts(order))
            except (DataError, IdentifiabilityError):
                return False, None
            try:
                return bool(self.goal.achieved(f)), f
            except HJAError:
                return False, f

    def effects(self, current):
        """The margins at ``current`` and every unit's predicted change of them, flat
        (n_units, q)."""
        values, Z, inf = self.goal.margins(current)
        if self.unit == "prompt":
            return values, _prompt_influence(current, Z, inf)
        delta = _influence(current, self.fit.data, Z, inf, self.units.level)
        return values, delta.reshape(-1, delta.shape[-1])

    def extend(self, values, delta, limit: int) -> tuple[list, bool]:
        """Units to add (greedy on the largest margin) until every predicted margin is
        below 0; and whether that was reached."""
        left = self.multiplicity()
        for u in self.order:
            left[self.index(u)] -= 1
        margin = values.astype(float).copy()
        added = []
        if delta.shape[1] == 1:  # one margin: sort once
            d = delta[:, 0]
            for u in np.argsort(d, kind="stable"):
                if d[u] >= 0 or margin[0] < 0 or len(added) >= limit:
                    break
                if left[u] <= 0:
                    continue
                take = int(min(left[u], max(1, np.ceil((margin[0] + 1e-12) / -d[u])),
                               limit - len(added)))
                added += [self.flat(u)] * take
                margin[0] += take * d[u]
            return added, bool(margin[0] < 0)
        while np.max(margin) >= 0 and len(added) < limit:
            after = np.max(margin[None, :] + delta, axis=1)
            after[left <= 0] = np.inf
            u = int(np.argmin(after))
            if not np.isfinite(after[u]) or after[u] >= np.max(margin):
                break
            added.append(self.flat(u))
            left[u] -= 1
            margin = margin + delta[u]
        return added, bool(np.max(margin) < 0)

    def limit(self) -> int:
        """The most units the search may remove (``max_share`` of them, at least one)."""
        total = self.units.counts.sum() if self.unit == "verdict" else self.units.n_clusters
        return max(1, int(self.max_share * total))

    def run(self):
        """A confirmed removal order and its refit, or (None, None)."""
        current = self.fit
        budget = self.refits + self.max_refits
        while self.refits < budget:
            values, delta = self.effects(current)
            added, reached = self.extend(values, delta, self.limit() - len(self.order))
            if not added:
                return None, None
            if not reached:  # the linear prediction falls short of the goal: half the way,
                # then linearise again (near a separated model the effects grow as it goes)
                added = added[: (len(added) + 1) // 2]
            self.order += added
            ok, refit = self.achieved(self.order)
            if ok:
                return self.order, refit
            if refit is None or len(self.order) >= self.limit():
                return None, None
            current = refit
        return None, None

    def shorten(self, order, refit, predicted=None, small: int = 4):
        """The shortest prefix of ``order`` that still works (bisection), less the units it
        does not need (:meth:`prune`); then, when it or the first linear prediction is at
        most ``small`` units, combinations of up to that many (:meth:`smaller`)."""
        lo, hi = 0, len(order)  # a prefix of length hi works
        budget = self.refits + self.max_refits
        while hi - lo > 1 and self.refits < budget:
            mid = (lo + hi) // 2
            ok, f = self.achieved(order[:mid])
            if ok:
                hi, refit = mid, f
            else:
                lo = mid
        order, refit = self.prune(order[:hi], refit)
        if len(order) > 1 and min(len(order), predicted or len(order)) <= small:
            order, refit = self.smaller(order, refit, min(len(order) - 1, small))
        return order, refit

    def prune(self, order, refit):
        """``order`` less the units the change does not need: each member, the least
        influential first (by the linear prediction at the fit: at a refit the removed
        prompts have no verdicts left to score), is put back and kept back if the goal still
        holds (a refit each).  Removal by prefixes keeps units that later ones made
        unnecessary (tiny panels: 15 verdicts reported where 3 sufficed)."""
        budget = self.refits + self.max_refits
        score = np.max(self.effects(self.fit)[1], axis=1)
        for u in sorted(dict.fromkeys(order), key=lambda u: -score[self.index(u)]):
            while u in order and len(order) > 1 and self.refits < budget:
                rest = list(order)
                rest.remove(u)
                ok, f = self.achieved(rest)
                if not ok:
                    break
                order, refit = rest, f
        return order, refit

    def smaller(self, order, refit, largest: int, pool: int = 16, tries: int = 10):
        """Fewer units: the ``pool`` most influential ones (by the linear prediction) are
        each removed alone and refitted; their exact effects, added up, rank the combinations
        of up to ``largest`` units, and the best ``tries`` of each size are refitted."""
        values, delta = self.effects(self.fit)
        left = self.multiplicity()
        score = np.max(delta, axis=1)
        members = {self.index(u) for u in order}
        ranked = [u for u in np.argsort(score, kind="stable") if left[u] > 0][:pool]
        candidates = list(dict.fromkeys(ranked + sorted(members)))
        exact = {}
        budget = self.refits + self.max_refits
        for u in candidates:
            if self.refits >= budget:
                break
            ok, f = self.achieved([self.flat(u)])
            if ok:
                return [self.flat(u)], f
            if f is not None:
                values_f, _, _ = self.goal.margins(f)
                exact[u] = values_f - values
        usable = [u for u in candidates if u in exact]
        for size in range(2, largest + 1):
            combos = [c for c in itertools.combinations_with_replacement(usable, size)
                      if all(c.count(u) <= left[u] for u in set(c))]
            predicted = [np.max(values + sum(exact[u] for u in c)) for c in combos]
            for n, pos in enumerate(np.argsort(predicted, kind="stable")):
                if n >= tries or self.refits >= budget:
                    break
                ok, f = self.achieved([self.flat(u) for u in combos[pos]])
                if ok:
                    return [self.flat(u) for u in combos[pos]], f
        return order, refit
