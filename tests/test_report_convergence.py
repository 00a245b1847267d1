"""The convergence table flags chains that disagree and counts divergences."""

import re

import numpy as np
import pytest

from hja_bayes.bayes.convert import import_arviz
from hja_bayes.reporting import convergence_table


def test_convergence_table_flags_disagreeing_chains_and_counts_divergences():
    az = import_arviz()
    rng = np.random.default_rng(1)
    mu = rng.standard_normal((4, 500, 3))  # four chains of one distribution: R-hat ~ 1
    gamma = rng.standard_normal((4, 500, 2)) + np.arange(4)[:, None, None]  # shifted chains
    diverging = np.zeros((4, 500), dtype=bool)
    diverging[1, [3, 70]] = True
    idata = az.from_dict(posterior={"mu": mu, "gamma": gamma},
                         sample_stats={"diverging": diverging})
    table = convergence_table(idata).set_index("quantity")
    assert list(table.index) == ["mu", "gamma"]
    assert table.loc["mu", "entries"] == 3 and table.loc["gamma", "entries"] == 2
    assert table.loc["mu", "max_rhat"] < 1.01 < 1.5 < table.loc["gamma", "max_rhat"]
    # iid draws: the effective sample size is about the number of draws (2000)
    assert table.loc["mu", "min_ess_bulk"] == pytest.approx(2000, rel=0.25)
    assert table.loc["gamma", "min_ess_bulk"] < 100
    a = convergence_table(idata).attrs
    assert a["divergences"] == 2 and a["n_draws"] == 2000 and a["n_chains"] == 4
    # both shifted entries above 1.01, where agreeing chains of 500 iid draws would put
    # almost none (each entry well under 1e-3)
    assert a["rhat_above"] == 2 and a["rhat_entries"] == 5 and a["rhat_by_chance"] < 0.01
    from hja_bayes.reporting.sentences import convergence_sentence

    assert "(above 1.01 in 2 of 5 entries; chains that agree would put about" in \
        convergence_sentence(convergence_table(idata))
    # one chain: no R-hat, said in words (it had printed "largest R-hat nan")
    one = convergence_sentence(convergence_table(idata.isel(chain=[0])))
    assert "R-hat not computed" in one and "nan" not in one


def test_chains_stuck_apart_are_reported_as_such_not_as_r_hat_not_computed():
    """Two chains each frozen at its own value (R-hat about 1e16; inf where a chain did not
    move at all): the report had said "R-hat not computed" for inf."""
    from hja_bayes.reporting.sentences import convergence_sentence

    az = import_arviz()
    rng = np.random.default_rng(2)
    mu = rng.standard_normal((2, 200, 3))
    mu[0, :, 2], mu[1, :, 2] = 0.3, -0.4
    table = convergence_table(az.from_dict(
        posterior={"mu": mu}, sample_stats={"diverging": np.zeros((2, 200), dtype=bool)}))
    assert table["max_rhat"].max() > 1e10
    sentence = convergence_sentence(table)
    assert "R-hat not computed" not in sentence
    assert re.search(r"largest R-hat \d\.\d\de\+\d\d \(above 1.01 in 1 of 3 entries.*; "
                     r"1,000 or more, or inf: a chain that did not move", sentence), sentence
    from hja_bayes.reporting.formatting import format_value

    assert re.fullmatch(r"\d\.\d\de\+\d\d", format_value(table["max_rhat"].iloc[0], "max_rhat", "logit"))
    assert format_value(np.float64(1.0032), "max_rhat", "logit") == "1.003"
    table["max_rhat"] = [np.inf]
    assert "largest R-hat inf (above" in convergence_sentence(table)


