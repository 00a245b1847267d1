"""The sampler's coordinates: raw unconstrained vectors and their map onto the HJA constraints.

The rank-r HJA model ``S = gamma mu^T + U V^T`` lives on a constraint set (centring,
``sum(gamma) = K``, ``mu^T V = 0``, ``V^T V = N I``).  NUTS needs unconstrained real
coordinates, so every constrained quantity is produced from raw vectors by a smooth
deterministic map ("reparameterised orthogonal factors"):

``mu = A z_mu``
    ``A`` (N x (N-1)) is a fixed orthonormal basis of the centred vectors, so ``1^T mu = 0``
    holds exactly and no coordinate along ``1`` is sampled.
``gamma = 1 + B z_gamma``
    ``B`` (K x (K-1)) is a fixed orthonormal basis of the centred judge vectors, so
    ``sum(gamma) = K``.
``U = B L``
    ``L`` ((K-1) x r) is lower trapezoidal (``L[a, b] = 0`` for ``b > a``).  This removes
    the r(r-1)/2 rotation directions ``(U, V) -> (U O, V O)`` that leave S unchanged and
    that the likelihood cannot see.
``V = sqrt(N) C(mu) W R^{-1}``
    ``C(mu)`` (N x (N-2)) is an orthonormal basis of ``{1, mu}``-perp that moves smoothly
    with mu (a Householder reflection inside ``A``'s span), ``W`` ((N-2) x r) a raw matrix
    and ``R`` the Cholesky factor of ``W^T W``.  ``W R^{-1}`` is the orthonormal factor of W
    (the Gram-Schmidt rather than the polar factor: both are exact, and the Cholesky factor
    has well-defined gradients even when ``W^T W`` has repeated eigenvalues, where the
    polar factor's eigen-decomposition does not).

The only coordinates the likelihood does not see are the r(r+1)/2 entries of the Gram
matrix ``W^T W``; :func:`~hja_bayes.bayes.model.hja_model` pins them by a tight prior.
The map's inverse, :func:`unconstrain`, puts the MAP into these coordinates.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..decomposition import Decomposition

__all__ = ["Chart", "RawCoordinates", "chart_at", "constrain", "default_chart", "raw_sizes",
           "tril_index", "unconstrain"]


class Chart(NamedTuple):
    """Fixed orthonormal bases used by the map (a pytree of arrays).

    Attributes
    ----------
    item_basis : (N, N-1)
        Orthonormal basis of the centred item vectors.  Its first column is the reference
        direction ``-mu_ref / |mu_ref|``: the Householder basis of ``{1, mu}``-perp is smooth
        everywhere except at ``mu`` pointing along that column, i.e. opposite to the
        reference consensus.
    judge_basis : (K, K-1)
        Orthonormal basis of the centred judge vectors; with a reference fit its first r
        columns span the reference U, so L is diagonal there.
    """

    item_basis: jax.Array
    judge_basis: jax.Array


class RawCoordinates(NamedTuple):
    """The unconstrained coordinates NUTS samples (a pytree).

    ``z_mu (N-1,)``, ``z_gamma (K-1,)``, ``l_free (r(K-1) - r(r-1)/2,)``,
    ``w (N-2, r)``, ``beta (K,)`` (empty without position bias).
    """

    z_mu: jax.Array
    z_gamma: jax.Array
    l_free: jax.Array
    w: jax.Array
    beta: jax.Array


def raw_sizes(n_judges: int, n_items: int, rank: int) -> dict[str, int]:
    """Number of raw coordinates of each block (and the identified total)."""
    K, N, r = n_judges, n_items, rank
    sizes = {"z_mu": N - 1, "z_gamma": K - 1, "l_free": r * (K - 1) - r * (r - 1) // 2,
             "w": r * (N - 2)}
    sizes["identified"] = (r + 1) * (K + N - r - 2)
    return sizes


def _orthonormal_completion(n: int, leading: np.ndarray) -> np.ndarray:
    """Orthonormal basis of 1-perp in R^n whose first columns span ``leading`` in order.

    Gram-Schmidt over ``[1, leading, e_1, ..., e_n]``, skipping (numerically) dependent
    columns; the direction of 1 is dropped at the end.
    """
    cols = [np.ones(n) / np.sqrt(n)]
    for c in list(np.asarray(leading, dtype=float).T) + list(np.eye(n)):
        for _ in range(2):  # re-orthogonalise once for accuracy
            for q in cols:
                c = c - (q @ c) * q
        norm = np.linalg.norm(c)
        if norm > 1e-8:
            cols.append(c / norm)
        if len(cols) == n:
            break
    return np.column_stack(cols[1:]) if n > 1 else np.zeros((n, 0))  # one judge: no basis


def default_chart(n_judges: int, n_items: int) -> Chart:
    """A data-free chart (Gram-Schmidt bases of the centred vectors); used for the prior."""
    return Chart(jnp.asarray(_orthonormal_completion(n_items, np.zeros((n_items, 0)))),
                 jnp.asarray(_orthonormal_completion(n_judges, np.zeros((n_judges, 0)))))


def chart_at(reference: Decomposition) -> Chart:
    """A chart adapted to a reference point (e.g. the MAP).

    The item basis starts with ``-mu/|mu|`` and then the columns of V, the judge basis
    with the columns of U.  At the reference, the raw coordinates are then simple
    (``L`` diagonal, ``W`` a multiple of ``[I; 0]``) and far from the singular point of the
    Householder map.
    """
    gamma, mu, U, V, _ = (np.asarray(x, dtype=float) for x in reference)
    N, K = len(mu), len(gamma)
    item = _orthonormal_completion(N, np.column_stack([-mu / np.linalg.norm(mu), V]))
    judge = _orthonormal_completion(K, U)
    return Chart(jnp.asarray(item), jnp.asarray(judge))


def tril_index(n_rows: int, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the free entries of a lower trapezoidal ``n_rows x rank`` matrix."""
    rows, cols = np.tril_indices(n_rows, 0, rank)
    return rows, cols


