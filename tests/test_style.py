"""Answer style: feature counts, their join to judgments, a style fit, and arena-rank parity."""

import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes import Comparisons, DataError, ParameterError
from hja_bayes.features import join_features, markdown_counts, relative_difference
from hja_bayes.likelihood.terms import Style


# ----------------------------------------------------------------------- counting
@pytest.mark.parametrize("text, counts", [
    # headers: one to six '#' at the start of a line, then a space or tab
    ("# a\n## b\n###### c\n####### seven\n#no space\nx # inside\n#\ttab", (4, 0, 0)),
    # list items: -, *, + or '12.' (after any indentation), then a space
    ("- a\n* b\n+ c\n1. d\n12. e\n    - nested\n-no\n1.no\n2) no\n**bold** line", (0, 6, 1)),
    # bold spans within one line
    ("**a** and __b__, **c**\n** spaced\n**across\nlines** *it* _it_ ****", (0, 0, 3)),
    # nothing counts inside fenced code, and an unclosed fence runs to the end
    ("```python\n# comment\n- x\n**y**\n```\n# Real\n~~~\n# no\n~~~\n- yes\n```\n# no", (1, 1, 0)),
    ("", (0, 0, 0)),
    # a fence closes on the same character, at least as long: a shorter fence or the other
    # character inside is code (either had been taken as the closing fence)
    ("````\n```\n# inside\n````\n# out\n- out", (1, 1, 0)),
    ("```\n~~~\n# inside\n```\n- out", (0, 1, 0)),
    # lines end at line feeds (\r\n too), not at Unicode's other line breaks
    ("text\u2028# h\u2028- x\x0c- y", (0, 0, 0)),
    ("# a\r\n- b\r\n", (1, 1, 0)),
])
def test_markdown_counts_on_hand_made_texts(text, counts):
    assert markdown_counts(text) == counts


def test_a_tokenizer_may_give_a_count_or_the_tokens():
    answers = pd.DataFrame({"question_id": ["q"], "model": ["m"], "answer": ["a b c"]})
    for length in (lambda t: t.split(), lambda t: 3, lambda t: np.int64(3), lambda t: 3.0):
        assert hb.style_features(answers, length=length)["length"].tolist() == [3]
    with pytest.raises(hb.ParameterError, match="length gave 2.5: a count is a whole number"):
        hb.style_features(answers, length=lambda t: 2.5)  # had been a TypeError of len()


def test_style_features_counts_every_answer():
    answers = pd.DataFrame({
        "qid": ["q1", "q1", "q2"],
        "who": ["m1", "m2", "m1"],
        "text": ["One two three.", "## Plan\n\n1. **first** step\n2. second step\n", "ab  cd\nef"],
    })
    table = hb.style_features(answers, prompt="qid", model="who", text="text")
    assert list(table.columns) == ["qid", "model", "length", "headers", "lists", "bold"]
    assert table["model"].tolist() == ["m1", "m2", "m1"]
    assert table[["length", "headers", "lists", "bold"]].to_numpy().tolist() == [
        [3, 0, 0, 0], [8, 1, 2, 1], [3, 0, 0, 0]]
    chars = hb.style_features(answers, prompt="qid", model="who", text="text", length="characters")
    assert chars["length"].tolist() == [14, 42, 9]
    # a tokenizer may return its tokens (their number is taken) or a count
    tokens = hb.style_features(answers, prompt="qid", model="who", text="text", length=list)
    assert tokens["length"].tolist() == [14, 42, 9]
    counted = hb.style_features(answers, prompt="qid", model="who", text="text",
                                length=lambda t: t.count("e"))
    assert counted["length"].tolist() == [3, 3, 1]


