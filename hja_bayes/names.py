"""Names that may be one: judge and model names read apart that a person would read alike.

Names are never merged: a warning names the groups, and the user decides.  Two names count
as alike when they agree after Unicode compatibility normalisation (NFKC: a decomposed
``é`` and a composed one, full-width ``ｇｐｔ`` and ``gpt``), case folding and dropping
everything but letters and digits (``gpt4`` and ``GPT-4``), or when both read as the same
number (``2`` and ``2.0``, a float column's way of writing an integer id).
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np
import pandas as pd

from .errors import DataWarning, warn

__all__ = ["name_key", "warn_near_duplicates"]


def name_key(name) -> str:
    """The form in which alike names agree.

    >>> name_key("GPT-4"), name_key("ｇｐｔ４"), name_key("2.0") == name_key(2)
    ('gpt4', 'gpt4', True)
    """
    text = str(name)
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if math.isfinite(number):
        return repr(number)
    kept = "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalnum())
    return kept or text


def warn_near_duplicates(names: np.ndarray, what: str) -> None:
    """A DataWarning naming the groups of distinct ``names`` that :func:`name_key` finds
    alike (``what``: "item" or "judge")."""
    unique = pd.unique(pd.Series(names, dtype=object))
    keys = pd.Series([name_key(u) for u in unique])
    dup = keys.duplicated(keep=False)
    if dup.any():
        groups = {}
        for name, key in zip(unique[dup.to_numpy()], keys[dup]):
            groups.setdefault(key, []).append(name)
        shown = "; ".join(" / ".join(repr(x) for x in g) for g in groups.values())
        warn(f"{what} names that differ only in case, spaces, punctuation, Unicode form or "
             f"the writing of a number are kept apart: {shown}. Normalise them first if "
             "they are the same.", DataWarning)
