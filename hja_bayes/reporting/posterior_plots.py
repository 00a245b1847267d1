"""Figures of a Bayesian HJA posterior (matplotlib ``Figure`` objects, never pyplot).

Posterior predictive checks (:func:`plot_ppc_win_rates`, :func:`plot_calibration`,
:func:`posterior_predictive_plot`), the posterior of the items' ranks
(:func:`plot_rank_posterior`, :func:`rank_posterior_plot`) and the implied prior of win
probabilities (:func:`prior_predictive_plot`).  The ``plot_*`` functions draw on given axes
(or on a new figure's) and return the axes; the ``*_plot`` functions return a whole
:class:`~matplotlib.figure.Figure`.  They draw the tables of :mod:`hja_bayes.bayes` and
compute no statistics of their own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .plots import tick_labels

__all__ = [
    "plot_calibration",
    "plot_ppc_win_rates",
    "plot_rank_posterior",
    "posterior_predictive_plot",
    "prior_predictive_plot",
    "rank_posterior_plot",
]


def plot_ppc_win_rates(table: pd.DataFrame, ax=None, *, alpha: float = 0.05,
                       rate: str = "win rate"):
    """Observed against predicted win rates with predictive intervals.

    Works on :func:`~hja_bayes.bayes.ppc_judge_win_rates` and
    :func:`~hja_bayes.bayes.ppc_pair_win_rates` tables (and, with ``rate`` naming what they
    hold, on :func:`~hja_bayes.bayes.ppc_tie_rates` and
    :func:`~hja_bayes.bayes.ppc_category_rates`); points whose
    two-sided p-value is below ``alpha`` (``min(p, 1 - p) < alpha / 2``) are drawn in red.

    Parameters
    ----------
    table : DataFrame
    ax : matplotlib Axes, optional
        Where to draw (default: a new :class:`~matplotlib.figure.Figure`'s axes).
    alpha : float
        Two-sided level of the highlighted points.
    rate : str
        What the rates are, for the axis labels.

    Returns
    -------
    matplotlib Axes
    """
    if ax is None:
        ax = Figure(figsize=(5, 5), layout="constrained").add_subplot()
    pred, obs = table["predicted_mean"].to_numpy(), table["observed"].to_numpy()
    err = np.vstack([pred - table["predicted_lower"], table["predicted_upper"] - pred])
    extreme = np.minimum(table["p_value"], 1 - table["p_value"]).to_numpy() < alpha / 2
    for mask, colour, label in ((~extreme, "C0", "within"),
                                (extreme, "C3", f"p < {alpha:g} (two-sided)")):
        if mask.any():
            ax.errorbar(pred[mask], obs[mask], xerr=err[:, mask], fmt="o", ms=3, color=colour,
                        alpha=0.7, elinewidth=0.8, label=label)
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
    ax.set_xlabel(f"predicted {rate} (posterior predictive mean, interval)")
    ax.set_ylabel(f"observed {rate}" + (" (ties 1/2)" if rate == "win rate" else ""))
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def plot_calibration(table: pd.DataFrame, ax=None):
    """Reliability diagram of :func:`~hja_bayes.bayes.ppc_calibration`: observed against predicted rate per
    bin, with the replicated-data band.

    Returns
    -------
    matplotlib Axes
        ``ax``, or the axes of a new :class:`~matplotlib.figure.Figure`.
    """
    if ax is None:
        ax = Figure(figsize=(5, 5), layout="constrained").add_subplot()
    x = table["predicted"].to_numpy()
    ax.fill_between(x, table["predicted_lower"], table["predicted_upper"], color="C0", alpha=0.25,
                    label="replicated data")
    ax.plot(x, table["observed"], "o-", color="C1", label="observed")
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
    ax.set_xlabel("predicted win rate")
    ax.set_ylabel("observed win rate")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def plot_rank_posterior(result, ax=None):
    """Heat map of ``P(rank = m)`` per item (rows sorted by mean rank) of a
    :class:`~hja_bayes.bayes.RankPosterior`.

    Returns
    -------
    matplotlib Axes
        ``ax``, or the axes of a new :class:`~matplotlib.figure.Figure`.
    """
    probs = result.probabilities
    if ax is None:
        size = (1 + 0.45 * probs.shape[1], 1 + 0.35 * probs.shape[0])
        ax = Figure(figsize=size, layout="constrained").add_subplot()
    im = ax.imshow(probs.to_numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(probs.shape[1]), [str(c) for c in probs.columns])
    ax.set_yticks(range(probs.shape[0]), tick_labels(probs.index))
    ax.set_xlabel("rank")
    ax.figure.colorbar(im, ax=ax, label="posterior probability")
    return ax


def posterior_predictive_plot(idata, level: float = 0.95) -> Figure:
    """Posterior predictive checks: judges' win rates and calibration, side by side.

    Left: every judge's observed win rate of every model (and of the first-shown answer)
    against its posterior predictive interval (:func:`hja_bayes.bayes.ppc_judge_win_rates`);
    middle: observed against predicted win rates by bins of the prediction
    (:func:`hja_bayes.bayes.ppc_calibration`); right, for outcome models that predict more
    than wins: every judge's share of each verdict category (ordered verdicts,
    :func:`hja_bayes.bayes.ppc_category_rates`) or its tie rate (Davidson's,
    :func:`hja_bayes.bayes.ppc_tie_rates`), the parts of the data those models add.

    Parameters
    ----------
    idata : arviz.InferenceData
        From :func:`hja_bayes.sample_hja` (posterior predictive and constant data groups).
    level : float
        Level of the predictive intervals.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..bayes.ppc import (ppc_calibration, ppc_category_rates, ppc_judge_win_rates,
                             ppc_tie_rates)

    replicated = idata.posterior_predictive
    shares = (("verdict category shares", ppc_category_rates(idata, level))
              if "category_counts" in replicated else
              ("tie rates", ppc_tie_rates(idata, level)) if "ties" in replicated else None)
    fig = Figure(figsize=(10 if shares is None else 15, 4.6), layout="constrained")
    axes = fig.subplots(1, 2 if shares is None else 3)
    plot_ppc_win_rates(ppc_judge_win_rates(idata, level), ax=axes[0], alpha=1 - level)
    axes[0].set_title("Judges' win rates: observed vs posterior predictive", fontsize=10)
    plot_calibration(ppc_calibration(idata, level=level), ax=axes[1])
    axes[1].set_title("Calibration of predicted win rates", fontsize=10)
    if shares is not None:
        what, table = shares
        plot_ppc_win_rates(table, ax=axes[2], alpha=1 - level, rate=what[:-1])
        axes[2].set_title(f"Judges' {what}: observed vs predicted", fontsize=10)
    return fig


