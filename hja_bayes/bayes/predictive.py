"""Per-draw logits, pointwise log-likelihoods and replicated data, on the likelihood seam.

Everything is computed draw by draw from the score matrices S and position biases beta of a
posterior (or prior) sample with :func:`~hja_bayes.likelihood.cell_logits` and the outcome
model's functions, in chunks of draws so that memory stays bounded by
``chunk x cells`` rather than ``draws x cells`` intermediate arrays.

A *comparison* is one verdict, so its log-likelihood depends only on its cell and its
outcome (first wins, tie, second wins): :func:`outcome_log_likelihood` returns those three
values per cell, and :func:`comparison_index` spreads them over the comparisons.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from ..likelihood import Cells, OutcomeModel, cell_logits, sample_outcomes
from .prompts import prompt_offsets

__all__ = ["OUTCOMES", "comparison_index", "draw_logits", "outcome_log_likelihood",
           "posterior_aux", "posterior_logits", "replicate_outcomes", "unit_aux", "unit_cells",
           "unit_logits"]

#: Names of the three outcomes of one comparison, in the order of the count columns.
OUTCOMES = ("first", "tie", "second")

#: Draws per chunk when logits are computed.
CHUNK = 256


@jax.jit
def _logits(S, beta, cells):
    return jax.vmap(cell_logits, in_axes=(0, 0, None))(S, beta, cells)


def draw_logits(S, beta, cells: Cells, chunk: int = CHUNK) -> np.ndarray:
    """Logits ``beta_k + S[k, i] - S[k, j]`` of every cell for every draw.

    Parameters
    ----------
    S : array (draws, K, N)
    beta : array (draws, K)
    cells : Cells

    Returns
    -------
    ndarray (draws, cells)
    """
    S, beta = np.asarray(S, dtype=float), np.asarray(beta, dtype=float)
    out = np.empty((S.shape[0], np.shape(cells.judge)[0]))
    cells = Cells(*(jnp.asarray(a) for a in cells))
    for start in range(0, S.shape[0], chunk):
        stop = min(start + chunk, S.shape[0])
        # pad the last chunk so that every chunk has one shape (one compilation)
        pad = chunk - (stop - start) if S.shape[0] > chunk else 0
        s_chunk = np.concatenate([S[start:stop], np.repeat(S[stop - 1:stop], pad, 0)])
        b_chunk = np.concatenate([beta[start:stop], np.repeat(beta[stop - 1:stop], pad, 0)])
        out[start:stop] = np.asarray(_logits(s_chunk, b_chunk, cells))[: stop - start]
    return out


def unit_logits(S, beta, units: Cells, prompt=None) -> np.ndarray:
    """Logits of likelihood units (cells, or (question, cell) entries with prompt effects).

    Parameters
    ----------
    S : array (draws, K, N)
    beta : array (draws, K)
    units : Cells
    prompt : (gamma (draws, K), alpha (draws, answers), first, second), optional
        Answer effects and the answers each unit shows
        (:func:`~hja_bayes.bayes.prompts.prompt_offsets`).

    Returns
    -------
    ndarray (draws, units)
    """
    eta = draw_logits(S, beta, units)
    if prompt is not None:
        gamma, alpha, first, second = prompt
        eta += prompt_offsets(np.asarray(gamma), np.asarray(alpha), np.asarray(units.judge),
                              first, second)
    return eta


def unit_aux(nu, judge) -> np.ndarray | None:
    """Per-unit extra outcome parameters (Davidson's ``log nu``) from draws of ``nu``.

    Parameters
    ----------
    nu : array (draws, K) or None
        Tie propensities on their natural scale (0 for a judge held at the boundary).
    judge : int array (units,)

    Returns
    -------
    ndarray (draws, units, 1) or None
        ``log nu`` of each unit's judge (``-inf`` where nu = 0), the ``aux`` of the seam.
    """
    if nu is None:
        return None
    with np.errstate(divide="ignore"):
        log_nu = np.log(np.asarray(nu, dtype=float))
    return log_nu[:, np.asarray(judge)][..., None]


def unit_cells(n_cells: int) -> tuple[Cells, Cells, Cells]:
    """Cells holding one comparison with each outcome (first wins, tie, second wins)."""
    zeros, ones = np.zeros(n_cells), np.ones(n_cells)
    index = np.zeros(n_cells, dtype=int)
    return (Cells(index, index, index, ones, zeros, zeros),
            Cells(index, index, index, zeros, ones, zeros),
            Cells(index, index, index, zeros, zeros, ones))


def outcome_log_likelihood(eta, outcome: OutcomeModel, aux=None) -> np.ndarray:
    """Log-probability of one comparison with each outcome, per draw and cell.

    Parameters
    ----------
    eta : array (draws, cells)
    outcome : OutcomeModel
    aux : array, optional
        Per-cell extra parameters of the outcome model.

    Returns
    -------
    ndarray (draws, cells, 3)
        For "ties count 1/2" a tie's value is the model's half-win contribution
        half a win and half a loss (the quasi-likelihood the sampler conditions on).
    """
    eta = np.asarray(eta, dtype=float)
    units = unit_cells(eta.shape[-1])
    return np.stack([np.asarray(outcome.log_likelihood(eta, aux, c)) for c in units], axis=-1)


def comparison_index(counts: np.ndarray) -> np.ndarray:
    """Index into the flattened (cell, outcome) axis of every single comparison.

    ``counts`` (cells, 3) holds integer (first_wins, ties, second_wins); comparisons are
    listed cell by cell, first wins before ties before second wins.
    """
    counts = np.asarray(counts)
    return np.repeat(np.arange(counts.size), np.rint(counts).astype(np.int64).ravel())


def replicate_outcomes(eta, n, outcome: OutcomeModel, seed, aux=None) -> np.ndarray:
    """Replicated (first_wins, ties, second_wins) per draw and cell.

    Drawn by :func:`~hja_bayes.likelihood.sample_outcomes` with a NumPy generator seeded by
    ``seed`` (an int or a sequence of ints).

    Returns
    -------
    ndarray (draws, cells, 3) of int
    """
    rng = np.random.default_rng(seed)
    first, ties, second = sample_outcomes(rng, eta, n, outcome=outcome, aux=aux)
    return np.stack([first, ties, second], axis=-1)


def posterior_aux(idata, units, take=None) -> np.ndarray | None:
    """Extra outcome parameters of (a subset ``take`` of) a posterior's units per draw:
    Davidson's ``log nu`` of each unit's judge (:func:`unit_aux`), None without them."""
    from .convert import posterior_draws

    if "nu" not in idata.posterior:
        return None
    judge = np.asarray(units.cells.judge)
    judge = judge if take is None else judge[np.asarray(take)]
    return unit_aux(posterior_draws(idata, "nu"), judge)


def posterior_logits(idata, units, take=None) -> np.ndarray:
    """Logits of (a subset ``take`` of) a posterior's units for every draw.

    Parameters
    ----------
    idata : InferenceData
    units : Units
        From :func:`~hja_bayes.bayes.convert.posterior_units`.
    take : int array, optional
        Unit indices (default: all).

    Returns
    -------
    ndarray (draws, units)
    """
    from .convert import posterior_draws

    S = posterior_draws(idata, "S")
    beta = (posterior_draws(idata, "beta") if "beta" in idata.posterior
            else np.zeros(S.shape[:2]))
    take = np.arange(len(units.cells.judge)) if take is None else np.asarray(take)
    sub = Cells(*(np.asarray(a)[take] for a in units.cells))
    terms = None
    if units.prompt is not None:
        terms = (posterior_draws(idata, "gamma"), posterior_draws(idata, "alpha"),
                 units.prompt[0][take], units.prompt[1][take])
    return unit_logits(S, beta, sub, terms)
