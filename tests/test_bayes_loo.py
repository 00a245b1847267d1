"""PSIS-LOO over single comparisons and the choice of rank (hja_bayes.bayes.loo)."""

import numpy as np
import pytest

from hja_bayes.bayes import rank_comparison

from .bayes_support import panel, panel_rank0


def test_rank_comparison_reports_loo_next_to_bic():
    _, _, fit1, idata1 = panel()
    fit0, idata0 = panel_rank0()
    table = rank_comparison({0: idata0, 1: idata1})
    assert set(table.index) == {0, 1}
    assert table.loc[0, "bic"] == pytest.approx(fit0.bic)
    assert table.loc[1, "bic"] == pytest.approx(fit1.bic)
    assert {"elpd_loo", "p_loo", "elpd_diff", "max_pareto_k", "loo_rank", "bic_rank"} <= set(table.columns)
    # the data were simulated at rank 1 with strong disagreement: both criteria see it
    assert table.loc[1, "loo_rank"] == 1 and table.loc[1, "bic_rank"] == 1


@pytest.mark.parametrize("left_out", ["first", "second"])
@pytest.mark.parametrize("start", [(0.0, 0.0), (9.0, 0.0), (-3.0, 2.0)])
def test_a_left_out_verdicts_integral_holds_where_newton_steps_overshoot(left_out, start):
    """The integrated leave-one-out density of one verdict, ``log E[p(y_n | alpha_a,
    alpha_b) | y_-n]``, against a dense grid over the two answer effects.  Twenty verdicts
    against an improbable logit (-12) make plain Newton steps from 0 jump between 0 and 20
    (the score is the twenty wins, the information nearly 0, then the other way round) and
    never reach the mode; the steps are halved where the full one lowers the log density, so
    the rule is placed at the mode from any start."""
    import jax.numpy as jnp
    from scipy.special import log_expit, logsumexp

    from hja_bayes.bayes.prompt_loo import _left_out_log_density
    from hja_bayes.likelihood import outcome_model

    # units: the left-out verdict's (a first, b second; no other verdict), a against another
    # answer (20 wins at logit -12), b against another (one win, one loss)
    base, g = np.array([[1.0, -12.0, 0.0]]), np.ones((1, 3))
    ca, cb = np.array([1.0, 1.0, 0.0]), np.array([-1.0, 0.0, 1.0])
    kept = np.array([[0.0, 0, 0], [20.0, 0, 0], [1.0, 0, 1.0]])
    one = np.array([1.0, 0, 0]) if left_out == "first" else np.array([0.0, 0, 1.0])
    tau_a, tau_b = 1.0, 0.8
    x, w = np.polynomial.hermite.hermgauss(8)
    z1, z2 = (z.ravel() for z in np.meshgrid(np.sqrt(2) * x, np.sqrt(2) * x, indexing="ij"))
    log_weight = np.log(np.outer(w, w).ravel()) + 0.5 * (z1**2 + z2**2)
    got = _left_out_log_density(
        jnp.asarray(base), jnp.asarray(g), None, jnp.array([tau_a**-2]), jnp.array([tau_b**-2]),
        jnp.array([start[0]]), jnp.array([start[1]]), jnp.asarray(ca), jnp.asarray(cb),
        jnp.asarray(kept), 0, jnp.asarray(one), jnp.asarray(z1), jnp.asarray(z2),
        jnp.asarray(log_weight), outcome=outcome_model("half"), newton_steps=8)

    def log_lik(eta, c):  # ties count 1/2
        return (c[0] + c[1] / 2) * log_expit(eta) + (c[2] + c[1] / 2) * log_expit(-eta)

    A, B = np.meshgrid(np.linspace(-8, 18, 1301), np.linspace(-8, 8, 801), indexing="ij")
    log_post = -0.5 * (A**2 / tau_a**2 + B**2 / tau_b**2)
    for u in range(3):
        log_post = log_post + log_lik(base[0, u] + ca[u] * A + cb[u] * B, kept[u])
    exact = logsumexp(log_post + log_lik(base[0, 0] + A - B, one)) - logsumexp(log_post)
    # the 8 x 8 rule's own error here is about 3e-6 (plain Newton steps gave -5.03 against
    # -12.31 for a left-out loss)
    assert float(got[0]) == pytest.approx(exact, abs=1e-4)


def test_the_pareto_k_limit_is_arviz_rule_for_the_number_of_draws():
    """``min(1 - 1/log10(S), 0.7)``: a fixed 0.7 had called estimates reliable that ArviZ
    flags on a short run (2 x 200 draws: 0.616)."""
    import warnings

    import arviz as az

    from hja_bayes.bayes.loo import pareto_k_limit

    for draws in (100, 400, 1000, 2154, 4000):
        assert pareto_k_limit(draws) == pytest.approx(min(1 - 1 / np.log10(draws), 0.7))
    rng = np.random.default_rng(0)
    log_lik = rng.standard_normal((2, 200, 30)) * np.linspace(0.1, 3, 30)
    idata = az.from_dict(posterior={"x": rng.standard_normal((2, 200))},
                         log_likelihood={"y": log_lik})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = az.loo(idata, pointwise=True)
    assert theirs.good_k == pytest.approx(pareto_k_limit(400))


def test_psis_loo_refuses_a_bad_relative_efficiency_and_a_non_posterior():
    """reff=0 had failed inside ArviZ (ZeroDivisionError), NaN had returned a number, and
    None for the posterior an AttributeError."""
    import hja_bayes as hb
    from hja_bayes.bayes import psis_loo

    _, _, _, idata = panel()
    for reff in (0, -1, float("nan"), "a"):
        with pytest.raises(hb.ParameterError, match="reff must be"):
            psis_loo(idata, reff=reff)
    with pytest.raises(hb.ParameterError, match="expected the InferenceData of sample_hja"):
        psis_loo(None)
