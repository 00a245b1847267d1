"""Leaving one verdict out with integrated prompt effects: a ratio of its prompt's integrals.

With the answer effects integrated out (:mod:`~hja_bayes.bayes.integrated`) the posterior is
over the global parameters ``phi`` alone, and prompt q enters the likelihood as the integral
``Z_q(phi) = p(y_q | phi)``.  Leaving out verdict n of prompt q,

    p(y_n | y_-n, phi) = p(y_q | phi) / p(y_q without n | phi),

both integrals by the rules the sampler's potential uses (adaptive Gauss-Hermite product
rules up to four free dimensions, the Laplace approximation beyond).  PSIS then reweighs the
globals' draws by its inverse: no answer effect is drawn, and the effects' part of leaving a
verdict out is exact up to the rules' error, however strongly the verdict pins its answers'
effects.  A verdict alone on its prompt leaves the integral 1: its density is ``Z_q``.

Each integral is laid out once however often it occurs: prompts (whole, or less one
verdict) whose units are alike (:func:`~hja_bayes.bayes.blocks.unit_keys`) share one.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..jitting import NO_YNNPACK, compile_lowered
from ..likelihood import OutcomeModel, linear_predictor
from .blocks import QUADRATURE, prompt_blocks, unit_keys
from .integrated import SAMPLING_TOLERANCE, _block_pieces, _integrals_from, _mode

__all__ = ["LeftOutLayout", "left_out_layout", "left_out_log_densities"]


class LeftOutLayout(NamedTuple):
    """The integrals leave-one-out needs, laid out over units of their own.

    Attributes
    ----------
    blocks : tuple of Block
        The distinct integrals' prompts over the layout's units.
    source : int array (layout units,)
        The data's unit behind each of the layout's units.
    counts : float array (layout units, C)
        Their verdicts (the data's, less the one left out).
    item : int array (layout answers,)
        The model of each of the layout's answers (its tau).
    whole, without : int arrays (points,)
        For each point (unit, category), the integral of its prompt with every verdict and
        the one without the point's verdict (-1: no verdict left, the integral is 1).
    n_integrals : int
    """

    blocks: tuple
    source: np.ndarray
    counts: np.ndarray
    item: np.ndarray
    whole: np.ndarray
    without: np.ndarray
    n_integrals: int


def left_out_layout(cells, prompt, question, item, unit, category, *,
                    quadrature=QUADRATURE) -> LeftOutLayout:
    """The layout of :class:`LeftOutLayout` (NumPy).

    Parameters
    ----------
    cells : Cells
        The likelihood's units (with prompt effects: the data's (question, cell) entries).
    prompt : (first, second)
        Answer index of each unit's first- and second-shown answer.
    question, item : int arrays (answers,)
        The prompt and the model of every answer.
    unit, category : int arrays (points,)
        The points: a verdict of ``category`` in ``unit`` (it must hold one).
    quadrature : sequence of int
        The rules, as the sampler's (:func:`~hja_bayes.bayes.blocks.prompt_blocks`).
    """
    first, second = (np.asarray(a, dtype=np.int64) for a in prompt)
    counts = np.asarray(cells.counts, dtype=float)
    unit, category = np.asarray(unit, dtype=np.int64), np.asarray(category, dtype=np.int64)
    if np.any(counts[unit, category] < 1):
        from ..errors import ParameterError

        raise ParameterError("a point's unit holds no verdict of its category")
    q_unit = np.asarray(question)[first]
    order = np.argsort(q_unit, kind="stable")
    bounds = np.searchsorted(q_unit[order], np.arange(int(q_unit.max(initial=-1)) + 2))
    # everything a unit's integral depends on but its counts, as one code per distinct row
    keys = unit_keys(cells)
    n_c = counts.shape[1]
    rest = np.delete(keys, np.s_[3:3 + n_c], axis=1)  # judge, models | counts | design rows

    # one candidate integral per prompt (every verdict) and per point (less its verdict)
    prompts = np.unique(q_unit)
    members = [order[bounds[q]:bounds[q + 1]] for q in prompts]
    at = {int(q): i for i, q in enumerate(prompts)}
    sources, tallies, owners = [], [], []
    for i, m in enumerate(members):
        sources.append(m)
        tallies.append(counts[m])
        owners.append(np.full(len(m), i))
    for p, (u, o) in enumerate(zip(unit, category)):
        m = members[at[int(q_unit[u])]]
        c = counts[m].copy()
        c[np.flatnonzero(m == u)[0], o] -= 1.0
        sources.append(m)
        tallies.append(c)
        owners.append(np.full(len(m), len(members) + p))
    source, tally, owner = (np.concatenate(x) for x in (sources, tallies, owners))
    keep = tally.sum(axis=1) > 0  # a unit without verdicts integrates to 1: left out
    source, tally, owner = source[keep], tally[keep], owner[keep]
    n_candidates = len(members) + len(unit)

    # candidates whose units are alike (as multisets) share one integral
    code = np.unique(np.column_stack([rest[source], tally]), axis=0, return_inverse=True)[1]
    code = code.ravel()
    by_owner = np.lexsort((code, owner))
    owner_bounds = np.searchsorted(owner[by_owner], np.arange(n_candidates + 1))
    integral = np.full(n_candidates, -1, dtype=np.int64)
    first_of: dict = {}
    for j in range(n_candidates):
        lo, hi = owner_bounds[j], owner_bounds[j + 1]
        if hi > lo:
            integral[j] = first_of.setdefault(code[by_owner[lo:hi]].tobytes(), len(first_of))
    # the layout: each distinct integral's units, once (from its first candidate)
    rep = np.full(len(first_of), -1, dtype=np.int64)
    for j in range(n_candidates - 1, -1, -1):
        if integral[j] >= 0:
            rep[integral[j]] = j
    laid = np.isin(owner, rep)
    source, tally, owner = source[laid], tally[laid], owner[laid]
    prompt_of = integral[owner]
    # the layout's answers: one per (integral, answer shown)
    n_answers = len(np.asarray(question))
    shown, renumbered = np.unique(np.concatenate([prompt_of * n_answers + first[source],
                                                  prompt_of * n_answers + second[source]]),
                                  return_inverse=True)
    m = len(source)
    blocks = prompt_blocks(renumbered[:m], renumbered[m:], shown // n_answers,
                           n_questions=len(first_of), quadrature=quadrature)
    candidate_prompt = np.asarray([at[int(q_unit[u])] for u in unit], dtype=np.int64)
    return LeftOutLayout(blocks, source, tally, np.asarray(item)[shown % n_answers],
                         integral[candidate_prompt], integral[len(members) + np.arange(len(unit))],
                         len(first_of))


def _integrals(layout: LeftOutLayout, cells, outcome: OutcomeModel):
    """A program for a run of draws of the globals: every distinct integral of the layout
    per draw (draws, n_integrals), each draw's Newton iterations started at the draw
    before's modes (neighbouring draws of a chain are close)."""
    blocks = layout.blocks
    rows = layout.source
    units = cells._replace(judge=cells.judge[rows], first=cells.first[rows],
                           second=cells.second[rows], counts=layout.counts,
                           X=cells.X[rows], Xg=cells.Xg[rows])
    units = type(cells)(*(jnp.asarray(a) for a in units))
    item = jnp.asarray(layout.item)

    def one(starts, draw):
        S, Z, theta, gamma, aux, tau = draw
        eta = linear_predictor(S, Z, units, theta)
        gam = gamma[units.judge]
        aux = None if aux is None else aux[units.judge]
        tau = tau[item]
        out = jnp.zeros(layout.n_integrals, eta.dtype)
        modes = []
        for block, start in zip(blocks, starts):
            base, g, a, c, Q, log_det = _block_pieces(block, eta, gam, aux, units.counts,
                                                      tau, outcome)
            pieces = (base, g, a, c, block, Q, outcome)
            mode = _mode(*pieces, start, tolerance=SAMPLING_TOLERANCE, single=True)
            out = out.at[block.index].set(_integrals_from(mode, pieces, log_det, True))
            modes.append(mode)
        return tuple(modes), out

    def run(*draws):
        zeros = tuple(jnp.zeros((len(b.index), b.contrast.shape[1]), draws[0].dtype)
                      for b in blocks)
        return jax.lax.scan(one, zeros, draws)[1]

    return run


