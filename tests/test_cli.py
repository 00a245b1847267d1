"""The hja-bayes command line: demo, fit, report, and one-line errors with exit code 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
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
    # --quiet keeps the warning that no prompt column was named or recognised
    assert out.err.startswith("hja-bayes: warning: no prompt column named (--cluster-col)")
    assert len(out.err.splitlines()) == 1 and "Leaderboard" in out.out
    fit = hb.load_fit(tmp_path / "fit")
    assert fit.rank == 0 and fit.position_bias and len(fit.judges) == 3
    assert main(["report", str(tmp_path / "fit"), "--scale", "elo", "--title", "votes",
                 "--quiet"]) == 0
    assert (tmp_path / "fit" / "report" / "report.html").exists()
    assert "Elo" in (tmp_path / "fit" / "report" / "report.md").read_text(encoding="utf-8")
    assert (tmp_path / "fit" / "report" / "pairwise.csv").exists()  # 4 models: by default
    assert main(["report", str(tmp_path / "fit"), "--no-pairwise", "--quiet"]) == 0
    assert not (tmp_path / "fit" / "report" / "pairwise.csv").exists()


def test_a_second_fit_into_a_folder_says_it_replaces_the_first(csv_file, tmp_path, capsys):
    args = ["fit", str(csv_file), "--judge-col", "grader", "--model-a-col", "first",
            "--model-b-col", "second", "--winner-col", "verdict", "--rank", "0",
            "--out", str(tmp_path / "fit")]
    for replaced in (False, True):
        assert main(args) == 0
        saved = [line for line in capsys.readouterr().err.splitlines() if "saved the fit" in line]
        assert len(saved) == 1
        assert saved[0].endswith("replacing the fit saved there before") is replaced


def test_a_verdict_scale_below_zero_is_read_as_the_options_value(tmp_path, capsys):
    # "--verdict-scale -2..2" (the help's own example) starts with a minus sign, which
    # argparse would take for an option of its own
    rng = np.random.default_rng(3)
    lines = ["judge,model_a,model_b,question_id,winner"]
    for q in range(60):
        for k in ("j1", "j2"):
            a, b = rng.choice(["m0", "m1", "m2"], 2, replace=False)
            lines.append(f"{k},{a},{b},q{q},{rng.integers(-2, 3)}")
    path = tmp_path / "ordered.csv"
    path.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(path), "--verdict-scale", "-2..2", "--rank", "0",
                 "--out", str(tmp_path / "fit")]) == 0
    assert "ordered verdicts on 5 levels" in capsys.readouterr().out
    assert hb.load_fit(tmp_path / "fit").outcome == "ordinal"
    # an update reads the new verdicts on the fit's scale without being told it again
    assert main(["update", str(tmp_path / "fit"), str(path),
                 "--out", str(tmp_path / "fit2"), "--quiet"]) == 0
    updated = hb.load_fit(tmp_path / "fit2")
    assert updated.data.n_comparisons == 240 and updated.data.categories == tuple("210") + (
        "-1", "-2")


def test_too_few_prompts_for_rank_intervals_leave_them_empty_and_say_why_once(
        tmp_path, capsys):
    """4 models need G - 1 >= 3 prompts' worth of rank for the joint rank intervals: with 2
    prompts the fit, its score intervals and its report still come, the rank intervals and
    tiers empty, said once although the terminal and the report both make the table."""
    rng = np.random.default_rng(4)
    lines = ["judge,model_a,model_b,question_id,winner"]
    for q in ("q1", "q2"):
        for _ in range(40):
            a, b = rng.choice(["m0", "m1", "m2", "m3"], 2, replace=False)
            lines.append(f"j{rng.integers(2)},{a},{b},{q},{rng.choice(['model_a', 'model_b'])}")
    path = tmp_path / "two_prompts.csv"
    path.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(path), "--rank", "0", "--quiet", "--report",
                 "--out", str(tmp_path / "a")]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("rank at most G - 1 = 1") == 1
    assert "tiers are left empty" in captured.err
    rows = [line.split() for line in captured.out.splitlines()
            if line.split()[:1] in (["m0"], ["m1"], ["m2"], ["m3"])]
    assert len(rows) == 4 and all(row[6:8] == ["-", "-"] and row[9] == "-" for row in rows)
    report = (tmp_path / "a" / "report" / "report.md").read_text()
    assert "There are no tiers or rank intervals" in report
    assert "There are no joint rank intervals or tiers" in report  # the few-prompts note
    assert "shaded by tier" not in (tmp_path / "a" / "report" / "report.html").read_text()
    board = json.loads((tmp_path / "a" / "report" / "leaderboard.json").read_text())
    assert board["meta"]["joint_refusal"].startswith("the scores of 4 models make 3 free")
    assert all(row["rank_lower"] is None and row["score_lower"] < row["score_upper"]
               for row in board["rows"])
    assert main(["fit", str(path), "--rank", "0", "--quiet", "--cluster-col", "-",
                 "--out", str(tmp_path / "b")]) == 0
    assert "left empty" not in capsys.readouterr().err


def test_how_ties_count_is_said_by_the_fit_not_by_the_data(tmp_path, capsys):
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr()
    assert "(781 ties)" in out.out + out.err
    assert "ties counted 1/2 to each side; --outcome davidson" in out.err
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--outcome", "davidson",
                 "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr()
    assert "counted 1/2" not in out.out + out.err and "outcome davidson" in out.err


def test_agreement_is_printed_saved_in_the_json_and_reported(csv_file, tmp_path, capsys):
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--agreement", "gpt4",
                 "--format", "json", "--quiet", "--out", str(tmp_path / "f")]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = hb.agreement(hb.load_fit(tmp_path / "f").data, reference="gpt4")
    rows = out["agreement"]["alpha"]["rows"]
    np.testing.assert_allclose([r["alpha"] for r in rows], expected.alpha["alpha"])
    assert [r["judge"] for r in out["agreement"]["reference"]["rows"]] == \
        list(expected.reference["judge"])
    assert main(["report", str(tmp_path / "f"), "--agreement", "--quiet"]) == 0
    html = (tmp_path / "f" / "report" / "report.html").read_text(encoding="utf-8")
    assert "Krippendorff" in html and "Pairs of judges" in html
    assert main(["fit", "bundled:prd_vicuna80", "--agreement", "nobody", "--quiet",
                 "--out", str(tmp_path / "g")]) == 2
    assert "no such judge" in capsys.readouterr().err and not (tmp_path / "g").exists()
    assert main(["fit", str(csv_file), "--judge-col", "grader", "--model-a-col", "first",
                 "--model-b-col", "second", "--winner-col", "verdict", "--agreement",
                 "--quiet", "--out", str(tmp_path / "h")]) == 2
    assert "--agreement needs the prompt" in capsys.readouterr().err


def test_bad_input_in_a_process_is_one_line_and_exit_2():
    out = run("fit", "no/such/file.csv")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = [x for x in out.stderr.splitlines() if not x.startswith("[")]  # progress lines
    assert lines == ["hja-bayes: error: no such file: no/such/file.csv (or use one of "
                     "['bundled:prd_vicuna80'], or - for standard input)"]


@pytest.mark.parametrize("args, message", [
    (("demo", "--level", "2"), "level"),
    # every missing column in one message (this file names its models and verdicts otherwise)
    (("fit", "{csv}", "--judge-col", "nope"), "['nope', 'model_a', 'model_b', 'winner'] not "
                                              "found"),
    (("fit", "{csv}"), "--judge-col -"),
    (("fit", "{csv}", "--rank", "many"), "rank"),
    (("fit", "{csv}", "--judge-col", "grader", "--counts"), "not found"),
    # an abbreviation had been taken for another option (--ties for --ties-col), and count
    # columns without --counts ignored: both a fit of another model, exit 0
    (("fit", "{csv}", "--judge-col", "grader", "--ties", "davidson"), "unrecognized arguments"),
    (("fit", "{csv}", "--judge-col", "grader", "--wins-col", "w"), "--wins-col name count "
                                                                   "columns: add --counts"),
    # the arena style is on the Elo scale: an explicit logit had printed Elo all the same
    (("fit", "{csv}", "--judge-col", "grader", "--style", "arena", "--scale", "logit"),
     "--style arena is on the Elo scale"),
    (("categories", "{csv}", "--by", "grader", "--scale", "logit"), "--style default --scale "
                                                                     "logit for the logit scale"),
    (("fit", "{csv}", "--judge-col", "grader", "--title", "T"), "--title is the report's"),
    # a bad --out is said before the fit (it had been said after sampling), "-" is no folder
    (("fit", "{csv}", "--bayes", "--out", "{csv}"), "exists and is not a folder"),
    (("fit", "{csv}", "--out", "-"), "not standard output"),
    (("update", "{tmp}", "{csv}", "--out", "{csv}/x"), "cannot be written to"),
    (("fit", "{csv}", "--bayes", "--samples", "0"), "--samples"),
    (("fit", "{csv}", "--chains", "-1"), "--chains"),
    (("fit", "{csv}", "--bayes", "--prompt-effects", "maybe"), "invalid choice"),
    (("fit", "{csv}", "--bayes", "--gamma-scale", "0"), "a positive number or 'empirical'"),
    (("report", "{tmp}"), "no saved fit"),
    (("report", "{tmp}/absent"), "no such folder"),
    (("report", "{csv}"), "is a file, not a folder"),  # had said "no such folder"
    (("confidence", "{tmp}/none.csv"), "no such file"),
    (("plan", "--scores", "{tmp}/none.csv"), "no such file: "),  # had been a bare [Errno 2]
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
    out = capsys.readouterr().out
    assert "split by group" in out
    # the misranking bounds (the CLI had reported neither): the deployed score's on disjoint
    # test pairs, one example per question, is the exact binomial upper bound of its count
    from scipy import stats

    held, gibbs = summary["test_misranking_bound"], summary["gibbs_pac_bayes_bound"]
    rows = pd.read_csv(tmp_path / "test_predictions.csv")
    agree = rows["agree"].astype(bool)
    assert 1 <= held["pairs"] <= min(agree.sum(), (~agree).sum())
    assert held["bound"] == pytest.approx(
        stats.beta.ppf(0.95, held["misranked"] + 1, held["pairs"] - held["misranked"]))
    assert 0.0 < gibbs["bound"] <= 1.0 and gibbs["kl"] > 0 and gibbs["level"] == 0.94
    assert f"at most {held['bound']:.3f} ({held['misranked']} of {held['pairs']}" in out
    assert f"at 94%: at most {gibbs['bound']:.3f}" in out
    assert main(["confidence", "bundled:prd_vicuna80", "--alpha", "1.5"]) == 2
    # a ranker trained on the bundled set, applied to it: its rows named as the one-shot
    # run's (they had been verdict, confidence, trusted, agree alone)
    from hja_bayes.confidence.pipeline import read_confidence_source

    assert main(["confidence", "train", "bundled:prd_vicuna80", "--epochs", "2", "--pairs",
                 "256", "--alpha", "0.3", "--out", str(tmp_path / "rk"), "--quiet"]) == 0
    assert main(["confidence", "apply", str(tmp_path / "rk"), "bundled:prd_vicuna80",
                 "--quiet"]) == 0
    applied = pd.read_csv(tmp_path / "rk" / "applied.csv")
    data = read_confidence_source("bundled:prd_vicuna80", judge="gpt4")
    assert list(applied.columns[:3]) == ["example", "group", "verdict"]
    assert applied["example"].tolist() == list(range(data.n))
    assert applied["group"].astype(str).tolist() == [str(g) for g in data.groups]
    assert (applied["verdict"] == data.verdict).all()


def test_version_and_help_are_plain_text_with_examples(capsys):
    from hja_bayes import __version__

    for argv in (["--version"], ["--help"], ["fit", "--help"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"hja-bayes {__version__}" in out
    assert "``" not in out and "::" not in out and ":func:" not in out  # no RST markup
    assert out.count("examples:") >= 2 and "hja-bayes fit votes.csv" in out
    for label in ("model_a", "both_bad", "tie (bothbad)", "winner_model_a", "n/a"):
        assert label in out, label


def test_rank_is_read_in_any_case():
    from hja_bayes.cli.common import rank_arg

    assert rank_arg("BIC") == "bic" and rank_arg("Cv") == "cv" and rank_arg("2") == 2


def test_prompt_effects_are_read_before_any_fitting():
    """``--prompt-effects``: what the sampler is given and what it will do, decided from the
    data before the MAP is fitted."""
    from argparse import Namespace

    from hja_bayes.cli.panel import prompt_effects_of

    data, _ = hb.simulate(3, 4, 1, 60, seed=1, questions=10)
    plain, _ = hb.simulate(3, 4, 1, 60, seed=1)
    assert prompt_effects_of(data, Namespace(bayes=False, prompt_effects="auto")) is None
    asked, method, why = prompt_effects_of(data, Namespace(bayes=True, prompt_effects="auto"))
    assert asked is None and method == "sampled" and "answer effects" in why
    assert prompt_effects_of(data, Namespace(bayes=True, prompt_effects="integrated"))[:2] == \
        ("integrated", "integrated")
    assert prompt_effects_of(data, Namespace(bayes=True, prompt_effects="none"))[:2] == \
        (False, False)
    assert prompt_effects_of(plain, Namespace(bayes=True, prompt_effects="auto"))[:2] == \
        (None, False)


def test_prompt_effects_without_prompts_are_refused_before_the_fit(csv_file, capsys):
    assert main(["fit", str(csv_file), "--judge-col", "grader", "--model-a-col", "first",
                 "--model-b-col", "second", "--winner-col", "verdict", "--bayes",
                 "--prompt-effects", "integrated"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == ("hja-bayes: error: --prompt-effects integrated "
                                            "needs prompts: name their column with --cluster-col")
    assert "fitting" not in err


def test_the_gamma_scale_reaches_the_sampler(monkeypatch, capsys):
    import hja_bayes.bayes

    seen = []

    def fake(*args, priors, **kwargs):
        seen.append(priors.gamma_scale)
        raise hb.DataError("stopped here")

    monkeypatch.setattr(hja_bayes.bayes, "sample_hja", fake)
    for given, wanted in ((["--gamma-scale", "empirical"], "empirical"), ([], 1.0),
                          (["--gamma-scale", "0.4"], 0.4)):
        assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--bayes", "--quiet",
                     "--cluster-col", "-", *given]) == 2
        assert "stopped here" in capsys.readouterr().err and seen[-1] == wanted


def test_samples_are_checked_before_any_work(csv_file, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(csv_file), "--judge-col", "grader", "--bayes", "--samples", "0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "reading" not in err and "fitting" not in err  # refused before reading the data


def test_a_table_style_mistaken_for_style_control_points_to_it(csv_file, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(csv_file), "--judge-col", "grader", "--style", "length"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "not a leaderboard style" in err and "use --style-control length" in err
    assert "reading" not in err


def test_fit_reads_stdin_and_prints_json(csv_file, tmp_path, monkeypatch, capsys):
    import io
    import json

    import pandas as pd

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(csv_file.read_bytes())))
    assert main(["fit", "-", "--judge-col", "grader", "--model-a-col", "first",
                 "--model-b-col", "second", "--winner-col", "verdict", "--rank", "0",
                 "--format", "json", "--style", "arena", "--out", str(tmp_path / "fit"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    result = json.loads(out)  # stdout holds the JSON and nothing else
    assert set(result) == {"data", "fit", "leaderboard", "judges", "warnings"}
    # JSON Lines with a byte-order mark on stdin: recognised as JSON (had been read as CSV)
    rows = pd.read_csv(csv_file).to_json(orient="records", lines=True).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf" + rows)))
    assert main(["fit", "-", "--judge-col", "grader", "--model-a-col", "first",
                 "--model-b-col", "second", "--winner-col", "verdict", "--rank", "0",
                 "--format", "json", "--out", str(tmp_path / "fit2"), "--quiet"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["data"] == result["data"]
    assert result["data"]["n_judges"] == 3 and result["fit"]["rank"] == 0
    board = result["leaderboard"]
    assert board["meta"]["style"] == "arena" and board["meta"]["cov_type"] == "fisher"
    assert {"rating", "rating_lower", "rating_upper", "variance", "num_battles",
            "rank_ub"} <= set(board["rows"][0])
    assert result["judges"]["meta"]["table"] == "judges"


def test_text_output_has_no_nan(csv_file, tmp_path, capsys):
    assert main(["fit", str(csv_file), "--judge-col", "grader", "--model-a-col", "first",
                 "--model-b-col", "second", "--winner-col", "verdict", "--rank", "0",
                 "--out", str(tmp_path / "fit"), "--quiet", "--scale", "elo",
                 "--baseline", "item0=1200"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and "nan" not in out
    board = out.split("Leaderboard")[1].split("Judges")[0]
    assert "1200.000" in board and "-" in board.splitlines()[-2]  # last P(better than next)


def test_the_report_pins_the_baseline_the_terminal_pinned(csv_file, tmp_path, capsys,
                                                           monkeypatch):
    # `fit --baseline --report` had printed the pinned scores and written unpinned ones to
    # the report; `report` had no --baseline
    import pandas as pd

    fit_dir = tmp_path / "fit"
    assert main(["fit", str(csv_file), "--judge-col", "grader", "--model-a-col", "first",
                 "--model-b-col", "second", "--winner-col", "verdict", "--rank", "0",
                 "--out", str(fit_dir), "--quiet", "--scale", "elo", "--baseline",
                 "item0=1200", "--report"]) == 0
    printed = capsys.readouterr().out.split("Leaderboard")[1].split("Judges")[0]
    written = pd.read_csv(fit_dir / "report" / "leaderboard.csv").set_index("model")
    assert written.loc["item0", ["score", "score_lower", "score_upper"]].tolist() == [1200] * 3
    for model, row in written.iterrows():
        assert f"{model} {row['score']:.3f}" in " ".join(printed.split())
    assert "item0 is pinned at 1200" in (fit_dir / "report" / "report.html").read_text()
    assert main(["report", str(fit_dir), "--scale", "elo", "--baseline", "item1=1000",
                 "--out", str(tmp_path / "again"), "--quiet"]) == 0
    again = pd.read_csv(tmp_path / "again" / "leaderboard.csv").set_index("model")
    np.testing.assert_allclose(again["score"] - again.loc["item1", "score"],
                               written["score"] - written.loc["item1", "score"])
    assert again.loc["item1", "score"] == 1000
    # an unknown baseline model is said before any work (it had come after a refit)
    from hja_bayes.cli import panel

    def no_work(*args):
        raise AssertionError("worked before the baseline was checked")

    monkeypatch.setattr(panel, "uncontrolled", no_work)
    capsys.readouterr()
    assert main(["report", str(fit_dir), "--baseline", "nosuch=1000", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'nosuch'" in err and "worked before" not in err


def test_long_tables_print_their_top_rows_and_count_the_rest(csv_file, tmp_path, capsys):
    args = ["fit", str(csv_file), "--judge-col", "grader", "--model-a-col", "first",
            "--model-b-col", "second", "--winner-col", "verdict", "--rank", "0",
            "--out", str(tmp_path / "fit"), "--quiet"]
    assert main(args + ["--rows", "2"]) == 0
    board, judges = capsys.readouterr().out.split("Leaderboard")[1].split("Judges")
    top = board.splitlines()[2:4]  # after the title and the header
    assert [line.split()[4] for line in top] == ["1", "2"]  # the rank column: the top two
    assert "... 2 more models not shown: --rows 0 prints them all" in board
    assert "... 1 more judge not shown" in judges
    assert main(args + ["--rows", "0"]) == 0
    out = capsys.readouterr().out
    assert "not shown" not in out and all(f"item{i}" in out for i in range(4))
    # the agreement's pairs of judges too (5 judges: 10 pairs)
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--agreement", "--rows", "3",
                 "--quiet", "--out", str(tmp_path / "prd")]) == 0
    kappa = capsys.readouterr().out.split("Pairs of judges")[1]
    assert "... 7 more judge pairs not shown" in kappa


def test_fastchat_battles_as_one_judge(tmp_path, capsys):
    import json

    rng = np.random.default_rng(0)
    models = ["gpt-4", "claude-1", "vicuna-13b", "alpaca-13b"]
    battles = []
    for _ in range(400):
        i, j = rng.choice(4, 2, replace=False)
        p = 1 / (1 + np.exp(-(j - i) * 0.6))
        u = rng.random()
        winner = "model_a" if u < p * 0.8 else "model_b" if u < 0.8 else \
            rng.choice(["tie", "tie (bothbad)"])
        battles.append({"model_a": models[i], "model_b": models[j], "winner": winner,
                        "judge": f"arena_user_{rng.integers(10_000)}", "anony": True})
    path = tmp_path / "clean_battle.json"
    path.write_text(json.dumps(battles))
    # read with the voters as judges: a one-line warning suggests pooling them (the rank
    # asked for is then refused, which ends the run before any fitting)
    code = main(["fit", str(path), "--rank", "9", "--quiet", "--out", str(tmp_path / "f")])
    err = [x for x in capsys.readouterr().err.splitlines() if "judges in column" in x]
    assert code == 2 and len(err) == 1 and "--judge-col -" in err[0]
    assert main(["fit", str(path), "--judge-col", "-", "--rank", "0", "--quiet",
                 "--format", "json", "--out", str(tmp_path / "g")]) == 0
    rows = json.loads(capsys.readouterr().out)["leaderboard"]["rows"]
    assert [r["model"] for r in rows][0] == "gpt-4" and sum(r["comparisons"] for r in rows) == 800


def test_the_json_output_carries_the_warnings_said_on_stderr(tmp_path, capsys):
    """A pipeline that reads stdout and drops stderr still sees what the fit warned of."""
    import json

    votes = tmp_path / "votes.csv"
    rows = ["judge,model_a,model_b,winner"] + [
        f"j{k},{a},{b},{w}" for k in range(3) for a, b, w in
        [("x", "y", "model_a"), ("y", "z", "model_b"), ("z", "x", "tie"), ("x", "z", "model_a"),
         ("y", "x", "model_b"), ("z", "y", "model_a")] * 4]
    votes.write_text("\n".join(rows) + "\n")
    assert main(["fit", str(votes), "--rank", "0", "--quiet", "--format", "json",
                 "--out", str(tmp_path / "f")]) == 0
    captured = capsys.readouterr()
    said = json.loads(captured.out)["warnings"]
    stderr = [x[len("hja-bayes: warning: "):] for x in captured.err.splitlines()
              if x.startswith("hja-bayes: warning: ")]
    assert said and [w["message"] for w in said] == stderr
    assert {w["category"] for w in said} <= {"DataWarning", "ConvergenceWarning", "HJAWarning"}


def _probability_csv(path, n, seed):
    """A CSV of three prompts' raw probabilities of response 1, human labels and groups."""
    import pandas as pd

    sim = hb.confidence.simulate_confidence_data(n, 3, seed=seed, orient=False).data
    frame = pd.DataFrame(sim.features, columns=["p1", "p2", "p3"])
    frame["human"] = sim.human
    frame["question"] = [f"q{i // 4}" for i in range(n)]
    frame.to_csv(path, index=False)
    return sim


