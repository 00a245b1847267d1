"""The outcome model inside the Bayesian model: the counts' distribution and its parameters.

:class:`UnitOutcomes` is the observation model of :func:`~hja_bayes.bayes.model.hja_model`:
the counts of every unit in the outcome model's C ordered categories.  Its log-density is
the seam's :func:`~hja_bayes.likelihood.log_likelihood` (constant terms dropped, as in the
MAP objective) and it samples with :func:`~hja_bayes.likelihood.sample_counts` from the
outcome model's probabilities, so the prior and posterior predictive follow the model the
sampler conditions on.

The outcome model's extra per-judge parameters (:attr:`~hja_bayes.likelihood.OutcomeModel.aux_names`)
are one sample site, ``outcome_aux``, whatever the model: the free entries of the (K,
n_aux) matrix on the unconstrained scale, row by row (judge by judge), each with the normal
prior the outcome model declares (:func:`~hja_bayes.bayes.priors.aux_prior`).  Entries the
MAP holds at their boundary (``-inf``, e.g. the tie propensity of a judge that never tied)
are held there too (:func:`held_aux`).  Each parameter is also recorded on its natural
scale as a deterministic site of its own name, shape (K,): ``nu`` for Davidson ties,
``gap_1``, ``gap_2`` for the five-level ordinal scale.  Nothing here knows which model it
is handling.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from ..likelihood import (
    Cells,
    OutcomeModel,
    counts_for,
    judge_totals,
    log_likelihood,
    probabilities,
    sample_counts,
)

__all__ = ["AUX_SITE", "UnitOutcomes", "held_aux", "is_symmetric", "log_scale_aux",
           "natural_jax", "predicts_middle", "sample_aux", "stack_counts"]

#: The sample site of the outcome model's free extra parameters (unconstrained scale).
AUX_SITE = "outcome_aux"


def stack_counts(cells: Cells) -> jax.Array:
    """The units' counts (units, C): the observed value of :class:`UnitOutcomes`."""
    return jnp.asarray(cells.counts)


class UnitOutcomes(dist.Distribution):
    """Category counts of every unit, ``value[u] = counts (C,)``.

    Parameters
    ----------
    eta : array (units,)
        Linear predictor of each unit (:func:`~hja_bayes.likelihood.linear_predictor`).
    n : array (units,)
        Verdicts per unit (for sampling; the value's counts replace them in
        :meth:`log_prob`).
    outcome : OutcomeModel
    aux : array (units, n_aux), optional
        Each unit's extra outcome parameters (unconstrained scale).
    """

    arg_constraints = {"eta": constraints.real}
    support = constraints.independent(constraints.nonnegative, 1)
    pytree_data_fields = ("eta", "n", "aux")
    pytree_aux_fields = ("outcome",)

    def __init__(self, eta, n, outcome: OutcomeModel, aux=None, *, validate_args=None):
        self.eta, self.n, self.outcome, self.aux = eta, n, outcome, aux
        super().__init__(batch_shape=jnp.shape(eta), event_shape=(outcome.n_categories,),
                         validate_args=validate_args)

    def log_prob(self, value):
        """``sum_c value_c log p_c`` per unit (the seam's log-likelihood)."""
        return log_likelihood(self.outcome, self.eta, self.aux, value)

    def sample(self, key, sample_shape=()):
        """Multinomial counts per unit (:func:`~hja_bayes.likelihood.sample_counts`)."""
        shape = tuple(sample_shape) + self.batch_shape
        p = probabilities(self.outcome, self.eta, self.aux)
        p = jnp.broadcast_to(p, shape + p.shape[-1:])
        return sample_counts(key, jnp.broadcast_to(self.n, shape), p)


def natural_jax(outcome: OutcomeModel):
    """The outcome model's map to the natural scale, traceable by JAX.

    A NumPy ufunc (``np.exp``) is replaced by ``jax.numpy``'s function of the same name;
    any other callable is used as it is (it must then accept JAX arrays).
    """
    f = outcome.natural
    if isinstance(f, np.ufunc) and hasattr(jnp, f.__name__):
        return getattr(jnp, f.__name__)
    return f


