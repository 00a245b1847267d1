"""The likelihood seam: cells as JAX arrays, the linear predictor, and the outcome models.

A *cell* is (judge k, item shown first i, item shown second j) with its strict first-wins,
ties and strict second-wins.  The linear predictor of a cell is

    eta_c = beta_k + S[k, i] - S[k, j]

and an :class:`~hja_bayes.likelihood.outcome.OutcomeModel` says how the counts depend on
it.  The MAP solver, the Wald and sandwich information, the NumPyro model, the predictive
checks, ``simulate`` and the pooled Bradley–Terry fit all go through this module, so a new
outcome model is one new file here plus its keyword in :data:`OUTCOME_MODELS`.  Two ship:
``"half"`` (ties count 1/2, the default) and ``"davidson"`` (three outcomes with a per-judge
tie propensity).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import check_choice
from .davidson import DAVIDSON
from .half import HALF
from .outcome import OutcomeModel

__all__ = [
    "Cells",
    "DAVIDSON",
    "HALF",
    "OutcomeModel",
    "OUTCOME_MODELS",
    "aux_blocks",
    "cells_of",
    "cell_information",
    "cell_logits",
    "cell_log_likelihood",
    "fisher_blocks",
    "judge_totals",
    "negative_log_likelihood",
    "outcome_model",
    "padded_size",
    "sample_outcomes",
]

#: The outcome models by keyword.
OUTCOME_MODELS: dict[str, OutcomeModel] = {HALF.name: HALF, DAVIDSON.name: DAVIDSON}


def outcome_model(ties: str | OutcomeModel = "half") -> OutcomeModel:
    """The outcome model for a keyword (``"half"``, ``"davidson"``), or the model itself.

    Raises
    ------
    ParameterError
        For an unknown keyword (the message lists the known ones).
    """
    if isinstance(ties, OutcomeModel):
        return ties
    return OUTCOME_MODELS[check_choice(ties, "ties", tuple(OUTCOME_MODELS))]


class Cells(NamedTuple):
    """Cell arrays of a :class:`~hja_bayes.comparisons.Comparisons` as JAX arrays (a pytree).

    ``first_wins`` and ``second_wins`` are strict (decisive) wins; ``n`` and ``wins`` (ties
    counted 1/2) are derived.
    """

    judge: jax.Array
    first: jax.Array
    second: jax.Array
    first_wins: jax.Array
    ties: jax.Array
    second_wins: jax.Array

    @property
    def n(self) -> jax.Array:
        """Comparisons per cell."""
        return self.first_wins + self.ties + self.second_wins

    @property
    def wins(self) -> jax.Array:
        """Wins of the first-shown item, ties counted 1/2."""
        return self.first_wins + 0.5 * self.ties

    def minus(self, other: "Cells") -> "Cells":
        """These cells with ``other``'s counts removed (same layout), e.g. a training fold."""
        return self._replace(first_wins=self.first_wins - other.first_wins,
                             ties=self.ties - other.ties,
                             second_wins=self.second_wins - other.second_wins)


