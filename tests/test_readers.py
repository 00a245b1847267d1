"""Readers: rows (frames, CSV, JSON Lines, counts) into Comparisons, validated once."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from hja_bayes import Comparisons, DataError, DataWarning


def frame(**cols):
    return pd.DataFrame(cols)


def test_winner_may_be_the_item_name_and_no_judge_column_means_one_judge():
    df = frame(model_a=["a", "b"], model_b=["b", "a"], winner=["b", "b"])
    data = Comparisons.from_frame(df)
    assert data.judges == ("judge",)
    c = data.to_frame().set_index(["model_a", "model_b"])
    assert c.loc[("a", "b"), "wins"] == 0.0 and c.loc[("b", "a"), "wins"] == 1.0


def test_unknown_winner_label_names_row_and_value():
    df = frame(model_a=["a", "b"], model_b=["b", "c"], winner=["model_a", "banana"])
    with pytest.raises(DataError, match=r"row 1.*'banana'"):
        Comparisons.from_frame(df)


def test_self_comparison_rejected():
    with pytest.raises(DataError, match="itself"):
        Comparisons.from_frame(frame(model_a=["a"], model_b=["a"], winner=["tie"]))


def test_missing_values_rejected():
    df = frame(model_a=["a", None], model_b=["b", "a"], winner=["tie", "tie"])
    with pytest.raises(DataError, match="missing"):
        Comparisons.from_frame(df)


def test_unknown_columns_listed():
    df = frame(first=["a"], second=["b"], outcome=["tie"])
    with pytest.raises(DataError, match=r"columns there are \['first', 'second', 'outcome'\]"):
        Comparisons.from_frame(df)


def test_empty_frame_rejected():
    with pytest.raises(DataError, match="empty"):
        Comparisons.from_frame(frame(model_a=[], model_b=[], winner=[]))


def test_invalid_verdicts_counted_and_judge_without_valid_rows_reported():
    df = frame(
        judge=["j1", "j1", "j2"],
        model_a=["a", "a", "a"],
        model_b=["b", "b", "b"],
        winner=["model_a", "invalid", "invalid"],
    )
    with pytest.warns(DataWarning, match="j2"):
        data = Comparisons.from_frame(df)
    s = data.summary()
    assert s.rows_read == 3 and s.rows_used == 1
    assert sum(s.rejected.values()) == 2
    assert s.dropped_judges == ("j2",)
    assert "rejected 2 rows" in str(s) and "j2" in str(s)


def test_all_rows_invalid_is_an_error():
    df = frame(model_a=["a"], model_b=["b"], winner=["invalid"])
    with pytest.raises(DataError, match="no valid rows"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        Comparisons.from_frame(df)


def test_names_differing_in_case_warn_and_are_not_merged():
    df = frame(model_a=["GPT-4", "gpt-4 "], model_b=["b", "b"], winner=["model_a", "model_b"])
    with pytest.warns(DataWarning, match="case or spaces"):
        data = Comparisons.from_frame(df)
    assert data.n_items == 3


def test_from_counts_matches_from_frame():
    rng = np.random.default_rng(3)
    items = ["a", "b", "c", "d"]
    rows = []
    for _ in range(300):
        i, j = rng.choice(4, 2, replace=False)
        rows.append(dict(judge=f"j{rng.integers(2)}", model_a=items[i], model_b=items[j],
                         winner=rng.choice(["model_a", "model_b", "tie"])))
    df = pd.DataFrame(rows)
    by_rows = Comparisons.from_frame(df)
    counts = by_rows.to_frame()
    # split every cell in two rows to check that repeated cells are summed
    half = counts.assign(n=counts.n / 2, wins=counts.wins / 2, ties=counts.ties / 2)
    by_counts = Comparisons.from_counts(pd.concat([half, half]))
    a = by_rows.to_frame().sort_values(["judge", "model_a", "model_b"]).reset_index(drop=True)
    b = by_counts.to_frame().sort_values(["judge", "model_a", "model_b"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def test_from_counts_rejects_inconsistent_counts():
    df = frame(model_a=["a"], model_b=["b"], n=[2.0], wins=[3.0])
    with pytest.raises(DataError, match="wins"):
        Comparisons.from_counts(df)


def test_csv_and_jsonl_readers(tmp_path):
    df = frame(judge=["j", "j"], model_a=["a", "b"], model_b=["b", "a"], winner=["model_a", "tie"])
    df.to_csv(tmp_path / "x.csv", index=False)
    with open(tmp_path / "x.jsonl", "w") as fh:
        for rec in df.to_dict("records"):
            fh.write(json.dumps(rec) + "\n")
    a = Comparisons.from_csv(tmp_path / "x.csv").to_frame()
    b = Comparisons.from_jsonl(tmp_path / "x.jsonl").to_frame()
    pd.testing.assert_frame_equal(a, b)
