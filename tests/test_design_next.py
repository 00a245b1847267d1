"""next_comparisons: costs, allowed judges, pools, determinism, balanced presentation order,
and its criterion against a direct dense computation in the orthonormal chart."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import hja_bayes as hb
from hja_bayes.cli import main
from hja_bayes.design.goals import undecided
from hja_bayes.errors import ParameterError

# the designs start from pilot fits of a few dozen verdicts per judge, whose intervals carry
# the few-verdicts warning (tests/test_few_verdicts.py): what is checked here is the design;
# the posteriors built here by hand (_gaussian_posterior) carry no data to check against the
# fit's, which check_posterior says in a warning
pytestmark = [pytest.mark.filterwarnings("ignore:the judges' sensitivities rest on few verdicts"),
              pytest.mark.filterwarnings("ignore:the posterior carries no data:"
                                         "hja_bayes.errors.DataWarning")]


def _balanced_panel(seed=0, n=6):
    """K = 3, N = 5, every ordered cell with the same number of verdicts (so the order of the
    fit's own data is balanced), outcomes drawn from a rank-1 truth with position bias."""
    _, truth = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=10, seed=seed)
    rng = np.random.default_rng(seed)
    K, N = 3, 5
    i, j = np.where(~np.eye(N, dtype=bool))
    k = np.repeat(np.arange(K), len(i))
    i, j = np.tile(i, K), np.tile(j, K)
    p = 1 / (1 + np.exp(-(0.3 + truth.S[k, i] - truth.S[k, j])))
    wins = rng.binomial(n, p).astype(float)
    counts = np.column_stack([wins, np.zeros_like(wins), n - wins])
    return hb.Comparisons(tuple(f"judge{x}" for x in range(K)),
                          tuple(f"item{x}" for x in range(N)), k, i, j, counts)


@pytest.fixture(scope="module")
def fit():
    return hb.fit_hja(_balanced_panel(), rank=1, position_bias=True)


def test_costs_and_allowed_judges(fit):
    allowed = {"judge0": None, "judge1": ["item0", "item1", "item2"]}
    out = hb.next_comparisons(fit, 60, goal="top", k=2, judges=allowed,
                              cost={"judge0": 1, "judge1": 2})
    assert len(out) == 60 and set(out.judge) <= {"judge0", "judge1"}
    seen = out[out.judge == "judge1"]
    assert set(seen.model_a) | set(seen.model_b) <= {"item0", "item1", "item2"}
    assert np.allclose(out.cost, np.where(out.judge == "judge1", 2.0, 1.0))
    # a prohibitive cost keeps a judge out; alone, it is asked
    dear = hb.next_comparisons(fit, 30, cost={"judge0": 1, "judge1": 1, "judge2": 1e6})
    assert "judge2" not in set(dear.judge)
    only = hb.next_comparisons(fit, 10, judges=["judge2"], cost={"judge2": 50})
    assert set(only.judge) == {"judge2"} and only.cost.sum() == 500
    capped = hb.next_comparisons(fit, 100, cost={"judge0": 1, "judge1": 3, "judge2": 7},
                                 max_cost=40)
    assert capped.cost.sum() <= 40 and capped.attrs["meta"]["total_cost"] == capped.cost.sum()
    with pytest.warns(hb.HJAWarning, match="max_cost 0.5 is below the cost of any verdict"):
        assert len(hb.next_comparisons(fit, 5, max_cost=0.5)) == 0  # had been empty, unsaid
    # costs as a table, as a judges file reads (it had been refused: "must be a mapping")
    table = pd.DataFrame({"judge": ["judge0", "judge1", "judge2"], "cost": [1, 3, 7]})
    as_table = hb.next_comparisons(fit, 100, cost=table, max_cost=40)
    pd.testing.assert_frame_equal(as_table, capped)
    with pytest.raises(ParameterError, match=r"names a judge twice: \['judge0'\]"):
        hb.next_comparisons(fit, 5, cost=pd.concat([table, table.iloc[:1]]))


def test_deterministic_for_a_seed(fit):
    a = hb.next_comparisons(fit, 40, goal="ranks", seed=3)
    b = hb.next_comparisons(fit, 40, goal="ranks", seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["meta"] == b.attrs["meta"]
    c = hb.next_comparisons(fit, 40, goal="ranks", seed=4)
    assert len(c) == 40  # another seed may break ties otherwise, nothing else


@pytest.mark.parametrize("steps", [500, 7])
def test_presentation_order_is_balanced(fit, steps):
    # the fit's own data are balanced, so each (judge, pair) of the new rows is too
    out = hb.next_comparisons(fit, 120, goal="pairs", steps=steps)
    assert steps == 500 or out.attrs["meta"]["block"] > 1
    for (judge, a, b), n in out.groupby(["judge", "model_a", "model_b"]).size().items():
        back = ((out.judge == judge) & (out.model_a == b) & (out.model_b == a)).sum()
        assert abs(n - back) <= 1, (judge, a, b, n, back)


def test_order_fills_the_rarer_side_first():
    data, _ = hb.simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=400, seed=2,
                          position_bias=0.4)
    fit = hb.fit_hja(data, rank=0, position_bias=True)
    out = hb.next_comparisons(fit, 200, goal="pairs")
    n = {(data.judges[k], data.items[i], data.items[j]): c
         for k, i, j, c in zip(data.judge, data.first, data.second, data.n)}
    for (judge, a, b), m in out.groupby(["judge", "model_a", "model_b"]).size().items():
        back = ((out.judge == judge) & (out.model_a == b) & (out.model_b == a)).sum()
        before = n.get((judge, a, b), 0) - n.get((judge, b, a), 0)
        after = before + m - back
        assert abs(after) <= max(abs(before), 1)


