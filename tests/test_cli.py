"""The hja-bayes command line: demo, fit, report, and one-line errors with exit code 2."""

import subprocess
import sys
from pathlib import Path

import pytest

import hja_bayes as hb
from hja_bayes.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hja_bayes", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or ROOT)


def test_demo_writes_the_report(tmp_path):
    # the README's demo picks the rank by BIC (it picks 0); a fixed rank keeps the test quick
    out = run("demo", "--rank", "0", "--out", tmp_path / "rep")
    assert out.returncode == 0, out.stderr
    assert "gpt4" in out.stdout and "Leaderboard" in out.stdout and "Judges" in out.stdout
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert 'id="leaderboard"' in html and 'id="judges"' in html
    assert "data:image/png;base64," in html
    assert "[" in out.stderr and "done" in out.stderr  # progress on stderr


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=5)
    rows = data.to_frame()
    lines = ["grader,first,second,verdict"]
    for _, r in rows.iterrows():
        first_wins = int(round(r["wins"]))
        lines += [f"{r['judge']},{r['model_a']},{r['model_b']},model_a"] * first_wins
        lines += [f"{r['judge']},{r['model_a']},{r['model_b']},model_b"] * (int(r["n"]) - first_wins)
    path = tmp_path_factory.mktemp("data") / "votes.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_fit_then_report(csv_file, tmp_path, capsys):
    assert main(["fit", str(csv_file), "--judge-col", "grader", "--model-a-col", "first",
                 "--model-b-col", "second", "--winner-col", "verdict", "--rank", "0",
                 "--position-bias", "--out", str(tmp_path / "fit"), "--quiet"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and "Leaderboard" in out.out
    fit = hb.load_fit(tmp_path / "fit")
    assert fit.rank == 0 and fit.position_bias and len(fit.judges) == 3
    assert main(["report", str(tmp_path / "fit"), "--scale", "elo", "--title", "votes",
                 "--quiet"]) == 0
    assert (tmp_path / "fit" / "report" / "report.html").exists()
    assert "Elo" in (tmp_path / "fit" / "report" / "report.md").read_text(encoding="utf-8")


def test_bad_input_in_a_process_is_one_line_and_exit_2():
    out = run("fit", "no/such/file.csv")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = [x for x in out.stderr.splitlines() if not x.startswith("[")]  # progress lines
    assert lines == ["hja-bayes: error: no such file: no/such/file.csv "
                                               "(or use one of ['bundled:prd_vicuna80'])"]


@pytest.mark.parametrize("args, message", [
    (("demo", "--level", "2"), "level"),
    (("fit", "{csv}", "--judge-col", "nope"), "not found"),
    (("fit", "{csv}", "--rank", "many"), "rank"),
    (("fit", "{csv}", "--counts"), "not found"),
    (("report", "{tmp}"), "no saved fit"),
    (("confidence", "{tmp}/none.csv"), "no such file"),
    (("confidence", "apply", "{tmp}"), "usage"),
    (("confidence", "apply", "{tmp}", "bundled:prd_vicuna80"), "no saved confidence ranker"),
    (("confidence", "train", "bundled:prd_vicuna80"), "--out"),
    (("frobnicate",), "invalid choice"),
])
def test_bad_input_one_line_error_exit_2(args, message, csv_file, tmp_path, capsys):
    args = [a.format(csv=csv_file, tmp=tmp_path) for a in args]
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("[")]
    assert len(lines) == 1 and message in lines[0], err


def test_confidence_trains_certifies_and_applies(tmp_path, capsys):
    import json

    assert main(["confidence", "bundled:prd_vicuna80", "--epochs", "2", "--pairs", "256",
                 "--alpha", "0.3", "--out", str(tmp_path), "--quiet"]) == 0
    summary = json.loads((tmp_path / "confidence.json").read_text())
    assert summary["judge"] == "gpt4" and summary["n_test"] > 0
    assert summary["n_train"] + summary["n_calibration"] + summary["n_test"] == 744
    assert 0.0 <= summary["test_coverage"] <= 1.0 and 0.0 <= summary["test_auroc"] <= 1.0
    assert "split by group" in capsys.readouterr().out
    assert main(["confidence", "bundled:prd_vicuna80", "--alpha", "1.5"]) == 2


def _probability_csv(path, n, seed):
    """A CSV of three prompts' raw probabilities of response 1, human labels and groups."""
    import pandas as pd

    sim = hb.confidence.simulate_confidence_data(n, 3, seed=seed, orient=False).data
    frame = pd.DataFrame(sim.features, columns=["p1", "p2", "p3"])
    frame["human"] = sim.human
    frame["question"] = [f"q{i // 4}" for i in range(n)]
    frame.to_csv(path, index=False)
    return sim


def test_confidence_train_then_apply_a_saved_ranker(tmp_path, capsys):
    import json

    import numpy as np
    import pandas as pd

    _probability_csv(tmp_path / "cal.csv", 800, 1)
    new = _probability_csv(tmp_path / "new.csv", 300, 2)
    assert main(["confidence", "train", str(tmp_path / "cal.csv"), "--group-col", "question",
                 "--epochs", "3", "--pairs", "512", "--alpha", "0.3", "--out", str(tmp_path / "rk"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "100 groups" in out and "400 calibration" in out  # group-level test on half of 200 groups
    meta = json.loads((tmp_path / "rk" / "ranker.json").read_text())
    assert meta["certificate"]["grouped"] and meta["extra"]["features"]["columns"] == ["p1", "p2", "p3"]
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "new.csv"), "--quiet",
                 "--out", str(tmp_path / "scored.csv")]) == 0
    assert "trusted" in capsys.readouterr().out
    scored = pd.read_csv(tmp_path / "scored.csv")
    ranker = hb.confidence.load_ranker(tmp_path / "rk")
    # the CLI rebuilt the oriented features exactly as training did
    oriented = hb.confidence.from_probability_table(new.features, new.human).features
    assert np.allclose(scored["confidence"], ranker.predict_confidence(oriented), rtol=0, atol=1e-12)
    assert np.array_equal(scored["agree"], new.agree) and np.array_equal(scored["verdict"], new.verdict)
    threshold = meta["certificate"]["threshold"]
    assert np.array_equal(scored["trusted"], scored["confidence"] >= threshold if threshold is not None else False)
    # new data without human labels: scored all the same
    pd.read_csv(tmp_path / "new.csv").drop(columns="human").to_csv(tmp_path / "unlabelled.csv", index=False)
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "unlabelled.csv"), "--quiet"]) == 0
    again = pd.read_csv(tmp_path / "rk" / "applied.csv")
    assert "agree" not in again and np.allclose(again["confidence"], scored["confidence"], rtol=0, atol=1e-12)
