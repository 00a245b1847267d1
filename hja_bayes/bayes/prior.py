"""The prior predictive of the Bayesian HJA model and the win probabilities it implies.

"Weakly informative" is checked on what the priors say about win probabilities, not
asserted (SPEC §6).  :func:`prior_predictive` draws parameters from the priors (on a data
set's cells), replicated outcomes, and the implied win probabilities of every consensus pair
(``mu_i - mu_j``, a judge of average sensitivity without position bias) and every judge
pair (``S_ki - S_kj``), and of the data's own verdicts with every term (position bias,
self-preference, style) included; :func:`implied_win_probabilities` summarises the share of
each that falls outside [0.1, 0.9].  The default scales of :class:`~hja_bayes.bayes.HJAPriors` are
calibrated on these shares (see its docstring).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import check_integer, check_probability
from ..comparisons import Comparisons
from ..decomposition import canonical_decomposition, check_rank
from ..categories import collapse_counts
from ..errors import ParameterError
from ..likelihood import Cells, cells_of, outcome_model, probabilities
from ..likelihood.terms import design_of, terms_of
from .coordinates import tril_index
from .model import default_chart, hja_model, term_layout
from .outcomes import log_scale_aux
from .predictive import draw_logits, unit_aux
from .priors import HJAPriors, resolve_priors

__all__ = ["PriorPredictive", "implied_win_probabilities", "prior_predictive"]


class PriorPredictive(NamedTuple):
    """Draws from the prior and the prior predictive.

    Attributes
    ----------
    draws : dict name -> ndarray (draws, ...)
        ``gamma``, ``mu``, ``S``, ``beta`` and, at rank r > 0, canonical ``U``, ``V``,
        ``D``; with terms ``coef`` (draws, K, q) and ``theta`` (draws, g); the outcome
        model's parameters by name (natural scale).
    outcomes : ndarray (draws, units, C)
        Replicated counts per unit of the data (its cells, or its (prompt, cell) entries
        with a term that varies by prompt) in the outcome model's categories.
    consensus : ndarray (draws, N(N-1)/2)
        Win probability of item a over item b (a < b) for a judge with gamma = 1 and no
        position bias.
    judge_pairs : ndarray (draws, K N(N-1)/2)
        Win probability of item a over item b (a < b) for every judge (without position
        bias).
    units : ndarray (draws, units)
        Win probability of the first-shown item in every unit of the data, every term
        included (the middle category counted 1/2).
    shares : dict
        ``consensus_outside``, ``judge_outside`` and ``unit_outside``: shares of the
        probabilities outside ``[bounds[0], bounds[1]]``; ``bounds``.
    """

    draws: dict
    outcomes: np.ndarray
    consensus: np.ndarray
    judge_pairs: np.ndarray
    shares: dict
    units: np.ndarray | None = None


def _win(model, eta, aux=None) -> np.ndarray:
    """``p_first + p_tie / 2`` in the three-outcome view of ``model``'s probabilities."""
    three = collapse_counts(np.asarray(probabilities(model, eta, aux), dtype=float))
    return three[..., 0] + 0.5 * three[..., 1]


def _l_free_prior(key, n: int, K: int, r: int, scale: float) -> jax.Array:
    """``n`` draws of the free entries of U's factor L ((K - 1) x r, lower trapezoidal) from
    the model's prior, its Bartlett factor ``prod_a |L_aa|^(r-1-a)`` included (NumPyro's
    Predictive draws sample sites only): the a-th diagonal entry is ``s_U`` times a chi
    variable with ``r - a`` degrees of freedom and a random sign, every other entry
    ``N(0, s_U^2)`` (:func:`~hja_bayes.bayes.model.hja_model`)."""
    rows, cols = tril_index(K - 1, r)
    normal_key, chi_key = jax.random.split(key)
    normal = scale * jax.random.normal(normal_key, (n, len(rows)))
    chi = jnp.sqrt(jax.random.chisquare(chi_key, jnp.arange(r, 0, -1.0), (n, r)))
    diagonal = np.flatnonzero(rows == cols)
    return normal.at[:, diagonal].set(jnp.sign(normal[:, diagonal]) * scale * chi)


