"""Ordered verdicts: the readers' labels and scales, the collapse to three outcomes, the MAP
against a direct optimiser of the cumulative logit written out here, and the Wald
covariance against a per-comparison computation by finite differences."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

import hja_bayes as hb
from hja_bayes.inference import tangent_basis, wald_inference


def test_arena_hard_labels_numeric_scales_and_counts_per_category():
    df = pd.DataFrame({"judge": ["j"] * 7, "model_a": list("xyxyxzx"), "model_b": list("yxyxzxy"),
                       "winner": ["A>>B", "[[B>A]]", "tie", "A = B", "invalid", "B>>A", "a>b"]})
    data = hb.Comparisons.from_frame(df)
    assert data.categories == ("A>>B", "A>B", "A=B", "B>A", "B>>A")
    assert data.n_comparisons == 6 and data.rejected == {"no usable verdict ('invalid')": 1}
    xy = (np.asarray(data.items)[data.first] == "x") & (np.asarray(data.items)[data.second] == "y")
    np.testing.assert_array_equal(data.counts[xy][0], [1, 1, 1, 0, 0])
    # collapsed: the first item's side, the tie, the second's
    np.testing.assert_array_equal(data.first_wins[xy], [2.0])
    with pytest.raises(hb.DataError, match=r"^row 1: verdict 'model_a' is none of the ordered "
                                           r"labels .* found in 4 other rows"):
        hb.Comparisons.from_frame(df.assign(winner=["A>>B", "model_a", "tie", "A=B", "x", "B>A", "A>B"]))
    # one stray label among three-outcome verdicts is the row named (the first verdict of
    # the other kind had been, a valid one)
    with pytest.raises(hb.DataError, match=r"^row 5: verdict 'A>B' is an ordered label \(1 "
                                           r"such rows\) among 5 verdicts of another kind"):
        hb.Comparisons.from_frame(df.assign(winner=["model_a", "model_b", "tie", "model_a",
                                                    "model_b", "A>B", "model_a"]))
    numbers = hb.Comparisons.from_frame(df.assign(winner=["2", "-1", "0", "0", "", "-2", "1"]),
                                        scale="-2..2")
    assert numbers.categories == ("2", "1", "0", "-1", "-2")
    np.testing.assert_array_equal(numbers.counts, data.counts)
    with pytest.raises(hb.DataError, match="whole number"):
        hb.Comparisons.from_frame(df.assign(winner=["3"] * 7), scale=(-2, 2))
    with pytest.raises(hb.ParameterError, match="scale"):
        hb.Comparisons.from_frame(df, scale="2..-2")
    for halves in ("-2.5..2", "-2..2.9", (-2.7, 2.2)):  # had been read as -2..2
        with pytest.raises(hb.ParameterError, match="whole numbers"):
            hb.Comparisons.from_frame(df, scale=halves)
    counts = hb.Comparisons.from_counts(
        pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "strong": [2], "weak": [1], "same": [0],
                      "weak_b": [3], "strong_b": [1]}), judge=None,
        category_columns=["strong", "weak", "same", "weak_b", "strong_b"])
    assert counts.categories == ("strong", "weak", "same", "weak_b", "strong_b")
    np.testing.assert_array_equal(counts.counts, [[2, 1, 0, 3, 1]])


@pytest.fixture(scope="module")
def panel():
    return hb.simulate(n_judges=3, n_items=4, rank=1, comparisons_per_judge=500, seed=4,
                       position_bias=0.3, outcome="ordinal", gaps=[[0.5, 1.0], [0.8, 0.6], [0.3, 1.4]],
                       questions=15, question_correlation=0.3)


@pytest.fixture(scope="module")
def fit(panel):
    data, _ = panel
    return hb.fit_hja(data, rank=1, position_bias=True, outcome="ordinal", ridge=0.0, tol=1e-13)


def test_three_outcome_models_read_the_collapsed_scale(panel):
    data, _ = panel
    for outcome in ("half", "davidson"):
        a = hb.fit_hja(data, rank=1, position_bias=True, outcome=outcome)
        b = hb.fit_hja(data.collapsed(), rank=1, position_bias=True, outcome=outcome)
        np.testing.assert_allclose(a.S, b.S, atol=1e-9)
        assert a.nll == pytest.approx(b.nll, rel=1e-12)
        assert list(np.argsort(-a.mu)) == list(np.argsort(-b.mu))
        # the summary says the scale was collapsed; the collapsed data have nothing to say
        assert "read as first / tie / second" in a.summary()
        assert "read as first / tie / second" not in b.summary()


def ordinal_probs(eta, gaps):
    """Category probabilities of the symmetric cumulative logit, from the gaps (C = 5)."""
    t1, t2 = gaps[..., 0], gaps[..., 0] + gaps[..., 1]
    cuts = jnp.stack([-t2, -t1, t1, t2], axis=-1)
    cdf = jax.nn.sigmoid(eta[..., None] + cuts)
    upper = jnp.concatenate([cdf, jnp.ones(eta.shape + (1,))], axis=-1)
    lower = jnp.concatenate([jnp.zeros(eta.shape + (1,)), cdf], axis=-1)
    return upper - lower


def test_map_matches_a_direct_optimiser(panel, fit):
    data, truth = panel
    K, N, r1 = data.n_judges, data.n_items, 2
    k, i, j = (jnp.asarray(x) for x in (data.judge, data.first, data.second))
    counts = jnp.asarray(data.counts)
    C = jnp.eye(N) - 1.0 / N

    def nll(x):
        A = x[: K * r1].reshape(K, r1)
        B = x[K * r1: (K + N) * r1].reshape(N, r1)
        beta = x[(K + N) * r1: (K + N) * r1 + K]
        gaps = jnp.exp(x[(K + N) * r1 + K:].reshape(K, 2))
        S = A @ B.T @ C
        p = ordinal_probs(beta[k] + S[k, i] - S[k, j], gaps[k])
        return -jnp.sum(counts * jnp.log(p))

    vg = jax.jit(jax.value_and_grad(nll))
    best = None
    for seed in range(2):
        x0 = np.random.default_rng(seed).normal(scale=0.3, size=(K + N) * r1 + 3 * K)
        res = minimize(lambda x: tuple(np.asarray(v, dtype=float) for v in vg(x)), x0, jac=True,
                       method="L-BFGS-B", options=dict(maxiter=20000, ftol=1e-15, gtol=1e-9))
        best = res if best is None or res.fun < best.fun else best
    assert fit.converged and fit.outcome == "ordinal"
    assert abs(fit.nll - best.fun) / best.fun < 1e-8
    np.testing.assert_allclose(fit.aux, np.exp(best.x[-2 * K:]).reshape(K, 2), rtol=1e-4)
    # and near the truth (500 verdicts per judge: a few standard errors)
    assert np.max(np.abs(np.log(fit.aux) - np.log(truth.gaps))) < 0.5


def test_wald_covariance_matches_a_direct_computation(panel, fit):
    """Fisher and cluster-robust (CR1: the G/(G-1) factor) covariances from single
    comparisons, differentiated here by central differences of the category
    log-probabilities, compared in ambient coordinates."""
    data, _ = panel
    K, N = data.n_judges, data.n_items
    B = tangent_basis(fit.S, fit.rank)
    d0 = B.shape[1]
    d = d0 + K + 2 * K
    k, i, j = data.judge, data.first, data.second

    def log_probs(theta):
        S = fit.S + (B @ theta[:d0]).reshape(K, N)
        beta = fit.beta + theta[d0:d0 + K]
        gaps = fit.aux * np.exp(theta[d0 + K:].reshape(K, 2))
        return np.log(np.asarray(ordinal_probs(jnp.asarray(beta[k] + S[k, i] - S[k, j]),
                                               jnp.asarray(gaps[k]))))

    h = 1e-5
    grads = np.empty((data.n_cells, 5, d))
    for a in range(d):
        e = np.zeros(d)
        e[a] = h
        grads[:, :, a] = (log_probs(e) - log_probs(-e)) / (2 * h)
    probs = np.exp(log_probs(np.zeros(d)))
    bread = np.linalg.inv(np.einsum("c,co,coa,cob->ab", data.n, probs, grads, grads))
    c = data.clusters
    per_cluster = np.zeros((c.n_clusters, d))
    np.add.at(per_cluster, c.cluster, np.einsum("eo,eoa->ea", c.counts, grads[c.cell]))
    G = c.n_clusters
    expected = {"fisher": bread,
                "CR1": bread @ (per_cluster.T @ per_cluster * G / (G - 1)) @ bread}
    ambient = np.zeros((K * N + 3 * K, d))
    ambient[: K * N, :d0] = B
    ambient[K * N:, d0:] = np.eye(3 * K)
    for cov_type, cov in expected.items():
        inference = wald_inference(data, fit.S, fit.beta, fit.rank, position_bias=True,
                                   cov_type=cov_type, outcome="ordinal", aux=fit.aux)
        np.testing.assert_allclose(inference.basis @ inference.covariance @ inference.basis.T,
                                   ambient @ cov @ ambient.T, rtol=1e-5, atol=1e-9)
    table = fit.intervals(cov_type="fisher")
    assert set(table.quantity) >= {"gap_1", "gap_2", "beta"}


def test_ordinal_probabilities_and_saved_fit(fit, tmp_path):
    p = fit.outcome_proba(pd.DataFrame({"judge": ["judge0"], "model_a": ["item0"],
                                        "model_b": ["item1"]}))
    assert list(p.columns) == [f"p_{c}" for c in fit.data.categories]
    eta = fit.logits(0, 0, 1)
    gaps = fit.aux[0]
    np.testing.assert_allclose(p.to_numpy()[0], np.asarray(ordinal_probs(jnp.asarray(eta), jnp.asarray(gaps))),
                               rtol=1e-10)
    assert expit(eta) > 0  # the first-side probability rises with eta (checked in the model tests)
    loaded = hb.load_fit(fit.save(tmp_path))
    assert loaded.outcome == "ordinal" and loaded.data.categories == fit.data.categories


def test_levels_a_judge_never_used_are_said():
    """A judge answering on -1..1 of a declared -2..2 had got an outer cut gap of 14.8
    [0.70, 315] (the ridge's, the maximum-likelihood value being infinite) with no word.
    A level whose mirror was used is no such case (the cut points are symmetric)."""
    rng = np.random.default_rng(0)
    labels = np.array(["A>>B", "A>B", "A=B", "B>A", "B>>A"])

    def panel(narrow_levels):
        rows = []
        for judge, levels in (("full", [0, 1, 2, 3, 4]), ("narrow", narrow_levels)):
            for _ in range(300):
                a, b = rng.choice(4, 2, replace=False)
                rows.append((judge, f"m{a}", f"m{b}", labels[rng.choice(levels)]))
        return hb.Comparisons.from_frame(pd.DataFrame(rows, columns=["judge", "model_a",
                                                                     "model_b", "winner"]))

    with pytest.warns(hb.DataWarning, match=r"'narrow' never used \['A>>B', 'B>>A'\]: the "
                                            r"cut-point gaps") as caught:
        narrow = hb.fit_hja(panel([1, 2, 3]), rank=0, outcome="ordinal")
    assert "'full'" not in str(caught[0].message)
    from hja_bayes.reporting.content import build_report  # and the report notes it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # random verdicts: no consensus
        notes = build_report(narrow).notes
    assert any(n.startswith("Ordered verdicts: 'narrow' never used") for n in notes)
    # and its judge table shows that gap without the ridge's interval; so for a judge that
    # never tied (its tie zone had read 0.000 [0.000, 0.000], the ridge's, as exact)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        table = hb.judge_table(narrow).set_index("judge")
        untied = hb.judge_table(hb.fit_hja(panel([0, 1, 3, 4]), rank=0, outcome="ordinal"))
    assert table.loc["narrow", ["gap_2_lower", "gap_2_upper"]].isna().all()
    rows = narrow.intervals(pairs="none").set_index(["quantity", "label"])  # there too
    assert rows.loc[("gap_2", "narrow"), ["lower", "upper"]].isna().all()
    assert rows.loc[[("gap_1", "narrow"), ("gap_2", "full")], "lower"].notna().all()
    assert table.loc[["full"], ["gap_1_lower", "gap_2_lower"]].notna().all(axis=None)
    assert table.loc["narrow", ["gap_1_lower", "gap_1_upper"]].notna().all()
    untied = untied.set_index("judge")
    assert untied.loc["narrow", ["gap_1_lower", "gap_1_upper"]].isna().all()
    assert untied.loc["narrow", ["gap_2_lower", "gap_2_upper"]].notna().all()
    hb.fit_hja(panel([0, 1, 2, 3]), rank=0, outcome="ordinal")  # 'B>>A' mirrored: quiet


def test_ordered_verdicts_fitted_by_default_as_three_outcomes_say_so():
    """fit_hja's default had collapsed five grades to three silently, where the command
    line fits them as ordered (the two disagreeing by up to 0.07 logits, unexplained)."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=2,
                          outcome="ordinal", gaps=[0.6, 1.2])
    with pytest.warns(hb.DataWarning, match=r"ordered scale of 5 levels, read as three "
                                            r"outcomes .*outcome='ordinal'"):
        hb.fit_hja(data, rank=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", hb.DataWarning)
        hb.fit_hja(data, rank=0, outcome="half")
        hb.fit_hja(data, rank=0, outcome="ordinal")


@pytest.mark.parametrize("C, level, gap", [(2, 0, None), (3, 1, 0), (3, 0, 0), (4, 1, 0),
                                           (4, 0, 0), (5, 2, 0), (5, 1, 1), (5, 0, 1),
                                           (6, 2, 0), (6, 1, 1), (7, 3, 0), (7, 2, 1),
                                           (7, 1, 2), (7, 0, 2)])
def test_the_gap_a_pair_of_unused_levels_leaves_without_an_estimate(C, level, gap):
    """Cut points ±t_1 < ±t_2 < ...: the middle level (odd C) or the middle pair (even C)
    lies within t_1 (gap_1 -> 0 when unused), the pair d bands out between t_d and t_{d+1}
    (gap_{d+1} -> 0), the outermost pair beyond the last cut (that gap -> infinity)."""
    from hja_bayes.hja.inputs import unsupported_gaps

    counts = np.ones((1, C))
    counts[0, [level, C - 1 - level]] = 0 if C > 2 else 1  # two levels: no gap at all
    data = hb.Comparisons(judges=("j",), items=("a", "b"), judge=np.array([0]),
                          first=np.array([0]), second=np.array([1]), counts=counts,
                          categories=tuple(str(c) for c in range(C)))
    expected = np.zeros((1, (C - 1) // 2), dtype=bool)
    if gap is not None:
        expected[0, gap] = True
    np.testing.assert_array_equal(unsupported_gaps(data), expected)
