"""Solver state of the anchored proximal alternation, as immutable pytrees.

The parameters are kept as two blocks,

    judge block  B = [gamma | U | beta]    (K x (r + 2))
    item block   T = [mu | V]              (N x (r + 1))

so that ``S = B[:, :r+1] @ T.T`` and ``beta = B[:, r+1]``; the outcome model's per-judge
extra parameters (``log nu_k`` for Davidson ties) are ``aux`` (K x n_aux), stepped with the
judge block (``-inf``: held at the boundary 0).
"""

from __future__ import annotations

from typing import NamedTuple

import jax

__all__ = ["SolverState", "StepInfo", "scores"]


class SolverState(NamedTuple):
    """Where the solver stands: the two blocks, the current proximal weight and the outcome
    model's per-judge parameters (K x 0 for ties counted 1/2; None is read as that)."""

    B: jax.Array
    T: jax.Array
    tau: float
    aux: jax.Array | None = None


class StepInfo(NamedTuple):
    """What one outer step reports: the objective after it and the fail-safe's gauges."""

    objective: jax.Array
    mu_norm: jax.Array
    sigma_r: jax.Array


def scores(B: jax.Array, T: jax.Array, rank: int) -> tuple[jax.Array, jax.Array]:
    """The score matrix ``S`` and position biases ``beta`` held by the blocks."""
    return B[:, : rank + 1] @ T.T, B[:, rank + 1]