def left_out_log_densities(layout: LeftOutLayout, S, Z, theta, gamma, aux, tau, cells,
                           outcome: OutcomeModel, chunk: int = 256) -> np.ndarray:
    """``log p(y_n | y_-n, phi)`` of every point of the layout, for every draw of the
    globals (points, draws).

    ``S`` (d, K, N), ``Z`` (d, K, q), ``theta`` (d, g) or None, ``gamma`` (d, K), ``aux``
    (d, K, n_aux) unconstrained or None, ``tau`` (d, N); ``cells`` the likelihood's units
    (NumPy).  Draws run ``chunk`` at a time, one after another on each device JAX sees
    (several devices take a run of draws each).
    """
    d = np.shape(S)[0]
    theta = np.zeros((d, 0)) if theta is None else theta
    draws = [None if a is None else np.asarray(a, dtype=float)
             for a in (S, Z, theta, gamma, aux, tau)]
    devices = jax.local_device_count()
    lanes = devices if devices > 1 and chunk % devices == 0 else 1
    program = _integrals(layout, cells, outcome)
    program = jax.pmap(program) if lanes > 1 else jax.jit(program)
    compiled = None
    values = np.empty((d, layout.n_integrals))
    for start in range(0, d, chunk):
        stop = min(start + chunk, d)
        take = np.arange(start, start + chunk).clip(max=stop - 1)
        args = [None if a is None else a[take] for a in draws]
        if lanes > 1:  # (lanes, draws per lane, ...): consecutive draws per device
            args = [None if a is None else np.reshape(a, (lanes, chunk // lanes) + a.shape[1:])
                    for a in args]
        args = [None if a is None else jnp.asarray(a) for a in args]
        if compiled is None:  # one compilation: every call has one shape
            compiled = compile_lowered(program.lower(*args), NO_YNNPACK)
        values[start:stop] = np.asarray(compiled(*args)).reshape(chunk, -1)[: stop - start]
    whole = values[:, layout.whole]
    without = np.where(layout.without >= 0, values[:, np.maximum(layout.without, 0)], 0.0)
    return (whole - without).T
