"""Rows' names as integer codes: the items, judges and prompts a reader keys rows by.

Each column is factorized once, as a column (text held by Arrow is coded without making a
Python string of every row), and everything after works on the codes: at two million rows
:meth:`~hja_bayes.Comparisons.from_frame` reads 4x faster than when it compared the rows'
names as strings.  Names are numbered in the order they first appear, as the readers
document.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .errors import DataError, DataWarning, ParameterError, warn
from .sources import row_label

__all__ = ["Coded", "Keys", "SINGLE_JUDGE", "check_column_names", "check_columns",
           "cluster_codes", "codes_in_order", "coded", "row_keys", "tally"]

#: The judge's name when one judge made every verdict (``judge=None``).
SINGLE_JUDGE = "judge"


class Coded(NamedTuple):
    """A column of names as integer codes: row r holds ``names[codes[r]]``."""

    codes: np.ndarray
    names: np.ndarray  # object array of str, each distinct name once, first appearance first


def coded(column: pd.Series, say_merged: bool = False) -> Coded:
    """The column as text, coded (its values must not be missing).  Factorizing the column
    itself (for text held by Arrow, without making Python strings of every row) is what
    keeps reading fast at millions of rows.  ``say_merged``: warn where values of two types
    read as one name (judges and models; a prompt id 1 beside "1" is one prompt anyway)."""
    codes, names = pd.factorize(column.astype(str))
    if say_merged:
        # a categorical column's values are its categories (1 and "1" two of them)
        values = pd.Series(column.cat.categories, name=column.name) \
            if isinstance(column.dtype, pd.CategoricalDtype) else column
        if values.dtype == object and \
                pd.api.types.infer_dtype(values, skipna=True).startswith("mixed"):
            _warn_merged_types(values, pd.unique(values.astype(str)).size)
    return Coded(codes.astype(np.int64), np.asarray(names, dtype=object))


def _warn_merged_types(column: pd.Series, n_names: int) -> None:
    """A DataWarning where values of different types read as one name (``1`` and ``"1"``)."""
    pairs = pd.DataFrame({"text": column.astype(str), "type": column.map(type)}).drop_duplicates()
    if len(pairs) == n_names:
        return
    merged = [group for _, group in pairs.groupby("text", sort=False) if len(group) > 1]
    shown = "; ".join(" and ".join(f"{t.__name__} {x!r}" for x, t in zip(g.text, g.type))
                      for g in merged[:5])
    warn(f"column {column.name!r} holds values of different types that read as the same name, "
         f"taken as one: {shown}" + (f" and {len(merged) - 5} more" if len(merged) > 5 else "")
         + ". Convert the column to one type first if they are different.", DataWarning)


class Keys(NamedTuple):
    """Every row's items (codes into ``items``: the first-shown, the second-shown) and judge."""

    first: np.ndarray
    second: np.ndarray
    items: np.ndarray
    judge: Coded


def check_column_names(required: dict, optional: dict) -> None:
    """The readers' column arguments given as column names (text, or the integers of a frame
    read without a header): ``required`` (``{argument: value}``) never None, ``optional``
    None or a name.  A None where a column is needed had been read as another column's."""
    for argument, value in {**required, **optional}.items():
        if value is None and argument in optional:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, np.integer)):
            raise ParameterError(f"{argument} names a column: give its name, got {value!r}")


def check_columns(df: pd.DataFrame, judge: str | None, columns: dict) -> None:
    """The judge column and the other named ``columns`` (``{column: role}``, None for one not
    asked for) present in ``df``.  Two or more missing are named in one error, each with
    how to name it; a missing judge column alone says how to read one judge's verdicts; any
    other column missing alone is left to the reader's own message."""
    judge_note = ("; or pass judge=None (hja-bayes: --judge-col -) if one judge made every "
                  "verdict")
    if judge is not None and judge not in df.columns and all(
            c is None or c in df.columns for c in columns):
        raise DataError(
            f"no judge column {judge!r}; the columns there are {list(df.columns)}. Name the "
            "judge column with judge=... (CLI --judge-col), or pass judge=None (CLI "
            "--judge-col -) if one judge made every verdict")
    roles = {**({judge: "judge"} if judge is not None else {}),
             **{c: role for c, role in columns.items() if c is not None}}
    missing = [c for c in roles if c not in df.columns]
    if len(missing) >= 2:
        raise DataError(f"column(s) {missing} not found; the columns there are "
                        f"{list(df.columns)}"
                        + "".join(column_hint(c, roles[c], df.columns) for c in missing)
                        + (judge_note if judge in missing else ""))


