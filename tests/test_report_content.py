"""What a report says: title, notes, sentences and figures chosen (nothing written)."""

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.reporting import build_report
from hja_bayes.reporting.sentences import default_title, plural

from .report_support import evil_fit, small_fit


def test_one_orientation_note():
    fit = evil_fit()
    assert fit.data.one_orientation_only
    rep = build_report(fit)
    assert any("one orientation" in n for n in rep.notes)


def test_title_comes_from_the_data_and_counts_are_plural_only_when_plural():
    fit = small_fit()
    assert build_report(fit).title == "5 models ranked by 4 judges (2,400 comparisons)"
    assert build_report(fit, title="Mine").title == "Mine"
    assert plural(1, "judge") == "1 judge" and plural(2, "judge") == "2 judges"
    one = hb.Comparisons.from_frame(pd.DataFrame(
        {"model_a": ["a", "b"], "model_b": ["b", "a"], "winner": ["model_a", "tie"]}),
        judge=None)
    assert default_title(one) == "2 models ranked by 1 judge (2 comparisons)"


def test_rank_zero_says_so_in_one_sentence_and_draws_no_residual():
    rep = build_report(evil_fit())
    assert rep.sentences["disagreement"].startswith("The model was fitted at rank 0, without "
                                                    "structured disagreement (rank='bic'")
    searched = build_report(hb.fit_hja(evil_fit().data, rank="bic", max_rank=1))
    assert searched.sentences["disagreement"].startswith(
        "No structured disagreement was found (rank selection chose rank 0)")
    assert "residual" not in rep.figures and "judge_map" in rep.figures
    rep1 = build_report(small_fit())
    assert "residual" in rep1.figures and "rank 1" in rep1.sentences["disagreement"]
    # one judge: its sensitivity is 1 by definition, said in words, not drawn as a lone dot
    data, _ = hb.simulate(n_judges=1, n_items=4, rank=0, comparisons_per_judge=300, seed=0)
    alone = build_report(hb.fit_hja(data, rank=0))
    assert "judge_map" not in alone.figures and "by definition" in alone.sentences["judges"]


def test_a_judge_seeing_pairs_one_way_only_gets_a_note():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=500,
                          position_bias=0.5, seed=2)
    cells = data.to_frame()
    one_way = (cells["judge"] == data.judges[0]) & (cells["model_a"] > cells["model_b"])
    data = hb.Comparisons.from_counts(cells[~one_way])
    fit = hb.fit_hja(data, rank=0, position_bias=True)
    rep = build_report(fit)
    shares = rep.judges.set_index("judge")["both_orders"]
    assert shares[data.judges[0]] == 0 and (shares.iloc[1:] == 1).all()
    note = [n for n in rep.notes if "one order only" in n]
    assert len(note) == 1 and data.judges[0] in note[0] and data.judges[1] not in note[0]


def test_bad_arguments_are_refused_before_any_work():
    fit = small_fit()
    with pytest.raises(hb.ParameterError, match="level"):
        hb.report(fit, "/nonexistent/never/written", level="0.9")
    with pytest.raises(hb.ParameterError, match="scale"):
        build_report(fit, scale="glicko")
    with pytest.raises(hb.ParameterError, match="fit_hja"):
        build_report(fit.data)
    assert np.isfinite(fit.nll)


def test_with_clusters_the_report_states_cluster_robust_intervals():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=2,
                          questions=8)
    fit = hb.fit_hja(data, rank=0)
    assert fit.cov_type == "cluster"
    rep = build_report(fit)
    assert rep.leaderboard.attrs["meta"]["cov_type"] == "cluster"
    from hja_bayes.reporting import render_html

    assert "cluster-robust covariance by prompt" in render_html(rep)
    # the intervals are the cluster-robust ones
    mu = fit.wald_inference("cluster").mu()
    board = rep.leaderboard.set_index("model")
    for i, m in enumerate(fit.items):
        assert board.loc[m, "score_upper"] == pytest.approx(mu.upper[i])
    # so do the forest plot's legend and caption (they had said "Wald" alone)
    assert rep.leaderboard.attrs["meta"]["small_sample"] == "CR2"
    assert rep.captions["forest"].startswith(
        "Consensus scores with 95% cluster-robust Wald (CR2) intervals, best first;")
    assert "cluster-robust Wald (CR2) intervals" in rep.captions["judge_map"]
    legend = rep.figures["forest"].axes[0].get_legend_handles_labels()[1]
    assert legend == ["cluster-robust Wald (CR2) 95% (MAP)"]
    pinned = build_report(fit, baseline=(fit.items[1], 1000.0), scale="elo").captions["forest"]
    assert (f"best first; {fit.items[1]} is pinned at 1000 and every other interval is of the "
            "difference to it;") in pinned


