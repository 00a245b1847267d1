"""fit.update: merging new verdicts into a fit's data, and the warm-started fit against a
full refit of the merged data."""

import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.design import merge_comparisons
from hja_bayes.errors import DataError


def _split(data, share, seed=0):
    """The data's verdicts (per (prompt, cell) entry) split into (1 - share, share)."""
    rng = np.random.default_rng(seed)
    c = data.clusters
    rows = []
    for g, cell, counts in zip(c.cluster, c.cell, c.counts):
        for category, n in enumerate(counts):
            rows += [(c.names[g], data.judges[data.judge[cell]], data.items[data.first[cell]],
                      data.items[data.second[cell]], ("model_a", "tie", "model_b")[category])] * int(n)
    frame = pd.DataFrame(rows, columns=["question_id", "judge", "model_a", "model_b", "winner"])
    new = rng.random(len(frame)) < share
    return frame[~new], frame[new]


@pytest.fixture(scope="module")
def panel():
    data, _ = hb.simulate(n_judges=3, n_items=6, rank=1, comparisons_per_judge=1500, seed=4,
                          position_bias=0.3, questions=30, question_correlation=0.3)
    old, new = _split(data, 0.01)
    return (hb.Comparisons.from_frame(old, cluster="question_id"),
            hb.Comparisons.from_frame(new, cluster="question_id"))


def test_merge_adds_counts_cell_by_cell(panel):
    old, new = panel
    merged = merge_comparisons(old, new)
    assert merged.n_comparisons == old.n_comparisons + new.n_comparisons
    assert merged.judges == old.judges and merged.items == old.items
    assert merged.clusters.n_clusters == len(set(old.clusters.names) | set(new.clusters.names))
    total = {}
    for d in (old, new):
        for k, i, j, c in zip(d.judge, d.first, d.second, d.counts):
            key = (d.judges[k], d.items[i], d.items[j])
            total[key] = total.get(key, 0) + c
    for k, i, j, c in zip(merged.judge, merged.first, merged.second, merged.counts):
        np.testing.assert_array_equal(c, total[(merged.judges[k], merged.items[i], merged.items[j])])


def _entries(d):
    """{(prompt, judge, first, second): counts} of a Comparisons with prompts."""
    c = d.clusters
    return {(c.names[g], d.judges[d.judge[e]], d.items[d.first[e]], d.items[d.second[e]]):
            counts for g, e, counts in zip(c.cluster, c.cell, c.counts)}


def test_merge_keeps_the_order_of_the_rejection_tallies(panel):
    """The old data's reasons and judges first, then the new ones, in the order read: the
    merged tallies had come out in the hash seed's order (a set), different from one
    process to the next (eight names: 1 in 40,320 orders is the one read)."""
    import dataclasses

    old, new = panel
    names = [f"reason {c}" for c in "hgfedcba"]
    old = dataclasses.replace(old, rejected=dict.fromkeys(names[:5], 1),
                              rejected_by_judge=dict.fromkeys(names[:5], 2))
    new = dataclasses.replace(new, rejected=dict.fromkeys(names[3:], 1),
                              rejected_by_judge=dict.fromkeys(names[3:], 1))
    merged = merge_comparisons(old, new)
    assert list(merged.rejected) == names and list(merged.rejected_by_judge) == names
    assert merged.rejected == {**dict.fromkeys(names, 1), "reason e": 2, "reason d": 2}


def test_merge_says_which_judges_are_dropped_on_both_sides(panel):
    """A judge all of whose rows one side rejected, with verdicts on the other, is not
    dropped; one dropped by the new data is (the merge had kept the old data's list)."""
    import dataclasses

    old, new = panel
    old = dataclasses.replace(old, dropped_judges=("judge1", "gone"))
    new = dataclasses.replace(new, dropped_judges=("later",))
    assert merge_comparisons(old, new).dropped_judges == ("gone", "later")


