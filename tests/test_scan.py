"""Comparisons.scan with DuckDB and Polars against the in-memory reader (from_frame).

The reference is ``Comparisons.from_frame`` on the same rows read into pandas: the scan must
give the same cells, counts, rejected rows and prompt incidence, and, with the prompts
kept in the engine, the same cluster-robust intervals to 1e-10.
"""

import importlib.util
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes import Comparisons, DataError, DataWarning, ParameterError, fit_hja
from tests.conftest import shared_data_or_skip
from tests.scan_support import (SHARED_PANELS, assert_same_data, bundled_prd, in_order_of,
                                interval_gap, numbered_hive_folders, prd_with_lone_prompts,
                                read_as_text, single_prompt_refusals)

pytest.importorskip("duckdb")
ENGINES = ["duckdb"] + (["polars"] if importlib.util.find_spec("polars") else [])


def frame(**cols):
    return pd.DataFrame(cols)


@pytest.mark.parametrize("engine", ENGINES)
def test_bundled_prd_cells_and_incidence_equal_from_frame(engine):
    path = bundled_prd()
    reference = Comparisons.from_frame(read_as_text(path), cluster="question_id")
    scanned = Comparisons.scan(path, engine=engine, cluster="question_id")
    assert_same_data(scanned, reference)
    assert scanned.judges == tuple(sorted(reference.judges))


def test_a_polars_table_is_scanned_by_polars_without_naming_it():
    pl = pytest.importorskip("polars")
    from hja_bayes.scan import engine_for

    path = bundled_prd()
    reference = Comparisons.from_frame(read_as_text(path), cluster="question_id")
    lazy = pl.scan_csv(path, infer_schema=False)  # a lazy frame: duckdb could not take it
    assert engine_for(lazy) == engine_for(lazy.collect()) == "polars"
    assert engine_for(path) == engine_for(reference.to_frame()) == "duckdb"
    assert_same_data(Comparisons.scan(lazy, cluster="question_id"), reference)
    with pytest.raises(DataError, match="engine='duckdb' scans a path"):  # asked for: refused
        Comparisons.scan(lazy, engine="duckdb", cluster="question_id")


def test_a_duckdb_relation_is_refused_with_the_ways_that_work(tmp_path, monkeypatch):
    import tempfile

    import duckdb

    path = bundled_prd()
    relation = duckdb.sql(f"SELECT * FROM read_csv('{path}', all_varchar = true)")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the engine's folder goes
    with pytest.raises(DataError, match=r"DuckDB relation: pass the path.*relation.df\(\)"):
        Comparisons.scan(relation, cluster="question_id")
    assert list(tmp_path.iterdir()) == []  # the refused source left no folder behind
    reference = Comparisons.from_frame(read_as_text(path), cluster="question_id")
    assert_same_data(Comparisons.scan(relation.df(), cluster="question_id"), reference)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("parts, cluster", SHARED_PANELS)
def test_shared_panels_equal_from_frame(engine, parts, cluster):
    path = shared_data_or_skip(*parts)
    reference = Comparisons.from_frame(read_as_text(path), cluster=cluster)
    assert_same_data(Comparisons.scan(path, engine=engine, cluster=cluster), reference)
    kept = Comparisons.scan(path, engine=engine, cluster=cluster, incidence="engine")
    assert kept.clusters.in_engine
    assert_same_data(kept, reference)
    assert interval_gap(kept, reference, rank=1) < 1e-10


def test_intervals_with_position_bias_and_davidson_ties_equal_in_memory():
    path = bundled_prd()
    reference = Comparisons.from_frame(read_as_text(path), cluster="question_id")
    kept = Comparisons.scan(path, cluster="question_id", incidence="engine",
                            rows_per_group=2_500)  # prompts summed in partitions on disk
    assert interval_gap(kept, reference, rank=1, position_bias=True) < 1e-10
    assert interval_gap(kept, reference, rank=0, outcome="davidson") < 1e-10


