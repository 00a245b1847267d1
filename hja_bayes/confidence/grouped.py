"""A group-level test of the selective risk, for examples that come in dependent groups.

Verdicts on one question share its difficulty, so the examples of a group are not
independent and the binomial (Clopper-Pearson) test of :func:`.selective.binomial_upper_bound`
is too optimistic: in a simulation with groups of 10 and a shared random effect it certified
a threshold 15-16% of the time at ``delta = 0.1`` when every threshold was wrong.

Here the unit is the group.  Groups ``g = 1..G`` are assumed independent draws (examples
inside a group may depend on each other in any way).  At a threshold ``lambda``, with
``N_g`` examples of group g kept (``C >= lambda``) and ``K_g`` of them disagreeing,

    X_g = (K_g - alpha N_g) / n_max,       n_max = the largest group size,

lies in ``[-alpha, 1 - alpha]``, and ``E[X_g] <= 0`` is exactly "the disagreement rate among
kept examples, ``E[K] / E[N]``, is at most alpha".  The null hypothesis ``E[X_g] > 0`` is
tested by betting (Waudby-Smith and Ramdas 2024): the capital
``prod_g (1 - b_g X_g)`` with bets ``b_g >= 0`` fixed before group g is seen is a
nonnegative supermartingale under the null, so by Markov's inequality it exceeds
``1 / delta`` with probability at most delta.  The bets are the predictable plug-in
``b_g = min(cap, sqrt(2 ln(1/delta) / (G sigma_hat^2_{g-1})))`` from the running variance.
Because the order of the groups is arbitrary, the capital is averaged over a fixed set of
seeded orders (an average of test supermartingales still has mean at most 1), which makes the
result reproducible and less dependent on one order.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError

__all__ = ["group_capital", "group_sizes", "grouped_passes"]

#: Largest bet, as a share of the largest bet that keeps the capital nonnegative.
BET_CAP = 0.75
#: Number of seeded group orders the capital is averaged over.
N_ORDERS = 16
#: Prior variance of ``X_g`` in the running variance estimate (the variance of a
#: Bernoulli(1/2) on the unit range: a cautious start).
PRIOR_VARIANCE = 0.25


def group_sizes(groups) -> tuple[np.ndarray, np.ndarray]:
    """Group index of every example (0..G-1) and the size of every group.

    Examples
    --------
    >>> g, n = group_sizes(["q1", "q2", "q1"])
    >>> g.tolist(), n.tolist()
    ([0, 1, 0], [2, 1])
    """
    groups = np.asarray(groups)
    missing = np.asarray(pd.isna(groups), dtype=bool).ravel()
    if missing.any():
        raise DataError(f"groups has {int(missing.sum())} missing label(s), first at example "
                        f"{int(np.argmax(missing))}: give every example its group (one NaN "
                        "group would join unrelated examples)")
    try:
        labels, index, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    except TypeError:  # labels of several types (1 beside "q1") do not sort: as text
        labels, index, sizes = np.unique(groups.astype(str), return_inverse=True,
                                         return_counts=True)
    return index.ravel(), sizes


def group_capital(x: np.ndarray, alpha: float, delta: float, *, seed: int = 0,
                  n_orders: int = N_ORDERS) -> np.ndarray:
    """Betting capital against ``E[X] > 0``, averaged over seeded orders of the groups.

    Parameters
    ----------
    x : ndarray, shape (T, G)
        ``X_g`` at each of T thresholds (rows); values in ``[-alpha, 1 - alpha]``.
    alpha : float
        The target, which fixes the range of ``X``.
    delta : float
        Level of the test (it sets the size of the bets).
    seed : int
        Seed of the group orders.
    n_orders : int
        Number of orders.

    Returns
    -------
    ndarray, shape (T,)
        The averaged capital; the null is rejected at level delta when it is at least
        ``1 / delta``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.full((1, 200), -0.15)   # 200 groups, every example kept and agreeing
    >>> bool(group_capital(x, 0.15, 0.1)[0] >= 10)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    n_thresholds, n_groups = x.shape
    cap = BET_CAP / (1.0 - alpha)
    rng = np.random.default_rng(seed)
    total = np.zeros(n_thresholds)
    count = np.arange(1, n_groups + 1, dtype=np.float64)
    scale = 2.0 * math.log(1.0 / delta) / n_groups
    for _ in range(int(n_orders)):
        xo = x[:, rng.permutation(n_groups)]
        # predictable running mean and variance: position t uses groups 0..t-1 only
        mean = np.concatenate([np.zeros((n_thresholds, 1)), np.cumsum(xo, axis=1)[:, :-1]], axis=1) / count
        dev = (xo - mean) ** 2
        var = (PRIOR_VARIANCE + np.concatenate(
            [np.zeros((n_thresholds, 1)), np.cumsum(dev, axis=1)[:, :-1]], axis=1)) / count
        bets = np.minimum(cap, np.sqrt(scale / var))
        total += np.exp(np.sum(np.log1p(-bets * xo), axis=1))
    return total / int(n_orders)


def grouped_passes(c_sorted_rank: np.ndarray, wrong: np.ndarray, group: np.ndarray, n_max: int,
                   n_thresholds: int, alpha: float, delta: float, *, seed: int = 0,
                   planned_rate: float | None = None) -> np.ndarray:
    """Whether the group-level test certifies each threshold.

    Parameters
    ----------
    c_sorted_rank : ndarray of int, shape (n,)
        For every example, the index of the first threshold (thresholds sorted from the
        highest down) at which it is kept.
    wrong : ndarray of bool, shape (n,)
        Disagreement indicators.
    group : ndarray of int, shape (n,)
        Group index of every example (0..G-1).
    n_max : int
        Largest group size.
    n_thresholds : int
        Number of thresholds.
    alpha, delta : float
        Target and level.
    seed : int
        Seed of the group orders.
    planned_rate : float, optional
        Ignore ``wrong`` and compute as if a share ``planned_rate`` of every group's kept
        examples disagreed.  This uses the confidences and groups only, so it can choose
        which thresholds to test without spending any of the level.

    Returns
    -------
    ndarray of bool, shape (n_thresholds,)
    """
    if n_max < 1 or n_thresholds < 1:
        raise ParameterError("need at least one group and one threshold")
    n_groups = int(group.max()) + 1
    kept = np.zeros((n_groups, n_thresholds))
    np.add.at(kept, (group, c_sorted_rank), 1.0)
    kept = np.cumsum(kept, axis=1)
    if planned_rate is None:
        bad = np.zeros((n_groups, n_thresholds))
        np.add.at(bad, (group[wrong], c_sorted_rank[wrong]), 1.0)
        bad = np.cumsum(bad, axis=1)
    else:
        bad = planned_rate * kept
    x = ((bad - alpha * kept) / n_max).T
    out = np.empty(n_thresholds, dtype=bool)
    block = max(1, 2_000_000 // max(n_groups, 1))
    for start in range(0, n_thresholds, block):
        rows = slice(start, start + block)
        out[rows] = group_capital(x[rows], alpha, delta, seed=seed) >= 1.0 / delta
    return out
