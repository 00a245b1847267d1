"""report(): the files it writes, with and without a posterior."""

import json

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb

from hja_bayes.reporting.files import table_json

from .report_support import parse_html, posterior, small_fit


def test_report_files(tmp_path):
    fit = small_fit()
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "ppc.png").write_bytes(b"left by an earlier report")
    files = hb.report(fit, tmp_path, level=0.9, title="Test & report")
    assert not (tmp_path / "figures" / "ppc.png").exists()  # it would not belong to this one
    board = hb.leaderboard(fit, level=0.9)
    parsed = parse_html(files.html.read_text(encoding="utf-8"))
    assert [r[0] for r in parsed.tables["leaderboard"][1:]] == list(board["model"])
    assert files.markdown.read_text(encoding="utf-8").startswith("# Test & report")
    names = {p.name for p in files.tables}
    assert {"leaderboard.csv", "leaderboard.json", "judges.csv", "judges.json",
            "pairwise.csv"} <= names
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    assert list(csv["model"]) == list(board["model"])
    judges = json.loads((tmp_path / "judges.json").read_text(encoding="utf-8"))
    assert set(judges) == {"meta", "rows"}
    assert [r["judge"] for r in judges["rows"]] == list(fit.judges)
    board_json = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))
    meta = board_json["meta"]
    assert meta["table"] == "leaderboard" and meta["level"] == 0.9 and meta["scale"] == "logit"
    assert meta["cov_type"] == "fisher" and meta["outcome"] == "half"
    assert meta["rank"] == fit.rank and meta["hja_bayes_version"] == hb.__version__
    assert board_json["rows"][-1]["p_better_next"] is None  # no next model: null, not NaN
    assert meta["critical_value"] > 0  # the joint rank intervals' own
    for name in ("pairwise", "rank_table", "judges"):
        if (tmp_path / f"{name}.json").exists():
            other = json.loads((tmp_path / f"{name}.json").read_text())["meta"]
            assert other["table"] == name and other["level"] == 0.9
            assert "critical_value" not in other  # had read as its rows' quantile
    assert all((tmp_path / "figures" / f"{n}.png").stat().st_size > 1000
               for n in ("forest", "judge_map", "residual", "win_probability",
                         "observed_win_fraction", "battle_counts"))
    battles = pd.read_csv(tmp_path / "battle_counts.csv", index_col="model")
    wins = pd.read_csv(tmp_path / "observed_win_fraction.csv", index_col="model")
    assert list(battles.index) == list(board["model"]) == list(wins.columns)
    assert battles.to_numpy().sum() == 2 * fit.data.n_comparisons
    # a file where the folder goes: said before any work (mkdir's FileExistsError before)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(hb.ParameterError, match=r"afile is a file: the report goes to a folder"):
        hb.report(fit, tmp_path / "afile")


def test_names_that_look_like_formulas_are_neutralised_in_csv(tmp_path):
    data, _ = hb.simulate(n_judges=2, n_items=3, rank=0, comparisons_per_judge=200, seed=4)
    frame = data.to_frame()
    evil = '=HYPERLINK("http://evil","x")'
    for column in ("model_a", "model_b"):
        frame[column] = frame[column].replace({data.items[0]: evil})
    fit = hb.fit_hja(hb.Comparisons.from_counts(frame), rank=0)
    hb.report(fit, tmp_path)
    for name in ("leaderboard.csv", "pairwise.csv", "battle_counts.csv"):
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert "'=HYPERLINK" in text and not any(
            cell.startswith("=") for line in text.splitlines() for cell in line.split(",")), name
    rows = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert evil in [r["model"] for r in rows]  # JSON keeps the name as it is


