"""Cascaded selective evaluation: judges ordered by cost, each with its own certified threshold.

An example goes to the first judge (cheapest first) whose confidence reaches that judge's
threshold; examples no judge is confident enough about are abstained on.  Judge j's
threshold is certified on the calibration examples no earlier judge answered.

The guarantee is joint: with probability at least ``1 - delta``, *every* judge's answered
set has disagreement at most ``alpha`` (and then so has their union, a mixture of them).
That needs all J certificates to hold at once, so by the union bound each judge is certified
at ``delta / J`` (``delta_split="bonferroni"``, the default).  ``delta_split="none"``
certifies each judge at ``delta`` as the peers' code does; each judge's set then meets the
target with probability ``1 - delta`` on its own, but all of them only with ``1 - J delta``.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..checks import check_choice
from ..errors import DataError
from .examples import check_agree, check_confidence
from .selective import check_level, fixed_sequence_threshold, is_grouped

__all__ = ["Cascade", "CascadeResult", "apply_cascade", "calibrate_cascade"]


class Cascade(NamedTuple):
    """Thresholds of a calibrated cascade of judges (cheapest first).

    Attributes
    ----------
    thresholds : tuple of (float or None)
        One per judge; None: the judge never answers (everything is escalated past it).
    alpha, delta : float
        The target disagreement rate and the overall failure probability.
    method : str
        ``"exact"`` or ``"jung"``.
    delta_per_judge : float or None
        The level each judge was certified at (``delta / J`` with the Bonferroni split).
    grouped : bool
        Whether the group-level test was used.
    """

    thresholds: tuple
    alpha: float
    delta: float
    method: str
    delta_per_judge: float | None = None
    grouped: bool = False


class CascadeResult(NamedTuple):
    """What a cascade decided on a set of examples.

    Attributes
    ----------
    verdict : ndarray of int, shape (n,)
        The verdict of the judge that answered; -1 where the cascade abstained.
    judge : ndarray of int, shape (n,)
        Index of the judge that answered; -1 where the cascade abstained.
    coverage : float
        Share of examples answered.
    agreement : float
        Agreement with the human label among answered examples (NaN without human labels or
        when nothing was answered).
    judge_share : ndarray, shape (n_judges,)
        Share of the answered examples each judge answered.
    """

    verdict: np.ndarray
    judge: np.ndarray
    coverage: float
    agreement: float
    judge_share: np.ndarray


def _stack(confidences, name) -> list[np.ndarray]:
    if len(confidences) == 0:
        raise DataError(f"{name}: need at least one judge")
    out = [check_confidence(c) for c in confidences]
    if len({len(c) for c in out}) != 1:
        raise DataError(f"{name}: every judge needs the same examples")
    return out


def calibrate_cascade(
    confidences: Sequence,
    agrees: Sequence,
    alpha: float,
    delta: float,
    min_selected: int = 30,
    *,
    method: str = "exact",
    groups=None,
    delta_split: str = "bonferroni",
    seed: int = 0,
) -> Cascade:
    """Calibrate one threshold per judge for cascaded selective evaluation.

    Judges are taken in the given order (cheapest first).  Judge j's threshold is chosen by
    :func:`fixed_sequence_threshold` at level ``delta / J`` on the calibration examples that
    no earlier judge answered; examples it then answers (``C_j >= lambda_j``) are removed for
    the judges that follow.  With probability at least ``1 - delta`` every judge's answered
    set meets the target, and so does their union (see the module docstring).

    Parameters
    ----------
    confidences : sequence of array_like, each shape (n,)
        Per-judge confidences on the same calibration examples.
    agrees : sequence of array_like, each shape (n,)
        Per-judge agreement with the human label.
    alpha, delta : float
        Target disagreement rate and failure probability, both in (0, 1).
    min_selected : int
        See :func:`fixed_sequence_threshold`.
    method : {"exact", "jung"}
        See :func:`fixed_sequence_threshold`.  With ``"jung"`` a judge left with no candidate
        threshold reuses the previous judge's threshold, as the peers' code does.
    groups : array_like, shape (n,), optional
        Group label of every calibration example; each judge's test is then made at the level
        of groups (exact method only).
    delta_split : {"bonferroni", "none"}
        ``"bonferroni"`` (default): each judge at ``delta / J``, so the joint guarantee holds.
        ``"none"``: each judge at ``delta`` (the peers' code; reproduce their numbers with
        ``method="jung", delta_split="none"``).
    seed : int
        Seed of the group orders of the grouped test.

    Returns
    -------
    Cascade

    Examples
    --------
    >>> conf = [[0.9] * 40 + [0.5] * 40, [0.5] * 40 + [0.9] * 40]
    >>> agree = [[1] * 40 + [0] * 40, [0] * 40 + [1] * 40]
    >>> calibrate_cascade(conf, agree, 0.15, 0.1).thresholds
    (0.9, 0.9)
    """
    alpha = check_level(alpha, "alpha")
    delta = check_level(delta, "delta")
    delta_split = check_choice(delta_split, "delta_split", ("bonferroni", "none"))
    confs = _stack(confidences, "confidences")
    level = delta / len(confs) if delta_split == "bonferroni" else delta
    g = None if groups is None else np.asarray(groups)
    if g is not None and len(g) != len(confs[0]):
        raise DataError(f"groups has {len(g)} entries but there are {len(confs[0])} examples")
    if len(agrees) != len(confs):
        raise DataError("give one agreement vector per judge")
    ags = [check_agree(a, len(confs[0])) for a in agrees]
    answered = np.zeros(len(confs[0]), dtype=bool)
    thresholds: list = []
    for c, a in zip(confs, ags):
        rest = ~answered
        lam = (
            fixed_sequence_threshold(c[rest], a[rest], alpha, level, min_selected, method=method,
                                     groups=None if g is None else g[rest], seed=seed)
            if rest.any()
            else None
        )
        if lam is None and method == "jung" and thresholds:
            lam = thresholds[-1]
        thresholds.append(lam)
        if lam is not None:
            answered |= (c.astype(np.float32) >= np.float32(lam)) if method == "jung" else (c >= lam)
    return Cascade(tuple(thresholds), alpha, delta, method, level, is_grouped(g))


def apply_cascade(cascade: Cascade | Sequence, confidences: Sequence, verdicts: Sequence, human=None) -> CascadeResult:
    """Run a calibrated cascade: each example goes to the first judge confident enough.

    Parameters
    ----------
    cascade : Cascade or sequence of (float or None)
        The thresholds, one per judge.
    confidences : sequence of array_like, each shape (n,)
        Per-judge confidences.
    verdicts : sequence of array_like of int, each shape (n,)
        Per-judge verdicts.
    human : array_like of int, shape (n,), optional
        Human labels, for the agreement rate.

    Returns
    -------
    CascadeResult
        With a ``"jung"`` cascade the comparisons are made in float32, as the peers' code
        does.  Examples no judge is confident enough about are abstained on (judge -1).
    """
    thresholds = cascade.thresholds if isinstance(cascade, Cascade) else tuple(cascade)
    confs = _stack(confidences, "confidences")
    if not (len(thresholds) == len(confs) == len(verdicts)):
        raise DataError("need one threshold, confidence vector and verdict vector per judge")
    n = len(confs[0])
    vs = [np.asarray(v) for v in verdicts]
    if any(v.shape != (n,) for v in vs):
        raise DataError("every verdict vector must match the confidences")
    judge = np.full(n, -1, dtype=np.int64)
    verdict = np.full(n, -1, dtype=np.int64)
    jung = isinstance(cascade, Cascade) and cascade.method == "jung"
    for j, (lam, c, v) in enumerate(zip(thresholds, confs, vs)):
        if lam is None:
            continue
        above = (c.astype(np.float32) >= np.float32(lam)) if jung else (c >= lam)
        take = (judge < 0) & above
        judge[take] = j
        verdict[take] = v[take]
    answered = judge >= 0
    coverage = float(answered.mean())
    share = np.array([(judge == j).sum() for j in range(len(confs))], dtype=np.float64)
    share = share / answered.sum() if answered.any() else share
    agreement = float("nan")
    if human is not None and answered.any():
        h = np.asarray(human)
        if h.shape != (n,):
            raise DataError(f"human must have shape ({n},)")
        agreement = float((verdict[answered] == h[answered]).mean())
    return CascadeResult(verdict, judge, coverage, agreement, share)
