"""Posterior checks: interval comparison, predictive checks, LOO, rank posterior."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hja_bayes import compare_intervals, wald_inference  # noqa: E402
from hja_bayes.bayes import (  # noqa: E402
    bayesian_p_value,
    plot_calibration,
    plot_ppc_win_rates,
    plot_rank_posterior,
    ppc_calibration,
    ppc_judge_win_rates,
    ppc_pair_win_rates,
    rank_comparison,
    rank_posterior,
)

from .bayes_support import panel, panel_rank0  # noqa: E402


def flat(idata, group, name):
    x = np.asarray(getattr(idata, group)[name], dtype=float)
    return x.reshape((-1,) + x.shape[2:])


def test_bayesian_p_value_matches_a_direct_count():
    rng = np.random.default_rng(0)
    rep = rng.integers(0, 5, size=(400, 7)).astype(float)
    obs = rng.integers(0, 5, size=7).astype(float)
    expected = [np.mean([(r > o) + 0.5 * (r == o) for r in rep[:, m]])
                for m, o in enumerate(obs)]
    np.testing.assert_allclose(bayesian_p_value(obs, rep), expected)


def test_judge_win_rates_match_a_direct_computation():
    data, _, _, idata = panel()
    table = ppc_judge_win_rates(idata)
    rep = flat(idata, "posterior_predictive", "wins")
    assert len(table) == data.n_judges * data.n_items + data.n_judges
    for k, i in ((0, 0), (2, 3)):
        row = table[(table.judge == data.judges[k]) & (table["item"] == data.items[i])].iloc[0]
        first = (data.judge == k) & (data.first == i)
        second = (data.judge == k) & (data.second == i)
        n = data.n[first].sum() + data.n[second].sum()
        obs = (data.wins[first].sum() + (data.n - data.wins)[second].sum()) / n
        reps = (rep[:, first].sum(1) + (data.n[second] - rep[:, second]).sum(1)) / n
        assert row.n == n and row.observed == pytest.approx(obs)
        assert row.predicted_mean == pytest.approx(reps.mean())
        assert row.p_value == pytest.approx(np.mean(reps > obs) + 0.5 * np.mean(reps == obs))
    row = table[(table.judge == data.judges[1]) & (table["item"] == "(first shown)")].iloc[0]
    m = data.judge == 1
    assert row.observed == pytest.approx(data.wins[m].sum() / data.n[m].sum())
    assert row.predicted_mean == pytest.approx(rep[:, m].sum(1).mean() / data.n[m].sum())


def test_pair_win_rates_match_a_direct_computation():
    data, _, _, idata = panel()
    table = ppc_pair_win_rates(idata)
    rep = flat(idata, "posterior_predictive", "wins")
    row = table[(table.judge == data.judges[2]) & (table.item_a == data.items[1])
                & (table.item_b == data.items[4])].iloc[0]
    ab = (data.judge == 2) & (data.first == 1) & (data.second == 4)
    ba = (data.judge == 2) & (data.first == 4) & (data.second == 1)
    n = data.n[ab].sum() + data.n[ba].sum()
    obs = (data.wins[ab].sum() + (data.n - data.wins)[ba].sum()) / n
    reps = (rep[:, ab].sum(1) + (data.n[ba] - rep[:, ba]).sum(1)) / n
    assert row.observed == pytest.approx(obs)
    assert row.predicted_lower == pytest.approx(np.quantile(reps, 0.025))
    assert row.p_value == pytest.approx(np.mean(reps > obs) + 0.5 * np.mean(reps == obs))
    assert table.n.sum() == pytest.approx(data.n.sum())


def test_calibration_bins_partition_the_data_and_data_from_the_model_look_calibrated():
    data, _, _, idata = panel()
    table = ppc_calibration(idata, n_bins=5)
    assert table.n.sum() == pytest.approx(data.n.sum())
    assert np.all((table.predicted >= table.bin_lower) & (table.predicted <= table.bin_upper))
    # simulated from the model: no bin should be far outside its predictive band
    assert np.all((table.p_value > 0.001) & (table.p_value < 0.999))


def test_rank_posterior_matches_a_direct_computation():
    data, _, _, idata = panel()
    result = rank_posterior(idata)
    mu = flat(idata, "posterior", "mu")
    ranks = (-mu).argsort(1).argsort(1) + 1
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0)
    for item, row in result.table.set_index("item").iterrows():
        i = data.items.index(item)
        assert row.mean_rank == pytest.approx(ranks[:, i].mean())
        assert row.p_best == pytest.approx(np.mean(ranks[:, i] == 1))
        assert row.lower <= row.median_rank <= row.upper
    assert list(result.table.mean_rank) == sorted(result.table.mean_rank)
    by_judge = rank_posterior(idata, judge=data.judges[0])
    assert by_judge.table.shape == result.table.shape


def test_compare_intervals_puts_wald_beside_the_posterior():
    data, _, fit, idata = panel()
    table = compare_intervals(fit, idata)
    N, K = data.n_items, data.n_judges
    counts = table.quantity.value_counts()
    assert counts["mu_diff"] == N * (N - 1) // 2 and counts["gamma"] == K
    assert counts["beta"] == K and counts["S_diff"] == K * N * (N - 1) // 2
    wald = wald_inference(data, fit.S, fit.beta, 1, position_bias=True)
    np.testing.assert_allclose(table[table.quantity == "gamma"].wald_se, wald.gamma().se)
    mu = flat(idata, "posterior", "mu")
    row = table[table.label == f"{data.items[0]} - {data.items[3]}"].iloc[0]
    diff = mu[:, 0] - mu[:, 3]
    assert row.post_mean == pytest.approx(diff.mean())
    assert row.eti_lower == pytest.approx(np.quantile(diff, 0.025))
    assert row.hdi_lower <= row.post_mean <= row.hdi_upper
    # 1500 comparisons per judge: the posterior is close to the Wald normal.  With ~500
    # effective draws an sd is estimated to ~3%; allow 15% for that and for curvature.
    assert 0.85 < table.sd_ratio.median() < 1.15


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


def test_plots_draw_one_mark_per_row():
    data, _, _, idata = panel()
    table = ppc_pair_win_rates(idata)
    ax = plot_ppc_win_rates(table)
    n_points = sum(len(line.get_xdata()) for line in ax.lines if line.get_linestyle() == "None")
    assert n_points == len(table)
    cal = ppc_calibration(idata)
    ax = plot_calibration(cal)
    assert len(ax.lines[0].get_xdata()) == len(cal)
    ax = plot_rank_posterior(rank_posterior(idata))
    assert ax.images[0].get_array().shape == (data.n_items, data.n_items)
    plt.close("all")
