"""Judge diagnostics on the canonical HJA coordinates (gamma, mu, U, V).

* Residual leverage ``h_k = |(U V^T)_{k,:}|_2``: how far judge k's scores stray from a
  rescaled consensus; relative leverage ``rho_k = h_k / (|gamma_k| |mu|_2 + eps)``: the same,
  as a fraction of the size of the judge's consensus part ``gamma_k mu``.
* High-leverage judges: both strongly tied to the consensus (high ``|gamma_k|``) and
  strongly deviating from it (high ``h_k``).
* Biclustering of the residual ``U V^T`` into judge x item blocks (self-preference, family
  preference).

Everything takes plain arrays (e.g. the fields of
:func:`~hja_bayes.decomposition.canonicalize`'s result) and returns small NamedTuples.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import numpy as np

from .decomposition import anchor_signs
from .checks import check_integer, check_numbers, check_positive
from .errors import HJAError, ParameterError

__all__ = ["Biclustering", "JudgeLeverage", "bicluster_residual", "judge_leverage",
           "kendall_tau", "own_ranking_agreement"]

#: Default threshold on the relative leverage rho for the high-leverage flag.
RHO_THRESHOLD = 0.25


class JudgeLeverage(NamedTuple):
    """Leverage of every judge on the disagreement part of the model.

    Attributes
    ----------
    h : ndarray (K,)
        Residual leverage ``|(U V^T)_{k,:}|_2``.
    rho : ndarray (K,)
        Relative leverage ``h_k / (|gamma_k| |mu|_2 + eps)``.
    high : ndarray of bool (K,)
        High-leverage flag (see :func:`judge_leverage` for the rule).
    """

    h: np.ndarray
    rho: np.ndarray
    high: np.ndarray


class Biclustering(NamedTuple):
    """Judge x item blocks of the residual ``U V^T``.

    Attributes
    ----------
    judge_labels : ndarray of int (K,)
        Block of each judge, numbered 0.. in the order the blocks are displayed.
    item_labels : ndarray of int (N,)
        Block of each item, likewise.
    judge_order : ndarray of int (K,)
        Judge indices sorted by block, then by position along the leading residual direction:
        ``residual[judge_order][:, item_order]`` shows the blocks as contiguous rectangles.
    item_order : ndarray of int (N,)
        Item indices, likewise.
    block_means : ndarray (n_judge_blocks, n_item_blocks)
        Mean residual in each block (positive: those judges favour those items beyond the
        consensus).
    """

    judge_labels: np.ndarray
    item_labels: np.ndarray
    judge_order: np.ndarray
    item_order: np.ndarray
    block_means: np.ndarray


def _as_factors(U, V) -> tuple[np.ndarray, np.ndarray]:
    U = check_numbers(U, "U")
    V = check_numbers(V, "V")
    if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[1]:
        raise HJAError(f"U (K x r) and V (N x r) must share r columns, got {U.shape} and {V.shape}")
    return U, V


def judge_leverage(
    gamma, mu, U, V, *, rho_threshold: float = RHO_THRESHOLD, eps: float = 1e-12
) -> JudgeLeverage:
    """Residual and relative leverage of each judge, with a high-leverage flag.

    Parameters
    ----------
    gamma : array (K,)
        Judge sensitivities.
    mu : array (N,)
        Consensus scores.
    U, V : arrays (K, r) and (N, r)
        Disagreement factors (r may be 0).
    rho_threshold : float
        Minimum relative leverage for the flag.
    eps : float
        Guards the division for a judge with ``gamma_k = 0``.

    Returns
    -------
    JudgeLeverage

    Notes
    -----
    Rule for ``high``: judge k is flagged when ``|gamma_k|`` is strictly above the panel
    median of ``|gamma|``, ``h_k`` is strictly above the panel median of ``h``, and
    ``rho_k > rho_threshold``.  The two median conditions say "high gamma AND high h" relative
    to this panel; the last one keeps a judge out when, although above the median, its
    disagreement is small next to its own consensus signal (the default 0.25: a residual row
    at least a quarter the size of ``gamma_k mu``).  With r = 0 every ``h_k`` is 0 and no
    judge is flagged.

    Examples
    --------
    >>> import numpy as np
    >>> lev = judge_leverage([1.5, 1.0, 0.5], [1.0, 0.0, -1.0],
    ...                      [[1.5], [-0.5], [-1.0]], [[1.0], [-2.0], [1.0]])
    >>> lev.high.tolist()
    [True, False, False]
    """
    gamma = check_numbers(gamma, "gamma")
    mu = check_numbers(mu, "mu")
    U, V = _as_factors(U, V)
    rho_threshold = check_positive(rho_threshold, "rho_threshold", allow_zero=True)
    eps = check_positive(eps, "eps")
    if gamma.shape != (U.shape[0],) or mu.shape != (V.shape[0],):
        raise HJAError(
            f"shapes do not match: gamma {gamma.shape}, mu {mu.shape}, U {U.shape}, V {V.shape}"
        )
    h = np.linalg.norm(U @ V.T, axis=1)
    rho = h / (np.abs(gamma) * np.linalg.norm(mu) + eps)
    high = (
        (np.abs(gamma) > np.median(np.abs(gamma)))
        & (h > np.median(h))
        & (rho > rho_threshold)
    )
    return JudgeLeverage(h=h, rho=rho, high=high)


def _kmeans_1d(x: np.ndarray, n_clusters: int) -> np.ndarray:
    """The k-means optimum of points on a line (each cluster a run of the sorted points),
    by dynamic programming over where the runs end: exact, where restarts can miss it."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    n = len(xs)
    s1, s2 = np.r_[0.0, np.cumsum(xs)], np.r_[0.0, np.cumsum(xs ** 2)]

    def cost(i, j):  # within-run sum of squares of xs[i:j], arrays of run starts i
        m = j - i
        return s2[j] - s2[i] - (s1[j] - s1[i]) ** 2 / m

    best = cost(np.zeros(n, dtype=np.int64), np.arange(1, n + 1))  # one run ending at j
    starts = np.zeros((n_clusters, n + 1), dtype=np.int64)
    for c in range(1, n_clusters):
        new = np.full(n, np.inf)
        for j in range(c + 1, n + 1):  # c + 1 runs over xs[:j]; the last starts at i
            i = np.arange(c, j)
            total = best[i - 1] + cost(i, j)
            new[j - 1] = total.min()
            starts[c, j] = i[np.argmin(total)]
        best = new
    labels, end = np.empty(n, dtype=np.int64), n
    for c in range(n_clusters - 1, -1, -1):
        begin = starts[c, end] if c else 0
        labels[order[begin:end]] = c
        end = begin
    return labels


