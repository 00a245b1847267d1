"""The likelihood seam: units as arrays, the linear predictor, outcome models and terms.

A *unit* is a cell (judge k, item shown first i, item shown second j), or a (prompt, cell)
entry when a term varies by prompt, with its counts of C ordered outcome categories.  Its
linear predictor is

    eta = S[k, i] - S[k, j] + sum_q Z[k, q] X[u, q] + sum_g theta_g Xg[u, g]

(:func:`linear_predictor`; the terms' design is :mod:`~hja_bayes.likelihood.terms`), and an
outcome model (:mod:`~hja_bayes.likelihood.outcomes`) says how the counts depend on it.
The MAP solver, the Wald information, the NumPyro model, the predictive checks,
``simulate`` and the pooled Bradley–Terry fit all go through this module.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..categories import collapse_counts
from .outcomes import (
    DAVIDSON,
    HALF,
    OUTCOME_MODELS,
    OutcomeModel,
    category_derivatives,
    information,
    log_likelihood,
    ordinal,
    outcome_model,
    probabilities,
    sandwich_meat,
    score,
)
from .terms import Design

__all__ = [
    "Cells",
    "DAVIDSON",
    "HALF",
    "OutcomeModel",
    "OUTCOME_MODELS",
    "category_derivatives",
    "cells_of",
    "collapse_counts",
    "counts_for",
    "information",
    "item_information",
    "judge_totals",
    "linear_predictor",
    "log_likelihood",
    "negative_log_likelihood",
    "ordinal",
    "outcome_model",
    "padded_size",
    "probabilities",
    "sample_counts",
    "sandwich_meat",
    "score",
    "unit_information",
    "unit_log_likelihood",
]


class Cells(NamedTuple):
    """The likelihood's units with their design, as arrays (a pytree; JAX or NumPy).

    Attributes
    ----------
    judge, first, second : int (m,)
    counts : float (m, C)
        Verdicts per ordered category, the strongest preference for ``first`` first.
    X : float (m, q)
        Design of the per-judge coefficients ``Z`` (position, self-preference, per-judge
        style); q may be 0.
    free : float (K, q)
        1 where a judge's coefficient is estimated, 0 where it is held at 0.
    penalty : float (q,)
        Ridge of each column's coefficients (NaN: the fit's ridge).
    Xg : float (m, g)
        Design of the panel-wide coefficients ``theta`` (shared style); g may be 0.
    global_penalty : float (g,)
    """

    judge: jax.Array
    first: jax.Array
    second: jax.Array
    counts: jax.Array
    X: jax.Array
    free: jax.Array
    penalty: jax.Array
    Xg: jax.Array
    global_penalty: jax.Array

    @property
    def n(self) -> jax.Array:
        """Comparisons per unit (the columns added one by one: XLA's CPU code for a sum
        over the short last axis, fused into what uses it, runs several times slower)."""
        columns = [self.counts[..., c] for c in range(self.counts.shape[-1])]
        return sum(columns[1:], columns[0])

    def minus(self, other: "Cells") -> "Cells":
        """These units with ``other``'s counts removed (same layout), e.g. a training fold."""
        return self._replace(counts=self.counts - other.counts)

    def take(self, index) -> "Cells":
        """The units ``index`` (NumPy), with the same design columns."""
        per_unit = ("judge", "first", "second", "counts", "X", "Xg")
        return self._replace(**{f: np.asarray(getattr(self, f))[index] for f in per_unit})