def test_data_without_an_order_get_new_verdicts_balanced_among_themselves():
    """Folded data (first < second in every cell, no presentation order): their verdicts had
    been counted as all shown one way, so 50 of 60 new verdicts went the other way."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=150, seed=5)
    fit = hb.fit_hja(data.fold_order(), rank=1)
    out = hb.next_comparisons(fit, 60, goal="pairs")
    assert len(out) == 60
    for (judge, a, b), n in out.groupby(["judge", "model_a", "model_b"]).size().items():
        back = ((out.judge == judge) & (out.model_a == b) & (out.model_b == a)).sum()
        assert abs(n - back) <= 1, (judge, a, b, n, back)


@pytest.mark.parametrize("budget, max_cost", [(2000, 3), (5000, 15), (7, 5)])
def test_max_cost_is_spent_to_the_last_verdict_that_fits(budget, max_cost):
    """A budget above the search's steps is chosen in blocks (here 4 and 10 verdicts); a
    block had been priced whole, so a cap of 3 placed nothing (and warned that no verdict
    was affordable) and a cap of 15 placed 10."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=150, seed=5)
    out = hb.next_comparisons(hb.fit_hja(data, rank=1), budget, max_cost=max_cost)
    assert len(out) == max_cost and out.cost.sum() == max_cost


def _dense_variances(fit, goal_pairs, judge, first, second):
    """Fisher variance of every goal contrast before and after one verdict of ``judge`` on
    (``first`` shown first, ``second``), from the dense information in the orthonormal
    chart: a list of (v, v_new)."""
    wald = fit.wald_inference("fisher")
    K, N = len(fit.judges), len(fit.items)
    B = wald.basis  # (K N + K q, dim): vec S then vec Z (position bias only here)
    I = wald.information
    x = np.zeros(B.shape[0])
    x[judge * N + first] += 1
    x[judge * N + second] -= 1
    x[K * N + judge] = 1.0  # position bias of the judge (q = 1)
    a = B.T @ x
    p = 1 / (1 + np.exp(-(fit.beta[judge] + fit.S[judge, first] - fit.S[judge, second])))
    Sigma, Sigma_new = np.linalg.inv(I), np.linalg.inv(I + p * (1 - p) * np.outer(a, a))
    out = []
    for ga, gb in goal_pairs:
        g = np.zeros(B.shape[0])
        g[np.arange(K) * N + ga] += 1 / K
        g[np.arange(K) * N + gb] -= 1 / K
        h = B.T @ g
        out.append((h @ Sigma @ h, h @ Sigma_new @ h))
    return out


def _averaged_drop(d, v0, v, v_new, critical, margin):
    """One contrast's drop in P(undecided), averaged over true differences ``N(d, v0)``,
    when its variance ``v0`` shrinks as its dense Fisher variance does, ``v -> v_new``."""
    v1 = v0 * v_new / v
    return undecided(d, v0, critical, margin, v0 + v0) - undecided(d, v1, critical, margin,
                                                                   v0 + v1)


def _dense_gain(fit, goal_pairs, judge, first, second, deff, critical, margin, variance_only):
    """The drop of the goal's uncertainty from one verdict, in the orthonormal chart, for a
    goal decided by ``deff`` times the Fisher covariance."""
    total = 0.0
    for (ga, gb), (v, v_new) in zip(goal_pairs, _dense_variances(fit, goal_pairs, judge,
                                                                  first, second)):
        if variance_only:
            total += v - v_new
        else:
            total += _averaged_drop(fit.mu[ga] - fit.mu[gb], deff * v, v, v_new, critical,
                                    margin)
    return float(total)


@pytest.mark.parametrize("goal,screened", [("top", False), ("ranks", False), ("pairs", False),
                                            ("tiers", False), ("tiers", True)])
