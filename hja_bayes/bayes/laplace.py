"""The Laplace approximation at the MAP, in the sampler's own (raw) coordinates.

The posterior of the raw coordinates (:class:`~hja_bayes.bayes.coordinates.RawCoordinates`) is
close to Gaussian once each judge has a few hundred comparisons.  Its curvature at the MAP,
the Hessian ``H`` of NUTS's potential energy (negative log posterior density), is known
before sampling, and it gives two things:

* **dispersed starts**: each chain starts from an independent draw of
  ``N(raw_MAP, inflation^2 H^-1)``, so R-hat compares chains that did not start at one
  point (SPEC §6);
* **the mass matrix**: ``H^-1`` is the inverse mass matrix NUTS needs, so warm-up only has
  to tune the step size instead of estimating a dense covariance from a few hundred
  correlated warm-up draws.  It is applied as a change of coordinates
  (:func:`preconditioned`): NUTS samples ``u`` with ``raw = mean + scale u`` under an
  identity mass matrix, which is the same sampler as NUTS on ``raw`` with inverse mass
  matrix ``scale scale^T``; mean and scale then enter the sampler as data, so a sampler
  compiled once serves every data set of the same shape.

The Hessian is assembled column by column from Hessian-vector products (forward over
reverse differentiation), so its memory is that of a few gradients; where the potential has
Newton iterations inside (integrated prompt effects), from central differences of the
gradient instead (:func:`posterior_mode`).  Its eigenvalues are taken in absolute value (at
a point that is not exactly a mode a direction can curve down; its |curvature| still gives
the right scale, as in the SoftAbs metric) and floored at 1e-6 of the largest, so that no
direction gets an absurd scale.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

__all__ = ["Laplace", "covariance_from_hessian", "dispersed_starts", "hessian_by_differences",
           "laplace_at", "posterior_mode", "preconditioned", "whitened_starts", "INFLATION"]

#: Standard-deviation inflation of the dispersed starting points.
INFLATION = 1.5
#: |Eigenvalues| of H below this fraction of the largest are floored to it.
EIGEN_FLOOR = 1e-6


class Laplace(NamedTuple):
    """Gaussian approximation of the raw posterior at a point.

    Attributes
    ----------
    sites : tuple of str
        Raw site names in NumPyro's order for a dense mass matrix (sorted).
    mean : ndarray (d,)
        The point (flattened raw coordinates).
    covariance : ndarray (d, d)
        ``|H|^-1`` (eigenvalues in absolute value, floored).
    scale : ndarray (d, d)
        A square root of the covariance (``scale @ scale.T``).
    hessian_eigenvalues : ndarray (d,)
        Eigenvalues of H before flooring (for diagnostics).
    """

    sites: tuple
    mean: np.ndarray
    covariance: np.ndarray
    scale: np.ndarray
    hessian_eigenvalues: np.ndarray


def laplace_at(potential, params: dict, batch_size: int | None = 32) -> Laplace:
    """Laplace approximation of ``exp(-potential)`` at ``params``.

    Parameters
    ----------
    potential : callable dict -> scalar
        Potential energy (negative log density) of the raw sites.
    params : dict name -> array
        The point (e.g. the MAP's raw coordinates).
    batch_size : int or None
        Hessian columns computed at once (vectorised); None computes them one after
        another.  (A potential with Newton iterations inside, integrated prompt effects,
        gets its Hessian from :func:`posterior_mode` instead.)
    """
    sites = tuple(sorted(params))
    flat, unravel = ravel_pytree({k: jnp.asarray(params[k]) for k in sites})

    def flat_potential(x):
        return potential(unravel(x))

    grad = jax.grad(flat_potential)

    def column(v):
        return jax.jvp(grad, (flat,), (v,))[1]

    eye = jnp.eye(flat.shape[0], dtype=flat.dtype)
    H = np.asarray(jax.jit(lambda e: jax.lax.map(column, e, batch_size=batch_size))(eye))
    cov, scale, lam = covariance_from_hessian(H)
    return Laplace(sites, np.asarray(flat), cov, scale, lam)


def covariance_from_hessian(H) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``|H|^-1``, a square root of it, and H's eigenvalues (module docstring: absolute
    eigenvalues, floored at 1e-6 of the largest)."""
    H = np.asarray(H, dtype=float)
    lam, Q = np.linalg.eigh((H + H.T) / 2)
    floor = EIGEN_FLOOR * max(float(np.abs(lam).max()), 1.0)
    scale = Q / np.sqrt(np.maximum(np.abs(lam), floor))
    cov = scale @ scale.T
    return (cov + cov.T) / 2, scale, lam


def whitened_starts(laplace: Laplace, n_chains: int, seed,
                    inflation: float = INFLATION) -> np.ndarray:
    """Starting points in the coordinates ``u`` of :func:`preconditioned`: independent
    ``N(0, inflation^2 I)`` draws, shape (n_chains, d)."""
    rng = np.random.default_rng(seed)
    return inflation * rng.standard_normal((n_chains, laplace.mean.shape[0]))


def dispersed_starts(laplace: Laplace, params: dict, n_chains: int, seed,
                     inflation: float = INFLATION) -> dict:
    """Independent draws of ``N(mean, inflation^2 covariance)``, one per chain: the raw
    coordinates of :func:`whitened_starts` (same seed, same points).

    Returns
    -------
    dict name -> array (n_chains, ...)
        Starting raw coordinates in the layout of ``params``.
    """
    _, unravel = ravel_pytree({k: jnp.asarray(params[k]) for k in laplace.sites})
    points = laplace.mean + whitened_starts(laplace, n_chains, seed, inflation) @ laplace.scale.T
    starts = jax.vmap(unravel)(jnp.asarray(points))
    return {k: starts[k] for k in laplace.sites}


def posterior_mode(potential, params: dict, max_iter: int = 500, laplace: bool = False):
    """Minimise the potential from ``params`` (L-BFGS over the flattened raw sites).

    Used where the MAP of :func:`~hja_bayes.fit_hja` leaves parameters out (the answer
    effects and tau of prompt effects): the Laplace approximation is then taken at the
    mode of the whole posterior.

    With ``laplace``, also returns the Laplace approximation at the mode, its Hessian
    from central differences of the gradient the search compiled
    (:func:`hessian_by_differences`): for a potential with Newton iterations inside
    (integrated prompt effects), whose exact second derivatives took a program of their
    own (7 s to compile on a three-model panel, 8 s to run on a 5 x 5 panel of 1,000
    prompts) for a matrix that only scales the sampler's coordinates.

    Returns
    -------
    dict, or (dict, Laplace)
    """
    from scipy.optimize import minimize

    sites = tuple(sorted(params))
    flat, unravel = ravel_pytree({k: jnp.asarray(params[k]) for k in sites})
    value_and_grad = jax.jit(jax.value_and_grad(lambda x: potential(unravel(x))))

    def fun(x):
        v, g = value_and_grad(jnp.asarray(x))
        return float(v), np.asarray(g, dtype=float)

    res = minimize(fun, np.asarray(flat), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter})
    mode = dict(unravel(jnp.asarray(res.x)))
    if not laplace:
        return mode
    point = np.asarray(ravel_pytree({k: mode[k] for k in sites})[0])
    H = hessian_by_differences(lambda x: fun(x)[1], point)
    return mode, Laplace(sites, point, *covariance_from_hessian(H))


