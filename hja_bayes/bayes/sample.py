"""NUTS for the Bayesian HJA model, from the MAP to an ArviZ ``InferenceData``.

Parallel chains
---------------
Chains run in parallel (``chain_method="parallel"``) when JAX sees at least as many devices
as chains, and one after the other otherwise.  On a CPU, JAX sees one device unless told
otherwise *before it starts*: call ``numpyro.set_host_device_count(n)`` at the top of the
script, before any JAX computation, e.g.::

    import numpyro
    numpyro.set_host_device_count(2)
    import hja_bayes
    idata = hja_bayes.sample_hja(data, rank=1)

The data are compiled into the sampler (XLA folds the cell indices and counts into the
program, several times faster per step than passing them as arguments), so each call
compiles once: about 10 s on a small CPU, more on a loaded one.
"""

from __future__ import annotations

import time
import warnings
from functools import partial
from typing import Literal

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer import MCMC, NUTS
from scipy.special import expit, gammaln

from ..comparisons import Comparisons
from ..decomposition import Decomposition, canonical_decomposition, check_rank
from ..errors import ConvergenceWarning, IdentifiabilityError
from ..hja import HJAFit, check_fit_inputs, fit_hja
from ..likelihood import Cells
from .model import HJAPriors, chart_at, hja_model, unconstrain

__all__ = ["sample_hja", "IDENTIFIED", "RHAT_LIMIT"]

#: Posterior variables holding identified quantities (beta only with position bias).
IDENTIFIED = ("gamma", "mu", "U", "V", "D", "S", "beta")
#: R-hat above this produces a ConvergenceWarning naming the quantities.
RHAT_LIMIT = 1.01

_EXTRA_FIELDS = ("diverging", "accept_prob", "num_steps", "energy", "potential_energy",
                 "adapt_state.step_size")


def _model_cells(data: Comparisons) -> tuple[Cells, np.ndarray]:
    """Cells for the sampler (``wins`` zeroed: they enter as ``obs``) and the observed wins."""
    zeros = jnp.zeros(data.n_cells)
    cells = Cells(*(jnp.asarray(a) for a in (data.judge, data.first, data.second)), zeros, zeros,
                  jnp.asarray(data.n))
    return cells, np.asarray(data.wins)


@partial(jax.jit, static_argnums=1)
def _canonical_draws(S_raw: jax.Array, rank: int) -> Decomposition:
    """Canonical decomposition of every draw of S, shape (chain, draw, K, N)."""
    flat = S_raw.reshape((-1,) + S_raw.shape[2:])
    d = jax.vmap(lambda s: canonical_decomposition(s, rank))(flat)
    return Decomposition(*(x.reshape(S_raw.shape[:2] + x.shape[1:]) for x in d))


def _log_likelihood_and_replicates(S, beta, data: Comparisons, seed: int):
    """Per-cell binomial log-pmf of the observed wins and replicated wins, per draw.

    ``S`` (chain, draw, K, N) and ``beta`` (chain, draw, K).  The log-pmf uses the
    gamma-function extension of the binomial coefficient, so tied (half) wins are
    evaluated as in the model.  Replicated wins are drawn from the model's likelihood,
    ``Binomial(n_c, expit(eta_c))``, with a NumPy generator seeded by ``seed``.
    """
    k, i, j = data.judge, data.first, data.second
    eta = beta[..., k] + S[..., k, i] - S[..., k, j]
    n, w = data.n, data.wins
    log_choose = gammaln(n + 1) - gammaln(w + 1) - gammaln(n - w + 1)
    loglik = log_choose + w * eta - n * np.logaddexp(0.0, eta)
    rng = np.random.default_rng([seed, 0x5eed])
    replicated = rng.binomial(np.rint(n).astype(np.int64), expit(eta))
    return loglik, replicated


def _resolve_init(data, rank, init, position_bias):
    """Validate the input exactly as fit_hja does and return (init fit, rank, position_bias)."""
    if init is None:
        pb = bool(position_bias) if position_bias is not None else False
        init = fit_hja(data, rank, position_bias=pb)
        return init, init.rank, pb
    if not isinstance(init, HJAFit):
        raise TypeError(f"init must be an HJAFit (from fit_hja), got {type(init).__name__}")
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
    if (init.judges, init.items) != (data.judges, data.items):
        raise IdentifiabilityError("init was fitted to data with other judges or items")
    return init, r, pb


