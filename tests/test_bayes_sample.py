"""sample_hja: NUTS from the MAP to an InferenceData of canonical draws."""

import re
import warnings

import arviz as az
import numpy as np
import pytest
from scipy import stats

from hja_bayes import (
    Comparisons,
    ConvergenceWarning,
    ParameterError,
    fit_hja,
    sample_hja,
    simulate,
)
from hja_bayes.bayes.diagnose import warn_on_diagnostics
from hja_bayes.bayes.mixing import rank_rhat

from .bayes_support import panel as shared_panel
from .bayes_support import quiet_sample


@pytest.fixture(scope="module")
def panel():
    return shared_panel()


def test_inference_data_has_its_groups(panel):
    data, _, fit, idata = panel
    for group in ("posterior", "log_likelihood", "posterior_predictive", "observed_data",
                  "sample_stats", "constant_data"):
        assert hasattr(idata, group), group
    post = idata.posterior
    assert set(post.data_vars) == {"gamma", "mu", "U", "V", "D", "S", "beta"}
    assert post["S"].shape == (2, 300, 3, 5) and post["V"].shape == (2, 300, 5, 1)
    assert list(post["judge"].values) == list(data.judges)
    assert idata.log_likelihood["verdicts"].shape == (2, 300, int(data.n.sum()))
    assert idata.posterior_predictive["wins"].shape == (2, 300, data.n_cells)
    np.testing.assert_array_equal(idata.observed_data["wins"], data.wins)
    assert post.attrs["rank"] == 1 and post.attrs["position_bias"] == 1
    assert post.attrs["map_bic"] == pytest.approx(fit.bic)
    assert {"diverging", "energy", "lp", "acceptance_rate", "tree_depth"} <= set(idata.sample_stats.data_vars)


def test_every_draw_satisfies_every_constraint(panel):
    _, _, fit, idata = panel
    post = idata.posterior
    gamma, mu, U, V, D, S = (np.asarray(post[v]) for v in ("gamma", "mu", "U", "V", "D", "S"))
    K, N = S.shape[-2:]
    assert np.abs(mu.sum(-1)).max() < 1e-12
    assert np.abs(gamma.sum(-1) - K).max() < 1e-12
    assert np.abs(U.sum(-2)).max() < 1e-12 and np.abs(V.sum(-2)).max() < 1e-12
    assert np.abs(np.einsum("cdn,cdna->cda", mu, V)).max() < 1e-11
    assert np.abs(np.einsum("cdna,cdnb->cdab", V, V) / N - np.eye(1)).max() < 1e-12
    assert np.abs(np.einsum("cdka,cdkb->cdab", U, U) / K - D[..., None]).max() < 1e-12
    # signs aligned to the MAP: every column points the MAP's way
    assert np.all(np.einsum("cdna,na->cda", V, np.asarray(fit.V)) > 0)
    np.testing.assert_allclose(S, np.einsum("cdk,cdn->cdkn", gamma, mu)
                               + np.einsum("cdka,cdna->cdkn", U, V), atol=1e-12)
    assert np.abs(S.sum(-1)).max() < 1e-11


def test_posterior_means_agree_with_the_map(panel):
    """|posterior mean - MAP| <= 4 MCSE + 0.15 posterior sd for mu, gamma, beta and D.

    Allowance: with 1500 comparisons per judge the posterior is close to normal, so mean
    and mode differ by O(sd / sqrt(n_eff)) from skewness; the prior pulls by at most
    sd^2 |theta| / s^2 <= 0.01 sd here (sd <= 0.15, |theta| <= 3, s >= 1).  0.15 sd covers
    both with room; 4 MCSE covers the Monte Carlo error of the mean.
    """
    _, _, fit, idata = panel
    post = idata.posterior
    mcse = az.mcse(post)
    for name, map_value in (("mu", fit.mu), ("gamma", fit.gamma), ("beta", fit.beta), ("D", fit.D)):
        draws = np.asarray(post[name])
        mean = draws.mean(axis=(0, 1))
        sd = draws.std(axis=(0, 1))
        tol = 4 * np.asarray(mcse[name]) + 0.15 * sd
        assert np.all(np.abs(mean - map_value) <= tol), (name, mean - map_value, tol)


