"""Few clusters: CR2 and its Satterthwaite degrees of freedom against a dense direct
computation and closed forms, the wild bootstrap, warnings, refusals and what is recorded."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.clusters import effective_clusters
from hja_bayes.inference import tangent_basis, wald_inference
from hja_bayes.inference.wild import wild_weights

SIZES = [1, 2, 3, 5, 8, 13, 21, 34]  # eight prompts of very unequal size


@pytest.fixture(scope="module")
def panel():
    data, truth = hb.simulate(n_judges=3, n_items=4, rank=1, comparisons_per_judge=300, seed=11,
                              tie_prob=0.1, position_bias=0.3, questions=8,
                              question_correlation=0.5, question_sizes=SIZES)
    fit = hb.fit_hja(data, rank=1, position_bias=True, ridge=1e-8)
    return data, fit


def dense_cr2(data, fit, h=1e-5):
    """CR2 and the Satterthwaite df written out densely over the (prompt, cell) entries.

    Each entry is a binomial unit: weight ``w = n p (1 - p)``, score ``y - n p`` (ties 1/2),
    its logit's derivative ``x`` in the orthonormal tangent chart by central differences.
    ``Xt = sqrt(w) x``, ``e = score / sqrt(w)``, bread ``M = (Xt^T Xt + ridge)^-1``, hat
    ``H = Xt M Xt^T`` (entries x entries), ``A_g = (I - H_gg)^-1/2``; the CR2 covariance is
    ``M (sum_g Xt_g^T A_g e_g e_g^T A_g Xt_g) M`` and, for a contrast c, with ``p_g = A_g
    Xt_g M c`` and ``Omega = (I - H)(I - H)``, ``Gram_gh = p_g^T Omega_gh p_h`` and
    ``df = tr(Gram)^2 / |Gram|_F^2``.  Nothing here calls the package's inference code.
    """
    K, N = data.n_judges, data.n_items
    B = tangent_basis(fit.S, fit.rank)
    d = B.shape[1] + K
    c = data.clusters
    k, i, j = data.judge[c.cell], data.first[c.cell], data.second[c.cell]
    n, y, g = c.n, c.first_wins + c.ties / 2, c.cluster

    def logit(t):
        S = fit.S + (B @ t[:B.shape[1]]).reshape(K, N)
        return (fit.beta + t[B.shape[1]:])[k] + S[k, i] - S[k, j]

    x = np.empty((len(k), d))
    for a in range(d):
        step = np.zeros(d)
        step[a] = h
        x[:, a] = (logit(step) - logit(-step)) / (2 * h)
    p = 1 / (1 + np.exp(-logit(np.zeros(d))))
    w = n * p * (1 - p)
    Xt = np.sqrt(w)[:, None] * x
    e = (y - n * p) / np.sqrt(w)
    M = np.linalg.inv(Xt.T @ Xt + fit.ridge * np.eye(d))
    H = Xt @ M @ Xt.T
    groups = [np.flatnonzero(g == q) for q in range(c.n_clusters)]
    A = []
    meat = np.zeros((d, d))
    for m in groups:
        lam, V = np.linalg.eigh(np.eye(len(m)) - H[np.ix_(m, m)])
        A.append(V @ np.diag(lam ** -0.5) @ V.T)
        s = Xt[m].T @ A[-1] @ e[m]
        meat += np.outer(s, s)
    R = np.eye(len(k)) - H
    omega = R @ R.T

    def df(contrast):
        P = [(a @ Xt[m] @ M @ contrast, m) for a, m in zip(A, groups)]
        gram = np.array([[p1 @ omega[np.ix_(m1, m2)] @ p2 for p2, m2 in P] for p1, m1 in P])
        return np.trace(gram) ** 2 / np.sum(gram ** 2)

    def gradient(q):
        out = [(q(fit.S + h * B[:, a].reshape(K, N)) - q(fit.S - h * B[:, a].reshape(K, N)))
               / (2 * h) for a in range(B.shape[1])]
        return np.array(out + [0.0] * K)

    return M @ meat @ M, df, gradient


@pytest.fixture(scope="module")
def small_prompts():
    """Many small prompts of a few equal sizes: the CR2 design takes them in batches of one
    size at a time."""
    data, truth = hb.simulate(n_judges=3, n_items=4, rank=1, comparisons_per_judge=60, seed=12,
                              tie_prob=0.1, position_bias=0.3, questions=14,
                              question_correlation=0.5,
                              question_sizes=[1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 5, 5, 8])
    fit = hb.fit_hja(data, rank=1, position_bias=True, ridge=1e-8)
    return data, fit


@pytest.mark.parametrize("which", ["panel", "small_prompts"])
def test_cr2_and_its_degrees_of_freedom_match_a_dense_computation(which, request):
    data, fit = request.getfixturevalue(which)
    inference = wald_inference(data, fit.S, fit.beta, fit.rank, position_bias=True,
                               cov_type="cluster", ridge=fit.ridge)
    assert inference.small_sample == "CR2"
    covariance, df, gradient = dense_cr2(data, fit)
    np.testing.assert_allclose(inference.covariance, covariance, rtol=1e-6, atol=1e-12)
    quantities = {
        "mu_0 - mu_2": lambda S: S.mean(0)[0] - S.mean(0)[2],
        "S_11 - S_13": lambda S: S[1, 1] - S[1, 3],
        "gamma_1": lambda S: hb.canonicalize(S - S.mean(1, keepdims=True), 0).gamma[1],
    }
    for name, q in quantities.items():
        expected = df(gradient(q))
        got = float(inference.degrees_of_freedom(lambda S, beta: q(S)))
        assert got == pytest.approx(expected, rel=1e-6), name
        assert 1 < got < data.clusters.n_clusters


@pytest.mark.parametrize("which", ["panel", "small_prompts"])
def test_the_cr2_design_keeps_each_prompts_whitened_score(which, request):
    """The prompts' scores the removal step reads, ``raw[:, g] = L^-1 (I - C C^T) s_g``, with
    ``s_g`` prompt g's summed score in the chart taken from the sandwich's cluster scores
    (another code path: one sparse row per prompt, no singular vectors)."""
    from scipy.linalg import solve_triangular

    from hja_bayes.inference.clusters import cluster_design
    from hja_bayes.inference.information import Model, _cluster_scores

    data, fit = request.getfixturevalue(which)
    inference = wald_inference(data, fit.S, fit.beta, fit.rank, position_bias=True,
                               cov_type="cluster", ridge=fit.ridge)
    model = Model(data, fit.S, fit.coef, fit.theta, fit.outcome_model, None, fit.terms)
    chart, C = inference.chart, inference.chart.constraints()
    design = cluster_design(model, chart, inference.factor, C)
    scores = _cluster_scores(model, chart).toarray().T  # (dim, prompts)
    expected = solve_triangular(inference.factor, scores - C @ (C.T @ scores), lower=True)
    np.testing.assert_allclose(design.raw, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def one_judge_two_models(sizes, p=0.6, seed=0):
    """One judge, one ordered pair of models, prompts of the given sizes."""
    rng = np.random.default_rng(seed)
    rows = []
    for q, n in enumerate(sizes):
        wins = rng.binomial(n, p)
        rows += [("j", "a", "b", f"q{q}", "model_a")] * wins
        rows += [("j", "a", "b", f"q{q}", "model_b")] * (n - wins)
    frame = pd.DataFrame(rows, columns=["judge", "model_a", "model_b", "prompt", "winner"])
    data = hb.Comparisons.from_frame(frame, cluster="prompt")
    rate = data.wins.sum() / data.n.sum()
    eta = np.log(rate / (1 - rate))  # the maximum likelihood estimate
    return data, np.array([[eta / 2, -eta / 2]])


def cluster_mean_df(data) -> float:
    """Bell and McCaffrey's exact df of a cluster mean, ``1 / [sum rho^2 (1 - 2 rho) /
    (1 - rho)^2 + (sum rho^2 / (1 - rho))^2]`` with ``rho_g`` prompt g's share of the
    comparisons."""
    c = data.clusters
    rho = np.bincount(c.cluster, c.n) / data.n.sum()
    return 1 / (np.sum(rho ** 2 * (1 - 2 * rho) / (1 - rho) ** 2)
                + np.sum(rho ** 2 / (1 - rho)) ** 2)


def test_cr2_has_the_closed_form_of_a_cluster_mean():
    """One logit estimated from prompts of sizes n_g (the intercept-only regression): with
    rho_g = n_g / n and F = n p (1 - p), the CR2 variance is sum_g s_g^2 / (1 - rho_g) / F^2
    and the Satterthwaite df is 1 / [sum rho^2 (1 - 2 rho) / (1 - rho)^2 + (sum rho^2 /
    (1 - rho))^2] (Bell and McCaffrey's cluster mean); equal sizes give G - 1 and CR2 = CR1."""
    sizes = [3, 5, 9, 20, 40, 7]
    data, S = one_judge_two_models(sizes)
    iv = wald_inference(data, S, rank=0, cov_type="cluster", ridge=0.0).contrast(
        lambda S, b: S[0, 0] - S[0, 1])
    c = data.clusters
    n = data.n.sum()
    p = data.wins.sum() / n
    s = np.bincount(c.cluster, c.wins) - np.bincount(c.cluster, c.n) * p
    rho = np.bincount(c.cluster, c.n) / n
    assert iv.se ** 2 == pytest.approx(np.sum(s ** 2 / (1 - rho)) / (n * p * (1 - p)) ** 2,
                                       rel=1e-9)
    expected = cluster_mean_df(data)
    assert float(iv.df) == pytest.approx(expected, rel=1e-9)
    from scipy.stats import t

    assert iv.upper - iv.estimate == pytest.approx(t.ppf(0.975, expected) * iv.se, rel=1e-9)

    data, S = one_judge_two_models([12] * 7, seed=1)
    cr2 = wald_inference(data, S, rank=0, cov_type="CR2", ridge=0.0)
    cr1 = wald_inference(data, S, rank=0, cov_type="CR1", ridge=0.0)
    q = lambda S, b: S[0, 0] - S[0, 1]  # noqa: E731
    assert float(cr2.degrees_of_freedom(q)) == pytest.approx(6.0, rel=1e-9)
    assert float(cr2.contrast(q).se) == pytest.approx(float(cr1.contrast(q).se), rel=1e-9)
    assert cr1.contrast(q).df is None  # CR1 keeps normal quantiles


def test_many_clusters_keep_to_the_leading_term_within_its_bound():
    """Where a contrast's own effective number of clusters is EXACT_BELOW_DF or more, the df
    is its leading term: against the exact closed form of a cluster mean, within 15% and
    0.003 in the t quantile (the bound the docstring states); below it, exact."""
    from scipy.stats import t

    from hja_bayes.inference.clusters import EXACT_BELOW_DF

    q = lambda S, b: S[0, 0] - S[0, 1]  # noqa: E731
    sizes = np.random.default_rng(3).integers(1, 12, size=400)
    for G, exact in ((len(sizes), False), (60, True)):
        data, S = one_judge_two_models(sizes[:G], seed=2)
        got = float(wald_inference(data, S, rank=0, cov_type="CR2", ridge=0.0)
                    .degrees_of_freedom(q))
        expected = cluster_mean_df(data)
        assert (expected >= EXACT_BELOW_DF) != exact
        if exact:
            assert got == pytest.approx(expected, rel=1e-9)
        else:
            assert got != pytest.approx(expected, rel=1e-9)  # the leading term was used
            assert got == pytest.approx(expected, rel=0.15)
            assert abs(t.ppf(0.975, got) - t.ppf(0.975, expected)) < 0.003


def test_intervals_record_the_clusters_and_use_t_quantiles(panel):
    data, fit = panel
    table = fit.intervals()
    assert {"df"} <= set(table.columns)
    assert table.attrs["cov_type"] == "cluster" and table.attrs["small_sample"] == "CR2"
    assert table.attrs["cluster_column"] == "question" and table.attrs["n_clusters"] == 8
    assert table.attrs["effective_clusters"] == pytest.approx(
        effective_clusters(data.clusters.comparisons_per_cluster()), abs=1e-3)
    from scipy.stats import t

    half = (table["upper"] - table["estimate"]) / table["se"]
    np.testing.assert_allclose(half, t.ppf(0.975, table["df"]), rtol=1e-9)
    cr1 = fit.intervals(cov_type="CR1")
    assert "df" not in cr1.columns and cr1.attrs["small_sample"] == "CR1"
    assert fit.wald_inference("CR2") is fit.wald_inference("cluster") is fit.wald
    meta = hb.leaderboard(fit).attrs["meta"]
    assert meta["cov_type"] == "cluster" and meta["small_sample"] == "CR2"
    assert meta["cluster_column"] == "question" and meta["n_clusters"] == 8
    assert meta["df"] == "Satterthwaite" and np.isfinite(meta["joint_df"])
    assert hb.pairwise_table(fit).attrs["meta"]["n_clusters"] == 8


def test_effective_clusters_and_the_warning():
    assert effective_clusters([5, 5, 5, 5]) == pytest.approx(4.0)
    assert effective_clusters(50 ** np.linspace(0, 1, 15)) == pytest.approx(6.99, abs=0.01)
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=2,
                          questions=10, question_correlation=0.3)
    fit = hb.fit_hja(data, rank=0)
    with pytest.warns(hb.DataWarning, match=r"G = 10 clusters of column 'question', [0-9.]+ "
                                            r"effective.*CR2"):
        fit.intervals()
    many, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300, seed=2,
                          questions=60, question_correlation=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", hb.DataWarning)
        hb.fit_hja(many, rank=0).intervals()  # 60 equal prompts: no warning


