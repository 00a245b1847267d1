"""Argument checks shared by every layer: one wording, one exception type per mistake."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .errors import DataError, ParameterError

__all__ = ["check_level", "check_probability", "check_positive", "check_integer", "check_flag",
           "check_choice", "check_numbers", "index_of", "indices_of"]


def check_level(level) -> float:
    """A confidence or credible level strictly between 0 and 1, as a float.

    Raises
    ------
    ParameterError
        For anything else (strings, booleans, 0, 1, NaN).

    Examples
    --------
    >>> check_level(0.9)
    0.9
    """
    if isinstance(level, (bool, str)) or not isinstance(level, (int, float, np.number)):
        raise ParameterError(f"level must be a number in (0, 1), got {level!r}")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ParameterError(f"level must lie in (0, 1), got {level!r}")
    return level


def check_probability(value, name: str, *, open_low: bool = False, open_high: bool = False) -> float:
    """A probability in [0, 1] (ends excluded on request), as a float."""
    if isinstance(value, (bool, str)) or not isinstance(value, (int, float, np.number)):
        raise ParameterError(f"{name} must be a number in [0, 1], got {value!r}")
    value = float(value)
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok) or math.isnan(value):
        lo, hi = "(" if open_low else "[", ")" if open_high else "]"
        raise ParameterError(f"{name} must lie in {lo}0, 1{hi}, got {value!r}")
    return value


def check_positive(value, name: str, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (or >= 0 with ``allow_zero``), as a float."""
    if isinstance(value, (bool, str)) or not isinstance(value, (int, float, np.number)):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"{name} must be finite and {bound}, got {value!r}")
    return value


def check_integer(value, name: str, low: int = 0) -> int:
    """An integer >= ``low`` (NumPy integers too, booleans not), as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_numbers(value, name: str, ndim: int | None = None) -> np.ndarray:
    """An array of finite numbers (of ``ndim`` dimensions where given), as floats.

    Raises
    ------
    ParameterError
        For text or other values that are not numbers, NaN or infinities, or another number
        of dimensions.
    """
    try:
        out = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must hold numbers, got {value!r:.80}") from None
    if ndim is not None and out.ndim != ndim:
        raise ParameterError(f"{name} must have {ndim} dimension(s), got shape {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ParameterError(f"{name} must be finite (no NaN or infinity)")
    return out


def check_flag(value, name: str) -> bool:
    """True or False (NumPy's too): a string such as ``"no"`` is an error, not a true value."""
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """One of ``choices`` (case-insensitive for strings), returned in its canonical spelling."""
    if isinstance(value, str):
        for c in choices:
            if value.lower() == c.lower():
                return c
    raise ParameterError(f"{name} must be one of {list(choices)}, got {value!r}")


def index_of(x, names: Sequence[str], what: str) -> int:
    """Index of a name, or an integer index checked against ``len(names)``.

    Raises
    ------
    ParameterError
        For an unknown name (the message lists the known ones) or an index out of range.

    Examples
    --------
    >>> index_of("b", ("a", "b"), "item"), index_of(0, ("a", "b"), "item")
    (1, 0)
    """
    if isinstance(x, str):
        try:
            return list(names).index(x)
        except ValueError:
            raise ParameterError(f"unknown {what} {x!r}; the {what}s are {list(names)}") from None
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ParameterError(f"a {what} is a name or an integer index, got {x!r}")
    if not 0 <= int(x) < len(names):
        raise ParameterError(f"{what} index {int(x)} out of range 0..{len(names) - 1}")
    return int(x)


def indices_of(x, names: Sequence[str], what: str) -> np.ndarray:
    """:func:`index_of` over a scalar or an array-like; keeps the shape."""
    arr = np.asarray(x, dtype=object)
    flat = [index_of(v.item() if isinstance(v, np.generic) else v, names, what) for v in arr.ravel()]
    return np.asarray(flat, dtype=np.int64).reshape(arr.shape)


def check_comparisons(data) -> None:
    """A :class:`~hja_bayes.Comparisons` (known by its cells' methods: this layer is below
    it), or a DataError saying how to build one (a DataFrame of verdicts is read by
    ``Comparisons.from_frame``)."""
    if not (hasattr(data, "cells_by_judge") and hasattr(data, "check_connected")):
        hint = ""
        if type(data).__name__ == "DataFrame":
            hint = ": build one first, e.g. Comparisons.from_frame(df)"
        raise DataError(f"expected Comparisons, got {type(data).__name__}{hint}")
