"""The per-judge Bradley–Terry likelihood over cells, as pure JAX functions.

For cell c = (k, i, j) with n_c comparisons and w_c wins of the first-shown item i (ties
count 1/2):

    eta_c = beta_k + S[k, i] - S[k, j]
    NLL   = sum_c n_c * log(1 + exp(eta_c)) - w_c * eta_c

``beta`` is the per-judge position bias (zeros when the model ignores presentation order).
Nothing here depends on how S is parameterised: the HJA solver, the Wald inference and the
Bayesian model all call these functions.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .data import Comparisons

__all__ = ["Cells", "cells_of", "cell_logits", "negative_log_likelihood", "cell_log_likelihood",
           "fisher_blocks"]


class Cells(NamedTuple):
    """Cell arrays of a :class:`~hja_bayes.data.Comparisons` as JAX arrays (a pytree)."""

    judge: jax.Array
    first: jax.Array
    second: jax.Array
    n: jax.Array
    wins: jax.Array


def padded_size(m: int) -> int:
    """Bucketed cell count: the next power of two (at least 64), then multiples of 65,536."""
    if m <= 65_536:
        return max(64, 1 << (m - 1).bit_length())
    return -(-m // 65_536) * 65_536


def cells_of(data: Comparisons, pad: bool = False) -> Cells:
    """The cells of ``data`` as JAX arrays.

    With ``pad=True`` the arrays are extended to :func:`padded_size` with empty cells
    (n = 0, which add nothing to the likelihood, its gradient or the information), so that
    jitted solvers compile once for data sets of similar size instead of once per size.
    """
    arrays = [data.judge, data.first, data.second, data.n, data.wins]
    if pad:
        extra = padded_size(data.n_cells) - data.n_cells
        arrays = [np.concatenate([a, np.zeros(extra, dtype=a.dtype)]) for a in arrays]
    return Cells(*(jnp.asarray(a) for a in arrays))


def cell_logits(S: jax.Array, beta: jax.Array, cells: Cells) -> jax.Array:
    """Logit that the first-shown item wins, per cell: ``beta_k + S[k,i] - S[k,j]``."""
    return beta[cells.judge] + S[cells.judge, cells.first] - S[cells.judge, cells.second]


def cell_log_likelihood(S: jax.Array, beta: jax.Array, cells: Cells) -> jax.Array:
    """Binomial log-likelihood of every cell (without the binomial coefficient)."""
    eta = cell_logits(S, beta, cells)
    return cells.wins * eta - cells.n * jax.nn.softplus(eta)


def negative_log_likelihood(S: jax.Array, beta: jax.Array, cells: Cells) -> jax.Array:
    """Total negative log-likelihood ``L(S, beta)`` over cells (ties 1/2)."""
    return -jnp.sum(cell_log_likelihood(S, beta, cells))


def fisher_blocks(S: jax.Array, beta: jax.Array, cells: Cells):
    """Expected Fisher information of (S, beta) in its natural, judge-block form.

    The information is ``J^T W J`` with ``W = diag(n p (1 - p))`` over cells and J the
    derivative of the cell logits.  It does not couple different judges, so it is returned
    as blocks:

    Returns
    -------
    SS : (K, N, N)
        ``SS[k]`` = information of judge k's score row (a weighted graph Laplacian).
    Sb : (K, N)
        Cross information between judge k's scores and its position bias beta_k.
    bb : (K,)
        Information of beta_k.
    """
    K, N = S.shape
    p = jax.nn.sigmoid(cell_logits(S, beta, cells))
    w = cells.n * p * (1 - p)
    k, i, j = cells.judge, cells.first, cells.second
    SS = jnp.zeros((K, N, N))
    SS = SS.at[k, i, i].add(w).at[k, j, j].add(w).at[k, i, j].add(-w).at[k, j, i].add(-w)
    Sb = jnp.zeros((K, N)).at[k, i].add(w).at[k, j].add(-w)
    bb = jnp.zeros(K).at[k].add(w)
    return SS, Sb, bb
