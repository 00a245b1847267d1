"""Pairwise comparisons aggregated into cells.

A *cell* is (judge k, item shown first i, item shown second j).  Every fitter in the
package works on cells, never on raw rows, so the cost of one likelihood evaluation is
O(number of cells).  Validation happens here, once: what reaches a fitter is clean.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .categories import THREE, CountViews, collapse_counts, row_totals
from .checks import check_integer
from .clusters import ClusterCounts, checked_clusters, readonly, unique_inverse
from .errors import DataError, DisconnectedGraphError
from .summary import ComparisonSummary, count_of, summarise

__all__ = ["ClusterCounts", "Comparisons", "ComparisonSummary", "aggregate_cells"]

@dataclass(frozen=True, eq=False)
class Comparisons(CountViews):
    """Immutable pairwise comparisons by a panel of judges, aggregated into cells.

    Build one with :meth:`from_frame`, :meth:`from_file`, :meth:`from_csv`,
    :meth:`from_jsonl`, :meth:`from_counts` or :meth:`scan` rather than directly (the
    readers' constructors, attached by :mod:`hja_bayes.methods`).

    Attributes
    ----------
    judges, items : tuple of str
        Names, in index order.
    judge, first, second : ndarray of int, shape (n_cells,)
        Cell indices: judge k compared item ``first`` (shown first) with ``second``.
    counts : ndarray of float, shape (n_cells, C)
        Verdicts per ordered outcome category, the strongest preference for ``first``
        first (see :attr:`categories`); every cell holds at least one.
    categories : tuple of str
        The C category labels (``("first", "tie", "second")`` for three-outcome verdicts).
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
        ``cluster=`` column), with the answers' style features per entry; None when unknown.
    feature_names : tuple of str
        Style features carried by ``clusters.features`` (empty without features).
    feature_transform : str
        How the features were transformed into the stored differences (for the record).
    cluster_column : str or None
        The input column the clusters were read from (e.g. ``"question_id"``), as the readers
        record it; None when there are no clusters or their source is not known.
    """

    judges: tuple[str, ...]
    items: tuple[str, ...]
    judge: np.ndarray
    first: np.ndarray
    second: np.ndarray
    counts: np.ndarray
    categories: tuple[str, ...] = THREE
    order_known: bool = True
    rows_read: int = 0
    rows_used: int = 0
    rejected: Mapping[str, int] = field(default_factory=dict)
    dropped_judges: tuple[str, ...] = ()
    clusters: ClusterCounts | None = None
    rejected_by_judge: Mapping[str, int] = field(default_factory=dict)
    feature_names: tuple[str, ...] = ()
    feature_transform: str = ""
    cluster_column: str | None = None

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.float64)
        m = len(counts)
        for name in ("judge", "first", "second"):
            if len(getattr(self, name)) != m:
                raise DataError(f"cell array {name!r} has length {len(getattr(self, name))}, not {m}")
        if m == 0:
            raise DataError("no comparisons: every row was rejected or the input is empty")
        categories = tuple(str(c) for c in self.categories)
        if counts.ndim != 2 or counts.shape[1] != len(categories) or len(categories) < 2:
            raise DataError(f"counts must have shape (cells, {len(categories)}) for the categories "
                            f"{list(categories)}, got {counts.shape}")
        if np.any(self.first == self.second):
            raise DataError("a cell compares an item with itself")
        if not np.all(np.isfinite(counts)) or np.any(counts < 0):
            raise DataError("counts must be finite and >= 0")
        if np.any(row_totals(counts) <= 0):
            raise DataError("every cell must hold at least one comparison")
        for name in ("judge", "first", "second"):
            object.__setattr__(self, name, readonly(np.asarray(getattr(self, name), dtype=np.int64)))
        object.__setattr__(self, "counts", readonly(counts))
        object.__setattr__(self, "categories", categories)
        object.__setattr__(self, "judges", tuple(self.judges))
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "feature_names", tuple(str(f) for f in self.feature_names))
        object.__setattr__(self, "rejected", dict(self.rejected))
        object.__setattr__(self, "rejected_by_judge", dict(self.rejected_by_judge))
        if self.clusters is None or self.cluster_column is None:
            object.__setattr__(self, "cluster_column", None)
        else:
            object.__setattr__(self, "cluster_column", str(self.cluster_column))
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
        features = None if self.clusters is None else self.clusters.features
        width = 0 if features is None else features.shape[1]
        if width != len(self.feature_names):
            raise DataError(f"{len(self.feature_names)} feature names for {width} feature columns")

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
        return len(self.judge)

    @property
    def n_comparisons(self) -> float:
        """Total number of comparisons (sum of cell counts)."""
        return float(self.counts.sum())

    @property
    def n_categories(self) -> int:
        """C, the number of ordered outcome categories."""
        return len(self.categories)

    def collapsed(self) -> "Comparisons":
        """The same comparisons with the verdicts collapsed to (first, tie, second)."""
        if self.categories == THREE:
            return self
        c = self.clusters
        if isinstance(c, ClusterCounts):  # prompts kept in an engine collapse there
            c = c._replace(counts=collapse_counts(c.counts))
        return replace(self, counts=collapse_counts(self.counts), categories=THREE, clusters=c)

    def comparisons_per_judge(self) -> np.ndarray:
        """Comparisons made by each judge, shape (K,)."""
        return np.bincount(self.judge, weights=self.n, minlength=self.n_judges)

    def cells_by_judge(self) -> list:
        """Each judge's cells, as indices into the cell arrays (slices when the cells are
        sorted by judge, as the readers leave them; else from one stable sort), so a loop
        over judges does not scan every cell once per judge."""
        judge = np.asarray(self.judge)
        if np.all(judge[1:] >= judge[:-1]):
            bounds = np.searchsorted(judge, np.arange(self.n_judges + 1))
            return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        order = np.argsort(judge, kind="stable")
        bounds = np.searchsorted(judge[order], np.arange(self.n_judges + 1))
        return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def comparisons_per_item(self) -> np.ndarray:
        """Comparisons each item took part in, shape (N,)."""
        n = self.n
        return (np.bincount(self.first, weights=n, minlength=self.n_items)
                + np.bincount(self.second, weights=n, minlength=self.n_items))

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
        if judge is None:
            return self._pooled_components
        mask = self.judge == self._judge_index(judge)
        return self._components_of(self.first[mask], self.second[mask])

    @cached_property
    def _pooled_components(self) -> np.ndarray:
        """The pooled graph's labels, computed once (a fit and its intervals both check the
        graph; 75 ms for two million cells)."""
        return readonly(self._components_of(self.first, self.second))

    def _components_of(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        from scipy.sparse.csgraph import connected_components

        from .graphs import item_graph

        return connected_components(item_graph(a, b, self.n_items), directed=False)[1]

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
        if not 0 <= check_integer(judge, "judge") < self.n_judges:
            raise DataError(f"judge index {judge} out of range 0..{self.n_judges - 1}")
        return int(judge)

    def summary(self) -> ComparisonSummary:
        """Counts of what was used and what was rejected (printable)."""
        return summarise(self)

    # ----------------------------------------------------------- transforms
    def fold_order(self) -> "Comparisons":
        """Merge (k, i, j) and (k, j, i) cells, for models that ignore presentation order.

        The folded cells have ``first < second``; a swapped cell's categories are reversed
        (a verdict for the item shown first becomes one for the item shown second) and its
        style features change sign.
        """
        c = self.clusters
        engine = None if isinstance(c, ClusterCounts) else c  # prompts kept in an engine
        if engine is not None:
            c = None
        if c is None:  # the cells themselves are the rows
            cell, counts, cluster, names, features = slice(None), self.counts, None, None, None
        else:  # the (cluster, cell) entries are, so that the clusters fold along
            cell, counts, cluster, names, features = c.cell, c.counts, c.cluster, c.names, c.features
        swap = self.first[cell] > self.second[cell]
        first = np.where(swap, self.second[cell], self.first[cell])
        second = np.where(swap, self.first[cell], self.second[cell])
        counts = np.where(swap[:, None], counts[:, ::-1], counts)
        if features is not None:
            features = np.where(swap[:, None], -features, features)
        folded = aggregate_cells(
            self.judges, self.items, self.judge[cell], first, second, counts,
            categories=self.categories, order_known=False, rows_read=self.rows_read,
            rows_used=self.rows_used, rejected=self.rejected, dropped_judges=self.dropped_judges,
            cluster=cluster, cluster_names=names, rejected_by_judge=self.rejected_by_judge,
            features=features, feature_names=self.feature_names,
            feature_transform=self.feature_transform, cluster_column=self.cluster_column,
        )
        return folded if engine is None else replace(folded, clusters=engine,
                                                      cluster_column=self.cluster_column)

    def select_judges(self, judges: Iterable[int | str]) -> "Comparisons":
        """Comparisons of a subset of judges (items keep their indices)."""
        judges = list(judges)
        if not (keep := [self._judge_index(j) for j in judges]) or len(set(keep)) < len(keep):
            raise DataError(f"select_judges needs one judge or more, each once, got {judges!r}")
        new_index = np.full(self.n_judges, -1)
        new_index[keep] = np.arange(len(keep))
        mask = new_index[self.judge] >= 0
        return self._replace_cells(mask, judge=new_index[self.judge[mask]],
                                   judges=tuple(self.judges[k] for k in keep))

    def without(self, removed) -> "Comparisons":
        """These comparisons less some verdicts: :meth:`with_counts` of what is left.

        Parameters
        ----------
        removed : array (units, C)
            Verdicts to take away per unit and category: the units are the cluster entries
            (``clusters.cell`` order) when the data carry clusters, else the cells.

        Raises
        ------
        DataError
            For counts of the wrong shape, more verdicts than a unit holds, or a judge left
            without comparisons.
        """
        left = (self.counts if self.clusters is None else self.clusters.counts) \
            - self._unit_counts(removed, "removed")
        if np.any(left < -1e-9):
            raise DataError("cannot remove more verdicts than a unit holds")
        return self.with_counts(np.clip(left, 0.0, None))

    def with_counts(self, counts) -> "Comparisons":
        """These comparisons with other counts per unit, laid out as :meth:`without` takes
        them (a bootstrap replicate's, say).  Cells and entries left without verdicts are
        dropped (judges and items keep their indices); the clusters keep their names, so a
        prompt may end up empty."""
        c, counts = self.clusters, self._unit_counts(counts, "counts")
        if c is None:
            keep = counts.sum(axis=1) > 0
            return replace(self, judge=self.judge[keep], first=self.first[keep],
                           second=self.second[keep], counts=counts[keep])
        cells = np.stack([np.bincount(c.cell, counts[:, a], self.n_cells)
                          for a in range(counts.shape[1])], axis=1)
        keep, entries = row_totals(cells) > 0, counts.sum(axis=1) > 0
        new_cell = np.cumsum(keep) - 1
        clusters = ClusterCounts(c.names, c.cluster[entries], new_cell[c.cell[entries]],
                                 counts[entries],
                                 None if c.features is None else c.features[entries])
        return replace(self, judge=self.judge[keep], first=self.first[keep],
                       second=self.second[keep], counts=cells[keep], clusters=clusters)

    def _unit_counts(self, counts, name: str) -> np.ndarray:
        """Counts laid out as the units' (cells, or prompt entries): finite numbers >= 0."""
        shape = (self.counts if self.clusters is None else self.clusters.counts).shape
        try:
            counts = np.asarray(counts, dtype=float)
        except (TypeError, ValueError):
            raise DataError(f"{name} must be numbers, got {counts!r:.60}") from None
        if counts.shape != shape or not np.all(np.isfinite(counts) & (counts >= 0)):
            raise DataError(f"{name} must be finite numbers >= 0 of shape {shape} (the units' "
                            f"counts), got shape {counts.shape}")
        return counts

    def _replace_cells(self, mask: np.ndarray, **overrides) -> "Comparisons":
        clusters = self.clusters
        if isinstance(clusters, ClusterCounts):  # prompts kept in an engine match cells by name
            new_cell = np.cumsum(mask) - 1
            keep = mask[clusters.cell]
            clusters = ClusterCounts(
                clusters.names, clusters.cluster[keep], new_cell[clusters.cell[keep]],
                clusters.counts[keep],
                None if clusters.features is None else clusters.features[keep])
        elif clusters is not None and "judges" in overrides:  # kept in an engine
            clusters = clusters.for_judges(overrides["judges"])
        cells = dict(judge=self.judge[mask], first=self.first[mask], second=self.second[mask],
                     counts=self.counts[mask], clusters=clusters)
        return replace(self, **{**cells, **overrides})

    def to_frame(self) -> pd.DataFrame:
        """The cells as a DataFrame (judge, model_a, model_b, n, wins, ties), plus one count
        column per category (``count_<label>``) when the verdicts have more than three."""
        frame = pd.DataFrame(
            {
                "judge": np.asarray(self.judges, dtype=object)[self.judge],
                "model_a": np.asarray(self.items, dtype=object)[self.first],
                "model_b": np.asarray(self.items, dtype=object)[self.second],
                "n": self.n,
                "wins": self.wins,
                "ties": self.ties,
            }
        )
        if self.categories != THREE:
            for c, label in enumerate(self.categories):
                frame[f"count_{label}"] = self.counts[:, c]
        return frame

    def __repr__(self) -> str:
        return (
            f"Comparisons({count_of(self.n_judges, 'judge')}, {count_of(self.n_items, 'model')}, "
            f"{count_of(self.n_cells, 'cell')}, {count_of(self.n_comparisons, 'comparison')})"
        )


def aggregate_cells(judges, items, judge, first, second, counts, *,
                    categories=THREE, order_known: bool = True, rows_read: int = 0,
                    rows_used: int = 0, rejected: Mapping[str, int] | None = None,
                    dropped_judges: tuple[str, ...] = (), cluster=None, cluster_names=None,
                    rejected_by_judge=None, features=None, feature_names=(),
                    feature_transform: str = "", cluster_column: str | None = None) -> Comparisons:
    """Sum rows (or cells) with the same (judge, first, second) into the cells of a Comparisons.

    The one place where rows become cells: the readers and :meth:`Comparisons.fold_order`
    call it.  ``counts`` (rows, C) are per row; ``cluster`` (per row, indices into
    ``cluster_names``) keeps which cluster each row came from, summed per (cluster, cell)
    entry, and ``features`` (rows, F), the answers' transformed style-feature differences,
    split the entries further where rows of one (cluster, cell) showed different answers.
    ``cluster_column`` names the input column the clusters came from (kept for the record).
    """
    n_items = len(items)
    counts = np.asarray(counts, dtype=float)
    keys = (np.asarray(judge, dtype=np.int64) * n_items + np.asarray(first, dtype=np.int64)) \
        * n_items + np.asarray(second, dtype=np.int64)
    keys, inverse = unique_inverse(keys)
    m = len(keys)
    clusters = None
    if features is not None and cluster is None:
        raise DataError("style features need the prompt of every row: pass cluster=<column>")
    if cluster is not None:
        pair = np.asarray(cluster, dtype=np.int64) * m + inverse
        if features is None:
            pair, entry = unique_inverse(pair)
            entry_features = None
        else:
            features = np.asarray(features, dtype=float)
            rows = np.unique(np.column_stack([pair, features]), axis=0, return_inverse=True)
            unique_rows, entry = rows[0], rows[1].ravel()
            pair, entry_features = unique_rows[:, 0].astype(np.int64), unique_rows[:, 1:]
        g = len(pair)
        clusters = ClusterCounts(
            tuple(cluster_names), pair // m, pair % m,
            np.stack([np.bincount(entry, weights=counts[:, c], minlength=g)
                      for c in range(counts.shape[1])], axis=1),
            entry_features)
    return Comparisons(
        judges=tuple(judges), items=tuple(items),
        judge=keys // (n_items * n_items), first=(keys // n_items) % n_items,
        second=keys % n_items,
        counts=np.stack([np.bincount(inverse, weights=counts[:, c], minlength=m)
                         for c in range(counts.shape[1])], axis=1),
        categories=tuple(categories), order_known=order_known, rows_read=rows_read,
        rows_used=rows_used, rejected=dict(rejected or {}), dropped_judges=tuple(dropped_judges),
        clusters=clusters, rejected_by_judge=dict(rejected_by_judge or {}),
        feature_names=tuple(feature_names) if clusters is not None and clusters.features is not None else (),
        feature_transform=feature_transform,
        cluster_column=cluster_column if clusters is not None else None,
    )