@pytest.mark.parametrize("engine", ENGINES)
def test_folded_and_selected_data_keep_their_engine_prompts(engine):
    path = bundled_prd()
    reference = Comparisons.from_frame(read_as_text(path), cluster="question_id")
    kept = in_order_of(Comparisons.scan(path, engine=engine, cluster="question_id",
                                        incidence="engine", rows_per_group=3_000), reference)
    # folded: rows shown in the other order add to the cell with their categories reversed
    assert interval_gap(kept.fold_order(), reference.fold_order(), rank=1) < 1e-10
    three = list(reference.judges[:3])
    assert interval_gap(kept.select_judges(three), reference.select_judges(three),
                        rank=0) < 1e-10


@pytest.mark.parametrize("engine", ENGINES)
def test_prompts_only_a_left_out_judge_judged_are_not_counted(engine, tmp_path):
    """A selection of judges counts the prompts its judges judged: the engine had counted
    every prompt of the scan (G = 80 for 79 in memory), so CR1's G / (G - 1) and the
    recorded clusters differed from the in-memory reading."""
    df = read_as_text(bundled_prd())
    df = df[(df["question_id"] != "5") | (df["judge"] == "gpt4")]  # q5: gpt4's alone
    df.to_csv(tmp_path / "q5.csv", index=False)
    memory = Comparisons.from_frame(df, cluster="question_id")
    kept = Comparisons.scan(tmp_path / "q5.csv", engine=engine, cluster="question_id",
                            incidence="engine")
    others = [j for j in memory.judges if j != "gpt4"]
    assert kept.clusters.n_clusters == 80
    assert kept.select_judges(others).clusters.n_clusters == 79
    assert interval_gap(kept.select_judges(others), memory.select_judges(others), rank=0) < 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        left = fit_hja(in_order_of(kept, memory), rank=0, leave_out=["gpt4"])
        direct = fit_hja(memory, rank=0, leave_out=["gpt4"])
    assert left.clustering["n_clusters"] == direct.clustering["n_clusters"] == 79
    assert left.clustering["effective_clusters"] == direct.clustering["effective_clusters"]


# the verdicts are drawn without regard to the models, so the judges share no consensus and
# the rank-0 intervals carry the few-verdicts warning; what is checked is their equality
@pytest.mark.filterwarnings("ignore:the judges' sensitivities rest on few verdicts")
def test_ordinal_labels_and_intervals_equal_in_memory(tmp_path):
    rng = np.random.default_rng(3)
    n = 3000
    models = np.array(["m1", "m2", "m3", "m4"])
    pair = np.array([rng.choice(4, 2, replace=False) for _ in range(n)])
    labels = np.array(["A>>B", "A>B", "A=B", "B>A", "B>>A", "[[A>B]]", "tie", "invalid"])
    df = pd.DataFrame({"judge": rng.choice(["j1", "j2", "j3"], n),
                       "prompt": rng.integers(0, 60, n).astype(str),
                       "model_a": models[pair[:, 0]], "model_b": models[pair[:, 1]],
                       "winner": rng.choice(labels, n, p=[.2, .2, .15, .15, .15, .05, .05, .05])})
    df.to_json(tmp_path / "v.jsonl", orient="records", lines=True)
    reference = Comparisons.from_frame(df, cluster="prompt")
    scanned = Comparisons.scan(tmp_path / "v.jsonl", cluster="prompt")
    assert scanned.categories == ("A>>B", "A>B", "A=B", "B>A", "B>>A")
    assert_same_data(scanned, reference)
    kept = Comparisons.scan(tmp_path / "v.jsonl", cluster="prompt", incidence="engine")
    assert interval_gap(kept, reference, rank=0, outcome="ordinal") < 1e-10
    assert interval_gap(kept, reference, rank=0, outcome="half") < 1e-10  # collapsed


def test_numeric_scale_one_hot_columns_and_winner_names(tmp_path):
    df = frame(judge=["j1", "j1", "j2", "j2"], model_a=["x", "y", "x", "y"],
               model_b=["y", "x", "y", "x"], score=["2", "-1", "0", "n/a"])
    df.to_csv(tmp_path / "s.csv", index=False)
    reference = Comparisons.from_frame(df, winner="score", scale="-2..2")
    assert_same_data(Comparisons.scan(tmp_path / "s.csv", winner="score", scale=(-2, 2)),
                     reference)
    hot = frame(model_a=["x", "y", "x"], model_b=["y", "x", "y"], winner_model_a=[1, 0, 0],
                winner_model_b=[0, 1, 0], winner_tie=[0, 0, 1])
    hot.to_parquet(tmp_path / "h.parquet")
    assert_same_data(Comparisons.scan(tmp_path / "h.parquet", judge=None),
                     Comparisons.from_frame(hot, judge=None))
    named = frame(judge=["j", "j", "j"], model_a=["x", "y", "x"], model_b=["y", "x", "y"],
                  winner=["y", "y", "Tie "])
    assert_same_data(Comparisons.scan(named), Comparisons.from_frame(named))


