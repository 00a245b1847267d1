"""The fitting machinery behind :class:`~hja_bayes.confidence.ConfidenceRanker`.

Padding (rows to a multiple of 256 and feature columns to a multiple of 8, with zeros, so
similar data sizes share one compiled trainer), training several networks at once (one per
training subset and prior scale, under one ``vmap``), posterior draws in row blocks, and the
monotone logistic map that turns the network's score into a reported probability.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize
from scipy.special import log_expit, logit

from ..errors import ParameterError
from .network import draw_confidences, flatten, he_init, network_confidence, prior_scales
from .train import TrainSettings, make_trainer

__all__ = ["pad_rows", "pad_weights", "padded_width", "platt_calibration", "posterior_draws",
           "network_scores", "train_networks"]

ROW_PAD = 256
FEATURE_PAD = 8


def padded_width(d: int) -> int:
    """``d`` rounded up to a multiple of :data:`FEATURE_PAD`."""
    return -(-d // FEATURE_PAD) * FEATURE_PAD


def pad_rows(x: np.ndarray) -> jnp.ndarray:
    """Zero rows up to a multiple of 256 and zero columns up to a multiple of 8."""
    rows = -(-x.shape[0] // ROW_PAD) * ROW_PAD
    out = np.zeros((rows, padded_width(x.shape[1])))
    out[: x.shape[0], : x.shape[1]] = x
    return jnp.asarray(out)


def pad_weights(params: dict | None) -> dict | None:
    """First-layer weights with zero rows for the zero columns of :func:`pad_rows`."""
    if params is None:
        return None
    w = np.asarray(params["W0"])
    padded = np.zeros((padded_width(w.shape[0]), w.shape[1]))
    padded[: w.shape[0]] = w
    return {**params, "W0": jnp.asarray(padded)}


def platt_calibration(score: np.ndarray, agree: np.ndarray) -> tuple[float, float]:
    """Slope (> 0) and intercept of a logistic map from ``logit(score)`` to agreement.

    Fitted by maximum likelihood with the slope kept positive, so the map never changes the
    order of the scores.
    """
    z = logit(np.clip(score, 1e-12, 1 - 1e-12))
    y = np.where(agree, 1.0, -1.0)

    def objective(w):
        return -np.sum(log_expit(y * (np.exp(w[0]) * z + w[1])))

    res = minimize(objective, np.array([0.0, 0.0]), method="L-BFGS-B", bounds=[(-8.0, 4.0), (-20.0, 20.0)])
    return float(np.exp(res.x[0])), float(res.x[1])


def train_networks(settings: TrainSettings, x: np.ndarray, agree_sets, scales, key, *, n_pairs: int,
                   kl_weight: float, margin: float, n_epochs: int):
    """Train one network per (agreement mask, prior scale) at once; returns stacked weights.

    ``agree_sets`` holds one vector per network: 1 agree, 0 disagree, -1 left out.  The
    inputs are padded with zero columns to ``settings.shapes[0][0]``; a zero input column
    leaves its weights out of the data term, their prior and initial values are those of
    the real first layer, and they are cut off afterwards, so the result is the network of
    the real inputs.

    Returns
    -------
    (locs, scales, EpochInfo)
        Each with a leading axis over the networks (``scales`` None if deterministic).
    """
    d = x.shape[1]
    keys = jax.random.split(key, len(scales))
    his, los, weights, inits = [], [], [], []
    for k, mask in zip(keys, agree_sets):
        pos, neg = np.flatnonzero(mask == 1), np.flatnonzero(mask == 0)
        kh, kl, ki = jax.random.split(jax.random.fold_in(k, 1), 3)
        his.append(jnp.asarray(pos)[jax.random.randint(kh, (n_pairs,), 0, len(pos))])
        los.append(jnp.asarray(neg)[jax.random.randint(kl, (n_pairs,), 0, len(neg))])
        weights.append(min(len(pos), len(neg)) / kl_weight)
        init = he_init(ki, settings.shapes, n_inputs=d)
        inits.append(flatten({**init, "W0": init["W0"].at[d:].set(0.0)}))
    prior = jnp.stack([prior_scales(settings.shapes, s, n_inputs=d) for s in scales])
    run = make_trainer(settings, n_epochs, batched=True)
    locs, sds, history = run(keys, pad_rows(x), jnp.stack(his), jnp.stack(los), margin,
                             jnp.asarray(weights), prior, jnp.stack(inits))
    cut = lambda p: None if p is None else {**p, "W0": p["W0"][:, :d]}  # noqa: E731
    return cut(locs), cut(sds), history


def posterior_draws(locs: dict, scales: dict, x: np.ndarray, n_draws: int, seed: int) -> np.ndarray:
    """Network confidences under ``n_draws`` weight draws, shape (n_draws, n).

    Computed in row blocks (memory near n_draws x block x width); every block sees the same
    draws, so a row's value does not depend on the other rows.
    """
    if int(n_draws) < 1:
        raise ParameterError("n_draws must be positive")
    width = max(int(np.asarray(v).shape[-1]) for v in locs.values())
    block = max(ROW_PAD, (2**25 // (int(n_draws) * width)) // ROW_PAD * ROW_PAD)
    key = jax.random.PRNGKey(seed)
    padded_locs, padded_scales = pad_weights(locs), pad_weights(scales)
    out = np.empty((int(n_draws), x.shape[0]))
    for start in range(0, x.shape[0], block):
        rows = x[start : start + block]
        conf = draw_confidences(padded_locs, padded_scales, key, pad_rows(rows), int(n_draws))
        out[:, start : start + len(rows)] = np.asarray(conf)[:, : len(rows)]
    return out


def network_scores(locs: dict, scales: dict | None, x: np.ndarray, n_draws: int, seed: int) -> np.ndarray:
    """The network's confidence: the posterior mean over ``n_draws`` draws, or the plain
    network when ``scales`` is None."""
    if scales is None:
        return np.asarray(network_confidence(pad_weights(locs), pad_rows(x)))[: len(x)]
    return posterior_draws(locs, scales, x, n_draws, seed).mean(axis=0)
