"""What a design goal asks of the consensus: its contrasts and when each one is decided.

Every goal is a set of differences ``mu_a - mu_b`` with a rule that declares each one
decided from its joint (simultaneous, max-|t|) interval ``d +- c se``, the interval of the
package's joint rank intervals (:mod:`hja_bayes.inference.ranking`):

* ``"top"``: each of the estimated top k against each other model; decided when the
  interval excludes 0.  All decided = the joint rank intervals separate the top k from
  the rest.
* ``"ranks"``: each model against the next one in the estimated order; decided when the
  interval excludes 0, or when it lies inside ``[-margin, margin]`` (the pair is declared
  a tie).
* ``"tiers"``: every pair; decided when the interval excludes 0 or lies inside the margin.
  The tiers are made of the pairs that are not separated.
* ``"pairs"``: every pair, no decision rule: plain A-optimality, the criterion is the sum
  of the variances.

The uncertainty of a decision goal is the expected number of its undecided contrasts,
averaged over what the data say the true differences may be (a Bayesian-average design
criterion).  With ``d`` a contrast's estimate and ``v0`` its variance now (from the
covariance that decides the goal, or from a posterior, whose means are then the estimates),
the true difference is taken as ``N(d, v0)``; with ``v`` the variance an estimate would have
after the new verdicts, the interval is undecided when ``max(0, margin - c sqrt(v)) <=
|d_hat| <= c sqrt(v)``, and ``d_hat ~ N(true, v)``, so ``d_hat ~ N(d, v0 + v)``
(:func:`undecided`).  A comparison's value is how much it lowers that expectation.

Taking the estimates for the true differences instead (``d_hat ~ N(d, v)``, a locally
optimal design) makes a contrast's value hinge on its estimate alone; in simulation
(``benchmarks/bench_adaptive.py``) the averaged count reaches the goals at about the same
cost and the marginal intervals after the design cover closer to their level.
(The exact preposterior count, whether the interval after the new verdicts would be
decided, ``d_hat ~ N(d, v0 - v)``, gives a greedy search nothing to rank by: the chance that
a few verdicts change the decision about a contrast away from its boundary underflows to 0,
1e-65 on a small test panel.)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr

from ..checks import check_choice, check_integer, indices_of
from ..errors import ParameterError

__all__ = ["GOALS", "Goal", "asked_pairs", "gamma_gradients", "goal_pairs", "mu_gradients",
           "quadratic_forms", "undecided"]

GOALS = ("top", "ranks", "pairs", "tiers")


class Goal(NamedTuple):
    """A goal's contrasts ``mu[a] - mu[b]`` and their decision rule.

    Attributes
    ----------
    name : str
    pairs : int array (n, 2)
    estimate : (n,)
        The fitted differences.
    margin : float
        Equivalence margin of a declared tie (0: ties are never declared).
    critical : (n,)
        Each contrast's critical value of the joint intervals (0 for "pairs").
    variance_only : bool
        True for "pairs": the criterion is the sum of the variances.
    current_variance : (n,)
        The contrasts' variances now: the uncertainty is averaged over true differences
        ``N(estimate, current_variance)`` (see the module's notes).
    """

    name: str
    pairs: np.ndarray
    estimate: np.ndarray
    margin: float
    critical: np.ndarray
    variance_only: bool
    current_variance: np.ndarray

    def uncertainty(self, variance) -> np.ndarray:
        """Per contrast: P(undecided) at these variances, or the variances themselves."""
        variance = np.asarray(variance, dtype=float)
        if self.variance_only:
            return variance
        shape = (-1,) + (1,) * (variance.ndim - 1)
        return undecided(self.estimate.reshape(shape), variance, self.critical.reshape(shape),
                         self.margin, self.current_variance.reshape(shape) + variance)

    def subset(self, index) -> "Goal":
        """The goal with its contrasts at ``index`` only."""
        return self._replace(pairs=self.pairs[index], estimate=self.estimate[index],
                             critical=self.critical[index],
                             current_variance=self.current_variance[index])

    def undecided_now(self) -> np.ndarray:
        """Per contrast: whether its joint interval now, ``estimate +- critical sd``, is
        undecided (neither excluding 0 nor inside the margin; all False for "pairs", which
        has no decision rule)."""
        if self.variance_only:
            return np.zeros(len(self.pairs), dtype=bool)
        half = self.critical * np.sqrt(self.current_variance)
        d = np.abs(self.estimate)
        return (d <= half) & (d + half > self.margin)


def goal_pairs(goal: str, mu, k: int) -> np.ndarray:
    """The contrasts of ``goal`` as index pairs ``(a, b)``, a above b in the estimated order."""
    mu = np.asarray(mu, dtype=float)
    N = mu.size
    order = np.argsort(-mu, kind="stable")
    if goal == "top":
        if not 1 <= k < N:
            raise ParameterError(f"k must be an integer in 1..{N - 1} for {N} models, got {k!r}")
        top, rest = order[:k], order[k:]
        return np.array([(a, b) for a in top for b in rest], dtype=np.int64)
    if goal == "ranks":
        return np.column_stack([order[:-1], order[1:]]).astype(np.int64)
    if goal in ("pairs", "tiers"):
        a, b = np.triu_indices(N, 1)
        swap = mu[a] < mu[b]
        return np.column_stack([np.where(swap, b, a), np.where(swap, a, b)]).astype(np.int64)
    raise ParameterError(f"goal must be one of {list(GOALS)}, got {goal!r}")


def _abs_below(x, d, sd):
    """P(|d_hat| <= x) for d_hat ~ N(d, sd^2), x >= 0."""
    return ndtr((x - d) / sd) - ndtr((-x - d) / sd)


def undecided(d, v, c, margin: float = 0.0, spread=None) -> np.ndarray:
    """Probability that the interval ``d_hat +- c sqrt(v)`` neither excludes 0 nor lies
    inside ``[-margin, margin]``, for ``d_hat ~ N(d, spread)`` (broadcast; ``spread``
    defaults to ``v``).

    Examples
    --------
    >>> round(float(undecided(0.0, 1.0, 1.96)), 3)   # a true zero, no margin
    0.95
    >>> float(undecided(0.0, 1e-6, 1.96, margin=0.1)) < 1e-6   # a tie, once precise
    True
    """
    sd = np.sqrt(np.clip(np.asarray(v, dtype=float), 1e-300, None))
    scatter = sd if spread is None else np.sqrt(np.clip(np.asarray(spread, dtype=float),
                                                        1e-300, None))
    d = np.abs(np.asarray(d, dtype=float))
    hi = c * sd
    lo = np.minimum(np.clip(margin - hi, 0.0, None), hi)  # lo = hi: nothing is undecided
    return np.clip(_abs_below(hi, d, scatter) - _abs_below(lo, d, scatter), 0.0, 1.0)


def mu_gradients(chart, pairs) -> np.ndarray:
    """Gradients of ``mu_a - mu_b`` in the factor coordinates of ``chart``: (n, dim).

    ``mu`` is the mean of the judges' centred score rows, so ``d mu_n / d S_k = (e_n -
    1/N) / K`` for every judge k.
    """
    K, N, m = chart.shape
    pairs = np.asarray(pairs, dtype=np.int64)
    a, b = pairs[:, 0], pairs[:, 1]
    # chart.pullback of dS (every judge's row e_a / K - e_b / K), written out: no (n, K, N)
    # array (478 MB for a 1,000-model top 3)
    out = np.zeros((len(pairs), chart.dim))
    out[:, : K * m] = np.tile((chart.Q[a] - chart.Q[b]) / K, (1, K))
    items = out[:, chart.y_offset:].reshape(len(pairs), N, m)  # a view
    rows = np.arange(len(pairs))
    items[rows, a] += chart.P.mean(axis=0)
    items[rows, b] -= chart.P.mean(axis=0)
    return out


def gamma_gradients(chart, S) -> np.ndarray:
    """Gradients of every ``gamma_k`` in the factor coordinates of ``chart``: (K, dim).

    ``gamma = S mu / |mu|^2`` with ``mu`` the mean of the centred rows of S, so
    ``d gamma_k / d S_j = [k = j] mu / |mu|^2 + (S_k - 2 gamma_k mu) / (K |mu|^2)``.
    """
    S = np.asarray(S, dtype=float)
    S = S - S.mean(axis=1, keepdims=True)
    K = S.shape[0]
    mu = S.mean(axis=0)
    norm2 = mu @ mu
    gamma = S @ mu / norm2
    dS = np.broadcast_to(((S - 2 * gamma[:, None] * mu) / (K * norm2))[:, None, :],
                         (K, K, S.shape[1])).copy()
    dS[np.arange(K), np.arange(K)] += mu / norm2
    return chart.pullback(dS)


def quadratic_forms(G, sigma) -> np.ndarray:
    """``diag(G sigma G^T)``, each contrast's variance, through one matrix product (the
    three-operand ``einsum`` visited every (contrast, coordinate, coordinate) one at a
    time: 130 s for a 1,000-model leaderboard's top-10 contrasts)."""
    return np.einsum("ij,ij->i", np.asarray(G) @ sigma, G)


