"""Leaderboard, judge and pairwise tables against the inference results they arrange."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import norm

import hja_bayes as hb
from hja_bayes.reporting import wald
from hja_bayes.reporting.leaderboard import ELO_FACTOR

from .report_support import evil_fit, posterior, small_fit


@pytest.fixture(scope="module")
def fit():
    return small_fit()


def test_leaderboard_arranges_the_wald_intervals(fit):
    inference = hb.wald_inference(fit.data, fit.S, fit.beta, fit.rank, position_bias=True)
    board = hb.leaderboard(fit, level=0.9)
    mu = inference.mu(0.9)
    idx = [fit.items.index(m) for m in board["model"]]
    np.testing.assert_allclose(board["score"], mu.estimate[idx])
    np.testing.assert_allclose(board["score_lower"], mu.lower[idx])
    np.testing.assert_allclose(board["score_upper"], mu.upper[idx])
    assert list(board["rank"]) == list(range(1, len(fit.items) + 1))
    assert np.all(np.diff(board["score"]) <= 0)
    # Rank(UB) = 1 + #{j : lower_j > upper_i}, counted here by brute force
    for i, row in board.iterrows():
        assert row["rank_ub"] == 1 + sum(board["score_lower"] > row["score_upper"])
    # rank interval from the pairwise difference intervals
    pairs, diff = inference.mu_differences(0.9)
    for _, row in board.iterrows():
        i = fit.items.index(row["model"])
        above = sum(1 for (a, b), lo, hi in zip(pairs, diff.lower, diff.upper)
                    if (b == i and lo > 0) or (a == i and hi < 0))
        below = sum(1 for (a, b), lo, hi in zip(pairs, diff.lower, diff.upper)
                    if (a == i and lo > 0) or (b == i and hi < 0))
        assert row["rank_lower"] == 1 + above
        assert row["rank_upper"] == len(fit.items) - below
        assert row["rank_lower"] <= row["rank"] <= row["rank_upper"]
    assert board["p_better_next"].iloc[:-1].between(0.5, 1).all()
    assert np.isnan(board["p_better_next"].iloc[-1])
    assert board["tier"].iloc[0] == 1 and np.all(np.diff(board["tier"]) >= 0)
    np.testing.assert_allclose(board["comparisons"].sum(), 2 * fit.data.n_comparisons)


def test_p_better_next_is_the_normal_probability_of_the_wald_z(fit):
    board = hb.leaderboard(fit)
    a, b = (fit.items.index(m) for m in board["model"][:2])
    q = wald(fit).contrast(lambda S, beta: S.mean(0)[a] - S.mean(0)[b])
    np.testing.assert_allclose(board["p_better_next"][0], norm.cdf(q.estimate / q.se), rtol=1e-6)


def test_tiers_group_models_that_cannot_be_told_apart(fit):
    board = hb.leaderboard(fit, level=0.999999)  # very wide intervals: few tiers
    narrow = hb.leaderboard(fit, level=0.5)
    assert board["tier"].max() <= narrow["tier"].max()
    pairs = hb.pairwise_table(fit, 0.5).set_index(["model_a", "model_b"])
    for tier, group in narrow.groupby("tier"):
        leader = group["model"].iloc[0]
        for other in group["model"].iloc[1:]:
            assert not pairs.loc[(leader, other), "significant"]


def test_elo_scale(fit):
    logit, elo = hb.leaderboard(fit), hb.leaderboard(fit, scale="elo")
    for column in ("score", "score_lower", "score_upper"):
        np.testing.assert_allclose(elo[column], ELO_FACTOR * logit[column] + 1000)
    assert list(elo["model"]) == list(logit["model"])
    with pytest.raises(hb.HJAError, match="scale"):
        hb.leaderboard(fit, scale="glicko")
    with pytest.raises(hb.HJAError, match="level"):
        hb.leaderboard(fit, level=1.5)


def test_judge_table(fit):
    table = hb.judge_table(fit)
    inference = wald(fit)
    np.testing.assert_allclose(table["gamma"], fit.gamma)
    np.testing.assert_allclose(table["gamma_lower"], inference.gamma().lower)
    np.testing.assert_allclose(table["beta_upper"], inference.position_biases().upper)
    lev = hb.judge_leverage(fit.gamma, fit.mu, fit.U, fit.V)
    np.testing.assert_allclose(table["leverage"], np.linalg.norm(fit.U @ fit.V.T, axis=1))
    assert list(table["high_leverage"]) == list(lev.high)
    np.testing.assert_allclose(table["comparisons"], fit.data.comparisons_per_judge())
    # Kendall's tau by hand: concordant minus discordant pairs over all pairs (no ties)
    for k, tau in enumerate(table["rank_corr"]):
        s, m = fit.S[k], fit.mu
        i, j = np.triu_indices(len(m), 1)
        sign = np.sign(s[i] - s[j]) * np.sign(m[i] - m[j])
        assert tau == pytest.approx(sign.mean())


def test_judge_table_without_position_bias_has_no_beta():
    table = hb.judge_table(evil_fit())
    assert "beta" not in table.columns and not table["high_leverage"].any()


def test_pairwise_table(fit):
    pairs = hb.pairwise_table(fit)
    n = len(fit.items)
    assert len(pairs) == n * (n - 1)
    row = pairs.iloc[0]
    a, b = fit.items.index(row["model_a"]), fit.items.index(row["model_b"])
    assert row["difference"] == pytest.approx(fit.mu[a] - fit.mu[b])
    assert row["p_win"] == pytest.approx(expit(fit.mu[a] - fit.mu[b]))
    mirror = pairs[(pairs.model_a == row["model_b"]) & (pairs.model_b == row["model_a"])].iloc[0]
    assert mirror["lower"] == pytest.approx(-row["upper"])


# ---------------------------------------------------------------------------- posterior
def test_bayesian_columns_arrange_the_posterior():
    fit, idata = posterior()
    board = hb.leaderboard(fit, idata, level=0.9, scale="elo")
    draws = np.asarray(idata.posterior["mu"]).reshape(-1, len(fit.items))
    idx = [fit.items.index(m) for m in board["model"]]
    np.testing.assert_allclose(board["post_mean"], ELO_FACTOR * draws.mean(0)[idx] + 1000)
    np.testing.assert_allclose(board["cred_lower"],
                               ELO_FACTOR * np.quantile(draws, 0.05, axis=0)[idx] + 1000)
    ranks = hb.bayes.rank_posterior(idata, 0.9).table.set_index("item")
    assert list(board["post_rank_lower"]) == [ranks.loc[m, "lower"] for m in board["model"]]
    assert list(board["p_best"]) == [ranks.loc[m, "p_best"] for m in board["model"]]
    a, b = idx[0], idx[1]
    assert board["post_p_better_next"][0] == pytest.approx(np.mean(draws[:, a] > draws[:, b]))
    # the frequentist columns do not change
    plain = hb.leaderboard(fit, level=0.9, scale="elo")
    pd.testing.assert_frame_equal(board[plain.columns], plain, check_like=False)
    judges = hb.judge_table(fit, idata)
    gamma = np.asarray(idata.posterior["gamma"]).reshape(-1, len(fit.judges))
    np.testing.assert_allclose(judges["gamma_cred_upper"], np.quantile(gamma, 0.975, axis=0))
    assert {"beta_cred_lower", "beta_cred_upper"} <= set(judges.columns)


def test_posterior_of_another_model_is_refused(fit):
    _, idata = posterior()
    with pytest.raises(hb.HJAError, match="posterior"):
        hb.leaderboard(fit, idata)
