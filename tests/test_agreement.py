"""Agreement statistics: Krippendorff's alpha, Cohen's kappa, agreement with a reference.

The values are checked against the ``krippendorff`` package and scikit-learn, computed here
from the raw rows (not through the library's own reading of the data).
"""

import functools
import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

import hja_bayes as hb
from hja_bayes.inference.agreement import (
    accuracy_from_confusion,
    alpha_from_coincidences,
    coincidences,
    kappa_from_confusion,
)

CODE = {"model_a": 0, "tie": 1, "model_b": 2}
UNIT = ["question_id", "model_a", "model_b"]


def panel_rows(seed=0, judges=4, prompts=12, items=("w", "x", "y", "z"), coverage=0.8,
               repeats=0.0):
    """One verdict per (judge, unit) on a random share of the units, judges leaning alike;
    with ``repeats`` > 0 some (judge, unit) get two or three verdicts."""
    rng = np.random.default_rng(seed)
    units = [(q, a, b) for q in range(prompts) for a in items for b in items if a != b]
    truth = rng.normal(size=len(units))
    rows = []
    for k in range(judges):
        for u, (q, a, b) in enumerate(units):
            if rng.random() > coverage:
                continue
            for _ in range(1 + (rng.random() < repeats) * rng.integers(1, 3)):
                x = truth[u] + rng.normal(scale=0.9)
                winner = "model_a" if x > 0.4 else "model_b" if x < -0.4 else "tie"
                rows.append((f"j{k}", f"q{q}", a, b, winner))
    return pd.DataFrame(rows, columns=["judge"] + UNIT + ["winner"])


def reliability(rows):
    """Coders x units matrix of verdict codes (NaN: not coded), one verdict per cell."""
    coded = rows.assign(v=rows["winner"].map(CODE))
    assert not coded.duplicated(["judge"] + UNIT).any()
    return coded.pivot(index="judge", columns=UNIT, values="v")


def majority(rows, by):
    """The most frequent verdict per group; groups without a unique one are dropped."""
    counts = rows.groupby(by + ["winner"]).size().rename("n").reset_index()
    top = counts[counts["n"] == counts.groupby(by)["n"].transform("max")]
    return top[~top.duplicated(by, keep=False)].drop(columns="n")


def pairwise(table, a, b):
    both = table.loc[[a, b]].dropna(axis=1)
    return both.loc[a].to_numpy(), both.loc[b].to_numpy()


@functools.lru_cache(maxsize=None)
def prd():
    data = hb.datasets.load_prd_vicuna80()
    panel = hb.Comparisons.from_frame(data.judgments, cluster="question_id")
    human = hb.Comparisons.from_frame(data.human, judge=None, cluster="question_id")
    return data, panel, human


def test_alpha_kappa_and_reference_equal_krippendorff_and_sklearn():
    rows = panel_rows()
    data = hb.Comparisons.from_frame(rows, cluster="question_id")
    result = hb.agreement(data, reference="j0", n_boot=0)
    table = reliability(rows)
    alpha = result.alpha.set_index("measure")["alpha"]
    for measure in ("nominal", "ordinal"):
        expected = krippendorff.alpha(reliability_data=table.to_numpy(float),
                                      level_of_measurement=measure)
        assert alpha[measure] == pytest.approx(expected, abs=1e-9)
    assert alpha["nominal"] != pytest.approx(alpha["ordinal"], abs=1e-3)
    assert result.alpha["units"].iloc[0] == int((table.notna().sum() >= 2).sum())
    for r in result.kappa.itertuples():
        x, y = pairwise(table, r.judge_a, r.judge_b)
        assert r.units == len(x)
        assert r.kappa == pytest.approx(cohen_kappa_score(x, y), abs=1e-9)
    ref = result.reference.set_index("judge")
    assert list(ref.index) == ["j1", "j2", "j3"]
    for judge in ref.index:
        x, y = pairwise(table, judge, "j0")
        assert ref.loc[judge, "accuracy"] == pytest.approx(np.mean(x == y), abs=1e-12)
        assert ref.loc[judge, "kappa"] == pytest.approx(cohen_kappa_score(x, y), abs=1e-9)
    matrix = result.kappa_matrix()
    assert matrix.loc["j2", "j1"] == matrix.loc["j1", "j2"] and matrix.loc["j3", "j3"] == 1