def test_log_likelihood_is_the_bernoulli_log_pmf_of_every_comparison(panel):
    data, _, _, idata = panel
    S = np.asarray(idata.posterior["S"][1, 7])
    beta = np.asarray(idata.posterior["beta"][1, 7])
    eta = beta[data.judge] + S[data.judge, data.first] - S[data.judge, data.second]
    p = 1 / (1 + np.exp(-eta))
    ll = idata.log_likelihood["verdicts"]
    cell = np.repeat(np.arange(data.n_cells), data.n.astype(int))  # no ties here
    won = np.concatenate([np.r_[np.ones(int(w)), np.zeros(int(n - w))]
                          for w, n in zip(data.wins, data.n)])
    np.testing.assert_allclose(ll[1, 7], stats.bernoulli.logpmf(won, p[cell]), rtol=1e-10)
    # labelled with judge, both models and the outcome
    m = 123
    assert ll["comparison_judge"].values[m] == data.judges[data.judge[cell[m]]]
    assert ll["comparison_first"].values[m] == data.items[data.first[cell[m]]]
    assert ll["comparison_second"].values[m] == data.items[data.second[cell[m]]]
    assert ll["comparison_outcome"].values[m] == ("first" if won[m] else "second")


def test_diagnostics_are_clean_on_well_conditioned_data(panel):
    _, _, _, idata = panel
    assert int(idata.sample_stats["diverging"].sum()) == 0
    assert float(az.rhat(idata.posterior).to_array().max()) < 1.05


def test_same_seed_gives_identical_draws(panel):
    data, _, fit, idata = panel
    again = quiet_sample(data, 1, init=fit, seed=1)
    np.testing.assert_array_equal(again.posterior["S"], idata.posterior["S"])
    np.testing.assert_array_equal(again.posterior_predictive["wins"],
                                  idata.posterior_predictive["wins"])
    # and the draws are not all alike: the two chains (different keys) differ
    assert not np.array_equal(idata.posterior["S"][0], idata.posterior["S"][1])


def test_sequential_chains_with_a_progress_bar_count_chains_and_draw_the_same(panel, capfd):
    """Sequential chains run as one compiled program with or without the bar (which then
    counts chains): the same draws."""
    data, _, fit, idata = panel
    capfd.readouterr()
    shown = quiet_sample(data, 1, init=fit, seed=1, progress_bar=True)
    assert shown.posterior.attrs["chain_method"] == "sequential"
    np.testing.assert_array_equal(shown.posterior["S"], idata.posterior["S"])
    assert "2/2" in capfd.readouterr().err


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", ["disconnected", "rank", "folded_bias"])
def test_rejects_what_fit_hja_rejects_with_the_same_message(case):
    if case == "disconnected":
        df = {"judge": ["j"] * 4, "model_a": ["a", "b", "c", "d"],
              "model_b": ["b", "a", "d", "c"], "winner": ["model_a"] * 4}
        import pandas as pd
        data, rank, kw = Comparisons.from_frame(pd.DataFrame(df)), 0, {}
    elif case == "rank":
        data, rank, kw = simulate(3, 5, 1, 100, seed=0)[0], 3, {}
    else:
        data, rank, kw = simulate(3, 5, 1, 100, seed=0)[0].fold_order(), 1, {"position_bias": True}
    kind, message = _message(lambda: fit_hja(data, rank, **kw))
    with pytest.raises(kind, match=re.escape(message)):
        sample_hja(data, rank, **kw, num_warmup=5, num_samples=5, progress_bar=False)


def test_rejects_an_init_that_does_not_match():
    data, _ = simulate(3, 5, 1, 300, seed=0)
    fit = fit_hja(data, 0)
    with pytest.raises(ValueError, match=r"rank-0 fit.*: sample init's model, "
                                         r"sample_hja\(data, 0, position_bias=False, init=init\)"):
        sample_hja(data, 1, init=fit, num_warmup=5, num_samples=5, progress_bar=False)
    other, _ = simulate(3, 6, 0, 300, seed=0)
    with pytest.raises(ValueError, match=r"other judges or models: fit the MAP to these "
                                         r"data"):
        sample_hja(other, 0, init=fit, num_warmup=5, num_samples=5, progress_bar=False)
    # the same names read in another order are said to be that ("other judges" before)
    frame = data.to_frame().iloc[::-1]
    shuffled = Comparisons.from_counts(frame, wins="wins", n="n")
    assert shuffled.judges != data.judges and set(shuffled.judges) == set(data.judges)
    with pytest.raises(ValueError, match=r"the same judges and models in another order"):
        sample_hja(shuffled, 0, init=fit, num_warmup=5, num_samples=5, progress_bar=False)


def _fake_idata(shift: float, diverging: bool):
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(2, 200, 3))
    mu[1, :, 2] += shift
    stats_ = {"diverging": np.zeros((2, 200), bool)}
    stats_["diverging"][0, 5] = diverging
    return az.from_dict(posterior={"mu": mu}, sample_stats=stats_,
                        coords={"item": ["a", "b", "c"]}, dims={"mu": ["item"]})


def test_r_hat_above_the_limit_warns_and_names_the_quantity():
    with pytest.warns(ConvergenceWarning, match=r"R-hat above 1.01 .*mu\[c\]") as record:
        warn_on_diagnostics(_fake_idata(shift=1.0, diverging=False))
    text = str(record[0].message)
    assert "mu[a]" not in text and "1 quantity(ies) of 3:" in text
    # independent draws, 2 x 200: agreeing chains would rarely pass 1.01 (well below one)
    expected = float(re.search(r"would show about (\S+) such", text).group(1))
    assert 0 < expected < 0.5


