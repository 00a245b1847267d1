"""``hja-bayes categories``: one leaderboard per category, pooled or as a panel, with
cluster-robust intervals where the verdicts carry prompts."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.cli import main
from hja_bayes.inference.few_verdicts import FEW_VERDICTS_SE


@pytest.fixture(scope="module")
def prd_votes():
    prd = hb.datasets.load_prd_vicuna80()
    return prd.judgments.merge(prd.questions[["question_id", "category"]], on="question_id")


def test_bundled_prd_by_category_pooled(prd_votes, tmp_path, capsys):
    out = tmp_path / "by_category.csv"
    assert main(["categories", "bundled:prd_vicuna80", "--by", "category", "--out", str(out),
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "cluster-robust by 'question_id'" in captured.out
    # math has 3 questions for 5 models: no joint rank intervals, which this table (arena
    # style) does not show: it is kept, its Rank(UB) from its own score intervals
    assert "left out" not in captured.err and "left empty" not in captured.err
    assert "9 categories rest on few prompts (3 to 10 each" in captured.err
    table = pd.read_csv(out)
    assert list(dict.fromkeys(table["category"]))[:2] == ["(all)", "coding"]
    math = table[table["category"] == "math"]
    assert len(math) == 5 and (math["rating_lower"] < math["rating_upper"]).all()
    # a category's rows are that category's verdicts fitted alone, pooled as one judge's
    coding = prd_votes[prd_votes["category"] == "coding"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # few prompts, as above
        alone = hb.leaderboard(hb.fit_hja(hb.Comparisons.from_frame(
            coding, judge=None, cluster="question_id"), rank=0), style="arena", scale="elo")
    part = table[table["category"] == "coding"].drop(columns="category").reset_index(drop=True)
    pd.testing.assert_frame_equal(part, alone.reset_index(drop=True), check_dtype=False,
                                  check_exact=False, rtol=1e-9)


def test_a_panel_per_category_and_json(tmp_path, capsys):
    out = tmp_path / "by_category.json"
    assert main(["categories", "bundled:prd_vicuna80", "--by", "category", "--panel",
                 "--cluster-col", "-", "--no-overall", "--style", "default", "--scale",
                 "logit", "--out", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "a panel of judges (HJA, rank 0)" in captured.out
    assert "cluster-robust" not in captured.out and "few prompts" not in captured.err
    saved = json.loads(out.read_text())
    categories = {row["category"] for row in saved["rows"]}
    assert "(all)" not in categories and "math" in categories  # independent: no prompt limit
    assert saved["meta"]["cov_type"] == "fisher" and saved["meta"]["by"] == "category"
    # --baseline pins one model in every category, the distances kept
    assert main(["categories", "bundled:prd_vicuna80", "--by", "category", "--panel",
                 "--cluster-col", "-", "--no-overall", "--style", "default", "--baseline",
                 "claude=1000", "--out", str(tmp_path / "pinned.json"), "--quiet"]) == 0
    pinned = pd.DataFrame(json.loads((tmp_path / "pinned.json").read_text())["rows"])
    plain = pd.DataFrame(saved["rows"])
    for frame in (pinned, plain):
        frame["gap"] = frame["score"] - frame.groupby("category")["score"].transform(
            lambda s: s[frame.loc[s.index, "model"] == "claude"].iloc[0])
    assert (pinned.loc[pinned["model"] == "claude", "score"] == 1000).all()
    np.testing.assert_allclose(pinned["gap"], plain["gap"] * 400 / np.log(10), rtol=1e-9)


def test_a_category_with_fewer_prompts_than_models_keeps_its_rows_and_is_said_once(
        prd_votes, capsys):
    """Columns of joint statements (rank intervals, tiers) need more prompts than models:
    math's 3 questions for 5 models leave them empty, said once for all categories."""
    small = prd_votes.groupby("category")["question_id"].nunique() < 5
    assert list(small[small].index) == ["math"]
    assert main(["categories", "bundled:prd_vicuna80", "--by", "category", "--style",
                 "default", "--no-overall", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("fewer prompts than models") == 1
    assert "categories with fewer prompts than models: ['math']" in captured.err
    math = captured.out.split("\nmath:\n")[1].split("\n\n")[0].splitlines()[1:]
    assert len(math) == 5 and all(line.split()[6:8] == ["-", "-"] for line in math)


def test_leaderboard_by_names_the_categories_without_rank_intervals(prd_votes):
    with pytest.warns(hb.DataWarning) as caught:
        table = hb.leaderboard_by(prd_votes, by="category", cluster="question_id",
                                  style="default", overall=False,
                                  fitter=lambda data: hb.fit_hja(data, rank=0))
    said = [str(w.message) for w in caught if "fewer prompts than models" in str(w.message)]
    assert len(said) == 1 and said[0].startswith(
        "categories with fewer prompts than models: ['math']")
    assert table.attrs["meta"]["unranked"] == ["math"]
    assert table[table["category"] == "math"]["tier"].isna().all()
    assert table[table["category"] != "math"]["tier"].notna().all()


def test_categories_whose_judges_rest_on_few_verdicts_are_counted_once(prd_votes, capsys):
    assert main(["categories", "bundled:prd_vicuna80", "--by", "category", "--panel",
                 "--cluster-col", "-", "--no-overall", "--quiet"]) == 0
    # recounted here: each category's panel alone, its judges' median se(gamma_k)
    thin = []
    for name, part in prd_votes.groupby("category"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.DataWarning)  # the warning being counted
            table = hb.fit_hja(hb.Comparisons.from_frame(part), rank=0).intervals()
        thin.append(np.median(table[table.quantity == "gamma"].se) > FEW_VERDICTS_SE)
    assert 0 < sum(thin) < len(thin)
    err = capsys.readouterr().err
    assert f"{sum(thin)} categories' judges rest on few verdicts each" in err
    assert err.count("few verdicts") == 1


def test_a_judge_locked_on_one_slot_is_said_once_for_every_category(prd_votes, tmp_path,
                                                                      capsys):
    bard = prd_votes[prd_votes.judge == "bard"]
    yes = bard.assign(judge="yes-man", winner="model_a")
    votes = tmp_path / "votes.csv"
    pd.concat([prd_votes, yes], ignore_index=True).to_csv(votes, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # few verdicts, counted elsewhere
        assert main(["categories", str(votes), "--by", "category", "--panel", "--cluster-col",
                     "-", "--no-overall", "--quiet"]) == 0
    # a category names the judge where it made at least 20 verdicts there (all first-shown)
    sizes = yes.groupby("category").size()
    flagged = list(sizes[sizes >= 20].index)
    assert len(flagged) > 1
    err = capsys.readouterr().err
    assert (f"{len(flagged)} categories have judges locked on one presentation slot ('yes-man'; "
            f"category {', '.join(map(repr, flagged))}): " in err)
    assert err.count("presentation slot") == 1 and "--leave-out JUDGE" in err
    # left out by name: no such warning, and the tables are those of the file without it
    out, plain = tmp_path / "out.csv", tmp_path / "plain.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        for name, args in ((out, ["--leave-out", "yes-man"]), (plain, [])):
            source = votes if args else tmp_path / "without.csv"
            if not args:
                prd_votes.to_csv(source, index=False)
            assert main(["categories", str(source), "--by", "category", "--panel",
                         "--cluster-col", "-", "--no-overall", "--out", str(name)] + args) == 0
    err = capsys.readouterr().err
    assert "presentation slot" not in err and f"leaving out {len(yes):,} verdicts" in err
    pd.testing.assert_frame_equal(pd.read_csv(out), pd.read_csv(plain))
    assert main(["categories", str(votes), "--by", "category", "--leave-out", "nobody"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "hja-bayes: error: --leave-out: no judge 'nobody' in column 'judge'")
    # with a position term each category's fit leaves the judge out by its own rule (every
    # verdict to one slot): said once for all the categories, and the tables again equal
    # those of the file without it (PRD's judges get their own position term too)
    biased, alone = tmp_path / "biased.csv", tmp_path / "alone.csv"
    for name, source in ((biased, votes), (alone, tmp_path / "without.csv")):
        assert main(["categories", str(source), "--by", "category", "--panel", "--cluster-col",
                     "-", "--no-overall", "--position-bias", "--quiet", "--out",
                     str(name)]) == 0
        err = capsys.readouterr().err
        if source == votes:
            n = yes["category"].nunique()
            assert err.count("left out") == 1 and "presentation slot" not in err
            assert f"judges left out of the fits of {n} categories (yes-man); in the first: " \
                   "judge 'yes-man' chose the first-shown answer in all" in err
    pd.testing.assert_frame_equal(pd.read_csv(biased), pd.read_csv(alone))


def test_a_missing_column_is_one_line_before_any_fit(tmp_path, capsys):
    votes = tmp_path / "votes.csv"
    votes.write_text("model_a,model_b,winner,language\na,b,model_a,en\nb,a,model_b,en\n")
    assert main(["categories", str(votes), "--by", "lang"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("hja-bayes: error: no category column 'lang' (--by)")
    assert main(["categories", str(votes), "--by", "language", "--panel"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("hja-bayes: error: no judge column 'judge';")
    assert "one fit per value" not in err
    assert main(["categories", str(votes), "--by", "language", "--judge-col", "grader"]) == 2
    assert capsys.readouterr().err.strip() == (
        "hja-bayes: error: --judge-col needs --panel: without it every verdict is pooled")


def test_a_category_on_one_prompt_is_left_out_naming_it(prd_votes, tmp_path, capsys):
    """One prompt gives no cluster-robust intervals: that category is left out, saying
    why, as a disconnected one is; the others are reported (it had failed the command)."""
    votes = tmp_path / "votes.csv"
    prd_votes.assign(category=prd_votes["category"].mask(
        prd_votes["question_id"] == 68, "one")).to_csv(votes, index=False)
    assert main(["categories", str(votes), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert ("categories left out: {'one': \"its verdicts come from 1 prompt (column "
            "'question_id'): cluster-robust intervals need at least two;") in captured.err
    assert "\nmath:\n" in captured.out and "\none:\n" not in captured.out
    assert "(10 fitted;" in captured.out


def test_a_category_without_the_baseline_model_is_left_out_naming_it(prd_votes, tmp_path,
                                                                       capsys):
    votes = tmp_path / "votes.csv"
    in_math = (prd_votes["category"] == "math") & (
        (prd_votes["model_a"] == "gpt4") | (prd_votes["model_b"] == "gpt4"))
    prd_votes[~in_math].to_csv(votes, index=False)
    out = tmp_path / "pinned.csv"
    assert main(["categories", str(votes), "--baseline", "gpt4=1200", "--out", str(out),
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "categories left out: {'math': \"no model 'gpt4' to pin (baseline; CLI: " \
           "--baseline): its models are [" in err
    pinned = pd.read_csv(out)
    assert "math" not in set(pinned["category"]) and len(set(pinned["category"])) == 9
    assert (pinned.loc[pinned["model"] == "gpt4", "rating"] == 1200).all()
    # a model that no category has is the command's error, as before
    assert main(["categories", str(votes), "--baseline", "gpt5=1200", "--quiet"]) == 2
    assert "unknown model 'gpt5'" in capsys.readouterr().err.strip().splitlines()[-1]


def test_the_json_meta_holds_for_every_category_and_the_rest_per_category(tmp_path, capsys):
    out = tmp_path / "by_category.json"
    assert main(["categories", "bundled:prd_vicuna80", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    meta = json.loads(out.read_text())["meta"]
    assert meta["cov_type"] == "cluster" and meta["table"] == "leaderboard_by"
    for key in ("n_clusters", "effective_clusters", "critical_value"):
        assert key not in meta  # they differ by category: only under per_category
    per = meta["per_category"]
    assert list(per) == meta["categories"]
    assert per["(all)"]["n_clusters"] == 80 and per["math"]["n_clusters"] == 3
    assert per["(all)"]["critical_value"] != per["coding"]["critical_value"]
    assert per["math"]["critical_value"] is None and per["math"]["joint_refusal"]


def test_out_dash_writes_the_csv_alone_on_stdout(tmp_path, capsys):
    out = tmp_path / "by_category.csv"
    assert main(["categories", "bundled:prd_vicuna80", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["categories", "bundled:prd_vicuna80", "--out", "-", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert not (tmp_path / "-").exists()
    assert captured.out == out.read_text()
    assert "pooled comparison graph" in captured.err  # the summary, on stderr


def test_a_pooled_category_locked_on_one_slot_is_named(prd_votes, tmp_path, capsys):
    """Pooled, each category's verdicts are one judge's, named 'judge' by the reader: the
    warning names the category instead (here --by judge: the judge)."""
    bard = prd_votes[prd_votes.judge == "bard"].reset_index(drop=True)
    yes = bard.assign(judge="yes-man", winner=bard["winner"].where(bard.index % 40 == 0,
                                                                   "model_a"))
    votes = tmp_path / "votes.csv"
    pd.concat([prd_votes, yes], ignore_index=True).to_csv(votes, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        assert main(["categories", str(votes), "--by", "judge", "--cluster-col", "-",
                     "--quiet"]) == 0
    err = capsys.readouterr().err
    assert ("1 category has judges locked on one presentation slot (every verdict pooled as "
            "one judge's; judge 'yes-man'): ") in err
    assert "('judge')" not in err


def test_ordered_verdicts_are_fitted_on_their_grades_as_fit_does(tmp_path, capsys):
    """Five-level verdicts had been read as three outcomes, with a warning per category
    advising an option the command did not have."""
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 4, (2, 400))
    rows = pd.DataFrame({"model_a": a, "model_b": b, "score": rng.choice(
        ["A>>B", "A>B", "A=B", "B>A", "B>>A"], 400), "topic": rng.choice(["x", "y"], 400)})
    rows = rows[a != b].astype({"model_a": str, "model_b": str})
    rows.to_csv(tmp_path / "graded.csv", index=False)
    out = tmp_path / "by_topic.csv"
    assert main(["categories", str(tmp_path / "graded.csv"), "--by", "topic", "--winner-col",
                 "score", "--style", "default", "--scale", "logit", "--no-overall", "--out",
                 str(out)]) == 0
    captured = capsys.readouterr()
    assert "outcome ordinal" in captured.out and "three outcomes" not in captured.err
    x = hb.Comparisons.from_frame(rows[rows["topic"] == "x"], judge=None, winner="score")
    alone = hb.leaderboard(hb.fit_hja(x, rank=0, outcome="ordinal"))
    part = pd.read_csv(out).query("category == 'x'").drop(columns="category")
    np.testing.assert_allclose(part["score"], alone["score"], rtol=1e-6)
    assert main(["categories", str(tmp_path / "graded.csv"), "--by", "topic", "--winner-col",
                 "score", "--outcome", "half", "--no-overall", "--out", str(out)]) == 0
    assert "outcome" not in capsys.readouterr().out.split("Leaderboards")[1].splitlines()[0]


def test_category_values_that_read_as_one_label_are_refused_not_merged(prd_votes):
    """A category named "(all)" had replaced the overall table, and 1 beside "1" had kept
    one of the two categories' tables, without a word."""
    rows = prd_votes.astype({"category": object})
    named_all = rows.assign(category=rows["category"].replace({"math": "(all)"}))
    with pytest.raises(hb.DataError, match=r"named '\(all\)'.*--no-overall"):
        hb.leaderboard_by(named_all)
    table = hb.leaderboard_by(named_all, overall=False)
    assert (table["category"] == "(all)").sum() == 5
    assert table[table["category"] == "(all)"]["num_battles"].max() < len(rows) / 2
    mixed = rows.copy()
    mixed.loc[mixed["category"] == "math", "category"] = 1
    mixed.loc[mixed["category"] == "coding", "category"] = "1"
    with pytest.raises(hb.DataError, match=r"read as one category: \['1', 1\] as '1'"):
        hb.leaderboard_by(mixed)


def test_categories_without_every_model_are_said_not_to_compare_scores(prd_votes):
    rows = prd_votes[~((prd_votes["category"] == "writing")
                       & prd_votes[["model_a", "model_b"]].isin(["gpt35"]).any(axis=1))]
    with pytest.warns(hb.DataWarning, match=r"without every model: \{'writing': \['gpt35'\]\}"):
        table = hb.leaderboard_by(rows)
    assert set(table[table["category"] == "writing"]["model"]) == set(table["model"]) - {"gpt35"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pinned to a model every category has: comparable
        hb.leaderboard_by(rows, baseline=("gpt4", 1000.0))


def test_a_verdict_that_cannot_be_read_is_an_error_not_a_category_left_out(prd_votes):
    """A typo in one verdict had left out its category and the overall table as "skipped"
    (``fit_by_category`` without a word, ``leaderboard_by`` with a warning): the rows are
    read whole first, and the error names the row."""
    from hja_bayes.by_category import fit_by_category

    rows = prd_votes.copy()
    rows.loc[rows.index[0], "winner"] = "modle_a"
    for call in (lambda: hb.leaderboard_by(rows), lambda: hb.leaderboard_by(rows, overall=False),
                 lambda: fit_by_category(rows)):
        with pytest.raises(hb.DataError, match=r"row 0: winner 'modle_a' is neither"):
            call()


def test_category_labels_differing_in_case_or_spaces_are_kept_apart_and_named(prd_votes):
    rows = prd_votes.astype({"category": object})
    rows.loc[rows["category"] == "math", "category"] = "Coding "
    with pytest.warns(hb.DataWarning, match=r"category names that differ only in case.*"
                                            r"'coding' / 'Coding '"):
        table = hb.leaderboard_by(rows)
    assert {"coding", "Coding "} <= set(table["category"])