def test_prd_against_the_human_majority():
    raw, panel, human = prd()
    result = hb.agreement(panel, reference=human, n_boot=200, seed=1)
    table = reliability(raw.judgments)
    for measure in ("nominal", "ordinal"):
        expected = krippendorff.alpha(reliability_data=table.to_numpy(float),
                                      level_of_measurement=measure)
        row = result.alpha.set_index("measure").loc[measure]
        assert row["alpha"] == pytest.approx(expected, abs=1e-9)
        assert row["alpha_lower"] < row["alpha"] < row["alpha_upper"]
    votes = majority(raw.human, UNIT)
    panel_models = set(raw.judgments["model_a"])
    shared = votes[votes["model_a"].isin(panel_models) & votes["model_b"].isin(panel_models)]
    assert len(shared) == 744  # of 800 units: 56 three-way splits of three votes are left out
    meta = result.reference.attrs["meta"]
    assert (meta["reference_split"], meta["reference_repeated_verdicts"]) == (56, 480)
    assert meta["n_prompts"] == 80 and meta["reference_kind"] == "external"
    for r in result.reference.itertuples():
        mine = raw.judgments[raw.judgments["judge"] == r.judge].merge(votes, on=UNIT)
        x, y = mine["winner_x"].map(CODE), mine["winner_y"].map(CODE)
        assert r.units == len(mine) == 744
        assert r.accuracy == pytest.approx(np.mean(x == y), abs=1e-12)
        assert r.kappa == pytest.approx(cohen_kappa_score(x, y), abs=1e-9)
        assert r.accuracy_lower < r.accuracy < r.accuracy_upper
        assert r.kappa_lower < r.kappa < r.kappa_upper
    # rows are read with their prompt column, and give the same answer
    again = hb.agreement(panel, reference=raw.human, n_boot=200, seed=1)
    pd.testing.assert_frame_equal(again.reference, result.reference)


def test_repeated_verdicts_count_once_per_judge_by_majority():
    rows = panel_rows(seed=3, repeats=0.3)
    assert rows.duplicated(["judge"] + UNIT).any()
    data = hb.Comparisons.from_frame(rows, cluster="question_id")
    result = hb.agreement(data, reference="j1", n_boot=0)
    reduced = majority(rows, ["judge"] + UNIT)
    table = reliability(reduced)
    assert result.alpha.attrs["meta"]["split"] == len(rows.drop_duplicates(
        ["judge"] + UNIT)) - len(reduced) > 0
    for measure in ("nominal", "ordinal"):
        expected = krippendorff.alpha(reliability_data=table.to_numpy(float),
                                      level_of_measurement=measure)
        assert result.alpha.set_index("measure").loc[measure, "alpha"] == pytest.approx(
            expected, abs=1e-9)
    for r in result.kappa.itertuples():
        assert r.kappa == pytest.approx(cohen_kappa_score(*pairwise(table, r.judge_a,
                                                                    r.judge_b)), abs=1e-9)


