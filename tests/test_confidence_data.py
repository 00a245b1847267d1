import numpy as np
import pandas as pd
import pytest

from hja_bayes.confidence import (
    ConfidenceData,
    TE_JUDGES,
    auroc,
    from_probability_table,
    load_prd_vicuna80_confidence,
    load_trust_or_escalate_confidence,
    predictive_probability,
    simulate_confidence_data,
    simulated_annotators_max_mean,
)
from hja_bayes.datasets import load_prd_vicuna80
from hja_bayes.errors import DataError

from .conftest import SHARED_DATA, shared_data_or_skip


def test_probability_table_orientation_and_baselines():
    p = np.array([[0.9, 0.7, 0.2], [0.1, 0.4, 0.3], [0.5, 0.5, 0.5]])
    d = from_probability_table(p, [1, 1, 2])
    assert d.verdict.tolist() == [1, 2, 1] and d.agree.tolist() == [True, False, False]
    assert np.allclose(d.features[1], 1 - p[1]) and np.allclose(d.features[0], p[0])
    assert np.allclose(from_probability_table(p, [1, 1, 2], orient=False).features, p)
    assert np.allclose(d.baselines["predictive_probability"], predictive_probability(p))
    assert np.allclose(d.baselines["simulated_annotators"], [0.6, 0.7333333333, 0.5])
    assert np.allclose(simulated_annotators_max_mean(p), d.baselines["simulated_annotators"])


@pytest.mark.parametrize("bad", [[[0.2, np.nan]], [[0.2, 1.2]], [[-0.1, 0.5]], [[np.inf, 0.5]]])
def test_features_outside_unit_interval_or_nan_raise(bad):
    with pytest.raises(DataError):
        from_probability_table(bad, [1])
    finite = np.all(np.isfinite(bad))
    if finite:  # the container holds any finite real features (e.g. panel statistics)
        assert ConfidenceData(features=bad, verdict=[1], human=[1]).n == 1
    else:
        with pytest.raises(DataError):
            ConfidenceData(features=bad, verdict=[1], human=[1])


def test_confidence_data_checks():
    with pytest.raises(DataError, match="agree"):
        ConfidenceData(features=[[0.1], [0.2]], verdict=[1, 2], human=[1, 1], agree=[1, 1])
    with pytest.raises(DataError):
        from_probability_table([[0.5]], [3])
    d = ConfidenceData(features=[[0.1], [0.2], [0.3]], verdict=[1, 2, 1], human=[1, 1, 1])
    sub = d.subset([0, 2])
    assert sub.n == 2 and sub.agree.all()
    with pytest.raises(ValueError):
        d.features[0, 0] = 0.5  # read-only


def test_simulation_is_seeded_and_non_monotone():
    a = simulate_confidence_data(4000, seed=5)
    b = simulate_confidence_data(4000, seed=5)
    c = simulate_confidence_data(4000, seed=6)
    assert np.array_equal(a.data.features, b.data.features) and np.array_equal(a.data.agree, b.data.agree)
    assert not np.array_equal(a.data.features, c.data.features)
    # the top decile of the max-mean confidence agrees less often than the decile below it
    mm = a.data.baselines["simulated_annotators"]
    q80, q90 = np.quantile(mm, [0.8, 0.9])
    assert a.agree_probability[mm >= q90].mean() < a.agree_probability[(mm >= q80) & (mm < q90)].mean() - 0.05
    # ... so the heuristic ranks worse than the truth does
    assert auroc(mm, a.data.agree) < auroc(a.agree_probability, a.data.agree) - 0.05


def test_trust_or_escalate_confidence():
    shared_data_or_skip("trust_or_escalate", "calibration_judge_probs.csv")
    # judge accuracies from the data README: 0.784 / 0.756 / 0.750
    expected = {"gpt-4-turbo": 0.784, "gpt-3.5-turbo": 0.756, "mistral-7b-instruct": 0.750}
    for judge in TE_JUDGES:
        d = load_trust_or_escalate_confidence(judge, SHARED_DATA)
        assert d.n == 500 and d.n_features == 3
        assert d.agreement_rate == pytest.approx(expected[judge], abs=5e-4)
        # the target's own oriented probability is its top probability
        assert np.allclose(d.features[:, 0], np.clip(d.baselines["predictive_probability"], 0, 1))
    raw = pd.read_csv(SHARED_DATA / "trust_or_escalate" / "calibration_judge_probs.csv")
    d = load_trust_or_escalate_confidence("gpt-4-turbo", SHARED_DATA, orient=False)
    assert np.allclose(d.features[:, 0], raw["p_output1__gpt-4-turbo"])
    with pytest.raises(DataError):
        load_trust_or_escalate_confidence("gpt-5", SHARED_DATA)


