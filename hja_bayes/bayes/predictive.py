"""Per-draw linear predictors, pointwise log-likelihoods and replicated data, on the seam.

Everything is computed draw by draw from the score matrices S, the term coefficients Z and
theta (and the answer effects with prompt effects) of a posterior (or prior) sample with
:func:`~hja_bayes.likelihood.linear_predictor` and the outcome model's functions, in chunks
of draws so that memory stays bounded by ``chunk x units`` rather than ``draws x units``
intermediate arrays.

A *comparison* is one verdict, so its log-likelihood depends only on its unit and its
category: :func:`outcome_log_likelihood` returns the C values per unit, and
:func:`comparison_index` spreads them over the comparisons.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..likelihood import (
    Cells,
    OutcomeModel,
    linear_predictor,
    log_likelihood,
    sample_counts,
)
from .prompts import prompt_offsets

__all__ = ["OUTCOMES", "comparison_index", "draw_logits", "outcome_log_likelihood",
           "posterior_aux", "posterior_coefficients", "posterior_logits",
           "replicate_outcomes", "unit_aux", "unit_logits"]

#: Names of the three outcomes of one comparison, in the order of the count columns.
OUTCOMES = ("first", "tie", "second")

#: Draws per chunk when logits are computed.
CHUNK = 256


@jax.jit
def _logits(S, Z, theta, cells):
    return jax.vmap(linear_predictor, in_axes=(0, 0, None, 0))(S, Z, cells, theta)


def _padded(x, start, stop, chunk, total):
    """Rows ``start:stop`` of ``x``, the last repeated up to ``chunk`` rows when ``total``
    exceeds one chunk (every chunk then has one shape: one compilation)."""
    pad = chunk - (stop - start) if total > chunk else 0
    return np.concatenate([x[start:stop], np.repeat(x[stop - 1:stop], pad, 0)])


def draw_logits(S, Z, cells: Cells, theta=None, chunk: int = CHUNK) -> np.ndarray:
    """``S[k, i] - S[k, j] + Z[k] . X[u] + theta . Xg[u]`` of every unit for every draw.

    Parameters
    ----------
    S : array (draws, K, N)
    Z : array (draws, K, q)
        Per-judge term coefficients (q = 0 without terms).
    cells : Cells
        The units with their design.
    theta : array (draws, g), optional
        Panel-wide coefficients (None or g = 0 without them).

    Returns
    -------
    ndarray (draws, units)
    """
    S, Z = np.asarray(S, dtype=float), np.asarray(Z, dtype=float)
    d = S.shape[0]
    theta = np.zeros((d, 0)) if theta is None else np.asarray(theta, dtype=float)
    out = np.empty((d, np.shape(cells.judge)[0]))
    cells = Cells(*(jnp.asarray(a) for a in cells))
    for start in range(0, d, chunk):
        stop = min(start + chunk, d)
        parts = (_padded(x, start, stop, chunk, d) for x in (S, Z, theta))
        out[start:stop] = np.asarray(_logits(*parts, cells))[: stop - start]
    return out


def unit_logits(S, Z, units: Cells, theta=None, prompt=None) -> np.ndarray:
    """Logits of likelihood units (cells, or (question, cell) entries).

    Parameters
    ----------
    S : array (draws, K, N)
    Z : array (draws, K, q)
    units : Cells
    theta : array (draws, g), optional
    prompt : (gamma (draws, K), alpha (draws, answers), first, second), optional
        Answer effects and the answers each unit shows
        (:func:`~hja_bayes.bayes.prompts.prompt_offsets`).

    Returns
    -------
    ndarray (draws, units)
    """
    eta = draw_logits(S, Z, units, theta)
    if prompt is not None:
        gamma, alpha, first, second = prompt
        eta += prompt_offsets(np.asarray(gamma), np.asarray(alpha), np.asarray(units.judge),
                              first, second)
    return eta


def unit_aux(aux, judge) -> np.ndarray | None:
    """Per-unit extra outcome parameters from per-judge draws.

    Parameters
    ----------
    aux : array (draws, K, n_aux) or None
        Unconstrained scale (``-inf`` where held at the boundary).
    judge : int array (units,)

    Returns
    -------
    ndarray (draws, units, n_aux) or None
    """
    return None if aux is None else np.asarray(aux, dtype=float)[:, np.asarray(judge)]


def outcome_log_likelihood(eta, outcome: OutcomeModel, aux=None) -> np.ndarray:
    """Log-probability of one comparison in each category, per draw and unit.

    Parameters
    ----------
    eta : array (draws, units)
    outcome : OutcomeModel
    aux : array (draws, units, n_aux), optional

    Returns
    -------
    ndarray (draws, units, C)
        The seam's log-likelihood of a unit holding one verdict of that category; for
        "ties count 1/2" a tie's value is the model's half-win contribution (the
        quasi-likelihood the sampler conditions on).
    """
    eta = np.asarray(eta, dtype=float)
    one = np.eye(outcome.n_categories)
    return np.stack([np.asarray(log_likelihood(outcome, eta, aux, one[c]))
                     for c in range(outcome.n_categories)], axis=-1)


def comparison_index(counts: np.ndarray) -> np.ndarray:
    """Index into the flattened (unit, category) axis of every single comparison.

    ``counts`` (units, C) holds whole numbers; comparisons are listed unit by unit,
    category by category.
    """
    counts = np.asarray(counts)
    return np.repeat(np.arange(counts.size), np.rint(counts).astype(np.int64).ravel())


def replicate_outcomes(p, n, seed) -> np.ndarray:
    """Replicated counts per draw, unit and category, from the outcome model's
    probabilities ``p`` (draws, units, C) and the units' comparisons ``n``.

    Units of one comparison take their category from one uniform number against the
    cumulative probabilities; the others are drawn by
    :func:`~hja_bayes.likelihood.sample_counts` (a binomial per category).  The generator
    is ``seed`` or seeded by it (an int or a sequence of ints).  On prompt-level units,
    where most units hold one verdict (Chatbot Arena: 10,000 units x 4,000 draws), the
    uniform numbers take a fraction of the binomials' time.

    Returns
    -------
    ndarray (draws, units, C)
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    n = np.broadcast_to(np.rint(np.asarray(n, dtype=float)), p.shape[:-1])
    one = n == 1
    if not one.any():
        return sample_counts(rng, n, p)
    # the category is the number of cumulative probabilities P(<= c), c < C - 1, at or
    # below the uniform number: category c has probability p_c, the last one the rest
    below = np.cumsum(p[..., :-1], axis=-1)
    category = np.sum(rng.random(n.shape)[..., None] >= below, axis=-1)
    out = (category[..., None] == np.arange(p.shape[-1])).astype(float)
    if not one.all():
        out[~one] = sample_counts(rng, n[~one], p[~one])
    return out


