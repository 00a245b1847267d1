"""Cholesky factors and solves of many tiny positive definite matrices, without LAPACK.

The integrated prompt effects (:mod:`~hja_bayes.bayes.integrated`) factor one D x D matrix per
prompt, thousands at a time, with D between 1 and 8 most often.  The functions here write
the factorisation and the triangular solves as vector operations over the batch:

* up to :data:`UNROLL_LIMIT` dimensions unrolled element by element (O(D^3) operations on
  (batch,) vectors), for speed: on the CPU XLA hands a batch of matrices to LAPACK one
  matrix at a time, and the calls cost more than the arithmetic (837 matrices of 4 x 4:
  ``jnp.linalg.solve`` 0.24 ms, the unrolled solve 0.09 ms);
* above it, one column (or row) per step of a loop on the device, so that the program's
  size does not grow with D.  Measured on 800 matrices, value and gradient of a
  factorisation and two solves: 1.9-2.2x LAPACK's time at D = 8, 2.6x at D = 16; on
  MT-Bench's integrated potential (80 blocks of 8) the gradient costs the same either way.

LAPACK is avoided above the limit too, because jaxlib's batched LAPACK kernels on the CPU
(0.10.2: the triangular solve) split their batch over the thread pool that runs them and
wait for the parts: when every thread of the pool is such a waiting kernel (several host
devices drawing side by side), nothing runs the parts and the process waits for ever at 0%
CPU.  MT-Bench's draw-back of the answer effects (blocks of 8 dimensions, four host devices)
stopped this way, with the pool's four threads in the triangular solve.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

__all__ = ["UNROLL_LIMIT", "cho_solve", "cholesky", "log_det_factor", "solve_lower",
           "solve_lower_transposed"]

#: Largest dimension whose factorisation is unrolled element by element (the blocks of
#: :mod:`~hja_bayes.bayes.integrated` have 1, 2, 4, 8, ... dimensions).
UNROLL_LIMIT = 4


def _get(x, i, axis=-1):
    """``x`` at index ``i`` (traced) along ``axis``."""
    return lax.dynamic_index_in_dim(x, i, axis % x.ndim, keepdims=False)


def _put(x, value, i, axis=-1):
    """``x`` with ``value`` at index ``i`` (traced) along ``axis``."""
    return lax.dynamic_update_index_in_dim(x, value, i, axis % x.ndim)


def _columns(H):
    """The lower Cholesky factor as nested lists of (batch,) arrays: ``L[i][j]``, j <= i."""
    D = H.shape[-1]
    L = [[None] * D for _ in range(D)]
    for j in range(D):
        L[j][j] = jnp.sqrt(H[..., j, j] - sum(L[j][k] ** 2 for k in range(j)))
        for i in range(j + 1, D):
            L[i][j] = (H[..., i, j] - sum(L[i][k] * L[j][k] for k in range(j))) / L[j][j]
    return L


def cholesky(H):
    """Lower Cholesky factor of every matrix in ``H`` (..., D, D) (its lower triangle is read)."""
    D = H.shape[-1]
    if D > UNROLL_LIMIT:
        rows = jnp.arange(D)

        def column(j, state):  # A: H less the outer products of the columns before j
            A, L = state
            v = _get(A, j)
            col = v * ((rows >= j) / jnp.sqrt(_get(v, j))[..., None])
            return A - col[..., :, None] * col[..., None, :], _put(L, col, j)

        return lax.fori_loop(0, D, column, (H, jnp.zeros_like(H)))[1]
    L = _columns(H)
    zero = jnp.zeros_like(H[..., 0, 0])
    return jnp.stack([jnp.stack([L[i][j] if j <= i else zero for j in range(D)], -1)
                      for i in range(D)], -2)


def log_det_factor(L):
    """``log det L`` of every triangular factor ``L`` (B, D, D) with a positive diagonal:
    half the log determinant of ``L L^T``."""
    return jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2)), axis=-1)


def cho_solve(L, b):
    """``x`` with ``L L^T x = b`` for every factor ``L`` (..., D, D) and ``b`` (..., D)."""
    return solve_lower_transposed(L, solve_lower(L, b))


def solve_lower(L, b):
    """``y`` with ``L y = b`` for every factor ``L`` (..., D, D) and ``b`` (..., D), the
    batch shapes broadcast."""
    D = L.shape[-1]
    if D > UNROLL_LIMIT:
        def row(i, y):  # y is 0 from row i on
            L_i = _get(L, i, -2)
            return _put(y, (_get(b, i) - jnp.sum(L_i * y, -1)) / _get(L_i, i), i)

        shape = jnp.broadcast_shapes(b.shape, L.shape[:-1])
        return lax.fori_loop(0, D, row, jnp.zeros(shape, jnp.result_type(L, b)))
    y = [None] * D
    for i in range(D):
        y[i] = (b[..., i] - sum(L[..., i, k] * y[k] for k in range(i))) / L[..., i, i]
    return jnp.stack(y, -1)


def solve_lower_transposed(L, z):
    """``x`` with ``L^T x = z`` for every factor ``L`` (B, D, D) and ``z`` (B, D) or (B, M, D)."""
    D = L.shape[-1]
    if z.ndim == L.ndim:  # one right-hand side per node
        L = L[:, None]
    if D > UNROLL_LIMIT:
        def row(k, x):  # x is 0 up to row i
            i = D - 1 - k
            column = _get(L, i)
            return _put(x, (_get(z, i) - jnp.sum(column * x, -1)) / _get(column, i), i)

        return lax.fori_loop(0, D, row, jnp.zeros(z.shape, jnp.result_type(L, z)))
    x = [None] * D
    for i in reversed(range(D)):
        x[i] = (z[..., i] - sum(L[..., k, i] * x[k] for k in range(i + 1, D))) / L[..., i, i]
    return jnp.stack(x, -1)
