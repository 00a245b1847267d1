"""NUTS for the Bayesian HJA model, from the MAP to an ArviZ ``InferenceData``.

This module runs the sampler; :mod:`~hja_bayes.bayes.align` maps its draws to canonical
coordinates aligned to the MAP and :mod:`~hja_bayes.bayes.assemble` computes the
replicated data and log-likelihood and lays the result out.

Starts and mass matrix
----------------------
By default every chain starts from an independent draw of the Laplace approximation at the
MAP (inflated, in the sampler's raw coordinates; :mod:`hja_bayes.bayes.laplace`), and NUTS
runs in the coordinates that whiten it (the Laplace covariance is the dense inverse mass
matrix), so warm-up only tunes the step size and a diagonal correction.  ``start="map"``
starts every chain at the MAP; ``mass_matrix`` chooses how much warm-up adapts.

Draws are mapped to canonical coordinates and then aligned to the MAP's V
(:func:`~hja_bayes.decomposition.align_decomposition`): column signs and the order of
columns with close D values follow the MAP, never one draw alone.

Parallel chains
---------------
Chains run in parallel (``chain_method="parallel"``) when JAX sees at least as many devices
as chains, and one after the other otherwise.  On a CPU, JAX sees one device unless told
otherwise *before it starts*: call ``numpyro.set_host_device_count(n)`` at the top of the
script, before any JAX computation, e.g.::

    import numpyro
    numpyro.set_host_device_count(4)
    import hja_bayes
    idata = hja_bayes.sample_hja(data, rank=1)

Otherwise the chains run one after the other as one compiled program that maps over them,
its progress bar counting chains rather than iterations.  NumPyro's own sequential method,
with a bar per iteration, compiles the sampler again for every chain and starts each one
outside any compiled program: a 5 x 5 panel with 200 prompts, 4 chains x (100 + 100), took
141 s that way against 78 s with integrated prompt effects, and 22 s against 10 s with
sampled ones (a fixed cost: on 1,000 prompts with sampled effects, 4 x (500 + 1000), both
took about a minute).

The data are compiled into the sampler (XLA folds the cell indices and counts into the
program, several times faster per step than passing them as arguments), so each call
compiles once: about 10 s on a small CPU, more on a loaded one.  ``compile_data=False``
passes them as arguments instead (one program for every data set of the same shape).
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..threads import one_blas_thread
from ..checks import check_choice, check_probability
from ..comparisons import Comparisons
from ..errors import ParameterError
from ..hja import HJAFit
from ..hja.inputs import deprecated_ties
from .align import WEAK_MATCH, align_to_map
from .arrow import arrow_laplace
from .assemble import POINTWISE_LIMIT, assemble
from .diagnose import SAFE_TARGET, warn_on_diagnostics
from .blocks import QUADRATURE
from .chains import chains_bar, one_program
from .integrated import SAMPLING_TOLERANCE
from .laplace import laplace_at, posterior_mode, preconditioned, whitened_starts
from .outcomes import held_aux
from .priors import HJAPriors, resolve_priors
from .problem import (
    build_problem,
    prompt_setting,
    resolve_init,
    start_prompts_at,
    warn_laplace_prompts,
)
from .prompts import marginal_consensus, prompt_start
from .settings import chain_method_for, check_keep_alpha, check_quadrature_use, check_settings

if TYPE_CHECKING:  # pragma: no cover
    import arviz as az

__all__ = ["POINTWISE_LIMIT", "WEAK_MATCH", "PromptMode", "prompt_effects_mode", "sample_hja"]

_EXTRA_FIELDS = ("diverging", "accept_prob", "num_steps", "energy", "potential_energy",
                 "adapt_state.step_size")


@one_blas_thread
def sample_hja(
    data: Comparisons,
    rank: int | Literal["bic", "cv"] = 1,
    *,
    init: HJAFit | None = None,
    position_bias: bool | None = None,
    priors: HJAPriors = HJAPriors(),
    prompt_effects: bool | str | None = None,
    outcome: str | None = None,
    style=None,
    self_preference=None,
    ties: str | None = None,
    num_warmup: int = 500,
    num_samples: int = 1000,
    num_chains: int = 4,
    seed: int = 0,
    target_accept_prob: float | None = None,
    start: Literal["laplace", "map"] = "laplace",
    mass_matrix: Literal["diagonal", "laplace", "adapt"] = "diagonal",
    chain_method: Literal["parallel", "sequential", "vectorized"] | None = None,
    max_pointwise: int = POINTWISE_LIMIT,
    count_warmup: bool = False,
    compile_data: bool = True,
    progress_bar: bool = True,
    quadrature=QUADRATURE,
    keep_alpha: bool | None = None,
) -> "az.InferenceData":
    """Sample the posterior of the Bayesian HJA model with NUTS, starting near the MAP.

    Parameters
    ----------
    data : Comparisons
    rank : int, "bic" or "cv"
        Disagreement rank r; a string selects it by :func:`~hja_bayes.fit_hja` first
        (only without ``init``).
    init : HJAFit, optional
        The MAP the chains start around (default: ``fit_hja(data, rank,
        position_bias=...)``).  Its rank and position bias must match the request; the
        judges it left out (``init.excluded_judges``) are left out of the posterior too.
    position_bias : bool, optional
        Per-judge position bias beta_k (default: as ``init``, else False).
    prompt_effects : {"auto", "sampled", "integrated"} or bool, optional
        Answer-quality random effects per (question, model), their sd tau_i learned per
        model (:mod:`hja_bayes.bayes.prompts`); the posterior then also holds ``alpha``,
        ``tau`` and ``mu_marginal``: ``mu`` is then on the conditional (question-specific)
        scale, ``mu_marginal`` the population-averaged consensus on the scale of ``fit_hja``
        and of the model without prompt effects
        (:func:`~hja_bayes.bayes.prompts.marginal_consensus`).  "sampled": NUTS samples one
        latent effect per answer.  "integrated": NUTS runs over the global parameters only,
        each prompt's answer effects integrated out of the likelihood
        (:mod:`hja_bayes.bayes.integrated`: adaptive Gauss-Hermite quadrature for prompts of
        two to five answers, the Laplace approximation for larger ones), and ``alpha`` drawn
        afterwards, draw by draw, from its conditional posterior.  The two agree (tested);
        the integrated one is the faster where prompts are many with few verdicts each, the
        sampled one where they are fewer or carry many verdicts (see the README's measured
        costs).  "auto" (what None and True mean with clusters): chosen from the data's
        layout by :func:`~hja_bayes.bayes.default_prompt_method`; the choice and why
        are in ``posterior.attrs["prompt_method"]`` and ``["prompt_method_reason"]``.
        False: none.  Default: "auto" when the data carry clusters
        (``Comparisons.from_frame(..., cluster="question_id")``), else False.
    outcome : {"half", "davidson", "ordinal"}, optional
        The outcome model (default: as ``init``, else "half"), as ``fit_hja(...,
        outcome=)``.  Its extra per-judge parameters (Davidson's tie propensity nu_k, the
        ordinal scale's cut-point gaps) are sampled on their unconstrained scale as the site
        ``outcome_aux`` with the outcome model's prior (override: ``HJAPriors.aux_prior``),
        started and dispersed from the MAP with the other parameters; an entry the MAP holds
        at its boundary (nu_k of a judge that never tied) is held there too.  The posterior
        then holds each parameter on its natural scale under its own name (``nu``,
        ``gap_1``, ...), the log-likelihood is per comparison in the model's categories and
        the posterior predictive also replicates the ties (middle category) and, for a scale
        other than three outcomes, each judge's category counts.
    style, self_preference : optional
        Linear terms of the MAP fitted when ``init`` is None (as :func:`~hja_bayes.fit_hja`);
        with ``init`` they must match its terms.  The terms are always those of ``init``:
        their per-judge coefficients (self-preference lambda_k, per-judge style theta_k;
        position bias as ``beta``) are in the posterior as ``coef (judge, term)``, the
        panel-wide ones (shared style) as ``theta (shared_term)``, each with a normal prior
        (:class:`~hja_bayes.bayes.HJAPriors`).  A term that varies by prompt (style) makes
        the likelihood's units the (prompt, cell) entries.
    ties : str, optional
        Deprecated alias of ``outcome``.
    priors : HJAPriors
        Prior scales (see :mod:`hja_bayes.bayes.model`).
    num_warmup, num_samples, num_chains : int
        NUTS warm-up steps, kept draws per chain and chains.  ``num_warmup=0`` skips the
        step-size (and mass) adaptation: the chains run at the step NumPyro picks at their
        start, in the Laplace whitening, which suits checks rather than inference (the
        CLI's ``--warmup`` asks for at least 1).
    seed : int
        Seed of the starting points, the sampler and the posterior predictive draws; the
        same seed gives identical draws.
    target_accept_prob : float, optional
        NUTS step-size adaptation target.  Default 0.8 at rank 0 and 1, 0.95 at rank 2 and
        above: there the posterior's curvature varies more.  MT-Bench at rank 2 gave 13
        divergent transitions at 0.8, all in the chain whose adapted step was largest, with
        the divergent draws in the tails of the weak second V column (its entries at their
        1st/99th posterior percentiles) rather than at small D; PRD Vicuna80 gave 2.  At 0.95
        both had none, for 1-3x the gradients per draw.  The divergence warning says where
        they occurred.
    start : {"laplace", "map"}
        "laplace": each chain starts from an independent draw of the Laplace approximation
        at the MAP, standard deviations inflated 1.5x; "map": every chain starts at the MAP.
    mass_matrix : {"diagonal", "laplace", "adapt"}
        NUTS runs in the Laplace-whitened coordinates (inverse mass matrix = the Laplace
        covariance; with sampled prompt effects built in its arrow shape,
        :mod:`hja_bayes.bayes.arrow`).  "diagonal": warm-up also adapts a diagonal
        rescaling of those coordinates (robust where the posterior is far from its
        Laplace approximation, e.g. an over-specified rank: PRD Vicuna80 at rank 1 had 395
        divergences without it and 0 with it, at no cost where the approximation is good);
        "laplace": fixed, warm-up adapts the step size only; "adapt": a dense mass matrix
        adapted in warm-up windows, starting from the Laplace covariance.
    chain_method : {"parallel", "sequential", "vectorized"}, optional
        Default: "parallel" when JAX has a device per chain (see the module docstring on
        ``numpyro.set_host_device_count``), else "sequential".  Sequential chains run as
        one compiled program mapping over the chains (see the module docstring);
        "parallel" without a device per chain runs so too, with a warning.
    max_pointwise : int
        Largest number of values (draws x comparisons) kept in the ``log_likelihood``
        group; above it the group is left out (:data:`POINTWISE_LIMIT`, 200 MB).
    count_warmup : bool
        Also count the gradient evaluations of warm-up (``posterior.attrs
        ["warmup_gradients"]``); runs warm-up and sampling as two phases, which costs one
        more compilation.
    compile_data : bool
        Compile the data into the sampler (faster steps, one compilation per data set);
        False passes them as arguments.
    progress_bar : bool
        NumPyro's bar per iteration for parallel, vectorized or single chains; a bar
        counting the chains for sequential ones.
    quadrature : sequence of int
        With integrated prompt effects: Gauss-Hermite nodes per dimension for prompts
        whose effects have 1, 2, ... free dimensions (an answer fewer than the prompt has
        answers); larger prompts get the Laplace approximation (default (24, 9, 5, 4);
        ``()``: the Laplace approximation everywhere, which biases tau where prompts have
        few verdicts); node counts of at least 2.  Another rule than the default is an
        error without prompt effects or with sampled ones asked for, a warning where "auto"
        chose sampled ones.
    keep_alpha : bool, optional
        With integrated prompt effects: store the recovered answer effects in the
        posterior as ``alpha`` (default: when draws x answers is at most
        ``max_pointwise``); an error without prompt effects or with sampled ones asked for
        (their draws are the answer effects, always kept; ``False`` is warned about where
        "auto" chose sampled ones).  Left out, they are drawn again, identically (same seed),
        wherever they are needed (:func:`~hja_bayes.bayes.recover.posterior_effects`;
        :func:`~hja_bayes.bayes.psis_loo` only with ``integrate=False`` or for prompts of
        more than ``bayes.loo.EXACT_UNITS`` units).  Left out with the ``log_likelihood``
        group too, the replicated data of a verdict alone on its prompt
        come from its outcome probabilities averaged over its effects, without drawing them
        (the same distribution; :class:`~hja_bayes.bayes.recover.EffectDrawer`).

    Returns
    -------
    arviz.InferenceData
        Laid out as :mod:`hja_bayes.bayes.convert` describes: canonical draws aligned to the
        MAP in ``posterior``, the log-likelihood of every comparison in
        ``log_likelihood``, replicated and observed wins per cell, the cells in
        ``constant_data`` and the sampler statistics.  ``posterior.attrs`` records the
        rank, position bias, outcome model, the likelihood's units (``units``: "cells" or
        "entries"), the MAP negative log-likelihood and BIC, the
        seed, start, mass matrix, chain method, ``sampling_time`` (seconds of the NUTS run:
        compilation, warm-up and draws), ``gradients`` (leapfrog steps of the kept draws),
        ``warmup_gradients`` (with ``count_warmup``, else -1), the shares of draws whose
        U, V columns were flipped (``sign_flip_share``) or reordered
        (``permutation_share``) or either (``aligned_share``) to match the MAP, the share
        whose aligned V has a column at cosine below 0.5 with the MAP's
        (``weak_match_share``), how the log-likelihood was stored (``log_likelihood``)
        and, with integrated prompt effects, the ``quadrature`` rules (nodes per dimension,
        comma-separated; what :func:`~hja_bayes.bayes.psis_loo` integrates with).

    Raises
    ------
    Everything :func:`~hja_bayes.fit_hja` raises, with the same messages (disconnected
    graph, unidentifiable rank, position bias on folded data...), plus
    IdentifiabilityError when ``init`` does not match the request and ParameterError for a
    bad setting.

    Warns
    -----
    ConvergenceWarning
        On divergent transitions, R-hat above 1.01 (the warning names the quantities), or
        when more than 10% of the draws had columns reordered or weakly matched to the
        MAP's; when the smallest D is not separated from zero the warning says so and
        suggests a lower rank.  Sign flips alone are reported, not warned: the largest-|entry|
        rule flips a column whenever its two largest loadings are close with opposite signs,
        and alignment to the MAP undoes exactly that.
    """
    from numpyro.infer import MCMC, NUTS

    start = check_choice(start, "start", ("laplace", "map"))
    mass_matrix = check_choice(mass_matrix, "mass_matrix", ("laplace", "diagonal", "adapt"))
    (num_warmup, num_samples, num_chains, seed, max_pointwise, count_warmup, compile_data,
     progress_bar, quadrature) = check_settings(
        num_warmup, num_samples, num_chains, seed, max_pointwise=max_pointwise,
        count_warmup=count_warmup, compile_data=compile_data, progress_bar=progress_bar,
        quadrature=quadrature, priors=priors)
    outcome = deprecated_ties(ties, outcome)
    init, r, pb, data = resolve_init(data, rank, init, position_bias, outcome, style,
                                      self_preference)
    priors = resolve_priors(priors, init)
    if target_accept_prob is None:
        target_accept_prob = 0.8 if r <= 1 else SAFE_TARGET
    check_probability(target_accept_prob, "target_accept_prob", open_low=True, open_high=True)
    prompt, prompt_reason = prompt_setting(data, prompt_effects, quadrature)
    keep_alpha = check_keep_alpha(keep_alpha, prompt, prompt_reason != "asked for")
    check_quadrature_use(quadrature, prompt, prompt_reason != "asked for")
    if prompt == "integrated":
        warn_laplace_prompts(data, quadrature)
    outcome = init.outcome_model
    # the outcome model's parameters the MAP holds at their boundary stay there
    held = held_aux(data, outcome)
    chain_method = chain_method_for(chain_method, num_chains)
    problem = build_problem(data, init, r, pb, prompt, priors, outcome, held, quadrature)
    params0, answers, potential = problem.params0, problem.answers, problem.potential
    start_time = time.perf_counter()
    if prompt == "sampled":  # the MAP leaves the answer effects and tau out
        params0 = prompt_start(potential, params0, answers)
    elif prompt:  # the mode of the globals' (integrated) posterior, tau included, and
        # the Laplace approximation there (Hessian from differences of the gradient)
        params0, laplace = posterior_mode(potential, params0, laplace=True)
        # every evaluation from here on starts each prompt's Newton iterations at its mode
        # there: the chains stay near it (same potential, fewer iterations); NUTS's
        # gradients stop them sooner (SAMPLING_TOLERANCE) and sum the quadrature rules in
        # single precision
        problem = start_prompts_at(problem, params0, SAMPLING_TOLERANCE, single=True)
    model, args, _, _, potential, request = problem
    if prompt == "sampled":  # one coordinate per answer: the Hessian is an arrow
        laplace = arrow_laplace(potential, params0, answers.question)
    elif not prompt:
        laplace = laplace_at(potential, params0)
    if start == "laplace":
        u0 = whitened_starts(laplace, num_chains, [int(seed), 0x57A27])
    else:
        u0 = np.zeros((num_chains, laplace.mean.shape[0]))
    init_params = {"u": jnp.asarray(u0[0] if num_chains == 1 else u0)}
    _, unravel = ravel_pytree({k: jnp.asarray(params0[k]) for k in laplace.sites})
    whitened = partial(preconditioned, model=model, unravel=unravel,
                       log_sites=("tau",) if prompt == "sampled" else ())
    args = args + (jnp.asarray(laplace.mean), jax.tree.map(jnp.asarray, laplace.scale))
    kernel = NUTS(whitened, dense_mass=mass_matrix == "adapt",
                  target_accept_prob=target_accept_prob,
                  adapt_mass_matrix=mass_matrix != "laplace")
    sequential = chain_method == "sequential" and num_chains > 1
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=partial(one_program, done=chains_bar(
                    num_chains * (2 if count_warmup and num_warmup else 1), progress_bar))
                if sequential else chain_method,
                progress_bar=progress_bar and not sequential,
                jit_model_args=not compile_data)
    key = jax.random.PRNGKey(seed)
    warmup_gradients = 0 if count_warmup and not num_warmup else -1  # nothing to count
    if count_warmup and num_warmup:
        mcmc.warmup(key, *args, init_params=init_params, extra_fields=("num_steps",),
                    collect_warmup=True)
        warmup_gradients = int(np.asarray(mcmc.get_extra_fields()["num_steps"]).sum())
        mcmc.run(mcmc.post_warmup_state.rng_key, *args, extra_fields=_EXTRA_FIELDS)
    else:
        mcmc.run(key, *args, init_params=init_params, extra_fields=_EXTRA_FIELDS)
    samples = mcmc.get_samples(group_by_chain=True)
    samples.pop("u")
    extra = mcmc.get_extra_fields(group_by_chain=True)
    jax.block_until_ready(samples)
    elapsed = time.perf_counter() - start_time

    aligned = align_to_map(samples["S"], r, init.V)
    steps = np.asarray(extra["num_steps"])
    sample_stats = {
        "diverging": np.asarray(extra["diverging"]),
        "acceptance_rate": np.asarray(extra["accept_prob"]),
        "n_steps": steps,
        "tree_depth": np.floor(np.log2(np.maximum(steps, 1))).astype(int) + 1,
        "energy": np.asarray(extra["energy"]),
        "lp": -np.asarray(extra["potential_energy"]),
        "step_size": np.asarray(extra["adapt_state.step_size"]),
    }
    if steps.ndim == 1:  # one chain: keep the (chain, draw) layout
        sample_stats = {k: v[None] for k, v in sample_stats.items()}
    attrs = {"start": start, "mass_matrix": mass_matrix, "chain_method": chain_method,
             "target_accept_prob": float(target_accept_prob),
             "num_warmup": int(num_warmup), "sampling_time": float(elapsed),
             "gradients": int(steps.sum()), "warmup_gradients": warmup_gradients,
             "n_judges": data.n_judges, "n_items": data.n_items,
             "gamma_scale": float(priors.gamma_scale),
             "prompt_method_reason": prompt_reason}
    if prompt == "integrated":  # the rules the integrals used (psis_loo uses them again)
        attrs["quadrature"] = ",".join(str(m) for m in quadrature)
    idata = assemble({k: np.asarray(v) for k, v in samples.items()}, sample_stats, aligned,
                     data, init, request, seed=seed, max_pointwise=max_pointwise, attrs=attrs,
                     keep_alpha=keep_alpha)
    warn_on_diagnostics(idata)
    return idata


class PromptMode(NamedTuple):
    """Point estimate of the prompt-effects model (:func:`prompt_effects_mode`).

    Attributes
    ----------
    gamma : ndarray (K,)
    mu : ndarray (N,)
        Consensus on the conditional (question-specific) scale, as the posterior's ``mu``.
    S : ndarray (K, N)
        Conditional scores.
    tau : ndarray (N,)
        Sd of each model's answer effects.
    mu_marginal : ndarray (N,)
        Population-averaged consensus, as the posterior's ``mu_marginal``.
    """

    gamma: np.ndarray
    mu: np.ndarray
    S: np.ndarray
    tau: np.ndarray
    mu_marginal: np.ndarray


def prompt_effects_mode(data: Comparisons, rank: int = 1, *, init: HJAFit | None = None,
                        priors: HJAPriors = HJAPriors()) -> PromptMode:
    """The prompt-effects model's point estimate, without sampling.

    The point ``sample_hja(data, rank, prompt_effects="sampled")`` builds its Laplace
    approximation at (:func:`~hja_bayes.bayes.prompts.prompt_start`): tau by EM (the
    marginal-likelihood estimate under the Laplace approximation of the answer effects),
    every other parameter at its posterior mode given tau.  It takes seconds where sampling
    takes minutes, so it serves where many refits are needed, e.g. a question bootstrap
    of the prompt-effects model (``benchmarks/bench_bayes_prompts.py``).

    Parameters
    ----------
    data : Comparisons
        With clusters (``Comparisons.from_frame(..., cluster="question_id")``).
    rank : int
    init : HJAFit, optional
        The fixed-effects MAP to start from (default ``fit_hja(data, rank)``).
    priors : HJAPriors

    Returns
    -------
    PromptMode

    Raises
    ------
    ParameterError
        When the data carry no clusters; otherwise as :func:`sample_hja`.
    """
    from numpyro.infer.util import constrain_fn

    if data.clusters is None:
        raise ParameterError("prompt_effects_mode needs clusters: read the data with "
                             "cluster=<question column>")
    init, r, pb, data = resolve_init(data, rank, init, None, None)
    priors = resolve_priors(priors, init)
    outcome = init.outcome_model
    problem = build_problem(data, init, r, pb, True, priors, outcome, held_aux(data, outcome))
    params = prompt_start(problem.potential, problem.params0, problem.answers)
    values = constrain_fn(problem.model, problem.args, {}, params, return_deterministic=True)
    gamma, mu, S, tau = (np.asarray(values[k], dtype=float) for k in ("gamma", "mu", "S", "tau"))
    mu_bar, _ = marginal_consensus(S[None], gamma[None], tau[None])
    return PromptMode(gamma, mu, S, tau, mu_bar[0])
