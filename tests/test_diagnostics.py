import numpy as np
import pytest

from hja_bayes import (
    HJAError,
    ParameterError,
    bicluster_residual,
    canonicalize,
    judge_leverage,
    simulate,
)

from .bayes_support import zero_loading_scores

def test_leverage_matches_direct_formulas_on_a_hand_built_panel():
    gamma = np.array([1.6, 1.2, 0.7, 0.5])
    mu = np.array([1.0, 0.5, -0.5, -1.0])
    U = np.array([[2.0, 0.0], [-0.5, 0.1], [-0.5, 0.4], [-1.0, -0.5]])
    V = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    lev = judge_leverage(gamma, mu, U, V)
    mu_norm = np.sqrt(sum(x * x for x in mu))
    for k in range(4):
        row = [sum(U[k, a] * V[i, a] for a in range(2)) for i in range(4)]
        h = np.sqrt(sum(x * x for x in row))
        assert lev.h[k] == pytest.approx(h, rel=1e-14)
        assert lev.rho[k] == pytest.approx(h / (abs(gamma[k]) * mu_norm + 1e-12), rel=1e-14)
    # judge 0: top gamma and top h -> flagged; judge 3: top h but low gamma -> not flagged
    assert lev.high.tolist() == [True, False, False, False]
    # the relative-leverage gate: with a high threshold nobody is flagged
    assert not judge_leverage(gamma, mu, U, V, rho_threshold=10.0).high.any()


def test_leverage_is_invariant_to_the_rotation_of_the_factors_and_zero_at_rank_zero():
    data, truth = simulate(n_judges=5, n_items=7, rank=2, seed=3)
    lev = judge_leverage(truth.gamma, truth.mu, truth.U, truth.V)
    R = truth.S - np.outer(truth.gamma, truth.mu)
    np.testing.assert_allclose(lev.h, np.linalg.norm(R, axis=1), atol=1e-10)
    theta = 0.7
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    rotated = judge_leverage(truth.gamma, truth.mu, truth.U @ rot, truth.V @ rot)
    np.testing.assert_allclose(rotated.h, lev.h, atol=1e-12)
    d0 = canonicalize(np.outer(truth.gamma, truth.mu), 0)
    lev0 = judge_leverage(*d0[:4])
    np.testing.assert_array_equal(lev0.h, 0.0)
    assert not lev0.high.any()


def planted_residual(seed, noise=0.05):
    """A double-centred residual with 3 judge groups x 3 item groups, factored as U V^T."""
    rng = np.random.default_rng(seed)
    judge_groups = np.repeat([0, 1, 2], [3, 4, 2])
    item_groups = np.repeat([0, 1, 2], [4, 3, 5])
    block = np.array([[2.0, -1.0, -1.0], [-1.0, 2.0, -1.0], [-1.0, -1.0, 2.0]])
    R = block[np.ix_(judge_groups, item_groups)] + noise * rng.standard_normal((9, 12))
    R = R - R.mean(axis=0) - R.mean(axis=1, keepdims=True) + R.mean()
    P, s, Qt = np.linalg.svd(R)
    U, V = P[:, :2] * s[:2], Qt[:2].T  # keep the rank-2 structure
    # shuffle judges and items so the blocks are not contiguous in the input
    jp, ip = rng.permutation(9), rng.permutation(12)
    return U[jp], V[ip], judge_groups[jp], item_groups[ip]


def same_partition(a, b):
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


def test_biclustering_recovers_planted_blocks_and_orders_them_contiguously():
    U, V, judge_groups, item_groups = planted_residual(seed=0)
    b = bicluster_residual(U, V, 3, 3, seed=1)
    assert same_partition(b.judge_labels, judge_groups)
    assert same_partition(b.item_labels, item_groups)
    # the orderings make every block a contiguous rectangle
    assert np.all(np.diff(b.judge_labels[b.judge_order]) >= 0)
    assert np.all(np.diff(b.item_labels[b.item_order]) >= 0)
    assert sorted(b.judge_order.tolist()) == list(range(9))
    # block means: each judge group over-rates exactly one item group
    R = U @ V.T
    for a in range(3):
        for c in range(3):
            expected = R[np.ix_(b.judge_labels == a, b.item_labels == c)].mean()
            assert b.block_means[a, c] == pytest.approx(expected, abs=1e-12)
    assert np.all((b.block_means > 1.0).sum(axis=1) == 1)


def test_biclustering_is_reproducible_for_a_seed():
    U, V, _, _ = planted_residual(seed=4, noise=0.8)  # noisy: starts matter
    first = bicluster_residual(U, V, 3, 4, seed=7)
    again = bicluster_residual(U, V, 3, 4, seed=7)
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)


def test_biclustering_edge_cases():
    U, V, _, _ = planted_residual(seed=2)
    one = bicluster_residual(U, V, 1, 1)
    assert one.block_means.shape == (1, 1)
    empty = bicluster_residual(np.zeros((4, 0)), np.zeros((6, 0)), 1, 1)
    np.testing.assert_array_equal(empty.judge_order, np.arange(4))
    with pytest.raises(HJAError, match="n_item_blocks must lie in 1..12"):
        bicluster_residual(U, V, 2, 13)
    with pytest.raises(HJAError, match="distinct residual profiles"):
        bicluster_residual(np.zeros((4, 0)), np.zeros((6, 0)), 2, 1)
    with pytest.raises(HJAError, match="share r columns"):
        bicluster_residual(U, V[:, :1], 2, 2)
    # arguments of the wrong kind: ParameterErrors, not NumPy's or k-means' own errors
    for blocks in ("two", 2.5, True):
        with pytest.raises(ParameterError, match="n_judge_blocks must be an integer >= 1"):
            bicluster_residual(U, V, blocks, 2)
    with pytest.raises(ParameterError, match="n_init must be an integer >= 1"):
        bicluster_residual(U, V, 2, 2, n_init=0)
    with pytest.raises(ParameterError, match="U must be finite"):
        bicluster_residual(np.full((3, 1), np.nan), np.ones((4, 1)))
    for seed in (-1, 1.5, None, "0"):  # NumPy's and SeedSequence's errors, or no seed at all
        with pytest.raises(ParameterError, match="seed must be an integer >= 0"):
            bicluster_residual(U, V, 2, 2, seed=seed)


