"""The pairwise table: every ordered pair of models, score difference and win probability."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

from ..threads import one_blas_thread
from ..checks import check_level
from ..inference import WaldInference
from .fitted import is_hja
from .leaderboard import score_intervals, table_meta
from .scales import Scale, check_scale, to_scale

__all__ = ["pairwise_table", "win_probability_meaning"]

#: What ``expit(mu_a - mu_b)`` is under each outcome model, for a judge of average
#: sensitivity (gamma = 1) without position bias or other terms.
WIN_PROBABILITY = {
    "half": "the probability that {a} beats {b}, a tie counting 1/2 ({a}'s expected score)",
    "davidson": "the probability that {a} beats {b} in a verdict that is not a tie (ties are "
                "an outcome of their own, more or less frequent by judge)",
    "ordinal": "the probability that its latent preference (the logistic variable its "
               "ordered verdict categories cut) favours {a}; with a neutral middle category a "
               "verdict for {a} is less likely than that",
}


def win_probability_meaning(fit, a: str = "model a", b: str = "model b") -> str:
    """What the pairwise table's ``p_win``, ``expit(mu_a - mu_b)``, is under the fit's
    outcome model, for a judge of average sensitivity without position bias (and, with
    those terms, comparing answers of the same style, neither model its own); ``a`` and
    ``b`` name the two models in the sentence."""
    hja = is_hja(fit)
    outcome = str(fit.outcome) if hja else "half"  # a pooled BTL fit counts ties 1/2
    meaning = WIN_PROBABILITY.get(outcome, WIN_PROBABILITY["half"]).format(a=a, b=b)
    terms = {t.name for t in fit.terms} if hja else set()
    judge = "for a judge of average sensitivity without position bias" + "".join(
        [", comparing answers of the same style" if "style" in terms else "",
         ", neither model its own" if "self" in terms else ""])
    return f"{judge}, {meaning}"


@one_blas_thread
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
        freedom under the CR2 cluster-robust covariance), ``p_win`` (``expit(mu_a - mu_b)``: for a
        judge of average sensitivity, without position bias, the probability that a beats b
        with ties counted 1/2, that a beats b in a verdict that is not a tie (Davidson), or
        that the judge's latent preference favours a (ordered verdicts):
        :func:`win_probability_meaning`) with ``p_win_lower``, ``p_win_upper`` (the
        difference interval mapped through the logistic function), and ``significant`` (the
        interval excludes 0).
        ``attrs["meta"]`` says what the numbers are (its ``p_win``: what the win probability
        is under the fit's outcome model).
    """
    level = check_level(level)
    scale = check_scale(scale)
    sc = score_intervals(fit, inference)
    z = sc.critical(level, "difference")
    est = sc.difference
    lo, hi = est - z * sc.difference_se, est + z * sc.difference_se
    order = np.argsort(-sc.estimate, kind="stable")
    first, second = np.repeat(order, len(order)), np.tile(order, len(order))
    keep = first != second  # every ordered pair, both in leaderboard order
    a, b = first[keep], second[keep]
    items = np.asarray(sc.items, dtype=object)
    table = pd.DataFrame({"model_a": items[a], "model_b": items[b], "difference": est[a, b],
                          "lower": lo[a, b], "upper": hi[a, b]})
    table["p_win"] = expit(table["difference"])
    table["p_win_lower"] = expit(table["lower"])
    table["p_win_upper"] = expit(table["upper"])
    table["significant"] = (table["lower"] > 0) | (table["upper"] < 0)
    for column in ("difference", "lower", "upper"):
        table[column] = to_scale(table[column], scale, difference=True)
    table.attrs.update(level=level, scale=scale,
                       meta=table_meta(fit, "pairwise", level, scale, inference=inference,
                                       p_win=win_probability_meaning(fit)))
    return table
