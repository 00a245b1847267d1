"""The Bayesian HJA model in NumPyro.

Parameters are sampled in the unconstrained coordinates of
:mod:`~hja_bayes.bayes.coordinates` and mapped onto the HJA constraint set there; the
r(r+1)/2 coordinates of the Gram matrix ``W^T W`` that the likelihood does not see are
pinned by a tight prior that depends on W through ``W^T W`` alone, so it is invariant under
rotations of W and leaves the implied prior on V (uniform on its constraint set) unchanged.

Every unit (a cell, or a (prompt, cell) entry when a term or the prompt effects vary by
prompt) has the linear predictor of the likelihood seam,
``eta = S[k, i] - S[k, j] + Z[k] . X[u] + theta . Xg[u]``
(:func:`~hja_bayes.likelihood.linear_predictor`): ``Z`` (K, q) holds the per-judge term
coefficients (position bias beta_k, self-preference lambda_k, per-judge style theta_k),
``theta`` (g,) the panel-wide ones (shared style); prompt effects add
``gamma_k (alpha_qi - alpha_qj)``.  The unit's counts follow the outcome model
(:mod:`~hja_bayes.bayes.outcomes`), whose extra parameters, priors and names are its own.

Priors (weakly informative; every scale is an argument, see :class:`~hja_bayes.bayes.priors.HJAPriors`):

* ``mu ~ N(0, s_mu^2 (I - 11^T/N))``, the centred Gaussian (``z_mu ~ N(0, s_mu^2 I)``);
* ``gamma - 1 ~ N(0, s_gamma^2 (I - 11^T/K))``;
* ``U``: implied prior of a centred Gaussian K x r matrix with entry scale ``s_U``.  The
  free entries of L are ``N(0, s_U^2)`` and the Bartlett factor ``prod_a |L_aa|^(r-1-a)``
  accounts for the rotation that was removed, so ``U V^T`` has exactly the prior it would
  have with a full Gaussian U;
* ``V`` uniform on ``{V : V^T 1 = 0, V^T mu = 0, V^T V = N I}`` given mu;
* ``beta_k ~ N(0, s_beta^2)`` independently (only with position bias);
* the other per-judge term coefficients, each free entry independently: self-preference
  ``lambda_k ~ N(0, s_self^2)``, per-judge style ``theta_kf ~ N(0, s_style^2)``; shared
  style ``theta_f ~ N(0, s_style^2)`` (:func:`~hja_bayes.bayes.priors.coefficient_scales`);
  an entry the design holds (a judge without a model of its own) stays at 0;
* the outcome model's extra parameters, each free entry ``~ N(loc, sd^2)`` on its
  unconstrained scale with the outcome model's own ``prior`` (N(0, 1.5^2) for those
  shipped; :func:`~hja_bayes.bayes.priors.aux_prior`); this module does not know what they
  are;
* with prompt effects (:mod:`hja_bayes.bayes.prompts`), ``tau_i ~ HalfNormal(s_tau)`` per
  model and one answer effect ``alpha_qi = tau_i z_qi``, ``z_qi ~ N(0, 1)`` per (question,
  model); either sampled, or integrated out of the likelihood one prompt at a time
  (:mod:`hja_bayes.bayes.integrated`), which leaves the same posterior of everything else.
  Sampled effects put tau on NUTS's usual log scale (raw site ``tau``); integrated ones
  sample the raw site ``tau_folded ~ N(0, s_tau^2)`` and record ``tau = |tau_folded|``,
  the same half-normal prior, in a coordinate whose curvature stays moderate where the
  data leave tau near 0 (:data:`FOLDED_TAU`).

Implied prior of win probabilities (the calibration target of the default scales): a pair's
win probability should be free to be lopsided without the prior preferring it.  Uniform
win probabilities put 20% of pairs outside [0.1, 0.9]; the defaults aim at about 30% for
consensus pairs ``expit(mu_i - mu_j)`` and at most 40% for judge pairs
``expit(S_ki - S_kj)``.  Achieved, by :func:`~hja_bayes.bayes.prior_predictive` at K=4,
N=8, r=1 (4,000 draws): 29.8% and 37.5%.  (The earlier defaults, s_mu = 3 and s_U = 2, put
60% and 62% there: a strong prior for near-certain verdicts.)  For one consensus pair the
share is exact: ``mu_i - mu_j ~ N(0, 2 s_mu^2)``, so it is ``2 Phi(-logit(0.9) / (s_mu
sqrt 2)) = 0.30`` at s_mu = 1.5.  Also implied: ``gamma_k < 0`` (a judge reversing the
consensus) with prior probability 12%, and a residual ``|U V^T|_F`` about 0.45 times the
consensus part ``|gamma mu^T|_F`` (median), the range seen on MT-Bench and Chatbot Arena.

The linear terms widen the prior of a verdict's logit, each by its own coefficient times
its column.  One coefficient at its prior sd (1) moves a win probability from 1/2 to
``expit(1) = 0.73`` per unit of its column, and puts ``2 Phi(-logit(0.9)) = 2.8%`` of the
verdicts with a unit column value outside [0.1, 0.9] by itself; the length coefficient
measured on PRD (1.6 per standardised unit, SPEC §10) is 1.6 prior sd out, so the prior
leaves it possible.  On the data's own verdicts (``shares["unit_outside"]`` of
:func:`~hja_bayes.bayes.prior_predictive`, 4,000 draws, K=3, N=5, r=1, one style feature
whose differences have sd 1.3, two of three judges owning a model): 38% outside [0.1, 0.9]
without terms, 42% with position bias, 39% with self-preference, 43% with style (shared or
per judge), 47% with all three, against 37.5% for judge pairs: the terms make lopsided
verdicts somewhat more likely a priori without dominating the scores' prior.

The sampled coordinates are not identified (column signs of U and V are free), so draws are
mapped through :func:`~hja_bayes.decomposition.canonicalize` afterwards (see
:mod:`hja_bayes.bayes.align`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ..decomposition import compose
from ..errors import ParameterError
from ..likelihood import Cells, OutcomeModel, linear_predictor, outcome_model
from .coordinates import (
    Chart,
    RawCoordinates,
    chart_at,
    constrain,
    default_chart,
    raw_sizes,
    tril_index,
    unconstrain,
)
from .outcomes import UnitOutcomes, sample_aux
from .priors import HJAPriors, aux_prior, coefficient_scales
from .integrated import prompt_log_likelihood, prompt_modes
from .prompts import prompt_offsets

__all__ = [
    "FOLDED_TAU",
    "HJAPriors",
    "Chart",
    "RawCoordinates",
    "TermLayout",
    "default_chart",
    "chart_at",
    "constrain",
    "unconstrain",
    "hja_model",
    "raw_sizes",
    "term_layout",
]

#: The design column of the position bias (its coefficients are the site ``beta_raw``).
POSITION = "position"
#: Raw site of tau with integrated prompt effects: ``tau = |tau_folded|``, ``tau_folded ~
#: N(0, s_tau^2)``, which is ``tau ~ HalfNormal(s_tau)`` exactly.  The integrated likelihood
#: depends on tau only through tau^2, so it is smooth in tau_folded, 0 included, and the
#: posterior is symmetric in its sign (every recorded quantity sees |tau_folded| only).  On
#: the log scale the curvature of the potential grows with tau^2 from near 0, where the
#: prior's exponential tail rules, so a posterior that reaches from there to where the data
#: speak (Chatbot Arena: tau_i 0.1-0.8 with posterior sd 0.6-0.8 times its mean) forces
#: NUTS into small steps.  Measured in ``benchmarks/bench_bayes_integrated.py``
#: (``--parts arena``).
FOLDED_TAU = "tau_folded"


class TermLayout(NamedTuple):
    """Which linear-term coefficients the model samples (static: names and shapes).

    Attributes
    ----------
    names : tuple of str
        The per-judge coefficient columns of ``Z`` (K, q), as the design's ``names``.
    free : bool ndarray (K, q)
        Entries that are sampled; the others are held at 0.
    global_names : tuple of str
        The panel-wide coefficients ``theta`` (g,).
    """

    names: tuple = ()
    free: np.ndarray | None = None
    global_names: tuple = ()


def term_layout(design) -> TermLayout:
    """The :class:`TermLayout` of a :class:`~hja_bayes.likelihood.terms.Design`."""
    return TermLayout(tuple(design.names), np.asarray(design.free, dtype=bool),
                      tuple(design.global_names))


def _layout(cells: Cells, terms: TermLayout | None, position_bias: bool, K: int):
    """The layout of the coefficients, checked against the units' design.

    Without ``terms`` the units may come without a design (``cells_of(data)``): with
    ``position_bias`` the position column (ones) is added to them here.
    """
    q, g = cells.X.shape[-1], cells.Xg.shape[-1]
    if terms is None:
        names = (POSITION,) if position_bias else ()
        terms = TermLayout(names, np.ones((K, len(names)), dtype=bool), ())
        if position_bias and q == 0:
            m = cells.judge.shape[0]
            cells = cells._replace(X=jnp.ones((m, 1)), free=jnp.ones((K, 1)),
                                   penalty=jnp.full(1, jnp.nan))
            q = 1
    elif position_bias and POSITION not in terms.names:
        raise ParameterError("position_bias=True but the terms have no position column")
    free = np.ones((K, len(terms.names)), bool) if terms.free is None else terms.free
    terms = terms._replace(free=np.asarray(free, dtype=bool).reshape(K, len(terms.names)))
    if q != len(terms.names) or g != len(terms.global_names):
        raise ParameterError(
            f"the units' design has {q} per-judge and {g} panel-wide columns, the terms "
            f"{list(terms.names)} and {list(terms.global_names)}: lay both out from one "
            "design (cells_of(data, design=d), term_layout(d))")
    return cells, terms


def _coefficients(terms: TermLayout, priors: HJAPriors, K: int, dtype):
    """Sample the term coefficients: ``Z`` (K, q), the position column's raw values (K,) or
    an empty array, and ``theta`` (g,) or None."""
    q = len(terms.names)
    scales = coefficient_scales(terms.names, priors)
    p = terms.names.index(POSITION) if POSITION in terms.names else None
    if p is not None:
        with numpyro.plate("judge", K):
            beta = numpyro.sample("beta_raw", dist.Normal(0.0, priors.beta_scale))
    else:
        beta = jnp.zeros(0, dtype)
    Z = jnp.zeros((K, q), dtype)
    if p is not None:
        Z = Z.at[:, p].set(beta)
    others = [c for c in range(q) if c != p]
    # the other columns' free entries, column by column (judge by judge within a column)
    cols, rows = np.nonzero(terms.free[:, others].T) if others else (np.zeros(0, int),) * 2
    if len(rows):
        cols = np.asarray(others)[cols]
        coef = numpyro.sample("coef_raw", dist.Normal(0.0, jnp.asarray(scales[cols]))
                              .to_event(1))
        Z = Z.at[rows, cols].set(coef)
    theta = None
    if terms.global_names:
        scales = coefficient_scales(terms.global_names, priors)
        theta = numpyro.sample("theta_raw", dist.Normal(0.0, jnp.asarray(scales)).to_event(1))
    return Z, beta, theta


def hja_model(
    cells: Cells,
    chart: Chart,
    obs: jax.Array | None = None,
    *,
    rank: int,
    position_bias: bool = False,
    terms: TermLayout | None = None,
    priors: HJAPriors = HJAPriors(),
    outcome: str | OutcomeModel = "half",
    answers=None,
    held=None,
    integrated=None,
) -> None:
    """NumPyro model of the rank-``rank`` HJA panel with linear terms and any outcome model.

    Every unit ``u`` (judge k, items i, j) has the linear predictor
    ``eta_u = S[k, i] - S[k, j] + Z[k] . X[u] + theta . Xg[u]``
    (:func:`~hja_bayes.likelihood.linear_predictor`) and its counts follow the outcome
    model (:class:`~hja_bayes.bayes.outcomes.UnitOutcomes`).  ``S = gamma mu^T + U V^T`` is
    built by :func:`~hja_bayes.bayes.coordinates.constrain` from the raw sites ``z_mu``,
    ``z_gamma``, ``l_free``, ``w``; priors as in the module docstring.

    Parameters
    ----------
    cells : Cells
        The units with their design (:func:`~hja_bayes.likelihood.cells_of` with
        ``outcome=`` and ``design=``); their counts give each unit's number of
        comparisons, the observed counts are passed as ``obs``.  Units with ``n = 0``
        contribute nothing.
    chart : Chart
        Bases of the map (:func:`chart_at` or :func:`default_chart`).
    obs : array (units, C) or None
        Observed counts per category (:func:`~hja_bayes.bayes.outcomes.stack_counts`);
        None samples them (prior or posterior predictive).
    rank : int
        Disagreement rank r.
    position_bias : bool
        Whether each judge has a position bias beta_k.  With ``terms`` it must agree with
        them; without, units that carry no design get the position column here.
    terms : TermLayout, optional
        The coefficients of the units' design (:func:`term_layout`); default: the position
        bias alone, or nothing.  The position column's coefficients are the site
        ``beta_raw`` (K,); the other per-judge columns' free entries the site ``coef_raw``
        (column by column); the panel-wide ones the site ``theta_raw`` (g,).
    priors : HJAPriors
        Prior scales.
    outcome : str or OutcomeModel
        The outcome model or its keyword (:func:`~hja_bayes.likelihood.outcome_model`);
        one with extra parameters adds the site ``outcome_aux`` and one deterministic
        site per parameter name (:func:`~hja_bayes.bayes.outcomes.sample_aux`).
    answers : (first, second, item), optional
        Prompt effects: ``cells`` are then (question, cell) entries, ``first[e]`` and
        ``second[e]`` index the answers shown in entry e and ``item[a]`` is the model of
        answer a (:func:`~hja_bayes.bayes.prompts.entry_answers`); adds the sites ``tau``
        (one per model), ``z_alpha`` and the deterministic ``alpha``.
    integrated : Integrated, optional
        With ``answers`` and observed counts: the answer effects are integrated out of the
        likelihood, one integral per prompt (:mod:`~hja_bayes.bayes.integrated`), instead
        of sampled; the model then has the site ``tau`` and the factor ``prompt_effects``
        in place of ``z_alpha``, ``alpha`` and ``outcomes``.  Without ``obs`` (prior or
        posterior predictive) the effects are sampled as without it.
    held : bool array (K, n_aux), optional
        The outcome parameters held at their boundary (``-inf``), as the MAP holds them
        (:func:`~hja_bayes.bayes.outcomes.held_aux`).  Default: none.

    Deterministic sites ``gamma``, ``mu``, ``U``, ``V`` (raw orientation), ``S`` and
    ``beta`` are recorded, ``coef`` (K, q) with terms and ``theta`` (g,) with panel-wide
    ones; the observed site is
    ``outcomes``, in the plate ``cell``.  NumPyro's ``Predictive`` draws sample sites
    only, without the factor sites: from rank 2 on the prior of ``U`` needs its Bartlett
    factor, which :func:`~hja_bayes.bayes.prior.prior_predictive` draws.

    Examples
    --------
    >>> import jax
    >>> from numpyro.infer import Predictive
    >>> from hja_bayes import simulate
    >>> from hja_bayes.likelihood import cells_of
    >>> data, _ = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=50)
    >>> prior = Predictive(hja_model, num_samples=4)(
    ...     jax.random.PRNGKey(0), cells_of(data), default_chart(3, 5), rank=1)
    >>> prior["outcomes"].shape == (4, data.n_cells, 3)
    True
    """
    outcome = outcome_model(outcome)
    item_basis, judge_basis = chart
    N, K = item_basis.shape[0], judge_basis.shape[0]
    if cells.counts.shape[-1] != outcome.n_categories:
        raise ParameterError(
            f"the units carry {cells.counts.shape[-1]} categories, the outcome model "
            f"{outcome.name!r} reads {outcome.n_categories}: make them with "
            "cells_of(data, outcome=...)")
    cells, terms = _layout(cells, terms, position_bias, K)
    r = rank
    sizes = raw_sizes(K, N, r)
    z_mu = numpyro.sample("z_mu", dist.Normal(0.0, priors.mu_scale).expand([N - 1]).to_event(1))
    if isinstance(priors.gamma_scale, str):
        raise ParameterError(f"gamma_scale={priors.gamma_scale!r} is read from a fit: "
                             "sample_hja resolves it (bayes.priors.resolve_priors)")
    z_gamma = numpyro.sample(
        "z_gamma", dist.Normal(0.0, priors.gamma_scale).expand([K - 1]).to_event(1))
    if r > 0:
        l_free = numpyro.sample(
            "l_free", dist.Normal(0.0, priors.U_scale).expand([sizes["l_free"]]).to_event(1))
        rows, cols = tril_index(K - 1, r)
        diag = l_free[np.flatnonzero(rows == cols)]
        exponents = np.arange(r - 1, -1, -1, dtype=float)
        if r > 1:  # Bartlett factor of the removed rotation
            numpyro.factor("l_rotation", jnp.sum(exponents * jnp.log(jnp.abs(diag))))
        w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([N - 2, r]).to_event(2))
        gram = w.T @ w / (N - 2)
        numpyro.factor("w_gram_pin",
                       -0.5 * jnp.sum((gram - jnp.eye(r)) ** 2) / priors.gram_pin**2)
    else:
        l_free = jnp.zeros(0)
        w = jnp.zeros((N - 2, 0))
    Z, beta_raw, theta = _coefficients(terms, priors, K, z_mu.dtype)
    gamma, mu, U, V, beta = constrain(RawCoordinates(z_mu, z_gamma, l_free, w, beta_raw),
                                      chart, r)
    S = compose(gamma, mu, U, V)
    for name, value in (("gamma", gamma), ("mu", mu), ("U", U), ("V", V), ("S", S),
                        ("beta", beta)):
        numpyro.deterministic(name, value)
    if terms.names:
        numpyro.deterministic("coef", Z)
    if theta is not None:
        numpyro.deterministic("theta", theta)
    eta = linear_predictor(S, Z, cells, theta)
    aux = None
    if outcome.n_aux:
        held = np.zeros((K, outcome.n_aux), bool) if held is None else np.asarray(held, bool)
        aux = sample_aux(outcome, held.reshape(K, outcome.n_aux),
                         aux_prior(outcome, priors))[cells.judge]
    if answers is not None:
        first, second, item = answers
        if integrated is not None:
            folded = numpyro.sample(FOLDED_TAU, dist.Normal(0.0, priors.tau_scale)
                                    .expand([N]).to_event(1))
            tau = numpyro.deterministic("tau", jnp.abs(folded))
        else:
            tau = numpyro.sample("tau", dist.HalfNormal(priors.tau_scale).expand([N]).to_event(1))
        if integrated is not None and obs is not None:
            pieces = (integrated.blocks, eta, gamma[cells.judge], aux, obs, tau[item], outcome)
            if integrated.record_modes:
                for b, mode in enumerate(prompt_modes(*pieces, starts=integrated.starts)):
                    numpyro.deterministic(f"prompt_mode_{b}", mode)
            numpyro.factor("prompt_effects", prompt_log_likelihood(
                *pieces, integrated.starts, integrated.tolerance, integrated.single))
            return
        z_alpha = numpyro.sample("z_alpha",
                                 dist.Normal(0.0, 1.0).expand([item.shape[0]]).to_event(1))
        alpha = numpyro.deterministic("alpha", tau[item] * z_alpha)
        eta = eta + prompt_offsets(gamma, alpha, cells.judge, first, second)
    with numpyro.plate("cell", eta.shape[0]):
        numpyro.sample("outcomes", UnitOutcomes(eta, cells.n, outcome, aux), obs=obs)