def test_merging_folded_data_keeps_each_pair_once_and_in_order():
    """Folded data hold (judge, first < second) once; new data whose models were met in
    another order had left cells the other way round beside their folded twins."""
    data, _ = hb.simulate(n_judges=2, n_items=5, rank=0, comparisons_per_judge=400, seed=6,
                          questions=20)
    old, new = _split(data, 0.1)
    new = new.iloc[::-1]  # its models met in the other order: other codes
    for read in (dict(cluster="question_id"), {}):
        a, b = (hb.Comparisons.from_frame(f, **read).fold_order() for f in (old, new))
        assert a.items != b.items
        merged = merge_comparisons(a, b)
        assert not merged.order_known and np.all(merged.first < merged.second)
        assert not pd.Series(list(zip(merged.judge, merged.first, merged.second))).duplicated().any()
        assert merged.n_comparisons == a.n_comparisons + b.n_comparisons


def test_merge_adds_prompt_entries_and_keeps_the_readers_order(panel):
    """Entries seen before add their counts, new (prompt, cell) entries join; cells and
    entries stay in the order the readers give (what reading all the rows at once gives)."""
    old, new = panel
    merged = merge_comparisons(old, new)
    want = dict(_entries(old))
    for key, counts in _entries(new).items():
        want[key] = want.get(key, 0) + counts
    got = _entries(merged)
    assert got.keys() == want.keys() and len(got) == len(merged.clusters.cell)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key])
    assert merged.cluster_column == old.cluster_column == "question_id"
    N = merged.n_items
    keys = (merged.judge * N + merged.first) * N + merged.second
    assert np.all(np.diff(keys) > 0)
    entries = merged.clusters.cluster * merged.n_cells + merged.clusters.cell
    assert np.all(np.diff(entries) > 0)
    # cells out of that order (built by hand) take the general path to the same counts
    order = np.arange(old.n_cells)[::-1]
    shuffled = hb.Comparisons(old.judges, old.items, old.judge[order], old.first[order],
                              old.second[order], old.counts[order],
                              clusters=old.clusters._replace(
                                  cell=np.argsort(order)[old.clusters.cell]))
    again = merge_comparisons(shuffled, new)
    np.testing.assert_array_equal(again.counts, merged.counts)
    assert _entries(again).keys() == got.keys()


def test_update_equals_a_full_refit(panel):
    old, new = panel
    fit = hb.fit_hja(old, rank=1, position_bias=True)
    updated = fit.update(new)
    merged = merge_comparisons(old, new)
    refit = hb.fit_hja(merged, rank=1, position_bias=True)
    tight = hb.fit_hja(merged, rank=1, position_bias=True, tol=1e-14, max_iter=20000)
    assert updated.converged and updated.data.n_comparisons == merged.n_comparisons
    # the refit's own tolerance: relative change of the objective below 1e-10
    assert abs(updated.nll - refit.nll) <= 1e-8 * refit.nll
    assert abs(updated.nll - tight.nll) <= 1e-9 * tight.nll
    np.testing.assert_allclose(updated.S, tight.S, atol=1e-4)
    np.testing.assert_allclose(updated.beta, tight.beta, atol=1e-4)
    np.testing.assert_allclose(updated.mu, refit.mu, atol=1e-3)
    # intervals from the updated fit are those of the refit
    a = updated.intervals(pairs="none").set_index(["quantity", "label"])
    b = tight.intervals(pairs="none").set_index(["quantity", "label"])
    np.testing.assert_allclose(a["se"], b.loc[a.index, "se"], rtol=1e-3)
    # the original fit is untouched
    assert fit.data is old and fit.data.n_comparisons == old.n_comparisons


def test_update_with_a_frame_and_davidson_ties():
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=2000, seed=6,
                          outcome="davidson", nu=0.5)
    extra, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=20, seed=7,
                           outcome="davidson", nu=0.5)
    fit = hb.fit_hja(data, rank=1, outcome="davidson")
    rows = []
    for k, i, j, c in zip(extra.judge, extra.first, extra.second, extra.counts):
        for label, n in zip(("model_a", "tie", "model_b"), c):
            rows += [(extra.judges[k], extra.items[i], extra.items[j], label)] * int(n)
    frame = pd.DataFrame(rows, columns=["judge", "model_a", "model_b", "winner"])
    updated = fit.update(frame)
    tight = hb.fit_hja(merge_comparisons(data, extra), rank=1, outcome="davidson", tol=1e-14,
                       max_iter=20000)
    assert abs(updated.nll - tight.nll) <= 1e-9 * tight.nll
    np.testing.assert_allclose(updated.S, tight.S, atol=1e-4)
    np.testing.assert_allclose(updated.nu, tight.nu, atol=1e-4)


