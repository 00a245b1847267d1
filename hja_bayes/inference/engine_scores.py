"""The cluster-robust meat when the prompts stay in a query engine.

``M = sum_g s_g s_g^T`` with ``s_g`` prompt g's summed score in the chart
(:func:`~hja_bayes.inference.information.score_covariance`).  In memory, the (prompt,
cell) incidence gives the scores directly.  When a scan kept the prompts in its engine
(:class:`~hja_bayes.scan.handle.EngineClusters`), the work is split so that only small
tables travel:

1. **Here, per cell and category** (cells fit in memory, rows need not): a verdict of
   category c in cell u = (k, i, j) has score ``s = sum_c' map[c, c'] grad_c'(eta_u)``
   in (eta, aux) (the outcome model's own derivatives at the fitted linear predictor).
   Its contribution to the chart is ``[Q_i - Q_j, X_u, Xg_u] s_0`` and ``s_1..`` on judge
   k's coordinates, ``+P_k s_0`` on item i's and ``-P_k s_0`` on item j's.  The table
   keyed by (judge, first, second, category) holds these values: (cells x C) rows.
2. **In the engine, per row**: the table is joined to every valid row by its key, and
   the values are summed per (prompt, judge) and per (prompt, model): one group-by.
3. **Back here, per group of prompts**: the sums are laid out as a sparse (prompts x dim)
   matrix ``D`` and ``D^T D`` is added to the meat.  Only the (dim x dim) sum is kept, with
   the number of prompts each judge and each model of the data appears on (a model or judge
   on one prompt has no cluster-robust covariance; the caller refuses it).

The result equals the in-memory meat up to the order of summation (checked to 1e-10).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..likelihood import category_derivatives, counts_for

__all__ = ["engine_meat", "engine_prompt_counts", "score_table"]

def score_table(model, chart, clusters) -> tuple[pd.DataFrame, int]:
    """The per-(cell, category) score values keyed as the engine's rows are.

    Returns
    -------
    table : DataFrame
        ``key`` and value columns: ``w`` judge-coordinate values, then ``m`` item values.
    w : int
        The number of judge-coordinate columns.
    """

    if any(t.needs_entries for t in model.terms):
        raise ParameterError("terms that vary by prompt (style) need the prompts in memory: "
                             "scan with incidence='memory'")
    data = model.data
    units, design, eta, aux = model.units("cells")
    key, cell, category, flip = clusters.cell_keys(data)
    mapping = counts_for(np.eye(clusters.plan.n_categories), model.outcome)  # (C_scan, C)
    grad, _ = category_derivatives(model.outcome, np.asarray(eta), None if aux is None
                                   else np.asarray(aux))
    grad = np.asarray(grad)  # (cells, C, L)
    s = np.einsum("rc,rcl->rl", mapping[category], grad[cell])
    local = chart.local_design(units, design)[cell]
    judge_part = np.column_stack([local * s[:, :1], s[:, 1:]])
    sign = np.where(flip, -1.0, 1.0)[:, None]
    item_part = chart.P[data.judge[cell]] * s[:, :1] * sign
    values = np.column_stack([judge_part, item_part])
    table = pd.DataFrame(values, columns=[f"v{c}" for c in range(values.shape[1])])
    table.insert(0, "key", key)
    return table, judge_part.shape[1]


class _Reducer:
    """Prompt score sums (a long table from the engine) -> their (dim x dim) cross-product
    (with a ``chart``) and the prompts each judge and model of ``data`` appears on, as one
    flat vector that adds up over groups of prompts (:meth:`split` takes it apart).

    A plain object of NumPy arrays, so that Dask and Spark can ship it to their workers.
    """

    def __init__(self, data, plan, chart=None, width: int = 0):
        judge_index = {name: k for k, name in enumerate(data.judges)}
        item_index = {name: i for i, name in enumerate(data.items)}
        self.judge_of = np.array([judge_index.get(j, -1) for j in plan.judges], dtype=np.int64)
        self.item_of = np.array([item_index.get(i, -1) for i in plan.items], dtype=np.int64)
        self.n_judges, self.n_items = len(data.judges), len(data.items)
        self.dim = 0 if chart is None else chart.dim
        if chart is not None:
            eta_cols, aux_cols = chart.local_columns()
            self.judge_cols = np.concatenate([eta_cols, aux_cols], axis=1)  # (K, width)
            self.m, self.y, self.width = chart.shape[2], chart.y_offset, width

    def split(self, total: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The summed vector -> (meat (dim x dim), prompts per judge, prompts per model)."""
        square = self.dim * self.dim
        return (total[:square].reshape(self.dim, self.dim),
                total[square:square + self.n_judges], total[square + self.n_judges:])

    def _prompts(self, gid, owner, n) -> np.ndarray:
        """How many of the group's prompts each of ``n`` owners appears on (owner -1: none)."""
        ok = owner >= 0
        seen = np.unique(gid[ok] * n + owner[ok])
        return np.bincount(seen % n, minlength=n).astype(float)

    def __call__(self, long: dict) -> np.ndarray:
        gid, grp, key = long["gid"], long["grp"], long["key"]
        judge_prompts = self._prompts(gid[grp == 0], self.judge_of[key[grp == 0]], self.n_judges)
        as_item = grp > 0
        item_prompts = self._prompts(gid[as_item], self.item_of[key[as_item]], self.n_items)
        meat = self._meat(gid, grp, key, long["values"]) if self.dim else np.zeros((0, 0))
        return np.concatenate([meat.ravel(), judge_prompts, item_prompts])

    def _meat(self, gid, grp, key, values) -> np.ndarray:
        w, m = self.width, self.m
        rows, coords, vals = [], [], []
        judge = grp == 0
        k = self.judge_of[key[judge]]
        ok = k >= 0
        rows.append(np.repeat(gid[judge][ok], w))
        coords.append(self.judge_cols[k[ok]].ravel())
        vals.append(values[judge][ok][:, :w].ravel())
        for g, sign in ((1, 1.0), (2, -1.0)):
            here = grp == g
            i = self.item_of[key[here]]
            ok = i >= 0
            rows.append(np.repeat(gid[here][ok], m))
            coords.append((self.y + i[ok][:, None] * m + np.arange(m)).ravel())
            vals.append(sign * values[here][ok][:, w:w + m].ravel())
        rows, coords, vals = (np.concatenate(x) for x in (rows, coords, vals))
        keep = coords >= 0
        if not keep.any():
            return np.zeros((self.dim, self.dim))
        from scipy import sparse

        # each prompt touches a few dozen of the dim coordinates: D^T D as a sparse product
        # costs sum_g nnz_g^2, not prompts x dim^2
        scores = sparse.csr_matrix((vals[keep], (rows[keep], coords[keep])),
                                   shape=(int(rows[keep].max()) + 1, self.dim))
        return (scores.T @ scores).toarray()