def test_left_out_judges_and_unbeaten_models_are_flagged():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300, seed=5)
    cells = data.to_frame()
    champ = pd.DataFrame([{"judge": j, "model_a": "champ", "model_b": m, "n": 10, "wins": 10,
                           "ties": 0} for j in data.judges for m in data.items])
    newcomer = pd.DataFrame([{"judge": "newcomer", "model_a": data.items[0],
                              "model_b": data.items[1], "n": 1, "wins": 1, "ties": 0}])
    panel = hb.Comparisons.from_counts(pd.concat([cells, champ, newcomer]))
    with pytest.warns(hb.DataWarning):
        fit = hb.fit_hja(panel, rank=0)
    assert "newcomer" in fit.excluded_judges
    notes = build_report(fit).notes
    left = [n for n in notes if n.startswith("Judges left out")]
    assert len(left) == 1 and "newcomer" in left[0] and "1 comparison" in left[0]
    unbeaten = [n for n in notes if "won every comparison: champ" in n]
    assert len(unbeaten) == 1 and "lost every" not in unbeaten[0]
    assert "set by the fit's ridge penalty, not by the data" in unbeaten[0]


def test_judges_against_or_apart_from_the_consensus_and_unusable_rows_are_noted():
    """A judge whose verdicts are reversed (γ below 0 with its whole interval) and one that
    flips a coin (γ's interval around 0) get one note each, by name; the others none.  A
    judge with half its rows unusable is named with its share, as rows left out."""
    rng = np.random.default_rng(4)
    items = ["a", "b", "c", "d", "e"]
    strength = dict(zip(items, [1.5, 0.75, 0.0, -0.75, -1.5]))
    rows = []
    for judge in ("j1", "j2", "j3", "reversed", "coin"):
        for _ in range(400):
            a, b = rng.choice(items, 2, replace=False)
            p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
            first = rng.random() < (0.5 if judge == "coin" else p)
            first = not first if judge == "reversed" else first
            rows.append((judge, a, b, "model_a" if first else "model_b"))
    frame = pd.DataFrame(rows, columns=["judge", "model_a", "model_b", "winner"])
    frame.loc[frame.index[(frame["judge"] == "j3").to_numpy()][::2], "winner"] = "invalid"
    data = hb.Comparisons.from_frame(frame)
    assert data.rejected_by_judge == {"j3": 200}
    rep = build_report(hb.fit_hja(data, rank=0))
    gamma = rep.judges.set_index("judge")
    assert gamma.loc["reversed", "gamma_upper"] < 0
    assert gamma.loc["coin", "gamma_lower"] < 0 < gamma.loc["coin", "gamma_upper"]
    assert (gamma.loc[["j1", "j2", "j3"], "gamma_lower"] > 0).all()
    against = [n for n in rep.notes if "runs against the consensus" in n]
    apart = [n for n in rep.notes if "cannot be told from 0" in n]
    assert len(against) == 1 and against[0].endswith("consensus): reversed.")
    assert len(apart) == 1 and apart[0].endswith("consensus): coin.")
    unusable = [n for n in rep.notes if "unusable in many of their rows" in n]
    assert len(unusable) == 1 and unusable[0].endswith("j3 50.0%.")


def test_the_judges_sentence_of_one_judge_and_of_several():
    from hja_bayes.reporting.sentences import judges_sentence

    one = pd.DataFrame({"judge": ["j1"], "gamma": [1.0]})
    assert judges_sentence(one).startswith("One judge (j1): the consensus is its own ranking")
    several = pd.DataFrame({"judge": ["j1", "j2", "j3"], "gamma": [0.5, 1.6, 0.9]})
    assert judges_sentence(several) == ("Most sensitive judge: j2 (γ = 1.60); least: j1 "
                                        "(γ = 0.50).")
    # a judge locked on one slot had been named the most sensitive (MT-Bench's GLM-4.5-Air,
    # first-shown in 99.8% of its verdicts, γ 2.20)
    assert judges_sentence(several, locked=["j2"]) == (
        "Most sensitive judge: j3 (γ = 0.90); least: j1 (γ = 0.50), leaving out j2, whose γ "
        "follows the slot they chose (see the notes).")
    # with the table's intervals: a judge of a dozen verdicts topping the panel shows its doubt
    several["gamma_lower"], several["gamma_upper"] = [0.3, 0.45, 0.7], [0.7, 4.75, 1.1]
    assert judges_sentence(several) == ("Most sensitive judge: j2 (γ = 1.60, interval 0.45 to "
                                        "4.75); least: j1 (γ = 0.50, interval 0.30 to 0.70).")