#: Relative step of :func:`hessian_by_differences`.
DIFFERENCE_STEP = 1e-4


def hessian_by_differences(grad, x, step: float = DIFFERENCE_STEP) -> np.ndarray:
    """The Hessian at ``x`` from central differences of an exact ``grad``, symmetrised.

    Coordinate i moves by ``step * max(1, |x_i|)``; the error is of order step^2 times
    the third derivatives plus the gradient's own error over the step.
    """
    x = np.asarray(x, dtype=float)
    H = np.empty((x.size, x.size))
    for i in range(x.size):
        h = step * max(1.0, abs(x[i]))
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        H[:, i] = (np.asarray(grad(up)) - np.asarray(grad(down))) / (2 * h)
    return (H + H.T) / 2


def preconditioned(cells, chart, obs, mean, scale, *, model, unravel, log_sites=()):
    """``model`` in whitened coordinates: one site ``u`` with ``raw = mean + scale u``.

    The raw sites are computed from u and the model's log density (priors and likelihood)
    is evaluated at them, unchanged; the linear map has a constant Jacobian.  Sites in
    ``log_sites`` are sampled on the log scale (``raw`` holds their log, as NumPyro's
    unconstrained coordinates of a positive variable): the model sees ``exp(raw)``, the
    log-Jacobian is added, and the value is recorded as the deterministic site
    ``<name>_value``.  The model's own deterministic sites are recorded as they are.

    The density is one compiled function of u and the data (:func:`_whitened_density`), so
    that NumPyro's start-up, which evaluates the model and its gradient outside any
    compiled program, runs a few compiled calls instead of hundreds of single operations
    (each compiled on its own: 14 of the 29 s a first 2-chain run on PRD took).

    Parameters
    ----------
    cells, chart, obs
        The model's data arguments.
    mean, scale : array (d,); array (d, d) or ArrowScale
        A :class:`Laplace` (or :class:`~hja_bayes.bayes.arrow.ArrowLaplace`)
        approximation's mean and scale (data, not constants).
    model : callable
        The NumPyro model (e.g. a ``partial`` of :func:`~hja_bayes.bayes.model.hja_model`).
    unravel : callable
        Flat vector -> dict of raw sites (``jax.flatten_util.ravel_pytree``'s).
    log_sites : tuple of str
    """
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    u = numpyro.sample("u", dist.ImproperUniform(constraints.real_vector, (),
                                                 (mean.shape[0],)))
    log_joint, recorded = _whitened_density(u, cells, chart, obs, mean, scale, model=model,
                                            unravel=unravel, log_sites=tuple(log_sites))
    numpyro.factor("log_joint", log_joint)
    for name, value in recorded.items():
        numpyro.deterministic(name, value)


def _whitened_density_impl(u, cells, chart, obs, mean, scale, *, model, unravel, log_sites):
    """The log density of :func:`preconditioned` at ``u`` and the deterministic sites'
    values, as a pure function (the model's handlers stay inside)."""
    from numpyro.handlers import block
    from numpyro.infer.util import log_density

    values = dict(unravel(mean + scale @ u))
    log_jacobian = jnp.zeros(())
    recorded = {}
    for name in log_sites:
        log_jacobian = log_jacobian + jnp.sum(values[name])
        values[name] = recorded[f"{name}_value"] = jnp.exp(values[name])
    with block():  # the model's sites are not the enclosing model's
        log_joint, trace = log_density(model, (cells, chart, obs), {}, values)
    recorded.update({name: site["value"] for name, site in trace.items()
                     if site["type"] == "deterministic"})
    return log_joint + log_jacobian, recorded


_whitened_density = jax.jit(_whitened_density_impl,
                            static_argnames=("model", "unravel", "log_sites"))
