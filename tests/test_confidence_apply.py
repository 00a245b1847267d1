"""Applying a saved confidence ranker: to a named source's CSV, to its own judge only, and
with the feature columns it takes said aloud (the command line and the pipeline)."""

import json

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.cli import main
from hja_bayes.confidence.pipeline import features_for_apply, read_confidence_source
from hja_bayes.errors import DataError, ParameterError

from .conftest import SHARED_DATA, shared_data_or_skip

QUICK = ["--epochs", "2", "--pairs", "256", "--alpha", "0.3", "--quiet"]


def _error_line(capsys) -> str:
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip() and not x.startswith("[")]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture(scope="module")
def te_ranker(tmp_path_factory):
    """A ranker trained on Trust-or-Escalate's gpt-4-turbo (quick settings)."""
    shared_data_or_skip("trust_or_escalate", "calibration_judge_probs.csv")
    folder = tmp_path_factory.mktemp("te") / "rk"
    assert main(["confidence", "train", "trust_or_escalate", "--data-dir", str(SHARED_DATA),
                 "--out", str(folder), *QUICK]) == 0
    return folder


def test_a_trust_or_escalate_ranker_applies_to_a_csv_of_the_release(te_ranker, tmp_path, capsys):
    """It had ended in "hja-bayes: error: 'columns'" (a KeyError: the saved spec of a named
    source has no columns); a CSV in the release's layout is now scored as the source is."""
    release = pd.read_csv(SHARED_DATA / "trust_or_escalate" / "calibration_judge_probs.csv")
    rows = release.iloc[:120].copy()
    rows.loc[rows.index % 3 == 0, "human_preference"] = np.nan  # labels for some rows only
    rows.to_csv(tmp_path / "new.csv", index=False)
    assert main(["confidence", "apply", str(te_ranker), str(tmp_path / "new.csv"),
                 "--data-dir", str(SHARED_DATA), "--out", str(tmp_path / "scored.csv")]) == 0
    out, err = capsys.readouterr()
    assert "of the 80 with a human label" in out
    assert "p_output1__gpt-4-turbo" in err  # the columns it took, said on stderr
    scored = pd.read_csv(tmp_path / "scored.csv")
    ranker = hb.confidence.load_ranker(te_ranker)
    data = hb.confidence.load_trust_or_escalate_confidence("gpt-4-turbo", SHARED_DATA)
    assert np.allclose(scored["confidence"], ranker.predict_confidence(data.features[:120]),
                       rtol=0, atol=1e-12)
    assert np.array_equal(scored["verdict"], data.verdict[:120])
    # the file's other columns lead, the probabilities the ranker read are left out
    assert list(scored.columns[:2]) == ["example_id", "human_preference"]
    assert not any(c.startswith("p_output") for c in scored.columns)
    labelled = rows["human_preference"].notna().to_numpy()
    assert scored["agree"].isna().sum() == 40
    assert np.array_equal(scored["agree"][labelled].astype(bool), data.agree[:120][labelled])
    # a CSV that lacks those columns is told what it must hold
    probs = pd.DataFrame({"p_a": release["p_output1__gpt-4-turbo"], "human": release["human_preference"]})
    probs.to_csv(tmp_path / "probs.csv", index=False)
    assert main(["confidence", "apply", str(te_ranker), str(tmp_path / "probs.csv")]) == 2
    line = _error_line(capsys)
    assert line.startswith("hja-bayes: error: ") and "'columns'" not in line
    assert "trust_or_escalate" in line and "p_output2__mistral-7b-instruct" in line


def test_a_prd_ranker_refuses_a_csv_and_says_why(tmp_path):
    pd.DataFrame({"p": [0.2, 0.9], "human": [1, 2]}).to_csv(tmp_path / "probs.csv", index=False)
    with pytest.raises(DataError, match=r"bundled:prd_vicuna80.*apply it to bundled:prd_vicuna80"):
        features_for_apply({"kind": "bundled:prd_vicuna80", "judge": "gpt4"}, str(tmp_path / "probs.csv"))
    with pytest.raises(DataError, match=r"trained on a CSV of probabilities.*columns \['p'\]"):
        features_for_apply({"kind": "probability_table", "columns": ["p"], "human_col": "human",
                            "judge": "probs"}, "bundled:prd_vicuna80")


