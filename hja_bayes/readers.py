"""Readers: rows of judgments (or counts aggregated upstream) into :class:`Comparisons`.

Every reader validates its input here, once, and hands the rows to
:func:`~hja_bayes.comparisons.aggregate_cells`; what reaches a fitter is clean.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .comparisons import Comparisons, aggregate_cells
from .errors import DataError, DataWarning

__all__ = ["FIRST_LABELS", "SECOND_LABELS", "TIE_LABELS", "INVALID_LABELS", "read_counts",
           "read_csv", "read_frame", "read_jsonl"]

#: Winner labels meaning "the item in column ``model_a`` won" / "``model_b`` won" / a tie.
FIRST_LABELS = frozenset({"model_a", "a"})
SECOND_LABELS = frozenset({"model_b", "b"})
TIE_LABELS = frozenset({"tie", "tie (bothbad)", "draw"})
#: Verdict labels that mean "no usable verdict": counted and reported, never fitted.
INVALID_LABELS = frozenset({"invalid", "unknown", "error", "none", "n/a", "na", "null"})

SINGLE_JUDGE = "judge"


def read_frame(
    df: pd.DataFrame,
    judge: str | None = "judge",
    model_a: str = "model_a",
    model_b: str = "model_b",
    winner: str = "winner",
    *,
    invalid_labels: Iterable[str] = INVALID_LABELS,
    cluster: str | None = None,
) -> Comparisons:
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
    cluster : str, optional
        Column naming the prompt / question / conversation each judgment is about.  Verdicts
        on one prompt are dependent (they share its answers); with clusters known, the
        intervals are cluster-robust by default.

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
    >>> read_frame(df)
    Comparisons(2 judges, 2 items, 3 cells, 3 comparisons)
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"expected a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise DataError("the frame is empty: no comparisons to read")
    if judge is not None and judge not in df.columns and judge == "judge":
        judge = None  # a frame without a judge column is one judge
    required = [c for c in (judge, model_a, model_b, winner, cluster) if c is not None]
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

    codes, names = _cluster_codes(df, cluster, valid)
    return aggregate_cells(used_judges, items, k, i, j, np.ones(len(k)), win, tie,
                           rows_read=len(df), rows_used=int(valid.sum()), rejected=rejected,
                           dropped_judges=dropped, cluster=codes, cluster_names=names)

def read_csv(path: str | Path, **columns) -> Comparisons:
    """Read a CSV with one row per judgment; see :func:`read_frame` for ``columns``."""
    return read_frame(pd.read_csv(path, dtype=str, keep_default_na=True), **columns)

def read_jsonl(path: str | Path, **columns) -> Comparisons:
    """Read JSON Lines with one object per judgment; see :func:`read_frame`."""
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    return read_frame(pd.DataFrame.from_records(records), **columns)

def read_counts(
    df: pd.DataFrame,
    judge: str | None = "judge",
    model_a: str = "model_a",
    model_b: str = "model_b",
    n: str = "n",
    wins: str = "wins",
    ties: str | None = "ties",
    *,
    cluster: str | None = None,
) -> Comparisons:
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
    cluster : str, optional
        Column naming the prompt / question each row's comparisons come from (a row then
        holds the counts of one (cluster, judge, first, second)).

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
    required = [c for c in (judge, model_a, model_b, n, wins, ties, cluster) if c is not None]
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
    codes, names = _cluster_codes(df, cluster, keep)
    return aggregate_cells(judges, items, k, i, j, nn[keep], ww[keep], tt[keep],
                           rows_read=len(df), rows_used=0, rejected=rejected,
                           dropped_judges=dropped, cluster=codes, cluster_names=names)


def _cluster_codes(df: pd.DataFrame, cluster: str | None, keep: np.ndarray):
    """Cluster index of every kept row and the cluster names (None, None without clusters)."""
    if cluster is None:
        return None, None
    codes, names = pd.factorize(df[cluster].astype(str).to_numpy()[keep])
    return codes, tuple(names)


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
