"""Posterior draws in canonical coordinates, aligned to the MAP.

The sampled coordinates are not identified: the columns of U and V may come out in either
sign, and columns with close D values in either order.  Every draw of S is mapped by
:func:`~hja_bayes.decomposition.canonical_decomposition` to (gamma, mu, U, V, D), and then
aligned to the MAP's V (:func:`~hja_bayes.decomposition.align_decomposition`): column signs
and the order of columns with close D values follow the MAP, never one draw alone (SPEC §2,
§6).  How often that changed a draw is recorded, so that a poorly determined column can be
reported.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..decomposition import Decomposition, align_decomposition, canonical_decomposition

__all__ = ["AlignedDraws", "WEAK_MATCH", "align_to_map", "canonical_draws"]

#: An aligned V column whose cosine with the MAP's column is below this is "weakly matched".
WEAK_MATCH = 0.5


@partial(jax.jit, static_argnums=1)
def canonical_draws(S_raw: jax.Array, rank: int) -> Decomposition:
    """Canonical decomposition of every draw of S, shape (chain, draw, K, N)."""
    flat = S_raw.reshape((-1,) + S_raw.shape[2:])
    d = jax.vmap(lambda s: canonical_decomposition(s, rank))(flat)
    return Decomposition(*(x.reshape(S_raw.shape[:2] + x.shape[1:]) for x in d))


class AlignedDraws(NamedTuple):
    """Canonical draws aligned to the MAP.

    Attributes
    ----------
    decomposition : Decomposition
        gamma (chain, draw, K), mu (chain, draw, N), U, V, D.
    S : ndarray (chain, draw, K, N)
        ``gamma mu^T + U V^T`` recomposed from the aligned factors.
    shares : dict
        ``sign_flip_share``, ``permutation_share``, ``aligned_share`` (either) and
        ``weak_match_share`` (a V column at cosine below :data:`WEAK_MATCH` with the
        MAP's): shares of the draws.
    """

    decomposition: Decomposition
    S: np.ndarray
    shares: dict


def align_to_map(S_raw, rank: int, V_map) -> AlignedDraws:
    """Canonicalise every draw of ``S_raw`` (chain, draw, K, N) and align it to ``V_map``.

    Parameters
    ----------
    S_raw : array (chain, draw, K, N)
        Score matrices as sampled.
    rank : int
    V_map : array (N, rank)
        The MAP's canonical V.

    Returns
    -------
    AlignedDraws
    """
    # parallel chains leave the draws sharded over the host devices: gather them first, as a
    # decomposition of sharded draws (SVDs across devices) can hang XLA's CPU runtime
    S_draws = jnp.asarray(np.asarray(S_raw))
    aligned = align_decomposition(canonical_draws(S_draws, rank), np.asarray(V_map))
    d = aligned.decomposition
    S = np.einsum("cdk,cdn->cdkn", d.gamma, d.mu) + np.einsum("cdka,cdna->cdkn", d.U, d.V)
    shares = {
        "sign_flip_share": float(np.mean(aligned.flipped)),
        "permutation_share": float(np.mean(aligned.permuted)),
        "aligned_share": float(np.mean(aligned.flipped | aligned.permuted)),
        "weak_match_share": float(np.mean(np.any(aligned.match < WEAK_MATCH, axis=-1)))
        if rank else 0.0,
    }
    return AlignedDraws(d, S, shares)
