"""Group-level certificates: the betting test, the grouped fixed-sequence scan, cascades."""

import math

import numpy as np
import pytest
from scipy.special import expit

from hja_bayes.confidence import (
    calibrate_cascade,
    certify_threshold,
    fixed_sequence_threshold,
    holdout_misranking_bound,
)
from hja_bayes.confidence import grouped as grouped_module
from hja_bayes.confidence.grouped import group_capital, group_sizes
from hja_bayes.confidence.pac_bayes import one_per_group
from hja_bayes.errors import DataError, ParameterError


def _capital_by_loop(x, alpha, delta, order):
    """The betting capital of one group order, written out step by step."""
    n = len(x)
    cap = grouped_module.BET_CAP / (1 - alpha)
    seen, wealth = [], 1.0
    means = []
    for t in range(n):
        mean = sum(seen) / (t + 1)
        var = (grouped_module.PRIOR_VARIANCE + sum((s - m) ** 2 for s, m in zip(seen, means))) / (t + 1)
        bet = min(cap, math.sqrt(2 * math.log(1 / delta) / (n * var)))
        value = x[order[t]]
        wealth *= 1 - bet * value
        means.append(mean)
        seen.append(value)
    return wealth


def test_capital_matches_a_step_by_step_product():
    rng = np.random.default_rng(0)
    alpha, delta = 0.2, 0.1
    x = rng.uniform(-alpha, 0.3, 40)
    orders = [np.random.default_rng(7).permutation(40) for _ in range(1)]
    # one order with the same generator the function uses
    expect = _capital_by_loop(x, alpha, delta, np.random.default_rng(7).permutation(40))
    got = group_capital(x[None, :], alpha, delta, seed=7, n_orders=1)[0]
    assert got == pytest.approx(expect, rel=1e-10)
    assert orders  # the order above is the first permutation drawn from seed 7
    # averaging over orders averages the per-order capitals
    rng2 = np.random.default_rng(3)
    per_order = [_capital_by_loop(x, alpha, delta, rng2.permutation(40)) for _ in range(4)]
    assert group_capital(x[None, :], alpha, delta, seed=3, n_orders=4)[0] == pytest.approx(np.mean(per_order))


def test_group_sizes_and_one_per_group():
    g, n = group_sizes(["b", "a", "b", "c", "b"])
    assert g.tolist() == [1, 0, 1, 2, 1] and n.tolist() == [1, 3, 1]
    keep = one_per_group(["b", "a", "b", "c", "b"], 5, np.random.default_rng(0))
    assert len(keep) == 3 and len({("b", "a", "b", "c", "b")[i] for i in keep}) == 3
    with pytest.raises(DataError):
        one_per_group([1, 2], 3, np.random.default_rng(0))


def _grouped_sample(rng, n_groups, size, tau, base):
    """Groups sharing one confidence and a random effect on disagreement."""
    c = rng.random(n_groups)
    p = expit(base(c) + tau * rng.standard_normal(n_groups))
    disagree = rng.random((n_groups, size)) < p[:, None]
    return np.repeat(c, size), ~disagree.ravel(), np.repeat(np.arange(n_groups), size)


def test_grouped_test_holds_where_the_binomial_one_fails():
    # marginal disagreement 0.2 > alpha at every confidence, strong shared effects: any
    # threshold is a failure.  The example-level test fails often, the grouped one rarely.
    rng = np.random.default_rng(1)
    alpha, delta, reps = 0.15, 0.1, 150
    base = -2.93  # with tau = 3 the marginal disagreement rate is 0.2 (Gauss-Hermite)
    fail_plain = fail_grouped = 0
    for _ in range(reps):
        c, a, g = _grouped_sample(rng, 100, 10, 3.0, lambda c: np.full_like(c, base))
        fail_plain += fixed_sequence_threshold(c, a, alpha, delta) is not None
        fail_grouped += fixed_sequence_threshold(c, a, alpha, delta, groups=g) is not None
    bound = delta + 3 * math.sqrt(delta * (1 - delta) / reps)
    assert fail_grouped / reps <= bound
    assert fail_plain / reps > bound  # the dependence is real: ignoring it breaks the guarantee