def test_confidence_one_shot_with_a_test_split_of_one_class(tmp_path, capsys):
    """The one-shot run whose test examples all agree: no AUROC to report (it had ended in
    an error about the whole file after training), and each test row names its example."""
    import json

    import numpy as np
    import pandas as pd

    from hja_bayes.confidence.pipeline import group_split, read_confidence_source

    sim = _probability_csv(tmp_path / "one.csv", 400, 1)
    frame = pd.read_csv(tmp_path / "one.csv").drop(columns="question")
    data = read_confidence_source(str(tmp_path / "one.csv"), human_col="human",
                                  group_col="question")
    assert np.array_equal(data.verdict, sim.verdict)
    test = group_split(np.arange(400), (0.5, 0.25, 0.25), 0)[2]  # the CLI's split, seed 0
    frame.loc[test, "human"] = sim.verdict[test]
    frame.to_csv(tmp_path / "one.csv", index=False)
    assert main(["confidence", str(tmp_path / "one.csv"), "--epochs", "2", "--pairs", "256",
                 "--alpha", "0.45", "--out", str(tmp_path / "out"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "out" / "confidence.json").read_text())
    assert summary["test_agreement_all"] == 1.0 and summary["test_auroc"] is None
    assert "test_misranking_bound" not in summary  # no disagreeing test example to pair
    assert summary["threshold"] is not None and "no AUROC" in capsys.readouterr().out
    rows = pd.read_csv(tmp_path / "out" / "test_predictions.csv")
    assert sorted(rows["example"]) == sorted(test) and rows["agree"].all()
    frame.head(3).to_csv(tmp_path / "three.csv", index=False)
    assert main(["confidence", str(tmp_path / "three.csv"), "--quiet"]) == 2
    assert ("the split leaves the calibration part empty: too few examples to split by these "
            "fractions (examples: 3, groups: 3)") in capsys.readouterr().err


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
    # the file's own other columns lead each row, so a scored verdict can be found again
    given = pd.read_csv(tmp_path / "new.csv")
    kept = [c for c in given.columns if c not in ("p1", "p2", "p3")]
    assert kept and list(scored.columns[:len(kept)]) == kept
    pd.testing.assert_frame_equal(scored[kept], given[kept])
    threshold = meta["certificate"]["threshold"]
    assert np.array_equal(scored["trusted"], scored["confidence"] >= threshold if threshold is not None else False)
    # new data without human labels: scored all the same
    pd.read_csv(tmp_path / "new.csv").drop(columns="human").to_csv(tmp_path / "unlabelled.csv", index=False)
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "unlabelled.csv"), "--quiet"]) == 0
    again = pd.read_csv(tmp_path / "rk" / "applied.csv")
    assert "agree" not in again and np.allclose(again["confidence"], scored["confidence"], rtol=0, atol=1e-12)
    # half the rows labelled: agreement over those alone (a missing label had counted as a
    # disagreement), the others' agree cell empty
    part = pd.read_csv(tmp_path / "new.csv")
    part.loc[part.index % 2 == 1, "human"] = np.nan
    part.to_csv(tmp_path / "part.csv", index=False)
    capsys.readouterr()
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "part.csv")]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    half = pd.read_csv(tmp_path / "rk" / "applied.csv")
    assert half["agree"].isna().sum() == 150
    labelled = scored[part["human"].notna().to_numpy()]
    assert f"(all of the 150 with a human label: {labelled['agree'].mean():.1%})" in line
    # a label that is neither 1, 2 nor empty is named
    part.loc[4, "human"] = 3
    part.to_csv(tmp_path / "part.csv", index=False)
    assert main(["confidence", "apply", str(tmp_path / "rk"), str(tmp_path / "part.csv")]) == 2
    assert "holds 3.0 at line 6" in capsys.readouterr().err


