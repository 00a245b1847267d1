"""report(): the files it writes, with and without a posterior."""

import json

import pandas as pd

import hja_bayes as hb

from .report_support import parse_html, posterior, small_fit


def test_report_files(tmp_path):
    fit = small_fit()
    files = hb.report(fit, tmp_path, level=0.9, title="Test & report")
    board = hb.leaderboard(fit, level=0.9)
    parsed = parse_html(files.html.read_text(encoding="utf-8"))
    assert [r[0] for r in parsed.tables["leaderboard"][1:]] == list(board["model"])
    assert files.markdown.read_text(encoding="utf-8").startswith("# Test &amp; report")
    names = {p.name for p in files.tables}
    assert {"leaderboard.csv", "leaderboard.json", "judges.csv", "judges.json",
            "pairwise.csv"} <= names
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    assert list(csv["model"]) == list(board["model"])
    records = json.loads((tmp_path / "judges.json").read_text(encoding="utf-8"))
    assert [r["judge"] for r in records] == list(fit.judges)
    assert all((tmp_path / "figures" / f"{n}.png").stat().st_size > 1000
               for n in ("forest", "judge_map", "residual", "win_probability"))


def test_report_with_posterior(tmp_path):
    fit, idata = posterior()
    files = hb.report(fit, tmp_path, idata)
    parsed = parse_html(files.html.read_text(encoding="utf-8"))
    header = parsed.tables["leaderboard"][0]
    assert "Cred. lower" in header and "P(best)" in header
    assert "γ cred. lower" in parsed.tables["judges"][0]
    assert parsed.tags.count("img") == 6
    intervals = pd.read_csv(tmp_path / "intervals.csv")
    assert {"mu_diff", "gamma", "beta"} <= set(intervals["quantity"])
    # saved with the fit, the posterior comes back into the report from the command line
    from hja_bayes.cli import main

    fit.save(tmp_path / "fit", idata=idata)
    assert main(["report", str(tmp_path / "fit"), "--quiet"]) == 0
    text = (tmp_path / "fit" / "report" / "report.html").read_text(encoding="utf-8")
    assert "Posterior</h2>" in text
