"""Davidson's (1970) model of three outcomes: first wins, tie, second wins.

Per comparison by judge k with logit ``eta`` of the first-shown item and tie propensity
``nu_k >= 0`` (``lam = log nu_k`` is the free parameter, ``aux`` on the seam):

    P(first)  = e^{eta/2} / Z,   P(tie) = nu_k / Z,   P(second) = e^{-eta/2} / Z,
    Z = e^{eta/2} + e^{-eta/2} + nu_k.

The odds of first over second are still ``e^eta``, so the scores keep their meaning, and
``nu_k = 0`` is Bradley–Terry.  A cell with ``a`` strict first-wins, ``t`` ties and ``b``
strict second-wins (``n = a + t + b``) has the log-likelihood (multinomial coefficient
dropped)

    (a - b) eta / 2 + t lam - n log Z(eta, lam),

an exponential family with sufficient statistics ((a - b)/2, t) and natural parameters
(eta, lam).  Hence it is jointly concave in (eta, lam), its Hessian is minus the expected
information (which does not depend on the counts), and

    score in eta         (a - b)/2 - n (p1 - p2)/2
    score in lam         t - n pt
    information eta      n/4 (p1 + p2 - (p1 - p2)^2)
    information lam      n pt (1 - pt)
    cross (eta, lam)     -n pt (p1 - p2) / 2

with ``p1, pt, p2`` the three probabilities.  ``lam = -inf`` (a judge that never tied:
``nu_k`` fixed at 0) gives the Bernoulli logit model with every function finite.
The functions accept NumPy or JAX arrays and return the same kind.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .outcome import OutcomeModel

__all__ = ["DAVIDSON"]


def _xp(x):
    return jnp if isinstance(x, jax.Array) else np


def _log_nu(aux, eta):
    xp = _xp(eta)
    return xp.asarray(aux)[..., 0]


def _log_partition(eta, lam):
    """``log Z = log(e^{eta/2} + e^{-eta/2} + e^lam)``, stable for any eta and lam = -inf."""
    xp = _xp(eta)
    half = xp.abs(eta) / 2
    top = xp.maximum(half, lam)
    return top + xp.log(xp.exp(half - top) + xp.exp(-half - top) + xp.exp(lam - top))


def _probs(eta, lam):
    xp = _xp(eta)
    log_z = _log_partition(eta, lam)
    return xp.exp(eta / 2 - log_z), xp.exp(lam - log_z), xp.exp(-eta / 2 - log_z)


def _log_likelihood(eta, aux, cells):
    xp = _xp(eta)
    lam = _log_nu(aux, eta)
    tie_term = cells.ties * xp.where(cells.ties > 0, lam, 0.0)  # 0 * (-inf) must stay 0
    return (cells.first_wins - cells.second_wins) * eta / 2 + tie_term \
        - cells.n * _log_partition(eta, lam)


def _score(eta, aux, cells):
    p1, _, p2 = _probs(eta, _log_nu(aux, eta))
    return (cells.first_wins - cells.second_wins) / 2 - cells.n * (p1 - p2) / 2


def _information_weight(eta, aux, cells):
    p1, _, p2 = _probs(eta, _log_nu(aux, eta))
    return cells.n * (p1 + p2 - (p1 - p2) ** 2) / 4


def _probabilities(eta, aux):
    return _probs(eta, _log_nu(aux, eta))


def _aux_score(eta, aux, cells):
    _, pt, _ = _probs(eta, _log_nu(aux, eta))
    return (cells.ties - cells.n * pt)[..., None]


def _aux_information(eta, aux, cells):
    _, pt, _ = _probs(eta, _log_nu(aux, eta))
    return (cells.n * pt * (1 - pt))[..., None, None]


def _cross_information(eta, aux, cells):
    p1, pt, p2 = _probs(eta, _log_nu(aux, eta))
    return (-cells.n * pt * (p1 - p2) / 2)[..., None]


def _initial_aux(first_wins, ties, second_wins):
    """``log nu`` solving the judge's tie rate at eta = 0: ``nu / (2 + nu) = t / n``."""
    ties = np.asarray(ties, dtype=float)
    decisive = np.asarray(first_wins, dtype=float) + np.asarray(second_wins, dtype=float)
    with np.errstate(divide="ignore"):
        lam = np.log(2 * ties) - np.log(np.maximum(decisive, 0.5))
    return np.where(ties > 0, lam, -np.inf)[:, None]


DAVIDSON = OutcomeModel(
    name="davidson",
    n_aux=1,
    aux_names=("nu",),
    log_likelihood=_log_likelihood,
    score=_score,
    information_weight=_information_weight,
    probabilities=_probabilities,
    aux_score=_aux_score,
    aux_information=_aux_information,
    cross_information=_cross_information,
    initial_aux=_initial_aux,
)
