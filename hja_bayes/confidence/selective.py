"""Selective evaluation with a guarantee: fixed-sequence testing and judge cascades.

Given a confidence ``C`` and a calibration set, fixed-sequence testing picks the lowest
threshold ``lambda`` such that every threshold at or above it passes the test
``R+(lambda') <= alpha``, where ``R+`` is the exact binomial (Clopper-Pearson) upper
``1 - delta`` bound on the disagreement rate among calibration examples with
``C >= lambda'``.  The thresholds are tested in a fixed order (high to low) and the scan stops
at the first failure, so no multiplicity correction is needed:
``P(risk(lambda_hat) <= alpha) >= 1 - delta`` over the draw of the calibration set
(Bates et al. 2021; Jung, Brahman & Choi 2025).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
from scipy.stats import beta as beta_dist

from .examples import check_agree, check_confidence
from ..errors import DataError

__all__ = [
    "binomial_upper_bound",
    "fixed_sequence_threshold",
    "Cascade",
    "CascadeResult",
    "calibrate_cascade",
    "apply_cascade",
]

#: Settings of the peers' implementation (their ``util.py``): grid size and minimum selected.
JUNG_GRID = 5000
JUNG_MIN_SELECTED = 30


def _check_level(value: float, name: str) -> float:
    v = float(value)
    if not 0.0 < v < 1.0:
        raise DataError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return v


def binomial_upper_bound(k, n, delta: float) -> np.ndarray:
    """Exact (Clopper-Pearson) one-sided upper ``1 - delta`` bound on a binomial rate.

    The largest ``r`` with ``P(Binomial(n, r) <= k) >= delta``, i.e. the ``1 - delta``
    quantile of ``Beta(k + 1, n - k)``; 1 when ``k = n``.

    Parameters
    ----------
    k : array_like of int
        Observed failures (here: disagreements), ``0 <= k <= n``.
    n : array_like of int
        Trials (here: selected examples), ``n >= 1``.
    delta : float
        Error level in (0, 1).

    Returns
    -------
    ndarray
        The bound (a scalar array for scalar input).

    Examples
    --------
    >>> round(float(binomial_upper_bound(0, 30, 0.1)), 4)   # 1 - 0.1 ** (1 / 30)
    0.0739
    """
    delta = _check_level(delta, "delta")
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise DataError("need 0 <= k <= n and n >= 1")
    full = k >= n
    out = beta_dist.ppf(1.0 - delta, k + 1.0, np.where(full, 1.0, n - k))
    return np.where(full, 1.0, out)


def _exact_threshold(c, a, alpha, delta, min_selected):
    order = np.argsort(-c, kind="stable")
    cs, wrong = c[order], (~a[order]).astype(np.float64)
    ends = np.flatnonzero(np.r_[cs[1:] != cs[:-1], True])  # distinct thresholds, high to low
    n_sel = ends + 1
    k_sel = np.cumsum(wrong)[ends]
    ok = n_sel >= min_selected
    lam, n_sel, k_sel = cs[ends][ok], n_sel[ok], k_sel[ok]
    if len(lam) == 0:
        return None
    passes = binomial_upper_bound(k_sel, n_sel, delta) <= alpha
    if not passes[0]:
        return None
    first_fail = np.flatnonzero(~passes)
    last = (first_fail[0] - 1) if len(first_fail) else len(lam) - 1
    return float(lam[last])


def _jung_threshold(c, a, alpha, delta, grid=JUNG_GRID, min_selected=JUNG_MIN_SELECTED):
    """Fixed-sequence testing as the peers' code does it (float32, grid, their step)."""
    c32 = c.astype(np.float32)
    lam_grid = np.linspace(0.0, 1.0, grid, dtype=np.float32)
    csort = np.sort(c32)

    def n_at(lam):
        return len(csort) - np.searchsorted(csort, lam, side="left")

    cands = lam_grid[n_at(lam_grid) >= min_selected]
    if len(cands) == 0:
        return None  # their code returns 0.0 here; a cascade then reuses the previous threshold
    wrong = ~a

    def bound(lams):
        lams = np.asarray(lams, dtype=np.float32)
        n = n_at(lams)
        k = np.array([wrong[c32 >= lam].sum() for lam in lams], dtype=np.int64)
        # the exact count: rounding the risk ratio k/n to float32 and multiplying back (which
        # floors 9/139 * 139 to 8) does not reproduce the peers' reference numbers
        return binomial_upper_bound(k, n, delta)

    if bound(cands[-1:])[0] > alpha:
        return float(cands[-1])  # their "prevents null value" branch: top threshold, uncertified
    step = np.float32(1.0 / len(cands))
    fails = bound((cands - step).astype(np.float32)) > alpha
    hit = np.flatnonzero(fails)
    return float(cands[hit[-1]]) if len(hit) else float(cands[0])