def test_style_features_refuses_what_it_cannot_count():
    answers = pd.DataFrame({"question_id": [1, 1], "model": ["a", "a"], "answer": ["x", "y"]})
    with pytest.raises(DataError, match="second answer of model 'a' to prompt '1'"):
        hb.style_features(answers)
    with pytest.raises(DataError, match=r"row 1.*missing 'answer'"):
        hb.style_features(answers.assign(model=["a", "b"], answer=["x", None]))
    # a blank cell as the command line's reader gives it ("") had been an answer of 0 words
    with pytest.raises(DataError, match=r"row 1.*missing 'answer'.*given as one space"):
        hb.style_features(answers.assign(model=["a", "b"], answer=["x", ""]))
    assert hb.style_features(answers.assign(model=["a", "b"], answer=["x", " "]))[
        "length"].tolist() == [1, 0]
    with pytest.raises(DataError, match=r"\['text'\] not found"):
        hb.style_features(answers, text="text")
    with pytest.raises(ParameterError, match="length must be"):
        hb.style_features(answers.assign(model=["a", "b"]), length="tokens")


# -------------------------------------------------------------------- the join
def votes():
    """Six judgments on two prompts; both orders of (x, y) on prompt 1."""
    return pd.DataFrame({
        "judge": ["j1", "j1", "j2", "j2", "j1", "j2"],
        "question_id": [1, 1, 1, 2, 2, 2],
        "model_a": ["x", "y", "x", "x", "z", "y"],
        "model_b": ["y", "x", "z", "z", "y", "z"],
        "winner": ["model_a", "model_b", "tie", "model_b", "model_a", "model_a"],
    })


def table():
    return pd.DataFrame({"question_id": [1, 1, 1, 2, 2, 2], "model": list("xyzxyz"),
                         "length": [300, 100, 100, 50, 150, 0], "bold": [0, 0, 2, 0, 0, 0]})


def test_the_join_takes_differences_over_sums_scaled_not_centred():
    data = Comparisons.from_frame(votes(), cluster="question_id", features=table())
    assert data.feature_names == ("length", "bold")
    raw = np.array([[0.5, 0], [-0.5, 0], [0.5, -1], [1, 0], [-1, 0], [1, 0]])
    sd = raw.std(axis=0, ddof=1)
    by_row = join_features(votes(), table(), cluster="question_id")
    np.testing.assert_allclose(by_row.features, raw / sd)
    assert abs(by_row.features.mean(axis=0)[0]) > 0.1  # not centred
    assert "not centred" in data.feature_transform
    assert f"length={sd[0]:.6g}" in data.feature_transform and f"bold={sd[1]:.6g}" in data.feature_transform
    # every judgment is its own entry here; the stored features are the rows'
    c = data.clusters
    stored = {(data.judges[data.judge[e]], c.names[q], data.items[data.first[e]],
               data.items[data.second[e]]): tuple(f)
              for q, e, f in zip(c.cluster, c.cell, c.features)}
    for r, row in votes().iterrows():
        key = (row.judge, str(row.question_id), row.model_a, row.model_b)
        np.testing.assert_allclose(stored[key], raw[r] / sd)
    assert relative_difference([0], [0]).tolist() == [0.0]


def test_new_rows_take_the_scale_of_the_rows_fitted():
    fitted = join_features(votes(), table(), cluster="question_id")
    new = join_features(votes().iloc[[3, 0]], table(), cluster="question_id", scale=fitted.scale)
    np.testing.assert_allclose(new.features, fitted.features[[3, 0]])
    assert "divided by a given scale" in new.feature_transform
    with pytest.raises(ParameterError, match="2 positive numbers"):
        join_features(votes(), table(), cluster="question_id", scale=[1.0])


def test_per_row_features_give_what_the_table_gives():
    df = votes()
    lengths = table().set_index(["question_id", "model"])["length"]
    df["len_a"] = [lengths[q, m] for q, m in zip(df.question_id, df.model_a)]
    df["len_b"] = [lengths[q, m] for q, m in zip(df.question_id, df.model_b)]
    per_row = Comparisons.from_frame(df, cluster="question_id",
                                     features={"length": ("len_a", "len_b")})
    joined = Comparisons.from_frame(df, cluster="question_id", features=table()[
        ["question_id", "model", "length"]])
    np.testing.assert_allclose(per_row.clusters.features, joined.clusters.features)
    assert per_row.feature_transform == joined.feature_transform
    with pytest.raises(DataError, match=r"\['len_c'\] not found"):
        Comparisons.from_frame(df, cluster="question_id", features={"length": ("len_a", "len_c")})
    with pytest.raises(ParameterError, match="two columns"):
        Comparisons.from_frame(df, cluster="question_id", features={"length": "len_a"})