@pytest.fixture(scope="module")
def prompts_csv(tmp_path_factory):
    """Verdicts with their prompt in a column the CLI does not know by name (item_id)."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=150, seed=8,
                          questions=40, question_correlation=0.5)
    c = data.clusters
    lines = ["judge,model_a,model_b,winner,item_id"]
    for e in range(len(c.cell)):
        cell = c.cell[e]
        key = (f"{data.judges[data.judge[cell]]},{data.items[data.first[cell]]},"
               f"{data.items[data.second[cell]]}")
        lines += [f"{key},model_a,{c.names[c.cluster[e]]}"] * int(c.counts[e, 0])
        lines += [f"{key},model_b,{c.names[c.cluster[e]]}"] * int(c.counts[e, 2])
    path = tmp_path_factory.mktemp("prompts") / "votes.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_unrecognised_prompt_column_is_suggested(prompts_csv, tmp_path, capsys):
    assert main(["fit", str(prompts_csv), "--rank", "0", "--out", str(tmp_path / "a"),
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "no prompt column named (--cluster-col) or recognised" in err
    assert "Column 'item_id' looks like one (40 values" in err
    assert "pass --cluster-col item_id" in err
    assert hb.load_fit(tmp_path / "a").data.clusters is None


def test_the_cluster_column_is_echoed_and_recorded(prompts_csv, tmp_path, capsys):
    assert main(["fit", str(prompts_csv), "--rank", "0", "--cluster-col", "item_id",
                 "--out", str(tmp_path / "b"), "--format", "json", "--fragility"]) == 0
    out = capsys.readouterr()
    assert ("hja-bayes: clusters (prompts) from column 'item_id' (named with --cluster-col): "
            "40 clusters") in out.err
    import json

    result = json.loads(out.out)
    assert result["fit"]["clustering"]["cluster_column"] == "item_id"
    assert result["leaderboard"]["meta"]["small_sample"] == "CR2"
    assert result["leaderboard"]["meta"]["n_clusters"] == 40
    assert [f["unit"] for f in result["fragility"]] == ["verdict", "prompt"]
    assert all(f["sentence"] for f in result["fragility"])
    assert hb.load_fit(tmp_path / "b").data.cluster_column == "item_id"
    assert main(["fit", str(prompts_csv), "--rank", "0", "--cluster-col", "-",
                 "--out", str(tmp_path / "c")]) == 0
    assert "no cluster column (--cluster-col -)" in capsys.readouterr().err


def test_a_fit_with_small_sample_intervals_leaves_scipy_stats_unimported(prompts_csv, tmp_path):
    """Importing scipy.stats costs a command-line fit most of a second; the t quantiles and
    probabilities of the CR2 intervals come from scipy.special."""
    code = ("import sys; from hja_bayes.cli import main; "
            f"assert main(['fit', {str(prompts_csv)!r}, '--rank', '0', '--cluster-col', "
            f"'item_id', '--quiet', '--out', {str(tmp_path / 'fit')!r}]) == 0; "
            "print('scipy.stats' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_a_bayesian_fit_asks_jax_for_a_device_per_chain(monkeypatch):
    """``--bayes`` asks JAX for one CPU device per chain, up to the cores the process may
    use, so that the chains run side by side; not where the user chose a count, and without
    an error where JAX has already started (as in this process)."""
    import os

    import jax

    from hja_bayes.cli import _devices_for_chains

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    asked = []
    real_update = jax.config.update
    monkeypatch.setattr(jax.config, "update", lambda name, value: asked.append((name, value)))
    monkeypatch.delenv("JAX_NUM_CPU_DEVICES", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "")
    _devices_for_chains(4)
    _devices_for_chains(1)
    assert asked == ([("jax_num_cpu_devices", min(4, cores))] if cores > 1 else [])
    asked.clear()
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=3")
    _devices_for_chains(4)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv("JAX_NUM_CPU_DEVICES", "1")
    _devices_for_chains(4)
    assert asked == []
    monkeypatch.setattr(jax.config, "update", real_update)
    monkeypatch.delenv("JAX_NUM_CPU_DEVICES")
    jax.numpy.zeros(1).block_until_ready()  # JAX has started: the request is ignored
    devices = jax.local_device_count()
    _devices_for_chains(4)
    assert jax.local_device_count() == devices


def test_the_confidence_help_shows_its_three_forms_once(capsys):
    with pytest.raises(SystemExit):
        main(["confidence", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: hja-bayes confidence [options] (DATA | train DATA | apply "
                          "DIR DATA)\n")
    assert "``" not in out and "::" not in out


def test_fit_prints_the_bias_terms_it_estimated(tmp_path, capsys):
    # the demo printed them and 'fit' did not (they reached only the report's files)
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--style-control", "length",
                 "--position-bias", "--out", str(tmp_path / "styled"), "--quiet"]) == 0
    out = capsys.readouterr().out
    biases = out[out.index("Judge biases (logit scale):"):]
    assert "style:length_lower" in biases and "(panel)" in biases  # per judge, and overall
    assert all(judge in biases for judge in ("bard", "claude", "gpt35", "gpt4", "vicuna-13b"))
    # a position bias alone is the judge table's beta: no second table
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--position-bias", "--out",
                 str(tmp_path / "plain"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "beta_lower" in out and "Judge biases" not in out


def test_style_inputs_without_style_control_are_refused_not_ignored(tmp_path, capsys):
    """--answers, --features and --style-scope had been ignored without --style-control: a
    fit without style, exit 0 (and an --answers file that did not exist, unread)."""
    prd = hb.datasets.load_prd_vicuna80()
    prd.judgments.to_csv(tmp_path / "votes.csv", index=False)
    prd.answers.to_csv(tmp_path / "answers.csv", index=False)
    base = ["fit", str(tmp_path / "votes.csv"), "--rank", "0", "--quiet", "--out",
            str(tmp_path / "fit")]
    for extra, named in ((["--answers", str(tmp_path / "answers.csv")], "--answers"),
                         (["--style-scope", "shared"], "--style-scope"),
                         (["--features", "nowhere.csv"], "--features")):
        assert main(base + extra) == 2
        err = capsys.readouterr().err
        assert f"{named} only shapes a style control: add --style-control" in err
    assert main(base + ["--style-control", "--answers", str(tmp_path / "answers.csv"),
                        "--features", "nowhere.csv"]) == 2
    assert "not both" in capsys.readouterr().err
    # a feature table given as answers is pointed to --features (the message had named
    # the Python arguments prompt=, model=, text=)
    hb.style_features(prd.answers).to_csv(tmp_path / "features.csv", index=False)
    assert main(base + ["--style-control", "--answers", str(tmp_path / "features.csv")]) == 2
    err = capsys.readouterr().err
    assert "lacks the column(s) ['answer']" in err and "goes to --features" in err
    # a feature table without its 'model' column had stopped on pandas' "not in index"
    hb.style_features(prd.answers).rename(columns={"model": "name"}).to_csv(
        tmp_path / "unnamed.csv", index=False)
    assert main(base + ["--style-control", "--features", str(tmp_path / "unnamed.csv")]) == 2
    err = capsys.readouterr().err
    assert "lacks the column(s) ['model']" in err and "not in index" not in err
    assert main(["fit", "bundled:prd_vicuna80", "--style-scope", "shared", "--quiet",
                 "--out", str(tmp_path / "b")]) == 2
    assert not (tmp_path / "fit").exists() and not (tmp_path / "b").exists()


def test_bare_style_control_names_the_features_it_leaves_out(tmp_path, capsys):
    """Bare --style-control leaves out a feature that takes one value over the answers
    (PRD's answers have no markdown headers): it had done so without a word, and the data's
    summary (the report's Data section) had not said it either."""
    prd = hb.datasets.load_prd_vicuna80()
    assert hb.style_features(prd.answers)["headers"].nunique() == 1
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--style-control", "--out",
                 str(tmp_path / "fit")]) == 0
    captured = capsys.readouterr()
    assert ("style feature(s) ['headers'] take one value over the compared answers and are "
            "left out") in captured.err and "warning" not in captured.err
    assert "style:headers" not in captured.out and "style:length" in captured.out
    saved = hb.load_fit(tmp_path / "fit")
    assert saved.data.feature_transform.endswith("left out, not varying: headers")
    # named, a feature that does not vary is warned of (the user asked for it)
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--style-control",
                 "length,headers", "--out", str(tmp_path / "named"), "--quiet"]) == 0
    assert "warning: style feature(s) ['headers'] do not vary" in capsys.readouterr().err


