"""Few verdicts per judge: the intervals say when they run short, and a fit drifting towards
no consensus says so (coverage figures: benchmarks/bench_few_verdicts.py)."""

import re

import numpy as np
import pytest

import hja_bayes as hb
from hja_bayes.inference.few_verdicts import (FEW_VERDICTS_SE, INFLATION_SHIFT, few_verdicts_note,
                                              inflation_shift, warn_few_verdicts)


def gamma_se(fit) -> np.ndarray:
    table = fit.intervals()
    return table[table.quantity == "gamma"].se.to_numpy()


def test_intervals_warn_when_the_judges_rest_on_few_verdicts():
    few, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=20, seed=0)
    per_judge = few.to_frame().groupby("judge")["n"].sum()
    assert (f"comparisons per judge: median {per_judge.median():g} ({per_judge.min():g} to "
            f"{per_judge.max():g})") in str(few.summary())  # the summary shows what to look at
    fit = hb.fit_hja(few, rank=0)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each") as caught:
        se = gamma_se(fit)
    assert caught[0].filename == __file__  # the user's line, not the cached property's
    said = float(re.search(r"gamma_k ([^,]+),", str(caught[0].message)).group(1))
    assert np.median(se) > FEW_VERDICTS_SE and said == pytest.approx(np.median(se), rel=0.05)
    # the same judges with twenty times the verdicts: quiet (warnings are errors here)
    many, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=400, seed=0)
    assert np.median(gamma_se(hb.fit_hja(many, rank=0))) < FEW_VERDICTS_SE
    # the same rule at rank 1, where the gamma_k ran short in the benchmark too
    rank_1, _ = hb.simulate(n_judges=6, n_items=8, rank=1, comparisons_per_judge=20, seed=0)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each"):
        gamma_se(hb.fit_hja(rank_1, rank=1))


def test_few_prompts_do_not_hide_few_verdicts():
    """A cluster-robust covariance of 3 prompts put the judges' median se(gamma_k) at 0.16,
    under the rule's 0.25, where their 24 verdicts each give 0.33 by the Fisher information
    (MT-Bench's first 3 questions: 0.25 against 0.42): no warning, no report note.  The rule
    reads the larger of the two now."""
    from hja_bayes.reporting.content import build_report

    data, _ = hb.simulate(n_judges=4, n_items=4, rank=0, comparisons_per_judge=24, seed=3,
                          questions=3, question_correlation=0.0)
    fit = hb.fit_hja(data, rank=0)
    robust, fisher = fit.wald_inference(fit.cov_type), fit.wald_inference("fisher")
    with pytest.warns(hb.DataWarning) as caught:
        assert np.median(robust.gamma().se) < FEW_VERDICTS_SE < np.median(fisher.gamma().se)
    assert sum("rest on few verdicts each" in str(w.message) for w in caught) == 2
    assert robust.few_verdicts_se() == pytest.approx(np.maximum(robust.gamma().se,
                                                                 fisher.gamma().se), rel=1e-6)
    with pytest.warns(hb.DataWarning):
        notes = build_report(fit).notes
    assert any(n.startswith("The judges' sensitivities rest on few verdicts each") for n in notes)


def test_the_inflation_shift_is_the_median_difference_in_se_times_half_the_squared_se():
    rng = np.random.default_rng(3)
    mu, gse = rng.normal(size=8), rng.uniform(0.1, 0.5, size=12)
    A = rng.normal(size=(8, 8))
    cov = A @ A.T / 50
    t = [abs(mu[i] - mu[j]) / np.sqrt(cov[i, i] + cov[j, j] - 2 * cov[i, j])
         for i in range(8) for j in range(i + 1, 8)]
    assert inflation_shift(gse, mu, cov) == pytest.approx(np.median(gse) ** 2 / 2
                                                          * np.median(t), rel=1e-12)
    assert inflation_shift(gse[:1], mu, cov) == 0.0  # one judge: gamma is 1 by definition