def sample_hja(
    data: Comparisons,
    rank: int | Literal["bic", "cv"] = 1,
    *,
    init: HJAFit | None = None,
    position_bias: bool | None = None,
    priors: HJAPriors = HJAPriors(),
    num_warmup: int = 1000,
    num_samples: int = 1000,
    num_chains: int = 2,
    seed: int = 0,
    target_accept_prob: float = 0.8,
    chain_method: Literal["parallel", "sequential", "vectorized"] | None = None,
    progress_bar: bool = True,
) -> az.InferenceData:
    """Sample the posterior of the Bayesian HJA model with NUTS, starting at the MAP.

    Parameters
    ----------
    data : Comparisons
    rank : int, "bic" or "cv"
        Disagreement rank r; a string selects it by :func:`~hja_bayes.fit_hja` first
        (only without ``init``).
    init : HJAFit, optional
        Starting point of every chain (default: ``fit_hja(data, rank, position_bias=...)``).
        Its rank and position bias must match the request.
    position_bias : bool, optional
        Per-judge position bias beta_k (default: as ``init``, else False).
    priors : HJAPriors
        Prior scales (see :mod:`hja_bayes.bayes.model`).
    num_warmup, num_samples, num_chains : int
        NUTS adaptation steps, kept draws per chain and chains.
    seed : int
        Seed of the sampler and of the posterior predictive draws; the same seed gives
        identical draws.
    target_accept_prob : float
        NUTS step-size adaptation target.
    chain_method : {"parallel", "sequential", "vectorized"}, optional
        Default: "parallel" when JAX has a device per chain (see the module docstring on
        ``numpyro.set_host_device_count``), else "sequential".
    progress_bar : bool
    Returns
    -------
    arviz.InferenceData
        ``posterior``: the identified quantities ``gamma (judge)``, ``mu (item)``,
        ``U (judge, component)``, ``V (item, component)``, ``D (component)``,
        ``S (judge, item)`` and, with position bias, ``beta (judge)``; every draw is mapped
        through :func:`~hja_bayes.decomposition.canonicalize`, so every constraint holds
        and rotations and signs are fixed.  ``log_likelihood`` and
        ``posterior_predictive``: ``wins`` per cell; ``observed_data``: ``wins`` (ties
        count 1/2); ``constant_data``: the cells (``judge``, ``first``, ``second``, ``n``,
        ``ties``); ``sample_stats``: ``diverging``, ``acceptance_rate``, ``n_steps``,
        ``tree_depth``, ``energy``, ``lp``, ``step_size``.  ``posterior.attrs`` records the
        rank, position bias, the MAP negative log-likelihood and BIC, the seed, the chain
        method and ``sampling_time`` (seconds of the NUTS run: compilation, warm-up and
        draws).

    Raises
    ------
    Everything :func:`~hja_bayes.fit_hja` raises, with the same messages (disconnected
    graph, unidentifiable rank, position bias on folded data...), plus
    IdentifiabilityError when ``init`` does not match the request.

    Warns
    -----
    ConvergenceWarning
        On divergent transitions, or R-hat above 1.01 (the warning names the quantities).
    """
    init, r, pb = _resolve_init(data, rank, init, position_bias)
    K, N = data.n_judges, data.n_items
    if chain_method is None:
        chain_method = "parallel" if jax.local_device_count() >= num_chains > 1 else "sequential"
    reference = Decomposition(init.gamma, init.mu, init.U, init.V, init.D)
    chart = chart_at(reference)
    raw0 = unconstrain(reference, init.beta if pb else None, chart)
    init_params = {"z_mu": raw0.z_mu, "z_gamma": raw0.z_gamma}
    if r > 0:
        init_params.update(l_free=raw0.l_free, w=raw0.w)
    if pb:
        init_params["beta_raw"] = raw0.beta
    # Without position bias the likelihood of (k, i, j) and (k, j, i) depends on S only
    # through S_ki - S_kj, so the sampler works on folded cells (same posterior, half the
    # work); log-likelihoods and replicated data below stay per original cell.
    model_cells, obs = _model_cells(data if pb else data.fold_order())

    model = partial(hja_model, rank=r, position_bias=pb, priors=priors)
    kernel = NUTS(model, dense_mass=True, target_accept_prob=target_accept_prob)
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method=chain_method, progress_bar=progress_bar)
    if num_chains > 1:
        init_params = {k: jnp.broadcast_to(v, (num_chains,) + v.shape)
                       for k, v in init_params.items()}
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed), model_cells, chart, jnp.asarray(obs),
             init_params=init_params, extra_fields=_EXTRA_FIELDS)
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    jax.block_until_ready(samples)
    elapsed = time.perf_counter() - start
    beta = np.asarray(samples["beta"])
    d = Decomposition(*(np.asarray(x) for x in _canonical_draws(samples["S"], r)))
    S = np.einsum("cdk,cdn->cdkn", d.gamma, d.mu) + np.einsum("cdka,cdna->cdkn", d.U, d.V)
    loglik, predictive = _log_likelihood_and_replicates(S, beta, data, seed)
    real = data.n_cells

    posterior = {"gamma": d.gamma, "mu": d.mu, "U": d.U, "V": d.V, "D": d.D, "S": S}
    dims = {"gamma": ["judge"], "mu": ["item"], "U": ["judge", "component"],
            "V": ["item", "component"], "D": ["component"], "S": ["judge", "item"],
            "beta": ["judge"], "wins": ["cell"], "judge_of_cell": ["cell"],
            "first": ["cell"], "second": ["cell"], "n": ["cell"], "ties": ["cell"]}
    if pb:
        posterior["beta"] = beta
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
    coords = {"judge": list(data.judges), "item": list(data.items),
              "component": list(range(r)), "cell": np.arange(real)}
    attrs = {"rank": r, "position_bias": int(pb), "map_nll": float(init.nll),
             "map_bic": float(init.bic), "seed": int(seed), "chain_method": chain_method,
             "num_warmup": int(num_warmup), "sampling_time": float(elapsed),
             "n_judges": K, "n_items": N}
    idata = az.from_dict(
        posterior={k: np.asarray(v) for k, v in posterior.items()},
        log_likelihood={"wins": np.asarray(loglik)},
        posterior_predictive={"wins": np.asarray(predictive)},
        observed_data={"wins": np.asarray(data.wins)},
        constant_data={"judge_of_cell": np.asarray(data.judge), "first": np.asarray(data.first),
                       "second": np.asarray(data.second), "n": np.asarray(data.n),
                       "ties": np.asarray(data.ties)},
        sample_stats=sample_stats,
        coords=coords,
        dims=dims,
        posterior_attrs=attrs,
    )
    _warn_on_diagnostics(idata)
    return idata


