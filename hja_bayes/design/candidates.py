"""The comparisons one could ask for next, as the information sees them.

A *candidate* is a judge and an unordered pair of models ``{a, b}`` (``a < b``), with two
presentation slots: ``a`` shown first (slot 1) or ``b`` shown first (slot 2).  For each
slot this module gives

* the derivative ``d`` of one verdict's linear predictor in the factor coordinates of the
  fit's chart (:class:`~hja_bayes.inference.chart.FactorChart`): judge k's ``A`` row moves
  it through ``Q_first - Q_second``, its estimated term coefficients through the verdict's
  design (position bias: 1; self-preference: +-1 for the judge's own model; style: 0, i.e.
  answers of equal style), and the rows ``Y_first``, ``Y_second`` through ``+-P_k``;
* ``w``, the expected Fisher information about the linear predictor of one verdict at the
  fitted parameters (``p (1 - p)`` for ties counted 1/2);
* how many verdicts the fit's data already hold in that slot, and how many more may be
  asked (a finite pool, a judge that may not see a model, a slot that does not exist).

One new verdict in a slot adds ``w d d^T`` to the information: the per-cell Fisher
information of the adaptive design.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from ..checks import index_of
from ..errors import ParameterError
from ..likelihood import information

__all__ = ["Candidates", "MAX_WORK", "Units", "allocation_information", "candidate_cells",
           "candidate_units", "cell_counts", "held"]

#: Above this many (candidates x chart coordinates) the dense working arrays of the greedy
#: search would exceed a few hundred MB: larger panels are screened first
#: (:mod:`~hja_bayes.design.screen`).
MAX_WORK = 60_000_000


class Candidates(NamedTuple):
    """Candidate (judge, pair) units and their two presentation slots.

    Attributes
    ----------
    judge, a, b : int arrays (c,)
        The judge and the pair (``a < b``); slot 1 shows ``a`` first, slot 2 ``b``.
    D1, D2 : sparse (c, dim)
        Derivative of one verdict's linear predictor in the chart, per slot.
    w1, w2 : (c,)
        Expected information about the linear predictor of one verdict, per slot.
    n1, n2 : (c,)
        Verdicts the fit's data hold in each slot.
    limit1, limit2 : (c,)
        How many more verdicts each slot may take (``inf``: no limit; 0: not available).
    cost : (c,)
        Cost of one verdict (the judge's).
    """

    judge: np.ndarray
    a: np.ndarray
    b: np.ndarray
    D1: sparse.csr_matrix
    D2: sparse.csr_matrix
    w1: np.ndarray
    w2: np.ndarray
    n1: np.ndarray
    n2: np.ndarray
    limit1: np.ndarray
    limit2: np.ndarray
    cost: np.ndarray

    @property
    def size(self) -> int:
        """How many there are."""
        return len(self.judge)


def _left_out(names, left_out) -> str:
    """What the fit said of the judges among ``names`` it left out ("" for none)."""
    said = [f"{n} {left_out[n]}" for n in names if n in left_out]
    return f" (the fit left judges out: {'; '.join(said)})" if said else ""


def _costs(cost, judges, left_out=None) -> np.ndarray:
    """Per-judge costs from a mapping judge -> cost (every judge named), or ones;
    ``left_out``: the fit's ``excluded_judges``, named where a cost names one."""
    K = len(judges)
    if cost is None:
        return np.ones(K)
    if isinstance(cost, pd.DataFrame) and {"judge", "cost"} <= set(cost.columns):
        if cost["judge"].duplicated().any():
            raise ParameterError(f"cost names a judge twice: "
                                 f"{sorted(cost['judge'][cost['judge'].duplicated()])[:5]}")
        cost = cost.set_index("judge")["cost"]
    if isinstance(cost, pd.Series):
        cost = cost.to_dict()
    if not isinstance(cost, Mapping):
        raise ParameterError(f"cost must be a mapping judge -> cost (or a Series, or a "
                             f"DataFrame with columns judge and cost), got "
                             f"{type(cost).__name__}")
    unknown = sorted(str(j) for j in cost if j not in judges)
    if unknown:
        raise ParameterError(f"cost names judges the fit does not have: {unknown[:5]}; the "
                             f"judges are {list(judges)}" + _left_out(unknown, left_out or {}))
    out = np.full(K, np.nan)
    for j, value in cost.items():
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"the cost of judge {j!r} must be a number, got {value!r}") from None
        if not np.isfinite(value) or value <= 0:
            raise ParameterError(f"the cost of judge {j!r} must be finite and > 0, got {value!r}")
        out[judges.index(j)] = value
    return out


