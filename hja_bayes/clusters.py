"""Prompts as clusters: which comparisons of each cell share a prompt, question or conversation.

Verdicts on one prompt share its difficulty and the answers shown, so they are dependent.
The cells stay the unit of computation; :class:`ClusterCounts` refines them by cluster in a
sparse incidence whose size is at most the number of rows read.  Its entries also carry the
answers' style features, which vary by prompt: a fit that controls for style sums over
entries instead of cells.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import DataError
from .categories import CountViews

__all__ = ["ClusterCounts", "checked_clusters", "effective_clusters", "readonly", "unique_inverse"]


def readonly(a: np.ndarray) -> np.ndarray:
    """A contiguous, read-only view of ``a``."""
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


class _ClusterFields(NamedTuple):
    """The fields of :class:`ClusterCounts`."""

    names: tuple[str, ...]
    cluster: np.ndarray
    cell: np.ndarray
    counts: np.ndarray
    features: np.ndarray | None = None


class ClusterCounts(CountViews, _ClusterFields):
    """Which comparisons of each cell share a cluster (a prompt, question or conversation).

    A sparse cluster x cell incidence: entry e says that cell ``cell[e]`` holds
    ``counts[e]`` verdicts (per outcome category) on cluster ``cluster[e]``.  With style
    features, ``features[e]`` are the transformed feature differences (first minus second)
    of the answers judged there; a (cluster, cell) pair may then appear more than once if
    its rows showed answers with different features.  The size is at most the number of
    rows read.

    Attributes
    ----------
    names : tuple of str
        Cluster labels in index order.
    cluster, cell : ndarray of int (E,)
    counts : ndarray of float (E, C)
    features : ndarray of float (E, F) or None
    """

    __slots__ = ()

    @property
    def n_clusters(self) -> int:
        """Number of clusters G."""
        return len(self.names)

    def comparisons_per_cluster(self) -> np.ndarray:
        """Comparisons in each cluster, shape (G,)."""
        return np.bincount(self.cluster, weights=self.n, minlength=self.n_clusters)


def effective_clusters(sizes) -> float:
    """The effective number of clusters of a cluster-size distribution,
    ``G_eff = (sum_g n_g)^2 / sum_g n_g^2``.

    It equals G when every cluster holds the same number of comparisons and falls towards 1
    as one cluster dominates: the number of equal clusters whose mean has the same variance
    as the size-weighted mean of these (a Kish-type design effect).  Over 15 prompts whose
    sizes run from 1 to 50 it is 11.1 when the sizes are evenly spaced, 7.0 when they are
    geometrically spaced, and 1.6 when one prompt has 50 comparisons and the others 1.

    Parameters
    ----------
    sizes : array-like of float
        Comparisons per cluster (zeros are ignored).

    Returns
    -------
    float
        0 for no comparisons.
    """
    n = np.asarray(sizes, dtype=float)
    total = n.sum()
    return float(total ** 2 / np.sum(n ** 2)) if total > 0 else 0.0


def checked_clusters(c: ClusterCounts, data) -> ClusterCounts:
    """Validate a cluster incidence against the cells of ``data`` (a Comparisons) it refines.

    Returns the same counts with typed, read-only arrays.

    Raises
    ------
    DataError
        Arrays of different lengths, indices out of range, or counts that do not add up to
        the cells'.
    """
    if getattr(c, "in_engine", False):  # prompts kept in a query engine check themselves
        return c.checked(data)
    features = None if c.features is None else readonly(np.asarray(c.features, dtype=np.float64))
    c = ClusterCounts(tuple(str(x) for x in c.names),
                      *(readonly(np.asarray(a, dtype=np.int64)) for a in (c.cluster, c.cell)),
                      readonly(np.asarray(c.counts, dtype=np.float64)), features)
    if not len(c.cluster) == len(c.cell) == len(c.counts) or (
            features is not None and len(features) != len(c.cell)):
        raise DataError("cluster arrays must have one length")
    if c.counts.ndim != 2 or c.counts.shape[1] != data.counts.shape[1]:
        raise DataError(f"cluster counts must have shape (entries, {data.counts.shape[1]})")
    if len(c.cell) and (c.cell.min() < 0 or c.cell.max() >= data.n_cells
                        or c.cluster.min() < 0 or c.cluster.max() >= len(c.names)):
        raise DataError("cluster or cell index out of range in the cluster counts")
    for a in range(c.counts.shape[1]):
        total = np.bincount(c.cell, weights=c.counts[:, a], minlength=data.n_cells)
        if not np.allclose(total, data.counts[:, a], rtol=1e-12, atol=1e-9):
            raise DataError("the cluster counts do not add up to the cells'")
    return c


def unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` by a stable sort, which finds the runs that
    rows already in order have (folded or merged cells, files grouped by judge): 2.4x
    faster on the folded cells of a 2M-row panel, as fast on keys in random order."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse
