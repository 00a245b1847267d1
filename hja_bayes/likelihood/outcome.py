"""What an outcome model provides: the one interface every layer calls."""

from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = ["OutcomeModel"]


class OutcomeModel(NamedTuple):
    """How a cell's counts depend on its logit ``eta`` (and per-judge extra parameters).

    Every function is pure and works cell-wise on NumPy or JAX arrays (returning the same
    kind); ``aux`` holds the judge's extra outcome parameters gathered per cell, shape
    (cells, n_aux) (n_aux = 0 for models with none, and then ``aux`` may be None).

    **Extra parameters.**  Each extra parameter is a non-negative per-judge quantity (e.g.
    Davidson's tie propensity ``nu_k``) handled on the log scale: ``aux`` is its logarithm,
    free in R, and ``aux = -inf`` means the parameter sits at its boundary 0, where the
    model's functions stay finite (a judge that never tied has ``nu_k`` fixed at 0).  The
    per-cell log-likelihood must be jointly concave in (eta, aux), so that the MAP block
    steps that hold (eta's coefficients, aux) stay convex.

    Attributes
    ----------
    name : str
        The keyword that selects the model (``fit_hja(..., ties=name)``).
    n_aux : int
        Extra parameters per judge (e.g. 1 for a tie propensity).
    aux_names : tuple of str
        Names of the extra parameters on their natural scale (``("nu",)``); they label the
        rows of interval tables.
    log_likelihood : callable ``(eta, aux, cells) -> (cells,)``
        Log-probability of each cell's counts (constant terms dropped).
    score : callable ``(eta, aux, cells) -> (cells,)``
        Derivative of each cell's log-likelihood in ``eta`` (for gradients and sandwiches).
    information_weight : callable ``(eta, aux, cells) -> (cells,)``
        Expected information about ``eta`` in each cell (``n p (1 - p)`` for Bernoulli).
    probabilities : callable ``(eta, aux) -> (p_first, p_tie, p_second)``
        Probability of each outcome of one comparison (``aux`` of shape eta.shape + (n_aux,)).
    aux_score : callable ``(eta, aux, cells) -> (cells, n_aux)``
        Derivative of each cell's log-likelihood in ``aux``.
    aux_information : callable ``(eta, aux, cells) -> (cells, n_aux, n_aux)``
        Expected information about ``aux`` in each cell.
    cross_information : callable ``(eta, aux, cells) -> (cells, n_aux)``
        Expected cross information between ``eta`` and ``aux`` in each cell.
    initial_aux : callable ``(first_wins, ties, second_wins) -> (K, n_aux)``
        A starting value of ``aux`` from each judge's total counts (arrays of shape (K,));
        ``-inf`` where the data put the parameter at its boundary (it is then held there).
    """

    name: str
    n_aux: int
    aux_names: tuple
    log_likelihood: Callable
    score: Callable
    information_weight: Callable
    probabilities: Callable
    aux_score: Callable
    aux_information: Callable
    cross_information: Callable
    initial_aux: Callable