def test_the_sentence_says_how_the_answer_effects_were_handled_and_why():
    from hja_bayes.reporting.sentences import prompt_method_sentence

    az = import_arviz()
    idata = az.from_dict(posterior={"mu": np.zeros((2, 10, 3))})
    assert convergence_table(idata).attrs["prompt_method"] == "none"
    assert prompt_method_sentence(convergence_table(idata)) == ""
    idata.posterior.attrs.update(prompt_method="integrated",
                                 prompt_method_reason="17,382 answer effects, a median of 1 "
                                                      "verdicts per prompt")
    sentence = prompt_method_sentence(convergence_table(idata))
    assert sentence.startswith("The answer effects were integrated out")
    assert "17,382 answer effects" in sentence
    idata.posterior.attrs.update(prompt_method="sampled", prompt_method_reason="")
    assert prompt_method_sentence(convergence_table(idata)) == \
        "NUTS sampled every answer effect."


@pytest.mark.parametrize("above, chance, divergences, worst, says", [
    (6, 4.9, 0, 1.02, None),  # as many as agreeing chains show by chance: no alarm
    (30, 4.9, 0, 1.08, "show convergence problems"),
    (0, 0.0, 13, 1.005, "target_accept_prob=0.95"),  # divergences: the sampler's step
    (0, 0.0, 0, np.nan, "cannot be checked"),  # one chain: nothing checked, said on top
])
def test_the_convergence_note_is_raised_by_problems_not_by_chance(above, chance, divergences,
                                                                  worst, says):
    """The report's top note had fired on any R-hat above 1.01 (almost every short run,
    where agreeing chains put about that many there), said nothing with one chain, and
    advised "sample longer" for divergences."""
    import pandas as pd

    from hja_bayes.reporting.notes import _convergence_note

    table = pd.DataFrame({"max_rhat": [worst], "min_ess_bulk": [900.0]})
    table.attrs.update(rhat_limit=1.01, divergences=divergences, rhat_above=above,
                       rhat_entries=40, rhat_by_chance=chance, n_draws=600, n_chains=2)
    note = _convergence_note(table)
    assert (note is None) if says is None else (says in note)


def test_few_effective_draws_and_a_posterior_without_prompt_effects_are_noted():
    """Draws that agree but are few for some quantity (PRD with style, 2 x 200 draws: τ's
    bulk ESS 63) and a posterior that takes prompt-sharing verdicts as independent (MT-Bench
    with --prompt-effects none: credible intervals 3.1 times narrower than CR2) had passed
    without a word on top of the report."""
    import warnings

    import hja_bayes as hb
    from hja_bayes.reporting import judge_table
    from hja_bayes.reporting.notes import _few_draws_note, report_notes

    az = import_arviz()
    rng = np.random.default_rng(2)
    iid = rng.standard_normal((4, 500, 3))
    sticky = np.zeros((4, 500, 2))  # AR(1) at 0.9: about 2000 * 0.1 / 1.9 = 105 effective
    for t in range(1, 500):
        sticky[:, t] = 0.9 * sticky[:, t - 1] + np.sqrt(1 - 0.81) * rng.standard_normal((4, 2))
    table = convergence_table(az.from_dict(posterior={"mu": iid, "tau": sticky},
                                           sample_stats={"diverging": np.zeros((4, 500), bool)}))
    ess = table.set_index("quantity")["min_ess_bulk"]
    assert ess["tau"] < 400 <= ess["mu"]  # under 100 per chain for tau only
    note = _few_draws_note(table)
    assert note.startswith(f"The posterior draws are few for tau: its smallest bulk effective "
                           f"sample size is {ess['tau']:.0f} from 4 chains, under 100 per "
                           "chain")
    assert _few_draws_note(convergence_table(az.from_dict(posterior={"mu": iid}))) is None
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=150, seed=5,
                          questions=10, question_correlation=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        fit = hb.fit_hja(data, rank=0)
    judges = judge_table(fit)
    for method, noted in (("none", True), ("sampled", False)):
        table.attrs["prompt_method"] = method
        notes = report_notes(fit, judges, table)
        assert any("without prompt effects although the verdicts share prompts" in n
                   for n in notes) == noted
