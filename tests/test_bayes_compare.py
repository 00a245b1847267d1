"""Wald against credible intervals (hja_bayes.bayes.compare)."""

import numpy as np
import pytest

from hja_bayes import compare_intervals, wald_inference

from .bayes_support import panel


def flat(idata, group, name):
    x = np.asarray(getattr(idata, group)[name], dtype=float)
    return x.reshape((-1,) + x.shape[2:])


def test_compare_intervals_puts_wald_beside_the_posterior():
    data, _, fit, idata = panel()
    table = compare_intervals(fit, idata)
    N, K = data.n_items, data.n_judges
    counts = table.quantity.value_counts()
    assert counts["mu_diff"] == N * (N - 1) // 2 and counts["gamma"] == K
    assert counts["beta"] == K and counts["S_diff"] == K * N * (N - 1) // 2
    # the fit's own Wald intervals (its ridge's curvature included), those of its leaderboard
    wald = wald_inference(data, fit.S, fit.beta, 1, position_bias=True, ridge=fit.ridge)
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


def test_next_comparisons_decided_by_a_posterior():
    """A NUTS posterior of a well-conditioned panel (4,500 verdicts, weak priors) is close to
    the Fisher picture: each goal contrast's posterior over Fisher variance (the design
    effect per contrast) near 1, within 3 standard errors of a variance from a few hundred
    effective draws (about +-35%); a fit of another rank is refused."""
    from hja_bayes import next_comparisons
    from hja_bayes.errors import ParameterError

    data, _, fit, idata = panel()
    out = next_comparisons(fit, 20, goal="ranks", posterior=idata)
    meta = out.attrs["meta"]
    assert len(out) == 20 and meta["cov_type"] == "posterior"
    assert 0.7 < meta["design_effect"] < 1.4
    post_mean = np.asarray(idata.posterior["mu"]).mean(axis=(0, 1))
    order = [data.items[i] for i in np.argsort(-post_mean)]
    asked = set(map(frozenset, zip(out.model_a, out.model_b)))
    assert asked <= {frozenset(p) for p in zip(order[:-1], order[1:])}
    from hja_bayes import fit_hja

    with pytest.raises(ParameterError, match="different models"):
        next_comparisons(fit_hja(data, 0, position_bias=True), 5, posterior=idata)


def test_a_posterior_of_another_model_or_a_fit_in_its_place_is_refused_naming_why():
    """leaderboard and judge_table had taken a posterior of another rank or without position
    bias silently (credible columns of another model), and a fit passed where the draws go
    (the uncontrolled fit, say) had ended in an AttributeError."""
    from hja_bayes import ParameterError, fit_hja, judge_table, leaderboard

    data, _, fit, idata = panel()
    plain = fit_hja(data, 1)
    for table in (leaderboard, judge_table, compare_intervals):
        with pytest.raises(ParameterError, match=r"different models \(position bias True "
                                                 r"against the fit's False\)"):
            table(plain, idata)
        with pytest.raises(ParameterError, match=r"must be the InferenceData of sample_hja.*"
                                                 r"got HJAFit; a fit without its bias terms "
                                                 r"goes as uncontrolled="):
            table(fit, plain)
    with pytest.raises(ParameterError, match=r"different models \(rank 1 against the fit's 0\)"):
        leaderboard(fit_hja(data, 0, position_bias=True), idata)


def test_a_posterior_of_other_data_with_the_same_names_is_refused():
    """A fit of a tenth of the verdicts beside the posterior of all of them (the same judges
    and models) had shown credible intervals that exclude its own scores, silently."""
    from hja_bayes import ParameterError, fit_hja, leaderboard

    data, _, fit, idata = panel()
    keep = np.zeros(data.n_cells, dtype=bool)
    keep[::2] = True
    fewer = fit_hja(data.without(np.where(keep[:, None], 0.0, data.counts)), 1,
                    position_bias=True)
    assert fewer.judges == fit.judges and fewer.items == fit.items
    with pytest.raises(ParameterError, match=r"different models \(data: the posterior's "
                                             r"4,500 comparisons against the fit's"):
        leaderboard(fewer, idata)


def test_a_posterior_of_another_run_of_the_same_design_is_refused(tmp_path):
    """Another seed of the same panel: as many comparisons of the same judges and models,
    other verdicts.  compare_intervals and a save had taken it (only the total was read)."""
    from hja_bayes import ParameterError, fit_hja, simulate

    data, _, fit, idata = panel()
    other, _ = simulate(3, 5, 1, 1500, seed=12, position_bias=0.4)
    assert other.n_comparisons == data.n_comparisons and other.items == data.items
    rerun = fit_hja(other, 1, position_bias=True)
    for use in (compare_intervals, lambda f, i: f.save(tmp_path / "other", idata=i)):
        with pytest.raises(ParameterError, match=r"same judges and models, but other "
                                                 r"verdicts"):
            use(rerun, idata)
    fit.save(tmp_path / "own", idata=idata)  # its own posterior is saved as before


def test_a_posterior_of_other_cells_with_as_many_comparisons_is_refused():
    """One cell's verdicts moved to another cell of the same judge: as many comparisons, one
    cell fewer.  Cells of another number had been taken as counted in other categories, the
    posterior then shown under this fit's names; a posterior stripped of its data is taken
    with a warning (nothing to check it by)."""
    import arviz as az

    import hja_bayes as hb
    from hja_bayes import ParameterError, fit_hja, leaderboard

    data, _, fit, idata = panel()
    counts = np.array(data.counts, dtype=float)
    same_judge = np.flatnonzero(data.judge == data.judge[0])
    counts[same_judge[1]] += counts[same_judge[0]]
    counts[same_judge[0]] = 0.0
    moved = data.with_counts(counts)
    assert moved.n_cells == data.n_cells - 1 and moved.n_comparisons == data.n_comparisons
    other = fit_hja(moved, 1, position_bias=True)
    with pytest.raises(ParameterError, match="but other verdicts or cells"):
        leaderboard(other, idata)
    with pytest.warns(hb.DataWarning, match="carries no data .* unchecked"):
        leaderboard(fit, az.InferenceData(posterior=idata.posterior))
    assert len(leaderboard(fit, idata)) == len(fit.items)
