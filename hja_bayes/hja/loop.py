"""Outer steps on the device: chunks of :func:`~hja_bayes.hja.kernels.step` in one
``while_loop`` with the fail-safe and the convergence test inside, so that the driver
(:mod:`~hja_bayes.hja.solve`) reads the device once per chunk, and the objective and the
NLL compiled by the size of the panel."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..jitting import LOOP_COMPILE, light_jit
from ..likelihood import HALF, Cells, OutcomeModel, negative_log_likelihood
from .kernels import _outer_step, objective, small_panel, start_values
from .state import ChunkInfo, SolverState, scores

__all__ = ["MU_FLOOR", "SIGMA_FLOOR", "TAU_FAIL", "TAU_GROW", "TAU_MIN", "TAU_SHRINK", "nll",
           "nll_jit", "objective_jit", "run_steps"]

_STATIC = ("reanchored", "outcome")


#: The fail-safe: a step after which |mu| or the r-th singular value is below these floors
#: (or whose objective is not finite) is undone and tau multiplied by ``TAU_GROW``; beyond
#: ``TAU_FAIL`` the run fails.  After an accepted step tau shrinks by ``TAU_SHRINK`` down
#: to ``TAU_MIN``.
MU_FLOOR = 1e-8
SIGMA_FLOOR = 1e-10
TAU_SHRINK = 0.5
TAU_MIN = 0.03
TAU_GROW = 10.0
TAU_FAIL = 1e12


class _Loop(NamedTuple):
    """What the device loop of :func:`_outer_steps` carries from one step to the next."""

    i: jax.Array
    B: jax.Array
    T: jax.Array
    aux: jax.Array
    theta: jax.Array
    tau: jax.Array
    f: jax.Array
    converged: jax.Array
    failed: jax.Array
    trace: jax.Array


def _outer_steps(B, T, aux, theta, tau, f, cells, ridge, rank, tol, limit, reanchored, outcome,
                 chunk):
    """Up to ``limit <= chunk`` outer steps with the fail-safe and the convergence test, in
    one ``while_loop`` (one step and no loop when ``chunk`` is 1); ``f``: the objective at
    the start."""

    def going(c: _Loop):
        return (c.i < limit) & ~c.converged & ~c.failed

    def body(c: _Loop) -> _Loop:
        B1, T1, aux1, theta1, f1, mu_norm, sigma_r = _outer_step(
            c.B, c.T, c.aux, c.theta, cells, c.tau, ridge, rank, reanchored, outcome)
        # a NaN gauge alone does not undo a step (``NaN < floor`` is false), a NaN objective does
        keep = ~((mu_norm < MU_FLOOR) | (sigma_r < SIGMA_FLOOR) | ~jnp.isfinite(f1))
        return _Loop(
            i=c.i + 1,
            B=jnp.where(keep, B1, c.B), T=jnp.where(keep, T1, c.T),
            aux=jnp.where(keep, aux1, c.aux), theta=jnp.where(keep, theta1, c.theta),
            tau=jnp.where(keep, jnp.maximum(c.tau * TAU_SHRINK, TAU_MIN), c.tau * TAU_GROW),
            f=jnp.where(keep, f1, c.f),
            converged=keep & (jnp.abs(c.f - f1) <= tol * jnp.maximum(1.0, jnp.abs(f1))),
            failed=~keep & (c.tau * TAU_GROW > TAU_FAIL),
            trace=c.trace.at[c.i].set(jnp.where(keep, f1, jnp.nan)))

    start = _Loop(jnp.asarray(0), B, T, aux, theta, jnp.asarray(tau, dtype=float),
                  jnp.asarray(f, dtype=float), jnp.asarray(False), jnp.asarray(False),
                  jnp.full(chunk, jnp.nan))
    end = body(start) if chunk == 1 else jax.lax.while_loop(going, body, start)
    return end.B, end.T, end.aux, end.theta, end.tau, ChunkInfo(end.i, end.f, end.converged,
                                                                end.failed, end.trace)


_outer_steps_jit = light_jit(_outer_steps, LOOP_COMPILE, static_argnames=_STATIC + ("chunk",))
#: The same compiled for a single fit: half the compilation, steps three times slower.
_outer_steps_quick_jit = light_jit(_outer_steps, static_argnames=_STATIC + ("chunk",))


def run_steps(state: SolverState, cells: Cells, objective_start, *, rank: int,
              ridge: float, tol: float, limit: int, chunk: int, reanchored: bool = True,
              outcome: OutcomeModel = HALF, quick: bool = False) -> tuple[SolverState, ChunkInfo]:
    """Up to ``limit`` outer steps (:func:`step`) on the device, without returning to the host.

    After each step: the fail-safe (a step that collapsed ``|mu|`` or the r-th singular
    value, or whose objective is not finite, is undone and tau multiplied by
    :data:`TAU_GROW`; else tau shrinks by :data:`TAU_SHRINK` down to :data:`TAU_MIN`) and
    the convergence test (the relative change of the objective at most ``tol``).  The loop
    ends at convergence, when the fail-safe gives up (tau beyond :data:`TAU_FAIL`) or after
    ``limit`` steps.  ``objective_start`` is the objective at ``state``.
    ``chunk`` (static) is the length of the returned trace, so ``1 <= limit <= chunk``; with
    ``chunk`` 1 the program is one step without a loop.  Rank, ridge, tol and limit are data,
    so one compiled program serves every call of a size class.  The returned state's tau is
    a device scalar.  A small panel's program compiles with
    :data:`~hja_bayes.jitting.LOOP_COMPILE`, or with ``quick`` with
    :data:`~hja_bayes.jitting.LIGHT_COMPILE` (on Chatbot Arena 0.5 s of CPU instead of
    1.2 s, and 1.1 ms a step instead of 0.36 ms: for a process that fits once).
    """
    aux, theta = start_values(state, cells)
    if small_panel(cells, state.T, quick):
        run = _outer_steps_quick_jit if quick else _outer_steps_jit
    else:
        run = _outer_steps_jit.plain
    B, T, aux, theta, tau, info = run(state.B, state.T, aux, theta, state.tau, objective_start,
                                      cells, ridge, rank, tol, limit, reanchored, outcome, chunk)
    return SolverState(B, T, tau, aux, theta), info


def nll(B, T, cells: Cells, outcome: OutcomeModel = HALF, aux=None, theta=None):
    """The negative log-likelihood (no penalty) at the blocks."""
    S, Z = scores(B, T)
    return negative_log_likelihood(S, Z, cells, outcome=outcome, aux=aux, theta=theta)


_nll_jit = light_jit(nll, static_argnames=("outcome",))


def nll_jit(B, T, cells: Cells, outcome: OutcomeModel = HALF, aux=None, theta=None):
    """:func:`nll`, compiled like :func:`objective_jit`."""
    run = _nll_jit if small_panel(cells, T) else _nll_jit.plain
    return run(B, T, cells, outcome, aux, theta)


_objective_jit = light_jit(objective, static_argnames=("outcome",))


def objective_jit(B, T, cells: Cells, ridge, outcome: OutcomeModel = HALF, aux=None, theta=None):
    """:func:`objective`, compiled: on a small panel (:func:`small_panel`) with
    :func:`~hja_bayes.jitting.light_jit`'s options, as a fit evaluates it only a few times
    (each run's start, each candidate's NLL)."""
    run = _objective_jit if small_panel(cells, T) else _objective_jit.plain
    return run(B, T, cells, ridge, outcome, aux, theta)