def test_invalid_verdicts_counted_per_judge_and_judge_without_valid_rows_dropped(tmp_path):
    df = frame(judge=["j1", "j1", "j2", "j3", "j3"], model_a=["a"] * 5, model_b=["b"] * 5,
               winner=["model_a", "invalid", "N/A", "", "tie"])
    df.to_csv(tmp_path / "i.csv", index=False)
    with pytest.warns(DataWarning, match="j2"):
        reference = Comparisons.from_frame(read_as_text(tmp_path / "i.csv"))
    with pytest.warns(DataWarning, match="j2"):
        scanned = Comparisons.scan(tmp_path / "i.csv")
    assert_same_data(scanned, reference)
    assert scanned.rejected_by_judge == {"j1": 1, "j2": 1, "j3": 1}
    assert scanned.dropped_judges == ("j2",)


def test_globs_lists_and_partitioned_folders(tmp_path):
    df = read_as_text(bundled_prd())
    for judge, part in df.groupby("judge"):
        folder = tmp_path / "logs" / f"judge={judge}"
        folder.mkdir(parents=True)
        part.drop(columns="judge").to_parquet(folder / "part-0.parquet")
    reference = Comparisons.from_frame(df, cluster="question_id")
    assert_same_data(Comparisons.scan(tmp_path / "logs", cluster="question_id"), reference)
    assert_same_data(Comparisons.scan(str(tmp_path / "logs" / "**" / "*.parquet"),
                                      cluster="question_id"), reference)
    halves = [tmp_path / "a.csv", tmp_path / "b.csv"]
    df.iloc[:3000].to_csv(halves[0], index=False)
    df.iloc[3000:].to_csv(halves[1], index=False)
    for engine in ENGINES:
        assert_same_data(Comparisons.scan(halves, engine=engine, cluster="question_id"),
                         reference)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_hive_folders_named_like_numbers_keep_their_names(tmp_path, fmt):
    """Polars read judge=01 and judge=1 as one judge 1 (judge=007 as 7), silently; the
    folders of CSV parts it did not read at all ("no judge column")."""
    reference = numbered_hive_folders(tmp_path / "logs", fmt)
    for engine in ENGINES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)  # '1' / '01', as in memory
            data = Comparisons.scan(tmp_path / "logs", engine=engine, cluster="question_id")
        assert set(data.judges) == {"01", "1", "007", "7", "2"}
        assert_same_data(data, reference)


def test_a_folders_files_left_out_are_named(tmp_path):
    """A suffixless part, a README.txt beside .csv parts and a 0-byte part (which, sorted
    first, had ended DuckDB's read with "no verdict column 'winner'") are left out and named;
    they had been skipped silently (2,500 of 10,000 rows) or read as parts."""
    df = read_as_text(bundled_prd())
    folder = tmp_path / "logs"
    folder.mkdir()
    df.iloc[:4000].to_csv(folder / "part-1.csv", index=False)
    df.iloc[4000:].to_csv(folder / "part-2.csv", index=False)
    df.iloc[:100].to_csv(folder / "part-3", index=False)  # no suffix
    (folder / "part-0.csv").write_text("")  # empty, sorted first
    (folder / "README.txt").write_text("Exported by pipeline v2, 2026-01-01.\n")
    reference = Comparisons.from_frame(df, cluster="question_id")
    for engine in ENGINES:
        with pytest.warns(DataWarning) as caught:
            data = Comparisons.scan(folder, engine=engine, cluster="question_id")
        said = " ".join(str(w.message) for w in caught)
        assert "part-3" in said and "README.txt" in said and "part-0.csv" in said
        assert_same_data(data, reference)
    df.iloc[:10].to_json(folder / "extra.jsonl", orient="records", lines=True)
    which = r"these mix csv \(.*part-1\.csv, \.\.\.\), jsonl \(.*extra\.jsonl, \.\.\.\)"
    with pytest.warns(DataWarning), pytest.raises(DataError, match=which):  # which is which
        Comparisons.scan(folder, cluster="question_id")