def test_ties_from_a_judge_that_had_never_tied_free_its_tie_propensity():
    """Davidson: a judge that never tied has nu held at 0; new verdicts with its ties had
    made every tie impossible (objective inf) and the update returned the fit unchanged,
    'converged' in 0 steps."""
    import dataclasses

    data, _ = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=300, seed=3,
                          outcome="davidson", nu=0.6)
    counts = np.array(data.counts)
    first = data.judge == 0
    counts[first, 0] += counts[first, 1]
    counts[first, 1] = 0  # judge0 never ties in the pilot
    pilot = dataclasses.replace(data, counts=counts)
    extra, _ = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=100, seed=3,
                           outcome="davidson", nu=0.6)
    fit = hb.fit_hja(pilot, rank=1, outcome="davidson")
    assert fit.nu[0] == 0 and extra.counts[extra.judge == 0, 1].sum() > 0
    updated = fit.update(extra)
    full = hb.fit_hja(merge_comparisons(pilot, extra), rank=1, outcome="davidson")
    assert np.isfinite(updated.nll) and updated.nu[0] > 0
    np.testing.assert_allclose(updated.nu, full.nu, atol=1e-4)
    np.testing.assert_allclose(updated.mu, full.mu, atol=1e-4)


def test_update_of_ordered_verdicts_with_position_bias():
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=2000, seed=6,
                          outcome="ordinal", position_bias=0.3)
    extra, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=20, seed=7,
                           outcome="ordinal", position_bias=0.3)
    fit = hb.fit_hja(data, rank=1, outcome="ordinal", position_bias=True)
    updated = fit.update(extra)
    tight = hb.fit_hja(merge_comparisons(data, extra), rank=1, outcome="ordinal",
                       position_bias=True, tol=1e-14, max_iter=20000)
    # the same optimum to the solver's tolerance: the cut gaps and biases too
    assert updated.data.n_comparisons == tight.data.n_comparisons
    np.testing.assert_allclose(updated.S, tight.S, atol=1e-4)
    np.testing.assert_allclose(updated.aux, tight.aux, atol=1e-4)
    np.testing.assert_allclose(updated.beta, tight.beta, atol=1e-4)


def test_new_judges_and_models_are_added_by_a_fit_of_all_the_verdicts():
    """A judge and a model the fit has not seen: the update is the model (rank, position
    bias, self-preference) fitted to all the verdicts, the same as fitting them read at once,
    matched by name (the newcomers come last in the update's order)."""
    data, _ = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=800, seed=6,
                          position_bias=0.3, questions=30, question_correlation=0.3)
    rows = pd.concat(_split(data, 0.01, seed=2))
    late = ((rows["judge"] == "judge3") | (rows["model_a"] == "item5")
            | (rows["model_b"] == "item5"))
    terms = dict(position_bias=True, self_preference={"judge0": "item0"})
    old = hb.Comparisons.from_frame(rows[~late], cluster="question_id")
    fit = hb.fit_hja(old, rank=1, **terms)
    assert "judge3" not in fit.judges and "item5" not in fit.items
    updated = fit.update(rows[late])
    assert updated.judges == fit.judges + ("judge3",) and updated.items == fit.items + ("item5",)
    everything = hb.Comparisons.from_frame(rows, cluster="question_id")
    tight = hb.fit_hja(everything, rank=1, tol=1e-14, max_iter=20000, **terms)
    assert updated.converged and updated.data.n_comparisons == everything.n_comparisons
    # the solver's stopping rule (relative change of the objective below 1e-10) leaves
    # a gap of a few times that
    assert abs(updated.nll - tight.nll) <= 1e-8 * tight.nll

    def by_name(f):
        return (pd.Series(f.mu, f.items), pd.Series(f.gamma, f.judges),
                pd.Series(f.beta, f.judges), pd.Series(f.coefficient("self"), f.judges))

    for got, want in zip(by_name(updated), by_name(tight)):
        np.testing.assert_allclose(got[want.index], want, atol=1e-4)


