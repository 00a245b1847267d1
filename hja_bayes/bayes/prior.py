"""The prior predictive of the Bayesian HJA model and the win probabilities it implies.

"Weakly informative" is checked on what the priors say about win probabilities, not
asserted (SPEC §6).  :func:`prior_predictive` draws parameters from the priors (on a data
set's cells), replicated outcomes, and the implied win probabilities of every consensus pair
(``mu_i - mu_j``, a judge of average sensitivity without position bias) and every judge
pair (``S_ki - S_kj``); :func:`implied_win_probabilities` summarises the share of each that
falls outside [0.1, 0.9].  The default scales of :class:`~hja_bayes.bayes.HJAPriors` are
calibrated on these shares (see its docstring).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from ..checks import check_positive, check_probability
from ..comparisons import Comparisons
from ..decomposition import canonical_decomposition, check_rank
from ..likelihood import cells_of, outcome_model
from .model import HJAPriors, default_chart, hja_model

__all__ = ["PriorPredictive", "implied_win_probabilities", "prior_predictive"]


class PriorPredictive(NamedTuple):
    """Draws from the prior and the prior predictive.

    Attributes
    ----------
    draws : dict name -> ndarray (draws, ...)
        ``gamma``, ``mu``, ``S``, ``beta`` and, at rank r > 0, canonical ``U``, ``V``, ``D``.
    outcomes : ndarray (draws, cells, 3)
        Replicated (first_wins, ties, second_wins) per cell of the data.
    consensus : ndarray (draws, N(N-1)/2)
        Win probability of item a over item b (a < b) for a judge with gamma = 1 and no
        position bias.
    judge_pairs : ndarray (draws, K N(N-1)/2)
        Win probability of item a over item b (a < b) for every judge (without position
        bias).
    shares : dict
        ``consensus_outside`` and ``judge_outside``: shares of the probabilities outside
        ``[bounds[0], bounds[1]]``; ``bounds``.
    """

    draws: dict
    outcomes: np.ndarray
    consensus: np.ndarray
    judge_pairs: np.ndarray
    shares: dict


def implied_win_probabilities(mu, S, outcome="half") -> tuple[np.ndarray, np.ndarray]:
    """Win probabilities of every item pair a < b: consensus and per judge.

    Parameters
    ----------
    mu : array (draws, N)
    S : array (draws, K, N)
    outcome : str or OutcomeModel
        Its ``probabilities`` turn a logit difference into the first-shown item's win
        probability (ties counted 1/2).

    Returns
    -------
    consensus : ndarray (draws, pairs)
    judge_pairs : ndarray (draws, K * pairs)
    """
    model = outcome_model(outcome)
    mu, S = np.asarray(mu, dtype=float), np.asarray(S, dtype=float)
    a, b = np.triu_indices(mu.shape[-1], k=1)

    def win(eta):
        p_first, p_tie, _ = (np.asarray(p, dtype=float) for p in model.probabilities(eta, None))
        return p_first + 0.5 * p_tie

    consensus = win(mu[:, a] - mu[:, b])
    judge = win(S[:, :, a] - S[:, :, b]).reshape(S.shape[0], -1)
    return consensus, judge


def prior_predictive(
    data: Comparisons,
    rank: int,
    *,
    position_bias: bool = False,
    priors: HJAPriors = HJAPriors(),
    num_samples: int = 1000,
    seed: int = 0,
    bounds: tuple[float, float] = (0.1, 0.9),
) -> PriorPredictive:
    """Draw from the prior predictive of the rank-``rank`` model on ``data``'s cells.

    Parameters
    ----------
    data : Comparisons
        Its judges, items and cells (the counts give each cell's number of comparisons;
        the outcomes are not used).
    rank : int
    position_bias : bool
    priors : HJAPriors
    num_samples : int
    seed : int
    bounds : (float, float)
        The interval of win probabilities counted in ``shares``.

    Returns
    -------
    PriorPredictive

    Examples
    --------
    >>> from hja_bayes import simulate
    >>> data, _ = simulate(4, 8, 1, 200, seed=0)
    >>> prior = prior_predictive(data, 1, num_samples=200)
    >>> prior.outcomes.shape == (200, data.n_cells, 3)
    True
    """
    from numpyro.infer import Predictive

    r = check_rank(rank, data.n_judges, data.n_items)
    n = int(check_positive(num_samples, "num_samples"))
    lo = check_probability(bounds[0], "bounds[0]")
    hi = check_probability(bounds[1], "bounds[1]")
    K, N = data.n_judges, data.n_items
    out = Predictive(hja_model, num_samples=n)(
        jax.random.PRNGKey(seed), cells_of(data), default_chart(K, N), rank=r,
        position_bias=bool(position_bias), priors=priors)
    S = np.asarray(out["S"])
    draws = {"gamma": np.asarray(out["gamma"]), "mu": np.asarray(out["mu"]), "S": S,
             "beta": np.asarray(out["beta"])}
    if r:
        d = jax.vmap(lambda s: canonical_decomposition(s, r))(S)
        draws.update(U=np.asarray(d.U), V=np.asarray(d.V), D=np.asarray(d.D))
    consensus, judge = implied_win_probabilities(draws["mu"], S)

    def outside(p):
        return float(np.mean((p < lo) | (p > hi)))

    shares = {"consensus_outside": outside(consensus), "judge_outside": outside(judge),
              "bounds": (lo, hi)}
    return PriorPredictive(draws, np.asarray(out["outcomes"]), consensus, judge, shares)
