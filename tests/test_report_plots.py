"""Figures: every function returns a Figure built without pyplot, and its text fits."""

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

import hja_bayes as hb

from .report_support import evil_fit, posterior, small_fit


def _text_fits(fig):
    """Every title and axis label lies inside the figure and clear of the other axes
    (e.g. a heat map's title does not run into its colour bar)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    bounds = fig.bbox
    for ax in fig.axes:
        texts = [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        for t in texts:
            if not t.get_text():
                continue
            box = t.get_window_extent(renderer)
            assert box.x0 >= bounds.x0 - 1 and box.x1 <= bounds.x1 + 1, t.get_text()
            assert box.y0 >= bounds.y0 - 1 and box.y1 <= bounds.y1 + 1, t.get_text()
            for other in fig.axes:
                if other is not ax and t in (ax.title, ax._left_title, ax._right_title):
                    assert not box.overlaps(other.get_window_extent(renderer)), t.get_text()


def test_figures_are_figures_and_their_text_fits():
    fit = small_fit()
    for fig in (hb.forest_plot(fit), hb.judge_map(fit), hb.residual_heatmap(fit),
                hb.win_probability_heatmap(fit), hb.observed_heatmap(fit.data),
                hb.observed_heatmap(fit.data, "battles")):
        assert isinstance(fig, Figure) and fig.axes
        _text_fits(fig)


def test_long_names_and_many_models_still_fit():
    rng = np.random.default_rng(0)
    names = [f"organisation-{i}/a-rather-long-model-name-v{i}" for i in range(17)]
    rows = []
    for _ in range(3000):
        i, j = rng.choice(17, 2, replace=False)
        rows.append((f"judge/with-a-long-name-{rng.integers(3)}", names[i], names[j],
                     "model_a" if rng.random() < 0.5 + (j - i) / 40 else "model_b"))
    data = hb.Comparisons.from_frame(pd.DataFrame(rows, columns=["judge", "model_a", "model_b",
                                                                 "winner"]))
    fit = hb.fit_pooled_btl(data)  # the figures draw tables; a quick fit makes them
    judges = pd.DataFrame({"judge": sorted(set(data.judges)), "gamma": [0.5, 1.0, 1.5],
                           "gamma_lower": [0.2, 0.7, 1.2], "gamma_upper": [0.8, 1.3, 1.8]})
    for fig in (hb.forest_plot(fit, table=hb.leaderboard(fit)),
                hb.judge_map(None, table=judges), hb.win_probability_heatmap(fit)):
        _text_fits(fig)
    # a 17 x 17 heat map is drawn large enough to read: about half an inch per cell
    assert hb.win_probability_heatmap(fit).get_size_inches()[0] >= 0.45 * 17


def test_a_very_long_name_is_shortened_in_the_figures_not_squeezing_them():
    # a 120-character model name had collapsed the heat maps' layout (matplotlib:
    # "constrained_layout not applied because axes sizes collapsed to zero")
    from hja_bayes.reporting.plots import LABEL_CHARS

    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=400, seed=1)
    long = "x" * 120
    frame = data.to_frame()
    for column in ("model_a", "model_b"):
        frame[column] = frame[column].replace("item0", long)
    fit = hb.fit_hja(hb.Comparisons.from_counts(frame), rank=1)
    for fig in (hb.forest_plot(fit), hb.residual_heatmap(fit), hb.win_probability_heatmap(fit),
                hb.observed_heatmap(fit.data)):
        _text_fits(fig)  # drawn; a collapsed layout warns, an error in the suite
        labels = [t.get_text() for ax in fig.axes[:1]
                  for t in ax.get_xticklabels() + ax.get_yticklabels()]
        assert "x" * 24 + "…" + "x" * 25 in labels and long not in labels
        assert all(len(label) <= LABEL_CHARS for label in labels)
    assert long in set(hb.leaderboard(fit)["model"])  # the tables keep the whole name


def test_rank_zero_figures():
    fit = evil_fit()
    assert "rank 0" in hb.residual_heatmap(fit).axes[0].get_title(loc="left")
    fig = hb.judge_map(fit)  # no leverage at rank 0: the sensitivities, one judge a line
    assert fig.axes[0].get_title() == "Judge sensitivity"
    assert len(fig.axes[0].get_yticklabels()) == len(fit.judges)


def test_posterior_figures():
    fit, idata = posterior()
    assert len(hb.forest_plot(fit, idata).axes[0].containers) == 2  # Wald and credible
    assert isinstance(hb.posterior_predictive_plot(idata), Figure)
    # the judges' figure draws each gamma's credible interval too (it had drawn Wald only)
    draws = np.asarray(idata.posterior["gamma"]).reshape(-1, len(fit.judges))
    expected = np.sort(np.quantile(draws, [0.025, 0.975], axis=0).T, axis=0)
    ax = hb.judge_map(fit, idata=idata).axes[0]
    wald, credible = ax.containers
    ends = np.array([segment[:, 0] for segment in credible.lines[2][0].get_segments()])
    assert np.allclose(np.sort(ends, axis=0), expected, rtol=0, atol=1e-9)
    _text_fits(ax.figure)


def test_judge_map_leaves_out_labels_that_would_overlap():
    """Twenty judges, fifteen of them at nearly one point: the two flagged judges and the
    far ones are named, the crowd gets one label, and no two labels' boxes overlap."""
    rng = np.random.default_rng(0)
    gamma = np.r_[1.0 + 0.01 * rng.normal(size=15), 0.2, 1.8, 0.6, 1.4, 3.0]
    leverage = np.r_[1.0 + 0.01 * rng.normal(size=15), 6.0, 4.0, 8.0, 2.5, 12.0]
    names = [f"judge-{k}" for k in range(20)]
    flagged = np.zeros(20, dtype=bool)
    flagged[[3, 19]] = True  # one inside the crowd, one far out
    judges = pd.DataFrame({"judge": names, "gamma": gamma, "gamma_lower": gamma - 0.1,
                           "gamma_upper": gamma + 0.1, "leverage": leverage,
                           "high_leverage": flagged})
    ax = hb.judge_map(None, table=judges).axes[0]
    assert len(ax.containers) == 2  # the two colours; no credible intervals without them
    # the legend says the flag's whole rule (it had said "high sensitivity and high
    # leverage", which a judge of the highest gamma and h above the median can fail on rho)
    assert ax.get_legend_handles_labels()[1][1] == "|γ|, h above the medians, ρ > 0.25 (Wald 95%)"
    with_credible = judges.assign(gamma_cred_lower=gamma - 0.2, gamma_cred_upper=gamma + 0.3)
    drawn = hb.judge_map(None, table=with_credible).axes[0].containers[2]
    ends = np.array([segment[:, 0] for segment in drawn.lines[2][0].get_segments()])
    assert np.allclose(ends, np.c_[gamma - 0.2, gamma + 0.3], rtol=0, atol=1e-12)
    labels = {t.get_text(): t.xy for t in ax.texts}
    assert {"judge-3", "judge-19", "judge-15", "judge-16", "judge-17", "judge-18"} <= set(labels)
    assert len(labels) == 6  # judge-3 stands for the crowd it sits in
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]  # as drawn: no two overlap
    assert not any(a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1:])
    # nor does a label cover another judge's point
    centres = ax.transData.transform(np.c_[gamma, leverage])
    for t, box in zip(ax.texts, boxes):
        own = names.index(t.get_text())
        assert not any(box.contains(*c) for k, c in enumerate(centres) if k != own
                       and np.hypot(*(c - centres[own])) > 8)