def test_repeated_verdicts_as_shares():
    rows = panel_rows(seed=4, judges=3, repeats=0.4)
    data = hb.Comparisons.from_frame(rows, cluster="question_id")
    result = hb.agreement(data, reference="j0", n_boot=0, repeated="share")
    # kappa of shares = kappa over every pairing of the two judges' verdicts on a unit,
    # each weighted 1 / (number of such pairings)
    coded = rows.assign(v=rows["winner"].map(CODE))
    for r in result.kappa.itertuples():
        a = coded[coded["judge"] == r.judge_a]
        b = coded[coded["judge"] == r.judge_b]
        pairs = a.merge(b, on=UNIT)
        size = pairs.groupby(UNIT)["v_x"].transform("size")
        assert r.kappa == pytest.approx(cohen_kappa_score(
            pairs["v_x"], pairs["v_y"], sample_weight=1 / size), abs=1e-9)
        if r.judge_a == "j0":
            ref = result.reference.set_index("judge").loc[r.judge_b]
            assert ref["accuracy"] == pytest.approx(
                np.sum((pairs["v_x"] == pairs["v_y"]) / size) / pairs[UNIT].drop_duplicates()
                .shape[0], abs=1e-12)
    # a judge saying the same thing twice is still one coder: doubling every verdict changes
    # nothing, under either rule
    doubled = hb.Comparisons.from_frame(pd.concat([rows, rows]), cluster="question_id")
    for rule in ("share", "majority"):
        once = hb.agreement(data, n_boot=0, repeated=rule)
        twice = hb.agreement(doubled, n_boot=0, repeated=rule)
        np.testing.assert_allclose(twice.alpha["alpha"], once.alpha["alpha"], atol=1e-12)
        np.testing.assert_allclose(twice.kappa["kappa"], once.kappa["kappa"], atol=1e-12)


def test_the_maths_holds_for_five_ordered_levels():
    rng = np.random.default_rng(5)
    table = rng.integers(0, 5, size=(4, 60)).astype(float) + 0.0
    table[rng.random(table.shape) < 0.25] = np.nan
    coder, unit = np.nonzero(~np.isnan(table))
    weights = np.eye(5)[table[coder, unit].astype(int)]
    o = coincidences(unit, weights, table.shape[1]).sum(axis=0)
    for ordinal, measure in ((False, "nominal"), (True, "ordinal")):
        assert alpha_from_coincidences(o, ordinal) == pytest.approx(krippendorff.alpha(
            reliability_data=table, level_of_measurement=measure, value_domain=range(5)),
            abs=1e-9)
    both = ~np.isnan(table[0]) & ~np.isnan(table[1])
    x, y = table[0, both].astype(int), table[1, both].astype(int)
    confusion = np.zeros((5, 5))
    np.add.at(confusion, (x, y), 1)
    assert kappa_from_confusion(confusion) == pytest.approx(cohen_kappa_score(x, y), abs=1e-9)
    assert accuracy_from_confusion(confusion) == pytest.approx(np.mean(x == y))
    # one category only: alpha and kappa are undefined, not 1
    assert np.isnan(alpha_from_coincidences(np.diag([4.0, 0, 0])))
    assert np.isnan(kappa_from_confusion(np.diag([4.0, 0, 0])))


def test_bootstrap_is_seeded_and_optional():
    data = hb.Comparisons.from_frame(panel_rows(seed=6), cluster="question_id")
    a = hb.agreement(data, n_boot=150, seed=2, level=0.9)
    b = hb.agreement(data, n_boot=150, seed=2, level=0.9)
    pd.testing.assert_frame_equal(a.alpha, b.alpha)
    pd.testing.assert_frame_equal(a.kappa, b.kappa)
    assert (a.kappa["kappa_lower"] <= a.kappa["kappa"]).all()
    assert (a.kappa["kappa"] <= a.kappa["kappa_upper"]).all()
    wide = hb.agreement(data, n_boot=150, seed=2, level=0.99).alpha
    assert (wide["alpha_upper"] - wide["alpha_lower"] > a.alpha["alpha_upper"]
            - a.alpha["alpha_lower"]).all()
    none = hb.agreement(data, n_boot=0)
    assert none.alpha[["alpha_lower", "alpha_upper"]].isna().all().all()
    assert none.alpha.attrs["meta"]["interval"] == "none"
    assert a.reference is None
    meta = a.alpha.attrs["meta"]
    assert meta["level"] == 0.9 and meta["n_boot"] == 150 and meta["n_prompts"] == 12
    assert meta["categories"] == ["first", "tie", "second"]
    json.dumps(meta)
    # a pair's kappa has one interval wherever it is shown (the report shows the pairs and
    # the judges against a reference judge: two resamples had given two intervals)
    ref = hb.agreement(data, reference=data.judges[1], n_boot=150, seed=2, level=0.9)
    pairs = ref.kappa.set_index(["judge_a", "judge_b"])
    for _, row in ref.reference.iterrows():
        key = tuple(sorted((row["judge"], data.judges[1]), key=list(data.judges).index))
        assert tuple(pairs.loc[key, ["kappa", "kappa_lower", "kappa_upper"]]) == pytest.approx(
            tuple(row[["kappa", "kappa_lower", "kappa_upper"]]), rel=1e-12)