def test_r_hat_of_chains_stuck_apart_is_counted_among_the_quantities(monkeypatch):
    """An infinite R-hat (chains that never moved, seen on 20 + 20 draws): the count of the
    quantities checked had left it out ("1 quantity(ies) of 2")."""
    from hja_bayes.bayes import diagnose

    def stuck(draws, limit):
        rhat = np.ones(draws.shape[2:])
        rhat.ravel()[-1] = np.inf
        return rhat, np.zeros_like(rhat)

    monkeypatch.setattr(diagnose, "rank_rhat_by_chance", stuck)
    idata = _fake_idata(shift=0.0, diverging=False)
    with pytest.warns(ConvergenceWarning, match=r"1 quantity\(ies\) of 3: mu\[c\] \(inf\) "
                                                r"\(1,000 or more, or inf: a chain that did "
                                                r"not move"):
        warn_on_diagnostics(idata)


def test_chains_each_stuck_at_its_own_value_warn():
    """Two chains that never moved, each at its own value: ArviZ's rank R-hat is about 1e16
    (the bulk part; every folded draw is the same distance from the median, so the folded
    part is 0/0).  The larger of the two had been taken with NaN passed through, and the
    quantity went unreported."""
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(2, 200, 3))
    mu[0, :, 2], mu[1, :, 2] = 0.3, -0.4
    with warnings.catch_warnings():  # ArviZ's own folded part divides 0 by 0
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = az.rhat(az.convert_to_dataset(mu[..., 2]), method="rank")["x"].item()
    assert expected > 1e10
    assert rank_rhat(mu)[2] > 1e10
    idata = az.from_dict(posterior={"mu": mu}, sample_stats={"diverging": np.zeros((2, 200), bool)},
                         coords={"item": list("abc")}, dims={"mu": ["item"]})
    with pytest.warns(ConvergenceWarning, match=r"1 quantity\(ies\) of 3: mu\[c\] "
                      r"\(\d\.\d\de\+\d\d\) \(1,000 or more, or inf: a chain that did not move"):
        warn_on_diagnostics(idata)


def test_draws_that_are_not_finite_are_named():
    """A NaN draw had made its entry's R-hat NaN, counted as undefined and not mentioned."""
    idata = _fake_idata(shift=0.0, diverging=False)
    idata.posterior["mu"][1, 7, 2] = np.nan
    with pytest.warns(ConvergenceWarning, match=r"1 quantity\(ies\) have draws that are not "
                                                r"finite \(NaN or inf\): mu\[c\];"):
        warn_on_diagnostics(idata)