def test_figures_of_many_models_show_the_top_ones_and_say_so(monkeypatch):
    # a 1,000-model leaderboard drew every model: figures hundreds of inches wide and a
    # report that ran out of memory; now the top ones (the residual: the most disagreed-
    # about), with the title saying how many of how many
    from hja_bayes.reporting import plots

    monkeypatch.setattr(plots, "HEATMAP_MODELS", 8)
    monkeypatch.setattr(plots, "FOREST_MODELS", 10)
    data, _ = hb.simulate(n_judges=3, n_items=12, rank=1, comparisons_per_judge=800, seed=5)
    fit = hb.fit_hja(data, rank=1)
    board = hb.leaderboard(fit)
    top = list(board["model"])

    def shown(fig):
        ax = fig.axes[0]
        return ax.get_title(loc="left") or ax.get_title(), ax.images[0].get_array().shape, \
            [t.get_text() for t in ax.get_xticklabels()]

    title, shape, columns = shown(hb.win_probability_heatmap(fit))
    assert shape == (8, 8) and columns == top[:8] and "(top 8 of 12 models)" in title
    for kind in ("win_fraction", "battles"):
        title, shape, columns = shown(hb.observed_heatmap(data, kind, order=top))
        assert shape == (8, 8) and columns == top[:8] and "(top 8 of 12 models)" in title
    title, shape, columns = shown(hb.residual_heatmap(fit))
    residual = np.linalg.norm(fit.U @ fit.V.T, axis=0)
    most = {fit.items[i] for i in np.argsort(-residual)[:8]}
    assert shape == (3, 8) and set(columns) == most
    assert "(the most disagreed-about 8 of 12 models)" in title
    forest = hb.forest_plot(fit, table=board)
    assert len(forest.axes[0].get_yticks()) == 10 and "(top 10 of 12 models)" in \
        forest.axes[0].get_title()
    _text_fits(forest)
    from hja_bayes.reporting.sentences import captions

    said = captions(fit, 0.95)
    assert said["win_probability"].endswith("The figure shows 8 of the 12 models; "
                                            "pairwise.csv has them all.")
    assert captions(fit, 0.95, pairwise_file=False)["win_probability"].endswith(
        "the pairwise table (pairwise_table(fit), or the report with --pairwise) has them all.")
    assert "10 of the 12 models; leaderboard.csv" in said["forest"]
    assert said["forest"].startswith("Consensus scores with 95% Wald intervals, best first")
    assert captions(fit, 0.95, bayes=True)["forest"].startswith(  # the plot draws both
        "Consensus scores with 95% Wald intervals and, below each, the posterior mean with its "
        "credible interval, best first")