def log_scale_aux(outcome: OutcomeModel, natural) -> np.ndarray:
    """The unconstrained ``aux`` of natural-scale values (the inverse of ``natural``).

    The boundary value ``natural(-inf)`` maps to ``-inf``.  ``np.exp`` is inverted by
    ``np.log``; any other increasing map by bisection.
    """
    natural = np.asarray(natural, dtype=float)
    f = outcome.natural
    if f is np.exp:
        with np.errstate(divide="ignore"):
            return np.log(natural)
    lo, hi = np.full(natural.shape, -60.0), np.full(natural.shape, 60.0)
    for _ in range(120):
        mid = (lo + hi) / 2
        below = np.asarray(f(mid)) < natural
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(natural <= np.asarray(f(np.array(-np.inf))), -np.inf, (lo + hi) / 2)


def held_aux(data, outcome: OutcomeModel) -> np.ndarray:
    """Which extra parameters the MAP holds at their boundary, (K, n_aux) bool.

    The MAP's rule (:func:`~hja_bayes.hja.solve.initial_state`): the entries the outcome
    model starts at ``-inf`` from each judge's category totals, e.g. Davidson's ``nu_k``
    of a judge that never tied.
    """
    totals = judge_totals(data.judge, counts_for(data.counts, outcome), data.n_judges)
    start = np.asarray(outcome.initial_aux(totals), dtype=float).reshape(data.n_judges, -1)
    return ~np.isfinite(start)


def sample_aux(outcome: OutcomeModel, held: np.ndarray, prior: tuple[float, float]):
    """Sample the outcome model's extra parameters (inside a NumPyro model).

    Parameters
    ----------
    outcome : OutcomeModel
    held : bool array (K, n_aux)
        Entries held at ``-inf``.
    prior : (loc, scale)
        Normal prior of every free entry.

    Returns
    -------
    jax array (K, n_aux)
        On the unconstrained scale, ``-inf`` where held.  The site :data:`AUX_SITE` holds
        the free entries; one deterministic site per name in ``outcome.aux_names`` holds
        that parameter on its natural scale, shape (K,).
    """
    held = np.asarray(held, dtype=bool)
    K, n_aux = held.shape
    free = np.flatnonzero(~held.ravel())
    loc, scale = prior
    values = numpyro.sample(AUX_SITE, dist.Normal(loc, scale).expand([len(free)]).to_event(1))
    aux = jnp.full(K * n_aux, -jnp.inf, values.dtype).at[free].set(values).reshape(K, n_aux)
    natural = natural_jax(outcome)
    for j, name in enumerate(outcome.aux_names):
        numpyro.deterministic(name, natural(aux[:, j]))
    return aux


def predicts_middle(outcome: OutcomeModel) -> bool:
    """Whether the model gives the middle category (a tie, odd C) positive probability.

    The "ties count 1/2" convention is not a model of ties: it predicts none, so its
    replicated data have none.
    """
    C = outcome.n_categories
    if C % 2 == 0:
        return False
    aux = None if outcome.n_aux == 0 else np.zeros((1, outcome.n_aux))
    p = np.asarray(probabilities(outcome, np.zeros(1), aux), dtype=float)
    return bool(p[0, C // 2] > 0)


def is_symmetric(outcome: OutcomeModel) -> bool:
    """Whether reversing the order of presentation only reverses the categories:
    ``log p_c(eta) = log p_{C-1-c}(-eta)`` (checked at a few points).

    Then the units (k, i, j) and (k, j, i) can be merged, their categories reversed
    (:meth:`~hja_bayes.comparisons.Comparisons.fold_order`), without changing the likelihood
    of any term but the position bias.
    """
    eta = np.array([-2.1, -0.3, 0.0, 0.7, 3.4])
    aux = np.random.default_rng(0).normal(size=(len(eta), outcome.n_aux))
    here = np.asarray(outcome.log_probabilities(eta, aux), dtype=float)
    swapped = np.asarray(outcome.log_probabilities(-eta, aux), dtype=float)[:, ::-1]
    return bool(np.allclose(here, swapped, rtol=1e-10, atol=1e-12))
