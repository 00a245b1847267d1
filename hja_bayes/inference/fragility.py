"""How few verdicts or prompts hold a ranking up: an influence-guided search, checked by refits.

Broderick, Giordano and Meager's approximate maximum influence perturbation, with every answer
confirmed exactly.  For a *margin* ``t(theta)`` that is positive now and whose sign change is
the event of interest (``mu_top - mu_j``: j would rank above the leader), the effect of
removing one unit u (one verdict, or one prompt with all its verdicts) is, to first order,

    delta_u = -grad t^T I^-1 s_u,

``s_u`` the unit's score and ``I`` the Fisher information of the fit (in its chart).  The
search removes the units of most negative ``delta_u`` until the predicted margin falls below
zero, refits exactly without them (warm-started, as a bootstrap replicate is), and, if the
order has not changed, linearises again at that refit and goes on.  A confirmed set is then
shortened: the shortest prefix of the removal order that still changes the order (bisection),
and, for a handful of units, smaller combinations of the most influential units, each
checked by a refit.  The answer is the set found, not a proven minimum: a smaller set may
exist, which is why the search reports what the refit confirmed and nothing stronger.

Units.  Verdicts are aggregated into (prompt, judge, first, second) entries with counts per
category before fitting, so the rows they came from are not kept: a removed verdict is named
by its entry and category (``prompt`` is None without prompts), and verdicts of one entry and
category are interchangeable.  With ``unit="prompt"`` a unit is a prompt with all its
verdicts.

Targets.  ``"top"``: another model first (each challenger's margin ``mu_top - mu_j`` is tried,
the cheapest first); ``(a, b)``: the order of a and b reversed; ``"tiers"``: the top tier of
the leaderboard (joint rank intervals, :func:`~hja_bayes.ranking.rank_intervals`, with the
fit's default covariance) gains the next model (every separating margin
``d_mo - c se_mo`` pushed below 0, with ``c`` and the standard errors held at their values)
or loses its cohesion (one pair's ``c se_ab - |d_ab|`` below 0); the refit recomputes the tiers.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Callable, NamedTuple

import numpy as np
import pandas as pd

from ..checks import check_choice, index_of
from ..errors import DataError, HJAError, HJAWarning, IdentifiabilityError, ParameterError
from ..likelihood import category_derivatives
from .information import Model, _columns

__all__ = ["Fragility", "fragility"]

UNITS = ("verdict", "prompt")


class Fragility(NamedTuple):
    """The answer of :func:`fragility`.

    Attributes
    ----------
    target : str
        What was asked ("top", "tiers", or "a vs b").
    unit : str
        "verdict" or "prompt".
    count : int or None
        Units whose removal changed the target (None when no set was found).
    total : float
        Units in the data (verdicts, or prompts).
    items : DataFrame
        The units removed: ``prompt``, ``judge``, ``model_a`` (shown first), ``model_b``,
        ``category`` and ``removed`` (how many verdicts of that entry and category) for
        verdicts; ``prompt`` and ``verdicts`` for prompts.
    confirmed : bool
        Whether an exact refit without them changed the target.
    result : str
        What the refit shows, e.g. "claude-v1 first" or "top tier: a, b, c".
    before : str
        The same description for the fit itself.
    predicted : int or None
        Units the first linear (influence) pass predicted.
    refits : int
        Exact refits made.
    """

    target: str
    unit: str
    count: int | None
    total: float
    items: pd.DataFrame
    confirmed: bool
    result: str
    before: str
    predicted: int | None
    refits: int

    @property
    def share(self) -> float:
        """``count / total`` (NaN when nothing was found)."""
        return float("nan") if self.count is None else self.count / self.total

    @property
    def sentence(self) -> str:
        """One sentence for a report, e.g. "Removing 3 of 9,706 verdicts (0.03%) would put
        gpt-4 first (confirmed by an exact refit)."."""
        what = "verdicts" if self.unit == "verdict" else "prompts"
        total = f"{self.total:,.0f}"
        if self.count is None or not self.confirmed:
            return (f"No set of {what} found whose removal changes this ({self.before}); the "
                    f"search stopped after {self.refits} exact refits.")
        share = 100 * self.share
        shown = f"{share:.2g}%" if share < 1 else f"{share:.1f}%"
        change = {"top": f"put {self.result.removesuffix(' first')} first",
                  "tiers": f"change the top tier ({self.result})"}.get(
            self.target, f"rank {self.result}")
        return (f"Removing {self.count:,} of {total} {what} ({shown}) would {change} "
                "(confirmed by an exact refit).")


