"""The tangent chart of the rank-r HJA model at a fitted score matrix.

The rank-r HJA model is the set of row-centred K x N score matrices of rank at most
``m = r + 1``.  At a fitted ``S = P Sigma Q^T`` (P: K x m, Q: N x m, both orthonormal) the
tangent space of that set is

    { P M Q^T + X Q^T + P Y^T :  X^T P = 0,  Y^T Q = 0,  Y^T 1 = 0 }

of dimension ``m (K + N - m - 1) = (r + 1)(K + N - r - 2)``.  An orthonormal basis of it (in
the flattened, row-major coordinates of S) is a local chart of the model
(:func:`tangent_basis`, the public chart of :class:`~hja_bayes.inference.WaldInference`).

The computations use the same space in *factor coordinates* (:class:`FactorChart`):
``dS = A Q^T + P Y^T`` with ``A`` (K x m) free and ``Y`` (N x m) constrained to
``Y^T 1 = 0, Y^T Q = 0``, plus the estimated per-judge term coefficients (position bias,
self-preference, per-judge style), the outcome model's per-judge parameters and the
panel-wide coefficients.  A unit (k, i, j) then touches only judge k's ``A`` row (through
``Q_i - Q_j``), its coefficients and extra parameters, the panel-wide ones, and the rows
``Y_i``, ``Y_j`` (through ``+-P_k``): the information is assembled from per-unit weights
without forming a (K N) x dim basis.  The map from the orthonormal chart to these coordinates is an
isometry onto the constrained subspace (``|dS|_F^2 = |A|^2 + |Y|^2`` there), so a ridge
is still the identity and covariances agree exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..decomposition import check_rank
from ..errors import IdentifiabilityError, ParameterError

__all__ = ["FactorChart", "RANK_TOLERANCE", "centre_rows", "factor_chart", "tangent_basis"]

#: Relative size of the (r+2)-th singular value of S above which S is not of rank <= r+1.
RANK_TOLERANCE = 1e-6


def _orthonormal_complement(A: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the orthogonal complement of the columns of ``A`` (full rank)."""
    n, k = A.shape
    left = np.linalg.svd(A, full_matrices=True)[0]
    return left[:, k:]