def test_swapping_every_pair_negates_the_features_and_folds_to_the_same_data():
    df = votes()
    swapped = df.assign(model_a=df.model_b, model_b=df.model_a,
                        winner=df.winner.map({"model_a": "model_b", "model_b": "model_a",
                                              "tie": "tie"}))
    one = join_features(df, table(), cluster="question_id")
    other = join_features(swapped, table(), cluster="question_id")
    np.testing.assert_allclose(other.features, -one.features)

    def folded(frame):
        """The folded entries by names, each pair in alphabetical order."""
        data = Comparisons.from_frame(frame, cluster="question_id", features=table()).fold_order()
        c, out = data.clusters, {}
        for q, e, counts, f in zip(c.cluster, c.cell, c.counts, c.features):
            first, second = data.items[data.first[e]], data.items[data.second[e]]
            if first > second:  # the other orientation: mirrored verdicts, negated features
                first, second, counts, f = second, first, counts[::-1], -f
            out[data.judges[data.judge[e]], c.names[q], first, second] = (*counts, *f)
        return out

    a, b = folded(df), folded(swapped)
    assert a.keys() == b.keys() and len(a) == 5  # x-y on prompt 1 by j1 folds into one entry
    for key in a:
        np.testing.assert_allclose(a[key], b[key])


def test_a_compared_answer_without_features_is_an_error_naming_the_row():
    short = table().iloc[:-1]  # no features for z on prompt 2
    with pytest.raises(DataError, match=r"row 3: no features for the answer of model 'z' to "
                                        r"prompt '2' \(column 'model_b'\); 3 such rows"):
        Comparisons.from_frame(votes(), cluster="question_id", features=short)
    as_floats = table().astype({"question_id": float})  # 1.0 in the table, 1 in the verdicts
    with pytest.raises(DataError, match=r"6 such rows.*no prompt of the verdicts is in the "
                                        r"table, which writes them like \['1.0', '2.0'\] where "
                                        r"the verdicts have \['1', '2'\]"):
        Comparisons.from_frame(votes(), cluster="question_id", features=as_floats)
    with pytest.warns(hb.DataWarning, match=r"\['Unnamed: 0'\] look like a saved row index"):
        indexed = table().reset_index().rename(columns={"index": "Unnamed: 0"})
        Comparisons.from_frame(votes(), cluster="question_id", features=indexed)
    gap = table().assign(length=[300, 100, np.nan, 50, 150, 0])
    with pytest.raises(DataError, match="row 2: feature 'length' of the answer of 'z' to "
                                        "prompt '1' is missing"):
        Comparisons.from_frame(votes(), cluster="question_id", features=gap)
    # a row without a usable verdict is no comparison, and needs no features
    df = votes()
    df.loc[3, "winner"] = "invalid"
    df.loc[3, "model_b"] = "w"
    with pytest.warns(hb.DataWarning, match=r"model\(s\) whose rows here are all unusable"):
        data = Comparisons.from_frame(df, cluster="question_id", features=table())
    assert data.n_comparisons == 5 and "over the 5 comparisons" in data.feature_transform


