"""Figures: every function returns a Figure, built without pyplot."""

from matplotlib.figure import Figure

import hja_bayes as hb

from .report_support import evil_fit, posterior, small_fit


def test_figures_are_figures():
    fit = small_fit()
    for fig in (hb.forest_plot(fit), hb.judge_map(fit), hb.residual_heatmap(fit),
                hb.win_probability_heatmap(fit)):
        assert isinstance(fig, Figure) and fig.axes


def test_rank_zero_figures_do_not_fail():
    fit = evil_fit()
    assert "rank 0" in hb.residual_heatmap(fit).axes[0].get_title()
    assert isinstance(hb.judge_map(fit), Figure)


def test_posterior_figures():
    fit, idata = posterior()
    assert len(hb.forest_plot(fit, idata).axes[0].containers) == 2  # Wald and credible
    assert isinstance(hb.posterior_predictive_plot(idata), Figure)
