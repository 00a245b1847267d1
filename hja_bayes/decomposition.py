"""The canonical HJA coordinates of a judge-by-item score matrix.

``S = gamma mu^T + U V^T`` with the identifiability constraints of the HJA paper
(centring, ``sum(gamma) = K``, ``mu^T V = 0``, ``V^T V / N = I``, ``U^T U / K = D``
diagonal and decreasing, the largest-|entry| item of every V column positive).  The rank-r
model is exactly the set of row-centred K x N matrices of rank <= r + 1, so the map
below is a canonical coordinate system on that set: it is exact (and idempotent) on
such matrices and, on others, keeps the best rank-r residual.

Everything here is a pure JAX function: it runs under ``jit``, ``vmap`` and ``grad``,
except :func:`align_decomposition`, which relabels batches of decompositions (posterior
draws, bootstrap replicates, refits) against a reference fit in NumPy.

Signs.  A single fit anchors each column's sign on its item of largest absolute loading
(ties: the lowest index).  The older rule "first non-zero entry positive" flipped a column
whenever item 0's loading was near zero.  Against a reference, signs (and the order of
columns whose D values are close) are never re-derived from one draw alone: they are chosen
by :func:`align_decomposition` to best match the reference V.
"""

from __future__ import annotations

from itertools import permutations
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .checks import check_integer
from .errors import DataWarning, IdentifiabilityError, ParameterError, warn

__all__ = [
    "Alignment",
    "Decomposition",
    "align_decomposition",
    "canonicalize",
    "compose",
    "canonical_decomposition",
    "check_rank",
    "check_score_matrix",
    "constraint_violations",
    "free_parameters",
    "bic",
    "max_rank",
]


class Decomposition(NamedTuple):
    """Canonical HJA coordinates: ``S = gamma mu^T + U V^T``.

    Attributes
    ----------
    gamma : (K,) judge sensitivities, summing to K.
    mu : (N,) consensus scores, centred.
    U : (K, r) judge loadings of the disagreement, centred columns.
    V : (N, r) item loadings, ``V^T V / N = I``, orthogonal to 1 and mu.
    D : (r,) decreasing, ``U^T U / K = diag(D)``.
    """

    gamma: jax.Array
    mu: jax.Array
    U: jax.Array
    V: jax.Array
    D: jax.Array


def max_rank(n_judges: int, n_items: int) -> int:
    """Largest identifiable disagreement rank: ``min(K, N - 1) - 1``."""
    return min(n_judges, n_items - 1) - 1


def check_rank(rank: int, n_judges: int, n_items: int) -> int:
    """Validate a disagreement rank and return it as an int.

    Raises
    ------
    ParameterError
        If ``rank`` is not an integer, or below 0.
    IdentifiabilityError
        If ``rank + 1 > min(K, N - 1)``; the message states the maximum.
    """
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
        raise ParameterError(f"rank must be an integer, got {rank!r}")
    if rank < 0:
        raise ParameterError(f"rank must be 0 or more (the number of disagreement "
                             f"dimensions), got {rank}")
    top = max_rank(n_judges, n_items)
    if rank > top:
        raise IdentifiabilityError(
            f"rank {rank} is not identifiable with K={n_judges} judges and N={n_items} items: "
            f"rank + 1 must not exceed min(K, N - 1), so the maximum rank is {top}"
        )
    return int(rank)


def free_parameters(n_judges: int, n_items: int, rank: int, position_bias: bool = False) -> int:
    """Number of free parameters of the rank-``rank`` HJA model.

    ``(r + 1)(K + N - r - 2)``, plus K when the per-judge position biases are estimated.

    Examples
    --------
    >>> free_parameters(20, 100, 3), free_parameters(20, 100, 3, position_bias=True)
    (460, 480)
    """
    n_judges, n_items = check_integer(n_judges, "n_judges", 1), check_integer(n_items, "n_items", 2)
    rank = check_rank(rank, n_judges, n_items)
    if position_bias not in (0, 1):  # True, False, 1 or 0
        raise ParameterError(f"position_bias must be True or False, got {position_bias!r}")
    return (rank + 1) * (n_judges + n_items - rank - 2) + (n_judges if position_bias else 0)


