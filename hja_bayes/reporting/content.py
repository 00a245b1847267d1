"""What a report says: its tables, figures, notes, summary sentences and glossary.

:func:`build_report` gathers everything into a :class:`Report` without writing anything;
the renderers (:mod:`~hja_bayes.reporting.html`, :mod:`~hja_bayes.reporting.markdown`)
and the writer (:mod:`~hja_bayes.reporting.files`) only lay it out.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..inference import WaldInference
from .leaderboard import Scale, judge_table, leaderboard, pairwise_table, wald
from .plots import (
    forest_plot,
    judge_map,
    posterior_predictive_plot,
    rank_posterior_plot,
    residual_heatmap,
    win_probability_heatmap,
)

__all__ = ["BAYES_GLOSSARY", "FIGURE_CAPTIONS", "GLOSSARY", "Report", "build_report",
           "judges_sentence", "tiers_sentence"]

GLOSSARY = (
    ("Score", "consensus score μ_i, the mean of the judges' score rows; differences are log-odds "
              "for a judge of average sensitivity (Elo scale: 400/ln10 · μ + 1000)."),
    ("Lower / Upper", "Wald (delta-method) interval of the score."),
    ("Rank (UB)", "1 + the number of models whose whole interval lies above this model's "
                  "(the Chatbot Arena convention)."),
    ("Rank from / to", "the ranks compatible with the pairwise Wald intervals of the score "
                       "differences (not adjusted for multiplicity)."),
    ("P(better than next)", "Φ(d / se(d)) for the score difference d to the next model down."),
    ("Tier", "a model opens a new tier when it is significantly below the first model of the "
             "current tier; models in one tier cannot be told apart."),
    ("γ", "judge sensitivity: how strongly the judge's scores follow the consensus (mean 1; "
          "negative: reversed)."),
    ("β", "position bias: the judge's logit bonus for the answer shown first."),
    ("Leverage h / ρ", "size of the judge's structured disagreement ‖(UVᵀ)_k‖, absolute and "
                       "relative to its consensus part |γ_k| ‖μ‖."),
    ("High leverage", "high sensitivity and high leverage at once: a judge that moves the "
                      "consensus and pulls away from it."),
    ("Kendall τ", "agreement of the judge's own ranking with the consensus ranking."),
)

BAYES_GLOSSARY = (
    ("Posterior mean / Cred. lower / upper", "posterior mean and equal-tailed credible "
     "interval of the score, from the NUTS draws (same level as the Wald interval)."),
    ("Post. rank from / to, P(best)", "equal-tailed posterior interval of the model's rank and "
     "the posterior probability that it ranks first."),
    ("Post. P(better than next)", "share of posterior draws in which the model's score beats "
     "the next model's."),
)

FIGURE_CAPTIONS = {
    "forest": "Consensus scores with Wald intervals, best first; dotted lines separate tiers.",
    "judge_map": "Judges by sensitivity γ_k and leverage h_k; red: high sensitivity and high "
                 "leverage.",
    "residual": "Structured disagreement UVᵀ, judges and models ordered by biclustering: red, "
                "the judge rates the model above its consensus part; blue, below.",
    "win_probability": "Probability that the row model beats the column model for a judge of "
                       "average sensitivity without position bias.",
    "rank_posterior": "Posterior probability of every rank for every model.",
    "ppc": "Posterior predictive checks: each judge's win rate of each model (and of the "
           "first-shown answer) against its predictive interval, red when outside; "
           "calibration of predicted against observed win rates.",
}


class Report(NamedTuple):
    """Everything a report shows, before it is written anywhere.

    Attributes
    ----------
    title : str
    leaderboard, judges, pairwise : DataFrame
        The tables (see :func:`~hja_bayes.reporting.leaderboard`,
        :func:`~hja_bayes.reporting.judge_table`, :func:`~hja_bayes.reporting.pairwise_table`).
    rank_table : DataFrame or None
        Rank-selection criteria, when the rank was selected.
    figures : dict
        Name -> matplotlib Figure.
    intervals : DataFrame or None
        Wald against credible intervals (:func:`hja_bayes.compare_intervals`), with a
        posterior.
    notes : tuple of str
        Warnings for the reader (e.g. one orientation only, no convergence).
    data_summary, fit_summary : str
        Plain-text summaries of the data and the fit.
    level : float
    scale : str
    """

    title: str
    leaderboard: pd.DataFrame
    judges: pd.DataFrame
    pairwise: pd.DataFrame
    rank_table: pd.DataFrame | None
    figures: dict
    intervals: pd.DataFrame | None
    notes: tuple[str, ...]
    data_summary: str
    fit_summary: str
    level: float
    scale: str


def build_report(
    fit,
    idata=None,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    title: str | None = None,
    inference: WaldInference | None = None,
) -> Report:
    """Collect the tables, figures and notes of a report (nothing is written).

    Parameters
    ----------
    fit : HJAFit
    idata : arviz.InferenceData, optional
        Posterior draws of the same model (:func:`hja_bayes.sample_hja`): adds credible
        columns, the posterior rank and posterior predictive figures.
    level : float
        Level of every interval.
    scale : {"logit", "elo"}
        Scale of the score columns.
    title : str, optional
        Report title (default: "HJA leaderboard").
    inference : WaldInference, optional
        Reused instead of recomputing the Wald inference.

    Returns
    -------
    Report
    """
    inference = wald(fit) if inference is None else inference
    board = leaderboard(fit, idata, level=level, scale=scale, inference=inference)
    judges = judge_table(fit, idata, level=level, inference=inference)
    pairs = pairwise_table(fit, level, scale, inference=inference)
    figures = {
        "forest": forest_plot(fit, level=level, scale=scale, table=board),
        "judge_map": judge_map(fit, level, table=judges),
        "residual": residual_heatmap(fit),
        "win_probability": win_probability_heatmap(fit, level, table=pairwise_table(
            fit, level, inference=inference)),
    }
    intervals = None
    if idata is not None:
        from ..bayes import compare_intervals

        figures["rank_posterior"] = rank_posterior_plot(idata, level)
        figures["ppc"] = posterior_predictive_plot(idata, level)
        intervals = compare_intervals(fit, idata, level)
    notes = []
    if fit.data.one_orientation_only:
        notes.append("Every pair of models is shown in one orientation only, so position bias "
                     "and structured disagreement cannot be told apart in these data.")
    if not fit.data.order_known:
        notes.append("The presentation order was not kept (cells folded): no position bias.")
    if not fit.converged:
        notes.append(f"The fit did not converge in {fit.n_iter} iterations: estimates may be "
                     "inaccurate.")
    if np.any(fit.gamma <= 0):
        bad = [fit.judges[k] for k in np.flatnonzero(np.asarray(fit.gamma) <= 0)]
        notes.append("Judge(s) with non-positive sensitivity γ (their ranking runs against the "
                     "consensus): " + ", ".join(bad) + ".")
    return Report(
        title=title or "HJA leaderboard",
        leaderboard=board, judges=judges, pairwise=pairs, rank_table=fit.rank_table,
        figures=figures, intervals=intervals, notes=tuple(notes), data_summary=str(fit.data.summary()),
        fit_summary=fit.summary(), level=float(level), scale=scale,
    )


def tiers_sentence(board: pd.DataFrame) -> str:
    """"tier 1: a, b; tier 2: c" from a leaderboard."""
    parts = []
    for tier, group in board.groupby("tier", sort=True):
        parts.append(f"tier {int(tier)}: " + ", ".join(str(m) for m in group["model"]))
    return "; ".join(parts)


def judges_sentence(judges: pd.DataFrame) -> str:
    """Who follows the consensus most and least, who is flagged, who has the largest bias."""
    most = judges.loc[judges["gamma"].idxmax()]
    least = judges.loc[judges["gamma"].idxmin()]
    flagged = [str(j) for j in judges.loc[judges["high_leverage"].astype(bool), "judge"]]
    parts = [
        f"Most sensitive judge: {most['judge']} (γ = {most['gamma']:.2f}); least: "
        f"{least['judge']} (γ = {least['gamma']:.2f}).",
        "High sensitivity with high leverage: " + (", ".join(flagged) if flagged else "none") + ".",
    ]
    if "beta" in judges.columns:
        big = judges.loc[judges["beta"].abs().idxmax()]
        side = "first" if big["beta"] > 0 else "second"
        parts.append(f"Largest position bias: {big['judge']} (β = {big['beta']:.2f}, favours "
                     f"the answer shown {side}).")
    return " ".join(parts)
