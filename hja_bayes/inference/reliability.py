"""Reliability statistics on generic C-category codings: Krippendorff's alpha from
coincidence matrices (nominal and ordinal distances), Cohen's kappa and accuracy from
confusion tables, and a cluster bootstrap of statistics that are functions of per-cluster
sums.  :mod:`~hja_bayes.inference.agreement` lays a panel's verdicts out for them."""

from __future__ import annotations

import numpy as np

__all__ = ["accuracy_from_confusion", "alpha_from_coincidences", "cluster_bootstrap",
           "coincidences", "kappa_from_confusion", "squared_distances", "sum_by"]


def sum_by(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Sums of ``values`` (n, ...) over rows with the same ``index``: shape (size, ...)."""
    flat = values.reshape(len(index), int(np.prod(values.shape[1:], dtype=np.int64)))
    out = np.stack([np.bincount(index, weights=flat[:, d], minlength=size)
                    for d in range(flat.shape[1])], axis=1)
    return out.reshape((size,) + values.shape[1:])


def coincidences(unit: np.ndarray, weights: np.ndarray, n_units: int) -> np.ndarray:
    """Krippendorff's coincidence matrix of every unit, shape (n_units, C, C).

    A unit coded by m >= 2 coders with values w_1..w_m (rows of ``weights``, one-hot or
    fractions) contributes ``(s s^T - sum_k w_k w_k^T) / (m - 1)`` with ``s = sum_k w_k``:
    every ordered pair of two different coders' values, weighted 1/(m - 1).  Units with one
    coder contribute nothing.
    """
    s = sum_by(unit, weights, n_units)
    own = sum_by(unit, weights[:, :, None] * weights[:, None, :], n_units)
    m = np.bincount(unit, minlength=n_units).astype(float)
    pairable = m >= 2
    out = np.zeros_like(own)
    out[pairable] = (s[pairable, :, None] * s[pairable, None, :] - own[pairable]) \
        / (m[pairable] - 1)[:, None, None]
    return out


def squared_distances(n_c: np.ndarray, ordinal: bool) -> np.ndarray:
    """Krippendorff's delta^2 between categories, shape (..., C, C), from the marginals.

    Nominal: 1 between different categories.  Ordinal:
    ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2`` with ``n_g`` the pairable values of
    category g (so it depends on the data's marginals ``n_c``, shape (..., C)).
    """
    c = n_c.shape[-1]
    if not ordinal:
        return np.broadcast_to(1.0 - np.eye(c), n_c.shape[:-1] + (c, c))
    upto = np.cumsum(n_c, axis=-1)          # sum_{g <= c}
    before = upto - n_c                      # sum_{g < c}
    lo, hi = np.minimum.outer(np.arange(c), np.arange(c)), np.maximum.outer(np.arange(c),
                                                                             np.arange(c))
    between = upto[..., hi] - before[..., lo]
    half = (n_c[..., :, None] + n_c[..., None, :]) / 2
    return (between - half) ** 2


def alpha_from_coincidences(o: np.ndarray, ordinal: bool = False) -> np.ndarray:
    """Krippendorff's alpha from coincidence matrices ``o`` (..., C, C).

    ``alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck``; NaN where the expected
    disagreement is 0 (every pairable value in one category).
    """
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    d = squared_distances(n_c, ordinal)
    observed = (o * d).sum(axis=(-2, -1))
    expected = (n_c[..., :, None] * n_c[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1) * observed / expected, np.nan)


def kappa_from_confusion(m: np.ndarray) -> np.ndarray:
    """Cohen's (unweighted) kappa from confusion tables ``m`` (..., C, C); NaN if undefined."""
    total = m.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = np.trace(m, axis1=-2, axis2=-1) / total
        p_e = (m.sum(axis=-1) * m.sum(axis=-2)).sum(axis=-1) / total ** 2
        return np.where((total > 0) & (p_e < 1 - 1e-12), (p_o - p_e) / (1 - p_e), np.nan)


def accuracy_from_confusion(m: np.ndarray) -> np.ndarray:
    """Share of the confusion table ``m`` (..., C, C) on its diagonal; NaN if empty."""
    total = m.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, np.trace(m, axis1=-2, axis2=-1) / total, np.nan)


def cluster_bootstrap(per_cluster: np.ndarray, statistic, n_boot: int, level: float,
                      rng: np.random.Generator, names=()):
    """Estimate and percentile interval of ``statistic`` of the sum over clusters.

    ``per_cluster`` (G, ...) holds each cluster's share of the sufficient sums; a replicate
    draws as many clusters as contribute, with replacement, among those that contribute.
    ``statistic`` maps (..., *per_cluster.shape[1:]) to (..., S).  Returns three (S,) arrays.
    The interval is over the replicates where the statistic is defined; where some are not
    (one value throughout a resample) but the estimate is, a DataWarning says how many,
    naming the statistic by ``names`` (S labels).
    """
    estimate = np.asarray(statistic(per_cluster.sum(axis=0)), dtype=float)
    lower = np.full(estimate.shape, np.nan)
    upper = np.full(estimate.shape, np.nan)
    flat = per_cluster.reshape(len(per_cluster), -1)
    used = np.flatnonzero(np.any(flat != 0, axis=1))
    if n_boot == 0 or len(used) == 0:
        return estimate, lower, upper
    draws = rng.multinomial(len(used), np.full(len(used), 1.0 / len(used)), size=n_boot)
    replicates = statistic((draws @ flat[used]).reshape((n_boot,) + per_cluster.shape[1:]))
    tails = [(1 - level) / 2, (1 + level) / 2]
    for s in range(estimate.shape[-1]):
        finite = replicates[:, s][np.isfinite(replicates[:, s])]
        if finite.size:
            lower[s], upper[s] = np.quantile(finite, tails)
        if finite.size < n_boot and np.isfinite(estimate[s]):
            from ..errors import DataWarning, warn

            name = names[s] if s < len(names) else f"statistic {s}"
            warn(f"{n_boot - finite.size} of {n_boot} bootstrap replicates of {name} are "
                 "undefined (one value throughout the prompts drawn): "
                 + (f"its interval is over the {finite.size} others" if finite.size else
                    "it has no interval"), DataWarning)
    return estimate, lower, upper