def bic(nll: float, rank: int, n_judges: int, n_items: int, n_comparisons: float) -> float:
    """``BIC(r) = 2 NLL + r (K + N - r - 3) log n`` (SPEC §3).

    The penalty counts the parameters the rank-r model adds to the rank-0 one,
    ``free_parameters(K, N, r) - free_parameters(K, N, 0)``; the rest is common to every rank.
    """
    extra = free_parameters(n_judges, n_items, rank) - free_parameters(n_judges, n_items, 0)
    return 2.0 * nll + extra * float(np.log(n_comparisons))


def compose(gamma, mu, U, V) -> jax.Array:
    """Score matrix ``S = gamma mu^T + U V^T`` (K x N)."""
    return jnp.outer(gamma, mu) + U @ V.T


def anchor_signs(V, xp=jnp):
    """Sign of every column's largest-|entry| item (ties: lowest index; 0 counts as +1);
    ``xp`` is the array module (``jax.numpy``, or ``numpy`` for concrete arrays)."""
    anchor = xp.argmax(xp.abs(V), axis=0)
    s = xp.sign(V[anchor, xp.arange(V.shape[1])])
    return xp.where(s == 0, 1.0, s)


def canonical_decomposition(S, rank: int, xp=jnp) -> Decomposition:
    """:func:`canonicalize` without input checks.  With ``xp = jax.numpy`` (the default) pure
    JAX, for ``jit``, ``vmap`` and ``grad``; with ``xp = numpy`` the same steps on a concrete
    matrix with no compiled program (JAX's CPU SVD loads its LAPACK kernels through SciPy, a
    tenth of a second in a fresh process)."""
    K, N = S.shape
    S = S - S.mean(axis=1, keepdims=True)
    mu = S.mean(axis=0)
    gamma = S @ mu / (mu @ mu)
    residual = S - xp.outer(gamma, mu)
    if rank == 0:
        return Decomposition(gamma, mu, xp.zeros((K, 0), S.dtype), xp.zeros((N, 0), S.dtype),
                             xp.zeros((0,), S.dtype))
    P, sigma, Qt = xp.linalg.svd(residual, full_matrices=False)
    P, sigma, Q = P[:, :rank], sigma[:rank], Qt[:rank].T
    sign = anchor_signs(Q, xp)
    V = xp.sqrt(N) * Q * sign
    U = P * sign * sigma / xp.sqrt(N)
    return Decomposition(gamma, mu, U, V, sigma**2 / (N * K))


def canonicalize(S, rank: int) -> Decomposition:
    """Map a K x N score matrix to its canonical rank-``rank`` HJA coordinates.

    Steps: centre rows; ``mu`` = column mean; ``gamma = S mu / |mu|^2``; thin SVD of the
    residual ``S - gamma mu^T`` truncated to ``rank``; ``V = sqrt(N) Q``,
    ``U = P Sigma / sqrt(N)``, ``D = Sigma^2 / (N K)``; signs fixed so that in every column
    of V the entry of largest absolute value is positive (U's column follows).

    Parameters
    ----------
    S : array (K, N)
        Judge-by-item scores (rows need not be centred).
    rank : int
        Disagreement rank r (0 gives ``S = gamma mu^T``).

    Returns
    -------
    Decomposition
        NumPy arrays for a concrete ``S`` (computed in NumPy); JAX arrays under a trace
        (``jit``, ``grad``, ``vmap``), where no check is made.

    Raises
    ------
    IdentifiabilityError
        When called on concrete values with ``|mu|`` numerically zero (no consensus), or an
        unidentifiable rank.  Tied singular values (U, V columns not identified; S still
        is) give a :class:`~hja_bayes.errors.DataWarning`.  Under ``jit`` no check is made.

    Examples
    --------
    >>> import numpy as np
    >>> S = np.outer([1.0, 2.0, 0.5], [1.0, 0.0, -1.0])
    >>> d = canonicalize(S, 0)
    >>> [round(float(g), 6) for g in d.gamma]
    [0.857143, 1.714286, 0.428571]
    """
    if isinstance(S, jax.core.Tracer):
        return canonical_decomposition(S, check_rank(rank, *jnp.shape(S)))
    S = check_score_matrix(S, rank, ties=False)
    d = canonical_decomposition(S, int(rank), np)
    _warn_if_tied(np.sqrt(d.D * S.size))  # the singular values, D = sigma^2 / (N K)
    return d


