"""Selective evaluation with a guarantee: fixed-sequence testing of a confidence threshold.

Given a confidence ``C`` and a calibration set, fixed-sequence testing picks the lowest
threshold ``lambda`` such that every threshold at or above it passes the test
``R+(lambda') <= alpha``, where ``R+`` is the exact binomial (Clopper-Pearson) upper
``1 - delta`` bound on the disagreement rate among calibration examples with
``C >= lambda'``.  The thresholds are tested in a fixed order (high to low) and the scan stops
at the first failure, so no multiplicity correction is needed:
``P(risk(lambda_hat) <= alpha) >= 1 - delta`` over the draw of the calibration set
(Bates et al. 2021; Jung, Brahman & Choi 2025).

That argument needs independent calibration examples.  When examples come in groups
(several verdicts per question), pass ``groups=``: each test is then made at the level of
groups (:mod:`.grouped`), which holds whatever the dependence inside a group.  Cascades of
judges are in :mod:`.cascade`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.stats import beta as beta_dist

from ..checks import check_choice, check_integer, check_probability
from ..errors import DataError, ParameterError
from .examples import check_agree, check_confidence
from .grouped import group_sizes, grouped_passes

__all__ = [
    "Certificate",
    "binomial_upper_bound",
    "certify_threshold",
    "fixed_sequence_threshold",
    "is_grouped",
]

#: Settings of the peers' implementation (their ``util.py``): grid size and minimum selected.
JUNG_GRID = 5000
JUNG_MIN_SELECTED = 30


#: The grouped test scans at most this many candidate thresholds (evenly spaced in rank).
MAX_GROUPED_THRESHOLDS = 1000
#: The grouped scan starts at the highest threshold that would pass with this share of alpha
#: as the disagreement rate of the kept examples.
PLANNED_SHARE = 0.5


def check_level(value, name: str) -> float:
    """``value`` as a float strictly inside (0, 1); ParameterError otherwise."""
    return check_probability(value, name, open_low=True, open_high=True)


def is_grouped(groups) -> bool:
    """True when ``groups`` is given and some group holds more than one example.

    Examples
    --------
    >>> is_grouped(None), is_grouped([1, 2, 3]), is_grouped(["a", "b", "a"])
    (False, False, True)
    """
    if groups is None:
        return False
    return bool(group_sizes(groups)[1].max() > 1)


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
    delta = check_level(delta, "delta")
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ParameterError("need 0 <= k <= n and n >= 1")
    full = k >= n
    out = beta_dist.ppf(1.0 - delta, k + 1.0, np.where(full, 1.0, n - k))
    return np.where(full, 1.0, out)


def fewest_certifiable(alpha: float, delta: float) -> int:
    """The fewest examples whose exact bound can reach ``alpha``: none disagreeing,
    ``1 - delta ** (1 / n) <= alpha``.

    >>> fewest_certifiable(0.15, 0.1), fewest_certifiable(0.05, 0.1)
    (15, 45)
    """
    n = max(1, math.ceil(math.log(delta) / math.log1p(-alpha)))
    while binomial_upper_bound(0, n, delta) > alpha:  # rounding at the boundary
        n += 1
    return n


def _exact_threshold(c, a, alpha, delta, min_selected):
    order = np.argsort(-c, kind="stable")
    cs, wrong = c[order], (~a[order]).astype(np.float64)
    ends = np.flatnonzero(np.r_[cs[1:] != cs[:-1], True])  # distinct thresholds, high to low
    n_sel = ends + 1
    k_sel = np.cumsum(wrong)[ends]
    # a threshold keeping fewer examples than it takes for the bound to reach alpha with no
    # disagreement at all fails whatever the labels: starting there would end every scan
    ok = n_sel >= max(min_selected, fewest_certifiable(alpha, delta))
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


def _grouped_threshold(c, a, groups, alpha, delta, min_selected, seed):
    group, sizes = group_sizes(groups)
    cs = np.sort(c)[::-1]
    ends = np.flatnonzero(np.r_[cs[1:] != cs[:-1], True])
    lam = cs[ends][ends + 1 >= min_selected]  # candidates, high to low
    if len(lam) == 0:
        return None
    if len(lam) > MAX_GROUPED_THRESHOLDS:
        lam = lam[np.unique(np.linspace(0, len(lam) - 1, MAX_GROUPED_THRESHOLDS).round().astype(int))]
    first = np.searchsorted(-lam, -c, side="left")  # first candidate at which each example is kept
    inside = first < len(lam)
    args = (first[inside], ~a[inside], group[inside], int(sizes.max()), len(lam), alpha, delta)
    # the scan starts where the test would pass with disagreement at half the target among the
    # kept examples, leaving room for chance; the rule uses confidences and groups only, so
    # the fixed sequence stays valid
    possible = grouped_passes(*args, seed=seed, planned_rate=PLANNED_SHARE * alpha)
    lam = lam[possible]
    passes = grouped_passes(*args, seed=seed)[possible]
    if len(lam) == 0 or not passes[0]:
        return None
    first_fail = np.flatnonzero(~passes)
    return float(lam[(first_fail[0] - 1) if len(first_fail) else len(lam) - 1])


def fixed_sequence_threshold(
    confidence,
    agree,
    alpha: float,
    delta: float,
    min_selected: int = 30,
    *,
    method: str = "exact",
    groups=None,
    seed: int = 0,
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
        Thresholds keeping fewer calibration examples are skipped.  So are, with the exact
        method, thresholds keeping fewer than :func:`fewest_certifiable` examples, where the
        bound cannot fall below ``alpha`` even with no disagreement (15 at ``alpha = 0.15``,
        ``delta = 0.1``; 45 at ``alpha = 0.05``): the scan starts where a pass is possible.
    method : {"exact", "jung"}
        ``"exact"`` (default): candidates are the distinct calibration confidences with at
        least ``min_selected`` (and :func:`fewest_certifiable`) examples at or above them,
        scanned from the highest down; the threshold returned is the last one before the
        first failure, and None when the highest candidate already fails or there is no
        candidate.  ``"jung"``: the peers'
        implementation, kept to reproduce their numbers: confidences in float32, candidates
        ``linspace(0, 1, 5000)`` with at least 30 examples (``min_selected`` is ignored), the
        test at each candidate made at ``lambda - 1/m`` (m = number of candidates), and,
        when even the highest candidate fails, that highest candidate returned anyway
        (uncertified); None only when there is no candidate.
    groups : array_like, shape (n,), optional
        Group label of every calibration example (e.g. the question).  When some group has
        more than one example, every test is made at the level of groups (see
        :mod:`hja_bayes.confidence.grouped`): valid whatever the dependence inside a group,
        provided the groups are independent.  At most 1,000 candidate thresholds (evenly
        spaced in rank) are scanned, and candidates that would fail even with no
        disagreement are skipped.  Only with ``method="exact"``.
    seed : int
        Seed of the group orders of the grouped test.

    Returns
    -------
    float or None
        The threshold ``lambda_hat`` (select examples with ``confidence >= lambda_hat``), or
        None when no threshold qualifies.

    Raises
    ------
    ParameterError
        On ``alpha`` or ``delta`` outside (0, 1), an unknown method, or groups with
        ``method="jung"``.
    DataError
        On mismatched lengths or NaN confidences.

    Notes
    -----
    With the exact method, ``P(risk(lambda_hat) <= alpha) >= 1 - delta`` where ``risk`` is the
    disagreement rate among future examples with ``C >= lambda_hat`` (None counts as a
    success: nothing is selected).  Skipping candidates by their selected count keeps the
    guarantee: the count at each threshold is set before testing, and the sequence is still
    scanned in a fixed order.  With groups, ``risk`` is ``E[K] / E[N]`` over new groups (K
    kept and disagreeing, N kept): the disagreement rate among kept verdicts.

    Examples
    --------
    >>> conf = [0.95] * 40 + [0.6] * 40
    >>> agree = [1] * 40 + [1, 0] * 20
    >>> fixed_sequence_threshold(conf, agree, alpha=0.15, delta=0.1)
    0.95
    >>> fixed_sequence_threshold(conf[:10], agree[:10], alpha=0.15, delta=0.1) is None
    True
    """
    alpha = check_level(alpha, "alpha")
    delta = check_level(delta, "delta")
    method = check_choice(method, "method", ("exact", "jung"))
    a = check_agree(agree)
    c = check_confidence(confidence, len(a))
    if len(a) == 0:  # both methods (the peers' had returned None)
        raise DataError("no calibration examples")
    if method == "jung":
        if groups is not None:
            raise ParameterError("groups are supported with method='exact' only")
        return _jung_threshold(c, a, alpha, delta)
    min_selected = check_integer(min_selected, "min_selected", 1)  # 2.7 had been 2
    if groups is not None and len(np.asarray(groups)) != len(a):
        raise DataError(f"groups has {len(np.asarray(groups))} entries but there are {len(a)} examples")
    if is_grouped(groups):
        return _grouped_threshold(c, a, groups, alpha, delta, int(min_selected), int(seed))
    return _exact_threshold(c, a, alpha, delta, int(min_selected))