def _allowed(judges_arg, judge_names, items, left_out=None) -> np.ndarray:
    """(K, N) bool: which models each judge may see (``judges``: mapping judge -> models or
    None for all; judges not in the mapping are not asked at all; ``left_out`` as in
    :func:`_costs`)."""
    K, N = len(judge_names), len(items)
    if judges_arg is None:
        return np.ones((K, N), dtype=bool)
    if not isinstance(judges_arg, Mapping):
        if isinstance(judges_arg, str) or not hasattr(judges_arg, "__iter__"):
            raise ParameterError("judges must be a mapping judge -> allowed models (None: all "
                                 f"models), or a list of judges; got {judges_arg!r}")
        judges_arg = {j: None for j in judges_arg}
    out = np.zeros((K, N), dtype=bool)
    for j, models in judges_arg.items():
        if j in (left_out or {}):  # a judge the fit left out is not among judge_names
            raise ParameterError(f"judges names {j!r}, which the fit does not have"
                                 + _left_out([j], left_out))
        k = index_of(j, judge_names, "judge")
        if models is None:
            out[k] = True
            continue
        if isinstance(models, str):
            models = [models]
        for m in models:
            out[k, index_of(m, items, "model")] = True
    if not out.any():
        raise ParameterError("judges allows no judge to compare any two models")
    return out


def _pool(frame, judge_names, items):
    """Per ordered cell, how many verdicts a finite pool holds: a dict (k, i, j) -> count.

    ``frame`` has the columns judge, model_a (shown first), model_b and optionally ``limit``
    (default 1 per row; rows of one cell add up)."""
    missing = [c for c in ("judge", "model_a", "model_b") if c not in frame]
    if missing:
        raise ParameterError(f"candidates needs the columns judge, model_a, model_b; missing {missing}")
    limit = frame["limit"].to_numpy(dtype=float) if "limit" in frame else np.ones(len(frame))
    if np.any(~np.isfinite(limit) & (limit != np.inf)) or np.any(limit < 0):
        raise ParameterError("candidates' limit must be >= 0")
    codes = []
    for col, names, what in (("judge", judge_names, "judge"), ("model_a", items, "model"),
                             ("model_b", items, "model")):
        lookup = {n: i for i, n in enumerate(names)}
        values = frame[col].map(lookup)
        if values.isna().any():
            bad = sorted(set(frame[col][values.isna()].astype(str)))[:5]
            raise ParameterError(f"candidates names unknown {what}s in {col!r}: {bad}")
        codes.append(values.to_numpy(dtype=np.int64))
    k, i, j = codes
    if np.any(i == j):
        raise ParameterError("candidates compares a model with itself")
    keys = (k * len(items) + i) * len(items) + j
    uniq, inverse = np.unique(keys, return_inverse=True)
    total = np.bincount(inverse, limit)
    return dict(zip(uniq.tolist(), total.tolist()))


def _design_row(fit, names, k, first, second) -> np.ndarray:
    """The per-judge term columns of a new verdict (equal style): (c, q)."""
    X = np.zeros((len(k), len(names)))
    for c, name in enumerate(names):
        if name == "position":
            X[:, c] = 1.0
        elif name == "self":
            own = fit._own_items()[k]
            X[:, c] = (first == own).astype(float) - (second == own).astype(float)
    return X