def posterior_aux(idata, units, take=None) -> np.ndarray | None:
    """The outcome model's extra parameters of (a subset ``take`` of) a posterior's units
    per draw, unconstrained (:func:`unit_aux`); None for a model without them."""
    from .convert import posterior_draws, posterior_outcome
    from .outcomes import log_scale_aux

    outcome = posterior_outcome(idata)
    if not outcome.n_aux:
        return None
    natural = np.stack([posterior_draws(idata, name) for name in outcome.aux_names], axis=-1)
    judge = np.asarray(units.cells.judge)
    judge = judge if take is None else judge[np.asarray(take)]
    return unit_aux(log_scale_aux(outcome, natural), judge)


def posterior_coefficients(idata) -> tuple[np.ndarray, np.ndarray | None]:
    """Draws of the term coefficients ``Z`` (draws, K, q) and ``theta`` (draws, g) or None,
    in the columns of :func:`~hja_bayes.bayes.convert.posterior_units`' design.

    ``coef`` when the posterior has it; else the position bias ``beta`` as one column;
    else no columns.
    """
    from .convert import posterior_draws

    post = idata.posterior
    if "coef" in post:
        Z = posterior_draws(idata, "coef")
    elif "beta" in post:
        Z = posterior_draws(idata, "beta")[..., None]
    else:
        S = posterior_draws(idata, "S")
        Z = np.zeros(S.shape[:2] + (0,))
    theta = posterior_draws(idata, "theta") if "theta" in post else None
    return Z, theta


def posterior_logits(idata, units, take=None, alpha=None) -> np.ndarray:
    """Logits of (a subset ``take`` of) a posterior's units for every draw.

    Parameters
    ----------
    idata : InferenceData
    units : Units
        From :func:`~hja_bayes.bayes.convert.posterior_units`.
    take : int array, optional
        Unit indices (default: all).
    alpha : array (draws, answers), optional
        The answer effects of every draw, with prompt effects (default: the posterior's
        ``alpha``; where it is not stored, pass
        :func:`~hja_bayes.bayes.recover.posterior_effects`, which draws them again).

    Returns
    -------
    ndarray (draws, units)
    """
    from .convert import posterior_draws

    S = posterior_draws(idata, "S")
    Z, theta = posterior_coefficients(idata)
    take = np.arange(len(units.cells.judge)) if take is None else np.asarray(take)
    sub = units.cells.take(take)
    prompt = None
    if units.prompt is not None:
        if alpha is None:
            if "alpha" not in idata.posterior:
                raise ParameterError("the posterior does not store the answer effects: pass "
                                     "alpha=bayes.recover.posterior_effects(idata)")
            alpha = posterior_draws(idata, "alpha")
        prompt = (posterior_draws(idata, "gamma"), alpha, units.prompt[0][take],
                  units.prompt[1][take])
    return unit_logits(S, Z, sub, theta, prompt)
