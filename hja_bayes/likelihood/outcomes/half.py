"""The "ties count 1/2" outcome model (Chatbot Arena's convention, the HJA paper's).

Three categories (first wins, tie, second wins).  With ``p = expit(eta)`` a verdict for the
first-shown item has weight ``log p``, one for the second ``log(1 - p)``, and a tie half of
each: a unit with counts ``(a, t, b)``, ``n = a + t + b`` and ``w = a + t/2`` has

    log-likelihood    w eta - n softplus(eta)        (binomial, without its coefficient)
    score             w - n p
    information       n p (1 - p)

This is a Bernoulli quasi-likelihood, not a model of three outcomes: the tie "log
probability" is a weight, and for sampling a tie has probability 0 (``probabilities``
returns ``(p, 0, 1 - p)``).  No extra parameters.  The functions accept NumPy or JAX arrays
and return the same kind, so small NumPy fits need no compilation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .base import OutcomeModel, is_jax, xp_of

__all__ = ["HALF"]


def _sigmoid(eta):
    if is_jax(eta):
        return jax.nn.sigmoid(eta)
    # NumPy alone, ``exp(min(eta, 0)) / (1 + exp(-|eta|))`` to rounding in both tails, its
    # temporaries reused: half the time of exp(log-sigmoid) (1.5 against 2.8 ms for 200,000
    # units, the Fisher scoring of ``fit.update``); importing scipy.special would cost a
    # fresh process's first update or fit 30 ms (scipy's expit to 4e-15 relative)
    eta = np.asarray(eta, dtype=np.result_type(eta, 1.0))
    d = np.abs(eta, out=np.empty_like(eta))  # arrays, 0-d too, so the steps below go in place
    np.negative(d, out=d)
    np.exp(d, out=d)
    d += 1.0
    p = np.minimum(eta, 0.0, out=np.empty_like(eta))
    np.exp(p, out=p)
    p /= d
    return p


def _log_sigmoid(eta):
    return jax.nn.log_sigmoid(eta) if is_jax(eta) else -_np_softplus(-eta)


def _np_softplus(eta):
    """``log(1 + e^eta)`` in NumPy, stable: twice as fast as ``np.logaddexp(0, eta)`` (2.0
    against 3.9 ms for 200,000 units), equal to it to rounding."""
    return np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))


def _log_probabilities(eta, aux):
    xp = xp_of(eta)
    first, second = _log_sigmoid(eta), _log_sigmoid(-eta)
    return xp.stack([first, (first + second) / 2, second], axis=-1)


def _probabilities(eta, aux):
    xp = xp_of(eta)
    p = _sigmoid(eta)
    return xp.stack([p, xp.zeros_like(p), 1.0 - p], axis=-1)


@jax.custom_jvp
def _softplus(eta):
    """``log(1 + e^eta)``, stable, with ``sigmoid`` as its derivative: cheaper on the CPU
    than ``jax.nn.softplus``, which goes through ``logaddexp`` (with the count columns read
    one by one, the solver's objective over two million units took 56 ms instead of 73 ms,
    its gradient 70 ms instead of 110 ms)."""
    return jnp.maximum(eta, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(eta)))


@_softplus.defjvp
def _softplus_jvp(primals, tangents):
    (eta,), (d,) = primals, tangents
    return _softplus(eta), jax.nn.sigmoid(eta) * d


def _log_likelihood(eta, aux, counts):
    softplus = _softplus(eta) if is_jax(eta) else _np_softplus(eta)
    # the columns one by one, not counts.sum(axis=-1): see Cells.n
    first, tie, second = counts[..., 0], counts[..., 1], counts[..., 2]
    return (first + tie / 2) * eta - (first + tie + second) * softplus


def _derivatives(eta, aux):
    xp = xp_of(eta)
    p = _sigmoid(eta)
    grad = xp.stack([1.0 - p, 0.5 - p, -p], axis=-1)[..., None]
    neg_hess = xp.broadcast_to((p * (1.0 - p))[..., None, None, None], xp.shape(p) + (3, 1, 1))
    return grad, neg_hess


def _information(eta, aux, n):
    # n p (1 - p) directly: the general form stacks three categories' terms per unit
    p = _sigmoid(eta)
    return (n * p * (1.0 - p))[..., None, None]


def _score(eta, aux, counts):
    # w - n p directly: the general form stacks three categories' derivatives per unit
    first, tie, second = counts[..., 0], counts[..., 1], counts[..., 2]
    return ((first + tie / 2) - (first + tie + second) * _sigmoid(eta))[..., None]


def _initial_aux(totals):
    return np.zeros((len(np.asarray(totals)), 0))


HALF = OutcomeModel(
    name="half",
    categories=("first", "tie", "second"),
    aux_names=(),
    log_probabilities=_log_probabilities,
    initial_aux=_initial_aux,
    probabilities=_probabilities,
    log_likelihood=_log_likelihood,
    derivatives=_derivatives,
    information=_information,
    score=_score,
)