def test_answers_that_no_verdict_compares_are_counted(tmp_path, capsys):
    """Answers to prompts, or of models, that the verdicts do not have were left unused
    without a word (a mismatch of names between the two files hides there)."""
    prd = hb.datasets.load_prd_vicuna80()
    first = prd.answers[prd.answers["question_id"] == prd.answers["question_id"].iloc[0]]
    extra = pd.concat([prd.answers, first.assign(question_id=999),
                       first.iloc[:1].assign(model="gpt5")])
    extra.to_csv(tmp_path / "answers.csv", index=False)
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--style-control", "length",
                 "--answers", str(tmp_path / "answers.csv"), "--out", str(tmp_path / "f")]) == 0
    err = capsys.readouterr().err
    assert (f"hja-bayes: {len(first) + 1} of {len(extra)} answers are not compared in the "
            "verdicts (not used), e.g. model 'bard' on prompt '999'") in err


def test_a_reader_that_leaves_early_stops_the_command_without_an_error(tmp_path):
    # `hja-bayes fit ... | head -1`: the pipe's reading end is closed before any output.
    # It had said "hja-bayes: error: [Errno 32] Broken pipe" and exit 2 (bad input)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = subprocess.run([sys.executable, "-m", "hja_bayes", "fit", "bundled:prd_vicuna80",
                              "--rank", "0", "--out", str(tmp_path / "fit"), "--quiet"],
                             stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    finally:
        os.close(write_end)
    assert out.returncode == 1 and "error" not in out.stderr, out.stderr
    assert out.stderr.strip() == "hja-bayes: stopped: the reader of the output closed it"