def test_many_judges_at_rank_zero_show_the_most_and_least_sensitive(monkeypatch):
    from hja_bayes.reporting import judge_plots

    monkeypatch.setattr(judge_plots, "FOREST_MODELS", 6)
    judges = pd.DataFrame({"judge": [f"j{i}" for i in range(10)],
                           "gamma": np.linspace(2.0, 0.2, 10)[::-1]})
    judges["gamma_lower"], judges["gamma_upper"] = judges["gamma"] - 0.1, judges["gamma"] + 0.1
    ax = hb.judge_map(None, table=judges).axes[0]
    shown = [t.get_text() for t in ax.get_yticklabels()]  # top line first
    assert shown == ["j9", "j8", "j7", "j2", "j1", "j0"]
    assert "(the 3 most and 3 least sensitive of 10 judges)" in ax.get_title()


def test_judge_map_spreads_the_panel_out_when_one_judge_is_far():
    """One judge far above the rest (MT-Bench's and Chatbot Arena's locked judge: leverage
    12-17 against 0-5) had squeezed every other judge into the bottom fifth: such a map is
    drawn on a square-root scale, which says so; an even panel keeps the linear one."""
    gamma = np.r_[0.2, 0.5, 0.8, 1.0, 1.1, 1.3, 1.5, 3.6]
    leverage = np.r_[0.1, 0.4, 0.9, 1.5, 2.2, 2.8, 4.4, 16.8]
    judges = pd.DataFrame({"judge": [f"j{k}" for k in range(8)], "gamma": gamma,
                           "gamma_lower": gamma - 0.2, "gamma_upper": gamma + 0.2,
                           "leverage": leverage, "high_leverage": np.r_[[False] * 7, True]})
    for y, scale in ((leverage, "function"), (np.r_[leverage[:7], 5.0], "linear")):
        ax = hb.judge_map(None, table=judges.assign(leverage=y)).axes[0]
        assert ax.get_yscale() == scale and ("square-root" in ax.get_ylabel()) == (
            scale == "function")
        low, high = ax.get_ylim()
        assert low <= y.min() and y.max() <= high
    # the seven near judges take more than a fifth of the height (a fifth on a linear scale)
    ax = hb.judge_map(None, table=judges).axes[0]
    to_axes = ax.transAxes.inverted().transform
    heights = to_axes(ax.transData.transform(np.c_[gamma, leverage]))[:, 1]
    assert heights[6] - heights[0] > 0.4
