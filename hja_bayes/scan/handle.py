"""Prompts kept in the engine: a stand-in for :class:`~hja_bayes.clusters.ClusterCounts`.

When a scan reads more rows than its (prompt, cell) incidence may bring into memory, the
:class:`Comparisons` it returns carries an :class:`EngineClusters` as ``clusters``.  It
knows the number of prompts and, on request, the comparisons per prompt; the incidence
itself stays in the engine.  What needs the prompts goes through it:

* the cluster-robust meat (:func:`hja_bayes.inference.information.score_covariance`) asks
  :meth:`EngineClusters.prompt_scores` for the per-prompt score sums, computed in the
  engine and reduced group by group to a (dim x dim) matrix;
* the prompt bootstrap (:func:`hja_bayes.hja.bootstrap.bootstrap_fit`) asks
  :meth:`EngineClusters.poisson_counts` for Poisson-weighted cell counts.

The handle reads the cells of whatever :class:`Comparisons` it is asked about (judges
selected, order folded, categories collapsed): rows are matched to that data's cells by
name, in the engine.  Anything else that needs the incidence in memory (saving the data,
agreement statistics, the Bayesian prompt effects) raises a :class:`DataError` that says
to scan with ``incidence="memory"``.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..errors import DataError

__all__ = ["EngineClusters"]

_NEEDS_MEMORY = ("the (prompt, cell) incidence of this scan stays in the {engine} engine "
                 "(it read {rows} rows): {what} needs it in memory; scan again with "
                 "incidence='memory' if it fits")


class EngineClusters:
    """The prompts of a scan, kept in its engine.

    Parameters
    ----------
    engine : engine object (see :mod:`hja_bayes.scan.engine`)
    plan : Plan
    """

    #: Marks a cluster object whose incidence is computed in an engine.
    in_engine = True
    features = None

    def __init__(self, engine, plan, judges: tuple | None = None, owner=None):
        self.engine, self.plan = engine, plan
        #: the judges whose rows count (None: every judge of the scan)
        self.judges = judges
        self._totals = None
        self._names = None
        self._owner = owner  # the handle that closes the engine: its views keep it alive
        close = getattr(engine, "close", None)
        if close is not None and owner is None:
            self._finalizer = weakref.finalize(self, close)

    def for_judges(self, judges) -> "EngineClusters":
        """A handle on the same engine whose prompt counts take only these judges' rows (a
        selection of judges: prompts only the others judged hold none of its comparisons)."""
        return EngineClusters(self.engine, self.plan, tuple(judges), self._owner or self)

    def _judge_codes(self) -> list | None:
        if self.judges is None:
            return None
        code = {name: k for k, name in enumerate(self.plan.judges)}
        return [code[j] for j in self.judges]

    # ------------------------------------------------------ what is cheap
    @property
    def engine_name(self) -> str:
        """The engine's name."""
        return self.engine.name

    def comparisons_per_cluster(self) -> np.ndarray:
        """Comparisons on each prompt, shape (G,) (computed in the engine, cached)."""
        if self._totals is None:
            self._totals = self.engine.cluster_totals(self._judge_codes())
        return self._totals

    @property
    def n_clusters(self) -> int:
        """Number of prompts G."""
        return int(len(self.comparisons_per_cluster()))

    @property
    def names(self) -> tuple:
        """The prompts, sorted (fetched from the engine on first use)."""
        if self._names is None:
            self._names = self.engine.cluster_names(self._judge_codes())
        return self._names

    def _refuse(self, what: str):
        raise DataError(_NEEDS_MEMORY.format(engine=self.engine_name,
                                             rows=getattr(self.engine, "valid_rows", "many"),
                                             what=what))

    @property
    def cluster(self):
        """Not in memory: raises :class:`DataError`."""
        self._refuse("this operation")

    cell = cluster
    counts = cluster

    def checked(self, data) -> "EngineClusters":
        """Check that ``data`` has cells this handle can match (called by Comparisons)."""
        C = self.plan.n_categories
        if data.n_categories not in (C, 3):
            raise DataError(f"prompts kept in the engine have {C} categories; the data {data.n_categories}")
        return self

    # ----------------------------------------------------- the row keys
    def cell_keys(self, data):
        """How the engine's row keys map to ``data``'s cells.

        Returns
        -------
        key : int64 (R,)
            Sorted row keys ``((k * n + a) * n + b) * C + c`` in the scan's codes.
        cell : int64 (R,)
            The cell of ``data`` each key's rows belong to.
        category : int64 (R,)
            The scan category as seen from that cell (reversed where the cell shows the
            pair in the other order: after :meth:`Comparisons.fold_order`).
        flip : bool (R,)
            Whether the rows show the cell's pair in the other order.
        """
        plan = self.plan
        C = plan.n_categories
        judge_code = {name: k for k, name in enumerate(plan.judges)}
        item_code = {name: i for i, name in enumerate(plan.items)}
        try:
            kj = np.array([judge_code[j] for j in data.judges], dtype=np.int64)[data.judge]
            codes = np.array([item_code[i] for i in data.items], dtype=np.int64)
        except KeyError as exc:
            raise DataError(f"{exc.args[0]!r} is not in the scan these prompts come from") from None
        first, second = codes[data.first], codes[data.second]
        m = data.n_cells
        orient = [(first, second, False)]
        if not data.order_known:
            orient.append((second, first, True))
        keys, cells, cats, flips = [], [], [], []
        for a, b, flip in orient:
            for c in range(C):
                keys.append(plan.key(kj, a, b, c))
                cells.append(np.arange(m))
                cats.append(np.full(m, C - 1 - c if flip else c))
                flips.append(np.full(m, flip))
        key = np.concatenate(keys)
        order = np.argsort(key, kind="stable")
        return (key[order], np.concatenate(cells)[order], np.concatenate(cats)[order],
                np.concatenate(flips)[order])

    # ------------------------------------------------------- the reducers
    def prompt_scores(self, table, reduce, rows_per_group: int | None = None):
        """Sum over groups of prompts of ``reduce(long)``, the per-prompt sums of the score
        ``table`` (key and value columns) over the valid rows; see
        :mod:`hja_bayes.scan.engine`."""
        return self.engine.prompt_scores(table, reduce, rows_per_group)

    def poisson_counts(self, data, replicates: int, seed: int, n_categories: int | None = None,
                       mapping=None, start: int = 0) -> np.ndarray:
        """Cell counts of ``replicates`` prompt-bootstrap replicates by Poisson(1) weights.

        Each prompt gets an independent Poisson(1) weight in each replicate (a hash of the
        prompt, the seed and the replicate inside the engine), and every verdict on it
        counts that many times.

        Parameters
        ----------
        data : Comparisons
        replicates, seed : int
        start : int
            The first replicate's number (replicate r of a seed is the same whatever batch
            it is drawn in).
        n_categories : int, optional
            Categories of the counts returned (default: the data's).
        mapping : array (C_scan, n_categories), optional
            How a scan category adds to the returned categories (default: the identity, or
            the collapse to three).

        Returns
        -------
        ndarray (replicates, cells, n_categories)
        """
        from ..categories import collapse_counts

        C = self.plan.n_categories
        n_categories = data.n_categories if n_categories is None else int(n_categories)
        if mapping is None:
            mapping = np.eye(C) if n_categories == C else collapse_counts(np.eye(C))
        key, cell, category, _ = self.cell_keys(data)
        drawn = self.engine.poisson(int(replicates), int(seed), int(start))
        out = np.zeros((replicates, data.n_cells, n_categories))
        rk = drawn["key"].to_numpy(dtype=np.int64)
        at = np.minimum(np.searchsorted(key, rk), len(key) - 1)
        hit = key[at] == rk
        rep = drawn["rep"].to_numpy(dtype=np.int64)[hit] - int(start)
        w = drawn["w"].to_numpy(dtype=float)[hit]
        at = at[hit]
        for target in range(n_categories):
            share = mapping[category[at], target]
            np.add.at(out, (rep, cell[at], target), w * share)
        return out

    def __repr__(self) -> str:
        return f"EngineClusters({self.engine_name})"