def test_an_interrupted_command_says_so_in_one_line(monkeypatch, capsys):
    # Ctrl-C during a long --bayes run had printed the traceback of wherever JAX was
    from hja_bayes.cli import panel

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(panel, "_cmd_fit", interrupted)
    assert main(["fit", "bundled:prd_vicuna80", "--quiet"]) == 130
    assert capsys.readouterr().err.strip() == "hja-bayes: interrupted"


def test_a_baseline_model_not_in_the_data_is_said_before_the_fit(monkeypatch, capsys):
    from hja_bayes.cli import panel

    def no_fit(*args):
        raise AssertionError("fitted before the baseline was checked")

    monkeypatch.setattr(panel, "_fit", no_fit)
    assert main(["fit", "bundled:prd_vicuna80", "--quiet", "--baseline", "gpt-4=1200"]) == 2
    err = capsys.readouterr().err
    assert "'gpt-4'" in err and "gpt4" in err and "fitted before" not in err


def test_an_interrupt_swallowed_by_a_callback_still_stops_the_command(monkeypatch, capsys):
    """Ctrl-C landing in JAX's garbage-collection callback was printed as 'Exception
    ignored', and the fit ran on, saved and exited 0."""
    import signal

    from hja_bayes.cli import panel

    def swallowed(args):
        try:  # as a callback whose exceptions Python ignores
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
        except KeyboardInterrupt:
            pass
        return 0

    monkeypatch.setattr(panel, "_cmd_fit", swallowed)
    # Python's own handler, as in a command (a test runner's worker may have its own)
    runner = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["fit", "bundled:prd_vicuna80", "--quiet"]) == 130
        assert capsys.readouterr().err.strip() == "hja-bayes: interrupted"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, runner)


