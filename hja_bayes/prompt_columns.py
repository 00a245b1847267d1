"""Which column of a table of verdicts looks like its prompt (for a hint when none is named)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .sources import as_frame
from .verdicts import ONE_HOT_COLUMNS

__all__ = ["PROMPT_HINTS", "prompt_like_columns"]


#: Parts of a column name that suggest it names the prompt of each verdict.
PROMPT_HINTS = ("question", "prompt", "instruction", "conversation", "item", "task", "query",
                "sample", "example", "idx", "id")


def prompt_like_columns(df, exclude=(), judge: str | None = "judge") -> list[tuple[str, int, float]]:
    """Columns that look like the prompt of each verdict: values shared by several judges.

    A column qualifies when it is not in ``exclude`` nor a one-hot verdict column, does not
    hold fractional numbers (scores, confidences) or booleans, has between 3 (two values
    are a flag, e.g. FastChat's ``anony``, and too few prompts to cluster by) and half as
    many distinct values as rows, and at least one of its values was judged by two or more
    judges (or, without a judge column, appears in two or more rows).  Columns whose names
    contain one of :data:`PROMPT_HINTS` come first, then those whose values are shared by
    more judges.

    Parameters
    ----------
    df : DataFrame, or a table with ``.to_pandas()``
    exclude : iterable of str
        Columns already used (judge, models, verdict).
    judge : str or None
        The judge column.

    Returns
    -------
    list of (column, distinct values, mean judges per value)
    """
    df = as_frame(df, "prompt_like_columns")
    rows = len(df)
    exclude = {c for c in exclude if c is not None} | set(ONE_HOT_COLUMNS)
    out = []
    for position, column in enumerate(df.columns):
        if column in exclude or column == judge or df[column].isna().all():
            continue
        raw = df[column]
        if pd.api.types.is_bool_dtype(raw) or (pd.api.types.is_float_dtype(raw)
                                                and np.any(raw.dropna() % 1 != 0)):
            continue  # flags, scores or confidences, not ids
        values = raw.astype(str)
        n_values = int(values.nunique())
        if not 3 <= n_values <= rows / 2:
            continue
        if judge is not None and judge in df.columns:
            per_value = df.assign(_v=values).groupby("_v")[judge].nunique()
        else:
            per_value = values.value_counts()
        if per_value.max() < 2:
            continue
        name = str(column).lower()
        hint = next((i for i, h in enumerate(PROMPT_HINTS) if h in name), len(PROMPT_HINTS))
        out.append((hint, -float(per_value.mean()), position, column, n_values,
                    float(per_value.mean())))
    out.sort(key=lambda found: found[:3])  # the column as named (an int indexes the frame)
    return [(c, n, m) for _, _, _, c, n, m in out]
