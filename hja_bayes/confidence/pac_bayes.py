"""PAC-Bayes bounds on the misranking probability of a Gibbs confidence ranker.

The Gibbs ranker draws weights ``theta ~ Q`` and ranks by ``C_theta``.  Its risk is
``R(Q) = E_{theta~Q} P(C_theta(s) <= C_theta(s'))`` with ``s`` an agreeing and ``s'`` a
disagreeing example drawn independently: one minus its AUROC, ties counted as errors.
The bound used is PAC-Bayes-kl (Seeger 2002; Maurer 2004) on ``m`` i.i.d. pairs, with the
Gibbs risk on them estimated by Monte Carlo and bounded by the Chernoff-kl inequality
(Langford and Caruana 2002).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..checks import check_integer, check_positive, check_probability
from ..errors import DataError
from .examples import check_agree, check_confidence
from .grouped import group_sizes
from .selective import binomial_upper_bound

__all__ = [
    "HoldoutBound",
    "PACBayesBound",
    "gaussian_kl",
    "gibbs_pair_bound",
    "holdout_misranking_bound",
    "kl_bernoulli",
    "kl_inverse_upper",
    "misranking_bounds",
    "one_per_group",
    "pac_bayes_kl_bound",
]


def kl_bernoulli(q, p):
    """KL divergence ``kl(q || p)`` between Bernoulli(q) and Bernoulli(p).

    Parameters
    ----------
    q, p : float or array_like in [0, 1]

    Returns
    -------
    ndarray
        With the conventions ``0 log 0 = 0`` and ``kl = inf`` when ``p`` is 0 or 1 and ``q``
        differs.

    Examples
    --------
    >>> round(float(kl_bernoulli(0.5, 0.5)), 12)
    0.0
    """
    q = np.asarray(q, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(q > 0, q * np.log(q / p), 0.0)
        b = np.where(q < 1, (1 - q) * np.log((1 - q) / (1 - p)), 0.0)
    return a + b


def kl_inverse_upper(q: float, c: float, tol: float = 1e-12) -> float:
    """``sup{p in [q, 1] : kl(q || p) <= c}``, by bisection.

    Parameters
    ----------
    q : float in [0, 1]
        Empirical rate.
    c : float >= 0
        Allowed divergence.
    tol : float
        Width of the final bracket.

    Returns
    -------
    float

    Examples
    --------
    >>> round(kl_inverse_upper(0.0, np.log(2)), 6)   # kl(0 || p) = -log(1 - p)
    0.5
    """
    q = check_probability(q, "q")
    c = check_positive(c, "c", allow_zero=True)
    lo, hi = q, 1.0
    if kl_bernoulli(q, 1.0) <= c:
        return 1.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if kl_bernoulli(q, mid) <= c:
            lo = mid
        else:
            hi = mid
    return hi


def pac_bayes_kl_bound(empirical_risk: float, kl: float, m: int, delta: float, n_priors: int = 1) -> float:
    """PAC-Bayes-kl bound (Seeger 2002; Maurer 2004) on a Gibbs classifier's risk.

    For a data-independent prior P, with probability at least ``1 - delta`` over an i.i.d.
    sample of size ``m``, simultaneously for every posterior Q:
    ``kl(R_hat(Q) || R(Q)) <= (KL(Q || P) + ln(2 sqrt(m) / delta)) / m``, for a loss in [0, 1].
    When the prior was picked (using the data) among ``n_priors`` candidates fixed in
    advance, the bound holds for all of them at once at level ``delta / n_priors``: the
    numerator gains ``ln(n_priors)``.

    Parameters
    ----------
    empirical_risk : float
        ``R_hat(Q)``, the Gibbs risk on the sample (an upper bound on it is fine).
    kl : float
        ``KL(Q || P)`` in nats.
    m : int
        Sample size (i.i.d. losses).
    delta : float
        Error level in (0, 1).
    n_priors : int
        Number of candidate priors the prior was chosen among (1: fixed in advance).

    Returns
    -------
    float
        The upper bound on ``R(Q)``.

    Examples
    --------
    >>> b = pac_bayes_kl_bound(0.1, 5.0, 1000, 0.05)
    >>> 0.1 < b < 0.2
    True
    """
    check_probability(delta, "delta", open_low=True, open_high=True)
    empirical_risk = check_probability(empirical_risk, "empirical_risk")
    kl = check_positive(kl, "kl", allow_zero=True)  # a KL divergence is never negative
    m, n_priors = (check_integer(int(v) if isinstance(v, float) and v.is_integer() else v,
                                 name, 1) for v, name in ((m, "m"), (n_priors, "n_priors")))
    penalty = math.log(2.0 * math.sqrt(m) * n_priors / delta)
    return kl_inverse_upper(empirical_risk, (float(kl) + penalty) / m)


def gaussian_kl(locs: dict, scales: dict, prior_scales) -> float:
    """``KL(N(locs, diag scales^2) || N(0, diag prior^2))`` in nats, summed over all parameters.

    Parameters
    ----------
    locs, scales : dict of array
        Posterior means and standard deviations.
    prior_scales : float or dict of array
        Prior standard deviation(s), one number or one array per parameter.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> gaussian_kl({"w": np.zeros(3)}, {"w": np.ones(3)}, 1.0)
    0.0
    """
    total = 0.0
    for name, mu in locs.items():
        mu = np.asarray(mu, dtype=np.float64)
        sd = np.asarray(scales[name], dtype=np.float64)
        s0 = np.asarray(prior_scales[name] if isinstance(prior_scales, dict) else prior_scales, dtype=np.float64)
        total += float(np.sum(np.log(s0 / sd) + (sd**2 + mu**2) / (2 * s0**2) - 0.5))
    return total


class PACBayesBound(NamedTuple):
    """A PAC-Bayes bound on the misranking probability of the Gibbs ranker.

    Attributes
    ----------
    bound : float
        Upper bound on ``P(C_theta(s) <= C_theta(s'))``, ``theta ~ Q``, ``s`` an agreeing and
        ``s'`` a disagreeing example drawn independently; holds with probability at least
        ``1 - delta - delta_mc``.
    gibbs_risk : float
        Monte Carlo estimate of the Gibbs risk on the ``m`` disjoint pairs.
    gibbs_risk_upper : float
        Its upper ``1 - delta_mc`` bound (sample-convergence bound over the draws of theta).
    kl : float
        ``KL(Q || P)`` in nats.
    m : int
        Number of disjoint (agree, disagree) pairs: ``min(n_agree, n_disagree)``.
    n_draws : int
        Posterior draws used for the Monte Carlo estimate.
    delta, delta_mc : float
        Error levels of the PAC-Bayes step and of the Monte Carlo step.
    n_priors : int
        Candidate priors paid for (1: the prior was fixed in advance).
    covers : str
        Which ranker the bound is about: ``"gibbs"``, the randomised ranker that draws
        fresh weights from the posterior for every comparison (not the posterior-mean score).
    """

    bound: float
    gibbs_risk: float
    gibbs_risk_upper: float
    kl: float
    m: int
    n_draws: int
    delta: float
    delta_mc: float
    n_priors: int = 1
    covers: str = "gibbs"


def gibbs_pair_bound(conf_agree, conf_disagree, kl: float, delta: float, delta_mc: float,
                     n_priors: int = 1) -> PACBayesBound:
    """The PAC-Bayes-kl bound from posterior draws on ``m`` disjoint (agree, disagree) pairs.

    Parameters
    ----------
    conf_agree, conf_disagree : array_like, shape (n_draws, m)
        Confidences under each weight draw of the agreeing and the disagreeing member of each
        pair.
    kl : float
        ``KL(Q || P)``.
    delta, delta_mc : float
        Error levels of the PAC-Bayes step and the Monte Carlo step.
    n_priors : int
        Candidate priors the prior was chosen among.

    Returns
    -------
    PACBayesBound
    """
    check_probability(delta, "delta", open_low=True, open_high=True)
    check_probability(delta_mc, "delta_mc", open_low=True, open_high=True)
    hi = np.asarray(conf_agree)
    lo = np.asarray(conf_disagree)
    n_draws, m = hi.shape
    gibbs = float((hi <= lo).mean())
    gibbs_upper = kl_inverse_upper(gibbs, math.log(1.0 / delta_mc) / n_draws)
    bound = pac_bayes_kl_bound(gibbs_upper, kl, m, delta, n_priors)
    return PACBayesBound(bound, gibbs, gibbs_upper, float(kl), int(m), int(n_draws), float(delta),
                         float(delta_mc), int(n_priors))


def one_per_group(groups, n: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of one example per group, each chosen uniformly at random (sorted).

    Taking one example per group, whatever its label, leaves independent examples when the
    groups are independent.

    Examples
    --------
    >>> import numpy as np
    >>> one_per_group(["a", "a", "b"], 3, np.random.default_rng(0)).tolist() in ([0, 2], [1, 2])
    True
    """
    g = np.asarray(groups)
    if g.shape != (n,):
        raise DataError(f"groups must have shape ({n},), got {g.shape}")
    index, _ = group_sizes(g)
    order = rng.permutation(n)
    _, first = np.unique(index[order], return_index=True)
    return np.sort(order[first])


class HoldoutBound(NamedTuple):
    """An upper bound on the misranking probability of a fixed score, from held-out pairs.

    Attributes
    ----------
    bound : float
        Upper ``1 - delta`` bound on ``P(C(s) <= C(s'))`` for ``s`` agreeing and ``s'``
        disagreeing, drawn independently (ties count as errors).
    misranked : int
        Misranked pairs among the ``m`` disjoint held-out pairs.
    m : int
        Number of disjoint pairs.
    delta : float
        Error level.
    covers : str
        ``"deployed"``: the fixed score that was evaluated (e.g. the posterior mean).
    """

    bound: float
    misranked: int
    m: int
    delta: float
    covers: str = "deployed"


def holdout_misranking_bound(confidence, agree, delta: float = 0.05, *, groups=None, seed: int = 0) -> HoldoutBound:
    """Bound the misranking probability of the score actually deployed, on held-out data.

    The score must not depend on these examples.  Agreeing and disagreeing examples (one per
    group at random when ``groups`` is given) are matched at random without reuse into ``m``
    disjoint pairs, which are i.i.d.; the number misranked is binomial, so its exact
    (Clopper-Pearson) upper bound holds with probability ``1 - delta``.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        The deployed scores of held-out examples.
    agree : array_like, shape (n,)
        Agreement indicators.
    delta : float
        Error level.
    groups : array_like, optional
        Group labels (one example per group is used).
    seed : int
        Seed of the matching.

    Returns
    -------
    HoldoutBound

    Examples
    --------
    >>> b = holdout_misranking_bound([0.9] * 50 + [0.1] * 50, [1] * 50 + [0] * 50, 0.05)
    >>> b.misranked, b.m, round(b.bound, 4)   # 1 - 0.05 ** (1 / 50)
    (0, 50, 0.0582)
    """
    a = check_agree(agree, need_both=True)
    c = check_confidence(confidence, len(a))
    rng = np.random.default_rng(seed)
    keep = one_per_group(groups, len(a), rng) if groups is not None else np.arange(len(a))
    pos, neg = rng.permutation(keep[a[keep]]), rng.permutation(keep[~a[keep]])
    m = int(min(len(pos), len(neg)))
    if m < 1:
        raise DataError("need agreeing and disagreeing examples (in different groups)")
    wrong = int(np.sum(c[pos[:m]] <= c[neg[:m]]))
    return HoldoutBound(float(binomial_upper_bound(wrong, m, delta)), wrong, m, float(delta))


def misranking_bounds(ranker, c_test, test, train, delta: float = 0.05, seed: int = 0) -> dict:
    """Both misranking bounds of a trained pipeline, as JSON-ready dicts: the deployed
    score's on the test split (:func:`holdout_misranking_bound`, where it has both classes)
    and, for a ranker with a weight posterior, the Gibbs ranker's PAC-Bayes-kl bound on the
    training sample (``ranker.pac_bayes_bound``, at ``1 - delta - delta_mc``); a bound left
    out where its sample holds no (agree, disagree) pair.  ``c_test``: the deployed scores
    of ``test``; ``test`` and ``train``: ConfidenceData."""
    out = {}
    try:  # a split whose one example per group leaves no (agree, disagree) pair has none
        b = holdout_misranking_bound(c_test, test.agree, delta, groups=test.groups, seed=seed)
        out["test_misranking_bound"] = {
            "bound": b.bound, "misranked": b.misranked, "pairs": b.m, "level": 1 - delta,
            "covers": "the deployed score, on disjoint (agree, disagree) pairs of the test split"}
    except DataError:
        pass
    if ranker.posterior:
        try:
            g = ranker.pac_bayes_bound(groups=train.groups, delta=delta, seed=seed)
        except DataError:
            return out
        out["gibbs_pac_bayes_bound"] = {
            "bound": g.bound, "kl": g.kl, "pairs": g.m, "level": 1 - delta - g.delta_mc,
            "covers": "the Gibbs ranker (fresh weights from the posterior for every "
                      "comparison), on the training sample"}
    return out