def test_feature_errors_say_what_to_do():
    with pytest.raises(DataError, match="pass cluster="):
        Comparisons.from_frame(votes(), features=table())
    with pytest.raises(DataError, match="prompt column 'prompt'"):
        Comparisons.from_frame(votes().rename(columns={"question_id": "prompt"}),
                               cluster="prompt", features=table())
    with pytest.raises(DataError, match="'tag' of the feature table is not numeric"):
        Comparisons.from_frame(votes(), cluster="question_id", features=table().assign(tag="t"))
    # an empty cell (a CSV read as text) is a missing value, named where a comparison needs
    # it, not "not numeric (e.g. '')"
    empty = table().astype({"bold": object})
    empty.loc[5, "bold"] = ""  # z's answer to prompt 2: shown first once, second twice
    with pytest.raises(DataError, match=r"verdicts row 3: feature 'bold' of the answer of 'z' "
                       r"to prompt '2' is missing or not finite \(3 such rows\)"):
        # one had been said (those showing it first); "row 3" alone read as the table's row
        Comparisons.from_frame(votes(), cluster="question_id", features=empty)
    with pytest.raises(DataError, match="two rows for model 'x' on prompt '1'"):
        Comparisons.from_frame(votes(), cluster="question_id",
                               features=pd.concat([table(), table().iloc[:1]]))
    signed = table().assign(length=[3, -1, 0, 1, 2, 0])
    with pytest.raises(DataError, match="row 0: feature 'length' is negative.*'difference'"):
        Comparisons.from_frame(votes(), cluster="question_id", features=signed)
    data = Comparisons.from_frame(votes(), cluster="question_id", features=signed,
                                  feature_transform="difference")
    assert data.feature_transform.startswith("difference: a - b")
    with pytest.raises(ParameterError, match="feature_transform must be"):
        Comparisons.from_frame(votes(), cluster="question_id", features=table(),
                               feature_transform="centred")


def test_file_readers_pass_the_features_on(tmp_path):
    path = tmp_path / "votes.csv"
    votes().to_csv(path, index=False)
    data = Comparisons.from_csv(path, cluster="question_id", features=table())
    frame = Comparisons.from_frame(votes(), cluster="question_id", features=table())
    np.testing.assert_allclose(data.clusters.features, frame.clusters.features)
    assert Comparisons.from_file(path, cluster="question_id", features=table()).feature_names \
        == ("length", "bold")


def test_bundled_answers_give_features_for_every_llm_judgment():
    prd = hb.datasets.load_prd_vicuna80()
    assert len(prd.answers) == 400 and len(prd.questions) == 80
    features = hb.style_features(prd.answers)
    means = features.groupby("model")["length"].mean()
    assert means["gpt4"] > 290 and means["gpt35"] < 200  # the data README's figures
    with pytest.warns(hb.DataWarning, match=r"\['headers'\] do not vary.*left out"):
        data = Comparisons.from_frame(prd.judgments, cluster="question_id", features=features)
    assert data.clusters.features.shape == (8000, 3)  # PRD's answers have no headers
    assert data.feature_names == ("length", "lists", "bold")
    # the README's example: a flat feature kept to the ridge had no cluster-robust variance,
    # and every interval of the fit raised
    fit = hb.fit_hja(data, rank=0, position_bias=True, style="per_judge", self_preference=True)
    rows = fit.intervals()
    assert not rows.quantity.str.contains("headers").any()
    se = rows.loc[rows.quantity == "style:length", "se"]
    assert len(se) == 6 and np.isfinite(se).all()  # five judges and the panel


def test_a_feature_that_never_varies_is_left_out_and_none_varying_is_an_error():
    flat = table().assign(headers=0)
    with pytest.warns(hb.DataWarning, match=r"\['headers'\] do not vary"):
        joined = join_features(votes(), flat, cluster="question_id")
    assert joined.feature_names == ("length", "bold") and joined.features.shape == (6, 2)
    assert joined.feature_transform.endswith("left out, not varying: headers")
    np.testing.assert_allclose(joined.features,
                               join_features(votes(), table(), cluster="question_id").features)
    with pytest.raises(DataError, match="no style feature varies"):
        join_features(votes(), flat[["question_id", "model", "headers"]], cluster="question_id")


# ------------------------------------------------------------------ a style fit
@pytest.fixture(scope="module")
def style_panel():
    theta = np.array([[0.9], [0.3], [1.5], [0.6]])
    data, truth = hb.simulate(n_judges=4, n_items=6, rank=0, comparisons_per_judge=1500,
                              questions=60, style=theta, self_preference=0.6, seed=3)
    fit = hb.fit_hja(data, rank=0, style="per_judge", self_preference=truth.owners)
    return data, truth, fit