def padded_size(m: int) -> int:
    """Bucketed cell count: the next power of two (at least 64), then multiples of 65,536."""
    if m <= 65_536:
        return max(64, 1 << (m - 1).bit_length())
    return -(-m // 65_536) * 65_536


def cells_of(data, pad: bool = False) -> Cells:
    """The cells of a :class:`~hja_bayes.comparisons.Comparisons` as JAX arrays.

    With ``pad=True`` the arrays are extended to :func:`padded_size` with empty cells
    (no comparisons: they add nothing to the likelihood, its gradient or the information),
    so that jitted solvers compile once for data sets of similar size instead of once per
    size.
    """
    arrays = [data.judge, data.first, data.second, data.first_wins, data.ties, data.second_wins]
    if pad:
        extra = padded_size(data.n_cells) - data.n_cells
        arrays = [np.concatenate([a, np.zeros(extra, dtype=a.dtype)]) for a in arrays]
    return Cells(*(jnp.asarray(a) for a in arrays))


def cell_logits(S: jax.Array, beta: jax.Array, cells: Cells) -> jax.Array:
    """Linear predictor per cell: ``beta_k + S[k, i] - S[k, j]``."""
    return beta[cells.judge] + S[cells.judge, cells.first] - S[cells.judge, cells.second]


def _aux_per_cell(aux, cells: Cells, outcome: OutcomeModel):
    if outcome.n_aux == 0:
        return None
    return aux[cells.judge]


def judge_totals(cells: Cells, n_judges: int):
    """Each judge's total (first_wins, ties, second_wins), arrays of shape (K,)."""
    xp = jnp if isinstance(cells.ties, jax.Array) else np
    out = []
    for x in (cells.first_wins, cells.ties, cells.second_wins):
        if xp is jnp:
            out.append(jnp.zeros(n_judges).at[cells.judge].add(x))
        else:
            out.append(np.bincount(np.asarray(cells.judge), np.asarray(x, dtype=float), n_judges))
    return tuple(out)


def cell_log_likelihood(S: jax.Array, beta: jax.Array, cells: Cells, *,
                        outcome: OutcomeModel = HALF, aux=None) -> jax.Array:
    """Log-likelihood of every cell under ``outcome`` (constant terms dropped)."""
    eta = cell_logits(S, beta, cells)
    return outcome.log_likelihood(eta, _aux_per_cell(aux, cells, outcome), cells)


def negative_log_likelihood(S: jax.Array, beta: jax.Array, cells: Cells, *,
                            outcome: OutcomeModel = HALF, aux=None) -> jax.Array:
    """Total negative log-likelihood over cells."""
    return -jnp.sum(cell_log_likelihood(S, beta, cells, outcome=outcome, aux=aux))


def cell_information(S: jax.Array, beta: jax.Array, cells: Cells, *,
                     outcome: OutcomeModel = HALF, aux=None) -> jax.Array:
    """The outcome model's information weight of every cell's logit (``n p (1 - p)`` for
    ties counted 1/2): the information is ``J^T diag(w) J`` with J the logits' derivative."""
    eta = cell_logits(S, beta, cells)
    return outcome.information_weight(eta, _aux_per_cell(aux, cells, outcome), cells)


def fisher_blocks(S: jax.Array, beta: jax.Array, cells: Cells, *,
                  outcome: OutcomeModel = HALF, aux=None):
    """Expected information of (S, beta) in its natural, judge-block form.

    The information is ``J^T W J`` with ``W`` the outcome model's per-cell information
    weight (``n p (1 - p)`` for ties counted 1/2) and J the derivative of the cell logits.
    It does not couple different judges, so it is returned as blocks:

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
    w = cell_information(S, beta, cells, outcome=outcome, aux=aux)
    k, i, j = cells.judge, cells.first, cells.second
    SS = jnp.zeros((K, N, N))
    SS = SS.at[k, i, i].add(w).at[k, j, j].add(w).at[k, i, j].add(-w).at[k, j, i].add(-w)
    Sb = jnp.zeros((K, N)).at[k, i].add(w).at[k, j].add(-w)
    bb = jnp.zeros(K).at[k].add(w)
    return SS, Sb, bb


def aux_blocks(S: jax.Array, beta: jax.Array, cells: Cells, *, outcome: OutcomeModel = HALF,
               aux=None):
    """Expected information of the extra outcome parameters and their cross information.

    Companion of :func:`fisher_blocks` for the per-judge parameters ``aux`` (K, n_aux) on
    the log scale (``-inf``: held at the boundary, zero information there).  Like the rest
    of the information it does not couple different judges.

    Returns
    -------
    Sa : (K, N, n_aux)
        Cross information between judge k's scores and its extra parameters.
    ba : (K, n_aux)
        Cross information between beta_k and the extra parameters.
    aa : (K, n_aux, n_aux)
        Information of the extra parameters.
    """
    K, N = S.shape
    m = outcome.n_aux
    eta = cell_logits(S, beta, cells)
    a = _aux_per_cell(aux, cells, outcome)
    c = outcome.cross_information(eta, a, cells)
    A = outcome.aux_information(eta, a, cells)
    k, i, j = cells.judge, cells.first, cells.second
    Sa = jnp.zeros((K, N, m)).at[k, i].add(c).at[k, j].add(-c)
    ba = jnp.zeros((K, m)).at[k].add(c)
    aa = jnp.zeros((K, m, m)).at[k].add(A)
    return Sa, ba, aa


def sample_outcomes(rng: np.random.Generator, eta, n, *, outcome: OutcomeModel = HALF,
                    aux=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw (first_wins, ties, second_wins) for cells with logits ``eta`` and counts ``n``.

    ``eta`` may carry leading draw dimensions; ``aux`` (per cell, shape eta.shape + (n_aux,))
    is needed for models with extra parameters.
    """
    p_first, p_tie, p_second = (np.asarray(p, dtype=float)
                                for p in outcome.probabilities(np.asarray(eta, dtype=float), aux))
    n = np.broadcast_to(np.rint(np.asarray(n)).astype(np.int64), p_first.shape)
    first = rng.binomial(n, np.clip(p_first, 0.0, 1.0))
    rest = n - first
    p_tie_given = np.divide(p_tie, p_tie + p_second, out=np.zeros_like(p_tie),
                            where=(p_tie + p_second) > 0)
    ties = rng.binomial(rest, np.clip(p_tie_given, 0.0, 1.0))
    return first, ties, rest - ties