def check_score_matrix(S, rank: int, *, ties: bool = True) -> np.ndarray:
    """The checks of :func:`canonicalize` on a concrete score matrix; returns it as floats.

    Raises
    ------
    ParameterError
        ``S`` is not a matrix.
    IdentifiabilityError
        Non-finite entries, no consensus (``|mu|`` numerically zero) or an unidentifiable
        rank.  With ``ties``, tied singular values give a
        :class:`~hja_bayes.errors.DataWarning` (:func:`canonicalize` checks them on the
        decomposition's own instead of computing them twice).
    """
    if np.ndim(S) != 2:
        raise ParameterError(f"S must be a K x N matrix, got shape {np.shape(S)}")
    rank = check_rank(rank, *np.shape(S))
    S_np = np.asarray(S, dtype=float)
    if not np.all(np.isfinite(S_np)):
        raise IdentifiabilityError("the score matrix has non-finite entries")
    S_c = S_np - S_np.mean(axis=1, keepdims=True)
    mu = S_c.mean(axis=0)
    if np.linalg.norm(mu) <= 1e-10 * max(1.0, np.linalg.norm(S_c)):
        raise IdentifiabilityError(
            "no consensus: the mean score row is (numerically) zero, so gamma and mu are "
            "not identified (the data do not tell the items apart: e.g. every verdict a tie, "
            "or each item's wins balanced by its losses)"
        )
    if ties and rank > 0:
        resid = S_c - np.outer(S_c @ mu / (mu @ mu), mu)
        _warn_if_tied(np.linalg.svd(resid, compute_uv=False)[:rank])
    return S_np


def _warn_if_tied(sv: np.ndarray) -> None:
    """A DataWarning when two of the residual's leading singular values ``sv`` (decreasing,
    the first r) are tied."""
    if sv.size and sv[0] > 1e-12 and np.any(np.abs(np.diff(sv)) <= 1e-8 * sv[0]):
        warn("tied singular values in the residual: the columns of U and V are not "
             "identified (S is)", DataWarning)


def constraint_violations(d: Decomposition) -> dict[str, float]:
    """Largest absolute violation of each identifiability constraint (for checks and tests)."""
    gamma, mu, U, V, D = (np.asarray(x, dtype=float) for x in d)
    K, N, r = len(gamma), len(mu), V.shape[1]
    out = {
        "sum_mu": abs(mu.sum()),
        "sum_gamma_minus_K": abs(gamma.sum() - K),
        "V_centred": float(np.abs(V.sum(axis=0)).max(initial=0.0)),
        "U_centred": float(np.abs(U.sum(axis=0)).max(initial=0.0)),
        "mu_orth_V": float(np.abs(mu @ V).max(initial=0.0)),
        "V_orthonormal": float(np.abs(V.T @ V / N - np.eye(r)).max(initial=0.0)),
        "U_diagonal": float(np.abs(U.T @ U / K - np.diag(D)).max(initial=0.0)),
        "D_decreasing": float(np.maximum(np.diff(D), 0.0).max(initial=0.0)),
    }
    if r:
        anchor = np.argmax(np.abs(V), axis=0)
        out["V_sign"] = float(np.maximum(-V[anchor, np.arange(r)], 0.0).max())
    return out


class Alignment(NamedTuple):
    """Result of :func:`align_decomposition`.

    Attributes
    ----------
    decomposition : Decomposition
        The aligned decompositions (same shapes as the input).
    flipped : ndarray of bool, shape of the leading (batch) dimensions
        Whether any column's sign was changed from the single-fit rule.
    permuted : ndarray of bool
        Whether the columns were reordered.
    match : ndarray, shape batch + (r,)
        ``|<V_b, V_ref,b>| / N`` after alignment: the cosine between each aligned column and
        its reference column (1: same direction; near 0: the column is not determined
        relative to the reference).
    """

    decomposition: Decomposition
    flipped: np.ndarray
    permuted: np.ndarray
    match: np.ndarray


def _close_groups(D: np.ndarray, close: float) -> np.ndarray:
    """Group label of every column: consecutive columns with ``D[a+1] >= close * D[a]``
    share a group.  D has shape (batch, r), decreasing along the last axis."""
    breaks = D[:, 1:] < close * D[:, :-1]
    return np.concatenate([np.zeros((D.shape[0], 1), int), np.cumsum(breaks, axis=1)], axis=1)


