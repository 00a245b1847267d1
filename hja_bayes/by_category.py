"""One fit per category of the rows (language, task, question type): the fits behind
:func:`hja_bayes.reporting.categories.leaderboard_by`."""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .errors import DataError, DataWarning, IdentifiabilityError, ParameterError, warn
from .names import warn_near_duplicates

__all__ = ["ALL", "FitsByCategory", "fit_by_category"]

#: Category label of the fit over all rows (``overall=True``).
ALL = "(all)"


class FitsByCategory(NamedTuple):
    """Fits per category, in order (``"(all)"`` first with ``overall``), and the categories
    left out with the reason (their comparisons do not link all their models, or they
    cannot be fitted)."""

    fits: dict
    skipped: dict


def fit_by_category(rows, by: str = "category", *, fitter: Callable | None = None,
                    overall: bool = True, **columns) -> FitsByCategory:
    """Split the rows by the column ``by``, read and fit each part on its own.

    Parameters
    ----------
    rows : DataFrame, or a table with ``.to_pandas()``
        One row per verdict, with the column ``by``.
    by : str
        The column naming each row's category.
    fitter : callable, optional
        ``fitter(comparisons) -> fit``; default :func:`hja_bayes.fit_pooled_btl`.
    overall : bool
        Also a fit over all rows, labelled ``"(all)"``, first.
    **columns
        Column names for :func:`hja_bayes.readers.read_frame`; ``judge`` defaults to None
        (one judge).

    Raises
    ------
    DataError
        When the column ``by`` is missing, a row cannot be read (the rows are read whole
        first: a bad verdict leaves out no category), no category could be fitted, two of
        its values read as one label (``1`` and ``"1"``), or one is named ``"(all)"`` with
        ``overall``.

    Warns
    -----
    DataWarning
        Rows without a category (missing values, empty text): they count in the overall fit
        only.  Categories whose labels differ only in case, spaces or punctuation (``"C1"``,
        ``"c1 "``): they are kept apart, and named.
    """
    from .readers import read_frame
    from .sources import as_frame

    frame = as_frame(rows, "leaderboard_by")
    if isinstance(by, bool) or not isinstance(by, (str, int, np.integer)):
        raise ParameterError(f"by names one column, got {by!r}")
    if by not in frame.columns:
        raise DataError(f"no category column {by!r}; the columns there are {list(frame.columns)}")
    if fitter is None:
        from .btl import fit_pooled_btl as fitter
    columns.setdefault("judge", None)
    blank = frame[by].map(lambda v: isinstance(v, str) and not v.strip())
    if blank.any():  # an empty CSV cell is read as "": no category, not one named ""
        frame = frame.assign(**{by: frame[by].mask(blank)})
    unlabelled = int(frame[by].isna().sum())
    if unlabelled:
        where = "the overall fit only" if overall else "no fit"
        warn(f"{unlabelled} of {len(frame)} rows have no {by!r}: they count in {where}",
             DataWarning)
    _check_labels(frame[by], by, overall)
    # every row read once, its errors raised: a bad verdict is the user's to fix, not a
    # reason to leave out its category and the overall table
    whole = read_frame(frame, **columns)
    parts = [(ALL, lambda: whole)] if overall else []
    parts += [(str(name), lambda group=group: read_frame(group, **columns))
              for name, group in frame.groupby(by, sort=True, dropna=True)]
    fits, skipped = {}, {}
    for name, read in parts:
        try:  # a category's own failures: too few valid verdicts, models not linked
            fits[name] = fitter(read())
        except (DataError, IdentifiabilityError) as exc:
            skipped[name] = " ".join(str(exc).split())
    if not fits:
        raise DataError(f"no category of {by!r} could be fitted: {skipped}")
    return FitsByCategory(fits, skipped)


def _check_labels(values, by: str, overall: bool) -> None:
    """Each category's label (its text) names it alone: two values with one text (``1`` and
    ``"1"``) or a category named :data:`ALL` beside the overall fit would merge tables."""
    texts: dict = {}
    for value in values.dropna().unique():
        texts.setdefault(str(value), []).append(value)
    same = {text: found for text, found in texts.items() if len(found) > 1}
    if same:
        raise DataError(f"values of {by!r} that read as one category: "
                        + "; ".join(f"{found} as {text!r}" for text, found in same.items())
                        + f": give {by!r} one type (e.g. text throughout)")
    warn_near_duplicates(np.array(list(texts), dtype=object), "category")
    if overall and ALL in texts:
        raise DataError(f"a category of {by!r} is named {ALL!r}, the label of the table over "
                        "every row: rename it, or leave the overall table out (overall=False; "
                        "CLI: --no-overall)")
