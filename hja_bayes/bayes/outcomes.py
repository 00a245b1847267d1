"""The cells' outcome counts as a NumPyro distribution, written on the likelihood seam.

:class:`CellOutcomes` is the observation model of :func:`~hja_bayes.bayes.model.hja_model`:
its log-density is the outcome model's :attr:`~hja_bayes.likelihood.OutcomeModel.log_likelihood`
(constant terms dropped, as in the MAP objective) and its sampler draws each cell's
(first_wins, ties, second_wins) from the outcome model's
:attr:`~hja_bayes.likelihood.OutcomeModel.probabilities`, so that the prior and posterior
predictive follow the same model the sampler conditions on.  Nothing here re-derives the
outcome model.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.distributions import constraints

from ..likelihood import Cells, OutcomeModel

__all__ = ["CellOutcomes", "stack_counts"]


def stack_counts(cells: Cells) -> jax.Array:
    """The cells' (first_wins, ties, second_wins) as one (cells, 3) array (the observed value)."""
    return jnp.stack([cells.first_wins, cells.ties, cells.second_wins], axis=-1)


class CellOutcomes(dist.Distribution):
    """Outcome counts of every cell, ``value[c] = (first_wins, ties, second_wins)``.

    Parameters
    ----------
    eta : array (cells,)
        Linear predictor of each cell (:func:`~hja_bayes.likelihood.cell_logits`).
    cells : Cells
        The cells; their counts give the number of comparisons per cell (for sampling),
        the value's counts replace them in :meth:`log_prob`.
    outcome : OutcomeModel
    aux : array (cells, n_aux), optional
        Per-cell extra parameters of the outcome model.
    """

    arg_constraints = {"eta": constraints.real}
    support = constraints.independent(constraints.nonnegative, 1)
    pytree_data_fields = ("eta", "cells", "aux")
    pytree_aux_fields = ("outcome",)

    def __init__(self, eta, cells: Cells, outcome: OutcomeModel, aux=None, *, validate_args=None):
        self.eta, self.cells, self.outcome, self.aux = eta, cells, outcome, aux
        super().__init__(batch_shape=jnp.shape(eta), event_shape=(3,),
                         validate_args=validate_args)

    def log_prob(self, value):
        counts = self.cells._replace(first_wins=value[..., 0], ties=value[..., 1],
                                     second_wins=value[..., 2])
        return self.outcome.log_likelihood(self.eta, self.aux, counts)

    def sample(self, key, sample_shape=()):
        shape = tuple(sample_shape) + self.batch_shape
        p_first, p_tie, p_second = self.outcome.probabilities(self.eta, self.aux)
        n = jnp.broadcast_to(self.cells.n, shape)
        k_first, k_tie = jax.random.split(key)
        # (binomial draws with n = 0 can come back as nan: those cells have no outcome)
        first = jnp.nan_to_num(
            jax.random.binomial(k_first, n, jnp.clip(p_first, 0.0, 1.0), shape=shape))
        rest = n - first
        rest_p = p_tie + p_second
        p_tie_given = jnp.where(rest_p > 0, p_tie / jnp.where(rest_p > 0, rest_p, 1.0), 0.0)
        ties = jnp.nan_to_num(
            jax.random.binomial(k_tie, rest, jnp.clip(p_tie_given, 0.0, 1.0), shape=shape))
        return jnp.stack([first, ties, rest - ties], axis=-1)