def _complement_basis(mu: jax.Array, item_basis: jax.Array) -> jax.Array:
    """Orthonormal basis of ``{1, mu}``-perp, N x (N-2), smooth in mu.

    With ``c`` the coordinates of ``mu/|mu|`` in ``item_basis`` and ``v = e_1 - c``, the
    Householder reflection ``H = I - 2 v v^T / |v|^2`` maps ``e_1`` to ``c``; its other
    columns are orthonormal and orthogonal to c.
    """
    c = item_basis.T @ mu
    c = c / jnp.linalg.norm(c)
    v = jnp.zeros_like(c).at[0].set(1.0) - c
    H = jnp.eye(c.shape[0]) - 2.0 * jnp.outer(v, v) / (v @ v)
    return item_basis @ H[:, 1:]


def constrain(raw: RawCoordinates, chart: Chart, rank: int):
    """Map raw coordinates onto the constraint set.

    Returns
    -------
    gamma (K,), mu (N,), U (K, r), V (N, r), beta (K,)
        They satisfy centring, ``sum(gamma) = K``, ``mu^T V = 0`` and ``V^T V = N I``
        exactly (to rounding); U's columns are not orthogonal and signs are free, so
        pass ``S = gamma mu^T + U V^T`` through ``canonicalize`` for identified values.
    """
    N = chart.item_basis.shape[0]
    K = chart.judge_basis.shape[0]
    mu = chart.item_basis @ raw.z_mu
    gamma = 1.0 + chart.judge_basis @ raw.z_gamma
    if rank == 0:
        U = jnp.zeros((K, 0), mu.dtype)
        V = jnp.zeros((N, 0), mu.dtype)
    else:
        rows, cols = tril_index(K - 1, rank)
        L = jnp.zeros((K - 1, rank), mu.dtype).at[rows, cols].set(raw.l_free)
        U = chart.judge_basis @ L
        Z = _complement_basis(mu, chart.item_basis) @ raw.w
        lower = jnp.linalg.cholesky(raw.w.T @ raw.w)
        V = jnp.sqrt(N) * solve_triangular(lower, Z.T, lower=True).T
    beta = raw.beta if raw.beta.shape[0] else jnp.zeros(K, mu.dtype)
    return gamma, mu, U, V, beta


def unconstrain(reference: Decomposition, beta, chart: Chart) -> RawCoordinates:
    """Raw coordinates that :func:`constrain` maps onto ``reference`` (the inverse map).

    ``reference`` must satisfy the HJA constraints (e.g. a canonical decomposition) and
    ``chart`` should come from :func:`chart_at` at the same point, which makes L lower
    trapezoidal exactly; with another chart L is first rotated into that form (``U`` and
    ``V`` get the same rotation, so S is unchanged).

    Parameters
    ----------
    reference : Decomposition
    beta : array (K,) or None
        Position biases; None (or an empty array) when the model has none.
    chart : Chart
    """
    gamma, mu, U, V, _ = (np.asarray(x, dtype=float) for x in reference)
    item, judge = np.asarray(chart.item_basis), np.asarray(chart.judge_basis)
    N, r = V.shape
    z_mu = item.T @ mu
    z_gamma = judge.T @ (gamma - 1.0)
    if r == 0:
        l_free = np.zeros(0)
        w = np.zeros((N - 2, 0))
    else:
        L = judge.T @ U
        # rotate (L, V) -> (L O, V O) so that the top r x r block of L is lower triangular
        q, _ = np.linalg.qr(L[:r].T)
        L, V = L @ q, V @ q
        rows, cols = tril_index(L.shape[0], r)
        l_free = L[rows, cols]
        C = np.asarray(_complement_basis(jnp.asarray(mu), jnp.asarray(item)))
        # W = c C^T V with W^T W = (N - 2) I: its orthonormal factor is V / sqrt(N)
        w = np.sqrt((N - 2) / N) * C.T @ V
    b = np.zeros(0) if beta is None else np.asarray(beta, dtype=float)
    return RawCoordinates(*(jnp.asarray(x) for x in (z_mu, z_gamma, l_free, w, b)))