def test_the_sampler_draws_its_progress_bar_on_a_terminal_only(monkeypatch, capsys):
    """A bar redrawn in place is noise in a log file: with standard error not a terminal
    (or --quiet) the sampler is asked for none, and the progress line says so."""
    from argparse import Namespace

    import hja_bayes.bayes
    from hja_bayes.cli.common import Progress
    from hja_bayes.cli.panel import sample_posterior

    asked = []
    monkeypatch.setattr(hja_bayes.bayes, "sample_hja",
                        lambda *a, **options: asked.append(options["progress_bar"]))
    args = Namespace(bayes=True, samples=10, warmup=None, chains=2, seed=0, gamma_scale=1.0)
    fit = Namespace(rank=0)
    for terminal, quiet in ((True, False), (False, False), (True, True)):
        monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
        sample_posterior(Namespace(clusters=None), fit, args, Progress(quiet),
                         (None, None, None))
        err = capsys.readouterr().err
        assert ("no progress bar: standard error is not a terminal" in err) == \
            (not terminal and not quiet)
    assert asked == [True, False, False]
    # prompts named but no answer effects sampled: said (the credible intervals ignore them)
    sample_posterior(Namespace(clusters=object()), fit, args, Progress(False),
                     (False, None, None))
    assert "no answer effects: the credible intervals take the verdicts as independent" in \
        capsys.readouterr().err


