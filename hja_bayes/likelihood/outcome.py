"""What an outcome model provides: the one interface every layer calls."""

from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = ["OutcomeModel"]


class OutcomeModel(NamedTuple):
    """How a cell's counts depend on its logit ``eta`` (and per-judge extra parameters).

    Every function is pure JAX and works cell-wise; ``aux`` holds the judge's extra outcome
    parameters gathered per cell, shape (cells, n_aux) (n_aux = 0 for models with none).

    Attributes
    ----------
    name : str
        The keyword that selects the model (``fit_hja(..., ties=name)``).
    n_aux : int
        Extra parameters per judge (e.g. 1 for a tie propensity).
    log_likelihood : callable ``(eta, aux, cells) -> (cells,)``
        Log-probability of each cell's counts (constant terms dropped).
    score : callable ``(eta, aux, cells) -> (cells,)``
        Derivative of each cell's log-likelihood in ``eta`` (for gradients and sandwiches).
    information_weight : callable ``(eta, aux, cells) -> (cells,)``
        Expected information about ``eta`` in each cell (``n p (1 - p)`` for Bernoulli).
    probabilities : callable ``(eta, aux) -> (p_first, p_tie, p_second)``
        Probability of each outcome of one comparison.
    """

    name: str
    n_aux: int
    log_likelihood: Callable
    score: Callable
    information_weight: Callable
    probabilities: Callable
