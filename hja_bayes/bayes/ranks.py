"""The posterior distribution of every item's rank (1 = best)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..checks import check_level, index_of
from .convert import coordinate_names, posterior_draws

__all__ = ["RankPosterior", "consensus_name", "rank_posterior"]


def consensus_name(idata) -> str:
    """The posterior variable that holds the consensus on the fixed-effects fit's scale:
    ``mu_marginal`` with prompt effects (``mu`` is then the conditional, question-specific
    consensus, about 1.7x wider on MT-Bench; :mod:`hja_bayes.bayes.prompts`), else ``mu``."""
    return "mu_marginal" if "mu_marginal" in idata.posterior else "mu"


class RankPosterior(NamedTuple):
    """Posterior distribution of the items' ranks (1 = best).

    Attributes
    ----------
    table : DataFrame
        Per item, sorted by mean rank: ``item``, ``mean_rank``, ``median_rank``,
        ``lower``, ``upper`` (equal-tailed rank interval), ``p_best``, ``p_top3``.
    probabilities : DataFrame
        ``P(rank = m)``, items (rows, same order) by ranks 1..N (columns).
    """

    table: pd.DataFrame
    probabilities: pd.DataFrame


def rank_posterior(idata, level: float = 0.95, judge: str | None = None) -> RankPosterior:
    """Posterior distribution of every item's rank, by consensus score or one judge's scores.

    Parameters
    ----------
    idata : InferenceData
    level : float
        Probability of the equal-tailed rank intervals.
    judge : str, optional
        Rank by this judge's score row ``S_k`` instead of the consensus (``mu``, or
        ``mu_marginal`` with prompt effects: :func:`consensus_name`).

    Returns
    -------
    RankPosterior
    """
    level = check_level(level)
    items = coordinate_names(idata, "item")
    if judge is None:
        scores = posterior_draws(idata, consensus_name(idata))
    else:
        k = index_of(judge, coordinate_names(idata, "judge"), "judge")
        scores = posterior_draws(idata, "S")[:, k]
    N = len(items)
    ranks = np.argsort(np.argsort(-scores, axis=1, kind="stable"), axis=1) + 1  # (draws, N)
    probs = np.stack([(ranks == m).mean(axis=0) for m in range(1, N + 1)], axis=1)
    tail = (1 - level) / 2
    table = pd.DataFrame({
        "item": items, "mean_rank": ranks.mean(axis=0), "median_rank": np.median(ranks, axis=0),
        "lower": np.quantile(ranks, tail, axis=0, method="inverted_cdf").astype(int),
        "upper": np.quantile(ranks, 1 - tail, axis=0, method="inverted_cdf").astype(int),
        "p_best": probs[:, 0], "p_top3": probs[:, : min(3, N)].sum(axis=1),
    })
    order = np.argsort(table["mean_rank"].to_numpy(), kind="stable")
    table = table.iloc[order].reset_index(drop=True)
    probabilities = pd.DataFrame(probs[order], index=[items[i] for i in order],
                                 columns=list(range(1, N + 1)))
    return RankPosterior(table, probabilities)