def _derivatives(fit, chart, k, first, second) -> sparse.csr_matrix:
    """Rows ``d`` of one verdict's linear predictor in the chart's factor coordinates."""
    K, N, m = chart.shape
    c = len(k)
    q = chart.n_coef_columns
    rows, cols, vals = [], [], []
    r = np.arange(c)
    # judge k's A row, through Q_first - Q_second
    rows.append(np.repeat(r, m)), cols.append((k[:, None] * m + np.arange(m)).ravel())
    vals.append((chart.Q[first] - chart.Q[second]).ravel())
    # the estimated per-judge coefficients
    if chart.coef.size:
        position = np.full(K * q, -1)
        position[chart.coef] = chart.coef_offset + np.arange(chart.coef.size)
        X = _design_row(fit, fit.coef_names, k, first, second)
        where = position.reshape(K, q)[k]
        keep = where >= 0
        rows.append(np.broadcast_to(r[:, None], where.shape)[keep])
        cols.append(where[keep]), vals.append(X[keep])
    # the item rows Y_first (+P_k) and Y_second (-P_k)
    for item, sign in ((first, 1.0), (second, -1.0)):
        rows.append(np.repeat(r, m))
        cols.append((chart.y_offset + item[:, None] * m + np.arange(m)).ravel())
        vals.append((sign * chart.P[k]).ravel())
    D = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(c, chart.dim))
    D.sum_duplicates()
    return D


def _weights(fit, k, first, second) -> np.ndarray:
    """Expected information about eta of one verdict (the eta-eta entry)."""
    model = fit.outcome_model
    eta = fit.logits(k, first, second)
    aux = None
    if model.n_aux:
        with np.errstate(divide="ignore"):
            aux = np.log(np.asarray(fit.aux, dtype=float))[k]
        aux = np.where(np.isfinite(aux), aux, -30.0)
    return np.asarray(information(model, eta, aux, np.ones(len(k))))[:, 0, 0]


def _aux_rows(chart, k: np.ndarray, a: int) -> sparse.csr_matrix:
    """Each verdict's derivative of its judge's outcome parameter ``a`` in the chart's
    coordinates: 1 where that parameter is estimated (a judge that never tied has none)."""
    cols = chart.local_columns()[1][k, a]
    ok = cols >= 0
    return sparse.csr_matrix((np.ones(int(ok.sum())), (np.flatnonzero(ok), cols[ok])),
                             shape=(len(k), chart.dim))


def allocation_information(fit, chart, k, i, j, share) -> np.ndarray:
    """Expected information of ``share`` verdicts on each (judge, first, second), in the
    chart's coordinates: the linear predictor's, and with it that of the outcome model's own
    parameters (Davidson's nu, the ordered scale's cut gaps) and their cross terms."""
    D = _derivatives(fit, chart, k, i, j)
    model = fit.outcome_model
    if not model.n_aux:
        w = _weights(fit, k, i, j) * share
        return (D.T @ D.multiply(w[:, None])).toarray()
    with np.errstate(divide="ignore"):
        aux = np.log(np.asarray(fit.aux, dtype=float))[k]
    aux = np.where(np.isfinite(aux), aux, -30.0)  # held at 0: no coordinate, any finite value
    info = np.asarray(information(model, fit.logits(k, i, j), aux, share))
    rows = [D] + [_aux_rows(chart, k, a) for a in range(model.n_aux)]
    F = np.zeros((chart.dim, chart.dim))
    for a, Ra in enumerate(rows):
        for b, Rb in enumerate(rows):
            F += (Ra.T @ Rb.multiply(info[:, a, b][:, None])).toarray()
    return F


class Units(NamedTuple):
    """The (judge, pair) units that may be asked for, before their derivatives: judge, a, b
    (``a < b``), limit1, limit2 and cost as in :class:`Candidates`."""

    judge: np.ndarray
    a: np.ndarray
    b: np.ndarray
    limit1: np.ndarray
    limit2: np.ndarray
    cost: np.ndarray

    @property
    def size(self) -> int:
        """How many there are."""
        return len(self.judge)

    def take(self, index) -> "Units":
        """The units at ``index``."""
        return Units(*(x[index] for x in self))


