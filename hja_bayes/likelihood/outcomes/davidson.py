"""Davidson's (1970) model of three outcomes: first wins, tie, second wins.

Per comparison by judge k with linear predictor ``eta`` and tie propensity ``nu_k >= 0``
(``lam = log nu_k``, the extra parameter, free in R):

    P(first)  = e^{eta/2} / Z,   P(tie) = nu_k / Z,   P(second) = e^{-eta/2} / Z,
    Z = e^{eta/2} + e^{-eta/2} + nu_k.

The odds of first over second are still ``e^eta``, so the scores keep their meaning, and
``nu_k = 0`` is Bradley–Terry.  The log-likelihood of counts ``(a, t, b)`` is the
exponential family ``(a - b) eta / 2 + t lam - n log Z(eta, lam)``, jointly concave in
(eta, lam), with the same Hessian for every outcome:

    grad log p   first (1/2 - d/2, -pt),  tie (-d/2, 1 - pt),  second (-1/2 - d/2, -pt)
    -Hessian     [[(p1 + p2 - d^2)/4, -pt d/2], [-pt d/2, pt (1 - pt)]],   d = p1 - p2.

``lam = -inf`` (a judge that never tied: ``nu_k`` held at 0) gives Bradley–Terry with every
function finite.  The functions accept NumPy or JAX arrays and return the same kind.
"""

from __future__ import annotations

import numpy as np

from .base import OutcomeModel, xp_of

__all__ = ["DAVIDSON"]


def _log_partition(eta, lam):
    """``log Z = log(e^{eta/2} + e^{-eta/2} + e^lam)``, stable for any eta and lam = -inf."""
    xp = xp_of(eta)
    half = xp.abs(eta) / 2
    top = xp.maximum(half, lam)
    return top + xp.log(xp.exp(half - top) + xp.exp(-half - top) + xp.exp(lam - top))


def _log_probabilities(eta, aux):
    xp = xp_of(eta)
    lam = xp.asarray(aux)[..., 0]
    log_z = _log_partition(eta, lam)
    return xp.stack([eta / 2 - log_z, lam - log_z, -eta / 2 - log_z], axis=-1)


def _log_likelihood(eta, aux, counts):
    xp = xp_of(eta)
    lam = xp.asarray(aux)[..., 0]
    a, t, b = counts[..., 0], counts[..., 1], counts[..., 2]
    tie_term = t * xp.where(t > 0, lam, 0.0)  # 0 * (-inf) must stay 0
    return (a - b) * eta / 2 + tie_term - (a + t + b) * _log_partition(eta, lam)


def _derivatives(eta, aux):
    xp = xp_of(eta)
    p1, pt, p2 = (xp.moveaxis(xp.exp(_log_probabilities(eta, aux)), -1, 0))
    d = p1 - p2
    zero = xp.zeros_like(d)
    grad = xp.stack([xp.stack([0.5 - d / 2, -pt], -1), xp.stack([-d / 2, 1 - pt + zero], -1),
                     xp.stack([-0.5 - d / 2, -pt], -1)], axis=-2)
    cross = -pt * d / 2
    H = xp.stack([xp.stack([(p1 + p2 - d**2) / 4, cross], -1),
                  xp.stack([cross, pt * (1 - pt)], -1)], axis=-2)
    return grad, xp.broadcast_to(H[..., None, :, :], xp.shape(d) + (3, 2, 2))


def _initial_aux(totals):
    """``log nu`` solving the judge's tie rate at eta = 0: ``nu / (2 + nu) = t / n``."""
    totals = np.asarray(totals, dtype=float)
    ties = totals[:, 1]
    decisive = totals[:, 0] + totals[:, 2]
    with np.errstate(divide="ignore"):
        lam = np.log(2 * ties) - np.log(np.maximum(decisive, 0.5))
    return np.where(ties > 0, lam, -np.inf)[:, None]


DAVIDSON = OutcomeModel(
    name="davidson",
    categories=("first", "tie", "second"),
    aux_names=("nu",),
    log_probabilities=_log_probabilities,
    initial_aux=_initial_aux,
    natural=np.exp,
    prior=(0.0, 1.5),
    log_likelihood=_log_likelihood,
    derivatives=_derivatives,
)
