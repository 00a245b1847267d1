"""The prior scales of the Bayesian HJA model, and which prior each block of parameters gets.

:class:`HJAPriors` holds every scale that is not owned elsewhere: the scores' blocks (mu,
gamma, U, the Gram pin of V's raw coordinates), the answer effects of prompt effects, and
the linear terms' coefficients.  The outcome model's extra parameters have the prior their
outcome model declares (:attr:`~hja_bayes.likelihood.OutcomeModel.prior`), which
:func:`aux_prior` returns unless the caller overrides it.  The reasons behind each default
(the implied prior of win probabilities) are in :mod:`hja_bayes.bayes.model`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..checks import check_positive
from ..errors import ParameterError, warn

__all__ = ["EMPIRICAL_GAMMA_FLOOR", "HJAPriors", "aux_prior", "coefficient_scales",
           "empirical_gamma_scale", "resolve_priors"]

#: The smallest spread ``gamma_scale="empirical"`` gives the judges' sensitivities.
EMPIRICAL_GAMMA_FLOOR = 0.1


class HJAPriors(NamedTuple):
    """Prior scales of the Bayesian HJA model (all on the logit scale).

    Attributes
    ----------
    mu_scale : float
        Standard deviation of the centred consensus scores mu (default 1.5).
    gamma_scale : float or "empirical"
        Standard deviation of ``gamma_k - 1`` on the plane ``sum(gamma) = K`` (default 1).
        "empirical": the judges' own spread, estimated from the MAP the sampler starts at
        (:func:`empirical_gamma_scale`), for panels of many judges with few verdicts each
        (a crowd of raters), where sd 1 lets every judge's noise inflate the scores.
    U_scale : float
        Entry scale of the centred Gaussian judge loadings U (default 1).
    beta_scale : float
        Standard deviation of each position bias beta_k (default 1).
    gram_pin : float
        Relative spread of the Gram matrix ``W^T W / (N - 2)`` of the raw V coordinates
        around the identity (default 0.1).  These r(r+1)/2 coordinates do not enter the
        likelihood or the implied prior of any identified quantity; the pin only keeps their
        scale steady so that NUTS sees no funnel.
    tau_scale : float
        Scale of the half-normal prior of each model's tau_i, the sd of its answer-quality
        effects with prompt effects (default 1: tau_i above 2 logits has prior probability
        4.6%).
    log_nu_loc, log_nu_scale : float, optional
        Deprecated: use ``aux_prior``.  When given, they replace the mean and sd of the
        prior of an outcome model's parameter named "nu" (Davidson's log tie propensity),
        whose own prior is N(0, 1.5^2).
    aux_prior : (float, float), optional
        Mean and sd of the normal prior of every extra parameter of the outcome model, on
        its unconstrained scale (default: the outcome model's own ``prior``; Davidson's
        ``log nu_k`` and the ordinal model's log gaps ``log(t_j - t_{j-1})``: N(0, 1.5^2)).
    self_scale : float
        Standard deviation of each judge's self-preference lambda_k (default 1).
    style_scale : float
        Standard deviation of each style coefficient, per judge (``theta_k``) or shared
        (``theta``), on the data's standardised feature differences (default 1).
    coef_scale : float
        Standard deviation of the coefficients of any other linear term (default 1).

    The defaults are calibrated on the implied prior of win probabilities (module
    docstring of :mod:`hja_bayes.bayes.model`): about 30% of consensus pairs and 37% of
    judge pairs fall outside [0.1, 0.9] a priori at rank 1; each further rank adds
    disagreement (44% of judge pairs at rank 2 on 4 judges and 7 models).
    """

    mu_scale: float = 1.5
    gamma_scale: float | str = 1.0
    U_scale: float = 1.0
    beta_scale: float = 1.0
    gram_pin: float = 0.1
    tau_scale: float = 1.0
    log_nu_loc: float | None = None
    log_nu_scale: float | None = None
    aux_prior: tuple | None = None
    self_scale: float = 1.0
    style_scale: float = 1.0
    coef_scale: float = 1.0


def aux_prior(outcome, priors: HJAPriors) -> tuple[float, float]:
    """Mean and sd of the normal prior of every extra parameter of ``outcome``.

    The outcome model's own :attr:`~hja_bayes.likelihood.OutcomeModel.prior`, unless
    ``priors.aux_prior`` overrides it (or, deprecated, ``log_nu_loc`` / ``log_nu_scale``
    for a model whose parameter is named "nu").

    Raises
    ------
    ParameterError
        For a non-positive sd.
    """
    loc, scale = (float(x) for x in outcome.prior)
    old = (priors.log_nu_loc, priors.log_nu_scale)
    if any(x is not None for x in old):
        warn("HJAPriors(log_nu_loc=, log_nu_scale=) is deprecated: use "
             "aux_prior=(loc, scale)", DeprecationWarning)
        if "nu" in outcome.aux_names:
            loc = loc if old[0] is None else float(old[0])
            scale = scale if old[1] is None else float(old[1])
    if priors.aux_prior is not None:
        if len(priors.aux_prior) != 2:
            raise ParameterError(f"aux_prior must be (loc, scale), got {priors.aux_prior!r}")
        loc, scale = (float(x) for x in priors.aux_prior)
    check_positive(scale, "the sd of the outcome parameters' prior")
    return loc, scale


def coefficient_scales(names, priors: HJAPriors) -> np.ndarray:
    """Prior sd of each linear-term coefficient column, by its name.

    ``"position"``: ``beta_scale``; ``"self"``: ``self_scale``; ``"style:<feature>"``:
    ``style_scale``; any other column: ``coef_scale``.
    """
    def scale(name: str) -> float:
        if name == "position":
            return priors.beta_scale
        if name == "self":
            return priors.self_scale
        if name.startswith("style:"):
            return priors.style_scale
        return priors.coef_scale

    return np.array([float(scale(str(n))) for n in names], dtype=float)


def empirical_gamma_scale(fit) -> float:
    """The judges' spread of sensitivities, net of their estimates' noise: the method of
    moments ``sqrt(var(gamma_k) - mean(se(gamma_k)^2))`` over the fit's judges, at least
    :data:`EMPIRICAL_GAMMA_FLOOR`.

    The spread of the estimates is the true one plus their sampling variance; with many
    judges of few verdicts each the latter dominates, and a prior as wide as the estimates
    (the default sd 1) leaves each judge's small-sample inflation in the posterior of mu.
    The estimate ignores its own uncertainty (an empirical-Bayes plug-in), so it suits
    panels of many judges, not five.
    """
    gamma = np.asarray(fit.gamma, dtype=float)
    if gamma.size < 2:
        return 1.0
    se = np.asarray(fit.wald.gamma().se, dtype=float)
    spread = float(np.var(gamma, ddof=1) - np.mean(se ** 2))
    return max(float(np.sqrt(max(spread, 0.0))), EMPIRICAL_GAMMA_FLOOR)


def resolve_priors(priors: HJAPriors, fit) -> HJAPriors:
    """``priors`` with a data-dependent scale (``gamma_scale="empirical"``) replaced by its
    value from ``fit`` (the MAP the sampler starts at); other values are checked.

    Raises
    ------
    ParameterError
        For a ``gamma_scale`` that is neither a positive number nor "empirical", or another
        scale that is not a finite positive number.
    """
    for name in ("mu_scale", "U_scale", "beta_scale", "gram_pin", "tau_scale", "self_scale",
                 "style_scale", "coef_scale"):
        check_positive(getattr(priors, name), name)  # a NaN scale had reached the sampler
    if isinstance(priors.gamma_scale, str):
        if priors.gamma_scale != "empirical":
            raise ParameterError(f"gamma_scale must be a positive number or 'empirical', "
                                 f"got {priors.gamma_scale!r}")
        return priors._replace(gamma_scale=empirical_gamma_scale(fit))
    check_positive(priors.gamma_scale, "gamma_scale")
    return priors