def test_criterion_equals_a_dense_computation(goal, screened, monkeypatch):
    from hja_bayes.design import screen

    data, _ = hb.simulate(n_judges=2, n_items=4, rank=1, comparisons_per_judge=300, seed=7,
                          position_bias=0.3)
    fit = hb.fit_hja(data, rank=1, position_bias=True)
    if screened:  # more units than the screen keeps: 3 of the 12
        monkeypatch.setattr(screen, "KEEP_UNITS", 3)
    out = hb.next_comparisons(fit, 1, goal=goal, k=2, cost={"judge0": 1, "judge1": 2.5})
    meta = out.attrs["meta"]
    assert (meta["screened"] is not None) == screened
    assert meta["cov_type"] == "fisher" and meta["design_effect"] == pytest.approx(1.0)
    from hja_bayes.design.goals import goal_pairs

    pairs = goal_pairs(goal, fit.mu, 2)
    row = out.iloc[0]
    items, judges = list(fit.items), list(fit.judges)
    args = (meta["design_effect"], meta["critical_value"], meta["tie_margin"], goal == "pairs")
    dense = _dense_gain(fit, pairs, judges.index(row.judge), items.index(row.model_a),
                        items.index(row.model_b), *args)
    assert row.gain == pytest.approx(dense, rel=1e-7, abs=1e-14)
    # and no other eligible verdict is worth more per unit cost
    n = {(k, i, j): c for k, i, j, c in zip(data.judge, data.first, data.second, data.n)}
    cost = [1.0, 2.5]
    best = max(_dense_gain(fit, pairs, k, i, j, *args) / cost[k]
               for k in range(2) for i in range(4) for j in range(4)
               if i != j and n.get((k, i, j), 0) <= n.get((k, j, i), 0))
    assert row.gain / row.cost == pytest.approx(best, rel=1e-7, abs=1e-14)


def test_greedy_updates_the_information(fit):
    # the expected uncertainty after each step equals the one recomputed densely from every
    # verdict chosen so far
    out = hb.next_comparisons(fit, 8, goal="pairs")
    wald = fit.wald_inference("fisher")
    K, N = 3, 5
    B, I = wald.basis, wald.information.copy()
    items, judges = list(fit.items), list(fit.judges)
    for row in out.itertuples():
        k, i, j = judges.index(row.judge), items.index(row.model_a), items.index(row.model_b)
        x = np.zeros(B.shape[0])
        x[k * N + i] += 1
        x[k * N + j] -= 1
        x[K * N + k] = 1
        p = 1 / (1 + np.exp(-(fit.beta[k] + fit.S[k, i] - fit.S[k, j])))
        a = B.T @ x
        I += p * (1 - p) * np.outer(a, a)
    Sigma = np.linalg.inv(I)
    total = 0.0
    for ga in range(N):
        for gb in range(ga + 1, N):
            g = np.zeros(B.shape[0])
            g[np.arange(K) * N + ga] += 1 / K
            g[np.arange(K) * N + gb] -= 1 / K
            h = B.T @ g
            total += h @ Sigma @ h
    assert out.uncertainty.iloc[-1] == pytest.approx(total, rel=1e-8)


def test_pool_of_candidates(fit):
    pool = pd.DataFrame({"judge": ["judge0", "judge0", "judge1"],
                         "model_a": ["item0", "item3", "item2"],
                         "model_b": ["item1", "item4", "item0"], "limit": [3, 2, 1]})
    with pytest.warns(hb.HJAWarning, match="only 6 of the 50 .*: the candidates' limits allow"):
        out = hb.next_comparisons(fit, 50, candidates=pool)
    assert len(out) == 6
    counts = out.groupby(["judge", "model_a", "model_b"]).size().to_dict()
    assert counts == {("judge0", "item0", "item1"): 3, ("judge0", "item3", "item4"): 2,
                      ("judge1", "item2", "item0"): 1}


def test_prompts_are_spread_over_pairs(fit):
    prompts = [f"p{x}" for x in range(7)]
    out = hb.next_comparisons(fit, 80, goal="top", k=2, prompts=prompts)
    assert set(out.prompt) <= set(prompts)
    pair = out.apply(lambda r: tuple(sorted((r.model_a, r.model_b))), axis=1)
    for _, group in out.groupby(pair):
        used = group.prompt.value_counts().reindex(prompts, fill_value=0)
        assert used.max() - used.min() <= 1
    # a verdict is never repeated: one per (judge, first, second, prompt)
    assert not out.duplicated(["judge", "model_a", "model_b", "prompt"]).any()
    with pytest.warns(hb.HJAWarning, match="only 120 of the 500 .*: the 2 prompts given"):
        few = hb.next_comparisons(fit, 500, goal="pairs", prompts=["p0", "p1"])
    assert not few.duplicated(["judge", "model_a", "model_b", "prompt"]).any()
    assert len(few) == 3 * 20 * 2  # every (judge, ordered pair) on both prompts, no more


def test_prompts_that_hold_nothing_new_are_an_error():
    prd = hb.datasets.load_prd_vicuna80()
    fit = hb.fit_hja(hb.Comparisons.from_frame(prd.judgments, cluster="question_id"), rank=0)
    # every judge judged every pair in both orders on all 80 questions
    with pytest.raises(hb.ParameterError, match="nothing left to ask: on the 80 prompts"):
        hb.next_comparisons(fit, 10, prompts=prd.questions.question_id.tolist())


