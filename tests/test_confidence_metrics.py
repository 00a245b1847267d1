import numpy as np
import pytest

from hja_bayes.confidence import auroc, ranking_loss, selective_accuracy, selective_curve
from hja_bayes.errors import DataError


def _brute_rk(c, a):
    wrong = 0.0
    pairs = 0
    for i in np.flatnonzero(a):
        for j in np.flatnonzero(~a):
            pairs += 1
            wrong += 1.0 if c[i] < c[j] else (0.5 if c[i] == c[j] else 0.0)
    return wrong / pairs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranking_loss_and_auroc_match_a_pair_count(seed):
    rng = np.random.default_rng(seed)
    n = 60
    c = rng.integers(0, 8, n) / 8.0  # many ties
    a = rng.random(n) < 0.6
    rk = _brute_rk(c, a)
    assert ranking_loss(c, a) == pytest.approx(rk, abs=1e-12)
    assert auroc(c, a) == pytest.approx(1.0 - rk, abs=1e-12)


def test_auroc_of_a_perfect_and_an_inverted_score():
    a = np.array([1, 1, 1, 0, 0], dtype=bool)
    assert auroc([5, 4, 3, 2, 1], a) == 1.0
    assert auroc([1, 2, 3, 4, 5], a) == 0.0
    assert auroc([1, 1, 1, 1, 1], a) == 0.5


def test_selective_curve_matches_direct_counts():
    rng = np.random.default_rng(3)
    c = rng.integers(0, 10, 80) / 10.0
    a = rng.random(80) < 0.7
    cur = selective_curve(c, a)
    assert np.all(np.diff(cur.threshold) < 0) and np.all(np.diff(cur.coverage) > 0)
    for lam, cov, acc, k in zip(*cur):
        keep = c >= lam
        assert k == keep.sum() and cov == pytest.approx(keep.mean()) and acc == pytest.approx(a[keep].mean())
        assert selective_accuracy(c, a, lam) == pytest.approx((cov, acc))
    assert selective_accuracy(c, a, None)[0] == 0.0


def test_metric_bad_input():
    with pytest.raises(DataError, match="both"):
        auroc([0.1, 0.2], [1, 1])
    with pytest.raises(DataError):
        auroc([0.1, np.nan], [1, 0])
    with pytest.raises(DataError):
        auroc([0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(DataError):
        auroc([0.1, 0.2], [1, 2])


def test_misranking_bounds_leave_out_a_bound_without_a_pair():
    """The pipeline's bounds (hja-bayes confidence prints them): the held-out bound is the
    exact binomial bound of its pairs' count; a test split whose one example per group leaves
    no (agree, disagree) pair has none (it had stopped the whole run after training)."""
    from types import SimpleNamespace

    from scipy import stats

    from hja_bayes.confidence.pac_bayes import misranking_bounds

    rng = np.random.default_rng(4)
    agree = rng.random(60) < 0.7
    c = np.where(agree, 0.6, 0.4) + 0.3 * rng.standard_normal(60)
    ranker = SimpleNamespace(posterior=False)
    out = misranking_bounds(ranker, c, SimpleNamespace(agree=agree, groups=None), None)
    held = out["test_misranking_bound"]
    assert held["pairs"] == min(agree.sum(), (~agree).sum()) and "gibbs_pac_bayes_bound" not in out
    k, m = held["misranked"], held["pairs"]
    assert held["bound"] == pytest.approx(stats.beta.ppf(0.95, k + 1, m - k))
    one_group = SimpleNamespace(agree=agree, groups=np.zeros(60, dtype=int))
    assert misranking_bounds(ranker, c, one_group, None) == {}
    assert misranking_bounds(ranker, c, SimpleNamespace(agree=np.ones(60, bool), groups=None),
                             None) == {}
