"""Verdict labels and how a row's verdict is read (by :mod:`hja_bayes.readers`, and by the
scan engines for each distinct verdict).

Verdicts (the ``winner`` column; labels compared without case or surrounding spaces, a
model's name exactly as the model columns write it):

* the first-shown model won: ``model_a``, ``a``;
* the second-shown model won: ``model_b``, ``b``;
* a tie (half a win to each side): ``tie``, ``draw``, ``tie (bothbad)`` (FastChat's
  battles), ``tie (inconsistent)`` (FastChat's MT-Bench judgments: the two presentation
  orders disagreed), ``both_bad`` (arena-rank);
* the winning model's own name;
* no usable verdict (counted per judge, not fitted): ``invalid``, ``unknown``, ``error``,
  ``none``, ``n/a``, ``na``, ``null``, ``nan``, an empty cell or a missing value.

Without a ``winner`` column, Kaggle-style one-hot columns ``winner_model_a``,
``winner_model_b``, ``winner_tie`` (0/1) give the verdict.  A model named like a label
(``A``, ``B``, ``tie``, ``None``) whose verdicts could be read either way is an error that
names both readings.

Ordered verdicts (strength of preference) make the data ordinal, with the categories
running from the strongest preference for the first-shown model to the strongest for the
second:

* Arena-Hard's five labels ``A>>B``, ``A>B``, ``A=B``, ``B>A``, ``B>>A`` (with or without
  ``[[ ]]``; a tie label reads as ``A=B``): recognised when any verdict uses them, and then
  every usable verdict must;
* numbers on a scale (``scale="-2..2"`` or ``(-2, 2)``): whole numbers, a higher number
  favouring the model shown first (``model_a``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import DataError, ParameterError
from .row_keys import column_hint
from .sources import row_label

__all__ = ["FIRST_LABELS", "INVALID_LABELS", "MEANING", "ONE_HOT_COLUMNS", "ORDINAL_LABELS",
           "SECOND_LABELS", "TIE_LABELS", "check_ambiguous", "name_hint", "numeric_hint",
           "ordered_verdicts", "scale_bounds", "scale_of", "verdict_codes", "zero_one"]

#: Winner labels meaning "the item in column ``model_a`` won" / "``model_b`` won" / a tie.
FIRST_LABELS = frozenset({"model_a", "a"})
SECOND_LABELS = frozenset({"model_b", "b"})
TIE_LABELS = frozenset({"tie", "draw", "tie (bothbad)", "tie (inconsistent)", "both_bad"})
#: Verdict labels that mean "no usable verdict": counted and reported, never fitted.
INVALID_LABELS = frozenset({"invalid", "unknown", "error", "none", "n/a", "na", "null", "nan",
                            ""})
#: Kaggle-style one-hot verdict columns: first won, second won, tie.
ONE_HOT_COLUMNS = ("winner_model_a", "winner_model_b", "winner_tie")
#: Arena-Hard's ordered verdicts, the strongest preference for the first-shown model first.
ORDINAL_LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")

MEANING = {1: "the first-shown model won", 2: "the second-shown model won", 3: "a tie",
            4: "no usable verdict"}


def scale_bounds(scale) -> tuple[int, int]:
    """``(lo, hi)`` from ``"-2..2"`` or a pair of whole numbers."""
    if isinstance(scale, str):
        lo, sep, hi = scale.partition("..")
        parts = (lo, hi) if sep else ()
    else:
        parts = tuple(scale) if isinstance(scale, (tuple, list)) else ()
    try:
        values = [float(p) for p in parts]
        lo, hi = (int(v) for v in values) if len(values) == 2 and all(
            v.is_integer() for v in values) else (None, None)  # -2.5 is not -2
    except (TypeError, ValueError):
        lo = hi = None
    if lo is None or not lo < hi or hi - lo > 20:
        raise ParameterError(f"scale must be 'lo..hi' or (lo, hi) with whole numbers lo < hi "
                             f"(at most 21 levels), got {scale!r}")
    return lo, hi


def scale_of(categories) -> tuple[int, int] | None:
    """The ``(lo, hi)`` scale whose verdicts gave these ordered categories (``("2", "1",
    ..., "-2")``), None for labels or three outcomes.

    >>> scale_of(("2", "1", "0", "-1", "-2")), scale_of(("A>>B", "A>B", "A=B", "B>A", "B>>A"))
    ((-2, 2), None)
    """
    try:
        values = [int(c) for c in categories or ()]
    except (TypeError, ValueError):
        return None
    if len(values) < 2 or values != list(range(values[0], values[-1] - 1, -1)):
        return None
    return values[-1], values[0]


def ordered_verdicts(df, codes, distinct, scale, invalid_set):
    """For ordered verdicts, ``(category per row (-1: no usable verdict), categories)``;
    None for three-outcome verdicts.  The verdicts are given as :func:`verdict_codes`
    gives them (each distinct verdict is read once)."""
    normal = np.array([x.strip().lower() for x in distinct], dtype=object)
    invalid = np.isin(normal, list(invalid_set))

    def first_row(bad_value):
        return int(np.argmax(bad_value[codes]))

    if scale is not None:
        lo, hi = scale_bounds(scale)
        numbers = pd.to_numeric(pd.Series(distinct, dtype=object), errors="coerce").to_numpy(dtype=float)
        bad = ~invalid & ~(np.isfinite(numbers) & (numbers == np.round(numbers))
                           & (numbers >= lo) & (numbers <= hi))
        if bad.any():
            pos = first_row(bad)
            raise DataError(f"{row_label(df.index, pos)}: verdict {distinct[codes[pos]]!r} is not a "
                            f"whole number from {lo} to {hi} (scale={scale!r}) nor an invalid "
                            "marker")
        category = np.where(invalid, -1, hi - np.nan_to_num(numbers, nan=hi)).astype(np.int64)
        return category[codes], tuple(str(v) for v in range(hi, lo - 1, -1))
    label = np.array([x.replace(" ", "").strip("[]").upper() for x in distinct], dtype=object)
    index = {lab: c for c, lab in enumerate(ORDINAL_LABELS)}
    strength = np.array([x in index for x in label], dtype=bool)
    if not strength.any():
        return None
    tie = np.isin(normal, list(TIE_LABELS))
    bad = ~strength & ~tie & ~invalid
    if bad.any():
        labelled, other = int(strength[codes].sum()), int(bad[codes].sum())
        if labelled < other:  # a few stray labels among verdicts of another kind: name them
            pos = first_row(strength)
            raise DataError(f"{row_label(df.index, pos)}: verdict {distinct[codes[pos]]!r} is "
                            f"an ordered label ({labelled:,} such rows) among {other:,} verdicts "
                            f"of another kind (such as {distinct[codes[first_row(bad)]]!r}); "
                            "give every verdict on one scale")
        pos = first_row(bad)
        raise DataError(f"{row_label(df.index, pos)}: verdict {distinct[codes[pos]]!r} is none "
                        f"of the ordered labels {list(ORDINAL_LABELS)} found in {labelled:,} "
                        "other rows (nor a tie label or an invalid marker); give every verdict "
                        "on the one scale")
    category = np.array([index.get(x, 2) for x in label], dtype=np.int64)
    return np.where(invalid, -1, category)[codes], ORDINAL_LABELS


def verdict_codes(df: pd.DataFrame, winner: str,
                  models: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The verdicts as ``(codes, labels)``: row r's verdict is ``labels[codes[r]]``, as text
    ("" where it is missing); ``labels`` (an object array) holds each distinct verdict once,
    in the order of first appearance."""
    if winner in df.columns:
        column = df[winner]
        missing = column.isna().to_numpy()
        codes, labels = pd.factorize(column.astype(str))
        labels = np.asarray(labels, dtype=object)
        if missing.any():  # "" for every missing value, and no label that only they had
            labels = np.append(labels, "")
            codes = np.where(missing, len(labels) - 1, codes)
            codes, used = pd.factorize(codes)
            labels = labels[used]
        return codes.astype(np.int64), labels
    if winner == "winner" and all(c in df.columns for c in ONE_HOT_COLUMNS):
        flags = np.stack([zero_one(df, c) for c in ONE_HOT_COLUMNS], axis=1)
        bad = flags.sum(axis=1) != 1
        if bad.any():
            pos = int(np.argmax(bad))
            raise DataError(f"{row_label(df.index, pos)}: the one-hot verdict columns "
                            f"{list(ONE_HOT_COLUMNS)} must hold exactly one 1, got "
                            f"{flags[pos].tolist()}")
        codes, used = pd.factorize(flags.argmax(axis=1))
        return codes.astype(np.int64), np.array(["model_a", "model_b", "tie"], dtype=object)[used]
    raise DataError(f"no verdict column {winner!r} (nor the one-hot columns "
                    f"{list(ONE_HOT_COLUMNS)}); the columns there are {list(df.columns)}"
                    + column_hint(winner, "winner", df.columns))


