"""Readers: rows (frames, CSV, JSON Lines, counts) into Comparisons, validated once."""

import ast
import json
import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes import Comparisons, DataError, DataWarning
from hja_bayes.readers import (FIRST_LABELS, INVALID_LABELS, ONE_HOT_COLUMNS, SECOND_LABELS,
                               TIE_LABELS, read_json, read_parquet)


def frame(**cols):
    return pd.DataFrame(cols)


def test_winner_may_be_the_item_name_and_judge_none_means_one_judge():
    df = frame(model_a=["x", "y"], model_b=["y", "x"], winner=["y", "y"])
    data = Comparisons.from_frame(df, judge=None)
    assert data.judges == ("judge",)
    c = data.to_frame().set_index(["model_a", "model_b"])
    assert c.loc[("x", "y"), "wins"] == 0.0 and c.loc[("y", "x"), "wins"] == 1.0


def test_unknown_winner_label_names_row_and_value():
    df = frame(model_a=["a", "b"], model_b=["b", "c"], winner=["model_a", "banana"])
    with pytest.raises(DataError, match=r"row 1.*'banana'") as caught:
        Comparisons.from_frame(df, judge=None)
    assert "scale=" not in str(caught.value)  # the hint is for numbers
    # 0/1 winners: the error says how numbers are read, and that reading works
    numbers = frame(model_a=["a", "b"], model_b=["b", "c"], winner=[1, 0])
    with pytest.raises(DataError, match=r"winner '1'.*numbers are read as ordered verdicts "
                                        r"with scale='LO..HI' \(CLI --verdict-scale\)"):
        Comparisons.from_frame(numbers, judge=None)
    assert Comparisons.from_frame(numbers, judge=None, scale="0..1").counts.sum() == 2


def test_self_comparison_rejected():
    with pytest.raises(DataError, match="itself"):
        Comparisons.from_frame(frame(model_a=["a"], model_b=["a"], winner=["tie"]), judge=None)


def test_missing_values_rejected():
    df = frame(model_a=["a", None], model_b=["b", "a"], winner=["tie", "tie"])
    with pytest.raises(DataError, match="missing"):
        Comparisons.from_frame(df, judge=None)


def test_unknown_columns_listed():
    df = frame(first=["a"], second=["b"], outcome=["tie"])
    with pytest.raises(DataError, match=r"columns there are \['first', 'second', 'outcome'\]"):
        Comparisons.from_frame(df, judge=None)


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
    # said of these data (read for an update, the judge stays in the fit)
    with pytest.warns(DataWarning, match=r"all unusable, left out of these data: \['j2'\]"):
        data = Comparisons.from_frame(df)
    s = data.summary()
    assert s.rows_read == 3 and s.rows_used == 1
    assert sum(s.rejected.values()) == 2
    assert s.dropped_judges == ("j2",)
    assert "rejected 2 rows" in str(s) and "j2" in str(s)


def test_a_model_without_a_usable_row_is_named():
    """It had left every table without a word (only the rejected rows were counted), and
    'error' and 'ERROR' had been two reasons."""
    df = frame(judge=["j1"] * 4, model_a=["a", "b", "a", "c"], model_b=["b", "c", "c", "z"],
               winner=["model_a", "error", "tie", "ERROR "])
    with pytest.warns(DataWarning, match=r"model\(s\) whose rows here are all unusable, left "
                      r"out of these data: \['z'\]"):
        data = Comparisons.from_frame(df)
    assert data.items == ("a", "b", "c") and data.summary().rejected == {
        "no usable verdict ('error')": 2}
    counts = pd.DataFrame({"model_a": ["a", "b", "c"], "model_b": ["b", "c", "z"],
                           "n": [3, 2, 0], "wins": [1, 1, 0]})
    with pytest.warns(DataWarning, match=r"model\(s\) .* \['z'\]"):
        assert Comparisons.from_counts(counts, judge=None).items == ("a", "b", "c")