def centre_rows(S) -> np.ndarray:
    """``S`` (K x N, finite) with each row's mean taken out."""
    S = np.asarray(S, dtype=float)
    if S.ndim != 2:
        raise ParameterError(f"S must be a K x N matrix, got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise IdentifiabilityError("the score matrix has non-finite entries")
    return S - S.mean(axis=1, keepdims=True)


def _factors(S: np.ndarray, rank: int, rank_tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P, Q)``: the leading r + 1 singular vectors of the row-centred ``S``, checked."""
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
    return left[:, :m], right_t[:m].T


class FactorChart(NamedTuple):
    """Factor coordinates ``phi`` of the tangent space (plus the linear terms' coefficients
    and the outcome model's extra parameters).

    Layout of ``phi``: ``A`` (K x m, row-major), then the estimated per-judge coefficients
    (``coef``: flat indices ``k q + c`` of the K x q coefficient matrix), then the estimated
    extra outcome parameters (``free``: flat indices ``k n_aux + a``), then the ``n_global``
    panel-wide coefficients, then ``Y`` (N x m, row-major).  ``Y`` is constrained to the
    complement of the orthonormal columns :meth:`constraints`; on that subspace the
    coordinates are an isometric image of the orthonormal chart (:meth:`tangent_map`).

    Attributes
    ----------
    P : ndarray (K, m)
        Left singular vectors of S.
    Q : ndarray (N, m)
        Right singular vectors of S (orthogonal to the all-ones vector).
    n_coef_columns : int
        q, the per-judge coefficient columns (position bias is one).
    coef : ndarray of int
        The estimated ones.
    n_aux : int
        The outcome model's per-judge parameters.
    free : ndarray of int
        The estimated ones (see :func:`~hja_bayes.inference.information.free_aux`).
    n_global : int
        Panel-wide coefficients (all estimated).
    """

    P: np.ndarray
    Q: np.ndarray
    n_coef_columns: int
    coef: np.ndarray
    n_aux: int
    free: np.ndarray
    n_global: int = 0

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(K, N, m)``."""
        return self.P.shape[0], self.Q.shape[0], self.P.shape[1]

    @property
    def coef_offset(self) -> int:
        """Where the term coefficients' coordinates start (after the A block)."""
        K, _, m = self.shape
        return K * m

    @property
    def aux_offset(self) -> int:
        """Where the outcome model's free parameters start."""
        return self.coef_offset + self.coef.size

    @property
    def global_offset(self) -> int:
        """Where the shared (global) coefficients start."""
        return self.aux_offset + self.free.size

    @property
    def y_offset(self) -> int:
        """Where the item-side (Y) coordinates start."""
        return self.global_offset + self.n_global

    @property
    def dim(self) -> int:
        """Length of ``phi`` (the constrained subspace has ``m (m + 1)`` fewer dimensions)."""
        _, N, m = self.shape
        return self.y_offset + N * m

    @property
    def chart_dim(self) -> int:
        """Dimension of the model's chart: free parameters (with the terms and extra ones)."""
        _, _, m = self.shape
        return self.dim - m * (m + 1)

    def constraints(self) -> np.ndarray:
        """Orthonormal columns ``C`` (dim x m(m+1)): ``phi`` is in the chart iff ``C^T phi = 0``
        (``Y^T 1 = 0`` and ``Y^T Q = 0``)."""
        _, N, m = self.shape
        C = np.zeros((self.dim, m * (m + 1)))
        rows = self.y_offset + np.arange(N)[:, None] * m
        directions = np.column_stack([np.full(N, 1 / np.sqrt(N)), self.Q])  # orthonormal
        for a in range(m):
            for b in range(m + 1):
                C[rows[:, 0] + a, a * (m + 1) + b] = directions[:, b]
        return C

    def pullback(self, dS: np.ndarray, dcoef: np.ndarray | None = None,
                 dglobal: np.ndarray | None = None) -> np.ndarray:
        """Gradients in ``phi`` from gradients with respect to (S, Z, theta).

        Parameters
        ----------
        dS : ndarray (q, K, N)
        dcoef : ndarray (q, K, n_coef_columns), optional
            With respect to the per-judge coefficients (only the estimated ones count).
        dglobal : ndarray (q, n_global), optional

        Returns
        -------
        ndarray (q, dim)
            Zero along the extra outcome parameters.
        """
        K, N, m = self.shape
        q = dS.shape[0]
        out = np.zeros((q, self.dim))
        out[:, : K * m] = (dS @ self.Q).reshape(q, K * m)
        out[:, self.y_offset:] = np.matmul(dS.transpose(0, 2, 1), self.P).reshape(q, N * m)
        if self.coef.size and dcoef is not None:
            out[:, self.coef_offset: self.aux_offset] = np.reshape(dcoef, (q, -1))[:, self.coef]
        if self.n_global and dglobal is not None:
            out[:, self.global_offset: self.y_offset] = dglobal
        return out

    def local_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """Chart index of each judge-local coordinate: ``eta_cols`` (K, m + q + g) for the
        linear predictor's coefficients (A row, per-judge coefficients, panel-wide ones, the
        last shared by every judge) and ``aux_cols`` (K, n_aux); -1 where not estimated."""
        K, _, m = self.shape
        q = self.n_coef_columns
        coef = np.full(K * q, -1)
        coef[self.coef] = self.coef_offset + np.arange(self.coef.size)
        glob = np.broadcast_to(self.global_offset + np.arange(self.n_global), (K, self.n_global))
        eta_cols = np.concatenate([np.arange(K)[:, None] * m + np.arange(m), coef.reshape(K, q),
                                   glob], axis=1)
        aux = np.full(K * self.n_aux, -1)
        aux[self.free] = self.aux_offset + np.arange(self.free.size)
        return eta_cols, aux.reshape(K, self.n_aux)

    def local_design(self, units, design) -> np.ndarray:
        """Per unit, the linear predictor's derivative in the judge-local coordinates:
        ``[Q_i - Q_j, X, Xg]`` (units, m + q + g)."""
        return np.column_stack([self.Q[units.first] - self.Q[units.second], design.X, design.Xg])

    def complements(self) -> tuple[np.ndarray, np.ndarray]:
        """``(P_perp, Q_c)``: orthonormal complements of P in R^K and of ``{1, Q}`` in R^N."""
        _, N, _ = self.shape
        return (_orthonormal_complement(self.P),
                _orthonormal_complement(np.column_stack([np.ones(N) / np.sqrt(N), self.Q])))

    def tangent_map(self) -> np.ndarray:
        """The orthonormal chart in ``phi`` coordinates: ``T`` (dim x chart_dim), orthonormal
        columns spanning the constrained subspace, column c the image of coordinate c of
        :func:`tangent_basis` (then the coefficients, the extra parameters and the panel-wide
        coefficients).  Dense: for small panels (tests, :attr:`WaldInference.covariance`)."""
        K, N, m = self.shape
        P_perp, Q_c = self.complements()
        T = np.zeros((self.dim, self.chart_dim))
        col = 0
        for a in range(m):  # kron(P, [Q, Q_c]) columns a (N - 1) + b
            for b in range(m):
                T[np.arange(K) * m + b, col] = self.P[:, a]
                col += 1
            for b in range(N - 1 - m):
                T[self.y_offset + np.arange(N) * m + a, col] = Q_c[:, b]
                col += 1
        for c in range(K - m):  # kron(P_perp, Q) columns
            for b in range(m):
                T[np.arange(K) * m + b, col] = P_perp[:, c]
                col += 1
        extra = self.y_offset - self.coef_offset
        T[self.coef_offset: self.y_offset, col: col + extra] = np.eye(extra)
        return T

    def score_basis(self) -> np.ndarray:
        """The orthonormal tangent basis in vec S coordinates (see :func:`tangent_basis`)."""
        P_perp, Q_c = self.complements()
        Q_all = np.column_stack([self.Q, Q_c])  # orthonormal basis of 1-perp in R^N
        return np.column_stack([np.kron(self.P, Q_all), np.kron(P_perp, self.Q)])


def factor_chart(S, rank: int, *, coef_free=None, n_aux: int = 0, free=None, n_global: int = 0,
                 rank_tolerance: float = RANK_TOLERANCE) -> FactorChart:
    """The :class:`FactorChart` at ``S`` (checked as in :func:`tangent_basis`).

    ``coef_free`` (K, q) bool: the estimated per-judge coefficients (default none);
    ``free``: flat indices of the estimated extra outcome parameters; ``n_global``: the
    panel-wide coefficients.
    """
    S = centre_rows(S)
    P, Q = _factors(S, rank, rank_tolerance)
    free = np.zeros(0, dtype=int) if free is None else np.asarray(free, dtype=int)
    coef_free = np.zeros((S.shape[0], 0), bool) if coef_free is None else np.asarray(coef_free, bool)
    return FactorChart(P, Q, coef_free.shape[1], np.flatnonzero(coef_free.ravel()), int(n_aux),
                       free, int(n_global))


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
        Orthonormal columns; column c reshaped to (K, N) is a tangent direction.  Dense:
        (K N) x dim numbers, meant for small panels; the Wald computations never form it.

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
    return factor_chart(S, rank, rank_tolerance=rank_tolerance).score_basis()