class _Goal(NamedTuple):
    """A target as margins that must all fall below 0."""

    name: str
    margins: Callable  # fit -> (values (q,), whitened gradients (dim, q), inference)
    achieved: Callable  # refit -> bool
    describe: Callable  # fit -> str


def _mu_parts(fit, cov_type="fisher"):
    inf = fit.wald_inference(cov_type)
    N = len(fit.items)
    return inf, inf._core_gradient[0][:N], inf._core_whitened[:, :N]


def _pair_goal(a: int, b: int, items) -> _Goal:
    """a is above b now; the goal is b above a."""

    def margins(fit):
        inf, mu, X = _mu_parts(fit)
        return np.array([mu[a] - mu[b]]), (X[:, a] - X[:, b])[:, None], inf

    return _Goal(f"{items[b]} above {items[a]}", margins,
                 lambda f: f.mu[b] > f.mu[a],
                 lambda f: f"{items[b]} above {items[a]}" if f.mu[b] > f.mu[a]
                 else f"{items[a]} above {items[b]}")


def _top_goals(fit) -> list[_Goal]:
    mu = np.asarray(fit.mu)
    top = int(np.argmax(mu))
    items = fit.items
    goals = []
    for j in np.argsort(-mu):
        if j == top:
            continue

        def margins(f, j=int(j)):
            inf, m, X = _mu_parts(f)
            return np.array([m[top] - m[j]]), (X[:, top] - X[:, j])[:, None], inf

        goals.append(_Goal(f"{items[j]} first", margins,
                           lambda f: int(np.argmax(f.mu)) != top,
                           lambda f: f"{items[int(np.argmax(f.mu))]} first"))
    return goals


def _tiers(fit, cov_type):
    from ..ranking import rank_intervals

    inf = fit.wald_inference(cov_type)
    est, cov = inf.mu_covariance()
    return rank_intervals(est, cov, 0.95)


def _tier_goals(fit, cov_type) -> list[_Goal]:
    from ..ranking import _difference_se

    items = fit.items
    inf = fit.wald_inference(cov_type)
    est, cov = inf.mu_covariance()
    joint = _tiers(fit, cov_type)
    top = set(np.flatnonzero(joint.tier == 1).tolist())
    c = joint.critical_value
    se = _difference_se(cov)

    def top_tier(f):
        t = _tiers(f, cov_type)
        return set(np.flatnonzero(t.tier == 1).tolist())

    def describe(f):
        members = sorted(top_tier(f), key=lambda i: -f.mu[i])
        return "top tier: " + ", ".join(items[i] for i in members)

    achieved = lambda f: top_tier(f) != top  # noqa: E731
    goals = []
    outside = [i for i in np.argsort(-est) if i not in top]
    if outside:
        o = int(outside[0])
        separating = [m for m in top if joint.better[m, o]]

        def margins(f, o=o, separating=tuple(separating)):
            inf_f, mu, X = _mu_parts(f)
            values = np.array([mu[m] - mu[o] - c * se[m, o] for m in separating])
            return values, np.column_stack([X[:, m] - X[:, o] for m in separating]), inf_f

        if separating:
            goals.append(_Goal(f"{items[o]} joins the top tier", margins, achieved, describe))
    for a, b in itertools.combinations(sorted(top, key=lambda i: -est[i]), 2):
        def margins(f, a=int(a), b=int(b)):
            inf_f, mu, X = _mu_parts(f)
            return (np.array([c * se[a, b] - (mu[a] - mu[b])]), -(X[:, a] - X[:, b])[:, None],
                    inf_f)

        goals.append(_Goal(f"{items[a]} and {items[b]} separate", margins, achieved, describe))
    return goals


class _Units(NamedTuple):
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


