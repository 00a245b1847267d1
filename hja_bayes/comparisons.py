"""Pairwise comparisons aggregated into cells.

A *cell* is (judge k, item shown first i, item shown second j).  Every fitter in the
package works on cells, never on raw rows, so the cost of one likelihood evaluation is
O(number of cells).  Validation happens here, once: what reaches a fitter is clean.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .clusters import ClusterCounts, checked_clusters, readonly
from .errors import DataError, DisconnectedGraphError
from .summary import ComparisonSummary, count_of

__all__ = ["ClusterCounts", "Comparisons", "ComparisonSummary", "aggregate_cells"]

@dataclass(frozen=True, eq=False)
class Comparisons:
    """Immutable pairwise comparisons by a panel of judges, aggregated into cells.

    Build one with :meth:`from_frame`, :meth:`from_file`, :meth:`from_csv`,
    :meth:`from_jsonl` or :meth:`from_counts` rather than directly.

    Attributes
    ----------
    judges, items : tuple of str
        Names, in index order.
    judge, first, second : ndarray of int, shape (n_cells,)
        Cell indices: judge k compared item ``first`` (shown first) with ``second``.
    n : ndarray of float, shape (n_cells,)
        Comparisons in the cell (> 0).
    wins : ndarray of float, shape (n_cells,)
        Wins of the first-shown item, ties counted 1/2.
    ties : ndarray of float, shape (n_cells,)
        Ties in the cell (already included in ``wins`` as halves).
    order_known : bool
        False after :meth:`fold_order`: then ``first < second`` and order carries no meaning.
    rows_read, rows_used : int
        Input rows and rows that became comparisons.
    rejected : dict
        Reason -> count of rows not used.
    dropped_judges : tuple of str
        Judges present in the input whose every row was rejected.
    rejected_by_judge : dict
        Judge -> count of that judge's rows not used (empty if none, or unknown).
    clusters : ClusterCounts or None
        Which comparisons share a prompt / question / conversation (from the readers'
        ``cluster=`` column); None when unknown.
    """

    judges: tuple[str, ...]
    items: tuple[str, ...]
    judge: np.ndarray
    first: np.ndarray
    second: np.ndarray
    n: np.ndarray
    wins: np.ndarray
    ties: np.ndarray
    order_known: bool = True
    rows_read: int = 0
    rows_used: int = 0
    rejected: Mapping[str, int] = field(default_factory=dict)
    dropped_judges: tuple[str, ...] = ()
    clusters: ClusterCounts | None = None
    rejected_by_judge: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        m = len(self.n)
        for name in ("judge", "first", "second", "wins", "ties"):
            if len(getattr(self, name)) != m:
                raise DataError(f"cell array {name!r} has length {len(getattr(self, name))}, not {m}")
        if m == 0:
            raise DataError("no comparisons: every row was rejected or the input is empty")
        if np.any(self.first == self.second):
            raise DataError("a cell compares an item with itself")
        if np.any(self.n <= 0):
            raise DataError("every cell must hold at least one comparison")
        if np.any((self.wins < 0) | (self.wins > self.n)):
            raise DataError("wins must lie in [0, n] in every cell")
        if np.any((self.ties < 0) | (self.ties > self.n)) or np.any(
            (self.wins < self.ties / 2 - 1e-9) | (self.n - self.wins < self.ties / 2 - 1e-9)
        ):
            raise DataError("ties must satisfy ties/2 <= wins <= n - ties/2 in every cell")
        for name in ("judge", "first", "second"):
            object.__setattr__(self, name, readonly(np.asarray(getattr(self, name), dtype=np.int64)))
        for name in ("n", "wins", "ties"):
            object.__setattr__(self, name, readonly(np.asarray(getattr(self, name), dtype=np.float64)))
        object.__setattr__(self, "judges", tuple(self.judges))
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "rejected", dict(self.rejected))
        object.__setattr__(self, "rejected_by_judge", dict(self.rejected_by_judge))
        if self.judge.max() >= len(self.judges) or self.judge.min() < 0:
            raise DataError("judge index out of range")
        if max(self.first.max(), self.second.max()) >= len(self.items) or min(
            self.first.min(), self.second.min()
        ) < 0:
            raise DataError("item index out of range")
        if np.bincount(self.judge, minlength=len(self.judges)).min() == 0:
            raise DataError("every judge must have at least one comparison")
        if self.clusters is not None:
            object.__setattr__(self, "clusters", checked_clusters(self.clusters, self))

    # ------------------------------------------------------------------ sizes
    @property
    def n_judges(self) -> int:
        """Number of judges K."""
        return len(self.judges)

    @property
    def n_items(self) -> int:
        """Number of items N."""
        return len(self.items)

    @property
    def n_cells(self) -> int:
        """Number of stored cells |Omega|."""
        return len(self.n)

    @property
    def n_comparisons(self) -> float:
        """Total number of comparisons (sum of cell counts)."""
        return float(self.n.sum())

    @property
    def first_wins(self) -> np.ndarray:
        """Decisive wins of the first-shown item per cell."""
        return self.wins - self.ties / 2

    @property
    def second_wins(self) -> np.ndarray:
        """Decisive wins of the second-shown item per cell."""
        return self.n - self.wins - self.ties / 2

    def comparisons_per_judge(self) -> np.ndarray:
        """Comparisons made by each judge, shape (K,)."""
        return np.bincount(self.judge, weights=self.n, minlength=self.n_judges)

    def comparisons_per_item(self) -> np.ndarray:
        """Comparisons each item took part in, shape (N,)."""
        return np.bincount(self.first, weights=self.n, minlength=self.n_items) + np.bincount(
            self.second, weights=self.n, minlength=self.n_items
        )

    # ------------------------------------------------------------- structure
    def components(self, judge: int | str | None = None) -> np.ndarray:
        """Connected-component label of every item in the comparison graph.

        Parameters
        ----------
        judge : int, str or None
            None for the pooled graph (all judges), else one judge's own graph.

        Returns
        -------
        ndarray of int, shape (N,)
            Items with the same label are linked by a chain of comparisons.
        """
        mask = slice(None) if judge is None else self.judge == self._judge_index(judge)
        a, b = self.first[mask], self.second[mask]
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(self.n_items, self.n_items))
        return connected_components(graph, directed=False)[1]

    def is_connected(self, judge: int | str | None = None) -> bool:
        """Whether the comparison graph links every item (pooled, or for one judge)."""
        return bool(np.unique(self.components(judge)).size == 1)

    def check_connected(self, judge: int | str | None = None) -> None:
        """Raise :class:`DisconnectedGraphError` unless the comparison graph is connected."""
        labels = self.components(judge)
        if np.unique(labels).size > 1:
            groups = [
                [self.items[i] for i in np.flatnonzero(labels == c)] for c in np.unique(labels)
            ]
            who = "pooled" if judge is None else f"judge {self.judges[self._judge_index(judge)]!r}'s"
            raise DisconnectedGraphError(
                f"the {who} comparison graph falls into {len(groups)} groups with no comparison "
                f"between them, so their relative scores are not identified: "
                + "; ".join("{" + ", ".join(g) + "}" for g in groups)
            )

    @property
    def one_orientation_only(self) -> bool:
        """True when every unordered pair of items was shown in one order only (pooled)."""
        if not self.order_known:
            return False
        n = self.n_items
        shown = np.zeros((n, n), dtype=bool)
        shown[self.first, self.second] = True
        return not np.any(shown & shown.T)

    def _judge_index(self, judge: int | str) -> int:
        if isinstance(judge, str):
            try:
                return self.judges.index(judge)
            except ValueError:
                raise DataError(f"unknown judge {judge!r}; judges are {list(self.judges)}") from None
        if not 0 <= int(judge) < self.n_judges:
            raise DataError(f"judge index {judge} out of range 0..{self.n_judges - 1}")
        return int(judge)

    def summary(self) -> ComparisonSummary:
        """Counts of what was used and what was rejected (printable)."""
        disconnected = tuple(
            self.judges[k] for k in range(self.n_judges) if not self.is_connected(k)
        )
        return ComparisonSummary(
            n_judges=self.n_judges,
            n_items=self.n_items,
            n_cells=self.n_cells,
            n_comparisons=self.n_comparisons,
            n_ties=float(self.ties.sum()),
            rows_read=self.rows_read,
            rows_used=self.rows_used,
            rejected=dict(self.rejected),
            dropped_judges=self.dropped_judges,
            order_known=self.order_known,
            one_orientation_only=self.one_orientation_only,
            connected=self.is_connected(),
            disconnected_judges=disconnected,
            n_clusters=0 if self.clusters is None else self.clusters.n_clusters,
            comparisons_per_cluster=() if self.clusters is None else (
                float(np.median(self.clusters.comparisons_per_cluster())),
                float(self.clusters.comparisons_per_cluster().max())),
        )

    # ----------------------------------------------------------- transforms
    def fold_order(self) -> "Comparisons":
        """Merge (k, i, j) and (k, j, i) cells, for models that ignore presentation order.

        The folded cells have ``first < second``; ``wins`` counts wins of ``first``.
        """
        c = self.clusters
        if c is None:  # the cells themselves are the rows
            cell, n, wins, ties, cluster, names = slice(None), self.n, self.wins, self.ties, None, None
        else:  # the (cluster, cell) entries are, so that the clusters fold along
            cell, n, wins, ties, cluster, names = c.cell, c.n, c.wins, c.ties, c.cluster, c.names
        swap = self.first[cell] > self.second[cell]
        first = np.where(swap, self.second[cell], self.first[cell])
        second = np.where(swap, self.first[cell], self.second[cell])
        wins = np.where(swap, n - wins, wins)
        return aggregate_cells(
            self.judges, self.items, self.judge[cell], first, second, n, wins, ties,
            order_known=False, rows_read=self.rows_read, rows_used=self.rows_used,
            rejected=self.rejected, dropped_judges=self.dropped_judges, cluster=cluster,
            cluster_names=names, rejected_by_judge=self.rejected_by_judge,
        )

    def select_judges(self, judges: Iterable[int | str]) -> "Comparisons":
        """Comparisons of a subset of judges (items keep their indices)."""
        keep = [self._judge_index(j) for j in judges]
        new_index = np.full(self.n_judges, -1)
        new_index[keep] = np.arange(len(keep))
        mask = new_index[self.judge] >= 0
        return self._replace_cells(mask, judge=new_index[self.judge[mask]],
                                   judges=tuple(self.judges[k] for k in keep))

    def _replace_cells(self, mask: np.ndarray, **overrides) -> "Comparisons":
        clusters = self.clusters
        if clusters is not None:
            new_cell = np.cumsum(mask) - 1
            keep = mask[clusters.cell]
            clusters = ClusterCounts(clusters.names, clusters.cluster[keep],
                                     new_cell[clusters.cell[keep]], clusters.n[keep],
                                     clusters.wins[keep], clusters.ties[keep])
        fields = dict(
            judges=self.judges, items=self.items, judge=self.judge[mask],
            first=self.first[mask], second=self.second[mask], n=self.n[mask],
            wins=self.wins[mask], ties=self.ties[mask], order_known=self.order_known,
            rows_read=self.rows_read, rows_used=self.rows_used, rejected=self.rejected,
            dropped_judges=self.dropped_judges, clusters=clusters,
            rejected_by_judge=self.rejected_by_judge,
        )
        fields.update(overrides)
        return Comparisons(**fields)

    def to_frame(self) -> pd.DataFrame:
        """The cells as a DataFrame (judge, model_a, model_b, n, wins, ties)."""
        return pd.DataFrame(
            {
                "judge": np.asarray(self.judges, dtype=object)[self.judge],
                "model_a": np.asarray(self.items, dtype=object)[self.first],
                "model_b": np.asarray(self.items, dtype=object)[self.second],
                "n": self.n,
                "wins": self.wins,
                "ties": self.ties,
            }
        )

    def __repr__(self) -> str:
        return (
            f"Comparisons({count_of(self.n_judges, 'judge')}, {count_of(self.n_items, 'item')}, "
            f"{count_of(self.n_cells, 'cell')}, {count_of(self.n_comparisons, 'comparison')})"
        )

    # --------------------------------------------------------- constructors
    @classmethod
    def from_frame(cls, df, judge: str | None = "judge", model_a: str = "model_a",
                   model_b: str = "model_b", winner: str = "winner", **options) -> "Comparisons":
        """One row per judgment; see :func:`hja_bayes.readers.read_frame`."""
        from .readers import read_frame

        return read_frame(df, judge, model_a, model_b, winner, **options)

    @classmethod
    def from_csv(cls, path, **columns) -> "Comparisons":
        """A CSV with one row per judgment; see :func:`hja_bayes.readers.read_csv`."""
        from .readers import read_csv

        return read_csv(path, **columns)

    @classmethod
    def from_jsonl(cls, path, **columns) -> "Comparisons":
        """JSON Lines with one object per judgment; see :func:`hja_bayes.readers.read_jsonl`."""
        from .readers import read_jsonl

        return read_jsonl(path, **columns)

    @classmethod
    def from_file(cls, path, **columns) -> "Comparisons":
        """CSV, JSON Lines, JSON array, parquet or ``"-"``; see :func:`hja_bayes.readers.read_file`."""
        from .readers import read_file

        return read_file(path, **columns)

    @classmethod
    def from_counts(cls, df, judge: str | None = "judge", model_a: str = "model_a",
                    model_b: str = "model_b", n: str = "n", wins: str = "wins",
                    ties: str | None = "ties", **options) -> "Comparisons":
        """Counts aggregated upstream; see :func:`hja_bayes.readers.read_counts`."""
        from .readers import read_counts

        return read_counts(df, judge, model_a, model_b, n, wins, ties, **options)


def aggregate_cells(judges, items, judge, first, second, n, wins, ties, *,
                    order_known: bool = True, rows_read: int = 0, rows_used: int = 0,
                    rejected: Mapping[str, int] | None = None,
                    dropped_judges: tuple[str, ...] = (), cluster=None,
                    cluster_names=None, rejected_by_judge=None) -> Comparisons:
    """Sum rows (or cells) with the same (judge, first, second) into the cells of a Comparisons.

    The one place where rows become cells: the readers and :meth:`Comparisons.fold_order`
    call it.  ``n``, ``wins`` (ties counted 1/2) and ``ties`` are per row; ``cluster`` (per
    row, indices into ``cluster_names``) keeps which cluster each row came from, summed per
    (cluster, cell).
    """
    n_items = len(items)
    keys = (np.asarray(judge, dtype=np.int64) * n_items + np.asarray(first, dtype=np.int64)) \
        * n_items + np.asarray(second, dtype=np.int64)
    keys, inverse = np.unique(keys, return_inverse=True)
    m = len(keys)
    clusters = None
    if cluster is not None:
        pair, entry = np.unique(np.asarray(cluster, dtype=np.int64) * m + inverse,
                                return_inverse=True)
        g = len(pair)
        clusters = ClusterCounts(
            tuple(cluster_names), pair // m, pair % m,
            np.bincount(entry, weights=np.asarray(n, dtype=float), minlength=g),
            np.bincount(entry, weights=np.asarray(wins, dtype=float), minlength=g),
            np.bincount(entry, weights=np.asarray(ties, dtype=float), minlength=g))
    return Comparisons(
        judges=tuple(judges), items=tuple(items),
        judge=keys // (n_items * n_items), first=(keys // n_items) % n_items,
        second=keys % n_items,
        n=np.bincount(inverse, weights=np.asarray(n, dtype=float), minlength=m),
        wins=np.bincount(inverse, weights=np.asarray(wins, dtype=float), minlength=m),
        ties=np.bincount(inverse, weights=np.asarray(ties, dtype=float), minlength=m),
        order_known=order_known, rows_read=rows_read, rows_used=rows_used,
        rejected=dict(rejected or {}), dropped_judges=tuple(dropped_judges), clusters=clusters,
        rejected_by_judge=dict(rejected_by_judge or {}),
    )
