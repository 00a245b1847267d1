"""The pairwise table: every ordered pair of models, score difference and win probability."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

from ..checks import check_level
from ..inference import WaldInference
from .leaderboard import score_intervals, table_meta
from .scales import Scale, check_scale, to_scale

__all__ = ["pairwise_table"]


def pairwise_table(
    fit,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    inference: WaldInference | None = None,
) -> pd.DataFrame:
    """Every ordered pair of models: score difference and consensus win probability.

    Parameters
    ----------
    fit : HJAFit or BTLFit
    level : float
        Level of the Wald intervals of the differences.
    scale : {"logit", "elo"}
        Scale of the difference columns (Elo differences carry no offset).
    inference : WaldInference, optional

    Returns
    -------
    DataFrame
        Columns ``model_a``, ``model_b`` (both in leaderboard order), ``difference``
        (``mu_a - mu_b``), ``lower``, ``upper`` (t quantiles with Satterthwaite degrees of
        freedom under the CR2 cluster-robust covariance), ``p_win`` (``expit(mu_a - mu_b)``: the
        probability that a judge of average sensitivity, without position bias, prefers a)
        with ``p_win_lower``, ``p_win_upper`` (the difference interval mapped through the
        logistic function), and ``significant`` (the interval excludes 0).
        ``attrs["meta"]`` says what the numbers are.
    """
    level = check_level(level)
    scale = check_scale(scale)
    sc = score_intervals(fit, inference)
    z = sc.critical(level, "difference")
    est = sc.difference
    lo, hi = est - z * sc.difference_se, est + z * sc.difference_se
    order = np.argsort(-sc.estimate, kind="stable")
    rows = [(sc.items[a], sc.items[b], est[a, b], lo[a, b], hi[a, b])
            for a in order for b in order if a != b]
    table = pd.DataFrame(rows, columns=["model_a", "model_b", "difference", "lower", "upper"])
    table["p_win"] = expit(table["difference"])
    table["p_win_lower"] = expit(table["lower"])
    table["p_win_upper"] = expit(table["upper"])
    table["significant"] = (table["lower"] > 0) | (table["upper"] < 0)
    for column in ("difference", "lower", "upper"):
        table[column] = to_scale(table[column], scale, difference=True)
    table.attrs.update(level=level, scale=scale,
                       meta=table_meta(fit, "pairwise", level, scale, inference=inference))
    return table
