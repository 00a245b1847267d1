"""Judges locked on one presentation slot: found, said, and what the advice does to the fit."""

import warnings

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.design.update import newcomers
from hja_bayes.errors import DataWarning
from hja_bayes.position_locked import LOCKED_SHARE, locked_judges, locked_note

COLUMNS = ["judge", "model_a", "model_b", "winner"]


def rows(judge, a, b, first, ties=0, second=0):
    return ([(judge, a, b, "model_a")] * first + [(judge, a, b, "tie")] * ties
            + [(judge, a, b, "model_b")] * second)


def comparisons(rows_):
    return hb.Comparisons.from_frame(pd.DataFrame(rows_, columns=COLUMNS))


def test_the_share_is_of_decided_verdicts_in_either_slot_and_needs_enough_of_them():
    data = comparisons(
        rows("first", "a", "b", 48, ties=30, second=2)       # 48 of 50 decided: 0.96
        + rows("second", "b", "c", 1, second=39)             # 39 of 40 in the second slot
        + rows("ninety", "a", "c", 45, second=5)             # 0.90: not locked
        + rows("few", "a", "b", 19)                          # 19 decided: too few to say
        + rows("both", "b", "a", 40) + rows("both", "a", "b", 40))  # wins whatever is first
    found = {j.judge: j for j in locked_judges(data)}
    assert sorted(found) == ["both", "first", "second"]
    assert found["first"].slot == "first" and found["first"].share == pytest.approx(48 / 50)
    assert found["first"].decided == 50
    assert found["second"].slot == "second" and found["second"].share == pytest.approx(39 / 40)
    assert str(found["second"]) == "'second' (the second-shown answer in 97.5% of 40)"
    assert LOCKED_SHARE == 0.95
    assert locked_judges(data.fold_order()) == []  # no slots once the order is folded
    assert "judges locked on one presentation slot" in str(data.summary())
    assert "'first' (the first-shown answer in 96.0% of 50)" in str(data.summary())
    # every judge with 20 decided verdicts or more: 0.96, 1/40, 0.9, 1
    assert data.summary().first_shown_share == pytest.approx((1 / 40, (0.9 + 0.96) / 2, 1))
    assert "share of a judge's decided verdicts: median 93.0% (2.5% to 100.0%)" in str(
        data.summary())


#: The order in which the one-orientation panel shows the models: m3 before every other,
#: then m0, ... (unrelated to their quality, like an alphabetical order).
SHOWN = ["m3", "m0", "m5", "m1", "m4", "m2"]


def panel(one_orientation: bool, seed=0, per_pair=40, alternate=False):
    """Five judges that follow mu = 1.5, 0.9, 0.3, -0.3, -0.9, -1.5 (models m0..m5) and one
    that picks the first-shown answer 98% of the time.  With ``one_orientation`` every pair
    is shown in the order of :data:`SHOWN`, else each order half the time (at random, or
    by turns with ``alternate``)."""
    rng = np.random.default_rng(seed)
    mu = np.linspace(1.5, -1.5, 6)
    out = []
    for k in range(6):
        for i in range(6):
            for j in range(i + 1, 6):
                for turn in range(per_pair):
                    if one_orientation:
                        a, b = sorted((i, j), key=lambda m: SHOWN.index(f"m{m}"))
                    elif alternate:
                        a, b = (i, j) if turn % 2 else (j, i)
                    else:
                        a, b = (i, j) if rng.random() < 0.5 else (j, i)
                    p = 0.98 if k == 5 else 1 / (1 + np.exp(-(mu[a] - mu[b])))
                    out.append((f"j{k}", f"m{a}", f"m{b}",
                                "model_a" if rng.random() < p else "model_b"))
    return comparisons(out)


def by_model(fit, values):
    """``values`` over the fit's models, in the order m0..m5."""
    return pd.Series(np.asarray(values), index=list(fit.data.items)).sort_index().to_numpy()


def consensus(fit):
    return by_model(fit, fit.mu)