def test_bad_input_is_refused_clearly():
    rows = panel_rows(seed=7, judges=2)
    data = hb.Comparisons.from_frame(rows, cluster="question_id")
    with pytest.raises(hb.DataError, match="cluster="):
        hb.agreement(hb.Comparisons.from_frame(rows))
    with pytest.raises(hb.DataError, match="at least two judges"):
        hb.agreement(data.select_judges(["j0"]))
    with pytest.raises(hb.ParameterError, match="unknown judge 'j9'"):
        hb.agreement(data, reference="j9")
    with pytest.raises(hb.ParameterError, match="repeated"):
        hb.agreement(data, repeated="mean")
    with pytest.raises(hb.ParameterError, match="n_boot"):
        hb.agreement(data, n_boot=-1)
    with pytest.raises(hb.ParameterError, match="level"):
        hb.agreement(data, level=95)
    with pytest.raises(hb.ParameterError, match="Comparisons"):
        hb.agreement(rows)
    other = rows.assign(question_id="elsewhere-" + rows["question_id"])
    with pytest.raises(hb.DataError, match="shares no"):
        hb.agreement(data, reference=other)
    with pytest.raises(hb.DataError, match="prompt column"):
        hb.agreement(data, reference=rows.drop(columns="question_id"))
    with pytest.raises(hb.DataError, match="fold"):
        hb.agreement(data.fold_order(), reference=rows)
    # folded data alone are fine: units are (prompt, pair)
    assert hb.agreement(data.fold_order(), n_boot=0).alpha.attrs["meta"]["order_known"] is False
    # judges that share no unit have no kappa
    apart = hb.Comparisons.from_frame(pd.concat([rows[rows["judge"] == "j0"], rows[
        rows["judge"] == "j1"].assign(question_id="other")]), cluster="question_id")
    with pytest.warns(hb.DataWarning, match=r"undefined \(NaN\) for 3 statistic\(s\): alpha "
                      r"\(nominal\); alpha \(ordinal\); kappa of j0 and j1 \(no shared unit\)"):
        lonely = hb.agreement(apart, n_boot=10)  # had been NaN without a word
    assert lonely.kappa["units"].tolist() == [0] and lonely.kappa["kappa"].isna().all()
    assert lonely.alpha["units"].tolist() == [0, 0] and lonely.alpha["alpha"].isna().all()
    # one judge against a reference is fine
    one = hb.agreement(data.select_judges(["j0"]), reference=rows[rows["judge"] == "j1"],
                       n_boot=0)
    assert one.kappa.empty and np.isnan(one.alpha["alpha"]).all()
    assert one.reference["judge"].tolist() == ["j0"]



