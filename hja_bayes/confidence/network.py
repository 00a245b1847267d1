"""The confidence network: a ReLU MLP ``C(s) = sigmoid(MLP(s))`` and its parameter layouts.

Parameters are a dict ``W0, b0, W1, b1, ...`` (layer l maps ``h @ W_l + b_l``, ReLU between
layers).  A Gaussian posterior over them is kept as one flat vector of means and one of
standard deviations; :func:`unflatten` and :func:`flatten` convert between the two layouts.
Everything here is a pure function of JAX arrays.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

__all__ = [
    "draw_confidences",
    "flatten",
    "he_init",
    "layer_shapes",
    "mlp_confidence",
    "mlp_logit",
    "n_params",
    "network_confidence",
    "prior_scales",
    "unflatten",
    "weight_norm",
]


def mlp_logit(params: dict, x: jax.Array) -> jax.Array:
    """The network's output before the sigmoid.

    Parameters
    ----------
    params : dict
        ``W0, b0, W1, b1, ...``.
    x : array, shape (n, d)

    Returns
    -------
    array, shape (n,)
    """
    n_layers = len(params) // 2
    h = x
    for layer in range(n_layers):
        h = h @ params[f"W{layer}"] + params[f"b{layer}"]
        if layer < n_layers - 1:
            h = jax.nn.relu(h)
    return h[..., 0]


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
    return jax.nn.sigmoid(mlp_logit(params, x))


def weight_norm(params: dict) -> jax.Array:
    """``sqrt(sum_l |W_l|_F^2)`` over the weight matrices (biases excluded).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> float(weight_norm({"W0": jnp.full((2, 2), 0.5), "b0": jnp.ones(2)}))
    1.0
    """
    return jnp.sqrt(sum(jnp.sum(v**2) for k, v in params.items() if k.startswith("W")))


def layer_shapes(n_features: int, hidden: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """``(fan_in, fan_out)`` of every layer of a ``d -> hidden... -> 1`` network.

    Examples
    --------
    >>> layer_shapes(3, (8, 4))
    ((3, 8), (8, 4), (4, 1))
    """
    sizes = (int(n_features),) + tuple(int(h) for h in hidden) + (1,)
    return tuple(zip(sizes[:-1], sizes[1:]))


def n_params(shapes) -> int:
    """Number of weights and biases of a network with these layer shapes.

    Examples
    --------
    >>> n_params(((3, 8), (8, 1)))
    41
    """
    return sum(fan_in * fan_out + fan_out for fan_in, fan_out in shapes)


def prior_scales(shapes, scale: float, n_inputs: int | None = None) -> jax.Array:
    """Prior standard deviations of all parameters, flat (the layout of :func:`flatten`).

    A weight into a layer with ``fan_in`` inputs gets ``scale / sqrt(fan_in)`` (the LeCun
    initialisation scale when ``scale = 1``), a bias ``scale / 2``; so a network drawn from the
    prior has pre-activations of order ``scale`` at every layer, whatever the widths.
    ``n_inputs`` overrides the first layer's fan-in (inputs padded with zero columns keep the
    prior of the real inputs).

    Examples
    --------
    >>> prior_scales(((4, 1),), 1.0).tolist()
    [0.5, 0.5, 0.5, 0.5, 0.5]
    """
    parts = []
    for layer, (fan_in, fan_out) in enumerate(shapes):
        real = fan_in if layer or n_inputs is None else n_inputs
        parts += [jnp.full(fan_in * fan_out, scale / jnp.sqrt(real)), jnp.full(fan_out, 0.5 * scale)]
    return jnp.concatenate(parts)


def he_init(key: jax.Array, shapes, n_inputs: int | None = None) -> dict:
    """He-normal hidden layers; the output layer starts at zero, so every confidence is 1/2.

    A random output layer often starts the sigmoid saturated and the ranking inverted, and the
    margin loss then only pushes every confidence further into the flat tail: training
    collapses to a constant.

    Parameters
    ----------
    key : PRNG key
    shapes : sequence of (fan_in, fan_out)
    n_inputs : int, optional
        The first layer's real fan-in, when the inputs are padded with zero columns.

    Returns
    -------
    dict
    """
    params = {}
    keys = jax.random.split(key, len(shapes))
    for layer, ((fan_in, fan_out), k) in enumerate(zip(shapes, keys)):
        real = fan_in if layer or n_inputs is None else n_inputs
        scale = jnp.sqrt(2.0 / real) if layer < len(shapes) - 1 else 0.0
        params[f"W{layer}"] = jax.random.normal(k, (fan_in, fan_out)) * scale
        params[f"b{layer}"] = jnp.zeros(fan_out)
    return params


def unflatten(theta: jax.Array, shapes) -> dict:
    """Split a flat parameter vector (or a batch of them, leading axes kept) into layers.

    Parameters
    ----------
    theta : array, shape (..., n_params)
    shapes : sequence of (fan_in, fan_out)

    Returns
    -------
    dict
        ``W_l`` of shape (..., fan_in, fan_out), ``b_l`` of shape (..., fan_out).
    """
    params, start = {}, 0
    for layer, (fan_in, fan_out) in enumerate(shapes):
        params[f"W{layer}"] = theta[..., start : start + fan_in * fan_out].reshape(
            theta.shape[:-1] + (fan_in, fan_out)
        )
        start += fan_in * fan_out
        params[f"b{layer}"] = theta[..., start : start + fan_out]
        start += fan_out
    return params


def flatten(params: dict) -> jax.Array:
    """The inverse of :func:`unflatten` for one network.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> p = unflatten(jnp.arange(41.0), layer_shapes(3, (8,)))
    >>> bool((flatten(p) == jnp.arange(41.0)).all())
    True
    """
    n_layers = len(params) // 2
    return jnp.concatenate(
        [jnp.ravel(params[f"{kind}{layer}"]) for layer in range(n_layers) for kind in "Wb"]
    )


@jax.jit
def network_confidence(params: dict, x: jax.Array) -> jax.Array:
    """:func:`mlp_confidence`, compiled once per parameter and feature shape."""
    return mlp_confidence(params, x)


@functools.partial(jax.jit, static_argnums=4)
def draw_confidences(locs: dict, scales: dict, key: jax.Array, x: jax.Array, n_draws: int) -> jax.Array:
    """Confidences under ``n_draws`` weight draws from ``N(locs, diag scales^2)``.

    One standard-normal vector per draw covers all parameters (taken in sorted name order),
    so the draws do not depend on how the rows of ``x`` are blocked.

    Parameters
    ----------
    locs, scales : dict
        Posterior means and standard deviations, same layout as the parameters.
    key : PRNG key
    x : array, shape (n, d)
    n_draws : int

    Returns
    -------
    array, shape (n_draws, n)
    """
    names = sorted(locs)
    sizes = [locs[name].size for name in names]
    noise = jax.random.normal(key, (n_draws, sum(sizes)))
    draws, start = {}, 0
    for name, size in zip(names, sizes):
        eps = noise[:, start : start + size].reshape((n_draws,) + locs[name].shape)
        draws[name] = locs[name] + scales[name] * eps
        start += size
    return jax.vmap(mlp_confidence, in_axes=(0, None))(draws, x)