def test_a_locked_judge_in_one_orientation_pulls_the_consensus_and_position_bias_undoes_it():
    data = panel(one_orientation=True)
    assert data.one_orientation_only
    with pytest.warns(DataWarning, match=r"'j5' \(the first-shown answer in 9\d\.\d% of 600\); "
                      "every pair of models is shown in one order only"):
        plain = hb.fit_hja(data, rank=1)
    honest = hb.fit_hja(data.select_judges([f"j{k}" for k in range(5)]), rank=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # no warning with the slot modelled
        modelled = hb.fit_hja(data, rank=1, position_bias=True)
    truth_order = list(range(6))  # m0 best
    assert list(np.argsort(-consensus(honest))) == truth_order
    # The locked judge ranks the models in the order they were shown; its row, counted like
    # any other, drags the consensus toward that order (m3, shown first, up; m2, shown last,
    # down), by several of the scores' standard errors
    pull = consensus(plain) - consensus(honest)
    shown_score = -np.array([SHOWN.index(f"m{i}") for i in range(6)], dtype=float)
    assert np.corrcoef(pull, shown_score)[0, 1] > 0.8
    se = by_model(honest, honest.wald.mu().se)
    assert np.max(np.abs(pull) / se) > 5
    assert list(np.argsort(-consensus(plain))) != truth_order
    # With a term for its slot the judge's slot preference goes there (beta large, gamma
    # small) and the consensus keeps the honest judges' order
    judge = list(modelled.data.judges).index("j5")
    assert modelled.beta[judge] > 2.5 and abs(modelled.gamma[judge]) < 0.5
    assert list(np.argsort(-consensus(modelled))) == truth_order


def test_with_both_orders_a_locked_judge_is_said_to_carry_next_to_nothing():
    data = panel(one_orientation=False, per_pair=20, alternate=True)
    assert not data.one_orientation_only
    with pytest.warns(DataWarning, match="equally often, so their verdicts say next to "
                      "nothing about the models"):
        fit = hb.fit_hja(data, rank=1)
    assert "say next to nothing" in locked_note(fit.data)
    from hja_bayes.reporting.notes import _slot_leaning

    assert "j5" not in " ".join(_slot_leaning(fit.data))  # its own note says it
    assert locked_note(panel(one_orientation=False, per_pair=20).select_judges(
        [f"j{k}" for k in range(5)])) is None


def test_a_locked_judge_shown_one_order_is_said_to_pull_where_the_others_see_both():
    """What a locked judge does depends on the orders it was shown, not on the panel's:
    shown each pair in one order while the other judges see both, it still ranks the models
    in the order shown and pulls the consensus (had been said to carry next to nothing)."""
    honest_judges = [f"j{k}" for k in range(5)]
    both = panel(one_orientation=False, per_pair=20, alternate=True)
    frame = pd.concat([both.select_judges(honest_judges).to_frame(),
                       panel(one_orientation=True, per_pair=20).select_judges(["j5"]).to_frame()])
    data = hb.Comparisons.from_counts(frame)
    assert not data.one_orientation_only
    [locked] = locked_judges(data)
    assert locked.judge == "j5" and locked.one_order == 1.0
    assert locked_judges(both)[0].one_order == 0.0
    with pytest.warns(DataWarning, match=r"pairs of models a judge was shown more often in one "
                      r"order than in the other rank the models in that order, and pull the "
                      r"consensus.*'j5' 100%"):
        plain = hb.fit_hja(data, rank=1)
    assert "than in the other rank the models" in locked_note(data)
    assert locked_note(data).startswith("Judges that chose") and "'j5' 100%" in locked_note(data)
    honest = hb.fit_hja(data.select_judges(honest_judges), rank=1)
    pull = consensus(plain) - consensus(honest)
    shown_score = -np.array([SHOWN.index(f"m{i}") for i in range(6)], dtype=float)
    assert np.corrcoef(pull, shown_score)[0, 1] > 0.8
    # shown the 5 pairs with m0 the other way round too, 10 times against 20 (no ties): of
    # its 15 * 20 + 5 * 20 decided verdicts, 10 * 20 + 5 * (30 - 10) are not offset
    extra = both.select_judges(["j5"]).to_frame()
    extra = extra[(extra.model_a == "m0") | (extra.model_b == "m0")]
    [locked] = locked_judges(hb.Comparisons.from_counts(pd.concat([frame, extra])))
    assert locked.one_order == (10 * 20 + 5 * 20) / 400
    # shown each pair 36 times one way and 4 times the other, it still pulls: 32 / 40
    lopsided = panel(one_orientation=True, per_pair=36).select_judges(["j5"]).to_frame()
    reverse = lopsided.head(15).assign(n=4.0, wins=4.0, ties=0.0)
    reverse[["model_a", "model_b"]] = lopsided.head(15)[["model_b", "model_a"]].to_numpy()
    [locked] = locked_judges(hb.Comparisons.from_counts(pd.concat([lopsided, reverse])))
    assert locked.one_order == pytest.approx(15 * 32 / (15 * 40))


def test_the_report_carries_the_note_without_position_bias_only():
    from hja_bayes.reporting import build_report

    data = panel(one_orientation=True, per_pair=20)
    with pytest.warns(DataWarning, match="presentation slot"):
        plain = hb.fit_hja(data, rank=1)
    rep = build_report(plain)
    assert any("presentation slot" in n for n in rep.notes)
    assert "leaving out j5, whose γ follows the slot" in rep.sentences["judges"]
    modelled = hb.fit_hja(data, rank=1, position_bias=True)
    assert not any("presentation slot" in n for n in build_report(modelled).notes)
    assert "leaving out" not in build_report(modelled).sentences["judges"]


def test_comparisons_asked_of_a_locked_judge_by_a_fit_without_position_bias_are_warned_of():
    data = panel(one_orientation=True, per_pair=20)
    with pytest.warns(DataWarning, match="presentation slot"):
        plain = hb.fit_hja(data, rank=1)
    # the fit reads j5's verdicts as strong preferences: it is asked, and the rows say so
    with pytest.warns(DataWarning, match=r"(\d+) of the 20 comparisons asked for go to judges "
                      r"locked on one presentation slot: 'j5'") as caught:
        asked = hb.next_comparisons(plain, 20, goal="ranks")
    said = int(next(str(w.message) for w in caught if "asked for go to" in str(w.message))
               .split(" of the")[0])
    assert said == int((asked["judge"] == "j5").sum()) > 0
    modelled = hb.fit_hja(data, rank=1, position_bias=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        asked = hb.next_comparisons(modelled, 20, goal="ranks")
    assert len(asked) == 20


def test_a_plan_from_a_pilot_without_position_bias_notes_its_locked_judges():
    data = panel(one_orientation=True, per_pair=20)
    with pytest.warns(DataWarning, match="presentation slot"):
        plain = hb.fit_hja(data, rank=1)
    notes = hb.plan(plain, pairs="top", k=2, power=0.8).notes
    assert any("locked on one presentation slot ('j5'" in n for n in notes)
    modelled = hb.fit_hja(data, rank=1, position_bias=True)
    assert not any("presentation slot" in n
                   for n in hb.plan(modelled, pairs="top", k=2, power=0.8).notes)


def test_a_judge_left_out_on_request_is_the_fit_without_it(tmp_path, capsys):
    from hja_bayes.cli import main

    data = panel(one_orientation=True, per_pair=20)
    honest = hb.fit_hja(data.select_judges([f"j{k}" for k in range(5)]), rank=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # asked for: nothing to warn of
        fit = hb.fit_hja(data, rank=1, leave_out="j5")
    np.testing.assert_allclose(fit.mu, honest.mu, atol=1e-10)
    assert fit.excluded_judges == {"j5": "was left out on request"}
    assert "left out: judge 'j5' was left out on request" in fit.summary()
    with pytest.raises(hb.DataError, match=r"not in the data: \['j9'\]"):
        hb.fit_hja(data, rank=1, leave_out=["j5", "j9"])
    votes = tmp_path / "votes.csv"
    data.to_frame().to_csv(votes, index=False)
    assert main(["fit", str(votes), "--counts", "--rank", "1", "--leave-out", "j5", "--out",
                 str(tmp_path / "fit"), "--report"]) == 0
    captured = capsys.readouterr()
    assert "leaving out 'j5'" in captured.err and "presentation slot (" not in captured.err
    # the report's title counts the judges fitted, as `hja-bayes report` of the folder does
    # (it had counted those read)
    title = (tmp_path / "fit" / "report" / "report.md").read_text().splitlines()[0]
    assert title.endswith("6 models ranked by 5 judges (1,500 comparisons)"), title


def test_an_update_leaves_out_the_new_verdicts_of_a_judge_left_out_on_request():
    data = panel(one_orientation=True, per_pair=20)
    more = panel(one_orientation=True, per_pair=2, seed=1)
    fit = hb.fit_hja(data, rank=1, leave_out=["j5"])
    with pytest.warns(DataWarning, match=r"30 new comparisons by \['j5'\] left out"):
        updated = fit.update(more)
    alone = fit.update(more.select_judges([f"j{k}" for k in range(5)]))
    np.testing.assert_allclose(updated.S, alone.S, atol=1e-12)
    assert updated.excluded_judges == fit.excluded_judges
    assert newcomers(fit, more) == {"judges": [], "models": []}  # j5 is not new
    # a judge the rules left out (one comparison) still asks for a refit
    few = hb.Comparisons.from_counts(pd.concat([data.to_frame(), pd.DataFrame(
        {"judge": ["new"], "model_a": ["m0"], "model_b": ["m1"], "n": [1.0], "wins": [1.0],
         "ties": [0.0]})], ignore_index=True))
    with pytest.warns(DataWarning, match="left out of the fit: judge 'new'"):
        ruled = hb.fit_hja(few, rank=1, position_bias=True)
    with pytest.raises(hb.DataError, match="refit on all the verdicts"):
        ruled.update(few.select_judges(["new"]))