def test_the_first_models_interval_says_when_it_is_a_difference_to_a_pinned_baseline():
    from hja_bayes.reporting.sentences import glance_sentence

    board = pd.DataFrame({"model": ["a", "b"], "score": [1246.0, 1200.0],
                          "score_lower": [1189.0, 1200.0], "score_upper": [1304.0, 1200.0],
                          "tier": [1, 1]})
    board.attrs["meta"] = {"baseline": {"model": "b", "score": 1200.0}}
    assert glance_sentence(board, 0.95, "elo").startswith(
        "a ranks first (score 1246, 95% interval 1189 to 1304, of its difference to b, "
        "pinned at 1200). ")
    board.attrs["meta"] = {}
    assert glance_sentence(board, 0.95, "elo").startswith(
        "a ranks first (score 1246, 95% interval 1189 to 1304). ")
    # a first whose joint rank interval reaches further down says so (Chatbot Arena's
    # headline had named claude-instant-v1 first, its rank interval 1 to 3)
    ranked = board.assign(rank_lower=[1, 1], rank_upper=[2, 2])
    assert glance_sentence(ranked, 0.95, "elo").startswith(
        "a ranks first (score 1246, 95% interval 1189 to 1304). Its rank interval runs from "
        "1 to 2: the data do not settle first place. ")
    settled = board.assign(rank_lower=[1, 2], rank_upper=[1, 2])
    assert "rank interval" not in glance_sentence(settled, 0.95, "elo")


def test_the_tiers_sentence_of_a_large_board_names_the_top_tiers_only():
    from hja_bayes.reporting.sentences import tiers_sentence

    board = pd.DataFrame({"model": [f"m{i}" for i in range(1000)],
                          "tier": np.r_[[1] * 2, [2] * 10, [3] * 40, [4] * 948]})
    text = tiers_sentence(board)
    assert text == ("tier 1: m0, m1; tier 2: m2, m3, m4, m5, m6, m7, m8, m9, m10, m11; "
                    "then 988 more models in tiers 3 to 4")
    one = tiers_sentence(board.assign(tier=1))
    assert one.startswith("tier 1: m0, m1,") and one.endswith("m29 and 970 more")
    small = pd.DataFrame({"model": ["a", "b", "c"], "tier": [1, 2, 2]})
    assert tiers_sentence(small) == "tier 1: a; tier 2: b, c"


def test_a_crowds_judge_lists_name_the_first_twenty_and_count_the_rest():
    from hja_bayes.reporting.notes import report_notes
    from hja_bayes.reporting.sentences import named

    assert named(["a", "b"], 5) == "a, b"
    many = [f"j{i}" for i in range(45)]
    assert named(many, 300) == (", ".join(many[:20]) + " and 25 more (45 of 300; the judges "
                                "table has them all)")
    assert named(many, 1000).endswith("(45 of 1,000; the judges table has them all)")
    fit = small_fit()
    judges = pd.DataFrame({"judge": fit.judges, "gamma": 0.1, "gamma_lower": -1.0,
                           "gamma_upper": 1.0})
    judges = pd.concat([judges] * 6, ignore_index=True)  # 24 rows, every interval across 0
    judges["judge"] = [f"rater{i}" for i in range(len(judges))]
    flat = [n for n in report_notes(fit, judges, None) if "cannot be told from 0" in n]
    assert len(flat) == 1 and flat[0].endswith("rater19 and 4 more (24 of 24; the judges "
                                               "table has them all).")


def test_a_posterior_without_answer_effects_on_prompts_says_what_its_intervals_ignore():
    """--prompt-effects none on clustered data: the report had set credible intervals that
    take the verdicts as independent beside cluster-robust Wald ones, unremarked."""
    from hja_bayes.reporting.sentences import prompt_method_sentence

    table = pd.DataFrame()
    table.attrs["prompt_method"] = "none"
    said = prompt_method_sentence(table, clustered=True)
    assert "take the verdicts as independent" in said and "cluster-robust" in said
    assert prompt_method_sentence(table, clustered=False) == ""
    table.attrs["prompt_method"] = "integrated"
    assert prompt_method_sentence(table, clustered=True).startswith("The answer effects were "
                                                                     "integrated")


def test_a_report_without_position_bias_names_judges_leaning_to_one_slot():
    """PRD's bard chose the first-shown answer in 81% of its decided verdicts; the CLI fits
    without position bias by default and its report had not mentioned it."""
    from hja_bayes.reporting.notes import _slot_leaning

    rows = hb.datasets.load_prd_vicuna80().judgments  # every pair in both orders on PRD
    data = hb.Comparisons.from_frame(rows, cluster="question_id")
    won = rows.groupby("judge")["winner"].value_counts().unstack()
    first = won["model_a"] / (won["model_a"] + won["model_b"])  # by hand: bard 0.812
    assert set(first[(first - 0.5).abs() > 0.2].index) == {"bard"}
    assert _slot_leaning(data) == [f"bard ({100 * first['bard']:.1f}%)"]
    plain = build_report(hb.fit_hja(data, rank=0))
    said = [n for n in plain.notes if n.startswith("This fit has no position bias term")]
    assert len(said) == 1 and "bard (81.2%)" in said[0]
    biased = build_report(hb.fit_hja(data, rank=0, position_bias=True))
    assert not any(n.startswith("This fit has no position bias term") for n in biased.notes)