def candidate_units(fit, *, judges=None, cost=None, candidates=None) -> Units:
    """Every (judge, pair) that may be asked for.

    Parameters
    ----------
    fit : HJAFit
    judges : mapping judge -> models (None: all), or list of judges, optional
        Who may judge what; default every judge every model.
    cost : mapping judge -> cost, optional
        Default 1 per verdict.
    candidates : DataFrame, optional
        A finite pool: columns judge, model_a (shown first), model_b, optional ``limit``
        (verdicts available in that cell, default 1 per row).  Only its cells are asked
        for, in its presentation orders.

    Raises
    ------
    ParameterError
        For unknown names, bad costs or nothing to ask.
    """
    judge_names, items = tuple(fit.judges), tuple(fit.items)
    K, N = len(judge_names), len(items)
    per_judge_cost = _costs(cost, judge_names, fit.excluded_judges)
    allowed = _allowed(judges, judge_names, items, fit.excluded_judges)
    if cost is not None:
        missing = [judge_names[k] for k in range(K) if allowed[k].any() and np.isnan(per_judge_cost[k])]
        if missing:
            raise ParameterError(f"cost gives no cost for the judges {missing[:5]}: name every "
                                 "judge that may be asked (or leave it out through judges=)")
    a, b = np.triu_indices(N, 1)
    k = np.repeat(np.arange(K), len(a))
    a, b = np.tile(a, K), np.tile(b, K)
    ok = allowed[k, a] & allowed[k, b]
    pool = None if candidates is None else _pool(pd.DataFrame(candidates), judge_names, items)
    limit1 = np.full(len(k), np.inf)
    limit2 = np.full(len(k), np.inf)
    if pool is not None:
        key1 = (k * N + a) * N + b
        key2 = (k * N + b) * N + a
        limit1 = np.array([pool.get(x, 0.0) for x in key1.tolist()])
        limit2 = np.array([pool.get(x, 0.0) for x in key2.tolist()])
        ok &= (limit1 + limit2) > 0
    k, a, b, limit1, limit2 = k[ok], a[ok], b[ok], limit1[ok], limit2[ok]
    if len(k) == 0:
        raise ParameterError("no comparison can be asked for: every (judge, pair) is excluded "
                             "by the judges allowed and the models each may see (judges=; a "
                             "judges file's models) or by candidates=")
    return Units(k, a, b, limit1, limit2, np.nan_to_num(per_judge_cost, nan=1.0)[k])


def cell_counts(data) -> tuple[np.ndarray, np.ndarray]:
    """The data's (judge, first, second) cells as sorted keys, and the verdicts on each."""
    N = data.n_items
    keys = (np.asarray(data.judge, np.int64) * N + data.first) * N + data.second
    uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inverse, np.asarray(data.n, dtype=float))


def held(data, k, first, second, table=None) -> np.ndarray:
    """Verdicts the data hold on each (judge, first, second) (``table``: the data's
    :func:`cell_counts`, when the caller has them); 0 where the data do not know the
    presentation order (folded: their cells' first and second are no order, and counting
    them as shown so would send every new verdict to the other order)."""
    if not data.order_known:
        return np.zeros(np.broadcast(np.asarray(k), np.asarray(first)).shape)
    uniq, total = cell_counts(data) if table is None else table
    N = data.n_items
    query = (np.asarray(k, np.int64) * N + first) * N + second
    at = np.clip(np.searchsorted(uniq, query), 0, len(uniq) - 1)
    return np.where(uniq[at] == query, total[at], 0.0)


def candidate_cells(fit, chart, units: Units) -> Candidates:
    """The units' slots with their derivatives in ``chart`` (the chart of the fit's Wald
    inference), expected information and the verdicts already held."""
    k, a, b = units.judge, units.a, units.b
    return Candidates(
        judge=k, a=a, b=b,
        D1=_derivatives(fit, chart, k, a, b), D2=_derivatives(fit, chart, k, b, a),
        w1=_weights(fit, k, a, b), w2=_weights(fit, k, b, a),
        n1=held(fit.data, k, a, b), n2=held(fit.data, k, b, a),
        limit1=units.limit1, limit2=units.limit2, cost=units.cost,
    )
