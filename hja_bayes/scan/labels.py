"""The verdict rules of the readers, applied to the distinct verdicts of a scan.

A log of a hundred million rows holds a handful of distinct verdicts (the labels, and the
models' own names when a verdict names the winner).  The engine lists them with their
counts in one cheap group-by; this module reads each distinct value by the rules of
:func:`hja_bayes.readers.read_frame` and returns a small table from the raw value to its
meaning, which the engine then joins to every row.  Only the comparison of a verdict with
the row's two model names is made row by row, inside the engine.

Codes (the ``code`` column of the table, and of the engine's mapped rows):

* ``0 .. C-1``: the verdict's ordered category (the strongest preference for the model
  shown first is 0);
* ``C + l``: no usable verdict, label ``l`` of :attr:`Verdicts.invalid_labels` (counted per
  judge and label, never fitted);
* negative: an error in the row (:data:`UNKNOWN`, :data:`AMBIGUOUS`, :data:`SELF`,
  :data:`MISSING`).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

import numpy as np
import pandas as pd

from ..categories import THREE
from ..errors import DataError
from ..row_keys import column_hint
from ..verdicts import (
    FIRST_LABELS,
    INVALID_LABELS,
    ONE_HOT_COLUMNS,
    ORDINAL_LABELS,
    SECOND_LABELS,
    TIE_LABELS,
    scale_bounds,
)

__all__ = ["AMBIGUOUS", "MISSING", "SELF", "UNKNOWN", "BadVerdict", "Verdicts", "classify",
           "kind_meaning"]

#: A verdict that is neither a label, an invalid marker nor one of the row's models.
UNKNOWN = -1
#: A verdict that is a label and one of the row's model names, with two meanings.
AMBIGUOUS = -2
#: A row comparing a model with itself.
SELF = -3
#: A row with a missing judge, model or prompt.
MISSING = -4

_KIND_WORDS = {1: "the first-shown model won", 2: "the second-shown model won", 3: "a tie",
               4: "no usable verdict"}


def kind_meaning(kind: int) -> str:
    """What a verdict label of ``kind`` (1 first, 2 second, 3 tie, 4 invalid) means."""
    return _KIND_WORDS[int(kind)]


class BadVerdict(Exception):
    """A distinct verdict value that no rule reads; the scan names the first row holding it.

    Attributes
    ----------
    values : dict
        Verdict column -> raw value of the offending rows.
    message : str
        What is wrong, to follow the row's location.
    """

    def __init__(self, values: dict, message: str):
        super().__init__(message)
        self.values, self.message = values, message


class Verdicts(NamedTuple):
    """The meaning of every distinct verdict of a scan.

    Attributes
    ----------
    columns : tuple of str
        The verdict column(s): ``(winner,)``, or the three one-hot columns.
    table : DataFrame
        One row per distinct raw value: the key columns ``v0`` (``v1``, ``v2`` for one-hot)
        as text, ``text`` (the verdict as :func:`~hja_bayes.readers.read_frame` reads it),
        ``kind`` (label kind: 0 none, 1 first, 2 second, 3 tie, 4 invalid) and ``code``.
    categories : tuple of str
    by_name : bool
        Whether a verdict may name the winning model (three-outcome verdicts only).
    invalid_labels : tuple of str
        The raw invalid verdicts, indexed by ``code - C``.
    counts : ndarray
        Rows holding each distinct value.
    """

    columns: tuple
    table: pd.DataFrame
    categories: tuple
    by_name: bool
    invalid_labels: tuple
    counts: np.ndarray

    @property
    def n_categories(self) -> int:
        """C."""
        return len(self.categories)


def _text_flags(values: np.ndarray, column: str) -> np.ndarray:
    """One-hot flags read as 0/1 (-1 where the value is neither)."""
    text = np.array([str(v).strip().lower() for v in values], dtype=object)
    ones, zeros = np.isin(text, ["1", "1.0", "true"]), np.isin(text, ["0", "0.0", "false"])
    return np.where(ones, 1, np.where(zeros, 0, -1))


def _one_hot_text(keys: pd.DataFrame) -> np.ndarray:
    flags = []
    for pos, column in enumerate(ONE_HOT_COLUMNS):
        values = keys[f"v{pos}"].to_numpy(dtype=object)
        f = _text_flags(values, column)
        bad = f < 0
        if bad.any():
            row = int(np.argmax(bad))
            raise BadVerdict({c: keys[f"v{p}"].iloc[row] for p, c in enumerate(ONE_HOT_COLUMNS)},
                             f"column {column!r} must be 0 or 1, got {values[row]!r}")
        flags.append(f)
    flags = np.stack(flags, axis=1)
    bad = flags.sum(axis=1) != 1
    if bad.any():
        row = int(np.argmax(bad))
        raise BadVerdict({c: keys[f"v{p}"].iloc[row] for p, c in enumerate(ONE_HOT_COLUMNS)},
                         f"the one-hot verdict columns {list(ONE_HOT_COLUMNS)} must hold "
                         f"exactly one 1, got {flags[row].tolist()}")
    return np.array(["model_a", "model_b", "tie"], dtype=object)[flags.argmax(axis=1)]


def classify(keys: pd.DataFrame, counts, columns: tuple, *, scale=None,
             invalid_labels: Iterable[str] = INVALID_LABELS) -> Verdicts:
    """Read every distinct verdict by the rules of :func:`~hja_bayes.readers.read_frame`.

    Parameters
    ----------
    keys : DataFrame
        One row per distinct raw value of the verdict column(s), as text (``v0``; with the
        one-hot columns ``v0, v1, v2``); a missing verdict as ``""``.
    counts : array
        Rows holding each value.
    columns : tuple of str
        The verdict column(s) the keys come from.
    scale : str or (int, int), optional
        Verdicts are whole numbers from lo to hi (see ``read_frame``).
    invalid_labels : iterable of str

    Returns
    -------
    Verdicts

    Raises
    ------
    BadVerdict
        A value off the scale, a value mixing kinds with Arena-Hard's ordered labels, or
        malformed one-hot flags; the caller locates a row holding it.
    ParameterError
        A malformed ``scale``.
    """
    keys = keys.reset_index(drop=True)
    counts = np.asarray(counts, dtype=np.int64)
    if len(columns) == 3:
        text = _one_hot_text(keys)
    else:
        text = keys["v0"].to_numpy(dtype=object)
    normal = np.array([t.strip().lower() for t in text], dtype=object)
    invalid_set = {s.strip().lower() for s in invalid_labels} | {""}  # missing: always
    invalid = np.isin(normal, list(invalid_set))
    # each invalid raw verdict gets its own label id (reasons are counted per raw label)
    invalid_ids = np.cumsum(invalid) - 1
    invalid_text = tuple(str(t) for t in text[invalid])

    def row_values(row: int) -> dict:
        return {c: keys[f"v{p}"].iloc[row] for p, c in enumerate(columns)}

    ordered = None
    if scale is not None:
        lo, hi = scale_bounds(scale)
        numbers = pd.to_numeric(pd.Series(text), errors="coerce").to_numpy(dtype=float)
        whole = np.isfinite(numbers) & (numbers == np.round(numbers)) & (numbers >= lo) \
            & (numbers <= hi)
        bad = ~invalid & ~whole
        if bad.any():
            row = int(np.argmax(bad))
            raise BadVerdict(row_values(row), f"verdict {text[row]!r} is not a whole number "
                                              f"from {lo} to {hi} (scale={scale!r}) nor an "
                                              "invalid marker")
        category = (hi - np.nan_to_num(numbers, nan=hi)).astype(np.int64)
        ordered = category, tuple(str(v) for v in range(hi, lo - 1, -1))
    else:
        label = np.array([t.replace(" ", "").strip("[]").upper() for t in text], dtype=object)
        index = {lab: c for c, lab in enumerate(ORDINAL_LABELS)}
        strength = np.array([x in index for x in label], dtype=bool)
        if strength.any():
            tie = np.isin(normal, list(TIE_LABELS))
            bad = ~strength & ~tie & ~invalid
            if bad.any():
                row = int(np.argmax(bad))
                raise BadVerdict(row_values(row), f"verdict {text[row]!r} is none of the "
                                                  f"ordered labels {list(ORDINAL_LABELS)} found "
                                                  "in other rows (nor a tie label or an invalid "
                                                  "marker); give every verdict on the one scale")
            ordered = (np.array([index.get(x, 2) for x in label], dtype=np.int64),
                       ORDINAL_LABELS)

    if ordered is None:
        categories = THREE
        C = 3
        kind = np.array([1 if x in FIRST_LABELS else 2 if x in SECOND_LABELS else
                         3 if x in TIE_LABELS else 4 if x in invalid_set else 0
                         for x in normal], dtype=np.int64)
        category = np.select([kind == 1, kind == 3, kind == 2], [0, 1, 2], UNKNOWN)
    else:
        category, categories = ordered
        C = len(categories)
        kind = np.where(invalid, 4, 1)
    code = np.where(invalid, C + invalid_ids, category).astype(np.int64)
    table = keys[[f"v{p}" for p in range(len(columns))]].copy()
    table["text"] = text
    table["kind"] = kind.astype(np.int64)
    table["code"] = code
    return Verdicts(tuple(columns), table, tuple(categories), ordered is None, invalid_text,
                    counts)


def check_columns(columns: list, needed: dict) -> None:
    """Raise before any work when a named column is not in the source.

    ``needed`` maps a role ("judge", "model_a", ...) to a column name (None: not used).
    """
    missing = [c for c in needed.values() if c is not None and c not in columns]
    if "judge" in needed and needed["judge"] is not None and needed["judge"] not in columns:
        raise DataError(
            f"no judge column {needed['judge']!r}; the columns there are {list(columns)}. Name "
            "the judge column with judge=..., or pass judge=None if one judge made every "
            "verdict")
    if missing:
        raise DataError(f"column(s) {missing} not found; the columns there are {list(columns)}")


def verdict_columns(columns: list, winner: str) -> tuple:
    """``(winner,)``, or the one-hot columns when ``winner`` is absent and they are there."""
    if winner in columns:
        return (winner,)
    if winner == "winner" and all(c in columns for c in ONE_HOT_COLUMNS):
        return ONE_HOT_COLUMNS
    raise DataError(f"no verdict column {winner!r} (nor the one-hot columns "
                    f"{list(ONE_HOT_COLUMNS)}); the columns there are {list(columns)}"
                    + column_hint(winner, "winner", columns))


def check_scale_argument(scale) -> None:
    """A malformed ``scale`` is an error before any work."""
    if scale is not None:
        scale_bounds(scale)

