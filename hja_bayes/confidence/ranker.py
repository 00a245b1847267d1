"""A learned confidence: an MLP trained to rank agreeing examples above disagreeing ones.

``C(s) = sigmoid(MLP(s))`` with layers d -> 64 -> 32 -> 16 -> 1 (ReLU).  Training pairs
``(i, j)`` have ``a_i = 1, a_j = 0`` (drawn at random, 5,000 by default); the surrogate loss
of a pair is ``softplus((gamma - (C(s_i) - C(s_j))) / tau)`` with temperature ``tau = 0.1``
and margin ``gamma``.

Three variants (SPEC section 7):

* **Gaussian posterior** (default, ``posterior=True``): a mean-field Gaussian
  ``Q = N(theta, diag sigma^2)`` over the weights and biases against the prior
  ``P = N(0, sigma_0^2 I)``, trained by SVI in NumPyro on
  ``m * E_Q[surrogate] + KL(Q || P)`` (the PAC-Bayes trade-off, with ``m`` the effective
  sample size below); it predicts with the posterior mean of the confidence and reports the
  posterior spread and a PAC-Bayes bound.
* **margin-adaptive MLP** (``posterior=False``): deterministic weights minimising
  ``surrogate_gamma(theta) + beta * sqrt(sum_l |W_l|_F^2) / gamma`` (plus weight decay),
  alternating Adam epochs on ``theta`` (``gamma`` fixed) with the exact minimisation over
  ``gamma`` (``theta`` fixed).
* **vanilla** (``posterior=False, margin=<float>``): deterministic weights, fixed margin, no
  complexity term.

With ``margin="adaptive"`` the posterior variant also updates ``gamma`` between epochs by the
same one-dimensional minimisation, evaluated at the posterior mean.

Effective sample size.  The training pairs share examples, so they are not independent.
Conditionally on the numbers of agreeing and disagreeing examples ``n_a`` and ``n_d``, the
agreeing examples are i.i.d. draws from ``D(s | a = 1)`` and the disagreeing ones from
``D(s | a = 0)``; pairing them without reuse gives ``m = min(n_a, n_d)`` i.i.d. pairs from
``D(s | a = 1) x D(s | a = 0)``.  That ``m`` (not the 5,000 training pairs) is the sample size
of the bound and the weight of the data term in the SVI objective.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import SVI, TraceMeanField_ELBO

from .data import check_agree, check_features
from ..errors import DataError, HJAError

__all__ = [
    "ConfidenceRanker",
    "PACBayesBound",
    "mlp_confidence",
    "optimal_margin",
    "kl_bernoulli",
    "kl_inverse_upper",
    "pac_bayes_kl_bound",
]

_PAD = 256  # feature matrices are padded to a multiple of this many rows (fewer recompiles)


# --------------------------------------------------------------------------------------
# The network and its pieces
# --------------------------------------------------------------------------------------
def mlp_confidence(params: dict, x: jax.Array) -> jax.Array:
    """Confidence ``sigmoid(MLP(x))`` of a ReLU network.

    Parameters
    ----------
    params : dict
        ``W0, b0, W1, b1, ...``: layer l maps ``x @ W_l + b_l``; ReLU between layers.
    x : array, shape (n, d)
        Features.

    Returns
    -------
    array, shape (n,)
        Confidences in ``[0, 1]``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = {"W0": jnp.ones((2, 1)), "b0": jnp.zeros(1)}
    >>> mlp_confidence(p, jnp.zeros((3, 2))).tolist()
    [0.5, 0.5, 0.5]
    """
    n_layers = len(params) // 2
    h = x
    for layer in range(n_layers):
        h = h @ params[f"W{layer}"] + params[f"b{layer}"]
        if layer < n_layers - 1:
            h = jax.nn.relu(h)
    return jax.nn.sigmoid(h[..., 0])


def _weight_norm(params: dict) -> jax.Array:
    """sqrt(sum_l |W_l|_F^2) over the weight matrices (biases excluded)."""
    return jnp.sqrt(sum(jnp.sum(v**2) for k, v in params.items() if k.startswith("W")))


def _surrogate(diff: jax.Array, gamma, temperature: float) -> jax.Array:
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


def _layer_shapes(n_features: int, hidden: tuple[int, ...]) -> list[tuple[int, int]]:
    sizes = (n_features,) + tuple(hidden) + (1,)
    return list(zip(sizes[:-1], sizes[1:]))


def _he_init(key, shapes) -> dict:
    """He-normal hidden layers; the output layer starts at zero, so every confidence starts
    at 1/2.  (A random output layer often starts the sigmoid saturated and the ranking
    inverted, and the margin loss then only pushes every confidence further into the flat
    tail: training collapses to a constant.)"""
    params = {}
    keys = jax.random.split(key, len(shapes))
    for layer, ((fan_in, fan_out), k) in enumerate(zip(shapes, keys)):
        scale = jnp.sqrt(2.0 / fan_in) if layer < len(shapes) - 1 else 0.0
        params[f"W{layer}"] = jax.random.normal(k, (fan_in, fan_out)) * scale
        params[f"b{layer}"] = jnp.zeros(fan_out)
    return params


# --------------------------------------------------------------------------------------
# Trainers (compiled once per configuration and padded data shape)
# --------------------------------------------------------------------------------------
def _epoch_batches(key, n_pairs: int, n_batches: int, batch_size: int):
    perm = jax.random.permutation(key, n_pairs)
    return perm[: n_batches * batch_size].reshape(n_batches, batch_size)


@functools.lru_cache(maxsize=32)
def _deterministic_trainer(temperature, beta, weight_decay, learning_rate, n_epochs, n_batches, batch_size, adaptive):
    optim = numpyro.optim.Adam(learning_rate)

    def objective(params, x_hi, x_lo, gamma):
        diff = mlp_confidence(params, x_hi) - mlp_confidence(params, x_lo)
        value = _surrogate(diff, gamma, temperature)
        value += 0.5 * weight_decay * sum(jnp.sum(v**2) for k, v in params.items() if k.startswith("W"))
        if adaptive:
            value += beta * _weight_norm(params) / gamma
        return value

    grad_fn = jax.value_and_grad(objective)

    @jax.jit
    def train(params, x, hi, lo, gamma, key):
        def epoch(carry, k):
            state, gamma = carry

            def step(state, idx):
                value, grads = grad_fn(optim.get_params(state), x[hi[idx]], x[lo[idx]], gamma)
                return optim.update(grads, state), value

            state, values = jax.lax.scan(step, state, _epoch_batches(k, hi.shape[0], n_batches, batch_size))
            if adaptive:
                p = optim.get_params(state)
                c = mlp_confidence(p, x)
                gamma = optimal_margin(c[hi] - c[lo], _weight_norm(p), beta, temperature)
            return (state, gamma), (values.mean(), gamma)

        (state, gamma), (history, gammas) = jax.lax.scan(
            epoch, (optim.init(params), gamma), jax.random.split(key, n_epochs)
        )
        return optim.get_params(state), gamma, history, gammas

    return train


def _unflatten(theta: jax.Array, shapes) -> dict:
    """Split a flat parameter vector into ``W0, b0, W1, b1, ...``."""
    params, start = {}, 0
    for layer, (fan_in, fan_out) in enumerate(shapes):
        params[f"W{layer}"] = theta[..., start : start + fan_in * fan_out].reshape(
            theta.shape[:-1] + (fan_in, fan_out)
        )
        start += fan_in * fan_out
        params[f"b{layer}"] = theta[..., start : start + fan_out]
        start += fan_out
    return params


def _n_params(shapes) -> int:
    return sum(fan_in * fan_out + fan_out for fan_in, fan_out in shapes)


def _posterior_model(x_hi, x_lo, gamma, data_weight, *, shapes, prior_scale, temperature):
    # all weights and biases in one site: theta ~ N(0, prior_scale^2 I)
    theta = numpyro.sample("theta", dist.Normal(0.0, prior_scale).expand([_n_params(shapes)]).to_event(1))
    params = _unflatten(theta, shapes)
    diff = mlp_confidence(params, x_hi) - mlp_confidence(params, x_lo)
    numpyro.factor("ranking", -data_weight * _surrogate(diff, gamma, temperature))


def _he_flat(key, shapes) -> jax.Array:
    params = _he_init(key, shapes)
    return jnp.concatenate([params[f"{kind}{layer}"].ravel() for layer in range(len(shapes)) for kind in "Wb"])


def _posterior_guide(x_hi, x_lo, gamma, data_weight, *, shapes, init_scale):
    # mean-field Gaussian: independent N(loc_i, scale_i^2) for every weight and bias
    loc = numpyro.param("loc", lambda key: _he_flat(key, shapes))
    scale = numpyro.param("scale", jnp.full(_n_params(shapes), init_scale), constraint=dist.constraints.positive)
    numpyro.sample("theta", dist.Normal(loc, scale).to_event(1))


@functools.lru_cache(maxsize=32)
def _posterior_trainer(
    shapes, prior_scale, init_scale, temperature, beta, learning_rate, n_epochs, n_batches, batch_size, adaptive
):
    model = functools.partial(_posterior_model, shapes=shapes, prior_scale=prior_scale, temperature=temperature)
    guide = functools.partial(_posterior_guide, shapes=shapes, init_scale=init_scale)
    svi = SVI(model, guide, numpyro.optim.Adam(learning_rate), TraceMeanField_ELBO())

    @jax.jit
    def train(x, hi, lo, gamma, data_weight, key):
        key_init, key_run = jax.random.split(key)
        state = svi.init(key_init, x[hi[:batch_size]], x[lo[:batch_size]], gamma, data_weight)

        def epoch(carry, k):
            state, gamma = carry

            def step(state, idx):
                return svi.update(state, x[hi[idx]], x[lo[idx]], gamma, data_weight)

            state, values = jax.lax.scan(step, state, _epoch_batches(k, hi.shape[0], n_batches, batch_size))
            if adaptive:
                p = _unflatten(svi.get_params(state)["loc"], shapes)
                c = mlp_confidence(p, x)
                gamma = optimal_margin(c[hi] - c[lo], _weight_norm(p), beta, temperature)
            return (state, gamma), (values.mean(), gamma)

        (state, gamma), (history, gammas) = jax.lax.scan(epoch, (state, gamma), jax.random.split(key_run, n_epochs))
        return svi.get_params(state), gamma, history, gammas

    return train


def _pad_rows(x: np.ndarray) -> jnp.ndarray:
    n = x.shape[0]
    target = -(-n // _PAD) * _PAD
    return jnp.asarray(np.vstack([x, np.zeros((target - n, x.shape[1]))]))


# --------------------------------------------------------------------------------------
# PAC-Bayes
# --------------------------------------------------------------------------------------
def kl_bernoulli(q, p):
    """KL divergence ``kl(q || p)`` between Bernoulli(q) and Bernoulli(p).

    Parameters
    ----------
    q, p : float or array_like in [0, 1]

    Returns
    -------
    ndarray
        With the conventions ``0 log 0 = 0`` and ``kl = inf`` when ``p`` is 0 or 1 and ``q``
        differs.

    Examples
    --------
    >>> round(float(kl_bernoulli(0.5, 0.5)), 12)
    0.0
    """
    q = np.asarray(q, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(q > 0, q * np.log(q / p), 0.0)
        b = np.where(q < 1, (1 - q) * np.log((1 - q) / (1 - p)), 0.0)
    return a + b


def kl_inverse_upper(q: float, c: float, tol: float = 1e-12) -> float:
    """``sup{p in [q, 1] : kl(q || p) <= c}``, by bisection.

    Parameters
    ----------
    q : float in [0, 1]
        Empirical rate.
    c : float >= 0
        Allowed divergence.
    tol : float
        Width of the final bracket.

    Returns
    -------
    float

    Examples
    --------
    >>> round(kl_inverse_upper(0.0, np.log(2)), 6)   # kl(0 || p) = -log(1 - p)
    0.5
    """
    q = float(q)
    c = float(c)
    if not 0.0 <= q <= 1.0 or not c >= 0.0:
        raise HJAError("need q in [0, 1] and c >= 0")
    lo, hi = q, 1.0
    if kl_bernoulli(q, 1.0) <= c:
        return 1.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if kl_bernoulli(q, mid) <= c:
            lo = mid
        else:
            hi = mid
    return hi


def pac_bayes_kl_bound(empirical_risk: float, kl: float, m: int, delta: float) -> float:
    """PAC-Bayes-kl bound (Seeger 2002; Maurer 2004) on a Gibbs classifier's risk.

    For a data-independent prior P, with probability at least ``1 - delta`` over an i.i.d.
    sample of size ``m``, simultaneously for every posterior Q:
    ``kl(R_hat(Q) || R(Q)) <= (KL(Q || P) + ln(2 sqrt(m) / delta)) / m``, for a loss in [0, 1].

    Parameters
    ----------
    empirical_risk : float
        ``R_hat(Q)``, the Gibbs risk on the sample (an upper bound on it is fine).
    kl : float
        ``KL(Q || P)`` in nats.
    m : int
        Sample size (i.i.d. losses).
    delta : float
        Error level in (0, 1).

    Returns
    -------
    float
        The upper bound on ``R(Q)``.

    Examples
    --------
    >>> b = pac_bayes_kl_bound(0.1, 5.0, 1000, 0.05)
    >>> 0.1 < b < 0.2
    True
    """
    if not 0.0 < delta < 1.0:
        raise DataError("delta must lie in (0, 1)")
    if m < 1:
        raise DataError("m must be at least 1")
    return kl_inverse_upper(empirical_risk, (float(kl) + math.log(2.0 * math.sqrt(m) / delta)) / m)


class PACBayesBound(NamedTuple):
    """A PAC-Bayes bound on the misranking probability of the Gibbs ranker.

    Attributes
    ----------
    bound : float
        Upper bound on ``P(C_theta(s) <= C_theta(s'))``, ``theta ~ Q``, ``s`` an agreeing and
        ``s'`` a disagreeing example drawn independently; holds with probability at least
        ``1 - delta - delta_mc``.
    gibbs_risk : float
        Monte Carlo estimate of the Gibbs risk on the ``m`` disjoint pairs.
    gibbs_risk_upper : float
        Its upper ``1 - delta_mc`` bound (sample-convergence bound over the draws of theta).
    kl : float
        ``KL(Q || P)`` in nats.
    m : int
        Number of disjoint (agree, disagree) pairs: ``min(n_agree, n_disagree)``.
    n_draws : int
        Posterior draws used for the Monte Carlo estimate.
    delta, delta_mc : float
        Error levels of the PAC-Bayes step and of the Monte Carlo step.
    """

    bound: float
    gibbs_risk: float
    gibbs_risk_upper: float
    kl: float
    m: int
    n_draws: int
    delta: float
    delta_mc: float


# --------------------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------------------
class ConfidenceRanker:
    """Learn a judge's confidence from features by pairwise margin ranking.

    Parameters
    ----------
    posterior : bool
        True (default): Gaussian weight posterior trained by SVI; False: deterministic MLP.
    margin : "adaptive" or float
        ``"adaptive"`` (default): the margin is re-optimised after every epoch; a float:
        fixed margin (with ``posterior=False`` this is the "vanilla" ranker: no complexity
        term).
    hidden : tuple of int
        Hidden layer widths (default 64, 32, 16).
    temperature : float
        Softplus temperature ``tau`` (0.1).
    beta : float
        Weight of the complexity term ``sqrt(sum |W|_F^2) / gamma`` (1e-4); used with the
        adaptive margin.
    n_pairs : int
        Training pairs drawn at random (with replacement) among all (agree, disagree) pairs.
    n_epochs : int
        Passes over the training pairs.
    batch_size : int
        Pairs per optimisation step.
    learning_rate : float, optional
        Adam step size; default 1e-3 for the deterministic MLP, 1e-2 for SVI.
    weight_decay : float
        L2 penalty ``weight_decay / 2 * sum |W|^2`` on the deterministic weights (1e-4).
    prior_scale : float
        Standard deviation ``sigma_0`` of the Gaussian prior on every weight and bias (0.2).
        With few examples a wide prior lets the KL term pull the posterior back to the prior
        and the posterior mean becomes an arbitrary network (0.5 did so on Trust-or-Escalate
        at 400 items); 0.2 did not.
    init_scale : float
        Initial posterior standard deviation.
    kl_weight : float
        Multiplies ``KL(Q || P)`` in the SVI objective relative to the PAC-Bayes choice
        ``m * E_Q[loss] + KL`` (default 1).
    initial_margin : float
        Starting margin (and the margin when ``margin`` is a float).
    seed : int
        Seed of the pair draws, the initialisation and the SVI noise.

    Attributes
    ----------
    params_ : dict
        Fitted weights (the posterior means with ``posterior=True``).
    posterior_scale_ : dict or None
        Posterior standard deviations.
    margin_ : float
        Final margin ``gamma``.
    history_ : ndarray
        Mean training objective per epoch.
    margin_history_ : ndarray
        Margin after each epoch.
    n_effective_ : int
        ``min(n_agree, n_disagree)``.

    Examples
    --------
    >>> from hja_bayes.confidence import simulate_confidence_data
    >>> d = simulate_confidence_data(300, seed=0).data
    >>> r = ConfidenceRanker(n_pairs=512, n_epochs=2, seed=0).fit(d.features, d.agree)
    >>> c = r.predict(d.features)
    >>> c.shape, bool(((c >= 0) & (c <= 1)).all())
    ((300,), True)
    """

    def __init__(
        self,
        *,
        posterior: bool = True,
        margin="adaptive",
        hidden: tuple[int, ...] = (64, 32, 16),
        temperature: float = 0.1,
        beta: float = 1e-4,
        n_pairs: int = 5000,
        n_epochs: int = 30,
        batch_size: int = 256,
        learning_rate: float | None = None,
        weight_decay: float = 1e-4,
        prior_scale: float = 0.2,
        init_scale: float = 0.05,
        kl_weight: float = 1.0,
        initial_margin: float = 0.1,
        seed: int = 0,
    ):
        self.posterior = posterior
        self.margin = margin
        self.hidden = tuple(int(h) for h in hidden)
        self.temperature = temperature
        self.beta = beta
        self.n_pairs = n_pairs
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.prior_scale = prior_scale
        self.init_scale = init_scale
        self.kl_weight = kl_weight
        self.initial_margin = initial_margin
        self.seed = seed

    # ------------------------------------------------------------------ fitting
    def _check_settings(self) -> bool:
        if isinstance(self.margin, str):
            if self.margin != "adaptive":
                raise HJAError(f"margin must be 'adaptive' or a number, got {self.margin!r}")
            adaptive = True
        else:
            if not 0.0 < float(self.margin) <= 1.0:
                raise HJAError("a fixed margin must lie in (0, 1]")
            adaptive = False
        for name in ("temperature", "prior_scale", "init_scale", "kl_weight", "initial_margin"):
            if not float(getattr(self, name)) > 0:
                raise HJAError(f"{name} must be positive")
        if self.beta < 0 or self.weight_decay < 0:
            raise HJAError("beta and weight_decay must be non-negative")
        if min(self.n_pairs, self.n_epochs, self.batch_size) < 1 or any(h < 1 for h in self.hidden):
            raise HJAError("n_pairs, n_epochs, batch_size and the hidden widths must be positive")
        return adaptive

    def fit(self, features, agree) -> "ConfidenceRanker":
        """Train the ranker.

        Parameters
        ----------
        features : array_like, shape (n, d)
            Features in ``[0, 1]``.
        agree : array_like of bool / 0-1, shape (n,)
            Agreement with the human label; both classes must occur.

        Returns
        -------
        self

        Raises
        ------
        DataError
            On features outside ``[0, 1]`` or NaN, or a single agreement class.
        """
        adaptive = self._check_settings()
        x = check_features(features)
        a = check_agree(agree, x.shape[0], need_both=True)
        pos, neg = np.flatnonzero(a), np.flatnonzero(~a)
        key = jax.random.PRNGKey(self.seed)
        k_pairs, k_init, k_train = jax.random.split(key, 3)
        kh, kl = jax.random.split(k_pairs)
        hi = jnp.asarray(pos)[jax.random.randint(kh, (self.n_pairs,), 0, len(pos))]
        lo = jnp.asarray(neg)[jax.random.randint(kl, (self.n_pairs,), 0, len(neg))]
        batch = min(self.batch_size, self.n_pairs)
        n_batches = self.n_pairs // batch
        xp = _pad_rows(x)
        gamma0 = jnp.asarray(float(self.initial_margin if adaptive else self.margin))
        shapes = tuple(_layer_shapes(x.shape[1], self.hidden))
        self.n_effective_ = int(min(len(pos), len(neg)))
        if self.posterior:
            lr = 1e-2 if self.learning_rate is None else float(self.learning_rate)
            train = _posterior_trainer(
                shapes, float(self.prior_scale), float(self.init_scale), float(self.temperature),
                float(self.beta), lr, int(self.n_epochs), n_batches, batch, adaptive,
            )
            data_weight = jnp.asarray(self.n_effective_ / float(self.kl_weight))
            guide_params, gamma, history, gammas = train(xp, hi, lo, gamma0, data_weight, k_train)
            self.params_ = _unflatten(guide_params["loc"], shapes)
            self.posterior_scale_ = _unflatten(guide_params["scale"], shapes)
        else:
            lr = 1e-3 if self.learning_rate is None else float(self.learning_rate)
            train = _deterministic_trainer(
                float(self.temperature), float(self.beta), float(self.weight_decay), lr,
                int(self.n_epochs), n_batches, batch, adaptive,
            )
            params, gamma, history, gammas = train(_he_init(k_init, shapes), xp, hi, lo, gamma0, k_train)
            self.params_ = params
            self.posterior_scale_ = None
        self.n_features_in_ = x.shape[1]
        self.margin_ = float(gamma)
        self.history_ = np.asarray(history)
        self.margin_history_ = np.asarray(gammas)
        self._train_features = x
        self._train_agree = a
        return self

    # ------------------------------------------------------------------ prediction
    def _checked(self, features) -> np.ndarray:
        if not hasattr(self, "params_"):
            raise HJAError("call fit() before predicting")
        x = check_features(features)
        if x.shape[1] != self.n_features_in_:
            raise DataError(f"expected {self.n_features_in_} features, got {x.shape[1]}")
        return x

    def predict(self, features, *, n_draws: int = 200, use: str = "predictive") -> np.ndarray:
        """Confidence in ``[0, 1]``.

        For a posterior ranker this is the posterior mean of the confidence,
        ``E_Q[C_theta(s)]``, averaged over ``n_draws`` weight draws (seeded by the ranker's
        ``seed``, so repeated calls agree).  It is the score the SVI objective trains (the
        Gibbs ranker's average); the network at the mean weights (``use="weights"``) can be a
        different function, and with few examples it sometimes ranks the opposite way.

        Parameters
        ----------
        features : array_like, shape (n, d)
        n_draws : int
            Posterior draws for the predictive mean.
        use : {"predictive", "weights"}
            Posterior mean of the confidence (default) or the network at the posterior-mean
            weights.  Deterministic rankers ignore it.

        Returns
        -------
        ndarray, shape (n,)
        """
        x = self._checked(features)
        if self.posterior_scale_ is None or use == "weights":
            return np.asarray(_predict_jit(self.params_, jnp.asarray(x)))
        if use != "predictive":
            raise HJAError(f"use must be 'predictive' or 'weights', got {use!r}")
        return np.asarray(self._draw_confidences(x, n_draws, self.seed + 7919)).mean(axis=0)

    def _draw_confidences(self, x: np.ndarray, n_draws: int, seed: int) -> jax.Array:
        if self.posterior_scale_ is None:
            raise HJAError("this ranker has no weight posterior (posterior=False)")
        if int(n_draws) < 1:
            raise HJAError("n_draws must be positive")
        return _draw_confidences_jit(
            self.params_, self.posterior_scale_, jax.random.PRNGKey(seed), jnp.asarray(x), int(n_draws)
        )

    def predict_draws(self, features, n_draws: int = 200, *, seed: int = 0) -> np.ndarray:
        """Confidences under weights drawn from the posterior.

        Parameters
        ----------
        features : array_like, shape (n, d)
        n_draws : int
            Number of posterior draws.
        seed : int
            Seed of the draws.

        Returns
        -------
        ndarray, shape (n_draws, n)
        """
        return np.asarray(self._draw_confidences(self._checked(features), n_draws, seed))

    def predict_spread(self, features, n_draws: int = 200, *, seed: int = 0) -> np.ndarray:
        """Posterior standard deviation of the confidence of each example.

        Parameters
        ----------
        features : array_like, shape (n, d)
        n_draws : int
            Number of posterior draws.
        seed : int
            Seed of the draws.

        Returns
        -------
        ndarray, shape (n,)
        """
        return self.predict_draws(features, n_draws, seed=seed).std(axis=0)

    # ------------------------------------------------------------------ PAC-Bayes
    def kl_divergence(self) -> float:
        """``KL(Q || P)`` between the fitted Gaussian posterior and the prior, in nats.

        Returns
        -------
        float
        """
        if self.posterior_scale_ is None:
            raise HJAError("this ranker has no weight posterior (posterior=False)")
        s0 = float(self.prior_scale)
        total = 0.0
        for name, mu in self.params_.items():
            mu = np.asarray(mu)
            sd = np.asarray(self.posterior_scale_[name])
            total += float(np.sum(np.log(s0 / sd) + (sd**2 + mu**2) / (2 * s0**2) - 0.5))
        return total

    def pac_bayes_bound(
        self,
        features=None,
        agree=None,
        *,
        delta: float = 0.05,
        delta_mc: float = 0.01,
        n_draws: int = 1000,
        seed: int = 0,
    ) -> PACBayesBound:
        """Bound the misranking probability of the Gibbs ranker (PAC-Bayes-kl).

        The Gibbs ranker draws ``theta ~ Q`` and ranks by ``C_theta``.  Its risk is
        ``R(Q) = E_{theta~Q} P(C_theta(s) <= C_theta(s'))`` with ``s ~ D(. | agree)`` and
        ``s' ~ D(. | disagree)`` independent: one minus its AUROC, ties counted as errors.

        Notes
        -----
        Assumptions:

        * The examples are i.i.d. (the human labels and features of different examples are
          independent); then, given the class counts, the agreeing and the disagreeing
          examples are i.i.d. from their class-conditional distributions.
        * The prior ``N(0, prior_scale^2 I)`` was fixed before seeing the data (the default
          is; a prior scale tuned on these data voids the bound unless a union bound is paid).
        * The loss is the 0-1 misranking loss (ties count as errors), in [0, 1].

        Construction.  The agreeing and disagreeing examples are matched at random without
        reuse into ``m = min(n_agree, n_disagree)`` disjoint pairs: these are i.i.d., so ``m`` is
        the honest sample size (the thousands of overlapping training pairs are not).  The
        Gibbs risk on them is estimated with ``n_draws`` posterior draws and bounded above by
        the Chernoff-kl inequality ``kl(R_hat_S || R_hat) <= ln(1/delta_mc) / n_draws``
        (Langford and Caruana 2002); that upper value goes into the PAC-Bayes-kl bound
        ``kl(R_hat || R) <= (KL(Q||P) + ln(2 sqrt(m)/delta)) / m`` (Maurer 2004).  The result
        holds with probability at least ``1 - delta - delta_mc``.

        Parameters
        ----------
        features, agree : array_like, optional
            The sample (default: the training data; Q may depend on it, P may not).
        delta : float
            Error level of the PAC-Bayes step.
        delta_mc : float
            Error level of the Monte Carlo step.
        n_draws : int
            Posterior draws.
        seed : int
            Seed of the matching and of the draws.

        Returns
        -------
        PACBayesBound
        """
        if features is None:
            if not hasattr(self, "_train_features"):
                raise HJAError("call fit() first")
            x, a = self._train_features, self._train_agree
        else:
            x = self._checked(features)
            a = check_agree(agree, x.shape[0], need_both=True)
        if not (0 < delta < 1 and 0 < delta_mc < 1):
            raise DataError("delta and delta_mc must lie in (0, 1)")
        rng = np.random.default_rng(seed)
        pos, neg = rng.permutation(np.flatnonzero(a)), rng.permutation(np.flatnonzero(~a))
        m = int(min(len(pos), len(neg)))
        if m < 1:
            raise DataError("need both agreeing and disagreeing examples")
        conf = self._draw_confidences(x, n_draws, seed)
        conf = np.asarray(conf)
        wrong = conf[:, pos[:m]] <= conf[:, neg[:m]]
        gibbs = float(wrong.mean())
        gibbs_upper = kl_inverse_upper(gibbs, math.log(1.0 / delta_mc) / n_draws)
        kl = self.kl_divergence()
        bound = pac_bayes_kl_bound(gibbs_upper, kl, m, delta)
        return PACBayesBound(bound, gibbs, gibbs_upper, kl, m, int(n_draws), float(delta), float(delta_mc))

    def __repr__(self) -> str:
        kind = "posterior" if self.posterior else ("margin-adaptive" if self.margin == "adaptive" else "vanilla")
        return f"ConfidenceRanker({kind}, hidden={self.hidden}, seed={self.seed})"


@jax.jit
def _predict_jit(params, x):
    return mlp_confidence(params, x)


@functools.partial(jax.jit, static_argnums=4)
def _draw_confidences_jit(locs, scales, key, x, n_draws):
    names = sorted(locs)
    sizes = [locs[name].size for name in names]
    noise = jax.random.normal(key, (n_draws, sum(sizes)))  # one draw for all parameters
    draws, start = {}, 0
    for name, size in zip(names, sizes):
        eps = noise[:, start : start + size].reshape((n_draws,) + locs[name].shape)
        draws[name] = locs[name] + scales[name] * eps
        start += size
    return jax.vmap(mlp_confidence, in_axes=(0, None))(draws, x)