def row_keys(df: pd.DataFrame, judge, model_a, model_b, cluster) -> Keys:
    """Model and judge names, coded and checked: present, not missing, not empty."""
    roles = {c: role for c, role in zip((judge, model_a, model_b, cluster),
                                        ("judge", "model_a", "model_b", "cluster"))}
    columns = [c for c in roles if c is not None]
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"column(s) {missing} not found; the columns there are "
                        f"{list(df.columns)}" + "".join(column_hint(c, roles[c], df.columns)
                                                        for c in missing))
    for col in columns:
        bad = df[col].isna().to_numpy()
        if bad.any():
            rows = list(df.index[bad][:5])
            where = "line(s)" if df.index.name == "line" else "row(s)"
            raise DataError(
                f"column {col!r} has {int(bad.sum())} missing value(s), first at {where} {rows}")
    out = []
    for col in (model_a, model_b, judge):
        if col is None:
            out.append(Coded(np.zeros(len(df), dtype=np.int64),
                             np.array([SINGLE_JUDGE], dtype=object)))
            continue
        values = coded(df[col], say_merged=True)
        empty = _blank(values)
        if empty.any():
            raise DataError(f"{row_label(df.index, np.argmax(empty))}: empty name in column "
                            f"{col!r} ({int(empty.sum())} such rows)")
        out.append(values)
    a, b, jud = out
    # one list of item names for both columns, in the order of first appearance in a, then b
    index, items = pd.factorize(np.concatenate([a.names, b.names]))
    items = np.asarray(items, dtype=object)
    first, second = index[: len(a.names)][a.codes], index[len(a.names):][b.codes]
    same = first == second
    if same.any():
        raise DataError(f"{row_label(df.index, np.argmax(same))} compares "
                        f"{items[first[np.argmax(same)]]!r} with itself ({int(same.sum())} "
                        "such rows): a model against itself says nothing about the ranking; "
                        "drop the rows whose two models are the same")
    return Keys(first.astype(np.int64), second.astype(np.int64), items, jud)


def codes_in_order(keys: Keys, rows: np.ndarray):
    """``(judge, first, second, judges, items)`` of the rows ``rows`` (a mask): the codes,
    and the names of the judges and items they number, in the order each first appears
    there (items: among the first-shown, then among the second-shown)."""
    k, judges = pd.factorize(keys.judge.codes[rows])
    m = int(rows.sum())
    codes, items = pd.factorize(np.concatenate([keys.first[rows], keys.second[rows]]))
    return (k.astype(np.int64), codes[:m].astype(np.int64), codes[m:].astype(np.int64),
            list(keys.judge.names[judges]), list(keys.items[items]))


def tally(codes: np.ndarray, names: np.ndarray):
    """``(name, count)`` of each name among ``codes``, sorted by name."""
    counts = np.bincount(codes, minlength=len(names))
    return [(names[c], int(counts[c])) for c in sorted(np.flatnonzero(counts),
                                                        key=lambda c: names[c])]


def _blank(column: Coded) -> np.ndarray:
    """Rows whose name is empty or blanks (an empty CSV cell is read as "")."""
    return np.array([not v.strip() for v in column.names], dtype=bool)[column.codes]


def cluster_codes(df: pd.DataFrame, cluster: str | None, keep: np.ndarray):
    """Cluster index of every kept row and the cluster names (None, None without clusters),
    numbered in the order they first appear among the kept rows."""
    if cluster is None:
        return None, None
    column = coded(df[cluster])
    empty = _blank(column)  # on every row, as a missing one is: rejected rows too
    if empty.any():  # an empty CSV cell is "": it had made one prompt of every such verdict
        raise DataError(f"{row_label(df.index, np.argmax(empty))}: empty prompt in column "
                        f"{cluster!r} ({int(empty.sum())} such rows): every row needs its "
                        "prompt, a rejected one too (as with a missing prompt)")
    codes, present = pd.factorize(column.codes[keep])
    names = tuple(column.names[present])
    stripped = pd.Series([str(n).strip() for n in names])
    if stripped.duplicated().any():  # names and judges so alike warn too (readers)
        alike = stripped[stripped.duplicated(keep=False)]
        shown = "; ".join(" / ".join(repr(names[i]) for i in group.index)
                          for _, group in alike.groupby(alike, sort=False))
        warn(f"prompt ids in column {cluster!r} that differ only in surrounding spaces are "
             f"kept apart: {shown}. Strip them first if they are the same prompt (each split "
             "prompt counts as two clusters)", DataWarning)
    return codes, names


def column_hint(name: str, role: str, columns) -> str:
    """How to name a missing column: a column alike but for case and spaces, and the reader's
    argument and the command line's option for it."""
    alike = [c for c in columns if str(c).strip().casefold() == name.strip().casefold()]
    option = role.replace("_", "-")
    return (f"; {name!r}: " + (f"{alike[0]!r} differs only in case or spaces, " if alike else "")
            + f"name it with {role}= (hja-bayes: --{option}-col)")
