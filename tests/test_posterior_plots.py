"""Posterior figures (hja_bayes.reporting.posterior_plots): drawn on Figures, not pyplot."""

from matplotlib.figure import Figure

from hja_bayes.bayes import (
    plot_calibration,
    plot_ppc_win_rates,
    plot_rank_posterior,
    ppc_calibration,
    ppc_pair_win_rates,
    rank_posterior,
)

from .bayes_support import panel


def test_plots_draw_one_mark_per_row():
    data, _, _, idata = panel()
    table = ppc_pair_win_rates(idata)
    ax = plot_ppc_win_rates(table)
    n_points = sum(len(line.get_xdata()) for line in ax.lines if line.get_linestyle() == "None")
    assert n_points == len(table)
    cal = ppc_calibration(idata)
    ax = plot_calibration(cal)
    assert len(ax.lines[0].get_xdata()) == len(cal)
    ax = plot_rank_posterior(rank_posterior(idata))
    assert ax.images[0].get_array().shape == (data.n_items, data.n_items)
    for axes in (plot_ppc_win_rates(table), plot_calibration(cal)):
        # a plain Figure: no pyplot figure manager behind it
        assert type(axes.figure) is Figure and axes.figure.canvas.manager is None


def test_whole_figures_are_figures():
    from hja_bayes.reporting import posterior_predictive_plot, rank_posterior_plot

    _, _, _, idata = panel()
    for fig in (posterior_predictive_plot(idata), rank_posterior_plot(idata)):
        assert type(fig) is Figure and fig.canvas.manager is None
    fig = posterior_predictive_plot(idata)
    assert len(fig.axes) == 2
