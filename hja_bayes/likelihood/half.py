"""The "ties count 1/2" outcome model (Chatbot Arena's convention, the HJA paper's).

Per cell with logit ``eta`` of the first-shown item winning, ``n`` comparisons and
``w = first_wins + ties / 2``:

    log-likelihood    w eta - n softplus(eta)        (binomial, without its coefficient)
    score             w - n p,   p = expit(eta)      (derivative in eta)
    information       n p (1 - p)

A tie is half a win for each side, so this is a Bernoulli quasi-likelihood rather than a
model of three outcomes; it has no parameter beyond ``eta`` (its extra-parameter functions
return empty arrays).  The functions accept NumPy or
JAX arrays and return the same kind, so small NumPy fits need no compilation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .outcome import OutcomeModel


def _is_jax(x) -> bool:
    return isinstance(x, jax.Array)


def _sigmoid(eta):
    if _is_jax(eta):
        return jax.nn.sigmoid(eta)
    from scipy.special import expit  # imported on use: the package imports light

    return expit(eta)


def _log_likelihood(eta, aux, cells):
    softplus = jax.nn.softplus(eta) if _is_jax(eta) else np.logaddexp(0.0, eta)
    return cells.wins * eta - cells.n * softplus


def _score(eta, aux, cells):
    return cells.wins - cells.n * _sigmoid(eta)


def _information_weight(eta, aux, cells):
    p = _sigmoid(eta)
    return cells.n * p * (1.0 - p)


def _probabilities(eta, aux):
    p = _sigmoid(eta)
    zeros = jnp.zeros_like(p) if _is_jax(p) else np.zeros_like(p)
    return p, zeros, 1.0 - p


def _no_aux(*trailing):
    """No extra parameters: an empty array per cell (shape cells x 0 [x 0])."""

    def empty(eta, aux, cells):
        xp = jnp if _is_jax(eta) else np
        return xp.zeros(xp.shape(eta) + trailing)

    return empty


def _initial_aux(first_wins, ties, second_wins):
    return np.zeros((len(np.asarray(ties)), 0))


HALF = OutcomeModel(
    name="half",
    n_aux=0,
    aux_names=(),
    log_likelihood=_log_likelihood,
    score=_score,
    information_weight=_information_weight,
    probabilities=_probabilities,
    aux_score=_no_aux(0),
    aux_information=_no_aux(0, 0),
    cross_information=_no_aux(0),
    initial_aux=_initial_aux,
)