def rank_posterior_plot(idata, level: float = 0.95) -> Figure:
    """Posterior probability of every rank for every model (rows by mean rank).

    Parameters
    ----------
    idata : arviz.InferenceData
    level : float
        Level of the rank intervals (not drawn; kept for a uniform signature).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..bayes.ranks import rank_posterior

    result = rank_posterior(idata, level)
    n = len(result.table)
    fig = Figure(figsize=(1.8 + 0.55 * n, 1.2 + 0.4 * n), layout="constrained")
    ax = fig.add_subplot()
    plot_rank_posterior(result, ax=ax)
    probs = result.probabilities.to_numpy()
    for a in range(probs.shape[0]):
        for b in range(probs.shape[1]):
            if probs[a, b] >= 0.005:
                ax.text(b, a, f"{probs[a, b]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if probs[a, b] > 0.6 else "black")
    ax.set_title("Posterior rank probabilities", fontsize=10)
    return fig


def prior_predictive_plot(prior) -> Figure:
    """Implied prior of win probabilities: consensus pairs and judge pairs.

    Parameters
    ----------
    prior : PriorPredictive
        From :func:`hja_bayes.bayes.prior_predictive`.

    Returns
    -------
    matplotlib.figure.Figure
        Histograms of the win probability of every item pair under the prior, for a
        consensus judge (left) and for each judge (right); the shares outside the
        ``bounds`` are written in the titles and the bounds drawn as dotted lines.
    """
    lo, hi = prior.shares["bounds"]
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, values, share, what in (
            (axes[0], prior.consensus, prior.shares["consensus_outside"], "consensus pairs"),
            (axes[1], prior.judge_pairs, prior.shares["judge_outside"], "judge pairs")):
        ax.hist(np.asarray(values).ravel(), bins=40, range=(0, 1), density=True, color="C0",
                alpha=0.8)
        for x in (lo, hi):
            ax.axvline(x, color="grey", ls=":", lw=1)
        ax.set_xlabel("prior win probability (ties 1/2)")
        ax.set_title(f"{what}: {share:.0%} outside [{lo:g}, {hi:g}]", fontsize=10)
    axes[0].set_ylabel("density")
    return fig