def asked_pairs(pairs, mu, items, k: int) -> np.ndarray:
    """The pairs ``plan`` asks about, as (a, b) positions: a goal's ("adjacent", "top" with
    ``k``, "all") or (model, model) names, each difference once."""
    if isinstance(pairs, str):
        choice = check_choice(pairs, "pairs", ("adjacent", "top", "all"))
        if choice == "top":
            k = check_integer(k, "k", 1)
        return goal_pairs({"adjacent": "ranks", "top": "top", "all": "pairs"}[choice], mu, k)
    try:
        arr = np.asarray(list(pairs), dtype=object)
    except TypeError:
        raise ParameterError(f"pairs must be 'adjacent', 'top', 'all' or (model, model) pairs, "
                             f"got {pairs!r}") from None
    if arr.ndim != 2 or arr.shape[1] != 2 or len(arr) == 0:
        raise ParameterError("pairs must be a non-empty list of (model, model) pairs")
    index = indices_of(arr, items, "model")
    if np.any(index[:, 0] == index[:, 1]):
        raise ParameterError("a pair compares a model with itself")
    if len(np.unique(np.sort(index, axis=1), axis=0)) < len(index):  # either order
        raise ParameterError("pairs names a pair twice (in either order): each difference "
                             "is asked once")
    return index