def test_prd_confidence_spot_checks():
    d = load_prd_vicuna80_confidence("gpt4")
    prd = load_prd_vicuna80()
    names = list(d.feature_names)
    others = [i for i, f in enumerate(names) if f.startswith("agrees__")]
    assert len(others) == 8 and 0 <= d.features.min() and d.features.max() <= 1
    assert np.allclose(d.features[:, names.index("panel_agreement")], d.features[:, others].mean(axis=1))
    # recompute a few examples straight from the raw rows
    llm, hum = prd.judgments, prd.human
    rng = np.random.default_rng(0)
    models = sorted(set(llm.model_a))
    items = hum[hum.model_a.isin(models) & hum.model_b.isin(models)].groupby(["question_id", "model_a", "model_b"])
    keys = [k for k, g in items if g.winner.value_counts().iloc[0] > len(g) / 2 or len(g) == 1]
    assert len(keys) == d.n
    for i in rng.choice(len(keys), 15, replace=False):
        q, first, second = keys[i]
        votes = items.get_group(keys[i]).winner
        human = {"model_a": 0, "model_b": 1, "tie": 2}[votes.mode().iloc[0]]

        def verdict(judge, a, b):
            w = llm[(llm.judge == judge) & (llm.question_id == q) & (llm.model_a == a) & (llm.model_b == b)].winner.item()
            name = {"model_a": a, "model_b": b}.get(w, "tie")
            return {first: 0, second: 1}.get(name, 2)

        target = verdict("gpt4", first, second)
        assert d.verdict[i] == target and d.human[i] == human
        assert d.features[i, names.index("self_consistency")] == (verdict("gpt4", second, first) == target)
        assert d.features[i, names.index("agrees__claude__swapped")] == (verdict("claude", second, first) == target)


def test_a_probability_csv_that_does_not_fit_says_what_to_do(tmp_path):
    """A missing human column names the likely one (or the Trust-or-Escalate source for that
    release's layout); a column that is not a probability is named."""
    from hja_bayes.confidence.pipeline import read_confidence_source

    rng = np.random.default_rng(0)
    p = rng.random(40)
    frame = pd.DataFrame({"example_id": np.arange(40), "human_label": rng.integers(1, 3, 40),
                          "p_judge": p})
    frame.to_csv(tmp_path / "probs.csv", index=False)
    with pytest.raises(DataError, match=r"--human-col\), e.g. 'human_label'"):
        read_confidence_source(str(tmp_path / "probs.csv"))
    with pytest.raises(DataError, match=r"column\(s\) \['example_id'\] hold values outside"):
        read_confidence_source(str(tmp_path / "probs.csv"), human_col="human_label")
    data = read_confidence_source(str(tmp_path / "probs.csv"), human_col="human_label",
                                  group_col="example_id")
    assert data.feature_names == ("p_judge",) and data.features.shape == (40, 1)
    # an empty group cell: named, where it had been a TypeError from NumPy's sort
    frame.astype({"example_id": object}).assign(
        example_id=lambda f: f.example_id.where(f.index % 9 != 4, "")).to_csv(
            tmp_path / "blank.csv", index=False)
    with pytest.raises(DataError, match=r"group column 'example_id' is empty at line 6 \(4 such"):
        read_confidence_source(str(tmp_path / "blank.csv"), human_col="human_label",
                               group_col="example_id")
    # an empty file, or a header alone: said so (pandas' "No columns to parse", and every
    # column "only 0 and 1" before)
    (tmp_path / "empty.csv").write_text("")
    frame.head(0).to_csv(tmp_path / "header.csv", index=False)
    for name, said in (("empty.csv", "is empty"), ("header.csv", "has a header but no rows")):
        with pytest.raises(DataError, match=f"{name} {said}"):
            read_confidence_source(str(tmp_path / name), human_col="human_label")
    release = pd.DataFrame({"example_id": np.arange(40), "human_preference": 1,
                            "p_output1__a": p, "p_output2__a": 1 - p})
    release.to_csv(tmp_path / "release.csv", index=False)
    with pytest.raises(DataError, match="Trust-or-Escalate release's layout"):
        read_confidence_source(str(tmp_path / "release.csv"))