def test_divergences_warn():
    with pytest.warns(ConvergenceWarning, match="1 divergent transition"):
        warn_on_diagnostics(_fake_idata(shift=0.0, diverging=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_on_diagnostics(_fake_idata(shift=0.0, diverging=False))


def test_one_chain_or_a_few_draws_say_that_r_hat_was_not_computed():
    idata = _fake_idata(shift=0.0, diverging=False)
    for short in (idata.isel(chain=[0]), idata.isel(draw=slice(0, 3))):
        with pytest.warns(ConvergenceWarning, match=r"R-hat not computed.*nothing checks"):
            warn_on_diagnostics(short)


def test_divergences_with_an_empty_last_component_suggest_a_lower_rank():
    rng = np.random.default_rng(0)
    D = np.stack([1.0 + 0.05 * rng.normal(size=(2, 200)),
                  np.abs(0.01 * rng.normal(size=(2, 200)))], axis=-1)
    idata = az.from_dict(posterior={"D": D}, sample_stats={"diverging": np.eye(2, 200, dtype=bool)},
                         coords={"component": [0, 1]}, dims={"D": ["component"]},
                         posterior_attrs={"rank": 2})
    with pytest.warns(ConvergenceWarning, match=r"D\[1\] is not separated from zero.*use rank 1"):
        warn_on_diagnostics(idata)
    # said once, with the first warning it explains (it had ended two warnings alike)
    idata.posterior.attrs["weak_match_share"] = 0.5
    with pytest.warns(ConvergenceWarning) as record:
        warn_on_diagnostics(idata)
    assert len(record) >= 2 and sum("not separated" in str(w.message) for w in record) == 1
    # without divergences the alignment warning leads with the cause, and names only the
    # shares there are (it had opened with "0% of the draws had them reordered")
    idata = az.from_dict(posterior={"D": D}, sample_stats={"diverging": np.zeros((2, 200), bool)},
                         coords={"component": [0, 1]}, dims={"D": ["component"]},
                         posterior_attrs={"rank": 2, "weak_match_share": 0.5})
    with pytest.warns(ConvergenceWarning) as record:
        warn_on_diagnostics(idata)
    said = [str(w.message) for w in record if "not well determined" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("The smallest component D[1] is not separated")
    assert "50% have a column at cosine below 0.5" in said[0] and "reordered" not in said[0]
    D[..., 1] = 0.5 + 0.02 * rng.normal(size=(2, 200))  # a real second component: no advice
    idata = az.from_dict(posterior={"D": D}, sample_stats={"diverging": np.eye(2, 200, dtype=bool)},
                         coords={"component": [0, 1]}, dims={"D": ["component"]},
                         posterior_attrs={"rank": 2})
    with pytest.warns(ConvergenceWarning) as record:
        warn_on_diagnostics(idata)
    assert all("not separated" not in str(w.message) for w in record)


def test_divergence_warning_says_where_and_what_to_run():
    from hja_bayes.bayes.diagnose import divergence_report

    rng = np.random.default_rng(1)
    D = np.stack([1.0 + 0.05 * rng.normal(size=(2, 200)),
                  0.5 + 0.05 * rng.normal(size=(2, 200))], axis=-1)
    div = np.zeros((2, 200), bool)
    low = np.argsort(D[1, :, 1])[:3]  # chain 1's three smallest D[1]: near zero
    div[1, low] = True

    def idata(target):
        return az.from_dict(posterior={"D": D}, sample_stats={"diverging": div},
                            coords={"component": [0, 1]}, dims={"D": ["component"]},
                            posterior_attrs={"rank": 2, "target_accept_prob": target})

    text = divergence_report(idata(0.8))
    assert text.startswith("3 divergent transition(s) after warm-up in chain(s) 1;")
    assert "quantile (median) of the posterior of D[1] - near zero" in text
    assert "target_accept_prob=0.95" in text
    assert "target_accept_prob=0.99" in divergence_report(idata(0.95))
    div[:] = False
    div[0, np.argsort(D[0, :, 1])[100]] = True  # a middling D[1]
    assert "not at its small values" in divergence_report(idata(0.8))
    div[:] = False
    assert divergence_report(idata(0.8)) == ""


def test_target_accept_prob_is_checked():
    data, _ = simulate(3, 4, 0, 100, seed=0)
    with pytest.raises(ParameterError, match="target_accept_prob"):
        sample_hja(data, 0, target_accept_prob=1.0, num_warmup=5, num_samples=5,
                   progress_bar=False)


def test_one_judge_is_bradley_terry_with_the_prior_of_mu():
    """One judge (crowd votes read with judge=None, `--judge-col -`): gamma is 1, nothing
    to sample for it (its chart has no coordinate; had stopped with "need at least one
    array to concatenate"), and the posterior of mu is Bradley-Terry's.  Checked against a
    Laplace approximation written here (scipy's minimiser over an own basis of the centred
    vectors, the Hessian by hand, mu's prior included, though 800 verdicts leave it little
    to do): 800 verdicts on 4 models leave the posterior close to normal, so |mean - mode|
    and |sd - Laplace sd| stay within 4 MCSE + 0.15 sd (as for the MAP above)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    from hja_bayes.bayes.model import HJAPriors

    data, _ = simulate(1, 4, 0, 800, seed=5)
    idata = quiet_sample(data, 0, init=fit_hja(data, 0), seed=0)
    assert np.all(np.asarray(idata.posterior["gamma"]) == 1.0)
    s = HJAPriors().mu_scale
    basis = np.linalg.svd(np.eye(4) - 1 / 4)[0][:, :3]  # orthonormal, orthogonal to 1
    w = data.first_wins + data.ties / 2
    n = data.first_wins + data.ties + data.second_wins
    d = np.zeros((data.n_cells, 4))
    d[np.arange(data.n_cells), data.first] += 1
    d[np.arange(data.n_cells), data.second] -= 1
    D = d @ basis

    def negative_log_posterior(z):
        eta = D @ z
        return -(w @ eta - n @ np.logaddexp(0, eta)) + z @ z / (2 * s ** 2)

    z = minimize(negative_log_posterior, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    p = expit(D @ z)
    covariance = basis @ np.linalg.inv(D.T @ (D * (n * p * (1 - p))[:, None])
                                       + np.eye(3) / s ** 2) @ basis.T
    mode, laplace_sd = basis @ z, np.sqrt(np.diag(covariance))
    draws = np.asarray(idata.posterior["mu"])
    mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
    tol = 4 * np.asarray(az.mcse(idata.posterior, var_names=["mu"])["mu"]) + 0.15 * sd
    assert np.all(np.abs(mean - mode) <= tol), (mean - mode, tol)
    assert np.all(np.abs(sd - laplace_sd) <= tol), (sd - laplace_sd, tol)
