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

from ..errors import DataError, HJAError

__all__ = [
    "PACBayesBound",
    "gaussian_kl",
    "gibbs_pair_bound",
    "kl_bernoulli",
    "kl_inverse_upper",
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
    q = float(q)
    c = float(c)
    if not 0.0 <= q <= 1.0 or not c >= 0.0:
        raise HJAError("need q in [0, 1] and c >= 0")
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


def pac_bayes_kl_bound(empirical_risk: float, kl: float, m: int, delta: float) -> float:
    """PAC-Bayes-kl bound (Seeger 2002; Maurer 2004) on a Gibbs classifier's risk.

    For a data-independent prior P, with probability at least ``1 - delta`` over an i.i.d.
    sample of size ``m``, simultaneously for every posterior Q:
    ``kl(R_hat(Q) || R(Q)) <= (KL(Q || P) + ln(2 sqrt(m) / delta)) / m``, for a loss in [0, 1].

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
    if not 0.0 < delta < 1.0:
        raise DataError("delta must lie in (0, 1)")
    if m < 1:
        raise DataError("m must be at least 1")
    return kl_inverse_upper(empirical_risk, (float(kl) + math.log(2.0 * math.sqrt(m) / delta)) / m)


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
    """

    bound: float
    gibbs_risk: float
    gibbs_risk_upper: float
    kl: float
    m: int
    n_draws: int
    delta: float
    delta_mc: float


def gibbs_pair_bound(conf_agree, conf_disagree, kl: float, delta: float, delta_mc: float) -> PACBayesBound:
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

    Returns
    -------
    PACBayesBound
    """
    if not (0 < delta < 1 and 0 < delta_mc < 1):
        raise DataError("delta and delta_mc must lie in (0, 1)")
    hi = np.asarray(conf_agree)
    lo = np.asarray(conf_disagree)
    n_draws, m = hi.shape
    gibbs = float((hi <= lo).mean())
    gibbs_upper = kl_inverse_upper(gibbs, math.log(1.0 / delta_mc) / n_draws)
    bound = pac_bayes_kl_bound(gibbs_upper, kl, m, delta)
    return PACBayesBound(bound, gibbs, gibbs_upper, float(kl), int(m), int(n_draws), float(delta), float(delta_mc))
