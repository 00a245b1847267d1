"""Prompts as clusters: which comparisons of each cell share a prompt, question or conversation.

Verdicts on one prompt share its difficulty and the answers shown, so they are dependent.
The cells stay the unit of computation; :class:`ClusterCounts` refines them by cluster in a
sparse incidence whose size is at most the number of rows read.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import DataError

__all__ = ["ClusterCounts", "checked_clusters", "readonly"]


def readonly(a: np.ndarray) -> np.ndarray:
    """A contiguous, read-only view of ``a``."""
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


class ClusterCounts(NamedTuple):
    """Which comparisons of each cell share a cluster (a prompt, question or conversation).

    A sparse cluster x cell incidence: entry e says that ``n[e]`` comparisons of cell
    ``cell[e]`` belong to cluster ``cluster[e]``, with ``wins[e]`` wins of the first-shown item
    (ties 1/2) and ``ties[e]`` ties.  Its size is at most the number of rows read.

    Attributes
    ----------
    names : tuple of str
        Cluster labels in index order.
    cluster, cell : ndarray of int
    n, wins, ties : ndarray of float
    """

    names: tuple[str, ...]
    cluster: np.ndarray
    cell: np.ndarray
    n: np.ndarray
    wins: np.ndarray
    ties: np.ndarray

    @property
    def n_clusters(self) -> int:
        """Number of clusters G."""
        return len(self.names)

    @property
    def first_wins(self) -> np.ndarray:
        """Decisive wins of the first-shown item per entry."""
        return self.wins - self.ties / 2

    @property
    def second_wins(self) -> np.ndarray:
        """Decisive wins of the second-shown item per entry."""
        return self.n - self.wins - self.ties / 2

    def comparisons_per_cluster(self) -> np.ndarray:
        """Comparisons in each cluster, shape (G,)."""
        return np.bincount(self.cluster, weights=self.n, minlength=self.n_clusters)


def checked_clusters(c: ClusterCounts, data) -> ClusterCounts:
    """Validate a cluster incidence against the cells of ``data`` (a Comparisons) it refines.

    Returns the same counts with typed, read-only arrays.

    Raises
    ------
    DataError
        Arrays of different lengths, indices out of range, or counts that do not add up to
        the cells'.
    """
    c = ClusterCounts(tuple(str(x) for x in c.names),
                      *(readonly(np.asarray(a, dtype=np.int64)) for a in (c.cluster, c.cell)),
                      *(readonly(np.asarray(a, dtype=np.float64)) for a in (c.n, c.wins, c.ties)))
    if not len(c.cluster) == len(c.cell) == len(c.n) == len(c.wins) == len(c.ties):
        raise DataError("cluster arrays must have one length")
    if len(c.cell) and (c.cell.min() < 0 or c.cell.max() >= data.n_cells
                        or c.cluster.min() < 0 or c.cluster.max() >= len(c.names)):
        raise DataError("cluster or cell index out of range in the cluster counts")
    for name in ("n", "wins", "ties"):
        total = np.bincount(c.cell, weights=getattr(c, name), minlength=data.n_cells)
        if not np.allclose(total, getattr(data, name), rtol=1e-12, atol=1e-9):
            raise DataError(f"the cluster counts' {name!r} do not add up to the cells'")
    return c