def test_all_rows_invalid_is_an_error():
    df = frame(model_a=["a"], model_b=["b"], winner=["invalid"])
    with pytest.raises(DataError, match="no valid rows"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        Comparisons.from_frame(df, judge=None)


def test_standard_input_is_read_by_its_content(monkeypatch, tmp_path):
    """gzip, parquet and TSV piped in had been 'not UTF-8 text' or one column of tabs."""
    import gzip
    import io
    import sys

    from hja_bayes.sources import read_table

    rows = frame(judge=["j1", "j2"], model_a=["x", "y"], model_b=["y", "x"],
                 winner=["model_a", "tie"])
    rows.to_parquet(tmp_path / "rows.parquet")
    for raw in (gzip.compress(rows.to_csv(index=False).encode()),
                rows.to_csv(index=False, sep="\t").encode(),
                (tmp_path / "rows.parquet").read_bytes()):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
        pd.testing.assert_frame_equal(read_table("-").reset_index(drop=True), rows)
    # a file gzipped without the .gz suffix ('not UTF-8 text' before), and a named pipe or a
    # shell's <(...) ('no such file' before), read as standard input is
    (tmp_path / "packed.csv").write_bytes(gzip.compress(rows.to_csv(index=False).encode()))
    pd.testing.assert_frame_equal(read_table(tmp_path / "packed.csv").reset_index(drop=True),
                                  rows)
    if hasattr(os, "mkfifo"):
        import threading

        os.mkfifo(tmp_path / "pipe")
        writer = threading.Thread(target=(tmp_path / "pipe").write_text,
                                  args=(rows.to_csv(index=False, sep="\t"),))
        writer.start()
        pd.testing.assert_frame_equal(read_table(tmp_path / "pipe").reset_index(drop=True),
                                      rows)
        writer.join()


def test_messages_about_a_row_name_its_line_in_the_file(tmp_path):
    """They had named pandas' 0-based row below the header ('row 1' for line 3); a JSON
    array's objects are counted from 1."""
    pair = '"judge": "j", "model_a": "a", "model_b": '
    files = {
        "v.csv": ('judge,model_a,model_b,winner\nj,a,b,model_a\n\n  \nj,"a\nx",b,model_b\n'
                  "j,a,b,banana\n", r"^line 7: winner 'banana'"),
        "v.jsonl": (f'{{{pair}"b", "winner": "model_a"}}\n\n{{{pair}"a", "winner": "tie"}}\n',
                    r"^line 3 compares"),
        "plain.csv": ("judge,model_a,model_b,winner\nj,a,b,model_a\nj,a,,model_b\n",
                      r"^line 3: empty name"),
        "v.json": (f'[{{{pair}"b", "winner": "model_a"}}, {{{pair}"b", "winner": "banana"}}]',
                   r"^object 2: winner 'banana'"),
    }
    for name, (text, message) in files.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(DataError, match=message):
            Comparisons.from_file(tmp_path / name)
    # a frame of the user's keeps its own labels
    with pytest.raises(DataError, match=r"^row 1: empty name"):
        Comparisons.from_frame(pd.read_csv(tmp_path / "plain.csv", keep_default_na=False))


def test_a_missing_column_says_how_to_name_it():
    df = frame(judge=["j"], Model_A=["x"], model_b=["y"], verdict=["model_a"])
    with pytest.raises(DataError, match=r"'model_a': 'Model_A' differs only in case or spaces, "
                                        r"name it with model_a= \(hja-bayes: --model-a-col\)"):
        Comparisons.from_frame(df, winner="verdict")
    with pytest.raises(DataError, match=r"'winner': name it with winner= \(hja-bayes: "
                                        r"--winner-col\)"):
        Comparisons.from_frame(df, model_a="Model_A")


def test_prompt_ids_differing_in_spaces_warn_and_are_not_merged():
    """'1' and '1 ' had made two prompts silently (models and judges so alike warned)."""
    df = frame(judge=["j"] * 3, model_a=["x", "y", "x"], model_b=["y", "x", "y"],
               winner=["model_a", "model_b", "tie"], question_id=["1", "1 ", "2"])
    with pytest.warns(DataWarning, match=r"prompt ids in column 'question_id' that differ only "
                                         r"in surrounding spaces are kept apart: '1' / '1 '"):
        data = Comparisons.from_frame(df, cluster="question_id")
    assert data.clusters.names == ("1", "1 ", "2")


def test_names_differing_in_case_warn_and_are_not_merged():
    df = frame(model_a=["GPT-4", "gpt-4 "], model_b=["b", "b"], winner=["model_a", "model_b"])
    with pytest.warns(DataWarning, match="case, spaces, punctuation"):
        data = Comparisons.from_frame(df, judge=None)
    assert data.n_items == 3
    # a typo that drops a hyphen had split one model in two silently
    df = frame(model_a=["gpt4", "gpt-4", "claude-v1"], model_b=["b", "b", "claude-v2"],
               winner=["model_a", "model_b", "model_a"])
    with pytest.warns(DataWarning, match=r"'gpt4' / 'gpt-4'") as caught:
        data = Comparisons.from_frame(df, judge=None)
    assert data.n_items == 5 and "claude" not in str(caught[0].message)
    # one name in composed and in decomposed Unicode (they print alike), full-width letters,
    # and an integer id written as a float by a column with a gap had split silently too
    composed, decomposed = "caf\u00e9-7b", "cafe\u0301-7b"
    for first, second, shown in [([composed, decomposed], ["b", "b"],
                                  f"{composed!r} / {decomposed!r}"),
                                 (["\uff47\uff50\uff54-4", "gpt-4"], ["b", "b"],
                                  "'ｇｐｔ-4' / 'gpt-4'"),
                                 ([2, 5], [3.0, 2.0], "'2' / '2.0'")]:
        df = frame(model_a=first, model_b=second, winner=["model_a", "model_a"])
        with pytest.warns(DataWarning, match=re.escape(shown)):
            data = Comparisons.from_frame(df, judge=None)
        assert data.n_items == 3 + (first[0] == 2)


def test_values_of_different_types_read_as_one_name_are_said():
    # judge 1 (an int) and judge "1" (text from another source) had been merged silently
    df = frame(judge=[1, "1", 2, 2], model_a=["x", "y", "x", "y"], model_b=["y", "x", "y", "x"],
               winner=["model_a", "model_b", "tie", "model_a"])
    with pytest.warns(DataWarning, match=r"column 'judge' .* int '1' and str '1'"):
        data = Comparisons.from_frame(df)
    assert data.judges == ("1", "2")
    df["judge"] = [1, 1, "2", "3"]  # mixed types, no two alike: nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Comparisons.from_frame(df).n_judges == 3


def test_rows_repeated_in_every_column_warn_where_a_column_looks_like_an_identifier():
    """A log read twice (an id column alike) is named with its first repeat, and the rows
    still count (a warning, not a change); bare verdicts, prompt, category and score
    included, may repeat (an LLM judge sampled twice) and are not checked; list-valued JSON
    columns are left out of the comparison."""
    rng = np.random.default_rng(0)
    base = frame(judge=rng.choice(["j1", "j2"], 40), model_a=rng.choice(["x", "y"], 40),
                 model_b=["z"] * 40, winner=rng.choice(["model_a", "tie", "model_b"], 40),
                 question_id=np.arange(40) // 4, language=rng.choice(["en", "de"], 40),
                 score=rng.choice([0.5, 0.9], 40), review_id=np.arange(40))
    twice = pd.concat([base, base.iloc[10:25]], ignore_index=True)
    with pytest.warns(DataWarning, match=r"^15 rows repeat an earlier row in every column, "
                                         r"'review_id' included \(the first at position 40 "
                                         r"repeats position 10"):
        data = Comparisons.from_frame(twice)
    assert data.n_comparisons == 55
    bare = twice.drop(columns="review_id")
    assert bare.duplicated().sum() >= 15
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Comparisons.from_frame(base)
        Comparisons.from_frame(bare, cluster="question_id")
        Comparisons.from_frame(bare)
    with pytest.warns(DataWarning, match=r"drop_duplicates\(\), if"):
        Comparisons.from_frame(twice)
    assert len(twice.drop_duplicates()) == 40
    # the advice, followed as written, works where list-valued columns were left out
    listed = twice.assign(turns=[[i] for i in twice.review_id])
    with pytest.warns(DataWarning, match="^15 rows repeat") as caught:
        Comparisons.from_frame(listed)
    subset = re.search(r"drop_duplicates\(subset=(\[.*?\])\)", str(caught[0].message))[1]
    assert len(listed.drop_duplicates(subset=ast.literal_eval(subset))) == 40
    with pytest.raises(TypeError):
        listed.drop_duplicates()


def test_an_unknown_keyword_is_named_with_the_readers_own(tmp_path):
    """The command line's option names passed to the Python readers: named as the method's
    own arguments (they had raised a TypeError naming the internal read_frame())."""
    rows = frame(judge=["j1"], model_a=["x"], model_b=["y"], winner=["model_a"])
    with pytest.raises(hb.ParameterError, match=r"^Comparisons.from_frame\(\) has no argument "
                                                r"'judge_col': columns are named by judge="):
        Comparisons.from_frame(rows, judge_col="judge")
    rows.to_csv(tmp_path / "v.csv", index=False)
    with pytest.raises(hb.ParameterError, match=r"^Comparisons.from_file\(\) has no argument "
                                                r"'winner_col'"):
        Comparisons.from_file(tmp_path / "v.csv", winner_col="winner")


def test_rows_with_a_trailing_comma_the_header_lacks_keep_their_columns(tmp_path):
    """pandas had made the first column the index and shifted every other one (a judge read
    as a model, 'no valid rows'); a non-empty extra field is an error."""
    path = tmp_path / "trailing.csv"
    path.write_text("judge,model_a,model_b,winner\nj1,x,y,model_a,\nj1,y,z,model_b,\n"
                    "j2,x,z,tie,\n")
    data = Comparisons.from_file(path)
    assert data.judges == ("j1", "j2") and data.items == ("x", "y", "z")
    assert data.n_comparisons == 3
    path.write_text("judge,model_a,model_b,winner\nj1,x,y,model_a,5\nj1,y,z,model_b,\n")
    with pytest.raises(DataError, match="its rows have one more field than its header"):
        Comparisons.from_file(path)


def test_a_csv_with_spaces_after_its_commas_is_named_as_such(tmp_path):
    path = tmp_path / "spaced.csv"
    path.write_text("judge, model_a, model_b, winner\nj1, x, y, x\nj1, y, z, model_a\n")
    with pytest.raises(DataError, match=r"column names with spaces around them: \[' model_a', "
                                        r"' model_b', ' winner'\] \(a CSV written with ', '"):
        Comparisons.from_csv(path)
    data = Comparisons.from_frame(pd.read_csv(path, skipinitialspace=True))
    assert list(data.items) == ["x", "y", "z"]


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
        Comparisons.from_counts(df, judge=None)
    # halves in wins without a ties column: the ties are lost, said (it had been silent)
    halves = frame(model_a=["a", "b"], model_b=["b", "a"], n=[4.0, 2.0], wins=[2.5, 1.0])
    with pytest.warns(DataWarning, match=r"wins hold halves \(ties counted 1/2\) but no ties"):
        Comparisons.from_counts(halves, judge=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Comparisons.from_counts(halves.assign(ties=[1.0, 0.0]), judge=None)


def test_csv_and_jsonl_readers(tmp_path):
    df = frame(judge=["j", "j"], model_a=["a", "b"], model_b=["b", "a"], winner=["model_a", "tie"])
    df.to_csv(tmp_path / "x.csv", index=False)
    with open(tmp_path / "x.jsonl", "w") as fh:
        for rec in df.to_dict("records"):
            fh.write(json.dumps(rec) + "\n")
    a = Comparisons.from_csv(tmp_path / "x.csv").to_frame()
    b = Comparisons.from_jsonl(tmp_path / "x.jsonl").to_frame()
    pd.testing.assert_frame_equal(a, b)
    # a leading byte-order mark (Windows editors, PowerShell's UTF-8) is not part of the data:
    # the JSON Lines file had been "line 1: not valid JSON (Unexpected UTF-8 BOM ...)"
    from hja_bayes.sources import read_table

    for name in ("x.csv", "x.jsonl"):
        text = (tmp_path / name).read_text()
        marked, wide = tmp_path / f"bom_{name}", tmp_path / f"utf16_{name}"
        marked.write_bytes(b"\xef\xbb\xbf" + text.encode())
        wide.write_bytes(text.encode("utf-16"))  # with its BOM: PowerShell 5's redirection
        for other in (marked, wide):
            pd.testing.assert_frame_equal(read_table(other), read_table(tmp_path / name))
    (tmp_path / "latin.csv").write_bytes("judge,model_a,model_b,winner\nj,\u00e9,b,tie\n"
                                         .encode("latin-1"))
    with pytest.raises(DataError, match="latin.csv: not UTF-8 text.*save it as UTF-8"):
        read_table(tmp_path / "latin.csv")



# ------------------------------------------------------------- silent wrong answers (13.1, 13.3)
def test_model_names_that_are_verdict_labels_are_an_error_naming_both_readings():
    # models "A" and "B", winner given by name: row 1 shows B first, so "A" as a label says
    # "first shown (B) won" and as a name says "A won"
    df = frame(model_a=["A", "B", "A"], model_b=["B", "A", "B"], winner=["A", "A", "B"])
    with pytest.raises(DataError, match=r"row 1: the verdict 'A' reads two ways.*first-shown "
                                        r"model won.*model 'A' shown second"):
        Comparisons.from_frame(df, judge=None)
    # a model named "tie": once a tie, once that model's win
    tie = frame(model_a=["tie", "x"], model_b=["x", "y"], winner=["tie", "tie"])
    with pytest.raises(DataError, match=r"'tie' reads two ways: as the label for 'a tie'"):
        Comparisons.from_frame(tie, judge=None)
    none = frame(model_a=["None", "x"], model_b=["x", "None"], winner=["None", "x"])
    with pytest.raises(DataError, match="no usable verdict"):
        Comparisons.from_frame(none, judge=None)
    # where both readings agree in every row, nothing is ambiguous
    agree = frame(model_a=["A", "A"], model_b=["B", "B"], winner=["A", "B"])
    cells = Comparisons.from_frame(agree, judge=None).to_frame()
    assert cells["wins"].tolist() == [1.0]


def test_a_missing_judge_column_is_an_error_saying_what_to_do():
    df = frame(judge_model=["j1", "j2"], model_a=["x", "y"], model_b=["y", "x"],
               winner=["model_a", "tie"])
    with pytest.raises(DataError, match=r"no judge column 'judge'.*'judge_model'.*judge=None "
                                        r"\(CLI --judge-col -\)"):
        Comparisons.from_frame(df)
    with pytest.raises(DataError, match="judge=None"):
        Comparisons.from_counts(df.assign(n=1, wins=1))
    assert Comparisons.from_frame(df, judge="judge_model").n_judges == 2
    assert Comparisons.from_frame(df, judge=None).n_judges == 1


def test_every_missing_column_is_named_in_one_error():
    """A frame of other column names: the models' and the verdict's columns named together,
    each with its option (they had come one run at a time: the verdict's first, then the
    models')."""
    df = frame(judge=["j1"], response_a=["x"], response_b=["y"], preference=["model_a"])
    with pytest.raises(DataError, match=r"column\(s\) \['model_a', 'model_b', 'winner'\] not "
                                        r"found.*--model-a-col.*--model-b-col.*--winner-col"):
        Comparisons.from_frame(df)
    with pytest.raises(DataError, match=r"\['judge', 'winner'\] not found.*judge=None"):
        Comparisons.from_frame(df.drop(columns="judge"), model_a="response_a",
                               model_b="response_b")
    # the one-hot verdict columns stand for 'winner'
    hot = df.rename(columns={"response_a": "model_a"}).assign(
        winner_model_a=[1], winner_model_b=[0], winner_tie=[0])
    with pytest.raises(DataError, match=r"\['model_b'\] not found"):
        Comparisons.from_frame(hot)


def test_a_judge_column_of_voters_warns_and_suggests_one_judge():
    rng = np.random.default_rng(0)
    n = 300
    df = frame(judge=[f"arena_user_{i}" for i in rng.integers(0, 100, n)],
               model_a=rng.choice(["x", "y", "z"], n), model_b=["w"] * n,
               winner=rng.choice(["model_a", "model_b"], n))
    with pytest.warns(DataWarning, match=r"median of \d+ verdicts each.*judge=None"):
        Comparisons.from_frame(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Comparisons.from_frame(df, judge=None)  # pooled: no warning


# --------------------------------------------------------------------- input edge cases (13.7)
def test_jsonl_lines_that_are_not_objects_are_errors_with_their_line_number(tmp_path):
    path = tmp_path / "x.jsonl"
    good = json.dumps({"judge": "j", "model_a": "x", "model_b": "y", "winner": "model_a"})
    path.write_text(good + "\n\n" + '["j", "x", "y", "model_a"]\n')
    with pytest.raises(DataError, match="line 3: expected one JSON object per line, got a list"):
        Comparisons.from_jsonl(path)
    path.write_text(good + "\n" + '{"judge": "j", "model_a": "x",\n')
    with pytest.raises(DataError, match="line 2: not valid JSON"):
        Comparisons.from_jsonl(path)


def test_invalid_markers_in_a_csv_are_counted_per_judge_not_errors(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("judge,model_a,model_b,winner\n"
                    "j1,x,y,model_a\nj1,y,x,N/A\nj1,x,y,NA\nj1,x,y,null\nj1,x,y,None\n"
                    "j1,x,y,\nj2,x,y,model_b\nj2,y,x,tie\n")
    data = Comparisons.from_csv(path)
    assert data.n_comparisons == 3 and sum(data.rejected.values()) == 5
    assert data.rejected_by_judge == {"j1": 5}
    # a frame with missing verdicts (pandas' NaN) counts them the same way
    frame_nan = pd.read_csv(path)
    assert frame_nan["winner"].isna().sum() == 5
    same = Comparisons.from_frame(frame_nan)
    assert same.rejected_by_judge == {"j1": 5} and same.n_comparisons == 3


def test_empty_names_are_refused_from_a_frame_and_from_a_csv(tmp_path):
    df = frame(judge=["j", "j"], model_a=["", "x"], model_b=["x", "y"], winner=["tie", "tie"])
    with pytest.raises(DataError, match="empty name in column 'model_a'"):
        Comparisons.from_frame(df)
    df.to_csv(tmp_path / "x.csv", index=False)
    with pytest.raises(DataError, match="empty name in column 'model_a'"):
        Comparisons.from_csv(tmp_path / "x.csv")
    with pytest.raises(DataError, match="empty name in column 'judge'"):
        Comparisons.from_frame(df.assign(judge=["  ", "j"], model_a=["z", "x"]))


def test_count_columns_say_which_value_is_wrong():
    df = frame(model_a=["x", "y"], model_b=["y", "x"], n=["5", "five"], wins=[2, 1])
    with pytest.raises(DataError, match=r"row 0: column 'n' holds inf, not a finite number"):
        Comparisons.from_counts(frame(judge=["j"], model_a=["a"], model_b=["b"], n=[np.inf],
                                      wins=[1.0]))  # had said "holds np.float64(inf)"
    with pytest.raises(DataError, match=r"row 1: column 'n' holds 'five', not a finite number"):
        Comparisons.from_counts(df, judge=None)
    with pytest.raises(DataError, match="missing value"):
        Comparisons.from_counts(df.assign(n=[5, None]), judge=None)
    # numeric text is fine (a CSV read as text), and the rows used are counted
    ok = Comparisons.from_counts(df.assign(n=["5", "3"], ties=["0", "1"]), judge=None)
    assert ok.n_comparisons == 8 and ok.rows_used == 2
    assert "2 read, 2 used" in str(ok.summary())


def test_counts_scaled_beyond_float_precision_are_refused():
    df = frame(model_a=["x", "y", "x"], model_b=["y", "z", "z"], n=[10, 10, 10], wins=[6, 5, 7])
    fine = Comparisons.from_counts(df, judge=None)
    with pytest.raises(DataError, match="check their units"):
        Comparisons.from_counts(df.assign(n=df.n * 1e15, wins=df.wins * 1e15), judge=None)
    # large but plausible totals are kept (Chatbot Arena has millions of votes)
    big = Comparisons.from_counts(df.assign(n=df.n * 1e5, wins=df.wins * 1e5), judge=None)
    assert big.n_comparisons == 1e5 * fine.n_comparisons


def test_a_path_given_to_from_frame_gets_a_hint():
    with pytest.raises(DataError, match=r"got the path 'x.csv'.*from_file"):
        Comparisons.from_frame("x.csv")


def test_one_judge_gets_a_singular_word():
    data = Comparisons.from_frame(frame(model_a=["x"], model_b=["y"], winner=["tie"]),
                                  judge=None)
    assert repr(data) == "Comparisons(1 judge, 2 models, 1 cell, 1 comparison)"
    assert str(data.summary()).startswith("1 judge, 2 models, 1 cell, 1 comparison (1 tie)")


# -------------------------------------------------------------------- Arena-ready input (13.12)
def _battles():
    return [
        {"model_a": "gpt-4", "model_b": "claude-1", "winner": "model_a", "judge": "arena_user_1",
         "turn": 1, "anony": True, "language": "English", "tstamp": 1.0},
        {"model_a": "claude-1", "model_b": "vicuna-13b", "winner": "tie (bothbad)",
         "judge": "arena_user_2", "turn": 1, "anony": True, "language": "English"},
        {"model_a": "vicuna-13b", "model_b": "gpt-4", "winner": "model_b", "judge": "arena_user_3",
         "turn": 2, "anony": False, "language": "German"},
        {"model_a": "gpt-4", "model_b": "vicuna-13b", "winner": "both_bad", "judge": "arena_user_1",
         "turn": 1, "anony": True, "language": "English"},
    ]


def test_fastchat_clean_battle_json_array(tmp_path):
    path = tmp_path / "clean_battle_20240101.json"
    path.write_text(json.dumps(_battles(), indent=1))
    data = read_json(path, judge=None)
    assert data.n_judges == 1 and data.n_comparisons == 4 and data.ties.sum() == 2
    c = data.to_frame().set_index(["model_a", "model_b"])
    assert c.loc[("vicuna-13b", "gpt-4"), "wins"] == 0.0
    assert Comparisons.from_file(path, judge=None).n_cells == data.n_cells
    path.write_text(json.dumps([_battles()[0], ["not", "an", "object"]]))
    with pytest.raises(DataError, match="element 1 of the array is a list"):
        Comparisons.from_file(path, judge=None)


def test_fastchat_mt_bench_judgments_with_inconsistent_ties(tmp_path):
    """FastChat's MT-Bench pairwise judgments mark a pair whose two presentation orders
    disagreed 'tie (inconsistent)', a tie to FastChat (it had stopped the read)."""
    rows = [{"question_id": 81, "model_a": "gpt-4", "model_b": "claude-v1", "winner": w,
             "judge": ["gpt-4", "pair-v2"], "turn": 1}
            for w in ("model_a", "tie (inconsistent)", "Tie (Inconsistent)", "model_b")]
    path = tmp_path / "gpt4_pair_judgments.json"
    path.write_text(json.dumps(rows))
    data = Comparisons.from_file(path, cluster="question_id")
    assert data.n_comparisons == 4 and data.ties.sum() == 2 and data.wins.sum() == 2


def test_parquet_and_tables_with_to_pandas(tmp_path):
    pa = pytest.importorskip("pyarrow")
    df = pd.DataFrame(_battles())
    df.to_parquet(tmp_path / "b.parquet")
    from_parquet = read_parquet(tmp_path / "b.parquet", judge=None)
    from_file = Comparisons.from_file(tmp_path / "b.parquet", judge=None)
    table = pa.Table.from_pandas(df)  # anything with .to_pandas(): pyarrow, polars, datasets
    from_table = Comparisons.from_frame(table, judge=None)

    class Frame:  # the protocol, nothing more
        def to_pandas(self):
            return df

    from_protocol = Comparisons.from_frame(Frame(), judge=None)
    for other in (from_file, from_table, from_protocol):
        pd.testing.assert_frame_equal(other.to_frame(), from_parquet.to_frame())
    counts = Comparisons.from_counts(pa.Table.from_pandas(from_parquet.to_frame()))
    assert counts.n_comparisons == 4


def test_kaggle_one_hot_winner_columns():
    df = frame(model_a=["x", "y", "x"], model_b=["y", "z", "z"],
               winner_model_a=[1, 0, 0], winner_model_b=[0, 1, 0], winner_tie=[0, 0, 1])
    data = Comparisons.from_frame(df, judge=None)
    c = data.to_frame().set_index(["model_a", "model_b"])
    assert c.loc[("x", "y"), "wins"] == 1 and c.loc[("y", "z"), "wins"] == 0
    assert c.loc[("x", "z"), "ties"] == 1
    as_text = df.astype(str)  # as a CSV reads them
    pd.testing.assert_frame_equal(Comparisons.from_frame(as_text, judge=None).to_frame(),
                                  data.to_frame())
    with pytest.raises(DataError, match="exactly one 1"):
        Comparisons.from_frame(df.assign(winner_tie=[1, 0, 1]), judge=None)


def test_every_documented_label_is_read_as_documented():
    import hja_bayes.readers as readers
    import hja_bayes.verdicts as verdicts

    assert ":mod:`hja_bayes.verdicts`" in readers.__doc__  # where the labels are listed
    doc = verdicts.__doc__
    for label in sorted(FIRST_LABELS | SECOND_LABELS | TIE_LABELS | INVALID_LABELS - {""}):
        assert f"``{label}``" in doc, label
    labels = sorted(FIRST_LABELS) + sorted(SECOND_LABELS) + sorted(TIE_LABELS)
    df = frame(model_a=["x"] * len(labels), model_b=["y"] * len(labels),
               winner=[lab.upper() for lab in labels])  # any case
    cells = Comparisons.from_frame(df, judge=None).to_frame().iloc[0]
    n_first, n_tie = len(FIRST_LABELS), len(TIE_LABELS)
    assert cells["n"] == len(labels) and cells["ties"] == n_tie
    assert cells["wins"] == n_first + n_tie / 2
    assert ONE_HOT_COLUMNS == ("winner_model_a", "winner_model_b", "winner_tie")


def _read_row_by_row(df, cluster):
    """An independent reading, one row at a time in plain Python: the cells' counts keyed by
    names, judges and items in the order they first appear among the usable rows (items
    among the first-shown, then among the second-shown), prompts likewise, and the
    rejected verdicts by reason and by judge."""
    cells, entries, rejected, by_judge = {}, {}, {}, {}
    judges, first_items, second_items, prompts = {}, {}, {}, {}
    for row in df.itertuples(index=False):
        j, a, b = str(row.judge), str(row.model_a), str(row.model_b)
        w = "" if pd.isna(row.winner) else str(row.winner)
        label = w.strip().lower()
        if w == a:
            kind = 0
        elif w == b:
            kind = 2
        elif label in FIRST_LABELS:
            kind = 0
        elif label in SECOND_LABELS:
            kind = 2
        elif label in TIE_LABELS:
            kind = 1
        else:
            assert label in INVALID_LABELS, w
            reason = ("no verdict (empty or missing)" if not w.strip()
                      else f"no usable verdict ({label!r})")
            rejected[reason] = rejected.get(reason, 0) + 1
            by_judge[j] = by_judge.get(j, 0) + 1
            continue
        judges.setdefault(j, None)
        first_items.setdefault(a, None)
        second_items.setdefault(b, None)
        counts = cells.setdefault((j, a, b), [0.0, 0.0, 0.0])
        counts[kind] += 1
        if cluster:
            q = str(getattr(row, cluster))
            prompts.setdefault(q, None)
            entry = entries.setdefault((q, j, a, b), [0.0, 0.0, 0.0])
            entry[kind] += 1
    items = list(dict.fromkeys([*first_items, *second_items]))
    return (cells, entries, rejected, dict(sorted(by_judge.items())), list(judges), items,
            list(prompts))


@pytest.mark.parametrize("dtype", [object, "string", "names are numbers"])
def test_frames_read_as_a_row_by_row_reading_does(dtype):
    """Random frames mixing every kind of verdict (labels in any case and spacing, item
    names, ties, invalid markers, missing values), a judge with no usable verdict, and
    prompts: the reader (which codes each column once) agrees with a plain row-by-row
    reading on every cell, prompt entry, name order and rejection count."""
    rng = np.random.default_rng(7)
    n, models = 3000, [f"m{i}" for i in range(9)]
    if dtype == "names are numbers":
        models = list(range(100, 109))
    a = rng.integers(0, 9, n)
    b = (a + rng.integers(1, 9, n)) % 9
    judge = rng.choice(["j1", "j2", "j3", "voter 4"], n)
    kinds = rng.integers(0, 12, n)
    labels = np.array(["model_a", " A ", "MODEL_B", "b", "Tie", "draw", "tie (bothbad)",
                       "invalid", "", "N/A"], dtype=object)
    winner = np.empty(n, dtype=object)
    for r in range(n):
        if kinds[r] < 10:
            winner[r] = labels[kinds[r]]
        elif kinds[r] == 10:
            winner[r] = str(models[a[r]] if rng.random() < 0.5 else models[b[r]])
        else:
            winner[r] = None
    winner[judge == "voter 4"] = "invalid"  # a judge with no usable verdict
    df = pd.DataFrame({
        "judge": judge, "model_a": [models[i] for i in a], "model_b": [models[i] for i in b],
        "winner": winner, "question": rng.integers(0, 40, n).astype(str)})
    if dtype == "string":
        df = df.astype({c: "string" for c in ("judge", "model_a", "model_b", "winner")})
    with pytest.warns(DataWarning, match="voter 4"):
        data = Comparisons.from_frame(df, cluster="question")
    cells, entries, rejected, by_judge, judges, items, prompts = _read_row_by_row(
        df, "question")
    assert list(data.judges) == judges and list(data.items) == items
    got = {(data.judges[k], data.items[i], data.items[j]): list(c)
           for k, i, j, c in zip(data.judge, data.first, data.second, data.counts)}
    assert got == cells
    c = data.clusters
    assert list(c.names) == prompts
    got = {(c.names[g], data.judges[data.judge[e]], data.items[data.first[e]],
            data.items[data.second[e]]): list(x) for g, e, x in zip(c.cluster, c.cell, c.counts)}
    assert got == entries
    s = data.summary()
    assert s.rejected == rejected and s.dropped_judges == ("voter 4",)
    assert data.rejected_by_judge == by_judge
    assert s.rows_read == n and s.rows_used == n - sum(rejected.values())


def test_counts_with_a_ties_column_under_another_case_or_with_rates_are_said():
    """A 'Ties' column had been left unread (the ties lost, the summary saying 0), and a win
    rate given as wins read as 0.6 comparisons, both silently."""
    df = frame(judge=["j", "j"], model_a=["x", "y"], model_b=["y", "x"], n=[10, 10],
               wins=[5, 4], Ties=[4, 2])
    with pytest.raises(DataError, match=r"no column 'ties', but 'Ties' looks like it: pass "
                                        r"ties='Ties'"):
        Comparisons.from_counts(df)
    data = Comparisons.from_counts(df, ties="Ties")  # wins count a tie 1/2
    np.testing.assert_allclose(np.asarray(data.counts).sum(axis=0), [3 + 3, 4 + 2, 3 + 5])
    rates = frame(judge=["j"], model_a=["x"], model_b=["y"], n=[10], wins=[0.6], ties=[0])
    with pytest.warns(DataWarning, match=r"1 cell\(s\) hold fractions of a comparison "
                                         r"\(judge 'j', 'x' against 'y'.*rates or shares"):
        Comparisons.from_counts(rates)


def test_a_column_named_twice_is_said_and_the_first_read(tmp_path):
    """A CSV header naming 'winner' twice had read the first silently (pandas renames the
    second 'winner.1'), and a DataFrame so labelled ended in pandas' TypeError."""
    path = tmp_path / "twice.csv"
    path.write_text("judge,model_a,model_b,winner,winner\nj,x,y,model_a,model_b\n"
                    "j,y,x,model_a,model_a\n", encoding="utf-8")
    with pytest.warns(DataWarning, match=r"twice\.csv names column\(s\) \['winner'\] more "
                                         r"than once: the first of each is read"):
        data = Comparisons.from_csv(path)
    np.testing.assert_array_equal(np.asarray(data.counts).sum(axis=0), [2, 0, 0])
    df = pd.DataFrame([["j", "x", "y", "model_a", "model_b"]],
                      columns=["judge", "model_a", "model_b", "winner", "winner"])
    with pytest.warns(DataWarning, match=r"the table names column\(s\) \['winner'\]"):
        assert np.asarray(Comparisons.from_frame(df).counts).tolist() == [[1.0, 0.0, 0.0]]


def test_a_winner_named_unlike_its_model_says_what_differs():
    """Names are matched exactly (labels ignore case); 'Y', ' y ' or a decomposed 'café'
    had been refused without saying that they are the row's model written otherwise (the
    last looked identical in the message)."""
    df = frame(judge=["j"] * 3, model_a=["x", "y", "x"], model_b=["y", "x", "y"],
               winner=["Y", "x", "tie"])
    with pytest.raises(DataError, match=r"differs from the model 'y' only in case.*"
                                        r"\(ascii: 'Y' against 'y'\)"):
        Comparisons.from_frame(df)
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    with pytest.raises(DataError, match=re.escape("ascii: 'cafe\\u0301' against 'caf\\xe9'")):
        Comparisons.from_frame(df.replace({"y": composed, "Y": decomposed}))
    with pytest.raises(DataError) as refused:
        Comparisons.from_frame(df.replace({"Y": "zz"}))  # not a model at all: no such hint
    assert "only in case" not in str(refused.value)


def test_a_missing_verdict_stays_no_verdict_with_other_invalid_markers():
    """invalid_labels replaces the default markers; a missing verdict had then become an
    error shown as winner ''."""
    df = frame(judge=["j"] * 3, model_a=["x", "y", "x"], model_b=["y", "x", "y"],
               winner=[None, "skip", "x"])
    data = Comparisons.from_frame(df, invalid_labels=["skip"])
    assert data.rejected == {"no verdict (empty or missing)": 1, "no usable verdict ('skip')": 1}
    with pytest.raises(DataError, match="winner 'error' is neither"):  # defaults replaced
        Comparisons.from_frame(df.assign(winner=["error", "skip", "x"]), invalid_labels=["skip"])


def test_an_empty_prompt_is_refused_on_a_rejected_row_as_a_missing_one_is(tmp_path):
    """A CSV's empty prompt cell on a row of verdict 'error' had been read (a missing prompt
    there was refused, by the frame readers and the scans alike)."""
    df = frame(judge=["j"] * 3, model_a=["x", "y", "x"], model_b=["y", "x", "y"],
               winner=["x", "error", "tie"], q=["1", "", "2"])
    df.to_csv(tmp_path / "v.csv", index=False)
    for read in (lambda: Comparisons.from_frame(df, cluster="q"),
                 lambda: Comparisons.from_csv(tmp_path / "v.csv", cluster="q"),
                 lambda: Comparisons.from_frame(df.assign(q=["1", None, "2"]), cluster="q")):
        with pytest.raises(DataError, match=r"(row 1|line 3): empty prompt|column 'q' has 1 "
                                            r"missing value.*row\(s\) \[1\]"):
            read()


def test_a_categorical_column_of_one_and_the_text_one_warns_as_an_object_column_does():
    values = [1, "1", "x", "x"]
    rest = dict(judge=["j"] * 4, model_b=["x", "x", "1", "1"],
                winner=["model_a", "model_b", "tie", "model_a"])
    for column in (pd.Series(values, dtype=object), pd.Categorical(values)):
        with pytest.warns(DataWarning, match=r"int '1' and str '1'"):
            data = Comparisons.from_frame(frame(model_a=column, **rest))
        assert data.items == ("1", "x")


def test_inconsistent_or_empty_counts_say_their_values():
    df = frame(judge=["j", "j"], model_a=["x", "y"], model_b=["y", "x"], n=[3, 2],
               wins=[3, 1], ties=[2, 0])
    with pytest.raises(DataError, match=r"row 0: need ties <= n .* got n = 3, wins = 3, "
                                        r"ties = 2 \(1 such rows\)"):
        Comparisons.from_counts(df)
    with pytest.raises(DataError, match=r"every row has n == 0 \(2 rows\)"):
        Comparisons.from_counts(df.assign(n=[0, 0], wins=[0, 0], ties=[0, 0]))