def test_many_judges_warn_where_each_has_enough_verdicts_for_a_few():
    """300 judges of 100 verdicts each: se(gamma_k) below the few-verdicts line, but the
    scores' inflation (a few percent) is large against intervals this narrow: warned, the
    text saying why; 5 judges of those 100 verdicts stay quiet."""
    crowd, _ = hb.simulate(n_judges=300, n_items=10, rank=0, comparisons_per_judge=100, seed=2)
    fit = hb.fit_hja(crowd, rank=0)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each for this many judges "
                                            r"\(median standard error of gamma_k 0\.[0-9]+, "
                                            r"300 judges\).*with 300 judges the inflation"):
        se = gamma_se(fit)
    assert np.median(se) < FEW_VERDICTS_SE
    mu, cov = fit.wald.mu_covariance()
    assert inflation_shift(se, mu, cov) > INFLATION_SHIFT
    note = few_verdicts_note(se, 0, False, mu, cov)  # the report's
    assert note.startswith("The judges' sensitivities rest on few verdicts each for this many "
                           "judges") and "With 300 judges the inflation" in note
    panel, _ = hb.simulate(n_judges=5, n_items=10, rank=0, comparisons_per_judge=100, seed=2)
    gamma_se(hb.fit_hja(panel, rank=0))  # warnings are errors here


def test_a_fit_drifting_towards_no_consensus_says_so():
    # 3 judges, 30 verdicts each: by chance two of them order the models nearly oppositely,
    # and the rank-0 likelihood keeps rising as their rows cancel (gamma -> +-inf, mu -> 0)
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=30, seed=0)
    with pytest.warns(hb.ConvergenceWarning, match="drifting towards judges whose score rows "
                                                   "cancel") as caught:
        fit = hb.fit_hja(data, rank=0, max_iter=300)
    assert not fit.converged
    message = str(caught[0].message)
    low, high = (float(x) for x in re.search(r"gamma from (\S+) to (\S+),", message).groups())
    assert low == pytest.approx(fit.gamma.min(), rel=1e-2)
    assert high == pytest.approx(fit.gamma.max(), rel=1e-2)
    assert np.mean(fit.gamma) ** 2 < 0.01 * np.mean(fit.gamma ** 2)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each"):
        fit.intervals()


def test_the_report_notes_what_the_warning_says():
    from hja_bayes.reporting.content import build_report

    few, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=20, seed=0)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each"):
        notes = build_report(hb.fit_hja(few, rank=0)).notes
    assert notes[0].startswith("The judges' sensitivities rest on few verdicts each")
    assert "the consensus scores μ and the sensitivities γ" in notes[0]
    many, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=400, seed=0)
    assert not any("few verdicts" in n for n in build_report(hb.fit_hja(many, rank=0)).notes)


def test_a_small_panel_with_few_verdicts_gets_the_small_panel_wording_not_the_crowds():
    """Three judges of 40 noisy verdicts: se(gamma_k) far above the rule and an inflation
    shift above INFLATION_SHIFT too, but the crowd's sentence (calibrated on 50 to 300
    judges) and its remedy are not said; from CROWD_SIZE judges on they are."""
    from hja_bayes.inference.few_verdicts import CROWD_SIZE, _diagnosis
    gse = np.full(3, 1.5)
    mu = np.array([0.4, 0.0, -0.4, -0.8])
    cov = np.eye(4) * 0.01
    assert inflation_shift(gse, mu, cov) > INFLATION_SHIFT
    few, many, _, _ = _diagnosis(gse, mu, cov)
    assert few and not many
    with pytest.warns(hb.DataWarning) as record:
        warn_few_verdicts(gse, 0, mu, cov)
    text = str(record[0].message)
    assert "above 0.25 counts as few" in text and "inflation" not in text
    assert "gamma_scale" not in text
    few, many, _, _ = _diagnosis(np.full(CROWD_SIZE, 1.5), mu, cov)
    assert few and many


def test_a_judge_without_a_standard_error_does_not_silence_the_rules():
    """A NaN among the se(gamma_k) made the median NaN and both rules quiet."""
    from hja_bayes.inference.few_verdicts import few_verdicts

    se = np.array([0.4, 0.5, np.nan])
    assert few_verdicts(se) == pytest.approx(0.45)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each"):
        warn_few_verdicts(se, 0)
    mu, cov = np.array([0.0, 1.0]), np.eye(2) * 1e-3
    assert inflation_shift(np.array([0.2, 0.2, np.nan]), mu, cov) == pytest.approx(
        0.2 ** 2 / 2 * 1 / np.sqrt(2e-3))
    assert few_verdicts(np.array([np.nan, np.nan])) is None
