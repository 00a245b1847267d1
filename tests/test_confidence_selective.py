import re

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from hja_bayes.confidence import (
    TE_JUDGES,
    apply_cascade,
    binomial_upper_bound,
    calibrate_cascade,
    certify_threshold,
    fixed_sequence_threshold,
    load_trust_or_escalate_confidence,
)
from hja_bayes.confidence.selective import fewest_certifiable
from hja_bayes.errors import DataError, ParameterError

from .conftest import SHARED_DATA, shared_data_or_skip


@pytest.mark.parametrize("k,n", [(0, 30), (3, 30), (10, 143), (29, 30), (30, 30), (57, 400)])
@pytest.mark.parametrize("delta", [0.05, 0.1])
def test_binomial_upper_bound_is_clopper_pearson(k, n, delta):
    ub = float(binomial_upper_bound(k, n, delta))
    ref = binomtest(k, n, alternative="less").proportion_ci(confidence_level=1 - delta, method="exact").high
    assert ub == pytest.approx(ref, rel=1e-9, abs=1e-12)
    if k < n:  # the defining equation P(Bin(n, ub) <= k) = delta
        assert binom.cdf(k, n, ub) == pytest.approx(delta, rel=1e-7)


def _brute_threshold(c, a, alpha, delta, min_selected):
    """Direct reading of lambda_hat = inf{lambda : R+(lambda') <= alpha for all lambda' >= lambda}."""
    cands = sorted({x for x in c if np.sum(c >= x) >= min_selected}, reverse=True)
    best = None
    for lam in cands:
        sel = c >= lam
        r_plus = binomtest(int(np.sum(~a[sel])), int(sel.sum()), alternative="less").proportion_ci(
            confidence_level=1 - delta, method="exact"
        ).high
        if r_plus > alpha:
            break
        best = lam
    return best


@pytest.mark.parametrize("seed", range(6))
def test_fixed_sequence_matches_its_definition(seed):
    rng = np.random.default_rng(seed)
    n = 150
    c = np.round(rng.random(n), 2)
    a = rng.random(n) < 0.55 + 0.45 * c
    for alpha, min_sel in [(0.1, 30), (0.2, 30), (0.3, 10)]:
        got = fixed_sequence_threshold(c, a, alpha, 0.1, min_sel)
        assert got == _brute_threshold(c, a, alpha, 0.1, min_sel)


def test_no_threshold_when_too_few_or_too_risky():
    c = np.linspace(0, 1, 20)
    assert fixed_sequence_threshold(c, np.ones(20), 0.15, 0.1) is None  # fewer than 30 items
    # 40 items, no disagreement: every candidate passes, down to the lowest confidence
    c = np.linspace(0, 1, 40)
    assert fixed_sequence_threshold(c, np.ones(40), 0.15, 0.1) == 0.0
    # the top 30 agree, the bottom 10 do not: the scan stops where the bound first exceeds alpha
    a = c >= c[10]
    lam = fixed_sequence_threshold(c, a, 0.15, 0.1)
    # 30 selected with 0 wrong (bound 0.074) and 31 with 1 wrong (0.120) pass; 32 with 2 wrong
    # (0.158) fails, so the scan stops at the 31st highest confidence
    assert float(binomial_upper_bound(1, 31, 0.1)) <= 0.15 < float(binomial_upper_bound(2, 32, 0.1))
    assert lam == c[9]
    # everything disagrees: the highest candidate fails, so nothing is certified
    assert fixed_sequence_threshold(c, np.zeros(40), 0.15, 0.1) is None


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_levels_outside_unit_interval_raise(bad):
    c, a = np.linspace(0, 1, 50), np.ones(50)
    with pytest.raises(ParameterError, match="alpha"):
        fixed_sequence_threshold(c, a, bad, 0.1)
    with pytest.raises(ParameterError, match="delta"):
        fixed_sequence_threshold(c, a, 0.1, bad)
    with pytest.raises(ParameterError):
        calibrate_cascade([c], [a], bad, 0.1)
    with pytest.raises(ParameterError):
        fixed_sequence_threshold(c, a, 0.1, 0.1, method="nope")


