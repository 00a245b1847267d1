"""The Laplace approximation of the prompt-effects model with its answer effects sampled,
built from the Hessian's arrow shape.

With prompt effects sampled, the raw coordinates are a few dozen global ones ``g`` (the
consensus, the judges' sensitivities and loadings, log tau, the terms) and one ``z`` per
answer (``alpha = tau z``).  A verdict involves the answers of one prompt only, so the
Hessian of the potential is an arrow::

    H = [[A, B ],      A: g x g,  B: g x answers,
         [B', D]]      D: block-diagonal, one block per prompt (its answers).

Its inverse factors as ``H^-1 = T T'`` with ``x = T u`` computed as::

    x_g = W_S u_g,        W_S W_S' = S^-1,  S = A - B D^-1 B'  (the Schur complement),
    x_z = W_D u_z - D^-1 B' x_g,              W_D W_D' = D^-1   (block by block),

the globals' marginal and the answers' conditional given them.  This replaces the dense
square root of :func:`~hja_bayes.bayes.laplace.laplace_at`, whose Hessian takes one
Hessian-vector product per coordinate and whose change of coordinates costs ``d^2`` per
gradient (``d`` in the thousands once there are a thousand prompts: there it cost more
than the potential itself).  Here the Hessian takes ``g + m`` products (``m`` the most
answers one prompt has: each product with a sum of one answer per prompt reads every
prompt's block column at once, since blocks of different prompts do not touch), and
``T u`` costs ``O(d g + sum of block sizes squared)``.

Where ``H`` is not positive definite (the point is not exactly a mode), each prompt's block
and the Schur complement are taken with their eigenvalues in absolute value, floored at
1e-6 of the largest, as :func:`~hja_bayes.bayes.laplace.covariance_from_hessian` does for
the whole Hessian; ``T`` is then an invertible change of coordinates that no longer factors
``|H|^-1`` exactly, which changes the sampler's efficiency, never its target.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from .laplace import EIGEN_FLOOR

__all__ = ["ArrowLaplace", "ArrowLayout", "ArrowScale", "arrow_apply", "arrow_from_columns",
           "arrow_laplace", "arrow_layout", "hessian_products"]


class ArrowScale(NamedTuple):
    """The square root ``T`` of the module docstring, as arrays (a JAX pytree).

    Attributes
    ----------
    globals : int array (g,)
        Positions of the global coordinates in the flat raw vector.
    effects : int array (prompts, m)
        Positions of each prompt's answer coordinates (padding repeats a real position, to
        which it adds nothing).
    valid : bool array (prompts, m)
        Which entries of ``effects`` are answers, not padding.
    global_scale : array (g, g)
        ``W_S``.
    effect_scale : array (prompts, m, m)
        ``W_D``, one block per prompt (zero where padded).
    coupling : array (prompts, m, g)
        ``D^-1 B'``, laid out as ``effects``.
    """

    globals: jnp.ndarray
    effects: jnp.ndarray
    valid: jnp.ndarray
    global_scale: jnp.ndarray
    effect_scale: jnp.ndarray
    coupling: jnp.ndarray

    def __matmul__(self, u):
        """``T u`` (:func:`arrow_apply`): the scale serves where a dense square root does
        (:func:`~hja_bayes.bayes.laplace.preconditioned`)."""
        return arrow_apply(self, u)


class ArrowLaplace(NamedTuple):
    """Gaussian approximation of the raw posterior at a point, in arrow form.

    Attributes
    ----------
    sites : tuple of str
        Raw site names, sorted (the flat vector's order).
    mean : ndarray (d,)
        The point (flattened raw coordinates).
    scale : ArrowScale
        ``T`` with ``T T' = |H|^-1`` (module docstring); :func:`arrow_apply` applies it.
    effect_variances : ndarray (answers,)
        The approximation's marginal variance of every answer coordinate ``z``.
    """

    sites: tuple
    mean: np.ndarray
    scale: ArrowScale
    effect_variances: np.ndarray


def arrow_apply(scale: ArrowScale, u):
    """``T u`` for the :class:`ArrowScale` ``scale`` (``u`` and the result flat, shape (d,))."""
    x_g = scale.global_scale @ u[scale.globals]
    u_z = jnp.where(scale.valid, u[scale.effects], 0.0)
    x_z = (jnp.einsum("pab,pb->pa", scale.effect_scale, u_z)
           - jnp.einsum("pag,g->pa", scale.coupling, x_g))
    x = jnp.zeros_like(u).at[scale.globals].set(x_g)
    return x.at[scale.effects].add(jnp.where(scale.valid, x_z, 0.0))


class ArrowLayout(NamedTuple):
    """Where the global and answer coordinates sit in the flat raw vector.

    Attributes
    ----------
    globals, effects : int arrays (g,), (answers,)
        Positions of the global and of the answer coordinates.
    index : int array (prompts, m)
        Answer number of each (prompt, slot) (0 where padded).
    valid : bool array (prompts, m)
    directions : array (g + m, d)
        The vectors whose Hessian products give the arrow (module docstring).
    """

    globals: np.ndarray
    effects: np.ndarray
    index: np.ndarray
    valid: np.ndarray
    directions: np.ndarray


def arrow_layout(params: dict, prompt_of_effect, site: str = "z_alpha") -> ArrowLayout:
    """The :class:`ArrowLayout` of the raw sites ``params`` (flattened in sorted order),
    whose site ``site`` holds one coordinate per answer, answer ``a`` on prompt
    ``prompt_of_effect[a]``."""
    sites = tuple(sorted(params))
    d = sum(int(np.size(params[k])) for k in sites)
    start = sum(int(np.size(params[k])) for k in sites[: sites.index(site)])
    n_z = int(np.size(params[site]))
    z_pos = np.arange(start, start + n_z)
    g_pos = np.setdiff1d(np.arange(d), z_pos)
    prompt = np.unique(np.asarray(prompt_of_effect), return_inverse=True)[1]
    if len(prompt) != n_z:
        raise ValueError(f"{len(prompt)} prompts given for {n_z} answer coordinates")
    sizes = np.bincount(prompt)
    m = int(sizes.max())
    order = np.argsort(prompt, kind="stable")
    slot = np.arange(n_z) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    index = np.zeros((len(sizes), m), dtype=int)
    valid = np.zeros((len(sizes), m), dtype=bool)
    index[prompt[order], slot] = order
    valid[prompt[order], slot] = True
    # g unit vectors on the globals, then m vectors each with one answer of every prompt
    directions = np.zeros((len(g_pos) + m, d))
    directions[np.arange(len(g_pos)), g_pos] = 1.0
    for a in range(m):
        directions[len(g_pos) + a, z_pos[index[valid[:, a], a]]] = 1.0
    return ArrowLayout(g_pos, z_pos, index, valid, directions)


def arrow_laplace(potential, params: dict, prompt_of_effect, site: str = "z_alpha",
                  batch_size: int = 32) -> ArrowLaplace:
    """Laplace approximation of ``exp(-potential)`` at ``params``, in arrow form.

    Parameters
    ----------
    potential : callable dict -> scalar
        Potential energy (negative log density) of the raw sites.
    params : dict name -> array
        The point; ``params[site]`` holds one coordinate per answer.
    prompt_of_effect : int array (answers,)
        The prompt of every answer coordinate; coordinates of different prompts must not
        meet in any term of the potential.
    site : str
        The answer coordinates' site.
    batch_size : int
        Hessian-vector products computed at once.

    Returns
    -------
    ArrowLaplace
    """
    sites = tuple(sorted(params))
    flat, unravel = ravel_pytree({k: jnp.asarray(params[k]) for k in sites})
    layout = arrow_layout(params, prompt_of_effect, site)
    grad = jax.grad(lambda x: potential(unravel(x)))
    directions = jnp.asarray(layout.directions)
    columns = jax.jit(lambda x: hessian_products(grad, x, directions, batch_size))(flat)
    return arrow_from_columns(layout, sites, flat, columns)


def hessian_products(grad, x, directions, batch_size: int = 32):
    """``H v`` for every row ``v`` of ``directions``, ``H`` the Jacobian of ``grad`` at
    ``x`` (forward over reverse differentiation; traceable, for the caller to compile)."""
    return jax.lax.map(lambda v: jax.jvp(grad, (x,), (v,))[1], directions,
                       batch_size=batch_size)


def arrow_from_columns(layout: ArrowLayout, sites: tuple, flat, columns) -> ArrowLaplace:
    """The :class:`ArrowLaplace` at ``flat`` from the Hessian's products with
    ``layout.directions`` (``columns``, shape (g + m, d))."""
    columns = np.asarray(columns, dtype=float)
    g_pos, z_pos, index, valid = layout.globals, layout.effects, layout.index, layout.valid
    g = len(g_pos)
    A = columns[:g][:, g_pos]
    B = columns[:g][:, z_pos]                         # (g, answers)
    # D[p, b, a]: row (prompt p, slot b) of the product with the slot-a vector
    D = columns[g:][:, z_pos][:, index].transpose(1, 2, 0)
    D = np.where(valid[:, :, None] & valid[:, None, :], D, 0.0)
    D = (D + D.transpose(0, 2, 1)) / 2

    lam, Q = _block_eigh(D, valid.sum(1))
    floor = EIGEN_FLOOR * max(float(np.abs(lam).max(initial=0.0)),
                              float(np.abs(np.linalg.eigvalsh((A + A.T) / 2)).max(initial=0.0)),
                              1.0)
    inv_sqrt = np.where(valid, 1 / np.sqrt(np.maximum(np.abs(lam), floor)), 0.0)
    effect_scale = Q * inv_sqrt[:, None, :]          # W_D = Q |Lambda|^-1/2
    B_blocks = np.where(valid[:, :, None], B.T[index], 0.0)      # (prompts, m, g)
    coupling = np.einsum("pab,pcb,pcg->pag", effect_scale, effect_scale, B_blocks)
    S = A - np.einsum("pag,pah->gh", B_blocks, coupling)
    lam_S, Q_S = np.linalg.eigh((S + S.T) / 2)
    global_scale = Q_S / np.sqrt(np.maximum(np.abs(lam_S), floor))

    # Var x_z = diag(W_D W_D') + diag(C W_S W_S' C'), C the coupling
    through_globals = np.einsum("pag,gh->pah", coupling, global_scale)
    variances = (effect_scale**2).sum(-1) + (through_globals**2).sum(-1)
    effect_variances = np.empty(len(z_pos))
    effect_variances[index[valid]] = variances[valid]

    scale = ArrowScale(jnp.asarray(g_pos), jnp.asarray(z_pos[index]), jnp.asarray(valid),
                       jnp.asarray(global_scale), jnp.asarray(effect_scale),
                       jnp.asarray(coupling))
    return ArrowLaplace(sites, np.asarray(flat), scale, effect_variances)


def _block_eigh(D, sizes):
    """Eigen-decompositions of the leading ``size x size`` part of every block of ``D``
    (prompts, m, m), grouped by size; eigenvalues (prompts, m) and vectors
    (prompts, m, m), zero where padded."""
    lam = np.zeros(D.shape[:2])
    Q = np.zeros_like(D)
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        w, v = np.linalg.eigh(D[rows][:, :size, :size])
        lam[rows, :size] = w
        Q[rows, :size, :size] = v
    return lam, Q
