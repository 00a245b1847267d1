"""How well a confidence orders agreement: ranking loss, AUROC, selective curves.

All three look only at the order of the confidences, never their scale.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.stats import rankdata

from .examples import check_agree, check_confidence

__all__ = ["auroc", "ranking_loss", "SelectiveCurve", "selective_curve", "selective_accuracy"]


def auroc(confidence, agree) -> float:
    """Area under the ROC curve of ``confidence`` for telling agreement from disagreement.

    Equal to the probability that a random agreeing example gets a higher confidence than a
    random disagreeing one, ties counted 1/2 (the Mann-Whitney statistic, computed from
    mid-ranks in O(n log n)).

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Any real scores; only their order matters.
    agree : array_like of bool / 0-1, shape (n,)
        1 where the judge agreed with the human label.

    Returns
    -------
    float

    Raises
    ------
    DataError
        If ``agree`` holds only one class.

    Examples
    --------
    >>> auroc([0.9, 0.8, 0.3, 0.8], [1, 1, 0, 0])
    0.875
    """
    a = check_agree(agree, need_both=True)
    c = check_confidence(confidence, len(a))
    ranks = rankdata(c)
    n_pos = int(a.sum())
    n_neg = len(a) - n_pos
    return float((ranks[a].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def ranking_loss(confidence, agree) -> float:
    """Ranking loss RK: the share of (agree, disagree) pairs the confidence orders wrongly.

    A pair counts 1 when the disagreeing example has the higher confidence and 1/2 on a tie,
    so ``RK = 1 - AUROC``.

    Parameters
    ----------
    confidence : array_like, shape (n,)
    agree : array_like of bool / 0-1, shape (n,)

    Returns
    -------
    float

    Examples
    --------
    >>> ranking_loss([0.9, 0.8, 0.3, 0.8], [1, 1, 0, 0])
    0.125
    """
    return 1.0 - auroc(confidence, agree)


class SelectiveCurve(NamedTuple):
    """Selective accuracy against coverage when keeping examples with confidence >= threshold.

    Attributes
    ----------
    threshold : ndarray
        Distinct confidences, from the highest down.
    coverage : ndarray
        Share of examples kept at each threshold.
    accuracy : ndarray
        Agreement rate among the kept examples.
    n_selected : ndarray of int
        Number of examples kept.
    """

    threshold: np.ndarray
    coverage: np.ndarray
    accuracy: np.ndarray
    n_selected: np.ndarray


def selective_curve(confidence, agree) -> SelectiveCurve:
    """Coverage and selective accuracy at every distinct confidence threshold.

    Parameters
    ----------
    confidence : array_like, shape (n,)
    agree : array_like of bool / 0-1, shape (n,)

    Returns
    -------
    SelectiveCurve

    Examples
    --------
    >>> cur = selective_curve([0.9, 0.8, 0.3, 0.8], [1, 1, 0, 0])
    >>> cur.coverage.tolist(), cur.accuracy.round(3).tolist()
    ([0.25, 0.75, 1.0], [1.0, 0.667, 0.5])
    """
    a = check_agree(agree)
    c = check_confidence(confidence, len(a))
    order = np.argsort(-c, kind="stable")
    cs, as_ = c[order], a[order].astype(np.float64)
    # last position of each run of equal confidences (sorted descending)
    ends = np.flatnonzero(np.r_[cs[1:] != cs[:-1], True])
    kept = ends + 1
    hits = np.cumsum(as_)[ends]
    return SelectiveCurve(cs[ends], kept / len(c), hits / kept, kept.astype(np.int64))


def selective_accuracy(confidence, agree, threshold: float) -> tuple[float, float]:
    """Coverage and agreement rate among examples with ``confidence >= threshold``.

    Parameters
    ----------
    confidence : array_like, shape (n,)
    agree : array_like of bool / 0-1, shape (n,)
    threshold : float or None
        None selects nothing.

    Returns
    -------
    (coverage, accuracy) : tuple of float
        Accuracy is NaN when nothing is selected.
    """
    a = check_agree(agree)
    c = check_confidence(confidence, len(a))
    if threshold is None:
        return 0.0, float("nan")
    keep = c >= threshold
    k = int(keep.sum())
    return k / len(c), (float(a[keep].mean()) if k else float("nan"))