def zero_one(df: pd.DataFrame, column: str) -> np.ndarray:
    """A column of 0/1 (or true/false) values as integers; a clear error naming the first
    row that is neither."""
    text = df[column].astype(str).str.strip().str.lower()
    ones, zeros = text.isin(["1", "1.0", "true"]), text.isin(["0", "0.0", "false"])
    if not (ones | zeros).all():
        pos = int(np.argmax(~(ones | zeros).to_numpy()))
        raise DataError(f"{row_label(df.index, pos)}: column {column!r} must be 0 or 1, got "
                        f"{df[column].iloc[pos]!r}")
    return ones.to_numpy().astype(np.int64)


def check_ambiguous(df, by_label, by_name, codes, labels) -> None:
    """A verdict that is both a label and one of the row's model names, with two meanings
    (the verdicts as :func:`verdict_codes` gives them)."""
    clash = (by_label > 0) & (by_name > 0) & (by_label != by_name)
    if not clash.any():
        return
    pos = int(np.argmax(clash))
    side = "first" if by_name[pos] == 1 else "second"
    names = sorted({str(x) for x in labels[np.unique(codes[clash])]})
    verdict = labels[codes[pos]]
    raise DataError(
        f"{row_label(df.index, pos)}: the verdict {verdict!r} reads two ways: as the label for "
        f"'{MEANING[int(by_label[pos])]}', and as the name of the model {verdict!r} shown "
        f"{side} (so that it won); {int(clash.sum())} rows read differently either way. "
        f"Models named like verdict labels ({names}): rename them, or give the verdicts as "
        "model_a / model_b / tie")


def numeric_hint(label) -> str:
    """What an unknown verdict that is a number may mean, for its error ("" for text)."""
    if pd.isna(pd.to_numeric(pd.Series([label]), errors="coerce")[0]):
        return ""
    return ("; numbers are read as ordered verdicts with scale='LO..HI' (CLI --verdict-scale), "
            "higher favouring model_a")


def name_hint(label, names) -> str:
    """For an unknown verdict that is one of the row's model ``names`` but for case, spaces
    or Unicode form, what differs ("" otherwise): names are matched exactly."""
    import unicodedata

    def plain(x) -> str:
        return unicodedata.normalize("NFC", str(x)).strip().casefold()

    alike = [n for n in names if plain(n) == plain(label)]
    if not alike:
        return ""
    return (f"; it differs from the model {alike[0]!r} only in case, surrounding spaces or "
            "Unicode form (ascii: " + ascii(str(label)) + " against " + ascii(str(alike[0]))
            + "): a winner's name must be written as in the model columns")