class Certificate(NamedTuple):
    """A certified confidence threshold and the terms of its guarantee.

    Attributes
    ----------
    threshold : float or None
        Trust verdicts with confidence at or above it; None: abstain on everything.
    alpha, delta : float
        Target disagreement rate and failure probability.
    n_calibration : int
        Calibration examples.
    n_groups : int
        Independent units the test used (groups, or examples when ungrouped).
    grouped : bool
        Whether the group-level test was used.
    assumption : str
        What the guarantee assumes, in words (printed with it).
    """

    threshold: float | None
    alpha: float
    delta: float
    n_calibration: int
    n_groups: int
    grouped: bool
    assumption: str

    def describe(self) -> str:
        """One paragraph stating the certificate and its assumption."""
        # as many digits as the levels have (87.5%, not a rounded-up 88%)
        target = (f"agreement >= {100 * (1 - self.alpha):.6g}% with probability >= "
                  f"{100 * (1 - self.delta):.6g}%")
        if self.threshold is None:
            held = (f"{self.n_groups} group{'s' * (self.n_groups != 1)}" if self.grouped
                    else f"{self.n_calibration} example{'s' * (self.n_calibration != 1)}")
            head = (f"No threshold certifies {target} on these calibration examples: abstain on "
                    f"everything (a larger alpha or delta, or more calibration data than the "
                    f"{held} here, may certify one).")
        else:
            head = f"Threshold {self.threshold:.4f}: trust verdicts with confidence >= it ({target})."
        return f"{head} Assumes {self.assumption}."


