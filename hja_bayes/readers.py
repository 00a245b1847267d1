"""Readers: rows of judgments (or counts aggregated upstream) into :class:`Comparisons`.

Every reader validates its input here, once, and hands the rows to
:func:`~hja_bayes.comparisons.aggregate_cells`; what reaches a fitter is clean.  Files are
read by :mod:`hja_bayes.sources`; tables may be pandas DataFrames or anything with
``.to_pandas()`` (polars, pyarrow, Hugging Face datasets).

The verdicts a row may hold, and how each is read, are listed in :mod:`hja_bayes.verdicts`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .categories import THREE
from .comparisons import Comparisons, aggregate_cells
from .errors import DataError, DataWarning, ParameterError, warn
from .features import join_features
from .names import warn_near_duplicates
from .prompt_columns import PROMPT_HINTS, prompt_like_columns
from .row_keys import (check_column_names, check_columns, cluster_codes, codes_in_order,
                       row_keys, tally)
from .sources import as_frame, read_table, row_label
from .verdicts import (FIRST_LABELS, INVALID_LABELS, ONE_HOT_COLUMNS, ORDINAL_LABELS,
                       SECOND_LABELS, TIE_LABELS, check_ambiguous, name_hint, numeric_hint,
                       ordered_verdicts, verdict_codes)

__all__ = ["FIRST_LABELS", "INVALID_LABELS", "ONE_HOT_COLUMNS", "ORDINAL_LABELS", "PROMPT_HINTS",
           "SECOND_LABELS", "TIE_LABELS", "prompt_like_columns", "read_counts", "read_csv",
           "read_file", "read_frame", "read_json", "read_jsonl", "read_parquet"]

#: A "judge" column with at least this many judges ...
CROWD_JUDGES = 20
#: ... whose median judge gave fewer verdicts than this is probably a column of voters.
CROWD_MEDIAN = 10
#: Names of a ties column that the default ``ties="ties"`` would miss.
_TIES_ALIKE = ("ties", "tie", "n_ties", "num_ties", "draws")
#: Largest total count accepted from counts (beyond, float64 sums lose whole units).
MAX_TOTAL_COUNT = 1e12

def read_frame(
    df,
    judge: str | None = "judge",
    model_a: str = "model_a",
    model_b: str = "model_b",
    winner: str = "winner",
    *,
    invalid_labels: Iterable[str] = INVALID_LABELS,
    cluster: str | None = None,
    scale=None,
    features=None,
    feature_transform: str = "relative",
) -> Comparisons:
    """Aggregate one row per judgment into cells.

    Parameters
    ----------
    df : DataFrame, or a table with ``.to_pandas()``
        One row per judgment (polars, pyarrow and Hugging Face tables are converted).
    judge : str or None
        Column naming the judge; None when one judge made every verdict (e.g. crowd votes).
    model_a, model_b : str
        Columns naming the item shown first and second.
    winner : str
        Column holding the verdict (see the module documentation for the labels).  When
        it is absent (and left at its default) and ``winner_model_a``, ``winner_model_b``,
        ``winner_tie`` are there, those one-hot columns give the verdict.
    invalid_labels : iterable of str
        Verdicts treated as "no usable verdict" (compared case-insensitively), in place of
        the default markers (:data:`~hja_bayes.verdicts.INVALID_LABELS`); a missing or empty
        verdict always is one.
    cluster : str, optional
        Column naming the prompt / question / conversation each judgment is about.  Verdicts
        on one prompt are dependent (they share its answers); with clusters known, the
        intervals are cluster-robust by default.
    scale : str or (int, int), optional
        Verdicts are whole numbers from ``lo`` to ``hi`` (``"-2..2"`` or ``(-2, 2)``), a
        higher number favouring the model shown first: the data get ``hi - lo + 1`` ordered
        categories.  Without it, Arena-Hard's labels ``A>>B .. B>>A`` give five.
    features, feature_transform : optional
        Answers' style features (with ``cluster``), joined to every comparison and
        transformed: see :func:`hja_bayes.features.join_features`.

    Returns
    -------
    Comparisons

    Raises
    ------
    DataError
        A path instead of a table (use :func:`read_file`); an empty frame; a missing judge
        column (the message lists the columns and says to pass ``judge=None`` for one
        judge) or other unknown column names; missing or empty names; a row comparing an
        item with itself; a verdict that is neither a label, an invalid marker nor one of
        the row's two items, or that reads two ways because a model is named like a label
        (the message names the row and both readings); one-hot verdicts that are not
        exactly one 1.

    Warns
    -----
    DataWarning
        Judges with no usable verdict; names differing only in case or spaces, or of two
        types read as one (``1`` and ``"1"``); rows that repeat an earlier row in every column
        (checked where a column besides the verdict's looks like an identifier, distinct in
        at least half the rows: bare verdicts, and their categories, may repeat); a judge
        column that looks like one of voters (many judges, few verdicts each: e.g.
        FastChat's ``judge`` column), where ``judge=None`` is probably meant.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"judge": ["j1", "j1", "j2"], "model_a": ["x", "y", "x"],
    ...                    "model_b": ["y", "x", "y"], "winner": ["model_a", "tie", "y"]})
    >>> read_frame(df)
    Comparisons(2 judges, 2 models, 3 cells, 3 comparisons)
    """
    df = as_frame(df, "from_frame")
    if len(df) == 0:
        raise DataError("the frame is empty: no comparisons to read")
    _check_padded_columns(df, (judge, model_a, model_b, winner, cluster))
    check_column_names(dict(model_a=model_a, model_b=model_b, winner=winner),
                       dict(judge=judge, cluster=cluster))
    one_hot = winner == "winner" and all(c in df.columns for c in ONE_HOT_COLUMNS)
    check_columns(df, judge, {model_a: "model_a", model_b: "model_b", cluster: "cluster",
                              **({} if one_hot else {winner: "winner"})})
    verdict, labels = verdict_codes(df, winner, [c for c in (model_a, model_b) if c in df.columns])
    keys = row_keys(df, judge, model_a, model_b, cluster)
    invalid_set = {s.strip().lower() for s in invalid_labels} | {""}  # missing: always
    ordered = ordered_verdicts(df, verdict, labels, scale, invalid_set)

    if ordered is None:  # classify each distinct label once
        normal = [x.strip().lower() for x in labels]
        kind_of_label = np.array([1 if x in FIRST_LABELS else 2 if x in SECOND_LABELS else
                                  3 if x in TIE_LABELS else 4 if x in invalid_set else 0
                                  for x in normal], dtype=np.int64)
        by_label = kind_of_label[verdict]
        # a verdict naming one of the row's two items
        lookup = {name: i for i, name in enumerate(keys.items)}
        named = np.array([lookup.get(x, -1) for x in labels], dtype=np.int64)[verdict]
        by_name = np.where(named == keys.first, 1, np.where(named == keys.second, 2, 0))
        check_ambiguous(df, by_label, by_name, verdict, labels)
        kind = np.where(by_name > 0, by_name, by_label)
    else:
        category, categories = ordered
        kind = np.where(category < 0, 4, 1)
    if np.any(kind == 0):
        pos = int(np.argmax(kind == 0))
        label = labels[verdict[pos]]
        raise DataError(
            f"{row_label(df.index, pos)}: winner {label!r} is neither 'model_a', "
            f"'model_b', a tie label {sorted(TIE_LABELS)}, an invalid marker "
            f"{sorted(x for x in invalid_set if x)}, nor one of the row's items "
            f"({keys.items[keys.first[pos]]!r}, {keys.items[keys.second[pos]]!r})"
            + name_hint(label, (keys.items[keys.first[pos]], keys.items[keys.second[pos]]))
            + numeric_hint(label))
    is_first, is_tie, is_invalid = kind == 1, kind == 3, kind == 4

    warn_near_duplicates(keys.items, "item")
    warn_near_duplicates(keys.judge.names, "judge")
    _warn_repeated_rows(df, {judge, "judge", model_a, model_b, winner, cluster,
                             *ONE_HOT_COLUMNS})

    valid = ~is_invalid
    rejected, by_judge = {}, {}
    if is_invalid.any():
        for lab, c in tally(verdict[is_invalid], labels):
            reason = "no verdict (empty or missing)" if not lab.strip() else \
                f"no usable verdict ({lab.strip().lower()!r})"  # 'error' and 'ERROR' alike
            rejected[reason] = rejected.get(reason, 0) + c
        by_judge = {str(j): c for j, c in tally(keys.judge.codes[is_invalid], keys.judge.names)}

    k, i, j, used_judges, items = codes_in_order(keys, valid)
    if not valid.any():
        raise DataError(f"no valid rows: every verdict was rejected ({rejected})")
    dropped = _warn_dropped(keys.judge.names, used_judges, keys.items, items)
    _warn_crowd(np.bincount(k), judge)
    if ordered is None:
        categories = THREE
        category = np.select([is_first, is_tie], [0, 1], 2)
    m_valid = len(k)
    counts = np.zeros((m_valid, len(categories)))
    counts[np.arange(m_valid), category[valid]] = 1.0

    codes, names = cluster_codes(df, cluster, valid)
    style = {} if features is None else join_features(
        df, features, cluster=cluster, model_a=model_a, model_b=model_b, rows=valid,
        transform=feature_transform).arguments()
    return aggregate_cells(used_judges, items, k, i, j, counts, categories=categories,
                           rows_read=len(df), rows_used=int(valid.sum()), rejected=rejected,
                           dropped_judges=dropped, cluster=codes, cluster_names=names,
                           rejected_by_judge=by_judge, cluster_column=cluster, **style)


def _check_padded_columns(df: pd.DataFrame, names) -> None:
    """A named column missing where the frame has it with spaces around: a CSV written with
    ', ' between its fields, whose values would carry the spaces too."""
    padded = [c for c in df.columns if isinstance(c, str) and c != c.strip()
              and c.strip() in names and c.strip() not in df.columns]
    if padded:
        raise DataError(
            f"column names with spaces around them: {padded} (a CSV written with ', ' between "
            "its fields? its values then carry the spaces too); write it without them, or "
            "read it with pandas.read_csv(..., skipinitialspace=True) and pass the frame")


def _warn_dropped(judges, used_judges, items, used_items) -> tuple:
    """Warn of the judges and models none of whose rows were usable; returns those judges."""
    out = {}
    for what, names, used in (("judge", judges, used_judges), ("model", items, used_items)):
        kept = set(used)
        out[what] = tuple(x for x in names if x not in kept)
        if out[what]:
            warn(f"{what}(s) whose rows here are all unusable, left out of these data: "
                 f"{list(out[what])}", DataWarning)
    return out["judge"]


def _warn_crowd(per_judge: np.ndarray, judge: str | None) -> None:
    if judge is None or len(per_judge) < CROWD_JUDGES:
        return
    median = float(np.median(per_judge))
    if median < CROWD_MEDIAN:
        warn(
            f"{len(per_judge)} judges in column {judge!r} with a median of {median:g} "
            "verdicts each: if these are voters (e.g. FastChat's 'judge' column) rather than "
            "judges to be modelled one by one, pass judge=None (CLI --judge-col -) to pool "
            "them as one judge", DataWarning)


def read_file(path: str | os.PathLike, **columns) -> Comparisons:
    """Read any supported file of judgments: CSV / TSV, JSON Lines, a JSON array, parquet
    (by the suffix, optionally ``.gz``), or ``"-"`` for standard input.

    ``columns`` go to :func:`read_frame`; see :func:`hja_bayes.sources.read_table` for the
    formats.
    """
    return read_frame(read_table(path), **columns)


def read_csv(path: str | os.PathLike, **columns) -> Comparisons:
    """Read a CSV (``.tsv``: tab-separated) with one row per judgment; see
    :func:`read_frame` for ``columns``.  Cells are read as text: ``N/A`` or an empty cell in
    the verdict column is an invalid verdict, not a parse error."""
    named = isinstance(path, (str, os.PathLike))  # else read_table says what a path is
    fmt = "tsv" if named and ".tsv" in [s.lower() for s in Path(path).suffixes] else "csv"
    return read_frame(read_table(path, fmt), **columns)


def read_jsonl(path: str | os.PathLike, **columns) -> Comparisons:
    """Read JSON Lines with one object per judgment; see :func:`read_frame`.  A line that
    is not a JSON object is an error naming its line number."""
    return read_frame(read_table(path, "jsonl"), **columns)


def read_json(path: str | os.PathLike, **columns) -> Comparisons:
    """Read a JSON array of judgment objects, e.g. FastChat's ``clean_battle`` files
    (``model_a``, ``model_b``, ``winner``, and ``judge`` naming the voter: pass
    ``judge=None`` to pool the votes as one judge); see :func:`read_frame`."""
    return read_frame(read_table(path, "json"), **columns)


def read_parquet(path: str | os.PathLike, **columns) -> Comparisons:
    """Read a parquet file with one row per judgment (needs pyarrow); see :func:`read_frame`."""
    return read_frame(read_table(path, "parquet"), **columns)


def read_counts(
    df,
    judge: str | None = "judge",
    model_a: str = "model_a",
    model_b: str = "model_b",
    n: str = "n",
    wins: str = "wins",
    ties: str | None = "ties",
    *,
    cluster: str | None = None,
    category_columns=None,
) -> Comparisons:
    """Build from counts aggregated upstream (e.g. on Spark, Dask or Polars).

    Parameters
    ----------
    df : DataFrame, or a table with ``.to_pandas()``
        One row per (judge, first item, second item) with counts; repeated cells are summed.
    judge, model_a, model_b : str
        Key columns (``judge=None`` for one judge).
    n, wins : str
        Columns with the number of comparisons and the wins of ``model_a`` (ties 1/2).
    ties : str or None
        Column with the number of ties (optional; 0 when absent).
    cluster : str, optional
        Column naming the prompt / question each row's comparisons come from (a row then
        holds the counts of one (cluster, judge, first, second)).
    category_columns : sequence of str, optional
        Ordered verdicts: one count column per category, the strongest preference for
        ``model_a`` first (e.g. ``["A>>B", "A>B", "A=B", "B>A", "B>>A"]``); the column names
        become the categories, and ``n``, ``wins`` and ``ties`` are not read.

    Rows with ``n == 0`` are skipped (and counted in ``summary().rejected``).  Counts may be
    numbers or numeric text; anything else is an error naming the row and the value.

    Raises
    ------
    DataError
        Missing judge or other columns, missing values, empty names, a count that is not a
        number, negative or inconsistent counts, or a total above 1e12 comparisons (float64
        sums would lose whole units: check the units of the counts).
    """
    df = as_frame(df, "from_counts")
    if len(df) == 0:
        raise DataError("the frame is empty: no counts to read")
    check_column_names(dict(model_a=model_a, model_b=model_b, n=n, wins=wins),
                       dict(judge=judge, ties=ties, cluster=cluster))
    if category_columns is not None:
        category_columns = [str(c) for c in category_columns]
        if len(category_columns) < 2:
            raise ParameterError("category_columns needs at least two count columns")
        n = wins = ties = None
    elif ties is not None and ties not in df.columns and ties == "ties":
        alike = [c for c in df.columns if str(c).strip().casefold() in _TIES_ALIKE]
        if alike:  # 'Ties' had been left unread, the ties lost
            raise DataError(f"no column 'ties', but {alike[0]!r} looks like it: pass "
                            f"ties={alike[0]!r} (hja-bayes: --ties-col), or ties=None")
        ties = None
    check_columns(df, judge, {model_a: "model_a", model_b: "model_b", cluster: "cluster",
                              **{c: r for c, r in ((n, "n"), (wins, "wins"), (ties, "ties"))}})
    missing = [c for c in (n, wins, ties, *(category_columns or ()))
               if c is not None and c not in df.columns]
    if missing:
        raise DataError(f"column(s) {missing} not found; the columns there are {list(df.columns)}")
    keys = row_keys(df, judge, model_a, model_b, cluster)
    if category_columns is not None:
        per_category = np.column_stack([_numbers(df, c) for c in category_columns])
        if np.any(per_category < 0):
            raise DataError(f"{row_label(df.index, np.argmax((per_category < 0).any(1)))}: counts "
                            "must be >= 0")
        nn = per_category.sum(axis=1)
        ww = tt = np.zeros(len(df))
    else:
        nn, ww = _numbers(df, n), _numbers(df, wins)
        tt = np.zeros(len(df)) if ties is None else _numbers(df, ties)
        if ties is None and np.any(ww % 1):  # halves: ties counted 1/2, their number lost
            warn("wins hold halves (ties counted 1/2) but no ties column is named: every cell "
                 "is read as without ties (outcome='davidson' then sees none)", DataWarning)
    if np.any(nn < 0) or np.any(tt < 0):
        raise DataError(f"{row_label(df.index, np.argmax((nn < 0) | (tt < 0)))}: counts must be >= 0")
    if nn.sum() > MAX_TOTAL_COUNT:
        raise DataError(f"the counts add up to {nn.sum():.3g} comparisons, more than "
                        f"{MAX_TOTAL_COUNT:.0e}: check their units (these look like scaled "
                        "values, and float64 sums this large lose whole comparisons)")
    bad = (ww < tt / 2 - 1e-9) | (ww > nn - tt / 2 + 1e-9) | (tt > nn)
    if bad.any():
        at = int(np.argmax(bad))
        raise DataError(
            f"{row_label(df.index, at)}: need ties <= n and ties/2 <= wins <= n - ties/2, got "
            f"n = {nn[at]:g}, wins = {ww[at]:g}, ties = {tt[at]:g} ({int(bad.sum())} such rows)")
    warn_near_duplicates(keys.items, "item")
    warn_near_duplicates(keys.judge.names, "judge")
    keep = nn > 0
    if not keep.any():
        raise DataError(f"no comparisons: every row has n == 0 ({len(df)} rows)")
    rejected = {"n == 0": int((~keep).sum())} if (~keep).any() else {}
    k, i, j, judges, items = codes_in_order(keys, keep)
    dropped = _warn_dropped(keys.judge.names, judges, keys.items, items)  # rows of n == 0
    codes, names = cluster_codes(df, cluster, keep)
    if category_columns is not None:
        counts, categories = per_category[keep], tuple(category_columns)
    else:
        nn, ww, tt = nn[keep], ww[keep], tt[keep]
        counts, categories = np.column_stack([ww - tt / 2, tt, nn - ww - tt / 2]), THREE
    data = aggregate_cells(judges, items, k, i, j, counts, categories=categories,
                           rows_read=len(df), rows_used=int(keep.sum()), rejected=rejected,
                           dropped_judges=dropped, cluster=codes, cluster_names=names,
                           cluster_column=cluster)
    c = np.asarray(data.counts)  # per cell: whole comparisons, wins whole or half
    odd = (c.sum(1) % 1 != 0) | ((2 * c[:, 0] + c[:, 1]) % 1 != 0 if c.shape[1] == 3 else False)
    if np.any(odd):  # rates or shares where counts go: intervals as if from that many
        warn(f"{int(odd.sum())} cell(s) hold fractions of a comparison (judge "
             f"{data.judges[data.judge[odd][0]]!r}, {data.items[data.first[odd][0]]!r} against "
             f"{data.items[data.second[odd][0]]!r}: {c[odd][0].tolist()}): counts are read as "
             "numbers of comparisons; rates or shares there give wrong intervals", DataWarning)
    return data


def _numbers(df: pd.DataFrame, column: str) -> np.ndarray:
    """A count column as floats; a missing or non-numeric value is an error naming it."""
    values = df[column]
    if values.isna().any():
        pos = int(np.argmax(values.isna().to_numpy()))
        raise DataError(f"{row_label(df.index, pos)}: column {column!r} has a missing value")
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna().to_numpy() | ~np.isfinite(numbers.to_numpy(dtype=float))
    if bad.any():
        pos = int(np.argmax(bad))
        value = values.iloc[pos]  # a string quoted, a number as written (not np.float64(inf))
        shown = repr(value) if isinstance(value, str) else value
        raise DataError(f"{row_label(df.index, pos)}: column {column!r} holds {shown}, not a "
                        "finite number")
    return numbers.to_numpy(dtype=float)


def _warn_repeated_rows(df: pd.DataFrame, verdict_columns: set) -> None:
    """Warn when rows repeat an earlier row in every column, where a column besides the
    verdict's looks like an identifier (distinct values in at least half the rows: an id, a
    time, a text; a log read twice still has each value twice): a file read twice, or
    overlapping exports.  Without one, repeats may be real repeated verdicts (an LLM judge
    sampled twice on a prompt, a voter voting twice; a category or a score repeats by
    nature; a ``judge`` column pooled by ``judge=None`` counts as the verdict's), so those
    frames are not checked.  Columns holding lists or dicts (JSON logs) are left out."""
    extra = [c for c in df.columns if c not in verdict_columns and _scalar_column(df[c])]
    if not extra:  # the common case, and the cheap one
        return
    try:
        ids = [c for c in extra if 2 * df[c].nunique(dropna=False) >= len(df)]
        # rows that repeat in every column repeat in the identifiers first (a cheap test)
        if not ids or not df.duplicated(subset=ids).any():
            return
        columns = [c for c in df.columns if c in verdict_columns or c in extra]
        repeated = df.duplicated(subset=columns).to_numpy()
    except TypeError:  # an unhashable value past a column's first
        return
    if repeated.any():
        pos = int(np.argmax(repeated))
        # no row before ``pos`` repeats another, so the only pair among them is pos's
        first = int(np.argmax(df.iloc[:pos + 1].duplicated(subset=columns, keep=False)))
        # list-valued columns are unhashable: drop_duplicates() itself would fail on them
        subset = "" if len(columns) == df.shape[1] else f"subset={columns!r}"
        warn(f"{int(repeated.sum()):,} rows repeat an earlier row in every column, "
             f"{', '.join(map(repr, ids))} included (the first at position {pos:,} repeats "
             f"position {first:,}, counting from 0): a file read twice, or overlapping "
             "exports? They count as separate verdicts here (drop them first, e.g. with "
             f"DataFrame.drop_duplicates({subset}), if they are not)", DataWarning)


def _scalar_column(values: pd.Series) -> bool:
    """Whether a column holds scalars (numbers, text), judged by its first value when its
    values are Python objects: JSON logs carry lists and dicts, which do not hash."""
    if values.dtype != object:
        return True
    valid = values.notna().to_numpy()
    return not valid.any() or isinstance(values.iat[int(valid.argmax())], (str, int, float))
