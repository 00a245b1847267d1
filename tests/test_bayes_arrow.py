"""The arrow-shaped Laplace approximation of sampled prompt effects
(:mod:`hja_bayes.bayes.arrow`), against the dense Hessian."""

import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import potential_energy

from hja_bayes import fit_hja, simulate
from hja_bayes.bayes.arrow import arrow_apply, arrow_laplace, arrow_layout
from hja_bayes.bayes.laplace import posterior_mode, preconditioned
from hja_bayes.bayes.outcomes import held_aux
from hja_bayes.bayes.priors import HJAPriors
from hja_bayes.bayes.problem import build_problem
from hja_bayes.likelihood import outcome_model


@functools.lru_cache(maxsize=None)
def sampled_problem():
    """A small panel's sampled prompt-effects problem (prompts of two to five answers, with
    position bias) and the mode of its whole posterior, tau included."""
    data, _ = simulate(3, 5, 1, 40, seed=2, questions=60, question_correlation=0.5)
    fit = fit_hja(data, 1, position_bias=True)
    half = outcome_model("half")
    problem = build_problem(data, fit, 1, True, "sampled", HJAPriors(), half,
                            held_aux(data, half))
    return problem, posterior_mode(problem.potential, problem.params0)


def dense_hessian(potential, params):
    sites = tuple(sorted(params))
    flat, unravel = ravel_pytree({k: jnp.asarray(params[k]) for k in sites})
    H = jax.jit(jax.hessian(lambda x: potential(unravel(x))))(flat)
    return np.asarray(H), flat, unravel


def test_the_square_root_factors_the_inverse_hessian_at_the_mode():
    """At the posterior mode (H positive definite), T T' = H^-1 with H the dense Hessian
    from JAX's own second derivatives, and the answer coordinates' variances are the
    diagonal of H^-1."""
    problem, mode = sampled_problem()
    H, flat, _ = dense_hessian(problem.potential, mode)
    assert np.linalg.eigvalsh(H).min() > 0
    lap = arrow_laplace(problem.potential, mode, problem.answers.question)
    assert lap.sites == tuple(sorted(mode))
    np.testing.assert_allclose(lap.mean, flat, rtol=0, atol=0)
    d = len(flat)
    T = np.asarray(jax.vmap(lambda u: arrow_apply(lap.scale, u))(jnp.eye(d))).T
    covariance = np.linalg.inv(H)
    np.testing.assert_allclose(T @ T.T, covariance, rtol=0, atol=1e-10)
    start = sum(np.size(mode[k]) for k in lap.sites[: lap.sites.index("z_alpha")])
    n_z = np.size(mode["z_alpha"])
    np.testing.assert_allclose(lap.effect_variances,
                               np.diag(covariance)[start:start + n_z], rtol=1e-10)
    # prompts here have 2 to 5 answers: the padding of the blocks was exercised
    sizes = np.bincount(problem.answers.question)
    assert sizes[sizes > 0].min() < sizes.max()


def test_away_from_the_mode_the_change_of_coordinates_stays_invertible():
    """At the MAP's point with tau at its prior guess (not a mode), T is still invertible
    and well scaled: its singular values lie within those of |H|^-1/2 up to the
    blockwise flooring (a factor of 100 either way)."""
    problem, _ = sampled_problem()
    params = problem.params0
    H, flat, _ = dense_hessian(problem.potential, params)
    lap = arrow_laplace(problem.potential, params, problem.answers.question)
    T = np.asarray(jax.vmap(lambda u: arrow_apply(lap.scale, u))(jnp.eye(len(flat)))).T
    singular = np.linalg.svd(T, compute_uv=False)
    lam = np.abs(np.linalg.eigvalsh(H))
    assert singular.min() > 0.01 / np.sqrt(lam.max())
    assert singular.max() < 100 / np.sqrt(lam.min())


def test_the_whitened_density_with_the_arrow_is_the_models_density():
    """The sampler's density at u is the model's at raw = mean + T u, with log tau's
    Jacobian, T the explicit matrix."""
    problem, mode = sampled_problem()
    lap = arrow_laplace(problem.potential, mode, problem.answers.question)
    _, flat, unravel = dense_hessian(problem.potential, mode)
    d = len(flat)
    T = np.asarray(jax.vmap(lambda u: arrow_apply(lap.scale, u))(jnp.eye(d))).T
    u = np.random.default_rng(0).normal(size=d)
    whitened = partial(preconditioned, model=problem.model, unravel=unravel,
                       log_sites=("tau",))
    args = problem.args + (jnp.asarray(lap.mean), lap.scale)
    got = jax.jit(lambda v: potential_energy(whitened, args, {}, {"u": v}))(jnp.asarray(u))
    # NumPyro's potential of the raw sites (log tau for tau, with its Jacobian)
    expected = jax.jit(lambda x: problem.potential(unravel(x)))(jnp.asarray(lap.mean + T @ u))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_layout_refuses_a_prompt_list_of_the_wrong_length():
    problem, mode = sampled_problem()
    with pytest.raises(ValueError, match="answer coordinates"):
        arrow_layout(mode, problem.answers.question[:-1])