def test_prompts_go_where_the_two_answers_were_shown_least():
    """Verdicts sharing an answer share its prompt effect: a new verdict of item0 against
    item2 goes to the prompts where neither answer was shown, even when those prompts
    carry more verdicts overall (an order by prompt use alone would pick p0-p2)."""
    rng = np.random.default_rng(0)
    rows = [("p0", "item0", "item1"), ("p1", "item0", "item1"), ("p2", "item0", "item1")] * 2 \
        + [(f"p{q}", "item3", "item4") for q in range(3, 7)] * 3 \
        + [("other", a, b) for a, b in [("item1", "item2"), ("item2", "item3"),
                                       ("item0", "item4"), ("item1", "item3")]] * 6
    frame = pd.DataFrame(rows, columns=["question_id", "model_a", "model_b"])
    frame["judge"] = "judge0"
    frame["winner"] = rng.choice(["model_a", "model_b"], len(frame))
    fit = hb.fit_hja(hb.Comparisons.from_frame(frame, cluster="question_id"), rank=0)
    # item2 is on one prompt: no cluster-robust intervals, the design asks by Fisher's
    with pytest.warns(hb.DataWarning, match=r"'item2' appear\(s\) on a single prompt.*"
                                            "decides its goal by the Fisher covariance"):
        out = hb.next_comparisons(fit, 4, goal="pairs", prompts=[f"p{q}" for q in range(7)],
                                  judges={"judge0": ["item0", "item2"]})
    assert len(out) == 4 and out.attrs["meta"]["cov_type"] == "fisher"
    assert sorted(out.prompt) == ["p3", "p4", "p5", "p6"]


def test_a_pilot_with_fewer_prompts_than_models_is_answered_and_told_to_add_prompts():
    """4 prompts for 5 models: the cluster-robust covariance makes no joint statement, so
    the goal's critical value comes from the Fisher covariance (the joint rank intervals'
    max-|t| over the 10 differences: between one interval's and Bonferroni's), with a
    warning naming
    the remedy; before, no design came at all."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=400, seed=4,
                          questions=4, question_correlation=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # few prompts: said by the fit
        fit = hb.fit_hja(data, rank=0)
    with pytest.warns(hb.DataWarning, match=r"G - 1 = 3.*critical value from the Fisher "
                                            r"covariance.*new prompts \(prompts="):
        out = hb.next_comparisons(fit, 12, goal="top", k=2, prompts=["n1", "n2", "n3"])
    assert len(out) == 12 and set(out.prompt) <= {"n1", "n2", "n3"}
    critical = out.attrs["meta"]["critical_value"]
    assert 1.96 < critical < float(norm.ppf(1 - 0.025 / 10))
    with warnings.catch_warnings():
        warnings.simplefilter("error", hb.DataWarning)  # no joint statement in "pairs"
        hb.next_comparisons(fit, 5, goal="pairs")


def test_undecided_now_counts_as_the_leaderboard_does():
    """Under CR2 each pair's joint interval uses the t quantile at its own degrees of freedom
    (the leaderboard's rank intervals); next's count of undecided pairs had used the normal
    max-|t| value for all, 8 undecided pairs here against the leaderboard's 9."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=300, seed=0,
                          questions=9, question_correlation=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)  # few prompts: said by the fit
        fit = hb.fit_hja(data, rank=0)
        board = hb.leaderboard(fit)
        meta = hb.next_comparisons(fit, 3, goal="tiers", tie_margin=0.0).attrs["meta"]
    separated = int((board["rank_lower"] - 1).sum())  # pairs some model is surely above
    assert meta["undecided_now"] == 10 - separated == 9
    lo, hi = meta["critical_values"]
    assert meta["critical_value"] < lo <= hi


def test_cli_next_reads_a_prompts_file_with_or_without_its_header(tmp_path):
    data, _ = hb.simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=200, seed=3,
                          questions=12, question_correlation=0.1)
    hb.fit_hja(data, rank=0).save(tmp_path / "fit")
    for header in ("question\n", "prompt\n", "question_id\n", ""):
        (tmp_path / "prompts.txt").write_text(header + "n1\nn2\n")
        assert main(["next", str(tmp_path / "fit"), "--budget", "4", "--goal", "pairs",
                     "--prompts", str(tmp_path / "prompts.txt"), "--quiet",
                     "--out", str(tmp_path / "next.csv")]) == 0
        assert set(pd.read_csv(tmp_path / "next.csv")["question"]) <= {"n1", "n2"}