def test_a_joint_statement_needs_more_clusters_than_free_scores():
    """5 models need G - 1 >= 4 for the joint rank intervals; with 4 clusters they are
    refused with a message naming the column, while the statements about one quantity at a
    time (score intervals, with few df) still come and the leaderboard leaves the joint
    columns empty."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=400, seed=4,
                          questions=4, question_correlation=0.2)
    fit = hb.fit_hja(data, rank=0)
    refusal = (r"the scores of 5 models make 4 free statements.*G = 4 clusters of column "
               r"'question'.*G - 1 = 3")
    with pytest.raises(hb.IdentifiabilityError, match=refusal):
        fit.wald.mu_covariance()
    with pytest.warns(hb.DataWarning, match=refusal + r".*tiers are left empty"):
        board = hb.leaderboard(fit)
    assert board[["rank_lower", "rank_upper", "tier"]].isna().all().all()
    table = fit.intervals()
    mu = table[table["quantity"] == "mu"].set_index("label")
    assert table["df"].max() < 4 and np.all(table["upper"] > table["lower"])
    np.testing.assert_allclose(board.set_index("model").loc[mu.index, "score_lower"],
                               mu["lower"], rtol=1e-12)
    assert board.attrs["meta"]["critical_value"] is None
    from hja_bayes.reporting.sentences import captions

    # the forest plot's caption had spoken of dotted lines between tiers that are not drawn
    assert "no tiers" in captions(fit, 0.95, meta=board.attrs["meta"])["forest"]
    assert "dotted lines" in captions(fit, 0.95)["forest"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", hb.DataWarning)
        hb.leaderboard(fit, style="arena")  # no joint column shown: nothing to say
        fisher = hb.leaderboard(fit, inference=fit.wald_inference("fisher"))
    assert fisher["tier"].notna().all()


def test_a_quantity_the_clusters_say_nothing_about_is_refused():
    """With two clusters the CR2 covariance has rank two at most: a combination of the
    scores and sensitivities (three free dimensions) that it misses has variance 0, which is
    refused rather than shown as an interval of width 0."""
    data, _ = hb.simulate(n_judges=2, n_items=3, rank=0, comparisons_per_judge=300, seed=9,
                          questions=2, question_correlation=0.2)
    fit = hb.fit_hja(data, rank=0)
    w = fit.wald
    scores = w.cluster_design.adjusted
    X = w._core_whitened
    z = np.column_stack([X[:, 0] - X[:, 2], X[:, 1] - X[:, 2], X[:, 3] - X[:, 4]])
    coef = np.linalg.svd(scores.T @ z)[2][-1]  # orthogonal to both clusters' scores
    with pytest.raises(hb.IdentifiabilityError, match="do not vary"):
        w._df_whitened(z @ coef[:, None])
    # nor does the wild bootstrap give it an interval (its critical value had been 3e-13,
    # with a standard error of 1e-16: width 0, unsaid)
    boot = fit.bootstrap(wild=True, weights="webb")
    with pytest.raises(hb.IdentifiabilityError, match="do not move 1 of the quantities"):
        boot.critical_values(z @ coef[:, None], 0.9)


def test_degrees_of_freedom_of_many_contrasts_are_taken_a_block_at_a_time(panel, monkeypatch):
    """All contrasts at once had held (singular columns x contrasts) numbers: 24 GB for the
    19,900 differences of 200 models on 200 prompts.  In blocks of a few contrasts the
    degrees of freedom are the same, the exact ones (below EXACT_BELOW_DF) included."""
    from hja_bayes.inference import clusters

    data, fit = panel
    d = fit.wald.cluster_design
    Z = np.random.default_rng(0).normal(size=(d.U.shape[0], 7))
    whole = clusters.satterthwaite(d, Z)
    assert np.all(whole < clusters.EXACT_BELOW_DF)  # the exact path runs for each
    monkeypatch.setattr(clusters, "_CHUNK", 3 * len(d.sigma))  # blocks of three contrasts
    np.testing.assert_allclose(clusters.satterthwaite(d, Z), whole, rtol=1e-12)
    np.testing.assert_allclose(clusters.satterthwaite(d, Z, exact=False),
                               clusters.satterthwaite(d, Z[:, ::-1], exact=False)[::-1],
                               rtol=1e-12)


def test_wild_bootstrap_weights_and_intervals(panel):
    w = wild_weights(4, 100, "rademacher")
    assert w.shape == (16, 4) and len({tuple(r) for r in w}) == 16  # every sign pattern
    webb = wild_weights(3, 4000, "webb", seed=1)
    assert set(np.round(np.unique(np.abs(webb)), 6)) == set(np.round(np.sqrt([0.5, 1, 1.5]), 6))
    assert abs(webb.mean()) < 0.05 and abs((webb ** 2).mean() - 1) < 0.05
    data, fit = panel
    boot = fit.bootstrap(wild=True, weights="rademacher")
    assert boot.weights.shape == (256, 8)  # 2^8 <= 999: the exact distribution
    # Rademacher replicates of the linearised scores have exactly the CR2 spread
    np.testing.assert_allclose(boot.mu.std(axis=0), fit.wald.mu().se, rtol=1e-9)
    table = boot.table()
    assert set(table["quantity"]) >= {"mu", "gamma", "beta", "mu_diff"}
    assert np.all(table["critical"] > 1) and np.all(table["lower"] < table["estimate"])
    assert table.attrs["weights"] == "rademacher" and table.attrs["n_clusters"] == 8
    with pytest.raises(hb.ParameterError, match="weights"):
        fit.bootstrap(wild=True, weights="mammen")
    plain, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=1)
    with pytest.raises(hb.ParameterError, match="clusters"):
        hb.fit_hja(plain, rank=0).bootstrap(wild=True)


def test_too_few_sign_patterns_for_the_quantile_are_refused():
    """With 4 prompts Rademacher weights give 8 distinct |T*|: the "95% quantile" had been
    their largest value, with no word."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=100, seed=2,
                          questions=4, question_correlation=0.3)
    fit = hb.fit_hja(data, rank=0)
    with pytest.warns(hb.DataWarning, match="G = 4 clusters.*covered 93-95% in simulations"):
        boot = fit.bootstrap(wild=True)
    with pytest.raises(hb.ParameterError, match=r"rademacher weights over 4 prompts that carry "
                                                r"weight give at most 8 distinct \|T\*\|.*"
                                                r"weights='webb'"):
        boot.table()
    with pytest.raises(hb.ParameterError, match="10 replicates of webb weights"):
        fit.bootstrap(wild=True, weights="webb", n=10).table()  # too few draws, any prompts
    assert boot.table(level=0.8)["critical"].notna().all()  # 8 values suffice for 80%
    assert fit.bootstrap(wild=True, weights="webb").table()["critical"].notna().all()