def test_new_names_like_the_fits_own_are_named():
    """A judge and a model written another way (case, punctuation) are new names to the
    update, and it says which of the fit's they look like; another version is not named."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300, seed=1)
    fit = hb.fit_hja(data, rank=0)
    rows = pd.DataFrame({"judge": ["Judge 0", "judge1", "judge1"],
                         "model_a": ["item0", "item1", "ITEM-1"],
                         "model_b": ["ITEM-1", "item1-v2", "item2"],
                         "winner": ["model_a", "model_b", "tie"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit.update(rows)
    said = [str(w.message) for w in caught if "typos?" in str(w.message)]
    assert said == ["new names like ones the fit has: 'Judge 0' (the fit's 'judge0'), 'ITEM-1' "
                    "(the fit's 'item1'): typos? They are added as new judges or models; "
                    "correct them in the new verdicts if they are the same"]


def test_new_prompt_ids_written_like_the_fits_own_are_named(panel):
    """Prompt ids read as floats ('155.0' beside the fit's '155') had been new prompts
    without a word: twice the prompts, cluster-robust errors 5-9% too small on MT-Bench."""
    earlier, rows = (frame.assign(question_id=frame.question_id.str.lstrip("q").astype(int))
                     for frame in _split(merge_comparisons(*panel), 0.05, seed=1))
    old = hb.Comparisons.from_frame(earlier, cluster="question_id")
    as_floats = rows.assign(question_id=rows.question_id.astype(float))
    fit = hb.fit_hja(old, rank=1)
    with pytest.warns(hb.DataWarning, match=r"new prompt id\(s\) written like ones the fit "
                      r"has: '\d+\.0' \(the fit's '\d+'\)"):
        assert fit.update(as_floats).data.clusters.n_clusters > old.clusters.n_clusters
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fit.update(rows).data.clusters.n_clusters == old.clusters.n_clusters


def test_update_refuses_what_it_cannot_merge(panel):
    old, new = panel
    fit = hb.fit_hja(old, rank=1, position_bias=True)
    stranger = pd.DataFrame({"judge": ["judge9"], "model_a": ["item0"], "model_b": ["item1"],
                             "winner": ["model_a"], "question_id": ["q1"]})
    with pytest.raises(DataError, match="prompts"):
        fit.update(hb.Comparisons.from_frame(stranger.assign(judge="judge0").drop(
            columns="question_id")))
    # a frame is read with the fit's prompt column; one without it is refused, naming it
    with pytest.raises(hb.ParameterError, match="column 'question_id', which the frame lacks"):
        fit.update(stranger.assign(judge="judge0").drop(columns="question_id"))
    as_told = fit.update(stranger.assign(judge="judge0"), cluster="question_id")
    by_default = fit.update(stranger.assign(judge="judge0"))
    assert by_default.data.clusters.names == as_told.data.clusters.names
    np.testing.assert_array_equal(by_default.S, as_told.S)
    # ordered verdicts on a three-outcome fit: the error says what to do
    finer = stranger.assign(judge="judge0", winner="A>>B")
    with pytest.raises(DataError, match=r"collapse them to three outcomes first "
                                        r"\(Comparisons.collapsed\(\)\)"):
        fit.update(finer, scale=None)
    collapsed = hb.Comparisons.from_frame(finer, cluster="question_id").collapsed()
    np.testing.assert_array_equal(fit.update(collapsed).S, as_told.S)


def test_the_chord_stopping_rule_bounds_the_gap_left():
    """On quadratics, where the chord iteration and the gap to the optimum are exact: every
    time the rule accepts a point, the objective's true gap is within the bound asked for,
    for reused information off by up to 90% in any direction."""
    from hja_bayes.hja.refine import _chord_converged

    rng = np.random.default_rng(3)
    accepted = 0
    for _ in range(300):
        d = 6
        A = rng.normal(size=(d, d))
        F = A @ A.T + d * np.eye(d)  # the information at the optimum
        B = rng.normal(size=(d, d))
        B = (B + B.T) / 2
        B *= rng.uniform(0.01, 0.9) / np.abs(np.linalg.eigvalsh(B)).max()
        L = np.linalg.cholesky(F)
        F0 = L @ (np.eye(d) + B) @ L.T  # the reused information
        x, last = rng.normal(size=d), None  # x: the distance to the optimum
        for _ in range(30):
            g = F @ x
            delta = -np.linalg.solve(F0, g)
            decrement = -g @ delta / 2
            for bound in (1.01 * decrement, 3 * decrement, 30 * decrement):
                if _chord_converged(decrement, last, bound):
                    accepted += 1
                    assert x @ F @ x / 2 <= bound
            last, x = decrement, x + delta
    assert accepted > 1000  # the rule does accept, not only refuse


def test_update_on_a_sparse_start_refreshes_the_information_and_converges_fast():
    """20 judges with about 50 verdicts each: the information moves between Fisher steps, and
    reusing it throughout converged linearly (23 steps, 2.4e-4 from the optimum's scores);
    refreshed when the steps contract slowly, the update takes a few steps and lands within
    the refit's tolerance of a tight refit."""
    data, _ = hb.simulate(n_judges=20, n_items=6, rank=1, comparisons_per_judge=50, seed=3,
                          questions=80, question_correlation=0.3)
    with warnings.catch_warnings():  # judges of few verdicts: the readers and fits say so
        warnings.simplefilter("ignore", hb.DataWarning)
        old, new = (hb.Comparisons.from_frame(f, cluster="question_id")
                    for f in _split(data, 0.1, 3))
        fit = hb.fit_hja(old, rank=1)
        updated = fit.update(new)
        tight = hb.fit_hja(merge_comparisons(old, new), rank=1, tol=1e-15, max_iter=100_000)
    assert updated.converged and updated.n_iter <= 10
    np.testing.assert_allclose(updated.S, tight.S, atol=1e-4)


@pytest.fixture(scope="module")
def verdict_files(tmp_path_factory):
    """A small panel with prompts as CSV files: 90% of the verdicts, the other 10%, all."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=600, seed=8,
                          position_bias=0.3, questions=40, question_correlation=0.3)
    old, new = _split(data, 0.1, seed=3)
    folder = tmp_path_factory.mktemp("verdicts")
    paths = {name: folder / f"{name}.csv" for name in ("old", "new", "all")}
    old.to_csv(paths["old"], index=False)
    new.to_csv(paths["new"], index=False)
    pd.concat([old, new]).to_csv(paths["all"], index=False)
    return paths


def test_the_update_command_equals_a_fit_of_all_the_verdicts(verdict_files, tmp_path, capsys):
    from hja_bayes.cli import main

    model = ["--rank", "1", "--position-bias", "--quiet"]
    assert main(["fit", str(verdict_files["old"]), *model, "--out", str(tmp_path / "old")]) == 0
    capsys.readouterr()
    assert main(["update", str(tmp_path / "old"), str(verdict_files["new"]), "--quiet",
                 "--out", str(tmp_path / "new"), "--report"]) == 0
    out = capsys.readouterr().out
    assert "Leaderboard" in out and "Judges" in out
    assert (tmp_path / "new" / "report" / "report.html").exists()
    updated = hb.load_fit(tmp_path / "new")
    # the independent path: the library's own fit of every verdict read afresh
    full = hb.fit_hja(hb.Comparisons.from_frame(pd.read_csv(verdict_files["all"]),
                                                cluster="question_id"),
                      rank=1, position_bias=True, tol=1e-12)
    assert updated.data.n_comparisons == full.data.n_comparisons
    assert updated.rank == 1 and updated.position_bias
    assert abs(updated.nll - full.nll) < 1e-6 * full.nll
    np.testing.assert_allclose(updated.S, full.S, atol=1e-4)
    np.testing.assert_allclose(updated.beta, full.beta, atol=1e-4)
    # the fit it started from is left as it was
    assert hb.load_fit(tmp_path / "old").data.n_comparisons < full.data.n_comparisons
    # 'report' on the folder titles it by the folder (it had said "5 models ranked by ...",
    # naming neither the data nor the update)
    assert "<title>old with new.csv: 5 models" in (
        tmp_path / "new" / "report" / "report.html").read_text(encoding="utf-8")
    assert main(["report", str(tmp_path / "new"), "--quiet"]) == 0
    assert "<title>new: 5 models ranked by 3 judges" in (
        tmp_path / "new" / "report" / "report.html").read_text(encoding="utf-8")


def test_the_update_command_refuses_what_it_cannot_do(verdict_files, tmp_path, capsys):
    from hja_bayes.cli import main

    fit_dir = tmp_path / "fit"
    assert main(["fit", str(verdict_files["old"]), "--rank", "0", "--quiet",
                 "--out", str(fit_dir)]) == 0
    capsys.readouterr()
    # verdicts without the fit's prompts: one line, exit 2, the folder untouched
    frame = pd.read_csv(verdict_files["new"])
    stranger = tmp_path / "stranger.csv"
    frame.drop(columns="question_id").to_csv(stranger, index=False)
    before = (fit_dir / "arrays.npz").read_bytes()
    assert main(["update", str(fit_dir), str(stranger), "--out", str(fit_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hja-bayes: error: ") and "prompt" in err
    assert len(err.splitlines()) == 1
    assert (fit_dir / "arrays.npz").read_bytes() == before
    # a judge whose new rows are all unusable stays in the fit, and the command says so (it
    # had read "left out of these data"); the rank is said to be the fit's, not re-chosen
    judge0 = frame["judge"].iloc[0]
    frame.assign(winner=frame["winner"].where(frame["judge"] != judge0, "invalid")).to_csv(
        stranger, index=False)
    assert main(["update", str(fit_dir), str(stranger), "--out", str(tmp_path / "fit1")]) == 0
    err = capsys.readouterr().err
    assert f"none of whose new rows are usable: [{judge0!r}] (those in the fit keep" in err
    assert "left out of these data" not in err and "rank 0 kept, as the fit chose it" in err
    assert hb.load_fit(tmp_path / "fit1").judges == hb.load_fit(fit_dir).judges
    # a judge the fit does not know is added, saying how
    frame.assign(judge="judge_new").to_csv(stranger, index=False)
    assert main(["update", str(fit_dir), str(stranger), "--out", str(tmp_path / "fit2")]) == 0
    assert "new judges ['judge_new']: the model is fitted afresh" in capsys.readouterr().err
    assert hb.load_fit(tmp_path / "fit2").judges[-1] == "judge_new"
    # in place over a posterior of the earlier data: refused before anything is read
    (fit_dir / "posterior.nc").write_bytes(b"")
    assert main(["update", str(fit_dir), str(verdict_files["new"]), "--out", str(fit_dir),
                 "--quiet"]) == 2
    assert "holds a posterior of the earlier data" in capsys.readouterr().err
    # --out is required: an update is never written over the fit by default
    with pytest.raises(SystemExit) as exit_info:
        main(["update", str(fit_dir), str(verdict_files["new"])])
    assert exit_info.value.code == 2
    assert "--out" in capsys.readouterr().err


def test_an_earlier_save_without_its_prompt_column_asks_for_it(verdict_files, tmp_path,
                                                               capsys):
    """A fit saved before the prompt column was recorded: update had said "no prompt column,
    as the fit had none" and then "the fit's data carry prompts ... the new data do not"."""
    from dataclasses import replace

    from hja_bayes.cli import main

    old = hb.Comparisons.from_file(verdict_files["old"], cluster="question_id")
    hb.fit_hja(replace(old, cluster_column=None), rank=0).save(tmp_path / "fit")
    assert main(["update", str(tmp_path / "fit"), str(verdict_files["new"]), "--out",
                 str(tmp_path / "up"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "does not record their column" in err and "--cluster-col" in err
    assert "as the fit had none" not in err
    assert main(["update", str(tmp_path / "fit"), str(verdict_files["new"]), "--out",
                 str(tmp_path / "up"), "--cluster-col", "question_id", "--quiet"]) == 0
    assert hb.load_fit(tmp_path / "up").data.cluster_column == "question_id"  # kept from now


def test_the_update_command_reads_prompts_as_the_fit_did(verdict_files, tmp_path, capsys):
    from hja_bayes.cli import main

    # the fit's prompts in a column of its own name, named once at fitting
    renamed = {}
    for name in ("old", "new"):
        renamed[name] = tmp_path / f"{name}.csv"
        pd.read_csv(verdict_files[name]).rename(columns={"question_id": "task"}).to_csv(
            renamed[name], index=False)
    assert main(["fit", str(renamed["old"]), "--cluster-col", "task", "--rank", "0", "--quiet",
                 "--out", str(tmp_path / "fit")]) == 0
    assert main(["update", str(tmp_path / "fit"), str(renamed["new"]), "--out",
                 str(tmp_path / "up")]) == 0
    assert "prompts from column 'task' (as the fit's)" in capsys.readouterr().err
    prompts = pd.concat(pd.read_csv(renamed[n]) for n in ("old", "new"))["task"].nunique()
    assert hb.load_fit(tmp_path / "up").data.summary().n_clusters == prompts
    # a new file without that column: refused, naming it
    pd.read_csv(renamed["new"]).drop(columns="task").to_csv(tmp_path / "bare.csv", index=False)
    assert main(["update", str(tmp_path / "fit"), str(tmp_path / "bare.csv"), "--quiet",
                 "--out", str(tmp_path / "up2")]) == 2
    assert "the fit's prompts are in column 'task'" in capsys.readouterr().err
    # a fit read without prompts: its update reads none either, though the file has them
    assert main(["fit", str(verdict_files["old"]), "--cluster-col", "-", "--rank", "0",
                 "--quiet", "--out", str(tmp_path / "plain")]) == 0
    assert main(["update", str(tmp_path / "plain"), str(verdict_files["new"]), "--out",
                 str(tmp_path / "plain_up")]) == 0
    assert "as the fit had none" in capsys.readouterr().err
    assert hb.load_fit(tmp_path / "plain_up").data.clusters is None


def test_the_update_command_samples_a_posterior_of_all_the_verdicts_when_asked(
        verdict_files, tmp_path, monkeypatch, capsys):
    """A saved posterior is of the earlier verdicts: without --bayes it is said to be left
    behind; with --bayes the sampler starts at the updated fit, on all the verdicts."""
    import hja_bayes.bayes
    from hja_bayes.cli import main

    fit_dir = tmp_path / "fit"
    assert main(["fit", str(verdict_files["old"]), "--rank", "0", "--quiet",
                 "--out", str(fit_dir)]) == 0
    (fit_dir / "posterior.nc").write_bytes(b"")  # only its presence is read
    capsys.readouterr()
    assert main(["update", str(fit_dir), str(verdict_files["new"]),
                 "--out", str(tmp_path / "plain")]) == 0
    assert "(posterior.nc) is of the earlier verdicts and is not carried over: --bayes" in \
        capsys.readouterr().err
    assert not (tmp_path / "plain" / "posterior.nc").exists()
    seen = {}

    def fake(data, rank, *, init, num_samples, seed, **kwargs):
        seen.update(n=data.n_comparisons, rank=rank, nll=init.nll, draws=num_samples, seed=seed)
        raise hb.DataError("stopped here")

    monkeypatch.setattr(hja_bayes.bayes, "sample_hja", fake)
    assert main(["update", str(fit_dir), str(verdict_files["new"]), "--out", str(fit_dir),
                 "--bayes", "--samples", "50", "--seed", "3", "--quiet"]) == 2
    assert "stopped here" in capsys.readouterr().err
    updated = hb.load_fit(tmp_path / "plain")
    assert seen == dict(n=updated.data.n_comparisons, rank=0, nll=pytest.approx(updated.nll),
                        draws=50, seed=3)


def test_verdicts_on_entries_the_fit_holds_once_are_warned_of():
    """PRD holds one verdict per (prompt, judge, ordered pair): verdicts the fit already
    counted, given again, are said to count twice (they had been added silently); verdicts
    on entries it lacks are merged without a word."""
    frame = hb.datasets.load_prd_vicuna80().judgments
    first, rest = frame.iloc[:7000], frame.iloc[7000:]
    fit = hb.fit_hja(hb.Comparisons.from_frame(first, cluster="question_id"), rank=0)
    assert fit.data.clusters.n.max() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", hb.DataWarning)
        fit.update(hb.Comparisons.from_frame(rest, cluster="question_id"))
    again = pd.concat([first.iloc[:300], rest.iloc[:100]])
    with pytest.warns(hb.DataWarning, match=r"300 of the 400 new verdicts fall on \(prompt, "
                      r"judge, ordered pair\) entries the fit's data already hold"):
        fit.update(hb.Comparisons.from_frame(again, cluster="question_id"))


def test_a_frame_with_the_prompt_column_next_comparisons_writes_is_pointed_to_it():
    frame = hb.datasets.load_prd_vicuna80().judgments
    fit = hb.fit_hja(hb.Comparisons.from_frame(frame.iloc[:7000], cluster="question_id"), 0)
    asked = frame.iloc[7000:7100].rename(columns={"question_id": "prompt"})
    with pytest.raises(hb.ParameterError, match=r"lacks\): pass cluster='prompt' "
                       r"\(next_comparisons names it so\)"):
        fit.update(asked)
    updated = fit.update(asked, cluster="prompt")
    assert updated.data.n_comparisons == fit.data.n_comparisons + 100