def test_guarantee_holds_by_simulation():
    # C ~ U(0, 1), P(disagree | C = c) = 0.4 (1 - c): true risk above lambda is 0.2 (1 - lambda)
    rng = np.random.default_rng(11)
    alpha, delta, reps, n = 0.15, 0.1, 400, 300
    success = 0
    for _ in range(reps):
        c = rng.random(n)
        a = rng.random(n) >= 0.4 * (1 - c)
        lam = fixed_sequence_threshold(c, a, alpha, delta)
        success += lam is None or 0.2 * (1 - lam) <= alpha
    rate = success / reps
    # P(success) >= 1 - delta; allow three binomial standard errors of the estimate
    assert rate >= (1 - delta) - 3 * np.sqrt(delta * (1 - delta) / reps)


def _fewest_by_scipy(alpha, delta):
    """The fewest examples, none disagreeing, whose Clopper-Pearson bound reaches alpha."""
    n = 1
    while binomtest(0, n, alternative="less").proportion_ci(1 - delta, method="exact").high > alpha:
        n += 1
    return n


@pytest.mark.parametrize("alpha,delta", [(0.15, 0.1), (0.05, 0.1), (0.1, 0.025), (0.02, 0.1)])
def test_a_high_target_is_tested_from_where_it_can_pass(alpha, delta):
    """The scan starts at the first threshold keeping enough examples for the bound to reach
    alpha: at high targets a start at 30 examples failed whatever the data, so nothing was
    ever certified (0.1% disagreement on 5,000 examples at alpha = 0.05; here 600)."""
    fewest = _fewest_by_scipy(alpha, delta)
    assert fewest_certifiable(alpha, delta) == fewest
    rng = np.random.default_rng(3)
    c = rng.random(600)
    a = rng.random(600) >= 0.001
    lam = fixed_sequence_threshold(c, a, alpha, delta)
    assert lam is not None and lam == _brute_threshold(c, a, alpha, delta, max(30, fewest))
    # a three-judge cascade at 90% agreement tests each judge at delta / 3 (33 examples)
    assert calibrate_cascade([c] * 3, [a] * 3, 0.1, 0.1).thresholds[0] is not None


def test_the_guarantee_holds_at_a_high_target_and_thresholds_are_found():
    # P(disagree | C = c) = 0.12 (1 - c): the true risk above lambda is 0.06 (1 - lambda)
    rng = np.random.default_rng(12)
    alpha, delta, reps, n = 0.05, 0.1, 400, 600
    success = certified = 0
    for _ in range(reps):
        c = rng.random(n)
        lam = fixed_sequence_threshold(c, rng.random(n) >= 0.12 * (1 - c), alpha, delta)
        success += lam is None or 0.06 * (1 - lam) <= alpha
        certified += lam is not None
    assert success / reps >= (1 - delta) - 3 * np.sqrt(delta * (1 - delta) / reps)
    assert certified / reps > 0.6  # every lambda >= 1/6 qualifies; none was found before


