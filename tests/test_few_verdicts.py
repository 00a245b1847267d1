"""Few verdicts per judge: the intervals say when they run short, and a fit drifting towards
no consensus says so (coverage figures: benchmarks/bench_few_verdicts.py)."""

import re

import numpy as np
import pytest

import hja_bayes as hb
from hja_bayes.inference.few_verdicts import FEW_VERDICTS_SE


def gamma_se(fit) -> np.ndarray:
    table = fit.intervals()
    return table[table.quantity == "gamma"].se.to_numpy()


def test_intervals_warn_when_the_judges_rest_on_few_verdicts():
    few, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=20, seed=0)
    per_judge = few.to_frame().groupby("judge")["n"].sum()
    assert (f"comparisons per judge: median {per_judge.median():g} ({per_judge.min():g} to "
            f"{per_judge.max():g})") in str(few.summary())  # the summary shows what to look at
    fit = hb.fit_hja(few, rank=0)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each") as caught:
        se = gamma_se(fit)
    assert caught[0].filename == __file__  # the user's line, not the cached property's
    said = float(re.search(r"gamma_k ([^,]+),", str(caught[0].message)).group(1))
    assert np.median(se) > FEW_VERDICTS_SE and said == pytest.approx(np.median(se), rel=0.05)
    # the same judges with twenty times the verdicts: quiet (warnings are errors here)
    many, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=400, seed=0)
    assert np.median(gamma_se(hb.fit_hja(many, rank=0))) < FEW_VERDICTS_SE
    # the same rule at rank 1, where the gamma_k ran short in the benchmark too
    rank_1, _ = hb.simulate(n_judges=6, n_items=8, rank=1, comparisons_per_judge=20, seed=0)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each"):
        gamma_se(hb.fit_hja(rank_1, rank=1))


def test_a_fit_drifting_towards_no_consensus_says_so():
    # 3 judges, 30 verdicts each: by chance two of them order the models nearly oppositely,
    # and the rank-0 likelihood keeps rising as their rows cancel (gamma -> +-inf, mu -> 0)
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=30, seed=0)
    with pytest.warns(hb.ConvergenceWarning, match="drifting towards judges whose score rows "
                                                   "cancel") as caught:
        fit = hb.fit_hja(data, rank=0, max_iter=300)
    assert not fit.converged
    message = str(caught[0].message)
    low, high = (float(x) for x in re.search(r"gamma from (\S+) to (\S+),", message).groups())
    assert low == pytest.approx(fit.gamma.min(), rel=1e-2)
    assert high == pytest.approx(fit.gamma.max(), rel=1e-2)
    assert np.mean(fit.gamma) ** 2 < 0.01 * np.mean(fit.gamma ** 2)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each"):
        fit.intervals()


def test_the_report_notes_what_the_warning_says():
    from hja_bayes.reporting.content import build_report

    few, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=20, seed=0)
    with pytest.warns(hb.DataWarning, match="rest on few verdicts each"):
        notes = build_report(hb.fit_hja(few, rank=0)).notes
    assert notes[0].startswith("The judges' sensitivities rest on few verdicts each")
    assert "the consensus scores μ and the sensitivities γ" in notes[0]
    many, _ = hb.simulate(n_judges=6, n_items=8, rank=0, comparisons_per_judge=400, seed=0)
    assert not any("few verdicts" in n for n in build_report(hb.fit_hja(many, rank=0)).notes)