def test_grouped_test_certifies_when_groups_are_weak():
    # weak shared effects, disagreement falling with confidence: the grouped test finds a
    # threshold in most runs, and each threshold found is a calibration confidence
    rng = np.random.default_rng(2)
    found = 0
    for _ in range(20):
        c, a, g = _grouped_sample(rng, 100, 10, 0.2, lambda c: -0.6 - 3.3 * c)
        lam = fixed_sequence_threshold(c, a, 0.15, 0.1, groups=g)
        found += lam is not None
        assert lam is None or lam in set(c)
    assert found >= 15


def test_singleton_groups_are_the_ungrouped_test_and_bad_groups_raise():
    rng = np.random.default_rng(4)
    c = rng.random(200)
    a = rng.random(200) < 0.6 + 0.4 * c
    assert fixed_sequence_threshold(c, a, 0.2, 0.1, groups=np.arange(200)) == fixed_sequence_threshold(c, a, 0.2, 0.1)
    with pytest.raises(DataError):
        fixed_sequence_threshold(c, a, 0.2, 0.1, groups=np.arange(10))
    with pytest.raises(ParameterError):
        fixed_sequence_threshold(c, a, 0.2, 0.1, groups=np.arange(200) // 2, method="jung")
    cert = certify_threshold(c, a, 0.2, 0.1, groups=np.arange(200) // 4)
    assert cert.grouped and cert.n_groups == 50 and "50 groups" in cert.describe()
    # a target out of reach: abstain, saying what may certify one
    none = certify_threshold(c, a, 0.01, 0.1, groups=np.arange(200) // 4)
    assert none.threshold is None and none.describe().startswith(
        "No threshold certifies agreement >= 99% with probability >= 90% on these calibration "
        "examples: abstain on everything (a larger alpha or delta, or more calibration data "
        "than the 50 groups here, may certify one).")


def test_cascade_splits_delta_and_passes_groups():
    rng = np.random.default_rng(5)
    n = 600
    groups = np.arange(n) // 3
    confs = [rng.random(n) for _ in range(3)]
    agrees = [rng.random(n) < 0.55 + 0.45 * c for c in confs]
    cas = calibrate_cascade(confs, agrees, 0.2, 0.09, groups=groups)
    assert cas.delta_per_judge == pytest.approx(0.03) and cas.grouped
    # judge 0 is certified on everything at delta / 3, with the groups
    assert cas.thresholds[0] == fixed_sequence_threshold(confs[0], agrees[0], 0.2, 0.03, groups=groups)
    # judge 1 on what judge 0 did not answer
    rest = confs[0] < cas.thresholds[0] if cas.thresholds[0] is not None else np.ones(n, bool)
    assert cas.thresholds[1] == fixed_sequence_threshold(confs[1][rest], agrees[1][rest], 0.2, 0.03,
                                                         groups=groups[rest])
    plain = calibrate_cascade(confs, agrees, 0.2, 0.09, delta_split="none")
    assert plain.delta_per_judge == 0.09 and not plain.grouped


def test_holdout_bound_is_an_exact_binomial_bound():
    from scipy.stats import binomtest

    rng = np.random.default_rng(6)
    c = rng.random(300)
    a = rng.random(300) < c
    b = holdout_misranking_bound(c, a, 0.05, seed=2)
    # recompute the matching the same way and count by hand
    r = np.random.default_rng(2)
    keep = np.arange(300)
    pos, neg = r.permutation(keep[a]), r.permutation(keep[~a])
    m = min(len(pos), len(neg))
    wrong = int(sum(c[i] <= c[j] for i, j in zip(pos[:m], neg[:m])))
    assert (b.m, b.misranked) == (m, wrong)
    ref = binomtest(wrong, m, alternative="less").proportion_ci(confidence_level=0.95, method="exact").high
    assert b.bound == pytest.approx(ref, rel=1e-9) and b.covers == "deployed"