def test_a_style_fit_recovers_the_simulated_coefficients(style_panel):
    data, truth, fit = style_panel
    theta = fit.wald.coefficients("style:f1")
    z = (theta.estimate - truth.theta[:, 0]) / theta.se
    assert np.all(np.abs(z) < 4), z
    lam = fit.wald.coefficients("self")
    assert np.all(np.abs((lam.estimate - truth.lam) / lam.se) < 4)
    # the controlled consensus is the truth's; a fit without the term is pulled by style
    err = fit.mu - truth.mu
    plain = hb.fit_hja(data, rank=0)
    assert np.abs(err).max() < np.abs(plain.mu - truth.mu).max()


# ------------------------------------------------------------------ arena-rank
@pytest.mark.parametrize("position_bias", [0.0, 0.3])
def test_a_self_preference_fit_reaches_the_optimum_the_alternation_reaches_at_length(
        position_bias, monkeypatch):
    """The alternation's steps shrink long before the optimum where coefficients trade off
    against the scores: it stopped 1.2e-3 (2.8e-3 with position bias) from the scores it
    reaches at tol=1e-14, and on PRD at rank 1 with style and self-preference 0.065 above
    the optimum's NLL with coefficients 1.1 away.  Fisher scoring finishes such fits."""
    data, truth = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=400, seed=1,
                              self_preference=0.6, position_bias=position_bias)
    options = dict(rank=1, self_preference=truth.owners, position_bias=position_bias > 0)
    fit = hb.fit_hja(data, **options)
    with monkeypatch.context() as alone:  # the alternation alone, to its end, and stopped
        alone.setattr("hja_bayes.hja.refine.polish", lambda fit, tol: fit)
        far = hb.fit_hja(data, tol=1e-14, max_iter=50_000, **options)
        stopped = hb.fit_hja(data, **options)
    assert far.converged and np.abs(stopped.S - far.S).max() > 5e-4  # what was reported
    assert np.abs(fit.S - far.S).max() < 5e-5
    assert np.abs(fit.coef - far.coef).max() < 5e-5
    assert fit.nll == pytest.approx(far.nll, abs=1e-5)  # 1.7e-4 apart before
    if position_bias == 0.0:  # chosen by BIC: the rank table's row says where it ended
        chosen = hb.fit_hja(data, rank="bic", self_preference=truth.owners)
        row = chosen.rank_table.set_index("rank").loc[chosen.rank]
        assert chosen.rank == 1 and row["nll"] == chosen.nll and row["n_iter"] == chosen.n_iter
    if position_bias == 0.0:  # chosen by cross-validation, a rank far above the BIC's best
        data6, truth6 = hb.simulate(n_judges=6, n_items=6, rank=2, comparisons_per_judge=150,
                                    seed=3, self_preference=0.6)
        by_cv = hb.fit_hja(data6, rank="cv", max_rank=2, self_preference=truth6.owners,
                           patience=None)
        assert by_cv.rank == 2 and by_cv.rank_table["bic"].iloc[2] > by_cv.bic - 1  # by CV
        table6 = by_cv.rank_table.set_index("rank")
        fixed = hb.fit_hja(data6, rank=by_cv.rank, self_preference=truth6.owners)
        assert np.abs(by_cv.S - fixed.S).max() < 5e-5  # 3e-3 when only BIC's near best were
        assert table6.loc[by_cv.rank, "nll"] == pytest.approx(fixed.nll, abs=1e-6)
    # the rank search compares its candidates at their optima (rank_criteria's were not)
    table = hb.rank_criteria(data, [1], cv=False, self_preference=truth.owners,
                             position_bias=position_bias > 0)
    assert table["nll"].iloc[0] == pytest.approx(far.nll, abs=1e-5)  # 1.6e-4 apart before
    # a fragility refit, warm-started, is finished the same way (1.2e-3 from a fresh fit)
    from hja_bayes.hja.bootstrap import refit_without

    removed = np.zeros_like(data.counts)
    removed[:40] = np.minimum(data.counts[:40], 1)
    fresh = hb.fit_hja(data.without(removed), **options)
    assert np.abs(refit_without(fit, removed).S - fresh.S).max() < 5e-5