def test_missing_groups_and_text_agreement_are_errors_and_mixed_group_types_are_read():
    rng = np.random.default_rng(0)
    c, a = rng.random(300), rng.random(300) < 0.8
    groups = (np.arange(300) // 3).astype(float)
    groups[-2:] = np.nan  # two unrelated examples had been joined into one NaN group
    with pytest.raises(DataError, match="2 missing label.*example 298"):
        certify_threshold(c, a, 0.3, 0.1, groups=groups)
    with pytest.raises(DataError, match="1 missing label"):
        certify_threshold(c, a, 0.3, 0.1, groups=[None] + ["q"] * 299)
    mixed = np.array([g if g % 2 else f"q{g}" for g in np.arange(300) // 3], dtype=object)
    as_text = mixed.astype(str)  # 1 beside "q2" had been a bare TypeError from sorting
    assert certify_threshold(c, a, 0.3, 0.1, groups=mixed) == \
        certify_threshold(c, a, 0.3, 0.1, groups=as_text)
    import pandas as pd

    for bad, shown in ((np.where(a, "True", "False"), "'"), (np.where(a, "yes", "no"), "'"),
                       (pd.array([True, None] + [False] * 298, dtype="boolean"), "<NA>")):
        with pytest.raises(DataError, match=f"only 0/1 .*holds {shown}"):
            certify_threshold(c, bad, 0.3, 0.1)


def test_the_certificate_states_its_levels_without_rounding_up():
    c, a = np.linspace(0, 1, 400), np.ones(400)
    text = certify_threshold(c, a, 0.125, 0.025).describe()
    assert "agreement >= 87.5% with probability >= 97.5%" in text
    one = certify_threshold(c[:40], np.r_[np.ones(39), 0], 0.01, 0.01,
                            groups=np.r_[0, np.arange(39)])
    assert one.threshold is None and "than the 39 groups here" in one.describe()
    for method in ("exact", "jung"):  # the peers' method had returned None
        with pytest.raises(DataError, match="no calibration examples"):
            fixed_sequence_threshold([], [], 0.1, 0.1, method=method)


def test_cascade_escalates_and_abstains():
    # judge 0 confident on the first half, judge 1 on items 40..59, nobody on the rest
    n = 100
    c0 = np.r_[np.full(50, 0.9), np.full(50, 0.2)]
    c1 = np.r_[np.full(50, 0.1), np.full(20, 0.95), np.full(30, 0.3)]
    v0, v1 = np.ones(n, int), np.full(n, 2)
    human = np.r_[np.ones(50, int), np.full(50, 2)]
    a0, a1 = v0 == human, v1 == human
    a1[70:] = False
    cas = calibrate_cascade([c0, c1], [a0, a1], 0.15, 0.1, min_selected=10)
    assert cas.thresholds[0] == 0.9 and cas.delta_per_judge == 0.05  # delta split over 2 judges
    # judge 1 is calibrated on items 50..99 only: 0.95 (20 items, all agree: bound at
    # delta / 2 = 0.05 is 1 - 0.05 ** (1 / 20) = 0.139) passes, 0.3 (50 items, 30 wrong) fails
    assert float(binomial_upper_bound(0, 20, 0.05)) <= 0.15
    assert cas.thresholds[1] == 0.95
    res = apply_cascade(cas, [c0, c1], [v0, v1], human)
    expect_judge = np.r_[np.zeros(50), np.ones(20), -np.ones(30)].astype(int)
    assert np.array_equal(res.judge, expect_judge)
    assert res.coverage == pytest.approx(0.7) and res.agreement == 1.0
    assert np.allclose(res.judge_share, [50 / 70, 20 / 70])
    assert np.all(res.verdict[res.judge < 0] == -1)
    # a judge with no threshold answers nothing
    res = apply_cascade([None, 0.95], [c0, c1], [v0, v1], human)
    assert res.coverage == pytest.approx(0.2)


def test_jung_reproduces_the_reference_thresholds():
    ref_path = shared_data_or_skip("reference", "cse_lambda_reference.txt")
    shared_data_or_skip("trust_or_escalate", "calibration_judge_probs.csv")
    data = [load_trust_or_escalate_confidence(j, SHARED_DATA) for j in TE_JUDGES]  # mistral first
    confs = [d.baselines["predictive_probability"] for d in data]
    lines = [ln for ln in ref_path.read_text().splitlines() if ln.startswith("alpha=")]
    assert len(lines) == 4
    for line in lines:
        alpha, delta = map(float, re.findall(r"alpha=([\d.]+) delta=([\d.]+)", line)[0])
        cas = calibrate_cascade(confs, [d.agree for d in data], alpha, delta, method="jung", delta_split="none")
        res = apply_cascade(cas, confs, [d.verdict for d in data], data[0].human)
        got = (
            f"alpha={alpha:g} delta={delta:g} lambda_hats=[{', '.join(f'{t:.5g}' for t in cas.thresholds)}] "
            f"cal_cov={res.coverage:.3f} cal_acc={res.agreement:.4f}"
        )
        assert got == line


def test_min_selected_is_a_whole_number():
    conf, agree = [0.95] * 40 + [0.6] * 40, [1] * 40 + [1, 0] * 20
    for bad in (2.7, "x", 0):  # 2.7 had been 2, "x" a bare ValueError
        with pytest.raises(ParameterError, match="min_selected must be an integer >= 1"):
            fixed_sequence_threshold(conf, agree, alpha=0.15, delta=0.1, min_selected=bad)