def _kmeans(points: np.ndarray, n_clusters: int, rng: np.random.Generator, n_init: int):
    """Best of ``n_init`` k-means++ runs (lowest within-cluster sum of squares); on a line
    (rank-1 residuals) the exact optimum instead."""
    if points.shape[1] == 1:
        return _kmeans_1d(points[:, 0], n_clusters)
    from scipy.cluster.vq import (  # imported on use: light package import
        ClusterError,
        kmeans2,
    )

    # scipy >= 1.15 names the generator argument ``rng`` (``seed`` before, on its way out)
    rng_name = "rng" if "rng" in inspect.signature(kmeans2).parameters else "seed"
    best, best_cost = None, np.inf
    for _ in range(n_init):
        try:
            centroids, labels = kmeans2(points, n_clusters, minit="++", missing="raise",
                                        **{rng_name: rng})
        except ClusterError:  # an empty cluster: try another start
            continue
        cost = float(np.sum((points - centroids[labels]) ** 2))
        if cost < best_cost:  # ties keep the earlier start: deterministic for a seed
            best, best_cost = labels, cost
    if best is None:
        raise HJAError(
            f"k-means found no {n_clusters} non-empty clusters in {n_init} starts: ask for fewer"
        )
    return best


def _relabel(labels: np.ndarray, coord: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number clusters by their mean leading coordinate; order members by that coordinate."""
    ids = np.unique(labels)
    centre = np.array([coord[labels == c].mean() for c in ids])
    rename = np.empty(labels.max() + 1, dtype=np.int64)
    rename[ids[np.argsort(centre, kind="stable")]] = np.arange(len(ids))
    new = rename[labels]
    order = np.lexsort((coord, new))
    return new, order


def bicluster_residual(
    U, V, n_judge_blocks: int = 2, n_item_blocks: int = 2, *, seed: int = 0, n_init: int = 10
) -> Biclustering:
    """Judge x item blocks of the signed residual ``R = U V^T`` by k-means on rows and columns.

    Judges are clustered by their residual rows ``R[k, :]`` and items by their residual
    columns ``R[:, i]`` (Euclidean k-means, k-means++ starts, best of ``n_init``; for
    points on a line, rank 1, the exact optimum by dynamic programming).  R has
    rank r, so each row and column is represented exactly, distances included, by its
    r coordinates in R's thin SVD ``R = P Sigma Q^T`` (rows: ``P Sigma``; columns:
    ``Q Sigma``): the clustering costs O((K + N) r) per iteration.

    Why not spectral co-clustering (Dhillon 2001, scikit-learn's ``SpectralCoclustering``)?
    It treats the matrix as non-negative edge weights of a bipartite graph, and the residual
    is signed (every row and column sums to zero), so it does not apply without an arbitrary
    shift.  Clustering rows and columns separately keeps the sign: a block is a set of judges
    that over- (or under-) rate a set of items relative to the consensus.

    Parameters
    ----------
    U, V : arrays (K, r) and (N, r)
        Disagreement factors.
    n_judge_blocks, n_item_blocks : int
        Numbers of judge and item blocks (at most K and N).
    seed : int
        Seed of the k-means starts: the same seed gives the same result.
    n_init : int
        Number of k-means starts per side.

    Returns
    -------
    Biclustering
        Blocks are numbered by their mean position along the leading residual direction,
        members ordered along it too.  That direction's sign follows the canonical rule of
        :func:`~hja_bayes.decomposition.canonicalize` (its item of largest absolute loading
        is positive), so numbering and order agree with the fit's V and do not flip when
        some item's loading is near zero.

    Examples
    --------
    >>> import numpy as np
    >>> U = np.array([[1.0], [1.0], [-1.0], [-1.0]])
    >>> V = np.array([[1.0], [1.0], [-1.0], [-1.0]])
    >>> b = bicluster_residual(U, V, 2, 2)
    >>> b.judge_labels.tolist(), b.item_labels.tolist()
    ([1, 1, 0, 0], [1, 1, 0, 0])
    >>> b.block_means.tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    U, V = _as_factors(U, V)
    K, N = U.shape[0], V.shape[0]
    n_init, seed = check_integer(n_init, "n_init", 1), check_integer(seed, "seed")
    for name, n, top in (("n_judge_blocks", n_judge_blocks, K), ("n_item_blocks", n_item_blocks, N)):
        if not 1 <= check_integer(n, name, 1) <= top:
            raise ParameterError(f"{name} must lie in 1..{top}, got {n}")
    R = U @ V.T
    rng = np.random.default_rng(seed)
    if U.shape[1] == 0 or not np.any(R):
        row_feat, col_feat = np.zeros((K, 1)), np.zeros((N, 1))
    else:
        P, sigma, Qt = np.linalg.svd(R, full_matrices=False)
        r = min(U.shape[1], int(np.sum(sigma > 1e-12 * sigma[0])))
        Q = Qt[:r].T
        sign = anchor_signs(Q, np)
        row_feat = P[:, :r] * sigma[:r] * sign
        col_feat = Q * sigma[:r] * sign

    def cluster(points, n):
        if n == 1:
            return np.zeros(len(points), dtype=np.int64)
        # profiles equal up to rounding, relative to the largest (R in any units)
        scale = np.abs(points).max()
        distinct = len(np.unique((points / scale if scale > 0 else points).round(12), axis=0))
        if distinct < n:
            raise HJAError(f"cannot form {n} blocks: only {distinct} distinct residual profiles")
        return _kmeans(points, n, rng, n_init)

    judge_labels, judge_order = _relabel(cluster(row_feat, n_judge_blocks), row_feat[:, 0])
    item_labels, item_order = _relabel(cluster(col_feat, n_item_blocks), col_feat[:, 0])
    means = np.array([
        [R[np.ix_(judge_labels == a, item_labels == b)].mean() for b in range(item_labels.max() + 1)]
        for a in range(judge_labels.max() + 1)
    ])
    return Biclustering(judge_labels, item_labels, judge_order, item_order, means)


def own_ranking_agreement(fit) -> np.ndarray:
    """Kendall's tau-b between each judge's own Bradley-Terry scores and the consensus mu.

    The judge's scores are a per-judge Bradley-Terry fit to its verdicts alone (presentation
    order ignored), compared over the models the judge saw.  NaN when the judge saw fewer
    than two models or its comparisons do not link them all (its own ranking is then not
    defined), or when either ranking is constant.

    Parameters
    ----------
    fit : HJAFit

    Returns
    -------
    ndarray (K,)
    """
    from .btl import fit_per_judge_btl

    data = fit.data
    own = fit_per_judge_btl(data)
    mu = np.asarray(fit.mu)
    tau = np.full(data.n_judges, np.nan)
    for k in range(data.n_judges):
        m = data.judge == k
        seen = np.unique(np.concatenate([data.first[m], data.second[m]]))
        labels = data.components(k)[seen]
        if len(seen) < 2 or np.unique(labels).size > 1:
            continue
        x, y = own[k, seen], mu[seen]
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        tau[k] = kendall_tau(x, y)
    return tau


#: Scores closer than this fraction of their range are tied in :func:`kendall_tau`: scores
#: fitted to equal data are equal only to rounding (PRD's judge bard gives gpt35 and
#: vicuna-13b the same record, and its own scores for them differ by 1e-15).
TIE_TOLERANCE = 1e-9


def kendall_tau(x, y) -> float:
    """Kendall's tau-b of two score vectors (ties allowed; both non-constant).

    Differences within :data:`TIE_TOLERANCE` of a vector's range count as ties.  Computed
    over all pairs here rather than by ``scipy.stats.kendalltau``: the vectors hold one
    score per model, and importing ``scipy.stats`` costs a command-line fit a second.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.size, 1)

    def signs(v):
        d = v[i] - v[j]
        return np.where(np.abs(d) <= TIE_TOLERANCE * np.ptp(v), 0.0, np.sign(d))

    a, b = signs(x), signs(y)
    return float(np.sum(a * b) / np.sqrt(np.count_nonzero(a) * np.count_nonzero(b)))