def test_cli_next_names_the_prompt_column_as_the_fit_and_reads_costs_with_care(tmp_path, capsys):
    """'update' reads prompts from the fit's column: next had written them as 'prompt', so
    the documented next -> update loop stopped.  A judges file with the models separated
    by ',' had been read shifted ("judges the fit does not have: ['1']").  --max-cost
    had no flag."""
    data, _ = hb.simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=200, seed=3,
                          questions=12, question_correlation=0.1)
    assert data.cluster_column == "question"
    hb.fit_hja(data, rank=0).save(tmp_path / "fit")
    (tmp_path / "prompts.txt").write_text("n1\nn2\n")
    (tmp_path / "judges.csv").write_text("judge,cost,models\njudge0,1,\njudge1,5,\n")
    assert main(["next", str(tmp_path / "fit"), "--budget", "6", "--goal", "pairs", "--quiet",
                 "--prompts", str(tmp_path / "prompts.txt"), "--cost", str(tmp_path / "judges.csv"),
                 "--max-cost", "4.5", "--out", str(tmp_path / "next.csv")]) == 0
    asked = pd.read_csv(tmp_path / "next.csv")
    assert "question" in asked and "prompt" not in asked
    assert asked["cost"].sum() <= 4.5 and len(asked) == 4
    (tmp_path / "judges.csv").write_text("judge,cost,models\njudge0,1,item0,item1\n")
    assert main(["next", str(tmp_path / "fit"), "--budget", "6", "--quiet",
                 "--cost", str(tmp_path / "judges.csv")]) == 2
    assert "separate the models of a judge by ';'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # read with the arguments, before the fit loads
        main(["next", str(tmp_path / "fit"), "--budget", "6", "--tie-margin", "-1"])
    assert stop.value.code == 2
    assert "--tie-margin must lie in [0, inf)" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, message", [
    (dict(goal="best"), "goal"),
    (dict(goal="top", k=5), "k must"),
    (dict(cost={"judge0": 1}), "no cost"),
    (dict(cost={"judge0": -1, "judge1": 1, "judge2": 1}), "> 0"),
    (dict(cost={"nobody": 1}), "does not have"),
    (dict(judges={"judge0": ["item9"]}), "unknown model"),
    (dict(judges={"judge0": ["item0"]}), "no comparison"),
    (dict(prompts=[]), "at least one prompt"),
    (dict(prompts=["p1", "p2", "p1"]), r"named again: \['p1'\]"),  # had not said which
    (dict(prompts=["p1", np.nan]), r"1 missing id.*position 1"),  # had given rows of prompt NaN
])
def test_clear_errors(fit, kwargs, message):
    with pytest.raises(ParameterError, match=message):
        hb.next_comparisons(fit, 5, **kwargs)


def test_a_judge_the_fit_left_out_is_named_as_such():
    data = _balanced_panel()
    fit = hb.fit_hja(data, rank=0, leave_out=["judge2"])
    said = r"does not have.*\(the fit left judges out: judge2 was left out on request\)"
    for kwargs in (dict(cost={"judge0": 1, "judge1": 1, "judge2": 3}), dict(judges=["judge2"])):
        with pytest.raises(ParameterError, match=said):
            hb.next_comparisons(fit, 5, **kwargs)


def test_budget_and_fit_are_checked(fit):
    with pytest.raises(ParameterError, match="budget"):
        hb.next_comparisons(fit, 0)
    with pytest.raises(ParameterError, match="HJA"):
        hb.next_comparisons(hb.fit_pooled_btl(fit.data), 5)


