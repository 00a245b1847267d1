"""Leaderboard, judge and pairwise tables against the inference results they arrange."""

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import norm

import hja_bayes as hb
from hja_bayes.inference.ranking import rank_intervals, simultaneous_critical_value
from hja_bayes.reporting import wald
from hja_bayes.reporting.leaderboard import ELO_FACTOR

from .report_support import evil_fit, posterior, small_fit


@pytest.fixture(scope="module")
def fit():
    return small_fit()


def test_leaderboard_arranges_the_wald_intervals(fit):
    inference = hb.wald_inference(fit.data, fit.S, fit.beta, fit.rank, position_bias=True,
                                  ridge=fit.ridge)
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
    # joint rank intervals from the simultaneous intervals d +- c se of the differences
    pairs, diff = inference.mu_differences(0.9)
    c = simultaneous_critical_value(inference.mu_covariance()[1], 0.9)
    assert c > 1.645  # wider than the pairwise 90% interval
    lows, highs = diff.estimate - c * diff.se, diff.estimate + c * diff.se
    for _, row in board.iterrows():
        i = fit.items.index(row["model"])
        above = sum(1 for (a, b), lo, hi in zip(pairs, lows, highs)
                    if (b == i and lo > 0) or (a == i and hi < 0))
        below = sum(1 for (a, b), lo, hi in zip(pairs, lows, highs)
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
    # members of a tier are pairwise indistinguishable at the joint level
    estimate, cov = fit.wald.mu_covariance()
    better = rank_intervals(estimate, cov, 0.5).better
    for tier, group in narrow.groupby("tier"):
        members = [fit.items.index(m) for m in group["model"]]
        assert not better[np.ix_(members, members)].any()


def test_elo_scale(fit):
    logit, elo = hb.leaderboard(fit), hb.leaderboard(fit, scale="elo")
    for column in ("score", "score_lower", "score_upper"):
        np.testing.assert_allclose(elo[column], ELO_FACTOR * logit[column] + 1000)
    assert list(elo["model"]) == list(logit["model"])
    with pytest.raises(hb.HJAError, match="scale"):
        hb.leaderboard(fit, scale="glicko")
    with pytest.raises(hb.HJAError, match="level"):
        hb.leaderboard(fit, level=1.5)
    with pytest.raises(hb.ParameterError, match="level"):  # a string level, refused early
        hb.leaderboard(fit, level="0.9")


def test_data_instead_of_a_fit_gets_a_hint(fit):
    for wrong in (fit.data, fit.data.to_frame(), "x.csv"):
        with pytest.raises(hb.ParameterError, match="fit_hja"):
            hb.leaderboard(wrong)


def test_meta_says_what_the_intervals_are(fit):
    meta = hb.leaderboard(fit, level=0.9, scale="elo").attrs["meta"]
    assert meta["level"] == 0.9 and meta["scale"] == "elo" and meta["interval"] == "wald"
    assert meta["cov_type"] == "fisher" and meta["outcome"] == "half"
    assert meta["rank"] == fit.rank and meta["position_bias"] is True
    assert meta["hja_bayes_version"] == hb.__version__ and meta["model"] == "hja"
    assert hb.judge_table(fit).attrs["meta"]["table"] == "judges"


# -------------------------------------------------------------------------- arena style
def test_arena_style_has_fastchat_columns_on_the_elo_scale(fit):
    arena = hb.leaderboard(fit, style="arena", level=0.9)
    assert list(arena.columns) == ["model", "rating", "rating_lower", "rating_upper",
                                   "variance", "rank_ub", "num_battles"]
    mu = wald(fit).mu(0.9)
    idx = [fit.items.index(m) for m in arena["model"]]
    np.testing.assert_allclose(arena["rating"], ELO_FACTOR * mu.estimate[idx] + 1000)
    np.testing.assert_allclose(arena["variance"], (ELO_FACTOR * mu.se[idx]) ** 2)
    np.testing.assert_allclose(arena["rating_upper"], ELO_FACTOR * mu.upper[idx] + 1000)
    default = hb.leaderboard(fit, level=0.9)
    assert list(arena["rank_ub"]) == list(default["rank_ub"])
    np.testing.assert_array_equal(arena["num_battles"], default["comparisons"])
    assert arena.attrs["meta"]["style"] == "arena"
    same = hb.leaderboard(fit, style="arena", scale="elo")
    pd.testing.assert_frame_equal(same, hb.leaderboard(fit, style="arena"))
    with pytest.raises(hb.ParameterError, match="scale='logit' does not apply"):
        hb.leaderboard(fit, style="arena", scale="logit")  # it had shown Elo all the same
    with pytest.raises(hb.ParameterError, match="scale='logit' does not apply"):
        hb.leaderboard_by(pd.DataFrame({"category": ["a"]}), style="arena", scale="logit")


def test_rank_ub_counts_the_pinned_intervals_shown():
    """PRD, gpt4 pinned: bard's interval lies below three others' (gpt4's, claude's and one
    more), and its Rank(UB) says so (it had said 4, counted on the unpinned intervals)."""
    prd = hb.datasets.load_prd_vicuna80().judgments
    fit = hb.fit_hja(hb.Comparisons.from_frame(prd, cluster="question_id"), rank=0)
    board = hb.leaderboard(fit, style="arena", baseline=("gpt4", 1000))
    for _, r in board.iterrows():
        assert r["rank_ub"] == 1 + sum(board["rating_lower"] > r["rating_upper"])
    assert board.set_index("model").loc["gpt4", "rating_lower"] == 1000


def test_baseline_pins_one_rating_and_keeps_the_ranks(fit):
    free = hb.leaderboard(fit, style="arena", level=0.9)
    base = free["model"].iloc[2]
    pinned = hb.leaderboard(fit, style="arena", level=0.9, baseline=(base, 1114))
    row = pinned.set_index("model").loc[base]
    assert row["rating"] == pytest.approx(1114) and row["variance"] == 0
    # every rating keeps its distance to the baseline; its interval is the difference's
    np.testing.assert_allclose(pinned["rating"] - 1114, free["rating"] - free["rating"].iloc[2])
    b = fit.items.index(base)
    for _, r in pinned.iterrows():
        i = fit.items.index(r["model"])
        if i == b:
            continue
        q = wald(fit).contrast(lambda S, beta: S.mean(0)[i] - S.mean(0)[b], 0.9)
        assert r["rating_upper"] - 1114 == pytest.approx(ELO_FACTOR * q.upper, rel=1e-6)
    # Rank(UB) of the intervals shown (Arena's ratings are pinned too); it had been the
    # unpinned ones', contradicting the table beside it
    for _, r in pinned.iterrows():
        assert r["rank_ub"] == 1 + sum(pinned["rating_lower"] > r["rating_upper"])
    assert pinned.attrs["meta"]["baseline"] == {"model": base, "score": 1114.0}
    with pytest.raises(hb.ParameterError, match="model"):
        hb.leaderboard(fit, baseline=("no such model", 1000))
    with pytest.warns(hb.HJAWarning, match=r"at 1200 on the logit scale.*scale='elo'"):
        hb.leaderboard(fit, baseline=(base, 1200))  # Elo points meant
    for bad in ("m1=1000", (base,), (base, "high"), (base, float("nan"))):  # NaN: every score
        with pytest.raises(hb.ParameterError, match=r"baseline must be \(model, score\)"):
            hb.leaderboard(fit, baseline=bad)


def test_a_pooled_btl_fit_gets_both_styles(fit):
    btl = hb.fit_pooled_btl(fit.data)
    board = hb.leaderboard(btl, level=0.9)
    z = norm.ppf(0.95)
    expected = btl.table(0.9)
    assert list(board["model"]) == list(expected["model"])
    np.testing.assert_allclose(board["score"], expected["score"])
    np.testing.assert_allclose(board["score_lower"], expected["lower"])
    for _, row in board.iterrows():  # Rank(UB) by brute force
        assert row["rank_ub"] == 1 + sum(board["score_lower"] > row["score_upper"])
    # P(better than next) from the covariance of the two scores, computed here
    a, b = (btl.items.index(m) for m in board["model"][:2])
    var = btl.cov[a, a] + btl.cov[b, b] - 2 * btl.cov[a, b]
    d = btl.scores[a] - btl.scores[b]
    assert board["p_better_next"][0] == pytest.approx(norm.cdf(d / np.sqrt(var)))
    assert board["tier"].iloc[0] == 1 and z > 0
    np.testing.assert_allclose(board["comparisons"].sum(), 2 * fit.data.n_comparisons)
    arena = hb.leaderboard(btl, style="arena")
    np.testing.assert_allclose(arena["variance"], (ELO_FACTOR * expected["se"]) ** 2)
    assert arena.attrs["meta"]["model"] == "btl" and arena.attrs["meta"]["rank"] is None
    pairs = hb.pairwise_table(btl)
    assert len(pairs) == len(btl.items) * (len(btl.items) - 1)


def test_judge_table(fit):
    table = hb.judge_table(fit)
    inference = wald(fit)
    assert "invalid_share" not in table.columns  # no row was rejected
    np.testing.assert_allclose(table["gamma"], fit.gamma)
    np.testing.assert_allclose(table["gamma_lower"], inference.gamma().lower)
    np.testing.assert_allclose(table["beta_upper"], inference.position_biases().upper)
    lev = hb.judge_leverage(fit.gamma, fit.mu, fit.U, fit.V)
    np.testing.assert_allclose(table["leverage"], np.linalg.norm(fit.U @ fit.V.T, axis=1))
    assert list(table["high_leverage"]) == list(lev.high)
    np.testing.assert_allclose(table["comparisons"], fit.data.comparisons_per_judge())
    with pytest.raises(hb.ParameterError, match="HJA"):
        hb.judge_table(hb.fit_pooled_btl(fit.data))


def _own_btl_scores(data, k):
    """A judge's Bradley-Terry MLE from its own verdicts (orders pooled, ties 1/2), by a
    direct optimiser on the log-likelihood written out here."""
    from scipy.optimize import minimize

    m = data.judge == k
    i, j, n, w = data.first[m], data.second[m], data.n[m], data.wins[m]

    def nll(s):
        eta = s[i] - s[j]
        return float(np.sum(n * np.logaddexp(0, eta) - w * eta)) + 1e-6 * s @ s

    return minimize(nll, np.zeros(data.n_items), method="BFGS", options={"gtol": 1e-9}).x


def test_kendall_tau_compares_the_judges_own_ranking_with_the_consensus(fit):
    table = hb.judge_table(fit)
    for k, tau in enumerate(table["rank_corr"]):
        s, m = _own_btl_scores(fit.data, k), fit.mu
        i, j = np.triu_indices(len(m), 1)
        sign = np.sign(s[i] - s[j]) * np.sign(m[i] - m[j])  # no ties here
        assert tau == pytest.approx(sign.mean())
    # not the row S_k, which at rank 0 is proportional to mu by construction
    zero = evil_fit()
    taus = hb.judge_table(zero)["rank_corr"]
    for k, tau in enumerate(taus):
        s = _own_btl_scores(zero.data, k)
        i, j = np.triu_indices(len(zero.mu), 1)
        assert tau == pytest.approx((np.sign(s[i] - s[j]) * np.sign(zero.mu[i] - zero.mu[j])).mean())


def test_kendall_tau_is_blank_when_a_judge_cannot_rank_the_models_it_saw():
    rows = pd.DataFrame({"judge": ["j1"] * 4 + ["j2"] * 4,
                         "model_a": ["a", "b", "c", "a", "a", "c", "a", "c"],
                         "model_b": ["b", "c", "a", "c", "b", "d", "b", "d"],
                         "winner": ["model_a", "model_a", "model_b", "tie"] * 2})
    data = hb.Comparisons.from_frame(rows)  # j2 compares a-b and c-d only: two islands
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        fit = hb.fit_hja(data, rank=0)
    from hja_bayes.diagnostics import own_ranking_agreement

    tau = own_ranking_agreement(fit)
    assert np.isfinite(tau[0]) and np.isnan(tau[1])


def test_rank_zero_judge_table_leaves_out_leverage():
    table = hb.judge_table(evil_fit())
    assert "beta" not in table.columns and "both_orders" not in table.columns
    assert not {"leverage", "rho", "high_leverage"} & set(table.columns)


def test_both_orders_share_per_judge():
    # j1 sees a-b both ways and b-c one way (1/2); j2 sees everything one way (0)
    rows = pd.DataFrame({"judge": ["j1"] * 3 + ["j2"] * 3,
                         "model_a": ["a", "b", "b", "a", "b", "a"],
                         "model_b": ["b", "a", "c", "b", "c", "c"],
                         "winner": ["model_a", "model_b", "tie", "model_a", "model_a", "tie"]})
    data = hb.Comparisons.from_frame(rows)
    from hja_bayes.reporting.observed import both_orders_share

    np.testing.assert_allclose(both_orders_share(data), [0.5, 0.0])
    assert np.isnan(both_orders_share(data.fold_order())).all()


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
    np.testing.assert_allclose(judges["gamma_post_mean"], gamma.mean(axis=0))
    assert {"beta_cred_lower", "beta_cred_upper"} <= set(judges.columns)
    # a pinned baseline pins the credible columns too (they had stayed unpinned, 26 Elo
    # points from the score beside them): each draw's difference to the baseline
    base = board["model"][2]
    pinned = hb.leaderboard(fit, idata, level=0.9, scale="elo", baseline=(base, 1200))
    differences = draws - draws[:, [fit.items.index(base)]]
    np.testing.assert_allclose(pinned["post_mean"], ELO_FACTOR * differences.mean(0)[idx] + 1200)
    np.testing.assert_allclose(pinned["cred_upper"],
                               ELO_FACTOR * np.quantile(differences, 0.95, axis=0)[idx] + 1200)
    assert pinned.loc[2, ["post_mean", "cred_lower", "cred_upper"]].tolist() == [1200.0] * 3


def test_posterior_of_another_model_is_refused(fit):
    _, idata = posterior()
    with pytest.raises(hb.HJAError, match="posterior"):
        hb.leaderboard(fit, idata)


# --------------------------------------------------------------------------- categories
def test_one_leaderboard_per_category_equals_fitting_each_category():
    rng = np.random.default_rng(3)
    models = ["m0", "m1", "m2", "m3"]
    rows = []
    for lang, shift in (("English", 1.0), ("German", -1.0)):
        for _ in range(600):
            i, j = rng.choice(4, 2, replace=False)
            p = 1 / (1 + np.exp(-shift * (j - i) * 0.5))
            rows.append((lang, models[i], models[j], "model_a" if rng.random() < p else "model_b"))
    rows.append(("Klingon", "m0", "m1", "model_a"))  # m2, m3 never seen there: not linked
    rows.append(("Klingon", "m2", "m3", "model_b"))
    df = pd.DataFrame(rows, columns=["language", "model_a", "model_b", "winner"])
    with pytest.warns(hb.DataWarning, match="Klingon"):
        table = hb.leaderboard_by(df, by="language", baseline=("m0", 1000))
    assert list(dict.fromkeys(table["category"])) == ["(all)", "English", "German"]
    for lang in ("English", "German"):
        alone = hb.leaderboard(hb.fit_pooled_btl(hb.Comparisons.from_frame(
            df[df.language == lang], judge=None)), style="arena", baseline=("m0", 1000))
        part = table[table.category == lang].drop(columns="category").reset_index(drop=True)
        pd.testing.assert_frame_equal(part, alone, check_like=False)
    assert table[table.category == "English"]["model"].iloc[0] == "m0"
    assert table[table.category == "German"]["model"].iloc[0] == "m3"
    meta = table.attrs["meta"]
    assert meta["by"] == "language" and "Klingon" in meta["skipped"]
    with pytest.raises(hb.DataError, match="no category column 'category'"):
        hb.leaderboard_by(df)
    # rows without a category count in the overall fit only, and the user is told
    unlabelled = df.assign(language=df.language.where((df.index % 10 != 0) | (df.index >= 1200)))
    with pytest.warns(hb.DataWarning) as caught:  # and Klingon's, left out as before
        partial = hb.leaderboard_by(unlabelled, by="language")
    assert ("120 of 1202 rows have no 'language': they count in the overall fit only"
            in [str(w.message) for w in caught])
    overall = partial[partial.category == "(all)"]
    assert overall["num_battles"].sum() == 2 * len(df)  # every row, each counted per model
    # an empty cell of a CSV read as text is "" (or blanks): no category either, where it
    # had made one named "" (printed as ":")
    blank = unlabelled.assign(language=unlabelled.language.fillna(" "))
    with pytest.warns(hb.DataWarning) as caught:
        again = hb.leaderboard_by(blank, by="language")
    assert "120 of 1202 rows have no 'language'" in " ".join(str(w.message) for w in caught)
    pd.testing.assert_frame_equal(again, partial)
    assert (blank.language == " ").sum() == 120  # the caller's frame is left as it was


def test_kendall_tau_matches_scipy_with_and_without_ties():
    from scipy.stats import kendalltau

    from hja_bayes.diagnostics import kendall_tau

    rng = np.random.default_rng(5)
    for n in (2, 5, 20):
        x, y = rng.normal(size=n), rng.normal(size=n)
        assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
        xt, yt = np.round(x), np.round(y * 2) / 2  # ties in both
        if np.ptp(xt) > 0 and np.ptp(yt) > 0:
            assert kendall_tau(xt, yt) == pytest.approx(kendalltau(xt, yt).statistic, abs=1e-12)
    # scores equal to rounding are tied, whichever way the rounding fell
    x, y = np.array([0.3, -0.2, -0.2, 0.1]), np.array([1.0, -1.0, -0.5, 0.2])
    for nudge in (1e-15, -1e-15):
        assert kendall_tau(x + [0, 0, nudge, 0], y) == pytest.approx(
            kendalltau(x, y).statistic, abs=1e-12)


def test_a_judge_with_equal_records_for_two_models_ties_them():
    """PRD's bard gives gpt35 and vicuna-13b the same record: its own scores for them are
    equal up to rounding, a tie for Kendall's tau-b against the consensus."""
    from scipy.stats import kendalltau

    from hja_bayes.btl import fit_per_judge_btl
    from hja_bayes.diagnostics import own_ranking_agreement

    fit = hb.fit_hja(hb.Comparisons.from_frame(hb.datasets.load_prd_vicuna80().judgments), rank=0)
    k, items = fit.judges.index("bard"), list(fit.items)
    own = fit_per_judge_btl(fit.data)[k]
    g, v = items.index("gpt35"), items.index("vicuna-13b")
    assert own[g] == pytest.approx(own[v], abs=1e-12)
    tied = own.copy()
    tied[v] = tied[g]
    assert own_ranking_agreement(fit)[k] == pytest.approx(
        kendalltau(tied, fit.mu).statistic, abs=1e-12)


@pytest.mark.parametrize("outcome, categories, says", [
    ("half", 3, "a tie counting 1/2"),
    ("davidson", 3, "in a verdict that is not a tie"),
    ("ordinal", 4, "latent preference"),
    ("ordinal", 5, "latent preference"),
])
def test_the_win_probability_says_what_it_is_under_each_outcome_model(outcome, categories,
                                                                        says):
    from hja_bayes.likelihood import probabilities
    from hja_bayes.reporting.sentences import captions

    data, _ = hb.simulate(3, 4, 0, 300, seed=4, outcome=outcome,
                          categories=categories if outcome == "ordinal" else None,
                          tie_prob=0.2 if outcome == "half" else 0.0,
                          nu=0.8 if outcome == "davidson" else None)
    fit = hb.fit_hja(data, 0, outcome=outcome)
    pairs = hb.pairwise_table(fit)
    assert says in pairs.attrs["meta"]["p_win"] and says in captions(fit, 0.95)["win_probability"]
    if outcome == "half":
        return
    # the outcome model's own probabilities for judge 0 at eta = mu_a - mu_b (gamma 1, no bias)
    row = pairs.iloc[0]
    eta = np.array([row["difference"]])
    aux = np.log(np.asarray(fit.aux, dtype=float))[:1]
    p = np.asarray(probabilities(fit.outcome_model, eta, aux))[0]
    first_side = p[: categories // 2].sum()  # the categories favouring the first-shown model
    if outcome == "davidson":
        assert row["p_win"] == pytest.approx(p[0] / (p[0] + p[2]), rel=1e-12)
    elif categories == 4:  # a cut point at 0: the latent preference is the verdict's side
        assert row["p_win"] == pytest.approx(first_side, rel=1e-12)
    else:  # a neutral middle category: a verdict for model a is less likely than p_win
        assert first_side < row["p_win"] - 0.01


@pytest.mark.parametrize("outcome, names", [("davidson", ["nu"]), ("ordinal", ["gap_1", "gap_2"])])
def test_the_judge_table_shows_the_outcome_models_parameters(outcome, names):
    data, _ = hb.simulate(3, 4, 0, 300, seed=4, outcome=outcome, nu=[0.8, 0.0, 0.5]
                          if outcome == "davidson" else None)
    fit = hb.fit_hja(data, 0, outcome=outcome)
    table = hb.judge_table(fit, level=0.9)
    inference = wald(fit)
    for a, name in enumerate(names):
        np.testing.assert_allclose(table[name], np.asarray(fit.aux)[:, a])
        iv = inference.outcome_parameters(name, 0.9)
        # a Wald interval of the log parameter, mapped back: the estimate is its centre there
        se_log = np.log(table[f"{name}_upper"] / table[name]) / norm.ppf(0.95)
        np.testing.assert_allclose(table[f"{name}_lower"], table[name] * np.exp(-norm.ppf(0.95)
                                                                                * se_log))
        np.testing.assert_allclose(se_log, iv.se / iv.estimate, equal_nan=True)
    if outcome == "davidson":  # judge 1 never tied: nu held at 0, no interval
        assert table["nu"][1] == 0 and np.isnan(table["nu_lower"][1])
        assert (table["nu_lower"][[0, 2]] < [0.8, 0.5]).all()
        assert (table["nu_upper"][[0, 2]] > [0.8, 0.5]).all()
    # the report's headers, and the glossary that explains them
    from hja_bayes.reporting.formatting import column_label
    from hja_bayes.reporting.glossary import glossary

    expected = {"nu": "ν lower", "gap_1": "Cut gap 1 lower"}[names[0]]
    assert column_label(f"{names[0]}_lower") == expected
    def terms(judges):  # the glossary entries of a report with this judge table
        report = SimpleNamespace(judges=judges, bayes=False, biases=None, agreement=None)
        return [term for term, _ in glossary(report)]

    entry = {"nu": "ν (ties)", "gap_1": "Cut gap 1, 2, …"}[names[0]]
    assert entry in terms(table) and entry not in terms(table.drop(columns=names[0]))
    # entries of columns and tables the report does not show are left out, none twice
    assert "Leverage h / ρ" not in terms(table) and "Rank selection" not in terms(table)
    biased = SimpleNamespace(judges=table.assign(beta=0.0), bayes=False, agreement=None,
                             biases=pd.DataFrame())
    listed = [term for term, _ in glossary(biased)]
    assert listed.count("β") == 1 and len(listed) == len(set(listed))


def test_the_win_probability_names_the_bias_terms_held_fixed():
    from hja_bayes.reporting.pairwise import win_probability_meaning

    def fake(*names):  # what the sentence reads of a fit
        return SimpleNamespace(S=None, judges=(), outcome="half",
                               terms=[SimpleNamespace(name=n) for n in names])

    assert "style" not in win_probability_meaning(fake("position"))
    both = win_probability_meaning(fake("position", "style", "self"))
    assert "comparing answers of the same style, neither model its own" in both


def prd_by_category():
    prd = hb.datasets.load_prd_vicuna80()
    return prd.judgments.merge(prd.questions[["question_id", "category"]], on="question_id")


def test_leaderboard_by_with_prompts_is_cluster_robust_as_the_cli():
    """Given the prompts (cluster=), the default pooled fit's intervals are cluster-robust,
    as ``hja-bayes categories`` gives them (they had been Fisher's, with a warning)."""
    votes = prd_by_category()
    with pytest.warns(hb.DataWarning) as caught:  # few prompts per category
        table = hb.leaderboard_by(votes, by="category", cluster="question_id")
    said = [str(w.message) for w in caught]
    assert not [m for m in said if "Fisher's" in m]
    assert table.attrs["meta"]["cov_type"] == "cluster"
    coding = votes[votes["category"] == "coding"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        alone = hb.leaderboard(hb.fit_hja(hb.Comparisons.from_frame(
            coding, judge=None, cluster="question_id"), rank=0), style="arena")
    part = table[table.category == "coding"].drop(columns="category").reset_index(drop=True)
    pd.testing.assert_frame_equal(part, alone)
    # each category's own warnings name it
    assert [m for m in said if m.startswith("category 'coding': cluster-robust intervals "
                                             "rest on few clusters")]


def test_leaderboard_by_leaves_out_what_it_cannot_table_and_says_the_rest_per_category():
    votes = prd_by_category()
    votes["category"] = votes["category"].mask(votes["question_id"] == 68, "one")
    no_gpt4 = (votes["category"] == "fermi") & ((votes["model_a"] == "gpt4")
                                                | (votes["model_b"] == "gpt4"))
    with pytest.warns(hb.DataWarning) as caught:
        table = hb.leaderboard_by(votes[~no_gpt4], by="category", cluster="question_id",
                                  baseline=("gpt4", 1000))
    meta = table.attrs["meta"]
    assert set(meta["skipped"]) == {"one", "fermi"}
    assert meta["skipped"]["one"].startswith("its verdicts come from 1 prompt")
    assert meta["skipped"]["fermi"].startswith("no model 'gpt4' to pin")
    assert [str(w.message) for w in caught if "categories left out" in str(w.message)]
    assert set(table["category"]) == set(meta["categories"]) and len(meta["categories"]) == 9
    # at the top what holds for all (a pinned Elo scale, cluster-robust), the rest by category
    assert meta["baseline"] == {"model": "gpt4", "score": 1000.0} and "n_clusters" not in meta
    assert meta["per_category"]["(all)"]["n_clusters"] == 80
    assert meta["per_category"]["math"]["n_clusters"] == 2


def test_an_inference_from_another_fit_is_refused_not_shown_under_this_fits_names(fit):
    """The tables take a fit's own Wald inference (its covariance chosen by the caller);
    one computed from another fit of as many models had its numbers shown under this fit's
    model names."""
    own = fit.wald_inference()
    pd.testing.assert_frame_equal(hb.pairwise_table(fit, inference=own), hb.pairwise_table(fit))
    other_data, _ = hb.simulate(n_judges=4, n_items=5, rank=1, comparisons_per_judge=600,
                                position_bias=0.4, seed=4)
    other = hb.fit_hja(other_data, rank=1, position_bias=True)  # other verdicts, same names
    assert other.items == fit.items and other.judges == fit.judges
    tables = (hb.leaderboard, hb.pairwise_table, hb.judge_table, hb.bias_table)
    for table in tables:
        with pytest.raises(hb.ParameterError, match="computed from another fit"):
            table(fit, inference=other.wald_inference())
        with pytest.raises(hb.ParameterError, match="must be a WaldInference"):
            table(fit, inference="x")


def test_intervals_refuse_pairs_of_the_wrong_shape_and_a_model_paired_with_itself(fit):
    a, b = fit.items[:2]
    assert len(fit.intervals(pairs=[(a, b)]).query("quantity == 'mu_diff'")) == 1
    with pytest.raises(hb.ParameterError, match="a sequence of \\(item, item\\), got int"):
        fit.intervals(pairs=5)
    with pytest.raises(hb.ParameterError, match="two different items"):
        fit.intervals(pairs=[(a, b), (a, a)])
