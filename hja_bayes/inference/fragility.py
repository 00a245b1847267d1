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
shortened: the shortest prefix of the removal order that still changes the order (bisection);
each of its units put back where the change holds without it (the least influential first);
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
the leaderboard (joint rank intervals, :func:`~hja_bayes.inference.ranking.rank_intervals`, with the
fit's default covariance) gains the next model (every separating margin
``d_mo - c se_mo`` pushed below 0, with ``c`` and the standard errors held at their values)
or loses its cohesion (one pair's ``c se_ab - |d_ab|`` below 0); the refit recomputes the tiers.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, NamedTuple

import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..checks import check_choice, check_integer, index_of
from ..errors import ParameterError
from .removal import Search, Units, units_of

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

    def __repr__(self) -> str:
        """One line: the sentence, and where the set is (no table)."""
        return f"Fragility({self.sentence[:-1]}; .items lists them)"

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
        shown = f"{share:#.2g}%" if share < 1 else f"{share:.1f}%"  # 0.070%, as 0.058%
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
    from .ranking import rank_intervals

    inf = fit.wald_inference(cov_type)
    est, cov = inf.mu_covariance()
    return rank_intervals(est, cov, 0.95)


def _tier_goals(fit, cov_type) -> list[_Goal]:
    from .ranking import _difference_se

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


def _items(fit, unit: str, order, units: Units | None = None) -> pd.DataFrame:
    """The removed units as rows (verdicts are named by the entries the refit took them
    from)."""
    data = fit.data
    c = data.clusters
    if unit == "prompt":
        counts = np.bincount(c.cluster, c.n, c.n_clusters)
        return pd.DataFrame({"prompt": [c.names[g] for g in order],
                             "verdicts": [_whole(counts[g]) for g in order]})
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


def _every_small_set(fit, goals, refit, max_refits: int, max_share: float):
    """Where the greedy search found no set of prompts (its first try can use up the share
    allowed among few prompts, leaving nothing to try next): every set of 1, 2, ...
    prompts, smallest first, while a size's sets fit in the refits allowed per goal.
    Returns ((order, refit, goal) or None, the refits made)."""
    searches = [Search(fit, goal, "prompt", refit, max_refits, max_share) for goal in goals]
    G, most = searches[0].n_units, searches[0].limit()
    for size in range(1, most + 1):
        if searches[0].refits + math.comb(G, size) > max_refits:
            break
        for search in searches:
            for order in itertools.combinations(range(G), size):
                ok, f = search.achieved(list(order))
                if ok:
                    return (list(order), f, search.goal), sum(s.refits for s in searches)
    return None, sum(s.refits for s in searches)


@one_blas_thread
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
        Exact refits allowed per way of changing the target in each of the four phases
        (the search, the bisection, putting units back, the smaller combinations).
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
        For an unknown target or unit, the same model twice, two models of equal scores,
        ``unit="prompt"`` on data without prompts, ``max_refits`` or ``goals`` below 1, or
        ``max_share`` outside (0, 1].
    """
    unit = check_choice(unit, "unit", UNITS)
    check_integer(max_refits, "max_refits", 1)
    check_integer(goals, "goals", 1)
    if not (isinstance(max_share, (int, float, np.number)) and 0 < max_share <= 1):
        raise ParameterError(f"max_share must be a share in (0, 1], got {max_share!r}")
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
        if not isinstance(target, (tuple, list)) or len(target) != 2:
            raise ParameterError(f"target must be 'top', 'tiers' or (model_a, model_b), got "
                                 f"{target!r}")
        a, b = (index_of(x, items, "model") for x in target)  # a typo named as such
        if a == b:
            raise ParameterError(f"target names one model twice: {target!r}")
        if fit.mu[a] == fit.mu[b]:
            raise ParameterError(f"{items[a]!r} and {items[b]!r} have the same score: the "
                                 "fit does not order them, so there is no order to reverse")
        if fit.mu[a] < fit.mu[b]:
            a, b = b, a
        candidates = [_pair_goal(a, b, items)]
        name = f"{items[a]} vs {items[b]}"
        before = candidates[0].describe(fit)
    total = float(data.n_comparisons if unit == "verdict" else data.clusters.n_clusters)
    units = units_of(fit)
    empty = _items(fit, unit, [], units)
    if not candidates:
        return Fragility(name, unit, None, total, empty, False, before, before, None, 0)
    # rank the ways by their first linear prediction, search the closest few
    ranked = []
    for goal in candidates:
        search = Search(fit, goal, unit, refit, max_refits, max_share)
        added, reached = search.extend(*search.effects(fit), 10 ** 12)
        ranked.append((len(added) if reached else np.inf, len(ranked), goal))
    ranked.sort(key=lambda x: (x[0], x[1]))
    predicted = None if not np.isfinite(ranked[0][0]) else int(ranked[0][0])
    best, refits = None, 0
    for count, _, goal in ranked[:max(1, goals)]:
        if best is not None and (not np.isfinite(count) or count > 2 * len(best[0]) + 10):
            break
        search = Search(fit, goal, unit, refit, max_refits, max_share)
        order, f = search.run()
        if order is not None:
            order, f = search.shorten(order, f, count if np.isfinite(count) else None)
            if best is None or len(order) < len(best[0]):
                best = (order, f, goal)
        refits += search.refits
    if best is None and unit == "prompt":
        best, more = _every_small_set(fit, [g for _, _, g in ranked[:max(1, goals)]], refit,
                                      max_refits, max_share)
        refits += more
    if best is None:
        return Fragility(name, unit, None, total, empty, False, before, before, predicted,
                         refits)
    order, f, goal = best
    return Fragility(name, unit, len(order), total, _items(fit, unit, order, units), True,
                     goal.describe(f), before, predicted, refits)


def _whole(x) -> int | float:
    """A count as an integer where it is whole (files then read 2, not 2.0)."""
    x = float(x)
    return int(x) if x.is_integer() else x