def _labels(da) -> list[str]:
    """'name[label, ...]' for every entry of a DataArray without chain/draw."""
    if da.ndim == 0:
        return [da.name]
    index = [da[d].values for d in da.dims]
    grids = np.meshgrid(*index, indexing="ij")
    return [f"{da.name}[{', '.join(str(g.flat[i]) for g in grids)}]" for i in range(da.size)]


def _warn_on_diagnostics(idata: az.InferenceData, limit: float = RHAT_LIMIT) -> None:
    """ConvergenceWarning on divergences or R-hat above ``limit`` (names the quantities)."""
    n_div = int(idata.sample_stats["diverging"].sum())
    if n_div:
        warnings.warn(
            f"{n_div} divergent transition(s) after warm-up: the sampler may have missed part "
            "of the posterior (raise target_accept_prob or check the data)",
            ConvergenceWarning, stacklevel=3)
    if idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"] < 8:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant draws give nan R-hat
        rhat = az.rhat(idata.posterior)
    bad = []
    for name, da in rhat.data_vars.items():
        values = np.asarray(da).ravel()
        labels = _labels(da)
        bad += [f"{lab} ({v:.3f})" for lab, v in zip(labels, values) if v > limit]
    if bad:
        shown = ", ".join(bad[:12]) + (f" and {len(bad) - 12} more" if len(bad) > 12 else "")
        warnings.warn(f"R-hat above {limit} for {len(bad)} quantity(ies): {shown}",
                      ConvergenceWarning, stacklevel=3)