def test_json_lines_mixing_text_and_number_prompts_make_one_prompt_of_each_id(tmp_path):
    """DuckDB types such a column JSON, and its text had been the JSON spelling ('"1"' beside
    '1': two prompts of one, intervals too narrow); every reader takes the value."""
    rows = [{"question_id": q, "judge": "j", "model_a": a, "model_b": b, "winner": w}
            for q, a, b, w in (("1", "x", "y", "model_a"), (1, "y", "x", "model_b"),
                               (2, "x", "z", "tie"), ("2", "z", "y", "model_a"))]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    reference = Comparisons.from_file(path, cluster="question_id")
    assert reference.clusters.names == ("1", "2")
    for engine in ENGINES:
        assert_same_data(Comparisons.scan(path, engine=engine, cluster="question_id"),
                         reference)


def test_blank_lines_in_a_csv_are_skipped_by_every_engine(tmp_path):
    """Polars had read a blank line as a row of nulls: 'column judge has a missing value'."""
    path = tmp_path / "blank.csv"
    path.write_text("judge,model_a,model_b,winner,question_id\nj,x,y,model_a,1\n\n"
                    "j,y,x,model_b,1\n\n")
    reference = Comparisons.from_file(path, cluster="question_id")
    assert reference.rows_read == 2
    for engine in ENGINES:
        assert_same_data(Comparisons.scan(path, engine=engine, cluster="question_id"),
                         reference)