def test_report_with_posterior(tmp_path):
    fit, idata = posterior()
    files = hb.report(fit, tmp_path, idata)
    parsed = parse_html(files.html.read_text(encoding="utf-8"))
    # the posterior's columns in a table of their own, the same rows (19 columns in one had
    # run off the page)
    assert "Cred. lower" not in parsed.tables["leaderboard"][0]
    header = parsed.tables["leaderboard-posterior"][0]
    assert header[0] == "Model" and "Cred. lower" in header and "P(best)" in header
    assert [r[0] for r in parsed.tables["leaderboard-posterior"][1:]] == [
        r[0] for r in parsed.tables["leaderboard"][1:]]
    assert "γ cred. lower" in parsed.tables["judges"][0]
    assert parsed.tags.count("img") == 7  # rank 0: no residual map
    intervals = pd.read_csv(tmp_path / "intervals.csv")
    assert {"mu_diff", "gamma", "beta"} <= set(intervals["quantity"])
    # in logits on any leaderboard scale (its meta had said "elo" above logit rows)
    hb.report(fit, tmp_path / "elo", idata, scale="elo", baseline=(fit.items[0], 1200))
    stated = json.loads((tmp_path / "elo" / "intervals.json").read_text())
    assert stated["meta"]["scale"] == "logit" and "baseline" not in stated["meta"]
    assert np.allclose(pd.read_csv(tmp_path / "elo" / "intervals.csv")["wald_estimate"],
                       intervals["wald_estimate"])
    # the sampler's diagnostics, and posterior probabilities no finer than the draws
    conv = parsed.tables["convergence"]
    assert conv[0][:2] == ["Quantity", "Entries"] and [r[0] for r in conv[1:3]] == ["mu", "gamma"]
    meta = json.loads((tmp_path / "convergence.json").read_text())["meta"]
    assert meta["n_draws"] == 120 and "divergences" in meta
    col = header.index("P(best)")
    p_best = [r[col] for r in parsed.tables["leaderboard-posterior"][1:]]
    assert all(p.startswith(("< 1/120", "> 1 − 1/120")) or 0 < float(p) < 1 for p in p_best)
    assert "0.000" not in p_best and "< 0.001" not in p_best
    # saved with the fit, the posterior comes back into the report from the command line
    from hja_bayes.cli import main

    fit.save(tmp_path / "fit", idata=idata)
    assert main(["report", str(tmp_path / "fit"), "--quiet"]) == 0
    text = (tmp_path / "fit" / "report" / "report.html").read_text(encoding="utf-8")
    assert "Posterior</h2>" in text


def test_ranks_the_search_skipped_are_shown_as_not_fitted(tmp_path):
    """A BIC search on rank-0 data stops after ``patience`` ranks without improvement: the
    report's rank table leaves the skipped ranks' iterations and convergence blank (en dash
    in HTML and Markdown, empty in the CSV, null in the JSON) instead of "0" and "no"."""
    data, _ = hb.simulate(n_judges=4, n_items=5, rank=0, comparisons_per_judge=300, seed=8)
    fit = hb.fit_hja(data, rank="bic", max_rank=3, patience=1)
    skipped = fit.rank_table["skipped"].to_numpy()
    assert fit.rank == 0 and skipped.any() and not skipped[:2].any()
    files = hb.report(fit, tmp_path)
    table = parse_html(files.html.read_text(encoding="utf-8")).tables["rank-table"]
    header, rows = table[0], table[1:]
    assert header[4:] == ["Iterations", "Converged", "Stopped early", "Skipped"]
    for row, was_skipped in zip(rows, skipped):
        assert (row[4:7] == ["–"] * 3) == was_skipped and row[7] == ("yes" if was_skipped else "no")
    csv = pd.read_csv(tmp_path / "rank_table.csv")
    assert csv.loc[skipped, ["n_iter", "converged"]].isna().all().all()
    assert (csv.loc[~skipped, "n_iter"] > 0).all()
    rows_json = json.loads((tmp_path / "rank_table.json").read_text())["rows"]
    assert [r["converged"] is None for r in rows_json] == list(skipped)


def test_table_json_writes_one_row_per_line_and_reads_back_every_value():
    import json

    import numpy as np
    import pandas as pd

    from hja_bayes.reporting.files import table_json

    names = ["meta-llama/Llama-3", "back\\slash/", 'quote"s', "sep\u2028arator", "new\nline"]
    df = pd.DataFrame({"judge": names, "gamma": [1.5, np.nan, -0.25, 1e-300, 2.0],
                       "comparisons": [1, 2, 3, 4, 5]})
    df.attrs["meta"] = {"level": 0.95, "n": np.int64(5), "names": ["a/b"]}
    text = table_json(df)
    back = json.loads(text)
    assert back["meta"] == {"level": 0.95, "n": 5, "names": ["a/b"]}
    assert [r["judge"] for r in back["rows"]] == names
    assert [r["comparisons"] for r in back["rows"]] == [1, 2, 3, 4, 5]
    gammas = [r["gamma"] for r in back["rows"]]
    assert gammas[1] is None
    np.testing.assert_allclose([g for g in gammas if g is not None], [1.5, -0.25, 1e-300, 2.0],
                               rtol=1e-14)
    assert text.count("\n    {") == 5 and "\\/" not in text  # a line per row, "/" plain
    assert json.loads(table_json(pd.DataFrame({"a": []}))) == {"meta": {}, "rows": []}


