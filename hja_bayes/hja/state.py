"""Solver state of the anchored proximal alternation, as immutable pytrees.

The parameters are kept as two blocks,

    judge block  B = [gamma | U | Z]       (K x (r + 1 + q))
    item block   T = [mu | V]              (N x (r + 1))

so that ``S = B[:, :r+1] @ T.T`` and ``Z = B[:, r+1:]`` holds the per-judge coefficients of
the linear terms (position bias beta_k, self-preference, per-judge style; see
:mod:`hja_bayes.likelihood.terms`); the outcome model's per-judge extra parameters (``log
nu_k`` for Davidson ties) are ``aux`` (K x n_aux), stepped with the judge block (``-inf``:
held at the boundary 0), and the panel-wide coefficients (shared style) are ``theta``.

The blocks may be wider than the rank: a *width* ``w >= r`` of disagreement columns is
allocated (``w = T.shape[1] - 1``) and the columns beyond the rank are held at zero.  The
rank is then data, not shape, so one compiled solver step serves every candidate of a
rank search.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

__all__ = ["ChunkInfo", "SolverState", "StepInfo", "scores", "width"]


class SolverState(NamedTuple):
    """Where the solver stands: the two blocks, the current proximal weight, the outcome
    model's per-judge parameters (K x 0 for ties counted 1/2; None is read as that) and the
    panel-wide coefficients (length 0 without them; None is read as that)."""

    B: jax.Array
    T: jax.Array
    tau: float
    aux: jax.Array | None = None
    theta: jax.Array | None = None


class StepInfo(NamedTuple):
    """What one outer step reports: the objective after it and the fail-safe's gauges."""

    objective: jax.Array
    mu_norm: jax.Array
    sigma_r: jax.Array


class ChunkInfo(NamedTuple):
    """What a chunk of outer steps run on the device reports (device scalars and arrays,
    read by the host in one transfer after the chunk)."""

    n_steps: jax.Array
    """Steps taken, accepted or undone by the fail-safe."""
    objective: jax.Array
    """The objective at the returned state."""
    converged: jax.Array
    """The last step changed the objective by at most ``tol`` (relative)."""
    failed: jax.Array
    """The fail-safe gave up: tau grew beyond its limit."""
    trace: jax.Array
    """The objective after each step of the chunk, NaN where the step was undone or not
    taken (static length: the chunk's size)."""


def width(T: jax.Array) -> int:
    """Disagreement columns allocated in the blocks (static: read from the shape)."""
    return T.shape[1] - 1


def scores(B: jax.Array, T: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The score matrix ``S`` and the per-judge term coefficients ``Z`` held by the blocks."""
    p = T.shape[1]
    return B[:, :p] @ T.T, B[:, p:]