def test_the_cluster_column_is_kept_and_saved(tmp_path, panel):
    frame = pd.DataFrame({"judge": ["j1", "j2"] * 6, "model_a": ["x", "y", "z"] * 4,
                          "model_b": ["y", "z", "x"] * 4, "winner": ["model_a", "model_b"] * 6,
                          "item_id": np.repeat(["p1", "p2", "p3"], 4)})
    data = hb.Comparisons.from_frame(frame, cluster="item_id")
    assert data.cluster_column == "item_id"
    assert data.fold_order().cluster_column == "item_id"
    assert data.select_judges(["j1"]).cluster_column == "item_id"
    assert hb.Comparisons.from_frame(frame).cluster_column is None
    assert "from column 'item_id': 3, effective 3.0" in str(data.summary())
    _, fit = panel
    fit.save(tmp_path / "fit")
    meta = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert meta["data"]["cluster_column"] == "question"
    assert meta["clustering"]["n_clusters"] == 8 and meta["clustering"]["small_sample"] == "CR2"
    loaded = hb.load_fit(tmp_path / "fit")
    assert loaded.data.cluster_column == "question" and loaded.clustering == fit.clustering


def test_prompt_like_columns_are_found():
    from hja_bayes.readers import prompt_like_columns

    frame = pd.DataFrame({"judge": np.tile(["a", "b", "c"], 8),
                          "model_a": "m1", "model_b": "m2", "winner": "model_a",
                          "item_id": np.repeat(np.arange(8), 3),
                          "confidence": np.tile([0.5, 0.75, 0.95], 8),
                          "row": np.arange(24), "anony": np.tile([True, False], 12),
                          "language": np.tile(["en", "de"], 12),
                          "winner_model_a": np.tile([0, 1, 0, 1, 0, 0], 4)})
    # neither a flag, a two-valued column nor a one-hot verdict column (each had been
    # proposed as the prompt column of FastChat's battles or Kaggle's one-hot files)
    found = prompt_like_columns(frame, exclude=("model_a", "model_b", "winner"))
    assert [c for c, _, _ in found] == ["item_id"]
    assert found[0][1:] == (8, 3.0)
    # a column named by an int comes back as named, so that it indexes the frame
    numbered = frame.rename(columns={"item_id": 7})
    found = prompt_like_columns(numbered, exclude=("model_a", "model_b", "winner"))
    assert [c for c, _, _ in found] == [7] and numbered[found[0][0]].nunique() == 8


