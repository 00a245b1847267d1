"""Input transforms fitted inside the confidence ranker: normal scores, or z-scores.

Judges' probabilities pile up near 0 and 1 (on Trust-or-Escalate half of gpt-4's values are
above 0.997, and agreement still changes between 0.997 and 0.9999), so a network fed the raw
numbers sees almost no difference where the signal is.  The default transform maps every
feature to normal scores through its training quantiles, ``Phi^-1(F_hat(x))``: any
increasing re-coding of a feature then gives the same network input (as it does for a tree),
and the inputs are on the scale the prior of the weights assumes.

A transform is plain data (:class:`InputTransform`), fitted by :func:`fit_transform` and
applied by :func:`apply_transform`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

from ..checks import check_choice

__all__ = ["InputTransform", "TRANSFORMS", "apply_transform", "fit_transform"]

#: The transforms the ranker knows.
TRANSFORMS = ("quantile", "standardize", "none")
#: At most this many quantile knots per feature.
N_KNOTS = 256
#: Normal scores are clipped to the quantiles ``[EDGE, 1 - EDGE]`` (about +-3.1).
EDGE = 1e-3


class InputTransform(NamedTuple):
    """A fitted per-feature transform.

    Attributes
    ----------
    kind : str
        ``"quantile"``, ``"standardize"`` or ``"none"``.
    knots : ndarray, shape (k, d)
        Training quantiles of every feature at ``levels`` (quantile transform), or the
        feature means in row 0 and standard deviations in row 1 (standardize), or empty.
    levels : ndarray, shape (k,)
        Probability levels of the knots (quantile transform only).
    """

    kind: str
    knots: np.ndarray
    levels: np.ndarray


def fit_transform(x: np.ndarray, kind: str = "quantile") -> InputTransform:
    """Fit a transform on training features.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Finite training features.
    kind : {"quantile", "standardize", "none"}

    Returns
    -------
    InputTransform

    Examples
    --------
    >>> import numpy as np
    >>> t = fit_transform(np.arange(10.0)[:, None])
    >>> apply_transform(t, np.array([[4.5]])).round(6).tolist()
    [[0.0]]
    """
    kind = check_choice(kind, "preprocess", TRANSFORMS)
    x = np.asarray(x, dtype=np.float64)
    if kind == "quantile":
        levels = np.linspace(0.0, 1.0, min(N_KNOTS, x.shape[0]))
        return InputTransform(kind, np.quantile(x, levels, axis=0), levels)
    if kind == "standardize":
        sd = x.std(axis=0)
        return InputTransform(kind, np.vstack([x.mean(axis=0), np.where(sd > 0, sd, 1.0)]), np.empty(0))
    return InputTransform(kind, np.empty((0, x.shape[1])), np.empty(0))


def apply_transform(transform: InputTransform, x: np.ndarray) -> np.ndarray:
    """Transform features with a fitted transform.

    For the quantile transform, a value's level is interpolated between the knots (the mean
    of the interpolation from below and from above, so a run of tied knots maps to its middle
    level) and turned into a normal score; values beyond the training range get the end
    scores; a constant feature maps to 0.

    Parameters
    ----------
    transform : InputTransform
    x : ndarray, shape (n, d)

    Returns
    -------
    ndarray, shape (n, d)
    """
    x = np.asarray(x, dtype=np.float64)
    if transform.kind == "none":
        return x
    if transform.kind == "standardize":
        return (x - transform.knots[0]) / transform.knots[1]
    out = np.empty_like(x)
    levels = transform.levels
    for j in range(x.shape[1]):
        knots = transform.knots[:, j]
        if knots[-1] <= knots[0]:
            out[:, j] = 0.0
            continue
        up = np.interp(x[:, j], knots, levels)
        down = -np.interp(-x[:, j], -knots[::-1], -levels[::-1])
        out[:, j] = ndtri(np.clip(0.5 * (up + down), EDGE, 1.0 - EDGE))
    return out