def test_missing_column_is_an_error_before_any_work(tmp_path, monkeypatch):
    df = frame(judge=["j"], model_a=["a"], model_b=["b"], winner=["tie"])
    df.to_parquet(tmp_path / "x.parquet")
    from hja_bayes.scan import duckdb_engine

    def no_rows(*args, **kwargs):  # pragma: no cover - must not be reached
        raise AssertionError("rows were read")

    monkeypatch.setattr(duckdb_engine.DuckDBEngine, "distinct", no_rows)
    with pytest.raises(DataError, match=r"\['prompt'\] not found; the columns there are"):
        Comparisons.scan(tmp_path / "x.parquet", cluster="prompt")
    with pytest.raises(DataError, match="no judge column 'grader'"):
        Comparisons.scan(tmp_path / "x.parquet", judge="grader")
    with pytest.raises(DataError, match="no verdict column 'verdict'"):
        Comparisons.scan(tmp_path / "x.parquet", winner="verdict")


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_rows_in_the_middle_name_file_and_line_and_are_counted(tmp_path, engine):
    df = read_as_text(bundled_prd())
    bad = df.copy()
    bad.loc[[4000, 4100, 7000], "winner"] = "banana"
    files = [tmp_path / "p1.csv", tmp_path / "p2.csv"]
    bad.iloc[:2000].to_csv(files[0], index=False)
    bad.iloc[2000:].to_csv(files[1], index=False)
    # the models named are those of the row located (Polars had named another bad row's)
    items = re.escape(f"nor one of the row's items ({bad.loc[4000, 'model_a']!r}, "
                      f"{bad.loc[4000, 'model_b']!r})")
    assert bad.loc[4000, ["model_a", "model_b"]].tolist() != \
        bad.loc[4100, ["model_a", "model_b"]].tolist()
    with pytest.raises(DataError, match=r"p2\.csv, line 2002 .*'banana'.*" + items
                       + ".*3 such rows in all"):
        Comparisons.scan(files, engine=engine)
    bad.to_parquet(tmp_path / "p.parquet", row_group_size=1000)
    with pytest.raises(DataError, match=r"p\.parquet, row 4000 \(0-based, in row group 4\)"
                                        r".*" + items + ".*3 such rows"):
        Comparisons.scan(tmp_path / "p.parquet", engine=engine)
    with open(tmp_path / "p.jsonl", "w") as fh:
        for record in bad.iloc[:4500].to_dict("records"):
            fh.write(json.dumps(record) + "\n")
    with pytest.raises(DataError, match=r"p\.jsonl, line 4001 .*2 such rows"):
        Comparisons.scan(tmp_path / "p.jsonl", engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_row_errors_match_the_readers(tmp_path, engine):
    cases = [
        (frame(judge=["j", "j"], model_a=["a", "b"], model_b=["b", "b"], winner=["tie", "tie"]),
         "compares 'b' with itself.*drop the rows whose two models are the same"),
        (frame(judge=["j", "j"], model_a=["B", "c"], model_b=["c", "B"], winner=["B", "tie"]),
         "reads two ways"),
        (frame(judge=["j", "j"], model_a=["a", " "], model_b=["b", "a"], winner=["tie", "tie"]),
         "empty name in column 'model_a'"),
        (frame(judge=["j", "j"], model_a=["a", "b"], model_b=["b", "a"], winner=["A>B", "x"]),
         "is none of the ordered labels"),
        (frame(judge=["j", "j"], model_a=["a", "b"], model_b=["b", "c"], winner=["1", "0"]),
         r"winner '1' is neither.*numbers are read as ordered verdicts with scale='LO..HI'"),
    ]
    for df, message in cases:
        with pytest.raises(DataError, match=message):
            Comparisons.from_frame(df)
        with pytest.raises(DataError, match=message):
            Comparisons.scan(df, engine=engine)
    missing = frame(judge=["j", "j"], model_a=["a", None], model_b=["b", "a"], winner=["tie"] * 2)
    missing.to_parquet(tmp_path / "m.parquet")
    with pytest.raises(DataError, match=r"m\.parquet, row 1 .*missing value"):
        Comparisons.scan(tmp_path / "m.parquet", engine=engine)
    # an empty prompt (a CSV's empty cell) had made one prompt of all such verdicts
    blank = frame(judge=["j"] * 3, model_a=["a", "b", "a"], model_b=["b", "a", "b"],
                  winner=["tie"] * 3, question_id=["q1", "", " "])
    blank.to_parquet(tmp_path / "q.parquet")
    with pytest.raises(DataError, match=r"row 1: empty prompt in column 'question_id' \(2 such"):
        Comparisons.from_frame(blank, cluster="question_id")
    with pytest.raises(DataError, match=r"q\.parquet, row 1 .*'question_id' has a missing or "
                                        r"empty value.*\(2 such rows in all\)"):
        Comparisons.scan(tmp_path / "q.parquet", engine=engine, cluster="question_id")
    with pytest.raises(ParameterError, match="scale"):
        Comparisons.scan(missing, scale="1..1")


def test_engine_prompts_refuse_what_needs_them_in_memory_and_report_their_count(tmp_path):
    kept = Comparisons.scan(bundled_prd(), cluster="question_id", incidence="engine")
    assert kept.clusters.n_clusters == 80 and kept.cluster_column == "question_id"
    assert "clusters from column 'question_id': 80" in str(kept.summary())
    with pytest.raises(DataError, match="incidence='memory'"):
        kept.clusters.cell
    with pytest.raises(DataError, match="incidence='memory'"):  # saving needs them: refused,
        fit_hja(kept, rank=0).save(tmp_path / "saved")  # before the folder is made
    assert not (tmp_path / "saved").exists()
    with pytest.raises(ParameterError, match="engine must be one of"):
        Comparisons.scan(bundled_prd(), engine="sqlite")
    with pytest.raises(ParameterError, match="unknown option"):
        Comparisons.scan(bundled_prd(), engine="duckdb", partitions=3)


def test_default_intervals_with_engine_prompts_are_cr1_and_say_so():
    kept = Comparisons.scan(bundled_prd(), cluster="question_id", incidence="engine")
    memory = Comparisons.from_frame(read_as_text(bundled_prd()), cluster="question_id")
    fit = fit_hja(in_order_of(kept, memory), rank=0)
    with pytest.warns(DataWarning, match="use CR1"):
        default = fit.intervals()
    cr1 = fit_hja(memory, rank=0).intervals(cov_type="CR1")
    np.testing.assert_allclose(default["se"], cr1["se"], rtol=1e-10)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_model_or_judge_on_one_prompt_is_refused_as_in_memory(engine, tmp_path):
    """Prompts kept in the engine are counted per judge and model of the fit's data (the
    judges it keeps): a model on one prompt once 'bard' is left out, a judge always.  The
    refusals are the in-memory reader's, word for word (CR1 had called such a model precise:
    se 0.099 against Fisher's 0.190 on a small panel)."""
    prd_with_lone_prompts().to_csv(tmp_path / "lone.csv", index=False)
    memory = Comparisons.from_frame(read_as_text(tmp_path / "lone.csv"), cluster="question_id")
    kept = Comparisons.scan(tmp_path / "lone.csv", engine=engine, cluster="question_id",
                            incidence="engine", rows_per_group=1_500)  # prompts in groups
    said = single_prompt_refusals(kept)
    assert said == single_prompt_refusals(memory)
    assert re.search(r"judge\(s\) 'gpt4' appear\(s\) on a single prompt", said[0])
    assert "'claude'" not in said[0]
    assert re.search(r"model\(s\) 'claude' and judge\(s\) 'gpt4' appear", said[1])
    assert said[2] == ""  # 'claude' on two prompts: intervals
    # folded, the refusal still names the prompt column (folding had dropped it)
    assert single_prompt_refusals(kept.fold_order()) == single_prompt_refusals(
        memory.fold_order())
    # and a bootstrap of prompts, whose Poisson weights the engine draws, is refused too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        fit = fit_hja(kept, rank=0, leave_out=["bard", "gpt4"])
    with pytest.raises(hb.IdentifiabilityError, match=r"model\(s\) 'claude' .*bootstrap of "
                                                      "prompts"):
        fit.bootstrap(5)


@pytest.mark.parametrize("engine", ENGINES)
def test_poisson_bootstrap_counts_are_the_engines_weights_applied_to_each_prompt(engine):
    path = bundled_prd()
    memory = Comparisons.scan(path, engine=engine, cluster="question_id", incidence="memory")
    kept = Comparisons.scan(path, engine=engine, cluster="question_id", incidence="engine")
    drawn = kept.clusters.poisson_counts(kept, 4, seed=11, start=3)
    weights = kept.clusters.engine.poisson_weights(7, seed=11)
    assert abs(weights["w"].mean() - 1) < 0.15 and weights["w"].min() == 0
    c = memory.clusters
    for r in range(4):
        w = weights[weights.rep == r + 3].set_index("g")["w"].reindex(list(c.names)).to_numpy()
        expected = np.stack([np.bincount(c.cell, c.counts[:, a] * w[c.cluster], memory.n_cells)
                             for a in range(3)], axis=1)
        np.testing.assert_array_equal(drawn[r], expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = fit_hja(kept, rank=0).bootstrap(n=3, seed=2)
    assert boot.mu.shape == (3, 5) and np.all(np.isfinite(boot.mu))


def test_the_command_line_scans_a_folder_or_glob_of_files(tmp_path, capsys):
    # DATA a folder or a glob of shards: scanned by DuckDB, the same fit as the one file
    from hja_bayes import load_fit, simulate
    from hja_bayes.cli import main

    data, _ = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=300, seed=2,
                       questions=30, question_correlation=0.3)
    c = data.clusters
    rows = pd.DataFrame(
        [(c.names[g], data.judges[data.judge[cell]], data.items[data.first[cell]],
          data.items[data.second[cell]], label)
         for g, cell, counts in zip(c.cluster, c.cell, c.counts)
         for label, n in zip(("model_a", "tie", "model_b"), counts) for _ in range(int(n))],
        columns=["question_id", "judge", "model_a", "model_b", "winner"])
    shards = tmp_path / "logs"
    shards.mkdir()
    for part in range(3):
        rows.iloc[part::3].to_csv(shards / f"part{part}.csv", index=False)
    rows.to_csv(tmp_path / "all[1].csv", index=False)  # a file's own name, not a glob
    fits = {}
    for name, source in (("one", tmp_path / "all[1].csv"), ("folder", shards),
                         ("glob", f"{shards}/part*.csv")):
        assert main(["fit", str(source), "--rank", "1", "--quiet",
                     "--out", str(tmp_path / name)]) == 0
        fits[name] = load_fit(tmp_path / name)
    capsys.readouterr()
    for name in ("folder", "glob"):
        assert fits[name].data.n_comparisons == fits["one"].data.n_comparisons
        assert fits[name].data.cluster_column == "question_id"
        assert fits[name].data.summary().n_clusters == 30
        # matched by name: a scan sorts judges and models, the reader keeps their order
        scores = [pd.DataFrame(f.S, index=f.judges, columns=f.items)
                  for f in (fits[name], fits["one"])]
        pd.testing.assert_frame_equal(*(x.sort_index().sort_index(axis=1) for x in scores),
                                      atol=1e-8)
        bounds = [f.intervals().set_index(["quantity", "label"])[["lower", "upper"]]
                  for f in (fits[name], fits["one"])]
        pd.testing.assert_frame_equal(*(b.sort_index() for b in bounds), atol=1e-8)
    assert main(["fit", str(shards), "--counts", "--quiet", "--out", str(tmp_path / "x")]) == 2
    assert "--counts reads one file, not a folder or glob" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ENGINES)