def test_a_prompt_column_with_one_prompt_is_refused_before_the_fit(csv_file, tmp_path, capsys):
    """Cluster-robust intervals need two prompts: with one, the command stops before fitting
    and names the way out; the library's error at the intervals names it too."""
    from hja_bayes.errors import ParameterError

    lines = csv_file.read_text().splitlines()
    one = tmp_path / "one_prompt.csv"
    one.write_text("\n".join([lines[0] + ",question_id"] + [x + ",q1" for x in lines[1:]]))
    read = ["--judge-col", "grader", "--model-a-col", "first", "--model-b-col", "second",
            "--winner-col", "verdict", "--rank", "0", "--out", str(tmp_path / "fit")]
    assert main(["fit", str(one), *read]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        "hja-bayes: error: the prompt column 'question_id' (recognised) holds one prompt: "
        "cluster-robust intervals need at least two; --cluster-col - treats the comparisons "
        "as independent")
    assert "fitting" not in err
    assert main(["fit", str(one), *read, "--cluster-col", "-", "--quiet"]) == 0
    data = hb.Comparisons.from_csv(one, judge="grader", model_a="first", model_b="second",
                                   winner="verdict", cluster="question_id")
    with pytest.raises(ParameterError, match="got 1: read the data without the cluster column"):
        hb.fit_hja(data, rank=0).intervals()


