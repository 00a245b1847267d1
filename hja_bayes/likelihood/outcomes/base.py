"""What an outcome model is, and what every layer derives from it.

A verdict falls in one of C ordered categories, the strongest preference for the item shown
first coming first (``("first", "tie", "second")`` for three outcomes; Arena-Hard's
``A>>B, A>B, A=B, B>A, B>>A`` for five).  An :class:`OutcomeModel` says how likely each
category is given the verdict's linear predictor ``eta`` and the judge's extra parameters
``aux``: :attr:`OutcomeModel.log_probabilities`.  The rest is derived here, by JAX unless the
model supplies a faster hand-written version (checked against the derived one in the tests):

* the log-likelihood of a unit with category counts ``y``: ``sum_c y_c log p_c``;
* per category, the gradient of ``log p_c`` and minus its Hessian in ``(eta, aux)``
  (:func:`category_derivatives`), from which come the score ``sum_c y_c grad_c``, the
  expected information ``n sum_c p_c (-hess_c)`` and the sandwich meat
  ``sum_c y_c grad_c grad_c^T`` (each comparison its own unit).

Extra parameters are per judge and unconstrained (the model maps them to its natural
scale, e.g. Davidson's tie propensity ``nu = exp(aux)``); an entry at ``-inf`` sits at its
boundary and is held there (a judge that never tied has ``nu_k = 0``), so the model's
functions must stay finite at ``-inf``.  The log-likelihood must be jointly concave in
(eta, aux), which keeps the MAP's judge step convex.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["OutcomeModel", "category_derivatives", "information", "log_likelihood",
           "probabilities", "score", "sandwich_meat"]


class OutcomeModel(NamedTuple):
    """How a verdict's category depends on its linear predictor ``eta``.

    Attributes
    ----------
    name : str
        The keyword that selects the model (``fit_hja(..., outcome=name)``).
    categories : tuple of str
        Labels of the C ordered categories, the strongest preference for the first-shown
        item first.
    aux_names : tuple of str
        Names of the per-judge extra parameters on their natural scale (``("nu",)``); they
        label interval tables and posterior sites.
    log_probabilities : callable ``(eta, aux) -> (..., C)``
        Log-probability of each category (``aux``: shape ``eta.shape + (n_aux,)``, or None
        for a model without extra parameters).  For the "ties count 1/2" convention, which
        is not a model of three outcomes, these are the weights of its quasi-likelihood
        (see :mod:`~hja_bayes.likelihood.outcomes.half`).
    initial_aux : callable ``(totals) -> (K, n_aux)``
        A start for ``aux`` from each judge's category totals (K, C); ``-inf`` where the data
        put a parameter at its boundary.
    natural : callable ``(aux) -> same shape``
        Elementwise, increasing map of ``aux`` to the natural scale (e.g. ``exp``).
    prior : tuple of float
        Mean and sd of the normal prior of every ``aux`` entry in the Bayesian model.
    probabilities : callable ``(eta, aux) -> (..., C)``, optional
        Category probabilities for sampling and predictive checks (default:
        ``exp(log_probabilities)``).
    log_likelihood : callable ``(eta, aux, counts) -> (...,)``, optional
        A faster ``sum_c counts_c log p_c``.
    derivatives : callable ``(eta, aux) -> (grad, neg_hess)``, optional
        Hand-written :func:`category_derivatives`.
    information : callable ``(eta, aux, n) -> (..., L, L)``, optional
        Hand-written :func:`information`.
    score : callable ``(eta, aux, counts) -> (..., L)``, optional
        Hand-written :func:`score`.
    """

    name: str
    categories: tuple
    aux_names: tuple
    log_probabilities: Callable
    initial_aux: Callable
    natural: Callable = np.exp
    prior: tuple = (0.0, 1.5)
    probabilities: Callable | None = None
    log_likelihood: Callable | None = None
    derivatives: Callable | None = None
    information: Callable | None = None
    score: Callable | None = None

    @property
    def n_categories(self) -> int:
        """C, the number of ordered categories."""
        return len(self.categories)

    @property
    def n_aux(self) -> int:
        """Extra parameters per judge."""
        return len(self.aux_names)


def is_jax(x) -> bool:
    return isinstance(x, jax.Array)


def xp_of(x):
    """``jax.numpy`` for JAX arrays, else ``numpy``."""
    return jnp if is_jax(x) else np


def probabilities(model: OutcomeModel, eta, aux=None):
    """Category probabilities ``(..., C)`` of a verdict with linear predictor ``eta``."""
    if model.probabilities is not None:
        return model.probabilities(eta, aux)
    return xp_of(eta).exp(model.log_probabilities(eta, aux))


def log_likelihood(model: OutcomeModel, eta, aux, counts):
    """``sum_c counts_c log p_c`` per unit (``counts``: (..., C)); an empty category adds 0
    even where its probability is 0."""
    if model.log_likelihood is not None:
        return model.log_likelihood(eta, aux, counts)
    xp = xp_of(eta)
    logp = model.log_probabilities(eta, aux)
    return xp.sum(xp.where(counts > 0, counts * logp, 0.0), axis=-1)


def _derived(model: OutcomeModel, eta, aux):
    """Per-category gradient and minus Hessian of ``log p_c`` in ``(eta, aux)``, by JAX."""
    n_aux = model.n_aux

    def one(x):
        return model.log_probabilities(x[0], x[1:])

    def point(e, a):
        x = jnp.concatenate([e[None], a])
        return jax.jacfwd(one)(x), -jax.hessian(one)(x)

    flat_eta = jnp.ravel(jnp.asarray(eta, dtype=float))
    flat_aux = (jnp.reshape(jnp.asarray(aux, dtype=float), (-1, n_aux)) if n_aux
                else jnp.zeros((flat_eta.size, 0)))
    grad, neg_hess = jax.vmap(point)(flat_eta, flat_aux)
    shape = jnp.shape(eta)
    L = 1 + n_aux
    C = model.n_categories
    return grad.reshape(shape + (C, L)), neg_hess.reshape(shape + (C, L, L))


_derived_jit = jax.jit(_derived, static_argnums=0)


def category_derivatives(model: OutcomeModel, eta, aux=None):
    """Gradient (..., C, L) and minus Hessian (..., C, L, L) of each category's
    ``log p_c`` with respect to ``(eta, aux)`` (L = 1 + n_aux): the model's own, or JAX's.

    NumPy in, NumPy out; the derived version computes in JAX, compiled (called outside a
    compiled program, JAX would otherwise compile each of its operations on its own).
    """
    if model.derivatives is not None:
        return model.derivatives(eta, aux)
    grad, neg_hess = _derived_jit(model, eta, aux)
    if not is_jax(eta):
        return np.asarray(grad), np.asarray(neg_hess)
    return grad, neg_hess


def score(model: OutcomeModel, eta, aux, counts):
    """Derivative of each unit's log-likelihood in ``(eta, aux)``: (..., L)."""
    if model.score is not None:
        return model.score(eta, aux, counts)
    grad, _ = category_derivatives(model, eta, aux)
    return xp_of(eta).einsum("...c,...cl->...l", counts, grad)


def information(model: OutcomeModel, eta, aux, n):
    """Expected information about ``(eta, aux)`` of ``n`` verdicts per unit: (..., L, L),
    ``n sum_c p_c (-d^2 log p_c)``."""
    if model.information is not None:
        return model.information(eta, aux, n)
    xp = xp_of(eta)
    _, neg_hess = category_derivatives(model, eta, aux)
    p = probabilities(model, eta, aux)
    return xp.asarray(n)[..., None, None] * xp.einsum("...c,...clm->...lm", p, neg_hess)


def sandwich_meat(model: OutcomeModel, eta, aux, counts):
    """``sum_c counts_c grad_c grad_c^T``: the per-comparison sandwich's meat, (..., L, L)."""
    grad, _ = category_derivatives(model, eta, aux)
    return xp_of(eta).einsum("...c,...cl,...cm->...lm", counts, grad, grad)
