"""Implied prior of win probabilities and the prior predictive (hja_bayes.bayes.prior)."""

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy import stats

from hja_bayes import simulate
from hja_bayes.bayes import HJAPriors, prior_predictive
from hja_bayes.reporting import prior_predictive_plot

DRAWS = 2000


@pytest.fixture(scope="module")
def design():
    return simulate(4, 8, 1, 200, seed=0)[0]


@pytest.fixture(scope="module")
def prior(design):
    return prior_predictive(design, 1, num_samples=DRAWS, seed=1)


def test_one_consensus_pair_matches_the_closed_form(prior):
    """mu_0 - mu_1 ~ N(0, 2 s^2): P(outside [0.1, 0.9]) = 2 Phi(-logit(0.9) / (s sqrt 2)).
    The draws are independent: allow 4 binomial standard errors."""
    s = HJAPriors().mu_scale
    expected = 2 * stats.norm.cdf(-np.log(9) / (s * np.sqrt(2)))
    p = prior.consensus[:, 0]  # pair (0, 1)
    share = np.mean((p < 0.1) | (p > 0.9))
    assert abs(share - expected) < 4 * np.sqrt(expected * (1 - expected) / DRAWS)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-(prior.draws["mu"][:, 0]
                                                    - prior.draws["mu"][:, 1]))))


def test_default_priors_are_weakly_informative_in_fact(design, prior):
    """Documented: about 30% of consensus pairs and at most 40% of judge pairs outside
    [0.1, 0.9] (uniform win probabilities: 20%); the old scales put 60% there.  Shares over
    2,000 draws are known to about +-0.02 (pairs within a draw are dependent)."""
    assert 0.25 < prior.shares["consensus_outside"] < 0.35
    assert prior.shares["judge_outside"] < 0.42
    old = prior_predictive(design, 1, priors=HJAPriors(mu_scale=3.0, U_scale=2.0),
                           num_samples=DRAWS, seed=1)
    assert old.shares["consensus_outside"] > 0.55 and old.shares["judge_outside"] > 0.55


@pytest.mark.parametrize("judges, rank", [(4, 1), (4, 2), (5, 3)])
def test_the_disagreement_has_the_prior_of_a_full_gaussian_u_at_every_rank(judges, rank):
    """U is documented as a centred Gaussian K x r matrix of entry scale s_U (in the K - 1
    dimensions orthogonal to 1) and V^T V = N I, so ||S - gamma mu^T||_F^2 = N ||U||_F^2 is
    N s_U^2 times a chi-square of (K - 1) r degrees of freedom.  Drawn without the Bartlett
    factor of the removed rotation (NumPyro's Predictive leaves factor sites out), the prior
    predictive had (K - 1) r - r (r - 1) / 2 from rank 2 on."""
    n_items, scale = 7, 1.3
    data = simulate(judges, n_items, rank, 200, seed=0)[0]
    prior = prior_predictive(data, rank, priors=HJAPriors(U_scale=scale), num_samples=DRAWS,
                             seed=2)
    d = prior.draws
    disagreement = d["S"] - d["gamma"][:, :, None] * d["mu"][:, None, :]
    x = (disagreement**2).sum(axis=(1, 2)) / (n_items * scale**2)
    assert stats.kstest(x, stats.chi2((judges - 1) * rank).cdf).pvalue > 1e-3


def test_prior_predictive_refuses_what_it_cannot_draw_with(design):
    from hja_bayes import ParameterError
    from hja_bayes.bayes import implied_win_probabilities

    for kwargs, match in ((dict(bounds=(0.9, 0.1)), "low < high"),  # every share had been 1
                          (dict(num_samples=2.5), "num_samples must be an integer"),
                          (dict(priors=HJAPriors(mu_scale=-1.0)), "mu_scale"),
                          (dict(priors=HJAPriors(gamma_scale="empirical")), "read from a fit")):
        with pytest.raises(ParameterError, match=match):
            prior_predictive(design, 1, **kwargs)
    with pytest.raises(ParameterError, match="same draws and items"):
        implied_win_probabilities(np.zeros((2, 4)), np.zeros((2, 3, 5)))


def test_prior_predictive_outcomes_and_figure(design, prior):
    assert prior.outcomes.shape == (DRAWS, design.n_cells, 3)
    np.testing.assert_array_equal(prior.outcomes.sum(-1), np.broadcast_to(design.n, (DRAWS, design.n_cells)))
    assert prior.draws["V"].shape == (DRAWS, 8, 1) and prior.judge_pairs.shape == (DRAWS, 4 * 28)
    fig = prior_predictive_plot(prior)
    assert type(fig) is Figure and len(fig.axes) == 2


def test_an_empirical_gamma_scale_is_the_judges_spread_net_of_their_noise(monkeypatch):
    """A crowd of 100 judges of 20 verdicts each, true sensitivities 1 + 0.3 z: the
    estimates spread about 0.6 (mostly noise), the method of moments about 0.3 (its own
    sampling sd about 0.04 here, so 0.15-0.45 is a wide margin); sample_hja samples with
    it in place of "empirical"."""
    import warnings

    import hja_bayes as hb
    import hja_bayes.bayes.run as run
    from hja_bayes.bayes.priors import (EMPIRICAL_GAMMA_FLOOR, empirical_gamma_scale,
                                        resolve_priors)

    data, truth = simulate(100, 6, 0, 20, seed=5)
    assert 0.2 < np.std(truth.gamma) < 0.4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # a crowd: warned
        fit = hb.fit_hja(data, 0)
        se = fit.wald.gamma().se
    assert np.std(fit.gamma) > 0.45
    scale = empirical_gamma_scale(fit)
    assert scale == pytest.approx(np.sqrt(np.var(fit.gamma, ddof=1) - np.mean(se ** 2)))
    assert 0.15 < scale < 0.45
    assert resolve_priors(HJAPriors(gamma_scale="empirical"), fit).gamma_scale == scale
    assert resolve_priors(HJAPriors(), fit) == HJAPriors()
    for bad in ("auto", 0.0, -1.0):
        with pytest.raises(hb.ParameterError, match="gamma_scale"):
            resolve_priors(HJAPriors(gamma_scale=bad), fit)
    for name in ("mu_scale", "tau_scale", "style_scale"):  # a NaN scale had reached NUTS
        with pytest.raises(hb.ParameterError, match=f"{name} must be finite and > 0"):
            resolve_priors(HJAPriors(**{name: float("nan")}), fit)
    # judges that agree more than their noise says: the floor
    from types import SimpleNamespace

    errors = SimpleNamespace(gamma=lambda: SimpleNamespace(se=np.full(5, 0.3)))
    alike = SimpleNamespace(gamma=np.array([0.9, 1.0, 1.1, 1.0, 1.0]), wald=errors)
    assert empirical_gamma_scale(alike) == EMPIRICAL_GAMMA_FLOOR
    # sample_hja builds its model with the resolved scale
    seen = {}

    def capture(data, init, rank, pb, prompt, priors, *rest):
        seen["priors"] = priors
        raise RuntimeError("captured")

    monkeypatch.setattr(run, "build_problem", capture)
    with pytest.raises(RuntimeError, match="captured"), warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        hb.sample_hja(data, 0, init=fit, priors=HJAPriors(gamma_scale="empirical"))
    assert seen["priors"].gamma_scale == scale