def test_empty_files_are_named_in_one_line(tmp_path, capsys):
    """A header without rows, an empty cost or score file, an empty score cell: one line
    naming the file (they had said "the frame is empty", pandas' "No columns to parse from
    file", or "np.float64(nan)")."""
    header = tmp_path / "header.csv"
    header.write_text("judge,model_a,model_b,winner\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    scores = tmp_path / "scores.csv"
    scores.write_text("model,score\na,0.5\nb,\nc,0.1\n")
    hb.fit_hja(hb.simulate(2, 3, 0, 100, seed=0)[0], rank=0).save(tmp_path / "fit")
    for args, said in ((["fit", str(header)], f"{header} has a header but no rows"),
                       (["next", str(tmp_path / "fit"), "--budget", "2", "--cost", str(empty),
                         "--out", str(tmp_path / "n.csv")],
                        f"{empty} is empty (it needs the columns judge and cost)"),
                       (["plan", "--scores", str(empty)], f"{empty} is empty"),
                       (["plan", "--scores", str(scores)],
                        "the score of 'b' is not a number (an empty cell)")):
        assert main([*args, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err


def test_posterior_probabilities_printed_say_how_fine_the_draws_are(capsys):
    """With a posterior of 300 draws a printed 1.000 means above 1 - 1/300 (the report says
    so in words; the terminal had printed 1.000 alone)."""
    from argparse import Namespace

    from hja_bayes.cli.panel import _show
    from hja_bayes.reporting import judge_table, leaderboard

    fit = hb.fit_hja(hb.simulate(2, 3, 0, 1000, seed=0)[0], rank=0)
    board, judges = leaderboard(fit), judge_table(fit)
    board.attrs["n_draws"] = 300
    _show(board, judges, Namespace(level=0.95, rows=None), print)
    assert ("(posterior probabilities from 300 draws: 0.000 and 1.000 mean below 1/300 and "
            "above 1 - 1/300)") in capsys.readouterr().out


def test_sampler_options_without_bayes_are_refused_before_any_work(capsys):
    """--samples, --chains, --gamma-scale, --prompt-effects without --bayes had been ignored
    without a word (exit 0)."""
    assert main(["fit", "bundled:prd_vicuna80", "--chains", "3", "--prompt-effects", "sampled",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("hja-bayes: error: --chains, --prompt-effects set the sampler: add "
                           "--bayes to sample the posterior (without it they do nothing)")


def test_report_of_a_style_controlled_fit_keeps_the_rank_change(tmp_path):
    """`hja-bayes report FIT` had dropped the rank_change column that `fit --report` writes
    (and its glossary still described)."""
    import pandas as pd

    assert main(["fit", "bundled:prd_vicuna80", "--style-control", "--rank", "0", "--quiet",
                 "--out", str(tmp_path / "fit")]) == 0
    assert main(["report", str(tmp_path / "fit"), "--quiet"]) == 0
    board = pd.read_csv(tmp_path / "fit" / "report" / "leaderboard.csv")
    assert "rank_change" in board.columns and board["rank_change"].notna().all()


def test_json_output_carries_the_judge_biases(tmp_path, capsys):
    """--format json had left out the style and self-preference terms the text output
    prints under "Judge biases"."""
    import json

    assert main(["fit", "bundled:prd_vicuna80", "--style-control", "--self-preference",
                 "--rank", "0", "--format", "json", "--out", str(tmp_path / "fit")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["biases"]["meta"]["terms"] == ["style", "self"]
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--format", "json", "--out",
                 str(tmp_path / "plain")]) == 0
    assert "biases" not in json.loads(capsys.readouterr().out)


def test_a_judge_on_one_prompt_is_refused_after_the_fit_and_can_be_left_out(tmp_path, capsys):
    """The single-prompt rule reads the judges the fit keeps: it had been checked on the raw
    rows before the fit, so --leave-out could not help."""
    rng = np.random.default_rng(3)
    models = ["m0", "m1", "m2", "m3"]
    rows = [(j, f"q{q}", *rng.choice(models, 2, replace=False), rng.choice(["model_a", "model_b"]))
            for j in ("j0", "j1") for q in range(12) for _ in range(8)]
    rows += [("lone", "q0", *rng.choice(models, 2, replace=False), "model_a") for _ in range(12)]
    csv = tmp_path / "votes.csv"
    pd.DataFrame(rows, columns=["judge", "question_id", "model_a", "model_b", "winner"]).to_csv(
        csv, index=False)
    base = ["fit", str(csv), "--cluster-col", "question_id", "--rank", "0", "--quiet"]
    assert main(base + ["--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "judge(s) 'lone' appear(s) on a single prompt" in err and "--judge-col -" in err
    assert main(base + ["--leave-out", "lone", "--out", str(tmp_path / "b")]) == 0