def _units_of(fit) -> _Units:
    data = fit.data
    c = data.clusters
    level = "entries" if any(getattr(t, "needs_entries", False) for t in fit.terms) else "cells"
    if c is None:
        counts = np.asarray(data.counts, dtype=float)
        return _Units(counts, "cells", np.arange(len(counts)), None, None, None, 0)
    entries = np.asarray(c.counts, dtype=float)
    if level == "entries":
        return _Units(entries, level, np.asarray(c.cell), entries, np.asarray(c.cell),
                      np.asarray(c.cluster), c.n_clusters)
    return _Units(np.asarray(data.counts, dtype=float), level, np.arange(data.n_cells), entries,
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
    eta_cols, aux_cols = _columns(chart)
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


class _Search:
    """Greedy removal with refits for one goal."""

    def __init__(self, fit, goal: _Goal, unit: str, refit, max_refits: int, max_share: float):
        self.fit, self.goal, self.unit, self.refit_fn = fit, goal, unit, refit
        self.units = _units_of(fit)
        self.max_refits, self.max_share = max_refits, max_share
        self.refits = 0
        self.order: list = []  # (unit, category) or prompt, in order of removal

    @property
    def n_units(self) -> int:
        return self.units.counts.size if self.unit == "verdict" else self.units.n_clusters

    def multiplicity(self) -> np.ndarray:
        """How often each unit can be removed (flat over (unit, category) for verdicts)."""
        if self.unit == "verdict":
            return self.units.counts.ravel().copy()
        return np.ones(self.units.n_clusters)

    def flat(self, u: int):
        C = self.units.counts.shape[1]
        return (int(u // C), int(u % C)) if self.unit == "verdict" else int(u)

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
            left[u[0] * self.units.counts.shape[1] + u[1] if self.unit == "verdict" else u] -= 1
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
        total = self.units.counts.sum() if self.unit == "verdict" else self.units.n_clusters
        return max(1, int(self.max_share * total))

    def run(self):
        """A confirmed removal order and its refit, or (None, None)."""
        current = self.fit
        budget = self.refits + self.max_refits
        while self.refits < budget:
            values, delta = self.effects(current)
            added, _ = self.extend(values, delta, self.limit() - len(self.order))
            if not added:
                return None, None
            self.order += added
            ok, refit = self.achieved(self.order)
            if ok:
                return self.order, refit
            if refit is None or len(self.order) >= self.limit():
                return None, None
            current = refit
        return None, None

    def shorten(self, order, refit, predicted=None, small: int = 4):
        """The shortest prefix of ``order`` that still works (bisection); then, when it or
        the first linear prediction is at most ``small`` units, combinations of up to that
        many (:meth:`smaller`)."""
        lo, hi = 0, len(order)  # a prefix of length hi works
        budget = self.refits + self.max_refits
        while hi - lo > 1 and self.refits < budget:
            mid = (lo + hi) // 2
            ok, f = self.achieved(order[:mid])
            if ok:
                hi, refit = mid, f
            else:
                lo = mid
        order = order[:hi]
        if len(order) > 1 and min(len(order), predicted or len(order)) <= small:
            order, refit = self.smaller(order, refit, min(len(order) - 1, small))
        return order, refit

    def smaller(self, order, refit, largest: int, pool: int = 16, tries: int = 10):
        """Fewer units: the ``pool`` most influential ones (by the linear prediction) are
        each removed alone and refitted; their exact effects, added up, rank the combinations
        of up to ``largest`` units, and the best ``tries`` of each size are refitted."""
        values, delta = self.effects(self.fit)
        left = self.multiplicity()
        score = np.max(delta, axis=1)
        members = {u[0] * self.units.counts.shape[1] + u[1] if self.unit == "verdict" else u
                   for u in order}
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


def _items(fit, unit: str, order, units: _Units | None = None) -> pd.DataFrame:
    """The removed units as rows (verdicts are named by the entries the refit took them
    from)."""
    data = fit.data
    c = data.clusters
    if unit == "prompt":
        counts = np.bincount(c.cluster, c.n, c.n_clusters)
        return pd.DataFrame({"prompt": [c.names[g] for g in order],
                             "verdicts": [float(counts[g]) for g in order]})
    columns = ["prompt", "judge", "model_a", "model_b", "category", "removed"]
    if not order:
        return pd.DataFrame(columns=columns)
    removed = np.zeros_like(units.counts)
    for u, k in order:
        removed[u, k] += 1
    entries = units.to_entries(removed)
    rows = []
    for e, k in zip(*np.nonzero(entries)):
        cell = e if c is None else int(c.cell[e])
        rows.append({"prompt": None if c is None else c.names[int(c.cluster[e])],
                     "judge": data.judges[data.judge[cell]],
                     "model_a": data.items[data.first[cell]],
                     "model_b": data.items[data.second[cell]],
                     "category": data.categories[k], "removed": int(round(entries[e, k]))})
    return pd.DataFrame(rows, columns=columns)


def fragility(fit, target="top", unit: str = "verdict", *, refit: Callable,
              max_refits: int = 40, max_share: float = 0.5, goals: int = 3) -> Fragility:
    """The smallest set found of verdicts or prompts whose removal changes a ranking.

    Parameters
    ----------
    fit : HJAFit
        The fitted model (``HJAFit.fragility`` passes itself and a refit).
    target : "top", "tiers" or (model_a, model_b)
        What must change: another model first; the top tier of the leaderboard (a model
        joins it or its members separate); or the order of two models.
    unit : {"verdict", "prompt"}
        Remove single verdicts, or whole prompts (needs the data's prompts).
    refit : callable
        ``refit(removed)`` -> the model refitted without ``removed`` verdicts, an (entries,
        categories) array over the entries of ``fit.data`` (its cluster entries, or its
        cells without prompts); it raises :class:`~hja_bayes.errors.DataError` when the
        removal leaves a judge without comparisons or disconnects the models.
    max_refits : int
        Exact refits allowed per way of changing the target in each of the three phases
        (the search, the bisection, the smaller combinations).
    max_share : float
        Give up beyond removing this share of the units.
    goals : int
        For "top" and "tiers": how many ways of changing the target are searched (the
        closest first by the linear prediction); the smallest confirmed set wins.

    Returns
    -------
    Fragility

    Raises
    ------
    ParameterError
        For an unknown target or unit, the same model twice, or ``unit="prompt"`` on data
        without prompts.
    """
    unit = check_choice(unit, "unit", UNITS)
    data = fit.data
    if unit == "prompt" and data.clusters is None:
        raise ParameterError("unit='prompt' needs the data's prompts: read them with "
                             "cluster=<column>, or use unit='verdict'")
    items = fit.items
    if isinstance(target, str):
        target = check_choice(target, "target", ("top", "tiers"))
        candidates = _top_goals(fit) if target == "top" else _tier_goals(fit, fit.cov_type)
        name = target
        before = (f"{items[int(np.argmax(fit.mu))]} first" if target == "top" else
                  candidates[0].describe(fit) if candidates else "one tier")
    else:
        try:
            a, b = (index_of(x, items, "model") for x in target)
        except (TypeError, ValueError):
            raise ParameterError(f"target must be 'top', 'tiers' or (model_a, model_b), got "
                                 f"{target!r}") from None
        if a == b:
            raise ParameterError(f"target names one model twice: {target!r}")
        if fit.mu[a] < fit.mu[b]:
            a, b = b, a
        candidates = [_pair_goal(a, b, items)]
        name = f"{items[a]} vs {items[b]}"
        before = candidates[0].describe(fit)
    total = float(data.n_comparisons if unit == "verdict" else data.clusters.n_clusters)
    units = _units_of(fit)
    empty = _items(fit, unit, [], units)
    if not candidates:
        return Fragility(name, unit, None, total, empty, False, before, before, None, 0)
    # rank the ways by their first linear prediction, search the closest few
    ranked = []
    for goal in candidates:
        search = _Search(fit, goal, unit, refit, max_refits, max_share)
        added, reached = search.extend(*search.effects(fit), 10 ** 12)
        ranked.append((len(added) if reached else np.inf, len(ranked), goal))
    ranked.sort(key=lambda x: (x[0], x[1]))
    predicted = None if not np.isfinite(ranked[0][0]) else int(ranked[0][0])
    best, refits = None, 0
    for count, _, goal in ranked[:max(1, goals)]:
        if best is not None and (not np.isfinite(count) or count > 2 * len(best[0]) + 10):
            break
        search = _Search(fit, goal, unit, refit, max_refits, max_share)
        order, f = search.run()
        if order is not None:
            order, f = search.shorten(order, f, count if np.isfinite(count) else None)
            if best is None or len(order) < len(best[0]):
                best = (order, f, goal)
        refits += search.refits
    if best is None:
        return Fragility(name, unit, None, total, empty, False, before, before, predicted,
                         refits)
    order, f, goal = best
    return Fragility(name, unit, len(order), total, _items(fit, unit, order, units), True,
                     goal.describe(f), before, predicted, refits)
