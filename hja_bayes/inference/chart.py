"""The tangent chart of the rank-r HJA model at a fitted score matrix.

The rank-r HJA model is the set of row-centred K x N score matrices of rank at most
``m = r + 1``.  At a fitted ``S = P Sigma Q^T`` (P: K x m, Q: N x m, both orthonormal) the
tangent space of that set is

    { P M Q^T + X Q^T + P Y^T :  X^T P = 0,  Y^T Q = 0,  Y^T 1 = 0 }

of dimension ``m (K + N - m - 1) = (r + 1)(K + N - r - 2)``.  An orthonormal basis of it (in
the flattened, row-major coordinates of S) is a local chart of the model.
"""

from __future__ import annotations

import numpy as np

from ..decomposition import check_rank
from ..errors import IdentifiabilityError, ParameterError

__all__ = ["RANK_TOLERANCE", "centre_rows", "tangent_basis"]

#: Relative size of the (r+2)-th singular value of S above which S is not of rank <= r+1.
RANK_TOLERANCE = 1e-6


def _orthonormal_complement(A: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the orthogonal complement of the columns of ``A`` (full rank)."""
    n, k = A.shape
    left = np.linalg.svd(A, full_matrices=True)[0]
    return left[:, k:]


def centre_rows(S) -> np.ndarray:
    S = np.asarray(S, dtype=float)
    if S.ndim != 2:
        raise ParameterError(f"S must be a K x N matrix, got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise IdentifiabilityError("the score matrix has non-finite entries")
    return S - S.mean(axis=1, keepdims=True)


def tangent_basis(S, rank: int, *, rank_tolerance: float = RANK_TOLERANCE) -> np.ndarray:
    """Orthonormal basis of the tangent space of the rank-``rank`` HJA model at ``S``.

    The model is the set of row-centred K x N matrices of rank ``m = rank + 1``.  With the
    thin SVD ``S = P Sigma Q^T``, ``P_perp`` an orthonormal basis of ``P``'s complement in
    R^K and ``Q_c`` one of ``{Q, 1}``'s complement in R^N, the basis consists of the
    matrices ``p_a q_b^T``, ``p_a qc_d^T`` and ``pperp_c q_b^T`` (the three kinds of
    tangent direction ``P M Q^T``, ``P Y^T`` and ``X Q^T``), flattened row-major.

    Parameters
    ----------
    S : array (K, N)
        A point of the model (rows are centred here; the likelihood ignores row shifts).
    rank : int
        Disagreement rank r.
    rank_tolerance : float
        ``S`` must have ``sigma_{r+2} <= rank_tolerance * sigma_1`` (rank at most r + 1) and
        ``sigma_{r+1} > 1e-10 * sigma_1`` (rank exactly r + 1, else the tangent space is
        not defined).

    Returns
    -------
    ndarray (K * N, (r + 1)(K + N - r - 2))
        Orthonormal columns; column c reshaped to (K, N) is a tangent direction.

    Raises
    ------
    IdentifiabilityError
        When ``S`` is not (numerically) of rank exactly r + 1, or the rank is not
        identifiable for this K, N.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> S = rng.standard_normal((3, 2)) @ rng.standard_normal((2, 5))
    >>> B = tangent_basis(S, 1)
    >>> B.shape, bool(np.allclose(B.T @ B, np.eye(B.shape[1])))
    ((15, 10), True)
    """
    S = centre_rows(S)
    K, N = S.shape
    rank = check_rank(rank, K, N)
    m = rank + 1
    left, sigma, right_t = np.linalg.svd(S, full_matrices=False)
    top = sigma[0] if sigma.size else 0.0
    if top <= 0 or sigma[m - 1] <= 1e-10 * top:
        raise IdentifiabilityError(
            f"S has rank below r + 1 = {m} (singular values {np.array2string(sigma[:m + 1], precision=3)}): "
            "the tangent space of the rank-r model is not defined there; fit a smaller rank"
        )
    if sigma.size > m and sigma[m] > rank_tolerance * top:
        raise IdentifiabilityError(
            f"S is not a point of the rank-{rank} model: its singular value {m + 1} is "
            f"{sigma[m] / top:.3g} of the largest (tolerance {rank_tolerance:g}); pass the "
            f"fitted rank-{rank} score matrix"
        )
    P, Q = left[:, :m], right_t[:m].T
    P_perp = _orthonormal_complement(P)
    Q_c = _orthonormal_complement(np.column_stack([np.ones(N) / np.sqrt(N), Q]))
    Q_all = np.column_stack([Q, Q_c])  # orthonormal basis of 1-perp in R^N
    return np.column_stack([np.kron(P, Q_all), np.kron(P_perp, Q)])