def engine_meat(model, chart, clusters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sum_g s_g s_g^T`` over the prompts a query engine keeps (no small-sample factor),
    and the prompts each judge and model of ``model.data`` appears on.

    Parameters
    ----------
    model : Model
    chart : FactorChart
    clusters : EngineClusters

    Returns
    -------
    meat : ndarray (chart.dim, chart.dim)
    judge_prompts : ndarray (K,)
    item_prompts : ndarray (N,)
    """
    table, width = score_table(model, chart, clusters)
    return _reduced(table, _Reducer(model.data, clusters.plan, chart, width), clusters)


def engine_prompt_counts(data, clusters) -> tuple[np.ndarray, np.ndarray]:
    """The prompts each judge and each model of ``data`` appears on, counted in the engine
    that keeps them (one pass over the rows): ``(judge_prompts (K,), item_prompts (N,))``."""
    keys = np.unique(clusters.cell_keys(data)[0])
    table = pd.DataFrame({"key": keys, "v0": np.zeros(len(keys))})
    return _reduced(table, _Reducer(data, clusters.plan), clusters)[1:]


def _reduced(table, reduce, clusters):
    total = clusters.prompt_scores(table, reduce)
    if total is None:
        total = np.zeros(reduce.dim * reduce.dim + reduce.n_judges + reduce.n_items)
    return reduce.split(total)
