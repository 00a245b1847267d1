"""Solver state of the anchored proximal alternation, as immutable pytrees.

The parameters are kept as two blocks,

    judge block  B = [gamma | U | beta]    (K x (r + 2))
    item block   T = [mu | V]              (N x (r + 1))

so that ``S = B[:, :r+1] @ T.T`` and ``beta = B[:, r+1]``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

__all__ = ["SolverState", "StepInfo", "scores"]


class SolverState(NamedTuple):
    """Where the solver stands: the two blocks and the current proximal weight."""

    B: jax.Array
    T: jax.Array
    tau: float


class StepInfo(NamedTuple):
    """What one outer step reports: the objective after it and the fail-safe's gauges."""

    objective: jax.Array
    mu_norm: jax.Array
    sigma_r: jax.Array


def scores(B: jax.Array, T: jax.Array, rank: int) -> tuple[jax.Array, jax.Array]:
    """The score matrix ``S`` and position biases ``beta`` held by the blocks."""
    return B[:, : rank + 1] @ T.T, B[:, rank + 1]