def test_scan_columns_are_the_files_columns_without_reading_rows(engine):
    from hja_bayes.scan import scan_columns

    assert scan_columns(bundled_prd(), engine=engine) == list(read_as_text(bundled_prd()).columns)


@pytest.mark.skipif("polars" not in ENGINES, reason="polars is not installed")
def test_polars_says_what_it_needs_of_the_parts(tmp_path):
    """Parts with their columns in another order stop Polars (DuckDB reads them): its error
    had named only the first part and its schema, not what to do."""
    df = read_as_text(bundled_prd())
    df.iloc[:4000].to_csv(tmp_path / "part-0.csv", index=False)
    df.iloc[4000:][list(df.columns[::-1])].to_csv(tmp_path / "part-1.csv", index=False)
    with pytest.raises(DataError, match="Polars reads the parts as one table.*engine='duckdb'"):
        Comparisons.scan(tmp_path, engine="polars", cluster="question_id")
    assert_same_data(Comparisons.scan(tmp_path, cluster="question_id"),
                     Comparisons.from_frame(df, cluster="question_id"))


def test_utf16_parts_are_refused_naming_the_file(tmp_path):
    """UTF-16 text (PowerShell 5's redirected output) had failed deep in the engine."""
    df = read_as_text(bundled_prd())
    df.iloc[:4000].to_csv(tmp_path / "part-0.csv", index=False)
    df.iloc[4000:].to_csv(tmp_path / "part-1.csv", index=False, encoding="utf-16")
    for engine in ENGINES:
        with pytest.raises(DataError, match=r"part-1\.csv is UTF-16 text: a scan reads UTF-8"):
            Comparisons.scan(tmp_path, engine=engine, cluster="question_id")
    alone = Comparisons.from_file(tmp_path / "part-1.csv", cluster="question_id")
    assert alone.n_comparisons > 0  # the in-memory reader reads it