def test_cr2_too_large_to_keep_falls_back_to_cr1(panel, monkeypatch):
    import hja_bayes.inference.wald as wald_module

    data, fit = panel
    monkeypatch.setattr(wald_module, "CR2_MAX_NUMBERS", 10)
    with pytest.warns(hb.DataWarning, match="use CR1"):
        inference = wald_inference(data, fit.S, fit.beta, fit.rank, position_bias=True,
                                   cov_type="cluster", ridge=fit.ridge)
    assert inference.small_sample == "CR1" and inference.clustering["small_sample"] == "CR1"


def test_the_report_names_the_clusters_and_notes_few_of_them(panel):
    from hja_bayes.reporting.content import build_report
    from hja_bayes.reporting.html import interval_words

    _, fit = panel
    rep = build_report(fit)
    assert rep.notes[0].startswith("The intervals rest on few prompts: 8 clusters (column "
                                   "'question'), ")
    words = interval_words(rep)
    assert "column 'question', 8 clusters" in words and "CR2" in words
    assert "Satterthwaite" in words


def test_the_wild_bootstrap_weighs_the_prompts_the_fit_keeps_and_says_what_it_is():
    """Prompts seen only by a judge left out had weights drawn too (2^9 sign patterns where
    2^6 differ); the table's attrs had said its df were Satterthwaite's (it has none) and
    left out the seed; wild_weights took 0 replicates, one cluster or a seed of -1."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300, seed=21,
                          questions=9, question_correlation=0.3)
    c = data.clusters
    only_third = (data.judge[c.cell] == 2) | (c.cluster < 6)  # prompts 6-8: judge 2 alone
    data = data.without(np.where(~only_third[:, None], c.counts, 0.0))
    fit = hb.fit_hja(data, rank=0, leave_out=["judge2"])
    boot = fit.bootstrap(wild=True)
    assert boot.weights.shape == (64, 9) and not boot.weights[:, 6:].any()
    assert len({tuple(r) for r in boot.weights[:, :6]}) == 64  # every sign pattern once
    assert "on 6 clusters" in repr(boot)
    np.testing.assert_allclose(boot.mu.std(axis=0), fit.wald.mu().se, rtol=1e-9)
    attrs = boot.table().attrs
    assert "df" not in attrs and "small_sample" not in attrs and attrs["n_clusters"] == 6
    assert attrs["seed"] == 0 and attrs["se"] == "cluster-robust (CR2)"
    for args, said in (((5, 0), "n must be"), ((1, 10), "G must be"), ((4, 10, "webb", -1),
                                                                         "seed")):
        with pytest.raises(hb.ParameterError, match=said):
            wild_weights(*args)


def test_the_wild_bootstrap_of_prompts_kept_in_an_engine_says_how_to_get_it(tmp_path):
    pytest.importorskip("duckdb")
    rng = np.random.default_rng(2)
    pair = np.array([rng.choice(3, 2, replace=False) for _ in range(400)])
    models = np.array(["x", "y", "z"])
    pd.DataFrame({"judge": rng.choice(["j1", "j2"], 400), "model_a": models[pair[:, 0]],
                  "model_b": models[pair[:, 1]], "prompt": rng.integers(0, 10, 400),
                  "winner": np.where(rng.random(400) < 0.5 + 0.2 * (pair[:, 0] - pair[:, 1]),
                                     "model_a", "model_b")}).to_csv(tmp_path / "v.csv",
                                                                    index=False)
    data = hb.Comparisons.scan(tmp_path / "v.csv", cluster="prompt", incidence="engine")
    fit = hb.fit_hja(data, rank=0)
    with pytest.raises(hb.ParameterError, match="query engine give the CR1 meat only: scan "
                                                "with incidence='memory'"):
        fit.bootstrap(wild=True)


def test_the_wild_bootstrap_without_clusters_says_what_it_needs():
    """It had passed on the covariance's message, which named cov_type='sandwich', not an
    argument of bootstrap."""
    data, _ = hb.simulate(n_judges=2, n_items=3, rank=0, comparisons_per_judge=100, seed=0)
    fit = hb.fit_hja(data, rank=0)
    with pytest.raises(hb.ParameterError, match=r"needs clusters .*bootstrap\(cluster=False\)"):
        fit.bootstrap(wild=True)


def _sixty_prompts():
    """4 judges and 6 models on 60 prompts, verdicts coupled within prompts."""
    data, _ = hb.simulate(n_judges=4, n_items=6, rank=0, comparisons_per_judge=600, seed=4,
                          questions=60, question_correlation=0.6)
    return data


def _kept_on_few_prompts(data, who: str, prompts: int):
    """``data`` with the last model's (``who="item"``) or judge 2's (``"judge"``) verdicts
    kept on the first ``prompts`` prompts only."""
    c = data.clusters
    rare = ((data.first == 5) | (data.second == 5)) if who == "item" else data.judge == 2
    return data.without(np.where((rare[c.cell] & (c.cluster >= prompts))[:, None], c.counts,
                                 0.0))


def test_a_model_on_two_prompts_widens_its_own_pairs_only_and_is_named():
    """Six models on 60 prompts, one of them kept on 2: its differences get about 1 df.  A
    pair's joint critical value is the t quantile, with the pair's own df, of the normal
    max-|t| value's tail probability (recomputed here with scipy.stats), so the other
    models keep narrow rank intervals; under the smallest df for every pair (the rule
    before) every rank interval spanned the board.  The warning names the model.  The
    coverage of the rule: benchmarks/bench_rare_model.py."""
    from scipy import stats

    from hja_bayes.inference.ranking import simultaneous_critical_value

    data = _kept_on_few_prompts(_sixty_prompts(), "item", 2)
    fit = hb.fit_hja(data, rank=0)
    with pytest.warns(hb.DataWarning, match=r"'item5' \(2 prompts\) appear on far fewer "
                                            r"prompts than the others \(median 60\)"):
        board = hb.leaderboard(fit).set_index("model").loc[list(data.items)]
    estimate, cov = fit.wald.mu_covariance()
    df = fit.wald.mu_degrees_of_freedom()[1]
    assert df[5, :5].max() < 3 and df[:5, :5][np.triu_indices(5, 1)].min() > 30
    crit = stats.t.ppf(stats.norm.cdf(simultaneous_critical_value(cov, 0.95)), df)
    se = np.sqrt(np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2 * cov)
    better = (estimate[:, None] - estimate[None, :] - crit * se > 0) & ~np.eye(6, dtype=bool)
    np.testing.assert_array_equal(board["rank_lower"], 1 + better.sum(axis=0))
    np.testing.assert_array_equal(board["rank_upper"], 6 - better.sum(axis=1))
    others = board.drop(index="item5")
    assert (others["rank_upper"] - others["rank_lower"]).max() <= 2
    assert (board.loc["item5", "rank_lower"], board.loc["item5", "rank_upper"]) == (1, 6)
    # the report says it among its notes
    from hja_bayes.reporting import build_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        notes = build_report(fit).notes
    assert any(n.startswith("Model(s) 'item5' (2 prompts) appear on far fewer") for n in notes)


def test_a_model_or_judge_on_one_prompt_has_no_cluster_robust_interval():
    """That prompt alone fixes the model's score (or the judge's sensitivity): its cluster
    score along that direction is zero at the fit, up to the ridge, and CR2 had given the
    model's differences variances 30-55 times below the Fisher ones.  Refused, naming it;
    the Fisher intervals stand, and on two prompts the intervals are given (the test above)."""
    data = _sixty_prompts()
    fit = hb.fit_hja(_kept_on_few_prompts(data, "item", 1), rank=0)
    with pytest.raises(hb.IdentifiabilityError, match=r"model\(s\) 'item5' appear\(s\) on a "
                                                      r"single prompt \(cluster"):
        fit.intervals()
    fisher = fit.wald_inference("fisher").mu_differences()[1]
    assert np.all(np.isfinite(fisher.se)) and np.all(fisher.se > 0)
    # a judge whose verdicts all come from one prompt
    lone = _kept_on_few_prompts(data, "judge", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # the judge's few verdicts
        fit = hb.fit_hja(lone, rank=0)
    with pytest.raises(hb.IdentifiabilityError, match=r"judge\(s\) 'judge2' appear\(s\)"):
        fit.intervals()
    # the judges the fit keeps are checked: left out, the rest have intervals
    kept = hb.fit_hja(lone, rank=0, leave_out=["judge2"])
    assert np.all(np.isfinite(kept.intervals()["se"]))
    # a plan from the pilot: its intra-prompt correlation cannot be estimated, a given one
    # serves (the design needs nothing else of the cluster-robust covariance)
    with pytest.raises(hb.IdentifiabilityError, match="single prompt"):
        hb.plan(fit, power=0.8)
    given = hb.plan(fit, power=0.8, icc=0.1)
    assert any("intra-prompt correlation 0.1" in n for n in given.notes)


def test_the_leverage_range_counts_only_prompts_that_hold_comparisons():
    """After a selection of judges a prompt only the left-out judge judged is empty: the
    range is that of the same verdicts read without it (its 0 had been the minimum)."""
    rng = np.random.default_rng(3)
    models = [f"m{i}" for i in range(5)]
    rows = []
    for judge in ("j0", "j1", "j2", "j3"):
        for _ in range(80):
            a, b = rng.choice(models, 2, replace=False)
            rows.append({"judge": judge, "model_a": a, "model_b": b,
                         "winner": a if rng.random() < 0.55 else b,
                         "question_id": "only_j3" if judge == "j3" else f"q{rng.integers(12)}"})
    frame = pd.DataFrame(rows)
    kept = ["j0", "j1", "j2"]
    selected = hb.Comparisons.from_frame(frame, cluster="question_id").select_judges(kept)
    read = hb.Comparisons.from_frame(frame[frame.judge.isin(kept)], cluster="question_id")
    ranges = [hb.fit_hja(d, rank=0).wald.cluster_design.leverage_range() for d in (selected, read)]
    assert ranges[1][0] > 0.05
    np.testing.assert_allclose(ranges[0], ranges[1], rtol=1e-9)
