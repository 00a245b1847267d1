"""Simulated draws of contrasts between models, for ``plan``'s critical values and joint power.

Every contrast ``mu_a - mu_b`` is a difference of the models' scores, so the draws are made
per model (``N(0, M)``, M the N x N covariance of the scores) and differenced in blocks of
pairs: memory and time follow the models and the draws, never a pairs x pairs matrix.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ContrastDraws", "DRAWS", "pair_variances"]

DRAWS = 20_000
BLOCK = 4_000_000  # (draw, pair) numbers held at once


def pair_variances(M, a, b) -> np.ndarray:
    """Variances of ``Z_a - Z_b`` for a covariance ``M`` of the models' scores."""
    return M[a, a] + M[b, b] - 2 * M[a, b]


class ContrastDraws:
    """Normal draws of the contrasts asked, ``W = Z_a - Z_b`` with ``Z ~ N(0, M)`` the models'
    scores: drawn per model and differenced in blocks of pairs, so that memory follows the
    models, not the pairs (every pair of 200 models is 19,900 contrasts; their correlation
    matrix alone would be 3 GB)."""

    def __init__(self, M, a, b, seed: int):
        eig, vec = np.linalg.eigh((M + M.T) / 2)
        root = vec * np.sqrt(np.clip(eig, 0.0, None))
        self.Z = np.random.default_rng(seed).standard_normal((DRAWS, M.shape[0])) @ root.T
        self.a, self.b = a, b
        self.step = max(1, BLOCK // DRAWS)

    def blocks(self):
        """(slice of the pairs, their draws (draws, pairs in the block)) in turn."""
        for start in range(0, len(self.a), self.step):
            at = slice(start, start + self.step)
            yield at, self.Z[:, self.a[at]] - self.Z[:, self.b[at]]

    def max_abs_t(self, sd) -> np.ndarray:
        """Each draw's largest ``|W| / sd`` over the pairs."""
        out = np.zeros(DRAWS)
        for at, W in self.blocks():
            np.maximum(out, np.max(np.abs(W) / sd[at], axis=1), out=out)
        return out

    def largest_scale(self, d, threshold) -> np.ndarray:
        """Each draw's supremum of the scales ``s`` at which every pair is detected,
        ``d + s W > s threshold``: ``min d / (threshold - W)`` over the pairs where
        ``W < threshold`` (those with ``W >= threshold`` are detected at every scale)."""
        out = np.full(DRAWS, np.inf)
        for at, W in self.blocks():
            short = threshold[at] - W
            with np.errstate(divide="ignore"):
                bound = np.where(short > 0, d[at] / short, np.inf)
            np.minimum(out, bound.min(axis=1), out=out)
        return out