def test_cli_next(fit, tmp_path, capsys):
    fit.save(tmp_path / "fit")
    (tmp_path / "judges.csv").write_text("judge,cost,models\njudge0,1,\njudge2,50,item0;item1;item2\n")
    code = main(["next", str(tmp_path / "fit"), "--budget", "25", "--goal", "top", "--k", "2",
                 "--cost", str(tmp_path / "judges.csv"), "--out", str(tmp_path / "next.csv"),
                 "--quiet"])
    assert code == 0
    table = pd.read_csv(tmp_path / "next.csv")
    assert list(table.columns[:3]) == ["judge", "model_a", "model_b"] and len(table) == 25
    assert set(table.judge) <= {"judge0", "judge2"}
    capsys.readouterr()
    assert main(["next", str(tmp_path / "fit"), "--budget", "5", "--cost",
                 str(tmp_path / "judges.csv"), "--out", str(tmp_path / "n.csv")]) == 0
    assert "judges.csv): judge1\n" in capsys.readouterr().err  # "not asked (not in ...)"
    assert main(["next", str(tmp_path / "fit"), "--budget", "5", "--cost",
                 str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_next_says_when_it_screened(fit, tmp_path, capsys, monkeypatch):
    from hja_bayes.design import next as next_module

    fit.save(tmp_path / "fit")
    monkeypatch.setattr(next_module, "MAX_WORK", 4 * fit.wald_inference("fisher").chart.dim)
    assert main(["next", str(tmp_path / "fit"), "--budget", "6", "--goal", "ranks",
                 "--out", str(tmp_path / "next.csv")]) == 0
    err = capsys.readouterr().err
    assert "a large panel: the search chose among the 4 of 30 (judge, pair) units" in err
    assert len(pd.read_csv(tmp_path / "next.csv")) == 6


def test_undecided_averaged_over_the_truth_matches_simulation():
    """The posterior criterion: a true difference drawn N(m, v0), an estimate N(true, v),
    its interval +- c sqrt(v) neither excluding 0 nor inside the margin.  Simulated
    directly, against the closed form with spread v0 + v (4 binomial standard errors)."""
    rng = np.random.default_rng(0)
    n = 400_000
    for m, v0, v, c, margin in [(0.3, 0.04, 0.01, 2.5, 0.0), (0.1, 0.02, 0.002, 2.2, 0.2),
                                (-0.5, 0.09, 0.03, 1.96, 0.1)]:
        truth = m + np.sqrt(v0) * rng.standard_normal(n)
        estimate = truth + np.sqrt(v) * rng.standard_normal(n)
        half = c * np.sqrt(v)
        simulated = np.mean((np.abs(estimate) <= half) & (np.abs(estimate) + half > margin))
        closed = float(undecided(m, v, c, margin, spread=v0 + v))
        assert abs(simulated - closed) <= 4 * np.sqrt(closed * (1 - closed) / n) + 1e-12


def _gaussian_posterior(fit, mean, covariance, draws=4000, seed=0, items=None):
    """An InferenceData whose consensus draws are N(mean, covariance) (two chains), with
    the attributes and coordinates sample_hja writes."""
    import arviz as az

    rng = np.random.default_rng(seed)
    mu = rng.multivariate_normal(mean, covariance, size=draws).reshape(2, draws // 2, -1)
    gamma = np.ones((2, draws // 2, len(fit.judges)))
    idata = az.from_dict(posterior={"mu": mu, "gamma": gamma},
                         coords={"item": list(items or fit.items), "judge": list(fit.judges)},
                         dims={"mu": ["item"], "gamma": ["judge"]})
    idata.posterior.attrs.update(rank=fit.rank, position_bias=int(fit.position_bias))
    return idata


def _dense_posterior_gain(fit, draws, goal_pairs, judge, first, second, critical, margin,
                          variance_only):
    """The posterior criterion's drop from one verdict, from the draws and the dense
    Fisher information: each contrast's posterior variance scaled by the Fisher variance's
    relative drop, the undecided probability averaged over the posterior of the truth."""
    total = 0.0
    for (ga, gb), (v, v_new) in zip(goal_pairs, _dense_variances(fit, goal_pairs, judge,
                                                                  first, second)):
        diff = draws[:, ga] - draws[:, gb]
        v0 = diff.var(ddof=1)
        if variance_only:
            total += v0 * (1 - v_new / v)
        else:
            total += _averaged_drop(diff.mean(), v0, v, v_new, critical, margin)
    return float(total)


@pytest.mark.parametrize("goal,screened", [("top", False), ("ranks", False), ("pairs", False),
                                            ("top", True), ("ranks", True)])
def test_posterior_criterion_equals_a_dense_computation(goal, screened, monkeypatch):
    from hja_bayes.design import next as next_module
    from hja_bayes.design.goals import goal_pairs
    from hja_bayes.inference.ranking import simultaneous_critical_value

    data, _ = hb.simulate(n_judges=2, n_items=4, rank=1, comparisons_per_judge=300, seed=7,
                          position_bias=0.3)
    fit = hb.fit_hja(data, rank=1, position_bias=True)
    if screened:  # 3 of the 12 units kept, each contrast with its own design effect
        monkeypatch.setattr(next_module, "MAX_WORK",
                            3 * fit.wald_inference("fisher").chart.dim)
    _, cov = fit.wald_inference("fisher").mu_covariance()
    # a posterior wider than the Fisher covariance and centred elsewhere, in another order
    mean = fit.mu[::-1] * 0.8
    idata = _gaussian_posterior(fit, mean, 2.0 * cov + 0.01 * np.eye(4))
    out = hb.next_comparisons(fit, 1, goal=goal, k=2, cost={"judge0": 1, "judge1": 2.5},
                              posterior=idata)
    meta = out.attrs["meta"]
    assert (meta["screened"] is not None) == screened
    draws = np.asarray(idata.posterior["mu"]).reshape(-1, 4)
    pairs = goal_pairs(goal, draws.mean(axis=0), 2)
    assert meta["cov_type"] == "posterior" and meta["contrasts"] == len(pairs)
    critical = 0.0 if goal == "pairs" else simultaneous_critical_value(
        np.cov(draws, rowvar=False), 0.95)
    assert meta["critical_value"] == pytest.approx(critical, rel=1e-12)
    items, judges = list(fit.items), list(fit.judges)
    args = (critical, meta["tie_margin"], goal == "pairs")
    row = out.iloc[0]
    dense = _dense_posterior_gain(fit, draws, pairs, judges.index(row.judge),
                                  items.index(row.model_a), items.index(row.model_b), *args)
    assert row.gain == pytest.approx(dense, rel=1e-7, abs=1e-14)
    n = {(k, i, j): c for k, i, j, c in zip(data.judge, data.first, data.second, data.n)}
    cost = [1.0, 2.5]
    best = max(_dense_posterior_gain(fit, draws, pairs, k, i, j, *args) / cost[k]
               for k in range(2) for i in range(4) for j in range(4)
               if i != j and n.get((k, i, j), 0) <= n.get((k, j, i), 0))
    assert row.gain / row.cost == pytest.approx(best, rel=1e-7, abs=1e-14)


def test_posterior_must_describe_the_fit(fit):
    _, cov = fit.wald_inference("fisher").mu_covariance()
    good = _gaussian_posterior(fit, fit.mu, cov, draws=200)
    shuffled = _gaussian_posterior(fit, fit.mu, cov, draws=200, items=list(fit.items)[::-1])
    ties = _gaussian_posterior(fit, fit.mu, cov, draws=200)
    ties.posterior.attrs["outcome"] = "davidson"
    for other in (shuffled, ties):
        with pytest.raises(ParameterError, match="different models"):
            hb.next_comparisons(fit, 5, posterior=other)
    with pytest.raises(ParameterError, match="InferenceData"):
        hb.next_comparisons(fit, 5, posterior=np.zeros((10, 5)))
    with pytest.raises(ParameterError, match="alternatives"):
        hb.next_comparisons(fit, 5, posterior=good, cov_type="fisher")
    ctx = hb.design.design_context(fit, posterior=good)
    assert len(hb.next_comparisons(ctx, 5)) == 5
    with pytest.raises(ParameterError, match="design_context"):
        hb.next_comparisons(ctx, 5, posterior=good)


def test_cli_next_with_the_saved_posterior(fit, tmp_path, capsys):
    _, cov = fit.wald_inference("fisher").mu_covariance()
    fit.save(tmp_path / "plain")
    assert main(["next", str(tmp_path / "plain"), "--budget", "5", "--posterior"]) == 2
    assert "holds no posterior" in capsys.readouterr().err
    fit.save(tmp_path / "bayes", idata=_gaussian_posterior(fit, fit.mu, 3.0 * cov, draws=2000))
    out = tmp_path / "next.csv"
    assert main(["next", str(tmp_path / "bayes"), "--budget", "5", "--out", str(out)]) == 0
    assert "--posterior decides the goal" in capsys.readouterr().err
    assert main(["next", str(tmp_path / "bayes"), "--budget", "5", "--posterior",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert len(pd.read_csv(out)) == 5
    # the posterior is three times as wide as the Fisher covariance: its design effect
    deff = float(err.split("design effect ")[1].split(")")[0])
    assert 2.5 < deff < 3.6


def test_undecided_now_agrees_with_the_joint_rank_intervals(tmp_path, capsys):
    # the top k is separated from the rest exactly when the leaderboard's joint rank
    # intervals (hja_bayes.inference.ranking) put the k above every other model
    seen = set()
    for seed in (1, 2, 3):
        data, _ = hb.simulate(n_judges=3, n_items=6, rank=1, comparisons_per_judge=300,
                              seed=seed)
        fit = hb.fit_hja(data, rank=1)
        board = hb.leaderboard(fit)
        for k in range(1, 6):
            meta = hb.next_comparisons(fit, 2, goal="top", k=k).attrs["meta"]
            holds = (board.rank_upper.iloc[:k].max() <= k
                     and board.rank_lower.iloc[k:].min() >= k + 1)
            assert (meta["undecided_now"] == 0) == holds, (seed, k)
            seen.add(bool(holds))
        assert hb.next_comparisons(fit, 2, goal="pairs").attrs["meta"]["undecided_now"] is None
    assert seen == {True, False}
    # the command line says which
    fit.save(tmp_path / "fit")
    for k, said in ((5, r"already holds by the fit's joint 95% intervals"),
                    (1, r"now (\d+) of the goal's \d+ contrasts (is|are) undecided by the "
                        r"fit's joint 95% intervals")):
        assert main(["next", str(tmp_path / "fit"), "--budget", "2", "--goal", "top", "--k",
                     str(k), "--out", str(tmp_path / "n.csv")]) == 0
        found = re.search(said, capsys.readouterr().err)
        assert found
        if found.groups():  # "1 of ... is", "2 of ... are"
            assert (found.group(2) == "is") == (found.group(1) == "1")


def test_a_panel_too_large_for_the_search_is_screened(monkeypatch):
    from hja_bayes.design import next as next_module
    from hja_bayes.design import screen
    from hja_bayes.design.goals import goal_pairs

    data, _ = hb.simulate(n_judges=2, n_items=6, rank=1, comparisons_per_judge=300, seed=7,
                          position_bias=0.3)
    fit = hb.fit_hja(data, rank=1, position_bias=True)
    cost = {"judge0": 1, "judge1": 2.5}
    full = hb.next_comparisons(fit, 12, goal="top", k=2, cost=cost)
    assert full.attrs["meta"]["screened"] is None
    dim = fit.wald_inference("fisher").chart.dim
    monkeypatch.setattr(next_module, "MAX_WORK", 5 * dim)  # room for 5 of the 30 units
    small = hb.next_comparisons(fit, 12, goal="top", k=2, cost=cost)
    assert small.attrs["meta"]["screened"] == {"units": 30, "units_searched": 5,
                                               "contrasts_searched": 8,
                                               "uncertainty_held": 0.0}
    assert small.groupby(["judge", "model_a", "model_b"]).ngroups <= 5
    # every unit is scored for the first step: its pick is the best of all, as the dense
    # computation in the chart says
    meta = small.attrs["meta"]
    pairs = goal_pairs("top", fit.mu, 2)
    items, judges = list(fit.items), list(fit.judges)
    args = (meta["design_effect"], meta["critical_value"], meta["tie_margin"], False)
    row = small.iloc[0]
    assert row.gain == pytest.approx(_dense_gain(
        fit, pairs, judges.index(row.judge), items.index(row.model_a), items.index(row.model_b),
        *args), rel=1e-7, abs=1e-14)
    n = {(k, i, j): c for k, i, j, c in zip(data.judge, data.first, data.second, data.n)}
    best = max(_dense_gain(fit, pairs, k, i, j, *args) / [1.0, 2.5][k]
               for k in range(2) for i in range(6) for j in range(6)
               if i != j and n.get((k, i, j), 0) <= n.get((k, j, i), 0))
    assert row.gain / row.cost == pytest.approx(best, rel=1e-7, abs=1e-14)
    # fewer contrasts steer the search: the rest's uncertainty now is carried as a constant
    monkeypatch.setattr(screen, "LIVE_CONTRASTS", 3)
    few = hb.next_comparisons(fit, 12, goal="top", k=2, cost=cost)
    held = few.attrs["meta"]["screened"]["uncertainty_held"]
    now = np.sort(undecided(fit.mu[pairs[:, 0]] - fit.mu[pairs[:, 1]],
                            meta["design_effect"] * np.array(
                                [v for v, _ in _dense_variances(fit, pairs, 0, 0, 1)]),
                            meta["critical_value"], 0.0,
                            2 * meta["design_effect"] * np.array(
                                [v for v, _ in _dense_variances(fit, pairs, 0, 0, 1)])))
    assert held == pytest.approx(now[:-3].sum(), rel=1e-7, abs=1e-12)
    assert (few["uncertainty"] >= held - 1e-12).all()
    for goal in ("pairs", "tiers"):
        with pytest.raises(ParameterError, match=f"goal '{goal}' weighs every pair"):
            hb.next_comparisons(fit, 12, goal=goal)


def test_first_order_screening_scores_equal_a_unit_by_unit_computation():
    # the per-judge matrices of the screen against each unit's own derivatives in the chart,
    # with both per-judge terms (position: every verdict; self-preference: +-1 on the own
    # model) and uneven blocks
    from hja_bayes.design.candidates import _derivatives, _weights, candidate_units, held
    from hja_bayes.design.greedy import _split
    from hja_bayes.design.screen import first_order_scores

    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=400, seed=3,
                          position_bias=0.3)
    fit = hb.fit_hja(data, rank=1, position_bias=True,
                     self_preference={"judge0": "item1", "judge2": "item4"})
    chart = fit.wald_inference("fisher").chart
    sigma = fit.wald_inference("fisher")._chart_covariance(np.eye(chart.dim))
    rng = np.random.default_rng(0)
    H = rng.normal(size=(4, chart.dim))
    slopes = np.abs(rng.normal(size=(4, 2)))
    units = candidate_units(fit, cost={"judge0": 1, "judge1": 2, "judge2": 3})
    got = first_order_scores(fit, chart, sigma, H, slopes, units, 3)
    for u in range(units.size):
        k, a, b = units.judge[u:u + 1], units.a[u:u + 1], units.b[u:u + 1]
        d1 = _derivatives(fit, chart, k, a, b).toarray().ravel()
        d2 = _derivatives(fit, chart, k, b, a).toarray().ravel()
        w1, w2 = _weights(fit, k, a, b)[0], _weights(fit, k, b, a)[0]
        n1, n2 = held(fit.data, k, a, b), held(fit.data, k, b, a)
        for j in range(2):
            best = -np.inf
            for odd in (0.0, 1.0):
                s1, s2 = (float(x[0]) for x in _split(3, n1, n2, units.limit1[u:u + 1],
                                                       units.limit2[u:u + 1], np.array([odd])))
                drop = sum(s * w * slopes[:, j] @ (H @ d) ** 2 / (1 + s * w * d @ sigma @ d)
                           for s, w, d in ((s1, w1, d1), (s2, w2, d2)))
                best = max(best, drop / ((s1 + s2) * units.cost[u]))
            assert got[u, j] == pytest.approx(best, rel=1e-9)