def test_the_report_shows_the_tables_it_is_given(tmp_path):
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=240, seed=2,
                          questions=8)
    fit = hb.fit_hja(data, rank=0)
    result = hb.agreement(data, reference=data.judges[0], n_boot=100)
    files = hb.report(fit, tmp_path, agreement=result)
    html = files.html.read_text(encoding="utf-8")
    assert "<h2>Agreement</h2>" in html and 'id="agreement-reference"' in html
    assert f"{result.alpha['alpha'].iloc[0]:.3f}" in html
    md = files.markdown.read_text(encoding="utf-8")
    assert "## Agreement" in md and "### Pairs of judges" in md
    written = json.loads((tmp_path / "agreement_kappa.json").read_text(encoding="utf-8"))
    assert written["meta"]["statistic"] == "Cohen's kappa" and "cov_type" not in written["meta"]
    assert len(written["rows"]) == 3
    assert (tmp_path / "agreement_reference.csv").exists()
    with pytest.raises(hb.ParameterError, match="agreement"):
        hb.report(fit, tmp_path, agreement=result.alpha)
    stranger = hb.agreement(hb.Comparisons.from_frame(panel_rows(judges=2),
                                                      cluster="question_id"), n_boot=0)
    with pytest.raises(hb.ParameterError, match="judges the fit does not have"):
        hb.report(fit, tmp_path, agreement=stranger)


def test_a_pairs_interval_does_not_depend_on_the_rest_of_the_panel():
    """Streams had been keyed by judge position: the same pair's kappa interval moved
    (gpt35-gpt4 [0.424, 0.516] on the full PRD panel, [0.424, 0.511] without bard)."""
    data, _ = hb.simulate(n_judges=4, n_items=4, rank=0, comparisons_per_judge=240, seed=2,
                          questions=12)
    full = hb.agreement(data, n_boot=200).kappa.set_index(["judge_a", "judge_b"])
    fewer = hb.agreement(data.select_judges(["judge1", "judge2", "judge3"]),
                         n_boot=200).kappa.set_index(["judge_a", "judge_b"])
    pair = ("judge2", "judge3")
    pd.testing.assert_series_equal(full.loc[pair], fewer.loc[pair])


def test_a_run_without_a_seed_records_one_that_repeats_it():
    """seed=None had been recorded as None: such a run could not be repeated."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=120, seed=1,
                          questions=8)
    first = hb.agreement(data, n_boot=50, seed=None).kappa
    seed = first.attrs["meta"]["seed"]
    assert isinstance(seed, int)
    again = hb.agreement(data, n_boot=50, seed=seed).kappa
    pd.testing.assert_frame_equal(first, again)
    assert hb.agreement(data, n_boot=0, seed=7).alpha.attrs["meta"]["seed"] == 7


def test_bootstrap_replicates_where_a_statistic_is_undefined_are_counted_not_hidden():
    """A resample of prompts where both judges give one verdict throughout leaves kappa (and
    alpha) undefined; such replicates had been dropped from the interval without a word."""
    rows = pd.DataFrame([("j0", "q0", "x", "y", "model_a"), ("j1", "q0", "x", "y", "model_b"),
                         ("j0", "q0", "x", "z", "tie"), ("j1", "q0", "x", "z", "tie"),
                         ("j0", "q1", "x", "y", "model_a"), ("j1", "q1", "x", "y", "model_a"),
                         ("j0", "q2", "y", "z", "model_a"), ("j1", "q2", "y", "z", "model_a")],
                        columns=["judge"] + UNIT + ["winner"])
    data = hb.Comparisons.from_frame(rows, cluster="question_id")
    with pytest.warns(hb.DataWarning) as caught:
        result = hb.agreement(data, n_boot=400, seed=1)
    said = {str(w.message).split(" are undefined")[0].split(" replicates of ")[1]:
            int(str(w.message).split(" of ")[0]) for w in caught if "undefined (one" in
            str(w.message)}
    assert set(said) == {"alpha (nominal)", "alpha (ordinal)", "kappa of j0 and j1"}
    # undefined exactly when prompt q0 is not drawn: probability (2/3)^3 per replicate
    p = (2 / 3) ** 3
    assert abs(said["kappa of j0 and j1"] - 400 * p) < 4.5 * np.sqrt(400 * p * (1 - p))
    assert np.isfinite(result.kappa["kappa"]).all() and result.kappa["kappa_lower"].notna().all()
