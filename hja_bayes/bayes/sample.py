"""NUTS for the Bayesian HJA model, from the MAP to an ArviZ ``InferenceData``.

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

The data are compiled into the sampler (XLA folds the cell indices and counts into the
program, several times faster per step than passing them as arguments), so each call
compiles once: about 10 s on a small CPU, more on a loaded one.  ``compile_data=False``
passes them as arguments instead (one program for every data set of the same shape).
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Callable, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from scipy import sparse

from ..comparisons import Comparisons
from ..decomposition import Decomposition, align_decomposition, canonical_decomposition, check_rank
from ..checks import check_choice, check_positive, check_probability
from ..errors import IdentifiabilityError, ParameterError
from ..hja import HJAFit, check_fit_inputs, fit_hja
from ..likelihood import Cells, cells_of, outcome_model
from .convert import to_inference_data
from .diagnose import SAFE_TARGET, warn_on_diagnostics
from .laplace import laplace_at, preconditioned, whitened_starts
from .model import HJAPriors, chart_at, hja_model, unconstrain
from .outcomes import stack_counts
from .predictive import (OUTCOMES, comparison_index, outcome_log_likelihood, replicate_outcomes,
                         unit_aux, unit_logits)
from .prompts import entry_units, marginal_consensus, prompt_start

if TYPE_CHECKING:  # pragma: no cover
    import arviz as az

__all__ = ["POINTWISE_LIMIT", "WEAK_MATCH", "PromptMode", "prompt_effects_mode", "sample_hja"]

#: Largest number of values (draws x comparisons) stored in the ``log_likelihood`` group
#: (25 million float64 values = 200 MB); above it the group is left out (PSIS-LOO by
#: :func:`~hja_bayes.bayes.psis_loo` does not need it).
POINTWISE_LIMIT = 25_000_000

#: An aligned V column whose cosine with the MAP's column is below this is "weakly matched".
WEAK_MATCH = 0.5

_EXTRA_FIELDS = ("diverging", "accept_prob", "num_steps", "energy", "potential_energy",
                 "adapt_state.step_size")


@partial(jax.jit, static_argnums=1)
def _canonical_draws(S_raw: jax.Array, rank: int) -> Decomposition:
    """Canonical decomposition of every draw of S, shape (chain, draw, K, N)."""
    flat = S_raw.reshape((-1,) + S_raw.shape[2:])
    d = jax.vmap(lambda s: canonical_decomposition(s, rank))(flat)
    return Decomposition(*(x.reshape(S_raw.shape[:2] + x.shape[1:]) for x in d))


def _resolve_init(data, rank, init, position_bias, ties):
    """Validate the input exactly as fit_hja does and return (init fit, rank, position_bias)."""
    if init is None:
        pb = bool(position_bias) if position_bias is not None else False
        init = fit_hja(data, rank, position_bias=pb, ties="half" if ties is None else ties)
        return init, init.rank, pb
    if not isinstance(init, HJAFit):
        raise ParameterError(f"init must be an HJAFit (from fit_hja), got {type(init).__name__}")
    pb = init.position_bias if position_bias is None else bool(position_bias)
    check_fit_inputs(data, pb)
    if isinstance(rank, str):
        raise IdentifiabilityError(
            f"rank {rank!r} selects a rank by fitting; with an explicit init pass its rank "
            f"({init.rank})")
    r = check_rank(rank, data.n_judges, data.n_items)
    if init.rank != r or init.position_bias != pb:
        raise IdentifiabilityError(
            f"init is a rank-{init.rank} fit with position_bias={init.position_bias}, but "
            f"rank {r} with position_bias={pb} was requested")
    if ties is not None and outcome_model(ties).name != init.ties:
        raise ParameterError(f"init was fitted with ties={init.ties!r}, but ties={ties!r} was "
                             f"requested: fit the MAP with fit_hja(..., ties={ties!r})")
    if (init.judges, init.items) != (data.judges, data.items):
        raise IdentifiabilityError("init was fitted to data with other judges or items")
    return init, r, pb


def _units(data, prompt: bool):
    """Likelihood units of ``data``: its cells, or its (question, cell) entries with answers."""
    if not prompt:
        cells = cells_of(data)
        return Cells(*(np.asarray(a) for a in cells)), None, np.arange(data.n_cells)
    return entry_units(data)


def _predictive(S, beta, gamma, alpha, nu, data, prompt, outcome, seed, max_pointwise):
    """Replicated wins and ties per cell and, within the size limit, the per-comparison
    log-likelihood (``nu``: Davidson tie propensities per draw, or None)."""
    chains, draws = S.shape[:2]
    units, answers, unit_cell = _units(data, prompt)
    counts = np.stack([units.first_wins, units.ties, units.second_wins], axis=-1)
    integral = np.allclose(counts, np.rint(counts))
    n_comparisons = int(np.rint(counts).sum()) if integral else 0
    keep_pointwise = integral and chains * draws * n_comparisons <= max_pointwise
    index = comparison_index(counts) if keep_pointwise else None
    flat = [x.reshape((chains * draws,) + x.shape[2:]) for x in (S, beta, gamma, alpha)]
    flat_nu = None if nu is None else nu.reshape((chains * draws,) + nu.shape[2:])
    replicated = np.zeros((chains * draws, data.n_cells), dtype=np.float32)
    replicated_ties = np.zeros((chains * draws, data.n_cells), dtype=np.float32)
    pointwise = np.empty((chains * draws, n_comparisons)) if keep_pointwise else None
    rng = np.random.default_rng([int(seed), 0x5EED])
    to_cells = sparse.csr_matrix((np.ones(len(unit_cell)), (np.arange(len(unit_cell)), unit_cell)),
                                 shape=(len(unit_cell), data.n_cells))
    step = 256
    for start in range(0, chains * draws, step):
        stop = min(start + step, chains * draws)
        S_, beta_, gamma_, alpha_ = (x[start:stop] for x in flat)
        terms = (gamma_, alpha_, answers.first, answers.second) if prompt else None
        eta = unit_logits(S_, beta_, units, terms)
        aux = None if flat_nu is None else unit_aux(flat_nu[start:stop], units.judge)
        rep = replicate_outcomes(eta, units.n, outcome, rng, aux)
        wins = rep[..., 0] + 0.5 * rep[..., 1]
        replicated[start:stop] = wins if not prompt else (to_cells.T @ wins.T).T
        replicated_ties[start:stop] = (rep[..., 1] if not prompt
                                       else (to_cells.T @ rep[..., 1].T).T)
        if keep_pointwise:
            ll = outcome_log_likelihood(eta, outcome, aux)
            pointwise[start:stop] = ll.reshape(stop - start, -1)[:, index]
    replicated = replicated.reshape(chains, draws, -1)
    replicated = (replicated, replicated_ties.reshape(chains, draws, -1))
    if not keep_pointwise:
        why = ("counts are not whole numbers" if not integral else
               f"{chains * draws} draws x {n_comparisons} comparisons exceed the limit of "
               f"{max_pointwise} values")
        return replicated, None, None, why
    pointwise = pointwise.reshape(chains, draws, -1)
    labels = {"unit": index // 3, "cell": unit_cell[index // 3],
              "outcome": np.asarray(OUTCOMES)[index % 3]}
    return replicated, pointwise, labels, "per comparison"


class _Problem(NamedTuple):
    """The NumPyro model of a request, its data arguments, the raw starting point (the MAP;
    answer effects at 0) and the potential energy of the raw sites."""

    model: Callable
    args: tuple
    params0: dict
    answers: object
    potential: Callable


def _problem(data, init, r, pb, prompt, priors, outcome, tied) -> _Problem:
    from numpyro.infer.util import potential_energy

    N = data.n_items
    reference = Decomposition(init.gamma, init.mu, init.U, init.V, init.D)
    chart = chart_at(reference)
    raw0 = unconstrain(reference, init.beta if pb else None, chart)
    params0 = {"z_mu": raw0.z_mu, "z_gamma": raw0.z_gamma}
    if r > 0:
        params0.update(l_free=raw0.l_free, w=raw0.w)
    if pb:
        params0["beta_raw"] = raw0.beta
    if outcome.n_aux:
        params0["log_nu"] = jnp.log(jnp.asarray(init.nu[tied], dtype=float))
    # Without position bias the likelihood of (k, i, j) and (k, j, i) depends on S only
    # through S_ki - S_kj, so the sampler works on folded cells (same posterior, half the
    # work); log-likelihoods and replicated data below stay per original cell.
    units, answers, _ = _units(data if pb else data.fold_order(), prompt)
    model_units = Cells(*(jnp.asarray(a) for a in units))
    obs = stack_counts(model_units)
    terms = None
    if prompt:
        terms = (jnp.asarray(answers.first), jnp.asarray(answers.second),
                 jnp.asarray(answers.item))
        params0.update(z_alpha=jnp.zeros(len(answers.labels)),  # tau: unconstrained, log
                       tau=jnp.full(N, jnp.log(0.5 * priors.tau_scale)))
    model = partial(hja_model, rank=r, position_bias=pb, priors=priors, outcome=outcome,
                    answers=terms, tied=tied)
    args = (model_units, chart, obs)

    def potential(p):
        return potential_energy(model, args, {}, p)

    return _Problem(model, args, params0, answers, potential)


def sample_hja(
    data: Comparisons,
    rank: int | Literal["bic", "cv"] = 1,
    *,
    init: HJAFit | None = None,
    position_bias: bool | None = None,
    priors: HJAPriors = HJAPriors(),
    prompt_effects: bool | None = None,
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
        position_bias=...)``).  Its rank and position bias must match the request.
    position_bias : bool, optional
        Per-judge position bias beta_k (default: as ``init``, else False).
    prompt_effects : bool, optional
        Answer-quality random effects per (question, model), their sd tau_i learned per
        model (:mod:`hja_bayes.bayes.prompts`); the posterior then also holds ``alpha``
        and ``tau``, and ``mu_marginal``: ``mu`` is then on the conditional
        (question-specific) scale, ``mu_marginal`` the population-averaged consensus on the
        scale of ``fit_hja`` and of the model without prompt effects
        (:func:`~hja_bayes.bayes.prompts.marginal_consensus`).  Default: on when the data carry clusters
        (``Comparisons.from_frame(..., cluster="question_id")``).
    ties : {"half", "davidson"}, optional
        The outcome model (default: as ``init``, else "half").  "davidson": three outcomes
        with a tie propensity nu_k per judge (as ``fit_hja(..., ties="davidson")``):
        ``log nu_k`` is sampled for every judge that tied at least once (prior in
        :class:`~hja_bayes.bayes.HJAPriors`), started and dispersed from the MAP with the
        other parameters; a judge that never tied has nu_k held at 0, as in the MAP.  The
        posterior then holds ``nu (judge)``, the log-likelihood is per comparison with
        three outcomes and the posterior predictive also replicates the ties.
    priors : HJAPriors
        Prior scales (see :mod:`hja_bayes.bayes.model`).
    num_warmup, num_samples, num_chains : int
        NUTS warm-up steps, kept draws per chain and chains.
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
        covariance).  "diagonal": warm-up also adapts a diagonal rescaling of those
        coordinates (robust where the posterior is far from its Laplace approximation, e.g.
        an over-specified rank: PRD Vicuna80 at rank 1 had 395 divergences without it and 0
        with it, at no cost where the approximation is good); "laplace": fixed, warm-up
        adapts the step size only; "adapt": a dense mass matrix adapted in warm-up windows,
        starting from the Laplace covariance.
    chain_method : {"parallel", "sequential", "vectorized"}, optional
        Default: "parallel" when JAX has a device per chain (see the module docstring on
        ``numpyro.set_host_device_count``), else "sequential".
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

    Returns
    -------
    arviz.InferenceData
        Laid out as :mod:`hja_bayes.bayes.convert` describes: canonical draws aligned to the
        MAP in ``posterior``, the log-likelihood of every comparison in
        ``log_likelihood``, replicated and observed wins per cell, the cells in
        ``constant_data`` and the sampler statistics.  ``posterior.attrs`` records the
        rank, position bias, outcome model, the MAP negative log-likelihood and BIC, the
        seed, start, mass matrix, chain method, ``sampling_time`` (seconds of the NUTS run:
        compilation, warm-up and draws), ``gradients`` (leapfrog steps of the kept draws),
        ``warmup_gradients`` (with ``count_warmup``, else -1), the shares of draws whose
        U, V columns were flipped (``sign_flip_share``) or reordered
        (``permutation_share``) or either (``aligned_share``) to match the MAP, the share
        whose aligned V has a column at cosine below 0.5 with the MAP's
        (``weak_match_share``), and how the log-likelihood was stored
        (``log_likelihood``).

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
    for name, value in (("num_warmup", num_warmup), ("num_samples", num_samples),
                        ("num_chains", num_chains)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ParameterError(f"{name} must be a non-negative integer, got {value!r}")
    check_positive(num_samples, "num_samples")
    check_positive(num_chains, "num_chains")
    init, r, pb = _resolve_init(data, rank, init, position_bias, ties)
    if target_accept_prob is None:
        target_accept_prob = 0.8 if r <= 1 else SAFE_TARGET
    check_probability(target_accept_prob, "target_accept_prob", open_low=True, open_high=True)
    prompt = data.clusters is not None if prompt_effects is None else bool(prompt_effects)
    if prompt and data.clusters is None:
        raise ParameterError("prompt_effects=True needs clusters: read the data with "
                             "cluster=<question column>")
    outcome = outcome_model(init.ties)
    K, N = data.n_judges, data.n_items
    # Davidson: log nu_k is sampled for the judges that tied (the MAP holds the others at 0)
    tied = np.bincount(data.judge, data.ties, K) > 0 if outcome.n_aux else None
    if chain_method is None:
        chain_method = "parallel" if jax.local_device_count() >= num_chains > 1 else "sequential"
    model, args, params0, answers, potential = _problem(data, init, r, pb, prompt, priors,
                                                        outcome, tied)
    start_time = time.perf_counter()
    if prompt:  # the MAP leaves the answer effects and tau out
        params0 = prompt_start(potential, params0, answers.item)
    laplace = laplace_at(potential, params0)
    if start == "laplace":
        u0 = whitened_starts(laplace, num_chains, [int(seed), 0x57A27])
    else:
        u0 = np.zeros((num_chains, laplace.mean.shape[0]))
    init_params = {"u": jnp.asarray(u0[0] if num_chains == 1 else u0)}
    _, unravel = ravel_pytree({k: jnp.asarray(params0[k]) for k in laplace.sites})
    whitened = partial(preconditioned, model=model, unravel=unravel,
                       log_sites=("tau",) if prompt else ())
    args = args + (jnp.asarray(laplace.mean), jnp.asarray(laplace.scale))
    kernel = NUTS(whitened, dense_mass=mass_matrix == "adapt",
                  target_accept_prob=target_accept_prob,
                  adapt_mass_matrix=mass_matrix != "laplace")
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=chain_method, progress_bar=progress_bar,
                jit_model_args=not compile_data)
    key = jax.random.PRNGKey(seed)
    warmup_gradients = -1
    if count_warmup:
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

    beta = np.asarray(samples["beta"])
    alpha = np.asarray(samples["alpha"]) if prompt else np.zeros(beta.shape[:2] + (0,))
    nu = np.asarray(samples["nu"]) if outcome.n_aux else None
    # parallel chains leave the draws sharded over the host devices: gather them first, as a
    # decomposition of sharded draws (SVDs across devices) can hang XLA's CPU runtime
    S_draws = jnp.asarray(np.asarray(samples["S"]))
    aligned = align_decomposition(_canonical_draws(S_draws, r), np.asarray(init.V))
    d = aligned.decomposition
    S = np.einsum("cdk,cdn->cdkn", d.gamma, d.mu) + np.einsum("cdka,cdna->cdkn", d.U, d.V)
    replicated, pointwise, labels, stored = _predictive(
        S, beta, np.asarray(d.gamma), alpha, nu, data, prompt, outcome, seed, max_pointwise)

    posterior = {"gamma": d.gamma, "mu": d.mu, "U": d.U, "V": d.V, "D": d.D, "S": S}
    if pb:
        posterior["beta"] = beta
    if prompt:
        tau = np.asarray(samples["tau_value"])
        mu_bar, _ = marginal_consensus(S.reshape((-1, K, N)), np.asarray(d.gamma).reshape(-1, K),
                                       tau.reshape(-1, N))
        posterior.update(alpha=alpha, tau=tau, mu_marginal=mu_bar.reshape(S.shape[:2] + (N,)))
    if outcome.n_aux:
        posterior["nu"] = nu
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
    attrs = {"rank": r, "position_bias": int(pb), "outcome": outcome.name,
             "map_nll": float(init.nll), "map_bic": float(init.bic), "seed": int(seed),
             "start": start, "mass_matrix": mass_matrix, "chain_method": chain_method,
             "target_accept_prob": float(target_accept_prob),
             "num_warmup": int(num_warmup), "sampling_time": float(elapsed),
             "gradients": int(steps.sum()), "warmup_gradients": warmup_gradients,
             "n_judges": K, "n_items": N,
             "sign_flip_share": float(np.mean(aligned.flipped)),
             "permutation_share": float(np.mean(aligned.permuted)),
             "aligned_share": float(np.mean(aligned.flipped | aligned.permuted)),
             "weak_match_share": float(np.mean(np.any(aligned.match < WEAK_MATCH, axis=-1)))
             if r else 0.0,
             "log_likelihood": stored, "prompt_effects": int(prompt)}
    if steps.ndim == 1:  # one chain: keep the (chain, draw) layout
        sample_stats = {k: v[None] for k, v in sample_stats.items()}
    idata = to_inference_data(posterior=posterior, data=data, replicated_wins=replicated[0],
                              replicated_ties=replicated[1] if outcome.n_aux else None,
                              pointwise=pointwise, comparison_labels=labels,
                              sample_stats=sample_stats, attrs=attrs,
                              answers=_units(data, True)[1] if prompt else None)
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

    The point ``sample_hja(data, rank, prompt_effects=True)`` builds its Laplace
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
    init, r, pb = _resolve_init(data, rank, init, None, None)
    outcome = outcome_model(init.ties)
    tied = np.bincount(data.judge, data.ties, data.n_judges) > 0 if outcome.n_aux else None
    model, args, params0, answers, potential = _problem(data, init, r, pb, True, priors,
                                                        outcome, tied)
    params = prompt_start(potential, params0, answers.item)
    values = constrain_fn(model, args, {}, params, return_deterministic=True)
    gamma, mu, S, tau = (np.asarray(values[k], dtype=float) for k in ("gamma", "mu", "S", "tau"))
    mu_bar, _ = marginal_consensus(S[None], gamma[None], tau[None])
    return PromptMode(gamma, mu, S, tau, mu_bar[0])