def padded_size(m: int) -> int:
    """Bucketed unit count: the next power of two (at least 64) up to 4,096, then multiples of
    4,096 up to 65,536, then of 65,536 (a fit's cost follows its padded units, and prompt
    entries are often many times the cells: finer buckets than powers of two there)."""
    if m <= 4_096:
        return max(64, 1 << (m - 1).bit_length())
    step = 4_096 if m <= 65_536 else 65_536
    return -(-m // step) * step


def counts_for(counts, model: OutcomeModel | int) -> np.ndarray:
    """The counts as ``model`` (or a model of that many categories) reads them: collapsed to
    three for the three-outcome models."""
    counts = np.asarray(counts, dtype=float)
    C = model if isinstance(model, (int, np.integer)) else model.n_categories
    if counts.shape[-1] == C:
        return counts
    if C == 3:
        return collapse_counts(counts)
    from ..errors import ParameterError

    raise ParameterError(f"a model of {C} categories cannot read data of {counts.shape[-1]}")


def cells_of(data, pad: bool = False, *, outcome: OutcomeModel | None = None,
             design: Design | None = None) -> Cells:
    """The data's units with a design, as JAX arrays.

    Parameters
    ----------
    data : Comparisons
    pad : bool
        Extend the arrays to :func:`padded_size` with empty units (no comparisons: they add
        nothing to the likelihood, its gradient or the information), so that jitted solvers
        compile once for data sets of similar size.
    outcome : OutcomeModel, optional
        Counts are read as it reads them (:func:`counts_for`); default: as stored.
    design : Design, optional
        The terms' design (:func:`~hja_bayes.likelihood.terms.design_of`); its level decides
        the units (cells or entries).  Default: cells, no terms.
    """
    from .terms import units_of

    level = "cells" if design is None else design.level
    units = units_of(data, level)
    m, K = units.size, data.n_judges
    if design is None:
        design = Design((), np.zeros((m, 0)), np.zeros((K, 0), bool), np.zeros(0), (),
                        np.zeros((m, 0)), np.zeros(0), level)
    counts = units.counts if outcome is None else counts_for(units.counts, outcome)
    per_unit = [units.judge, units.first, units.second, counts, design.X, design.Xg]
    if pad:
        extra = padded_size(m) - m
        per_unit = [np.concatenate([a, np.zeros((extra,) + a.shape[1:], dtype=a.dtype)])
                    for a in per_unit]
    # device_put, not jnp.asarray: JAX compiles a program for every asarray of a new shape
    judge, first, second, counts, X, Xg = jax.device_put(per_unit)
    free, penalty, global_penalty = jax.device_put(
        [np.asarray(design.free, dtype=float), np.asarray(design.penalty),
         np.asarray(design.global_penalty)])
    return Cells(judge, first, second, counts, X, free, penalty, Xg, global_penalty)


def linear_predictor(S, Z, cells: Cells, theta=None, positions=None):
    """``eta`` of every unit: ``S[k, i] - S[k, j] + Z[k] . X[u] + theta . Xg[u]``.

    ``Z`` (K, q) holds the per-judge coefficients, ``theta`` (g,) the panel-wide ones
    (None when g = 0).  NumPy or JAX, like the inputs.  ``positions``, NumPy only: the
    units' ``(k N + i, k N + j)`` computed once for several calls (a gather from the
    flattened S takes half the time of the two-index one).
    """
    k = cells.judge
    if positions is not None:
        flat = np.ravel(S)
        eta = flat.take(positions[0]) - flat.take(positions[1])
    else:
        eta = S[k, cells.first] - S[k, cells.second]
    if cells.X.shape[-1]:
        eta = eta + (Z[k] * cells.X).sum(axis=-1)
    if cells.Xg.shape[-1]:
        eta = eta + cells.Xg @ theta
    return eta


def _aux_per_unit(aux, cells: Cells, outcome: OutcomeModel):
    return None if outcome.n_aux == 0 else aux[cells.judge]


def unit_log_likelihood(S, Z, cells: Cells, *, outcome: OutcomeModel = HALF, aux=None,
                        theta=None):
    """Log-likelihood of every unit under ``outcome`` (constant terms dropped)."""
    eta = linear_predictor(S, Z, cells, theta)
    return log_likelihood(outcome, eta, _aux_per_unit(aux, cells, outcome), cells.counts)


def negative_log_likelihood(S, Z, cells: Cells, *, outcome: OutcomeModel = HALF, aux=None,
                            theta=None):
    """Total negative log-likelihood over the units."""
    return -jnp.sum(unit_log_likelihood(S, Z, cells, outcome=outcome, aux=aux, theta=theta))


def unit_information(S, Z, cells: Cells, *, outcome: OutcomeModel = HALF, aux=None, theta=None):
    """Expected information about ``(eta, aux)`` of every unit: (m, L, L), L = 1 + n_aux."""
    eta = linear_predictor(S, Z, cells, theta)
    return information(outcome, eta, _aux_per_unit(aux, cells, outcome), cells.n)


def item_information(weight, cells: Cells, n_judges: int, n_items: int):
    """Per judge, the information Laplacian of its score row from the units' eta weights:
    ``(K, N, N)``, ``sum_u w_u (e_i - e_j)(e_i - e_j)^T`` over judge k's units."""
    k, i, j = cells.judge, cells.first, cells.second
    SS = jnp.zeros((n_judges, n_items, n_items))
    return SS.at[k, i, i].add(weight).at[k, j, j].add(weight).at[k, i, j].add(-weight) \
        .at[k, j, i].add(-weight)


def judge_totals(judge, counts, n_judges: int) -> np.ndarray:
    """Each judge's total counts per category, (K, C), from units' judges and counts.

    Units sorted by judge (as the readers leave cells) are summed run by run in one pass
    (``np.add.reduceat``: 50 -> 12 ms for two million cells), else by a ``bincount`` per
    category; the two agree exactly for whole counts, else up to rounding."""
    counts = np.asarray(counts, dtype=float)
    judge = np.asarray(judge)
    if np.all(judge[1:] >= judge[:-1]):
        bounds = np.searchsorted(judge, np.arange(n_judges + 1))
        some = bounds[:-1] < bounds[1:]  # judges with units: their runs start increasing
        sums = np.zeros((n_judges, counts.shape[1]))
        if np.any(some):
            sums[some] = np.add.reduceat(counts, bounds[:-1][some], axis=0)
        return sums
    return np.stack([np.bincount(judge, counts[:, c], n_judges)
                     for c in range(counts.shape[1])], axis=1)


def sample_counts(rng, n, probs):
    """Multinomial category counts for ``n`` verdicts per unit with probabilities ``probs``.

    One sampler for both array kinds: ``rng`` is a NumPy ``Generator`` (NumPy out) or a JAX
    key (JAX out).  Category by category, each count is binomial given those before it.

    Parameters
    ----------
    rng : numpy.random.Generator or jax key
    n : array (...,)
        Verdicts per unit (whole numbers).
    probs : array (..., C)
        Category probabilities (rows summing to 1; a 0 stays 0).

    Returns
    -------
    array (..., C)
    """
    jax_rng = not isinstance(rng, np.random.Generator)
    xp = jnp if jax_rng else np
    probs = xp.clip(xp.asarray(probs, dtype=float), 0.0, 1.0)
    C = probs.shape[-1]
    tail = xp.flip(xp.cumsum(xp.flip(probs, -1), axis=-1), -1)  # P(category >= c)
    left = xp.broadcast_to(xp.round(xp.asarray(n, dtype=float)), probs.shape[:-1])
    keys = jax.random.split(rng, C) if jax_rng else None
    out = []
    for c in range(C - 1):
        q = xp.where(tail[..., c] > 0, probs[..., c] / xp.where(tail[..., c] > 0, tail[..., c], 1.0), 0.0)
        q = xp.clip(q, 0.0, 1.0)
        if jax_rng:  # binomial draws with n = 0 can come back as nan: such units have none
            draw = jnp.nan_to_num(jax.random.binomial(keys[c], left, q, shape=left.shape))
        else:
            draw = rng.binomial(left.astype(np.int64), q).astype(float)
        out.append(draw)
        left = left - draw
    out.append(left)
    return xp.stack(out, axis=-1)