def certify_threshold(confidence, agree, alpha: float, delta: float, *, groups=None,
                      min_selected: int = 30, seed: int = 0) -> Certificate:
    """:func:`fixed_sequence_threshold` with its terms, as a :class:`Certificate`.

    Parameters
    ----------
    confidence, agree, alpha, delta, min_selected, seed
        As in :func:`fixed_sequence_threshold` (method ``"exact"``).
    groups : array_like, optional
        Group labels; the group-level test is used when some group has several examples.

    Returns
    -------
    Certificate

    Examples
    --------
    >>> cert = certify_threshold([0.95] * 40 + [0.6] * 40, [1] * 40 + [1, 0] * 20, 0.15, 0.1)
    >>> cert.threshold, cert.grouped
    (0.95, False)
    """
    threshold = fixed_sequence_threshold(confidence, agree, alpha, delta, min_selected,
                                         groups=groups, seed=seed)
    n = len(np.asarray(agree))
    grouped = is_grouped(groups)
    if grouped:
        n_units = len(group_sizes(groups)[1])
        assumption = (f"the {n_units} groups (not the examples) are independent draws from the "
                      "population the verdicts will come from; examples inside a group may depend "
                      "on each other, and no new group is larger than the largest calibration group")
    else:
        n_units = n
        assumption = (f"the {n} calibration examples are independent draws from the population the "
                      "verdicts will come from, and the confidence was trained on other data")
    return Certificate(threshold, float(alpha), float(delta), n, n_units, grouped, assumption)