def test_a_column_named_twice_is_said_as_the_in_memory_reader_says_it(tmp_path):
    """A second 'winner' column had been dropped by every engine without a word."""
    path = tmp_path / "twice.csv"
    path.write_text("judge,model_a,model_b,winner,winner\nj1,a,b,model_a,model_b\n"
                    "j1,b,c,model_b,model_a\nj1,a,c,model_a,tie\n", encoding="utf-8")
    with pytest.warns(DataWarning, match=r"\['winner'\] more than once"):
        memory = Comparisons.from_file(path)
    for engine in ENGINES:
        with pytest.warns(DataWarning, match=r"twice\.csv names column\(s\) \['winner'\] more "
                                             "than once: a scan reads the first of each"):
            scanned = Comparisons.scan(path, engine=engine)
        assert_same_data(scanned, memory)


def test_a_csv_duckdb_cannot_lay_out_is_said_in_a_few_lines(tmp_path):
    """A row with a field too many: DuckDB's sniffer had answered with 30 lines of its own
    read options (not ours to pass) and the package's SQL."""
    path = tmp_path / "bad.csv"
    path.write_text("judge,model_a,model_b,winner\nj1,a,b,model_a\nj1,a,b,model_a,extra\n"
                    "j2,b,a,model_b\n", encoding="utf-8")
    with pytest.raises(DataError, match="DuckDB could not read it") as caught:
        Comparisons.scan(str(path), engine="duckdb")
    text = str(caught.value)
    assert "from_csv names the line" in text
    assert "Possible fixes" not in text and "LINE 1" not in text and text.count("\n") <= 2