def align_decomposition(d: Decomposition, reference_V, *, close: float = 0.5) -> Alignment:
    """Relabel decompositions (draws, replicates, refits) to match a reference fit's V.

    For every decomposition in the batch, its columns are given the signs, and within
    groups of close D values the order, that maximise ``sum_b |<V_a(b), V_ref,b>|`` over
    the allowed assignments (columns a and b are exchangeable when they lie in one run of
    consecutive components with ``D[a+1] >= close * D[a]``).  Each column's sign is then the
    sign of its inner product with the reference column it is assigned to.  U, V and D are
    permuted alike and U's columns follow V's signs, so ``S = gamma mu^T + U V^T`` is
    unchanged; every constraint still holds, except that D may be out of order within a
    group of close values.

    Parameters
    ----------
    d : Decomposition
        Canonical decompositions with any leading batch dimensions: ``V`` of shape
        (..., N, r), ``U`` (..., K, r), ``D`` (..., r).
    reference_V : array (N, r)
        The reference fit's item loadings (e.g. the MAP's).
    close : float in [0, 1]
        Components a < b are exchangeable when every consecutive ratio of D between them is
        at least ``close`` (0 makes all columns exchangeable, 1 only exactly tied ones).

    Returns
    -------
    Alignment

    Examples
    --------
    >>> import numpy as np
    >>> d = canonicalize(np.array([[2.0, 1.0, -1.0, -2.0], [1.0, 2.0, -2.0, -1.0],
    ...                            [3.0, 0.0, -1.0, -2.0]]), 1)
    >>> flipped = d._replace(U=-d.U, V=-d.V)
    >>> out = align_decomposition(flipped, d.V)
    >>> bool(np.allclose(out.decomposition.V, d.V)), bool(out.flipped)
    (True, True)
    """
    if not 0.0 <= close <= 1.0:
        raise ParameterError(f"close must lie in [0, 1], got {close!r}")
    gamma, mu, U, V, D = (np.asarray(x, dtype=float) for x in d)
    ref = np.asarray(reference_V, dtype=float)
    N, r = V.shape[-2:]
    if ref.shape != (N, r):
        raise ParameterError(f"reference_V must have shape {(N, r)}, got {ref.shape}")
    batch = V.shape[:-2]
    if r == 0:
        none = np.zeros(batch, dtype=bool)
        return Alignment(Decomposition(gamma, mu, U, V, D), none, none.copy(),
                         np.zeros(batch + (0,)))
    Vb = V.reshape((-1, N, r))
    Ub = U.reshape((-1, U.shape[-2], r))
    Db = D.reshape((-1, r))
    M = np.einsum("bna,nc->bac", Vb, ref)  # M[b, a, c] = <V_a, V_ref,c>
    groups = _close_groups(Db, close)
    if r <= 6:
        perms = np.array(list(permutations(range(r))))  # identity first
        # perm p puts old column p[c] at position c
        score = np.abs(M[:, perms, np.arange(r)]).sum(axis=-1)  # (batch, P)
        allowed = np.all(groups[:, perms] == groups[:, None, :], axis=-1)
        best = perms[np.argmax(np.where(allowed, score, -np.inf), axis=1)]  # (batch, r)
    else:
        from scipy.optimize import linear_sum_assignment

        best = np.empty(Db.shape, dtype=int)
        for b in range(Db.shape[0]):
            cost = np.where(groups[b][:, None] == groups[b][None, :], -np.abs(M[b]), np.inf)
            rows, cols = linear_sum_assignment(cost)
            best[b, cols] = rows
    rows = np.arange(Db.shape[0])[:, None]
    inner = M[rows, best, np.arange(r)]
    sign = np.sign(inner)
    sign = np.where(sign == 0, 1.0, sign)
    permuted = np.any(best != np.arange(r), axis=1)
    flipped = np.any(sign < 0, axis=1)
    V_new = np.take_along_axis(Vb, best[:, None, :], axis=2) * sign[:, None, :]
    U_new = np.take_along_axis(Ub, best[:, None, :], axis=2) * sign[:, None, :]
    D_new = np.take_along_axis(Db, best, axis=1)
    out = Decomposition(gamma, mu, U_new.reshape(U.shape), V_new.reshape(V.shape),
                        D_new.reshape(D.shape))
    match = np.abs(inner) / np.sqrt(np.sum(Vb**2, axis=1) * np.sum(ref**2, axis=0))
    return Alignment(out, flipped.reshape(batch), permuted.reshape(batch),
                     match.reshape(batch + (r,)))
