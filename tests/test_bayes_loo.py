"""PSIS-LOO over single comparisons and the choice of rank (hja_bayes.bayes.loo)."""

import pytest

from hja_bayes.bayes import rank_comparison

from .bayes_support import panel, panel_rank0


def test_rank_comparison_reports_loo_next_to_bic():
    _, _, fit1, idata1 = panel()
    fit0, idata0 = panel_rank0()
    table = rank_comparison({0: idata0, 1: idata1})
    assert set(table.index) == {0, 1}
    assert table.loc[0, "bic"] == pytest.approx(fit0.bic)
    assert table.loc[1, "bic"] == pytest.approx(fit1.bic)
    assert {"elpd_loo", "p_loo", "elpd_diff", "max_pareto_k", "loo_rank", "bic_rank"} <= set(table.columns)
    # the data were simulated at rank 1 with strong disagreement: both criteria see it
    assert table.loc[1, "loo_rank"] == 1 and table.loc[1, "bic_rank"] == 1