def test_style_fit_equals_arena_rank_contextual_bradley_terry():
    try:
        from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
        from arena_rank.utils.data_utils import ContextualPairDataset
    except ImportError:
        pytest.skip("arena-rank is not installed (a benchmark extra: it pins jax and numpy); "
                    "benchmarks/bench_style.py runs this check in its own environment")
    prd = hb.datasets.load_prd_vicuna80()
    rows = prd.judgments[prd.judgments.judge == "gpt4"].reset_index(drop=True)
    features = hb.style_features(prd.answers).drop(columns="headers")
    joined = join_features(rows, features, cluster="question_id")
    frame = rows[["model_a", "model_b", "winner"]].assign(
        **{f: joined.features[:, i] for i, f in enumerate(joined.feature_names)})
    reg = 0.01
    dataset = ContextualPairDataset.from_pandas(frame, list(joined.feature_names),
                                                reweighted=False, normalize_features=False)
    peer = ContextualBradleyTerry(len(dataset.competitors), len(joined.feature_names), reg=reg)
    peer.fit(dataset)

    data = Comparisons.from_frame(rows, cluster="question_id", features=features)
    # arena-rank: -mean(LL) + reg/2 |coeffs|^2; ours: NLL + ridge/2 |theta|^2 (scores free)
    fit = hb.fit_hja(data, rank=0, ridge=0.0, tol=1e-15, max_iter=20_000,
                     style=Style("shared", ridge=reg * data.n_comparisons))
    ratings = pd.Series(np.asarray(peer.params["ratings"]), index=dataset.competitors)
    np.testing.assert_allclose(fit.mu, ratings[list(fit.items)].to_numpy(), atol=1e-6)
    ours = [fit.coefficient(f"style:{f}").item() for f in joined.feature_names]
    np.testing.assert_allclose(ours, np.asarray(peer.params["coeffs"]), atol=1e-6)


def test_the_benchmark_runs_and_renders(tmp_path):
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    spec = importlib.util.spec_from_file_location("bench_style", root / "bench_style.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--parts", "parity", "--arena-python", "", "--out", str(tmp_path / "style")])
    assert "arena-rank not run" in (tmp_path / "style.md").read_text()
    # every part of the stored results renders
    text = bench.markdown(json.loads((root / "results" / "style.json").read_text()))
    for heading in ("## Parity", "## Coverage", "## PRD Vicuna80", "## Held-out agreement",
                    "## Speed", "## SPEC §10's reference figures"):
        assert heading in text