def test_distinct_profiles_are_counted_whatever_the_residuals_units():
    """Profiles apart by 1e-7 of the residuals' size are distinct at any scale (rounding to
    12 decimals had merged every profile of residuals scaled by 1e-7)."""
    rng = np.random.default_rng(2)
    U, V = rng.normal(size=(6, 2)), rng.normal(size=(7, 2))
    labels = [bicluster_residual(U * c, V * c, 3, 3, seed=0).judge_labels for c in (1e-7, 1, 1e7)]
    np.testing.assert_array_equal(labels[0], labels[1])
    np.testing.assert_array_equal(labels[2], labels[1])


def test_leverage_refuses_arguments_of_the_wrong_kind():
    with pytest.raises(ParameterError, match="gamma must hold numbers"):
        judge_leverage(["a"], [1.0, -1.0], np.ones((1, 1)), np.ones((2, 1)))
    with pytest.raises(ParameterError, match="rho_threshold must be a number"):
        judge_leverage([1.0], [1.0, -1.0], np.ones((1, 1)), np.ones((2, 1)), rho_threshold="x")
    with pytest.raises(ParameterError, match="mu must be finite"):
        judge_leverage([1.0], [np.nan, -1.0], np.ones((1, 1)), np.ones((2, 1)))


def test_biclustering_signs_follow_the_fit_when_item_0_has_no_loading():
    # rank 1, item 0's loading is 0 up to +-1e-6 noise: the old "first non-zero entry
    # positive" rule anchored the direction on item 0 and reversed the block numbering with
    # the noise's sign; the canonical rule anchors it on the largest-|entry| item
    d = canonicalize(zero_loading_scores(), 1)
    assert abs(d.V[0, 0]) < 1e-12
    results = []
    for eps in (1e-6, -1e-6):
        V = np.array(d.V, dtype=float)
        V[0, 0] = eps
        results.append(bicluster_residual(d.U, V, 2, 3, seed=0))
    for name in ("judge_labels", "item_labels", "judge_order", "item_order"):
        np.testing.assert_array_equal(getattr(results[0], name), getattr(results[1], name))
    np.testing.assert_allclose(results[0].block_means, results[1].block_means, atol=1e-5)
    b = results[0]
    # consistent with the fit: blocks and members run along the fit's V column, so the item
    # of largest canonical loading (positive by the rule) is last, the most negative first
    V = np.asarray(d.V)[:, 0]
    assert V[np.argmax(np.abs(V))] > 0
    assert b.item_order[-1] == np.argmax(V) and b.item_order[0] == np.argmin(V)
    assert b.item_labels[np.argmax(V)] == b.item_labels.max()


def test_rank_one_blocks_are_the_k_means_optimum_whatever_the_seed():
    """At rank 1 the residual profiles lie on a line, where k-means restarts could settle in
    a worse split by seed (MT-Bench, rank 1 with position bias: judge cost 0.5599 on seeds 1
    and 2 against 0.5557); the split is now the exact optimum, checked by brute force."""
    import itertools

    from hja_bayes.diagnostics import bicluster_residual

    rng = np.random.default_rng(3)
    for _ in range(40):
        K, k = int(rng.integers(3, 8)), int(rng.integers(2, 4))
        U, V = rng.normal(size=(K, 1)) * rng.choice([0.2, 3.0]), rng.normal(size=(5, 1))
        x = (U @ V.T) @ V[:, 0] / np.linalg.norm(V[:, 0])  # the rows' line coordinate

        def cost(labels):
            return sum(((x[labels == c] - x[labels == c].mean()) ** 2).sum()
                       for c in np.unique(labels))

        best = min(cost(np.array(split)) for split in itertools.product(range(k), repeat=K)
                   if len(set(split)) == k)
        runs = [bicluster_residual(U, V, k, 2, seed=s).judge_labels for s in range(3)]
        assert all(np.array_equal(r, runs[0]) for r in runs)
        assert cost(runs[0]) <= best + 1e-9
    # ten judges on a line in four blocks: restarts at seed 1 had settled at 1.1495
    x = np.array([-2.745, 3.723, 1.461, 1.257, 0.24, 0.268, 2.428, 1.601, 3.476, 2.9])
    xs = np.sort(x)  # on a line the best blocks are runs: try every three cuts of the nine gaps
    best = min(sum(((part - part.mean()) ** 2).sum() for part in np.split(xs, list(cuts)))
               for cuts in itertools.combinations(range(1, 10), 3))
    for seed in range(4):
        labels = bicluster_residual(x[:, None], np.array([[1.0], [-1.0]]) / np.sqrt(2), 4, 1,
                                    seed=seed).judge_labels
        assert sum(((x[labels == c] - x[labels == c].mean()) ** 2).sum()
                   for c in range(4)) == pytest.approx(best, abs=1e-9)