def test_json_is_strict_where_a_number_is_not_finite(tmp_path, capsys):
    """A leaderboard without prompts had written "joint_df": Infinity, which JavaScript's
    JSON.parse refuses (Python's reads it)."""
    from hja_bayes.cli import main

    def strict(text):
        def refuse(name):
            raise ValueError(f"not JSON: {name}")
        return json.loads(text, parse_constant=refuse)

    df = pd.DataFrame({"x": [1.0, np.inf, np.nan]})
    df.attrs["meta"] = {"joint_df": np.inf, "nested": [np.float64("nan"), 2.0]}
    back = strict(table_json(df))
    assert back["meta"] == {"joint_df": None, "nested": [None, 2.0]}
    assert [r["x"] for r in back["rows"]] == [1.0, None, None]
    assert main(["fit", "bundled:prd_vicuna80", "--rank", "0", "--cluster-col", "-",
                 "--format", "json", "--quiet", "--out", str(tmp_path / "fit")]) == 0
    said = strict(capsys.readouterr().out)
    assert said["leaderboard"]["meta"]["joint_df"] is None


def test_the_pairwise_files_are_left_out_above_a_size_unless_asked_for(tmp_path, monkeypatch):
    """Above PAIRWISE_FILE_MODELS models the report writes no pairwise.csv/json (N(N-1)
    rows: 378 MB at 1,000 models) and says so in its footer; pairwise=True writes them,
    pairwise=False leaves them out at any size, and a pairwise file an earlier report left
    in the folder goes (it would describe another fit)."""
    from hja_bayes.reporting import content

    fit = small_fit()
    N = len(fit.items)
    hb.report(fit, tmp_path)  # this size: written
    assert (tmp_path / "pairwise.csv").exists() and (tmp_path / "pairwise.json").exists()
    monkeypatch.setattr(content, "PAIRWISE_FILE_MODELS", N - 1)
    files = hb.report(fit, tmp_path)
    assert not (tmp_path / "pairwise.csv").exists() and not (tmp_path / "pairwise.json").exists()
    assert not any(p.name.startswith("pairwise") for p in files.tables)
    footer = files.html.read_text(encoding="utf-8").split("<footer>")[1]
    assert f"the pairwise table ({N * (N - 1):,} ordered pairs) is not written" in footer
    assert "pairwise=True" in footer and "--pairwise" in footer
    files = hb.report(fit, tmp_path, pairwise=True)
    pairs = pd.read_csv(tmp_path / "pairwise.csv")
    assert len(pairs) == N * (N - 1)
    assert "the pairwise table is in pairwise.csv" in files.html.read_text(encoding="utf-8")
    monkeypatch.setattr(content, "PAIRWISE_FILE_MODELS", N)
    hb.report(fit, tmp_path, pairwise=False)
    assert not (tmp_path / "pairwise.csv").exists()
    with pytest.raises(hb.ParameterError, match="pairwise"):
        hb.report(fit, tmp_path, pairwise="no")


def test_the_pairwise_table_holds_every_ordered_pair_in_leaderboard_order():
    """pairwise_table against the Wald inference read pair by pair."""
    from hja_bayes.reporting import pairwise_table

    fit = small_fit()
    table = pairwise_table(fit, 0.9)
    board = hb.leaderboard(fit, level=0.9)
    order = list(board["model"])
    expected = [(a, b) for a in order for b in order if a != b]
    assert list(zip(table["model_a"], table["model_b"])) == expected
    mu = dict(zip(fit.items, np.asarray(fit.mu)))
    np.testing.assert_allclose(table["difference"], [mu[a] - mu[b] for a, b in expected],
                               atol=1e-9)
    np.testing.assert_allclose(table["p_win"], 1 / (1 + np.exp(-table["difference"])),
                               rtol=1e-12)
    assert ((table["lower"] < table["difference"]) & (table["difference"] < table["upper"])).all()
    # the reversed pair's interval is this one's, negated
    reverse = table.set_index(["model_b", "model_a"]).loc[expected]
    np.testing.assert_allclose(table["lower"], -reverse["upper"], atol=1e-12)
