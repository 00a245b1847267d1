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


def test_prior_predictive_outcomes_and_figure(design, prior):
    assert prior.outcomes.shape == (DRAWS, design.n_cells, 3)
    np.testing.assert_array_equal(prior.outcomes.sum(-1), np.broadcast_to(design.n, (DRAWS, design.n_cells)))
    assert prior.draws["V"].shape == (DRAWS, 8, 1) and prior.judge_pairs.shape == (DRAWS, 4 * 28)
    fig = prior_predictive_plot(prior)
    assert type(fig) is Figure and len(fig.axes) == 2
