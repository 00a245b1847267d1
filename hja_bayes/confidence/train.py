"""Trainers of the confidence network, as pure ``init`` / ``update`` pairs over a NamedTuple state.

Training pairs ``(i, j)`` have ``a_i = 1, a_j = 0``; the surrogate loss of a pair is
``softplus((gamma - (C(s_i) - C(s_j))) / tau)`` with temperature ``tau`` and margin ``gamma``.
Two trainers share that loss (SPEC section 7):

* :func:`deterministic_trainer`: Adam on the weights, minimising
  ``surrogate_gamma(theta) + beta * sqrt(sum_l |W_l|_F^2) / gamma`` (the complexity term only
  with the adaptive margin) plus weight decay.
* :func:`posterior_trainer`: a mean-field Gaussian ``Q = N(theta, diag sigma^2)`` over the
  weights and biases against the prior ``P = N(0, diag sigma_0^2)``, trained by SVI in NumPyro
  on ``data_weight * E_Q[surrogate] + KL(Q || P)``.

With the adaptive margin, ``gamma`` is re-set after every epoch to the exact minimiser of the
objective in ``gamma`` (:func:`optimal_margin`), evaluated at the (posterior-mean) weights.

A trainer is a :class:`Trainer` of pure functions, in the style of optax: ``init(key, x, hi,
lo, margin, data_weight, prior_sd, init_loc) -> TrainState`` and ``update(state, key, x, hi,
lo, data_weight, prior_sd) -> (TrainState, EpochInfo)`` (one epoch), ``weights(state) ->
(locs, scales)``.  The prior standard deviations and the initial weights are arguments, not
settings, so inputs padded with zero columns (see the ranker) share one compiled trainer.  :func:`run_epochs` scans ``update`` under one ``jit``; :func:`make_trainer` caches
trainers by their settings, so a second fit of the same shapes compiles nothing.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.infer import SVI, TraceMeanField_ELBO

from .network import mlp_confidence, n_params, unflatten, weight_norm

__all__ = [
    "EpochInfo",
    "TrainSettings",
    "TrainState",
    "Trainer",
    "deterministic_trainer",
    "make_trainer",
    "optimal_margin",
    "posterior_trainer",
    "ranking_surrogate",
    "run_epochs",
]


class TrainSettings(NamedTuple):
    """Static settings of a trainer (hashable: one compiled trainer per distinct value).

    Attributes
    ----------
    shapes : tuple of (fan_in, fan_out)
        Layer shapes of the network.
    posterior : bool
        Gaussian weight posterior (SVI) or deterministic weights.
    adaptive : bool
        Re-optimise the margin after every epoch.
    temperature, beta, weight_decay, learning_rate, init_scale : float
        Softplus temperature, weight of the complexity term, L2 penalty of the deterministic
        weights, Adam step size, initial posterior standard deviation.
    n_batches, batch_size : int
        Optimisation steps per epoch and pairs per step.
    """

    shapes: tuple
    posterior: bool
    adaptive: bool
    temperature: float
    beta: float
    weight_decay: float
    learning_rate: float
    init_scale: float
    n_batches: int
    batch_size: int


class TrainState(NamedTuple):
    """Optimiser state (Adam over the weights, or NumPyro's ``SVIState``) and the margin."""

    optimizer: Any
    margin: jax.Array


class EpochInfo(NamedTuple):
    """Mean training objective over an epoch's steps and the margin after the epoch."""

    objective: jax.Array
    margin: jax.Array


class Trainer(NamedTuple):
    """Pure functions of one training configuration (see the module docstring)."""

    init: Callable
    update: Callable
    weights: Callable


def ranking_surrogate(diff: jax.Array, gamma, temperature: float) -> jax.Array:
    """Mean of ``softplus((gamma - diff) / tau)`` over pairs with score differences ``diff``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> round(float(ranking_surrogate(jnp.array([0.1]), 0.1, 0.1)), 4)   # softplus(0) = ln 2
    0.6931
    """
    return jnp.mean(jax.nn.softplus((gamma - diff) / temperature))


def optimal_margin(diff, weight_norm, beta: float, temperature: float, lower: float = 1e-3, upper: float = 1.0):
    """The margin minimising ``mean softplus((gamma - diff) / tau) + beta * norm / gamma``.

    The objective is convex in ``gamma > 0`` (a sum of convex terms), so its minimiser on
    ``[lower, upper]`` is found by bisection on the derivative
    ``mean expit((gamma - diff) / tau) / tau - beta * norm / gamma^2``, which increases.

    Parameters
    ----------
    diff : array, shape (m,)
        ``C(s_i) - C(s_j)`` over the training pairs.
    weight_norm : float
        ``sqrt(sum_l |W_l|_F^2)``.
    beta : float
        Weight of the complexity term.
    temperature : float
        Softplus temperature ``tau``.
    lower, upper : float
        Search interval.

    Returns
    -------
    jax scalar

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> g = optimal_margin(jnp.array([0.5, 0.2]), 10.0, 1e-3, 0.1)
    >>> bool(0.0 < g < 1.0)
    True
    """
    diff = jnp.asarray(diff)
    c = beta * weight_norm

    def slope(g):
        return jnp.mean(jax.nn.sigmoid((g - diff) / temperature)) / temperature - c / g**2

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        up = slope(mid) > 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

    lo, hi = jax.lax.fori_loop(0, 60, body, (jnp.asarray(lower, diff.dtype), jnp.asarray(upper, diff.dtype)))
    return 0.5 * (lo + hi)


def _epoch_batches(key, n_pairs: int, n_batches: int, batch_size: int):
    perm = jax.random.permutation(key, n_pairs)
    return perm[: n_batches * batch_size].reshape(n_batches, batch_size)


def _next_margin(settings: TrainSettings, params: dict, x, hi, lo, margin):
    if not settings.adaptive:
        return margin
    c = mlp_confidence(params, x)
    return optimal_margin(c[hi] - c[lo], weight_norm(params), settings.beta, settings.temperature)


def deterministic_trainer(settings: TrainSettings) -> Trainer:
    """Adam on deterministic weights (the margin-adaptive MLP, or "vanilla" with a fixed margin).

    Parameters
    ----------
    settings : TrainSettings

    Returns
    -------
    Trainer
        ``data_weight`` and ``prior_sd`` are accepted and ignored.
    """
    optim = numpyro.optim.Adam(settings.learning_rate)
    tau = settings.temperature

    def objective(params, x_hi, x_lo, gamma):
        diff = mlp_confidence(params, x_hi) - mlp_confidence(params, x_lo)
        value = ranking_surrogate(diff, gamma, tau)
        value += 0.5 * settings.weight_decay * sum(jnp.sum(v**2) for k, v in params.items() if k.startswith("W"))
        if settings.adaptive:
            value += settings.beta * weight_norm(params) / gamma
        return value

    grad = jax.value_and_grad(objective)

    def init(key, x, hi, lo, margin, data_weight, prior_sd, init_loc):
        return TrainState(optim.init(unflatten(init_loc, settings.shapes)), jnp.asarray(margin, x.dtype))

    def update(state, key, x, hi, lo, data_weight, prior_sd):
        def step(opt_state, idx):
            value, grads = grad(optim.get_params(opt_state), x[hi[idx]], x[lo[idx]], state.margin)
            return optim.update(grads, opt_state), value

        batches = _epoch_batches(key, hi.shape[0], settings.n_batches, settings.batch_size)
        opt_state, values = jax.lax.scan(step, state.optimizer, batches)
        margin = _next_margin(settings, optim.get_params(opt_state), x, hi, lo, state.margin)
        return TrainState(opt_state, margin), EpochInfo(values.mean(), margin)

    def weights(state):
        return optim.get_params(state.optimizer), None

    return Trainer(init, update, weights)


def _posterior_model(x_hi, x_lo, gamma, data_weight, prior_sd, init_loc, *, shapes, temperature):
    # all weights and biases in one site: theta ~ N(0, diag prior_sd^2)
    theta = numpyro.sample("theta", dist.Normal(0.0, prior_sd).to_event(1))
    diff = mlp_confidence(unflatten(theta, shapes), x_hi) - mlp_confidence(unflatten(theta, shapes), x_lo)
    numpyro.factor("ranking", -data_weight * ranking_surrogate(diff, gamma, temperature))


def _posterior_guide(x_hi, x_lo, gamma, data_weight, prior_sd, init_loc, *, shapes, init_scale):
    # mean-field Gaussian: independent N(loc_i, scale_i^2) for every weight and bias
    loc = numpyro.param("loc", init_loc)
    scale = numpyro.param("scale", jnp.full(n_params(shapes), init_scale),
                          constraint=dist.constraints.softplus_positive)
    numpyro.sample("theta", dist.Normal(loc, scale).to_event(1))


def posterior_trainer(settings: TrainSettings) -> Trainer:
    """SVI in NumPyro for a mean-field Gaussian weight posterior (TraceMeanField ELBO).

    The objective per step is ``data_weight * mean surrogate + KL(Q || P)`` with the KL in
    closed form; ``prior_sd`` (one standard deviation per parameter, flat) is an argument, so
    priors can differ between fits without a new compilation.

    Parameters
    ----------
    settings : TrainSettings

    Returns
    -------
    Trainer
    """
    shapes = settings.shapes
    model = functools.partial(_posterior_model, shapes=shapes, temperature=settings.temperature)
    guide = functools.partial(_posterior_guide, shapes=shapes, init_scale=settings.init_scale)
    svi = SVI(model, guide, numpyro.optim.Adam(settings.learning_rate), TraceMeanField_ELBO())
    b = settings.batch_size

    def init(key, x, hi, lo, margin, data_weight, prior_sd, init_loc):
        gamma = jnp.asarray(margin, x.dtype)
        state = svi.init(key, x[hi[:b]], x[lo[:b]], gamma, data_weight, prior_sd, init_loc)
        return TrainState(state, gamma)

    def update(state, key, x, hi, lo, data_weight, prior_sd):
        def step(svi_state, idx):
            return svi.update(svi_state, x[hi[idx]], x[lo[idx]], state.margin, data_weight, prior_sd,
                              jnp.zeros_like(prior_sd))

        batches = _epoch_batches(key, hi.shape[0], settings.n_batches, b)
        svi_state, values = jax.lax.scan(step, state.optimizer, batches)
        loc = svi.get_params(svi_state)["loc"]
        margin = _next_margin(settings, unflatten(loc, shapes), x, hi, lo, state.margin)
        return TrainState(svi_state, margin), EpochInfo(values.mean(), margin)

    def weights(state):
        p = svi.get_params(state.optimizer)
        return unflatten(p["loc"], shapes), unflatten(p["scale"], shapes)

    return Trainer(init, update, weights)


def run_epochs(trainer: Trainer, key, x, hi, lo, margin, data_weight, prior_sd, init_loc, n_epochs: int):
    """Initialise, then run ``n_epochs`` updates in one ``lax.scan``.

    Returns
    -------
    (locs, scales, EpochInfo)
        Fitted means (or weights), posterior standard deviations (None for deterministic
        weights) and the per-epoch history.
    """
    key_init, key_run = jax.random.split(key)
    state = trainer.init(key_init, x, hi, lo, margin, data_weight, prior_sd, init_loc)

    def epoch(state, k):
        return trainer.update(state, k, x, hi, lo, data_weight, prior_sd)

    state, history = jax.lax.scan(epoch, state, jax.random.split(key_run, n_epochs))
    locs, scales = trainer.weights(state)
    return locs, scales, history


@functools.lru_cache(maxsize=32)
def make_trainer(settings: TrainSettings, n_epochs: int, batched: bool = False):
    """The compiled ``run_epochs`` for one configuration (cached by its settings).

    Parameters
    ----------
    settings : TrainSettings
    n_epochs : int
    batched : bool
        If True, the returned function trains several networks at once: ``key``, ``hi``,
        ``lo``, ``data_weight``, ``prior_sd`` and ``init_loc`` get a leading axis (one entry per network;
        ``x`` and the initial margin are shared), e.g. one per candidate prior and fold.

    Returns
    -------
    callable
        ``(key, x, hi, lo, margin, data_weight, prior_sd, init_loc) -> (locs, scales, EpochInfo)``.
    """
    trainer = posterior_trainer(settings) if settings.posterior else deterministic_trainer(settings)
    run = functools.partial(run_epochs, trainer, n_epochs=n_epochs)
    if batched:
        run = jax.vmap(run, in_axes=(0, None, 0, 0, None, 0, 0, 0))
    return jax.jit(run)
