"""Posterior predictive checks (hja_bayes.bayes.ppc) against direct computations."""

import numpy as np
import pytest

from hja_bayes.bayes import (
    bayesian_p_value,
    ppc_calibration,
    ppc_judge_win_rates,
    ppc_pair_win_rates,
)

from .bayes_support import panel


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


def test_replicated_outcomes_follow_the_probabilities_for_single_and_larger_units():
    """Units of one comparison (one uniform number each) and larger ones (binomials) both
    give category frequencies within 4.5 binomial sds of n p, and every unit its n."""
    from hja_bayes.bayes.predictive import replicate_outcomes

    p = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0],
                  [0.25, 0.25, 0.25, 0.25]])
    for n in (np.ones(4), np.array([1.0, 3.0, 1.0, 0.0])):
        rep = replicate_outcomes(np.broadcast_to(p, (20_000, 4, 4)), n, 0)
        np.testing.assert_array_equal(rep.sum(-1), np.broadcast_to(n, (20_000, 4)))
        assert np.all(rep[:, 1, [1, 3]] == 0) and np.all(rep[:, 2, 3] == n[2])
        total = 20_000 * n[:, None]
        sd = np.sqrt(total * p * (1 - p))
        assert np.all(np.abs(rep.sum(0) - total * p) <= 4.5 * sd + 1e-9)


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


def test_the_stored_expected_wins_are_the_draws_mean():
    """``constant_data.expected_wins``, summed per chunk of draws when the posterior is
    assembled, equals :func:`expected_wins` computed again from the stored draws, and the
    calibration table is the same without it.  It has no chain or draw dimension, so it is
    not in ``posterior_predictive``, where ArviZ expects both of every variable
    (``az.summary`` and ``az.ess`` of that group had failed)."""
    import arviz as az

    from hja_bayes.bayes.ppc import expected_wins

    _, _, _, idata = panel()
    stored = idata.constant_data["expected_wins"]
    assert stored.dims == ("cell",) and "expected_wins" not in idata.posterior_predictive
    np.testing.assert_allclose(stored.values, expected_wins(idata).mean(axis=0), rtol=1e-12)
    assert len(az.summary(idata, group="posterior_predictive", kind="stats")) > 0
    without = idata.copy()
    without.constant_data = without.constant_data.drop_vars("expected_wins")
    np.testing.assert_allclose(ppc_calibration(without, n_bins=5).predicted,
                               ppc_calibration(idata, n_bins=5).predicted, rtol=1e-12)
    # a posterior written before kept it in posterior_predictive: read there
    older = without.copy()
    older.posterior_predictive["expected_wins"] = 0.5 * stored  # altered, to see it read

    def total(table):
        return float((table.predicted * table.n).sum())

    assert total(ppc_calibration(older, n_bins=5)) != pytest.approx(
        total(ppc_calibration(idata, n_bins=5)), rel=1e-3)


def test_calibration_bins_partition_the_data_and_data_from_the_model_look_calibrated():
    data, _, _, idata = panel()
    table = ppc_calibration(idata, n_bins=5)
    assert table.n.sum() == pytest.approx(data.n.sum())
    assert np.all((table.predicted >= table.bin_lower) & (table.predicted <= table.bin_upper))
    # simulated from the model: no bin should be far outside its predictive band
    assert np.all((table.p_value > 0.001) & (table.p_value < 0.999))


def test_calibration_takes_a_whole_number_of_bins():
    import hja_bayes as hb

    _, _, _, idata = panel()
    with pytest.raises(hb.ParameterError, match="n_bins must be an integer >= 1, got 2.5"):
        ppc_calibration(idata, n_bins=2.5)  # had used 2 bins
