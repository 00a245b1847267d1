"""Common mistakes get a message that says what to do instead."""

import pandas as pd
import pytest

import hja_bayes as hb

from .report_support import small_fit


def test_repr_of_a_fit_is_one_short_line():
    fit = small_fit()
    text = repr(fit)
    assert "\n" not in text and len(text) < 200 and "array" not in text
    assert text.startswith("HJAFit(rank=1, 4 judges, 5 models, 2,400 comparisons")
    assert "converged" in text


def test_results_print_as_one_short_line():
    """What a notebook shows for a result: one line, no arrays (a wild bootstrap's default
    repr ran to 26,000 characters)."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=300, seed=1,
                          questions=40, question_correlation=0.2)
    fit = hb.fit_hja(data, rank=0)
    results = [fit.wald, fit.bootstrap(n=3, seed=1), fit.bootstrap(wild=True, n=20),
               fit.fragility(), hb.fit_pooled_btl(small_fit().data),
               hb.reporting.build_report(small_fit())]
    for result in results:
        text = repr(result)
        assert "\n" not in text and len(text) < 200 and "array" not in text, text
        assert text.startswith(type(result).__name__ + "(")


def test_mistakes_get_hints():
    fit = small_fit()
    frame = fit.data.to_frame()
    with pytest.raises(hb.DataError, match="from_file"):
        hb.Comparisons.from_frame("votes.csv")  # a path where a table goes
    with pytest.raises(hb.DataError, match="Comparisons.from_frame"):
        hb.fit_hja(frame)  # rows where comparisons go
    with pytest.raises(hb.ParameterError, match="fit_hja"):
        hb.leaderboard(fit.data)  # data where a fit goes
    with pytest.raises(hb.ParameterError, match="fit_hja"):
        hb.report(frame, "out")
    with pytest.raises(hb.DataError, match="judge=None"):
        hb.Comparisons.from_frame(frame.drop(columns="judge").assign(winner="model_a"))
    assert isinstance(frame, pd.DataFrame)


def test_rank_rules_are_read_in_any_case():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=0)
    assert hb.fit_hja(data, rank="BIC", max_rank=0).rank_table is not None
    with pytest.raises(hb.ParameterError, match="'bic' or 'cv'"):
        hb.fit_hja(data, rank="aic")
