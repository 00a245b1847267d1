"""Pairwise comparisons aggregated into cells.

A *cell* is (judge k, item shown first i, item shown second j).  Every fitter in the
package works on cells, never on raw rows, so the cost of one likelihood evaluation is
O(number of cells).  Validation happens here, once: what reaches a fitter is clean.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .errors import DataError, DataWarning, DisconnectedGraphError

__all__ = ["Comparisons", "ComparisonSummary"]

#: Winner labels meaning "the item in column ``model_a`` won" / "``model_b`` won" / a tie.
FIRST_LABELS = frozenset({"model_a", "a"})
SECOND_LABELS = frozenset({"model_b", "b"})
TIE_LABELS = frozenset({"tie", "tie (bothbad)", "draw"})
#: Verdict labels that mean "no usable verdict": counted and reported, never fitted.
INVALID_LABELS = frozenset({"invalid", "unknown", "error", "none", "n/a", "na", "null"})

SINGLE_JUDGE = "judge"


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class ComparisonSummary:
    """What went into a :class:`Comparisons`, and what was left out and why.

    Attributes
    ----------
    n_judges, n_items, n_cells : int
        Sizes of the aggregated data.
    n_comparisons : float
        Total comparisons used (sum of cell counts).
    n_ties : float
        Ties among them (each counted as half a win for both sides).
    rows_read, rows_used : int
        Rows in the input and rows that became comparisons (0 when built from counts).
    rejected : dict
        Reason -> number of rows not used.
    dropped_judges : tuple
        Judges whose every row was rejected.
    order_known : bool
        Whether cells keep the presentation order.
    one_orientation_only : bool
        True when every unordered pair appears in one presentation order only: position bias
        and order-specific disagreement cannot then be told apart.
    connected : bool
        Whether the pooled comparison graph over items is connected.
    disconnected_judges : tuple
        Judges whose own comparison graph does not connect all items they saw... or all items.
    """

    n_judges: int
    n_items: int
    n_cells: int
    n_comparisons: float
    n_ties: float
    rows_read: int
    rows_used: int
    rejected: Mapping[str, int]
    dropped_judges: tuple[str, ...]
    order_known: bool
    one_orientation_only: bool
    connected: bool
    disconnected_judges: tuple[str, ...]

    def __str__(self) -> str:
        lines = [
            f"{self.n_judges} judges, {self.n_items} items, {self.n_cells} cells, "
            f"{self.n_comparisons:g} comparisons ({self.n_ties:g} ties, counted 1/2 each)",
            f"rows: {self.rows_read} read, {self.rows_used} used",
        ]
        for reason, count in self.rejected.items():
            lines.append(f"  rejected {count} rows: {reason}")
        if self.dropped_judges:
            lines.append(f"judges with no valid rows (dropped): {', '.join(self.dropped_judges)}")
        if not self.order_known:
            lines.append("presentation order: not kept (folded)")
        elif self.one_orientation_only:
            lines.append(
                "presentation order: every pair is shown in one orientation only, so position "
                "bias and structured disagreement cannot be told apart"
            )
        lines.append(f"pooled comparison graph: {'connected' if self.connected else 'DISCONNECTED'}")
        if self.disconnected_judges:
            lines.append(
                "judges whose own graph is disconnected: " + ", ".join(self.disconnected_judges)
            )
        return "\n".join(lines)


@dataclass(frozen=True, eq=False)
class Comparisons:
    """Immutable pairwise comparisons by a panel of judges, aggregated into cells.

    Build one with :meth:`from_frame`, :meth:`from_csv`, :meth:`from_jsonl` or
    :meth:`from_counts` rather than directly.

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
            object.__setattr__(self, name, _readonly(np.asarray(getattr(self, name), dtype=np.int64)))
        for name in ("n", "wins", "ties"):
            object.__setattr__(self, name, _readonly(np.asarray(getattr(self, name), dtype=np.float64)))
        object.__setattr__(self, "judges", tuple(self.judges))
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "rejected", dict(self.rejected))
        if self.judge.max() >= len(self.judges) or self.judge.min() < 0:
            raise DataError("judge index out of range")
        if max(self.first.max(), self.second.max()) >= len(self.items) or min(
            self.first.min(), self.second.min()
        ) < 0:
            raise DataError("item index out of range")
        if np.bincount(self.judge, minlength=len(self.judges)).min() == 0:
            raise DataError("every judge must have at least one comparison")

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
        )

    # ----------------------------------------------------------- transforms
    def fold_order(self) -> "Comparisons":
        """Merge (k, i, j) and (k, j, i) cells, for models that ignore presentation order.

        The folded cells have ``first < second``; ``wins`` counts wins of ``first``.
        """
        swap = self.first > self.second
        first = np.where(swap, self.second, self.first)
        second = np.where(swap, self.first, self.second)
        wins = np.where(swap, self.n - self.wins, self.wins)
        return self._aggregate(
            self.judge, first, second, self.n, wins, self.ties, order_known=False
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
        fields = dict(
            judges=self.judges, items=self.items, judge=self.judge[mask],
            first=self.first[mask], second=self.second[mask], n=self.n[mask],
            wins=self.wins[mask], ties=self.ties[mask], order_known=self.order_known,
            rows_read=self.rows_read, rows_used=self.rows_used, rejected=self.rejected,
            dropped_judges=self.dropped_judges,
        )
        fields.update(overrides)
        return Comparisons(**fields)

    def _aggregate(self, judge, first, second, n, wins, ties, order_known) -> "Comparisons":
        keys, inverse = _cell_keys(judge, first, second, self.n_items)
        m = len(keys)
        k, i, j = _unkey(keys, self.n_items)
        return Comparisons(
            judges=self.judges, items=self.items, judge=k, first=i, second=j,
            n=np.bincount(inverse, weights=n, minlength=m),
            wins=np.bincount(inverse, weights=wins, minlength=m),
            ties=np.bincount(inverse, weights=ties, minlength=m),
            order_known=order_known, rows_read=self.rows_read, rows_used=self.rows_used,
            rejected=self.rejected, dropped_judges=self.dropped_judges,
        )

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
            f"Comparisons({self.n_judges} judges, {self.n_items} items, {self.n_cells} cells, "
            f"{self.n_comparisons:g} comparisons)"
        )

    # --------------------------------------------------------- constructors
    @classmethod
    def from_frame(
        cls,
        df: pd.DataFrame,
        judge: str | None = "judge",
        model_a: str = "model_a",
        model_b: str = "model_b",
        winner: str = "winner",
        *,
        invalid_labels: Iterable[str] = INVALID_LABELS,
    ) -> "Comparisons":
        """Aggregate one row per judgment into cells.

        Parameters
        ----------
        df : DataFrame
            One row per judgment.
        judge : str or None
            Column naming the judge.  If None, or if the column is absent and was left at its
            default, all rows come from one judge named ``"judge"``.
        model_a, model_b : str
            Columns naming the item shown first and second.
        winner : str
            Column holding the verdict: ``"model_a"``, ``"model_b"``, ``"tie"``,
            ``"tie (bothbad)"`` (Chatbot Arena's labels), or the winning item's own name.
            Labels in ``invalid_labels`` (e.g. ``"invalid"``) mean the judge gave no usable
            verdict: such rows are counted in :meth:`summary` and not fitted.
        invalid_labels : iterable of str
            Verdicts treated as "no usable verdict" (compared case-insensitively).

        Returns
        -------
        Comparisons

        Raises
        ------
        DataError
            Empty frame; unknown column names (the message lists the columns there are);
            missing values in a required column; a row comparing an item with itself; a
            verdict that is neither a known label, an invalid marker, nor one of the row's
            two items (the message names the row and the value).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"judge": ["j1", "j1", "j2"], "model_a": ["x", "y", "x"],
        ...                    "model_b": ["y", "x", "y"], "winner": ["model_a", "tie", "y"]})
        >>> Comparisons.from_frame(df)
        Comparisons(2 judges, 2 items, 3 cells, 3 comparisons)
        """
        if not isinstance(df, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame, got {type(df).__name__}")
        if len(df) == 0:
            raise DataError("the frame is empty: no comparisons to read")
        if judge is not None and judge not in df.columns and judge == "judge":
            judge = None  # a frame without a judge column is one judge
        required = [c for c in (judge, model_a, model_b, winner) if c is not None]
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise DataError(
                f"column(s) {missing} not found; the columns there are {list(df.columns)}"
            )
        for col in required:
            bad = df[col].isna().to_numpy()
            if bad.any():
                rows = list(df.index[bad][:5])
                raise DataError(
                    f"column {col!r} has {int(bad.sum())} missing value(s), first at row(s) {rows}"
                )
        a = df[model_a].astype(str).to_numpy()
        b = df[model_b].astype(str).to_numpy()
        w = df[winner].astype(str).to_numpy()
        jud = np.full(len(df), SINGLE_JUDGE, dtype=object) if judge is None else df[judge].astype(str).to_numpy()

        same = a == b
        if same.any():
            row = df.index[np.argmax(same)]
            raise DataError(
                f"row {row!r} compares {a[same][0]!r} with itself ({int(same.sum())} such rows)"
            )

        label_index, labels = pd.factorize(w)  # classify each distinct label once
        normal = [x.strip().lower() for x in labels]
        invalid_set = {s.lower() for s in invalid_labels}

        def label_is(names):
            return np.array([x in names for x in normal], dtype=bool)[label_index]

        is_first = label_is(FIRST_LABELS) | (w == a)
        is_second = label_is(SECOND_LABELS) | (w == b)
        is_tie = label_is(TIE_LABELS)
        is_invalid = label_is(invalid_set)
        known = is_first | is_second | is_tie | is_invalid
        if not known.all():
            pos = int(np.argmin(known))
            raise DataError(
                f"row {df.index[pos]!r}: winner {w[pos]!r} is neither 'model_a', 'model_b', "
                f"'tie', 'tie (bothbad)', an invalid marker {sorted(invalid_set)}, nor one of "
                f"the row's items ({a[pos]!r}, {b[pos]!r})"
            )

        _warn_near_duplicates(np.concatenate([a, b]), "item")
        _warn_near_duplicates(jud, "judge")

        valid = ~is_invalid
        rejected = {}
        if is_invalid.any():
            labels, counts = np.unique(w[is_invalid], return_counts=True)
            for lab, c in zip(labels, counts):
                rejected[f"no usable verdict ({lab!r})"] = int(c)

        all_judges = list(dict.fromkeys(jud))
        used_judges = list(dict.fromkeys(jud[valid]))
        dropped = tuple(j for j in all_judges if j not in set(used_judges))
        if dropped:
            warnings.warn(
                f"judge(s) with no valid rows, left out: {list(dropped)}", DataWarning, stacklevel=2
            )
        if not valid.any():
            raise DataError(f"no valid rows: every verdict was rejected ({rejected})")

        # factorize keeps the order of first appearance
        item_codes, items = pd.factorize(np.concatenate([a[valid], b[valid]]))
        m_valid = int(valid.sum())
        i, j = item_codes[:m_valid].astype(np.int64), item_codes[m_valid:].astype(np.int64)
        k, _ = pd.factorize(jud[valid])  # same first-appearance order as used_judges
        k = k.astype(np.int64)
        items = list(items)
        tie = is_tie[valid].astype(float)
        win = is_first[valid].astype(float) + tie / 2

        keys, inverse = _cell_keys(k, i, j, len(items))
        m = len(keys)
        kk, ii, jj = _unkey(keys, len(items))
        return cls(
            judges=tuple(used_judges),
            items=tuple(items),
            judge=kk,
            first=ii,
            second=jj,
            n=np.bincount(inverse, minlength=m).astype(float),
            wins=np.bincount(inverse, weights=win, minlength=m),
            ties=np.bincount(inverse, weights=tie, minlength=m),
            order_known=True,
            rows_read=len(df),
            rows_used=int(valid.sum()),
            rejected=rejected,
            dropped_judges=dropped,
        )

    @classmethod
    def from_csv(cls, path: str | Path, **columns) -> "Comparisons":
        """Read a CSV with one row per judgment; see :meth:`from_frame` for ``columns``."""
        return cls.from_frame(pd.read_csv(path, dtype=str, keep_default_na=True), **columns)

    @classmethod
    def from_jsonl(cls, path: str | Path, **columns) -> "Comparisons":
        """Read JSON Lines with one object per judgment; see :meth:`from_frame`."""
        with open(path, encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh if line.strip()]
        return cls.from_frame(pd.DataFrame.from_records(records), **columns)

    @classmethod
    def from_counts(
        cls,
        df: pd.DataFrame,
        judge: str | None = "judge",
        model_a: str = "model_a",
        model_b: str = "model_b",
        n: str = "n",
        wins: str = "wins",
        ties: str | None = "ties",
    ) -> "Comparisons":
        """Build from counts aggregated upstream (e.g. on Spark, Dask or Polars).

        Parameters
        ----------
        df : DataFrame
            One row per (judge, first item, second item) with counts; repeated cells are summed.
        judge, model_a, model_b : str
            Key columns (``judge`` may be None or absent for one judge).
        n : str
            Column with the number of comparisons.
        wins : str
            Column with the wins of ``model_a``, ties counted 1/2.
        ties : str or None
            Column with the number of ties (optional; 0 when absent).

        Rows with ``n == 0`` are skipped (and counted in ``summary().rejected``).
        """
        if not isinstance(df, pd.DataFrame):
            raise DataError(f"expected a pandas DataFrame, got {type(df).__name__}")
        if len(df) == 0:
            raise DataError("the frame is empty: no counts to read")
        if judge is not None and judge not in df.columns and judge == "judge":
            judge = None
        if ties is not None and ties not in df.columns and ties == "ties":
            ties = None
        required = [c for c in (judge, model_a, model_b, n, wins, ties) if c is not None]
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise DataError(f"column(s) {missing} not found; the columns there are {list(df.columns)}")
        for col in required:
            if df[col].isna().any():
                raise DataError(f"column {col!r} has missing values")
        a = df[model_a].astype(str).to_numpy()
        b = df[model_b].astype(str).to_numpy()
        if np.any(a == b):
            raise DataError(f"row {df.index[np.argmax(a == b)]!r} compares an item with itself")
        try:
            nn = df[n].to_numpy(dtype=float)
            ww = df[wins].to_numpy(dtype=float)
            tt = np.zeros(len(df)) if ties is None else df[ties].to_numpy(dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"count columns must be numeric: {exc}") from None
        if np.any(nn < 0) or not np.all(np.isfinite(nn + ww + tt)):
            raise DataError("counts must be finite and n >= 0")
        bad = (ww < tt / 2 - 1e-9) | (ww > nn - tt / 2 + 1e-9) | (tt > nn)
        if bad.any():
            raise DataError(
                f"row {df.index[np.argmax(bad)]!r}: need ties <= n and ties/2 <= wins <= n - ties/2"
            )
        jud = np.full(len(df), SINGLE_JUDGE, dtype=object) if judge is None else df[judge].astype(str).to_numpy()
        _warn_near_duplicates(np.concatenate([a, b]), "item")
        _warn_near_duplicates(jud, "judge")
        keep = nn > 0
        rejected = {"n == 0": int((~keep).sum())} if (~keep).any() else {}
        all_judges = list(dict.fromkeys(jud))
        judges = list(dict.fromkeys(jud[keep]))
        dropped = tuple(x for x in all_judges if x not in set(judges))
        if dropped:
            warnings.warn(f"judge(s) with no comparisons, left out: {list(dropped)}", DataWarning, stacklevel=2)
        items = list(dict.fromkeys(np.concatenate([a[keep], b[keep]])))
        item_index = {name: i for i, name in enumerate(items)}
        judge_index = {name: k for k, name in enumerate(judges)}
        k = np.array([judge_index[x] for x in jud[keep]], dtype=np.int64)
        i = np.array([item_index[x] for x in a[keep]], dtype=np.int64)
        j = np.array([item_index[x] for x in b[keep]], dtype=np.int64)
        keys, inverse = _cell_keys(k, i, j, len(items))
        m = len(keys)
        kk, ii, jj = _unkey(keys, len(items))
        return cls(
            judges=tuple(judges), items=tuple(items), judge=kk, first=ii, second=jj,
            n=np.bincount(inverse, weights=nn[keep], minlength=m),
            wins=np.bincount(inverse, weights=ww[keep], minlength=m),
            ties=np.bincount(inverse, weights=tt[keep], minlength=m),
            order_known=True, rows_read=len(df), rows_used=0, rejected=rejected,
            dropped_judges=dropped,
        )


def _cell_keys(k, i, j, n_items):
    keys = (np.asarray(k, dtype=np.int64) * n_items + np.asarray(i, dtype=np.int64)) * n_items + np.asarray(j, dtype=np.int64)
    return np.unique(keys, return_inverse=True)


def _unkey(keys, n_items):
    return keys // (n_items * n_items), (keys // n_items) % n_items, keys % n_items


def _warn_near_duplicates(names: np.ndarray, what: str) -> None:
    """Warn when distinct names differ only in case or surrounding spaces (never merge)."""
    unique = pd.unique(pd.Series(names, dtype=object))
    normal = pd.Series([str(u).strip().casefold() for u in unique])
    dup = normal.duplicated(keep=False)
    if dup.any():
        groups = {}
        for name, key in zip(unique[dup.to_numpy()], normal[dup]):
            groups.setdefault(key, []).append(name)
        shown = "; ".join(" / ".join(repr(x) for x in g) for g in groups.values())
        warnings.warn(
            f"{what} names that differ only in case or spaces are kept apart: {shown}. "
            "Normalise them first if they are the same.",
            DataWarning,
            stacklevel=3,
        )