def test_apply_refuses_a_judge_the_ranker_was_not_trained_for(te_ranker, tmp_path, capsys):
    """--judge had been ignored: the judge the ranker was trained for was scored instead."""
    assert main(["confidence", "apply", str(te_ranker), "trust_or_escalate", "--data-dir",
                 str(SHARED_DATA), "--judge", "mistral-7b-instruct",
                 "--out", str(tmp_path / "m.csv")]) == 2
    line = _error_line(capsys)
    assert "trained for judge 'gpt-4-turbo'" in line and "--judge mistral-7b-instruct" in line
    assert not (tmp_path / "m.csv").exists()
    with pytest.raises(ParameterError, match="trained for judge 'gpt-4-turbo'"):
        features_for_apply({"kind": "trust_or_escalate", "judge": "gpt-4-turbo"}, "trust_or_escalate",
                           judge="gpt-3.5-turbo", data_dir=SHARED_DATA)
    # naming the ranker's own judge is fine
    assert main(["confidence", "apply", str(te_ranker), "trust_or_escalate", "--data-dir",
                 str(SHARED_DATA), "--judge", "gpt-4-turbo", "--quiet",
                 "--out", str(tmp_path / "g.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "g.csv")) == 500


def _probabilities(path, n=400, seed=3, **extra):
    sim = hb.confidence.simulate_confidence_data(n, 2, seed=seed, orient=False).data
    frame = pd.DataFrame(sim.features, columns=["p1", "p2"]).assign(human=sim.human, **extra)
    frame.to_csv(path, index=False)
    return frame


def test_a_column_of_zeros_and_ones_is_not_taken_for_probabilities(tmp_path):
    """A 0/1 column (here whether the judge was right: a leak) had been used as a judge's
    probability, silently."""
    frame = _probabilities(tmp_path / "leak.csv")
    sim = hb.confidence.from_probability_table(frame[["p1", "p2"]], frame["human"])
    frame.assign(correct=sim.agree.astype(int)).to_csv(tmp_path / "leak.csv", index=False)
    with pytest.raises(DataError, match=r"column\(s\) \['correct'\] hold only 0 and 1.*drop"):
        read_confidence_source(str(tmp_path / "leak.csv"))
    data = read_confidence_source(str(tmp_path / "leak.csv"), group_col="correct")
    assert data.feature_names == ("p1", "p2")


def test_the_columns_taken_as_features_are_said(tmp_path, capsys):
    _probabilities(tmp_path / "probs.csv", ticket=[f"t{i}" for i in range(400)])
    assert main(["confidence", str(tmp_path / "probs.csv"), "--out", str(tmp_path / "one"),
                 *QUICK[:-1]]) == 2  # an id column is refused in training, and named
    assert "['ticket']" in _error_line(capsys)
    _probabilities(tmp_path / "probs.csv")
    assert main(["confidence", str(tmp_path / "probs.csv"), "--out", str(tmp_path / "one"),
                 *QUICK[:-1]]) == 0
    assert "features: p1, p2" in capsys.readouterr().err
    assert json.loads((tmp_path / "one" / "confidence.json").read_text())["features"] == ["p1", "p2"]
    assert main(["confidence", "train", str(tmp_path / "probs.csv"), "--out", str(tmp_path / "rk"),
                 *QUICK[:-1]]) == 0
    assert "features: p1, p2" in capsys.readouterr().err
    # apply reads the ranker's columns and carries the file's others (ids and all) along
    _probabilities(tmp_path / "new.csv", n=50, seed=4, ticket=[f"t{i}" for i in range(50)])
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "new.csv")]) == 0
    assert "features: p1, p2 (the columns the ranker was trained on)" in capsys.readouterr().err
    assert list(pd.read_csv(tmp_path / "rk" / "applied.csv").columns[:2]) == ["human", "ticket"]
    # a new file's labels under another name are read where named (--human-col had been
    # ignored by apply: no agreement, silently); a named column must exist
    frame = pd.read_csv(tmp_path / "new.csv").rename(columns={"human": "label"})
    frame.to_csv(tmp_path / "renamed.csv", index=False)
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "renamed.csv"),
                 "--quiet"]) == 0
    assert "agreement among" not in capsys.readouterr().out
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "renamed.csv"),
                 "--human-col", "label", "--quiet", "--out", str(tmp_path / "l.csv")]) == 0
    labelled = pd.read_csv(tmp_path / "l.csv")
    assert "agreement among trusted" in capsys.readouterr().out
    verdict = np.where(frame[["p1", "p2"]].mean(axis=1) >= 0.5, 1, 2)
    assert np.array_equal(labelled["agree"].astype(bool), verdict == frame["label"])
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "renamed.csv"),
                 "--human-col", "labels"]) == 2
    assert "no column 'labels'" in _error_line(capsys)
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "renamed.csv"),
                 "--group-col", "ticket"]) == 2
    assert "--group-col" in _error_line(capsys)


def test_options_a_form_does_not_use_are_refused_and_clashing_columns_kept(tmp_path, capsys):
    """apply had ignored --alpha (and the training options) and train --train-fraction,
    silently; apply had dropped a file's own 'verdict' column for the scored one."""
    _probabilities(tmp_path / "probs.csv")
    assert main(["confidence", "train", str(tmp_path / "probs.csv"), "--out", str(tmp_path / "rk"),
                 *QUICK]) == 0
    assert main(["confidence", "train", str(tmp_path / "probs.csv"), "--out", str(tmp_path / "r2"),
                 "--train-fraction", "0.6", *QUICK]) == 2
    assert "does not use --train-fraction" in _error_line(capsys)
    for option in (["--alpha", "0.01"], ["--delta", "0.2"], ["--epochs", "3"], ["--seed", "1"],
                   ["--no-posterior"]):
        assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "probs.csv"),
                     *option]) == 2
        assert f"does not use {option[0]}" in _error_line(capsys)
    frame = _probabilities(tmp_path / "new.csv", n=30, seed=4, verdict=["A"] * 30)
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "new.csv"),
                 "--quiet"]) == 0
    assert "warning: the file's own column(s) ['verdict'] are written as ['verdict_input']" \
        in capsys.readouterr().err
    scored = pd.read_csv(tmp_path / "rk" / "applied.csv")
    assert list(scored["verdict_input"]) == list(frame["verdict"])
    assert set(scored["verdict"]) <= {1, 2}


def test_column_names_for_a_named_source_are_refused(te_ranker, tmp_path, capsys):
    """A named source carries its own labels and groups: --human-col and --group-col had been
    ignored by train (and by apply's --human-col, whose check came after the source was
    read)."""
    data = ["--data-dir", str(SHARED_DATA), "--quiet"]
    assert main(["confidence", "train", "trust_or_escalate", "--group-col", "foo",
                 "--out", str(tmp_path / "x"), *data, *QUICK]) == 2
    assert "trust_or_escalate carries its own human labels and groups: --group-col" in \
        _error_line(capsys)
    assert main(["confidence", "apply", str(te_ranker), "trust_or_escalate", "--human-col",
                 "foo", *data]) == 2
    assert "carries its own human labels" in _error_line(capsys)
