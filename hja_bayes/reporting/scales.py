"""The scales scores are shown on: the model's logit scale, or Elo points."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from ..checks import check_choice
from ..errors import ParameterError

__all__ = ["ELO_BASE", "ELO_FACTOR", "SCALES", "Scale", "check_scale", "table_scale",
           "to_scale"]

#: Elo points per logit: ``400 / ln 10`` (a 400-point gap means 10:1 odds).
ELO_FACTOR = 400.0 / math.log(10.0)
#: Elo score given to a consensus score of zero (the panel's average model).
ELO_BASE = 1000.0

Scale = Literal["logit", "elo"]
SCALES = ("logit", "elo")


def check_scale(scale) -> str:
    """``"logit"`` or ``"elo"`` (any case); a ParameterError otherwise."""
    return check_choice(scale, "scale", SCALES)


def table_scale(scale, style: str) -> str:
    """A leaderboard's scale: ``scale``, or when None the style's (Elo for ``"arena"``,
    FastChat's columns, which refuses the logit scale; logits otherwise)."""
    scale = check_scale(("elo" if style == "arena" else "logit") if scale is None else scale)
    if style == "arena" and scale != "elo":  # it had shown Elo ratings all the same
        raise ParameterError("style='arena' shows FastChat's Elo ratings: scale='logit' does "
                             "not apply (leave scale out, or style='default' for logits)")
    return scale


def to_scale(x, scale: Scale = "logit", *, difference: bool = False) -> np.ndarray:
    """Express consensus scores (or differences of them) on the logit or the Elo scale.

    Parameters
    ----------
    x : array
        Scores on the logit scale (the model's own).
    scale : {"logit", "elo"}
        ``"elo"`` maps a score to ``400 / ln 10 * x + 1000``.
    difference : bool
        True when ``x`` holds differences of scores: the offset is then left out.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> to_scale([0.0, 1.0], "elo").round(1).tolist()
    [1000.0, 1173.7]
    """
    x = np.asarray(x, dtype=float)
    if check_scale(scale) == "logit":
        return x
    return ELO_FACTOR * x + (0.0 if difference else ELO_BASE)