def test_a_shared_style_fit_matches_a_direct_logistic_regression_under_every_covariance():
    """One judge (PRD's gpt4, gamma = 1), rank 0, a style term shared by the panel: the model
    is the logistic regression logit P(first wins) = mu_i - mu_j + theta' x with ties as 1/2.
    Its estimates from scipy's optimiser and its expected information J' W J, computed here,
    give the fit's estimates and Fisher standard errors; the other covariances give a row
    too (a shared coefficient's interval had failed for every one but CR2)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    prd = hb.datasets.load_prd_vicuna80()
    rows = prd.judgments[prd.judgments.judge == "gpt4"].reset_index(drop=True)
    features = hb.style_features(prd.answers).drop(columns="headers")  # never varies
    joined = join_features(rows, features, cluster="question_id")
    data = Comparisons.from_frame(rows, cluster="question_id", features=features)
    fit = hb.fit_hja(data, rank=0, ridge=0.0, tol=0.0, style="shared")

    items = list(data.items)
    N, F = len(items), len(joined.feature_names)
    D = np.zeros((len(rows), N))
    D[np.arange(len(rows)), rows.model_a.map(items.index)] += 1.0
    D[np.arange(len(rows)), rows.model_b.map(items.index)] -= 1.0
    X = np.column_stack([D[:, :-1] - D[:, -1:], joined.features])  # mu_N = -(the others' sum)
    y = (rows.winner == "model_a") + 0.5 * (rows.winner == "tie").to_numpy()

    def nll(b):
        eta = X @ b
        return np.sum(np.logaddexp(0, eta) - y * eta), X.T @ (expit(eta) - y)

    b = minimize(nll, np.zeros(X.shape[1]), jac=True, method="BFGS", tol=1e-12).x
    p = expit(X @ b)
    cov = np.linalg.inv(X.T @ (X * (p * (1 - p))[:, None]))
    A = np.zeros((N + F, N - 1 + F))  # (mu_1..mu_N, theta) from the free parameters
    A[:N - 1, :N - 1] = np.eye(N - 1)
    A[N - 1, :N - 1] = -1.0
    A[N:, N - 1:] = np.eye(F)
    estimate, se = A @ b, np.sqrt(np.diag(A @ cov @ A.T))

    names = [f"style:{f}" for f in joined.feature_names]
    for cov_type in ("fisher", "sandwich", "CR1", "CR2"):
        table = fit.intervals(cov_type=cov_type, pairs="none")
        ours = pd.concat([table[table.quantity == "mu"].set_index("label").loc[items],
                          table[table.quantity.isin(names)].set_index("quantity").loc[names]])
        assert np.all(np.isfinite(ours.se)) and np.all(ours.lower < ours.upper)
        np.testing.assert_allclose(ours.estimate, estimate, atol=1e-6)
        if cov_type == "fisher":
            np.testing.assert_allclose(ours.se, se, rtol=1e-5)
    # the repr names the terms (a controlled fit and its uncontrolled twin had looked alike)
    assert ", position_bias=False, style:length, style:lists, style:bold, outcome=" in repr(fit)
    for lookup in (fit.wald.coefficients, fit.coefficient):  # a typo is an argument's error
        with pytest.raises(ParameterError, match="no term coefficient 'style:lenght'; it has"):
            lookup("style:lenght")
    for lookup in (fit.wald.panel_coefficient, fit.wald.coefficient_excess):  # as they do
        with pytest.raises(ParameterError, match="no per-judge coefficient 'style:lenght'"):
            lookup("style:lenght")


def test_a_feature_that_is_a_function_of_the_models_is_refused_not_called_precise():
    """A per-model flag (here 'made by OpenAI') among the style features of one judge: its
    column lies in the span of the models' indicator differences (checked on the design
    here), so only the ridge told its coefficient from the scores, and the default CR2
    intervals, blind along that direction, had called both precise (a ranking moved by an
    arbitrary split, with no warning).  The intervals now refuse, naming the cause; PRD's own
    features, which vary within a model, still give intervals."""
    prd = hb.datasets.load_prd_vicuna80()
    rows = prd.judgments[prd.judgments.judge == "gpt4"].reset_index(drop=True)
    features = hb.style_features(prd.answers).drop(columns="headers")
    flagged = features.assign(openai=features.model.isin(["gpt4", "gpt35"]).astype(int))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # said, and checked, below
        joined = join_features(rows, flagged, cluster="question_id")
    items = list(rows.model_a.unique())
    D = np.zeros((len(rows), len(items)))
    D[np.arange(len(rows)), rows.model_a.map(items.index)] += 1.0
    D[np.arange(len(rows)), rows.model_b.map(items.index)] -= 1.0
    column = joined.features[:, joined.feature_names.index("openai")]
    residual = column - D @ np.linalg.lstsq(D, column, rcond=None)[0]
    assert np.abs(residual).max() < 1e-9  # a function of the models alone
    # said when read: a value per model explains all of its differences (PRD's own features:
    # 0.14 to 0.39 of theirs)
    with pytest.warns(hb.DataWarning, match=r"style feature\(s\) openai \(1\) are \(nearly\) "
                                            r"a value per model") as said:
        flagged_data = Comparisons.from_frame(rows, cluster="question_id", features=flagged)
    assert len(said) == 1
    with warnings.catch_warnings():  # the flat direction slows the solver: it may not stop
        warnings.simplefilter("ignore", hb.ConvergenceWarning)
        fit = hb.fit_hja(flagged_data, rank=0, style="shared")
    with pytest.raises(hb.IdentifiabilityError, match=r"a style feature \(of length, lists, "
                                                      r"bold, openai\) that is a function"):
        fit.intervals()
    plain = hb.fit_hja(Comparisons.from_frame(rows, cluster="question_id", features=features),
                       rank=0, style="shared")
    assert np.isfinite(plain.intervals().se).all()


def test_the_unit_of_a_style_coefficient_is_stated_where_it_is_read():
    """SPEC §10: the transform is stated in the output.  It had been kept in
    ``data.feature_transform`` only, and the report's 'a one-sd difference in length' read
    as one sd of length (91 words on PRD), not of (a - b) / (a + b) (0.216)."""
    from hja_bayes.reporting.content import build_report

    prd = hb.datasets.load_prd_vicuna80()
    rows = prd.judgments[prd.judgments.judge == "gpt4"].reset_index(drop=True)
    features = hb.style_features(prd.answers).drop(columns="headers")
    data = Comparisons.from_frame(rows, cluster="question_id", features=features)
    length = features.set_index(["question_id", "model"])["length"]
    a = length.loc[list(zip(rows.question_id, rows.model_a))].to_numpy(float)
    b = length.loc[list(zip(rows.question_id, rows.model_b))].to_numpy(float)
    sd = np.std((a - b) / (a + b), ddof=1)
    stated = "relative: (a - b) / (a + b), 0 where a + b = 0, divided by its standard deviation"
    assert stated in str(data.summary()) and f"length={sd:.6g}" in str(data.summary())
    fit = hb.fit_hja(data, rank=0, style="shared")
    table = hb.bias_table(fit)
    assert table.attrs["meta"]["feature_transform"] == data.feature_transform
    report = build_report(fit)
    assert report.sentences["biases"].endswith(
        f"between the two answers is {data.feature_transform}.")
    # the figure's caption names the terms fitted only (it had named β and self-preference)
    assert report.captions["biases"].endswith(": style pulls per feature (red diamond: the "
                                              "panel's value).")


def test_raw_features_in_large_units_are_named_as_the_cause():
    """Lengths in millionths with feature_transform='raw': the intervals' refusal had blamed
    the judges' links and position bias only."""
    prd = hb.datasets.load_prd_vicuna80()
    rows = prd.judgments[prd.judgments.judge == "gpt4"].reset_index(drop=True)
    features = hb.style_features(prd.answers)[["question_id", "model", "length"]]
    data = Comparisons.from_frame(rows, cluster="question_id", feature_transform="raw",
                                  features=features.assign(length=features.length * 1e6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.ConvergenceWarning)
        fit = hb.fit_hja(data, rank=0, style="shared")
    with pytest.raises(hb.IdentifiabilityError, match="with feature_transform='raw' the "
                                                      "features keep their units"):
        fit.intervals()


def test_style_false_means_no_style_as_self_preference_false_does():
    from hja_bayes.likelihood.terms import terms_of

    assert terms_of(style=False, self_preference=False) == ()  # style=False had been refused
    with pytest.raises(ParameterError, match="style must be None"):
        terms_of(style=True)


def test_a_style_feature_that_never_varies_is_named_where_intervals_fail():
    """A fit saved before non-varying features were left out (PRD's 'headers') loaded, and
    every table failed blaming a feature "that is a function of the models alone"."""
    from dataclasses import replace

    from hja_bayes.errors import IdentifiabilityError

    data = Comparisons.from_frame(votes(), cluster="question_id", features=table())
    c = data.clusters
    old = replace(data, feature_names=data.feature_names + ("headers",),
                  clusters=c._replace(features=np.column_stack([c.features,
                                                                np.zeros(len(c.features))])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = hb.fit_hja(old, rank=0, style="shared")
    with pytest.raises(IdentifiabilityError, match=r"\['headers'\] never vary .* refit"):
        fit.intervals()
