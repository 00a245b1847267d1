"""Laplace approximation at the MAP: dispersed starts and the mass matrix."""

from functools import partial

import jax.numpy as jnp
import numpy as np
from numpyro.infer.util import potential_energy

from hja_bayes import wald_inference
from hja_bayes.bayes.laplace import dispersed_starts, laplace_at, posterior_mode
from hja_bayes.bayes.model import chart_at, hja_model, unconstrain
from hja_bayes.bayes.outcomes import stack_counts
from hja_bayes.decomposition import Decomposition
from hja_bayes.likelihood import cells_of

from .bayes_support import panel


def test_the_mode_and_its_hessian_by_differences_match_a_closed_form():
    """posterior_mode(laplace=True): the mode of a smooth non-quadratic potential and its
    Hessian from differences of the gradient, against the written-out derivatives."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    precision = A @ A.T + np.eye(4)
    shift = rng.normal(size=4)

    def potential(p):  # 0.5 x'Px + sum(softplus(x)) + 0.1 sum(x^4), x = (a, b) - shift
        x = jnp.concatenate([p["a"], p["b"]]) - shift
        return 0.5 * x @ precision @ x + jnp.sum(jnp.logaddexp(0.0, x)) + 0.1 * jnp.sum(x**4)

    start = {"a": jnp.zeros(1), "b": jnp.zeros(3)}
    mode, lap = posterior_mode(potential, start, laplace=True)
    x = np.concatenate([np.asarray(mode["a"]), np.asarray(mode["b"])]) - shift
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(precision @ x + sig + 0.4 * x**3, 0, atol=1e-5)  # a mode
    hessian = precision + np.diag(sig * (1 - sig) + 1.2 * x**2)
    assert lap.sites == ("a", "b")
    np.testing.assert_allclose(lap.mean, x + shift)
    np.testing.assert_allclose(lap.covariance, np.linalg.inv(hessian), rtol=1e-6, atol=1e-9)


def test_laplace_of_a_gaussian_is_exact_and_starts_are_dispersed():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5))
    precision = A @ A.T + np.eye(5)
    mean = {"a": jnp.asarray(rng.normal(size=2)), "b": jnp.asarray(rng.normal(size=(3,)))}
    centre = np.concatenate([mean["a"], mean["b"]])

    def potential(p):
        x = jnp.concatenate([p["a"], p["b"]]) - centre
        return 0.5 * x @ precision @ x

    lap = laplace_at(potential, mean)
    assert lap.sites == ("a", "b")
    np.testing.assert_allclose(lap.covariance, np.linalg.inv(precision), rtol=1e-10, atol=1e-12)
    starts = dispersed_starts(lap, mean, 4000, seed=1, inflation=1.5)
    x = np.concatenate([starts["a"], starts["b"]], axis=1)
    assert x.shape == (4000, 5)
    # variance of each coordinate: 2.25 x the Laplace variance; a sample variance of 4,000
    # normal draws has relative sd sqrt(2/4000) = 2.2%: allow 10%
    ratio = x.var(axis=0) / (2.25 * np.diag(lap.covariance))
    assert np.all(np.abs(ratio - 1) < 0.1), ratio
    assert np.abs(x.mean(axis=0) - centre).max() < 4 * 1.5 * np.sqrt(np.diag(lap.covariance).max() / 4000)


def map_point():
    """The rank-1 panel's MAP in the sampler's raw coordinates: (data, fit, chart, raw sites,
    the model's arguments, the model)."""
    data, _, fit, _ = panel()
    reference = Decomposition(fit.gamma, fit.mu, fit.U, fit.V, fit.D)
    chart = chart_at(reference)
    raw = unconstrain(reference, fit.beta, chart)
    params = {"z_mu": raw.z_mu, "z_gamma": raw.z_gamma, "l_free": raw.l_free, "w": raw.w,
              "beta_raw": raw.beta}
    cells = cells_of(data)
    model = partial(hja_model, rank=1, position_bias=True)
    return data, fit, chart, params, (cells, chart, stack_counts(cells)), model


def test_laplace_covariance_of_mu_matches_the_wald_covariance():
    """At 1,500 comparisons per judge the posterior curvature at the MAP is the Fisher
    information (the prior adds ~0.1% here): se of mu_a - mu_b agree to 3%."""
    data, fit, chart, params, args, model = map_point()
    lap = laplace_at(lambda p: potential_energy(model, args, {}, p), params)
    sizes = {k: int(np.size(params[k])) for k in lap.sites}
    start = sum(sizes[k] for k in lap.sites[: lap.sites.index("z_mu")])
    block = lap.covariance[start:start + sizes["z_mu"], start:start + sizes["z_mu"]]
    A = np.asarray(chart.item_basis)
    cov_mu = A @ block @ A.T
    a, b = np.triu_indices(data.n_items, k=1)
    se_laplace = np.sqrt(cov_mu[a, a] + cov_mu[b, b] - 2 * cov_mu[a, b])
    wald = wald_inference(data, fit.S, fit.beta, 1, position_bias=True)
    se_wald = wald.contrast(lambda S_, b_: (S_.mean(0)[a] - S_.mean(0)[b])).se
    np.testing.assert_allclose(se_laplace, se_wald, rtol=0.03)
    assert np.all(lap.hessian_eigenvalues > 0)


def test_whitened_model_has_the_models_density_and_sites():
    """NUTS's model in whitened coordinates (one compiled density): at u its potential is the
    plain model's at raw = mean + scale u, a site sampled on the log scale adding its
    log-Jacobian,
    and it records the model's deterministic sites with the same values."""
    from jax.flatten_util import ravel_pytree
    from numpyro.handlers import condition, seed, trace

    from hja_bayes.bayes.laplace import preconditioned

    _, _, _, params, args, model = map_point()
    flat, unravel = ravel_pytree({k: jnp.asarray(v) for k, v in params.items()})
    rng = np.random.default_rng(3)
    d = flat.shape[0]
    mean = jnp.asarray(flat + 0.01 * rng.normal(size=d))
    scale = jnp.asarray(0.05 * rng.normal(size=(d, d)) + np.eye(d) * 0.1)
    u = jnp.asarray(rng.normal(size=d))
    whitened = partial(preconditioned, model=model, unravel=unravel)
    got = potential_energy(whitened, args + (mean, scale), {}, {"u": u})
    values = unravel(mean + scale @ u)
    expected = potential_energy(model, args, {}, values)
    np.testing.assert_allclose(got, expected, rtol=1e-12)

    sites = trace(seed(condition(whitened, {"u": u}), 0)).get_trace(*args, mean, scale)
    plain = trace(seed(condition(model, values), 0)).get_trace(*args)
    for name in ("gamma", "mu", "U", "V", "S", "beta"):
        np.testing.assert_allclose(sites[name]["value"], plain[name]["value"], rtol=1e-12)
        assert sites[name]["type"] == "deterministic"

    # a site on the log scale: the model sees exp(raw) and the potential loses sum(raw)
    log_whitened = partial(preconditioned, model=model, unravel=unravel,
                           log_sites=("beta_raw",))
    got = potential_energy(log_whitened, args + (mean, scale), {}, {"u": u})
    exp_values = dict(values, beta_raw=jnp.exp(values["beta_raw"]))
    expected = (potential_energy(model, args, {}, exp_values)
                - float(jnp.sum(values["beta_raw"])))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    recorded = trace(seed(condition(log_whitened, {"u": u}), 0)).get_trace(*args, mean, scale)
    np.testing.assert_allclose(recorded["beta_raw_value"]["value"], exp_values["beta_raw"])