def implied_win_probabilities(mu, S, outcome="half") -> tuple[np.ndarray, np.ndarray]:
    """Win probabilities of every item pair a < b: consensus and per judge.

    Parameters
    ----------
    mu : array (draws, N)
    S : array (draws, K, N)
    outcome : str or OutcomeModel
        Its probabilities turn a logit difference into the first-shown item's win
        probability (ties counted 1/2); a model without extra parameters.

    Returns
    -------
    consensus : ndarray (draws, pairs)
    judge_pairs : ndarray (draws, K * pairs)

    Raises
    ------
    ParameterError
        For an outcome model with extra parameters (they differ by judge).
    """
    model = outcome_model(outcome)
    if model.n_aux:
        raise ParameterError(f"implied_win_probabilities needs an outcome model without "
                             f"extra parameters; {model.name!r} has {list(model.aux_names)}")
    mu, S = np.asarray(mu, dtype=float), np.asarray(S, dtype=float)
    if mu.ndim != 2 or S.ndim != 3 or S.shape[0] != mu.shape[0] or S.shape[2] != mu.shape[1]:
        raise ParameterError(f"mu must be (draws, N) and S (draws, K, N) of the same draws and "
                             f"items, got shapes {mu.shape} and {S.shape}")
    a, b = np.triu_indices(mu.shape[-1], k=1)
    consensus = _win(model, mu[:, a] - mu[:, b])
    judge = _win(model, S[:, :, a] - S[:, :, b]).reshape(S.shape[0], -1)
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
    outcome: str = "half",
    style=None,
    self_preference=None,
) -> PriorPredictive:
    """Draw from the prior predictive of the rank-``rank`` model on ``data``'s units.

    Parameters
    ----------
    data : Comparisons
        Its judges, items and units (the counts give each unit's number of comparisons;
        the outcomes are not used).
    rank : int
    position_bias : bool
    priors : HJAPriors
    num_samples : int
    seed : int
    bounds : (float, float)
        The interval of win probabilities counted in ``shares``.
    outcome : {"half", "davidson", "ordinal"}
        The outcome model (for the data's categories).
    style, self_preference : optional
        Linear terms, as :func:`~hja_bayes.fit_hja`'s: their coefficients are drawn from
        their priors, and ``shares["unit_outside"]`` shows what they do to the data's
        own verdicts.

    Returns
    -------
    PriorPredictive

    Raises
    ------
    ParameterError
        For a rank the panel cannot identify, ``num_samples`` not a whole number >= 1,
        ``bounds`` not two probabilities in increasing order, a scale of ``priors`` that is
        not a finite positive number, or ``gamma_scale="empirical"`` (a fit's value).

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
    n = check_integer(num_samples, "num_samples", low=1)
    lo = check_probability(bounds[0], "bounds[0]")
    hi = check_probability(bounds[1], "bounds[1]")
    if not lo < hi:
        raise ParameterError(f"bounds must be (low, high) with low < high, got {bounds!r}")
    if isinstance(priors.gamma_scale, str):
        raise ParameterError(f"gamma_scale={priors.gamma_scale!r} is read from a fit, which the "
                             "prior predictive has not: give a number (for a fit's value, "
                             "bayes.priors.empirical_gamma_scale(fit))")
    priors = resolve_priors(priors, None)  # every scale a finite positive number
    K, N = data.n_judges, data.n_items
    model = outcome_model(outcome, data.categories)
    design = design_of(data, terms_of(position_bias, style, self_preference))
    cells = cells_of(data, outcome=model, design=design)
    layout = term_layout(design)
    key = jax.random.PRNGKey(check_integer(seed, "seed"))
    if r > 1:  # Predictive leaves out factor sites: L's Bartlett factor drawn here
        key, l_key = jax.random.split(key)
        given = {"l_free": _l_free_prior(l_key, n, K, r, float(priors.U_scale))}
        sampler = Predictive(hja_model, posterior_samples=given)
    else:
        sampler = Predictive(hja_model, num_samples=n)
    out = sampler(key, cells, default_chart(K, N), rank=r, position_bias=bool(position_bias),
                  terms=layout, priors=priors, outcome=model)
    S = np.asarray(out["S"])
    draws = {"gamma": np.asarray(out["gamma"]), "mu": np.asarray(out["mu"]), "S": S,
             "beta": np.asarray(out["beta"])}
    draws.update({k: np.asarray(out[k]) for k in ("coef", "theta", *model.aux_names)
                  if k in out})
    if r:
        d = jax.vmap(lambda s: canonical_decomposition(s, r))(S)
        draws.update(U=np.asarray(d.U), V=np.asarray(d.V), D=np.asarray(d.D))
    consensus, judge = implied_win_probabilities(draws["mu"], S)
    Z = draws.get("coef", np.zeros((n, K, 0)))
    eta = draw_logits(S, Z, Cells(*(np.asarray(a) for a in cells)), draws.get("theta"))
    aux = None
    if model.n_aux:
        natural = np.stack([draws[name] for name in model.aux_names], axis=-1)
        aux = unit_aux(log_scale_aux(model, natural), np.asarray(cells.judge))
    units = _win(model, eta, aux)

    def outside(p):
        return float(np.mean((p < lo) | (p > hi)))

    shares = {"consensus_outside": outside(consensus), "judge_outside": outside(judge),
              "unit_outside": outside(units), "bounds": (lo, hi)}
    return PriorPredictive(draws, np.asarray(out["outcomes"]), consensus, judge, shares, units)