def fixed_sequence_threshold(
    confidence,
    agree,
    alpha: float,
    delta: float,
    min_selected: int = 30,
    *,
    method: str = "exact",
) -> float | None:
    """Lowest confidence threshold whose selective disagreement is certified below ``alpha``.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Calibration confidences (any real scores).
    agree : array_like of bool / 0-1, shape (n,)
        Calibration agreement indicators.
    alpha : float
        Target disagreement rate in (0, 1) (target agreement ``1 - alpha``).
    delta : float
        Allowed failure probability in (0, 1).
    min_selected : int
        Thresholds keeping fewer calibration examples are skipped (with few examples the
        exact bound cannot fall below ``alpha`` anyway; e.g. at ``alpha = 0.15``,
        ``delta = 0.1`` it needs at least 15 examples even with no disagreement).
    method : {"exact", "jung"}
        ``"exact"`` (default): candidates are the distinct calibration confidences with at
        least ``min_selected`` examples at or above them, scanned from the highest down; the
        threshold returned is the last one before the first failure, and None when the highest
        candidate already fails or there is no candidate.  ``"jung"``: the peers'
        implementation, kept to reproduce their numbers: confidences in float32, candidates
        ``linspace(0, 1, 5000)`` with at least 30 examples (``min_selected`` is ignored), the
        test at each candidate made at ``lambda - 1/m`` (m = number of candidates), and,
        when even the highest candidate fails, that highest candidate returned anyway
        (uncertified); None only when there is no candidate.

    Returns
    -------
    float or None
        The threshold ``lambda_hat`` (select examples with ``confidence >= lambda_hat``), or
        None when no threshold qualifies.

    Raises
    ------
    DataError
        On ``alpha`` or ``delta`` outside (0, 1), mismatched lengths, NaN confidences or an
        unknown method.

    Notes
    -----
    With the exact method, ``P(risk(lambda_hat) <= alpha) >= 1 - delta`` where ``risk`` is the
    disagreement rate among future examples with ``C >= lambda_hat`` (None counts as a
    success: nothing is selected).  Skipping candidates by their selected count keeps the
    guarantee: the count at each threshold is set before testing, and the sequence is still
    scanned in a fixed order.

    Examples
    --------
    >>> conf = [0.95] * 40 + [0.6] * 40
    >>> agree = [1] * 40 + [1, 0] * 20
    >>> fixed_sequence_threshold(conf, agree, alpha=0.15, delta=0.1)
    0.95
    >>> fixed_sequence_threshold(conf[:10], agree[:10], alpha=0.15, delta=0.1) is None
    True
    """
    alpha = _check_level(alpha, "alpha")
    delta = _check_level(delta, "delta")
    a = check_agree(agree)
    c = check_confidence(confidence, len(a))
    if method == "exact":
        if int(min_selected) < 1:
            raise DataError("min_selected must be at least 1")
        return _exact_threshold(c, a, alpha, delta, int(min_selected))
    if method == "jung":
        return _jung_threshold(c, a, alpha, delta)
    raise DataError(f"unknown method {method!r}; choose 'exact' or 'jung'")


# --------------------------------------------------------------------------------------
# Cascades
# --------------------------------------------------------------------------------------
class Cascade(NamedTuple):
    """Thresholds of a calibrated cascade of judges (cheapest first).

    Attributes
    ----------
    thresholds : tuple of (float or None)
        One per judge; None: the judge never answers (everything is escalated past it).
    alpha, delta : float
        The target disagreement rate and failure probability used.
    method : str
        ``"exact"`` or ``"jung"``.
    """

    thresholds: tuple
    alpha: float
    delta: float
    method: str


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
) -> Cascade:
    """Calibrate one threshold per judge for cascaded selective evaluation.

    Judges are taken in the given order (cheapest first).  Judge j's threshold is chosen by
    :func:`fixed_sequence_threshold` on the calibration examples that no earlier judge
    answered; examples it then answers (``C_j >= lambda_j``) are removed for the judges that
    follow.  Each judge's answered set thus meets the target on its own, and so does the union.

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
    alpha = _check_level(alpha, "alpha")
    delta = _check_level(delta, "delta")
    confs = _stack(confidences, "confidences")
    if len(agrees) != len(confs):
        raise DataError("give one agreement vector per judge")
    ags = [check_agree(a, len(confs[0])) for a in agrees]
    answered = np.zeros(len(confs[0]), dtype=bool)
    thresholds: list = []
    for c, a in zip(confs, ags):
        rest = ~answered
        lam = (
            fixed_sequence_threshold(c[rest], a[rest], alpha, delta, min_selected, method=method)
            if rest.any()
            else None
        )
        if lam is None and method == "jung" and thresholds:
            lam = thresholds[-1]
        thresholds.append(lam)
        if lam is not None:
            answered |= (c.astype(np.float32) >= np.float32(lam)) if method == "jung" else (c >= lam)
    return Cascade(tuple(thresholds), alpha, delta, method)


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
