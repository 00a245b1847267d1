"""Leaderboard, judge and pairwise tables of a fitted HJA model.

These functions arrange results computed elsewhere -- the fit (:mod:`hja_bayes.fit`), its
Wald inference (:mod:`hja_bayes.inference`), the judge diagnostics
(:mod:`hja_bayes.diagnostics`) and, when given, posterior draws -- into DataFrames.  The
only arithmetic done here is bookkeeping on those results: counting which intervals lie
above which (Rank(UB), rank intervals, tiers), a change of scale, and the normal
probability of a Wald z-statistic.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import kendalltau, norm

from ..diagnostics import judge_leverage
from ..errors import HJAError
from ..inference import WaldInference

__all__ = [
    "ELO_BASE",
    "ELO_FACTOR",
    "judge_table",
    "leaderboard",
    "pairwise_table",
    "to_scale",
    "wald",
]

#: Elo points per logit: ``400 / ln 10`` (a 400-point gap means 10:1 odds).
ELO_FACTOR = 400.0 / math.log(10.0)
#: Elo score given to a consensus score of zero (the panel's average model).
ELO_BASE = 1000.0

Scale = Literal["logit", "elo"]

def wald(fit) -> WaldInference:
    """Wald inference of a fitted model (the fit computes it once and keeps it).

    Parameters
    ----------
    fit : HJAFit

    Returns
    -------
    WaldInference
        ``fit.wald``: :func:`hja_bayes.inference.wald_inference` at the fit's scores, rank
        and position biases, on the fit's own data.
    """
    return fit.wald


def to_scale(x, scale: Scale = "logit", *, difference: bool = False) -> np.ndarray:
    """Express consensus scores (or differences of them) on the logit or the Elo scale.

    Parameters
    ----------
    x : array
        Scores on the logit scale (the model's own).
    scale : {"logit", "elo"}
        ``"elo"`` maps a score to ``400 / ln 10 * x + 1000``.
    difference : bool
        True when ``x`` holds differences of scores: the offset is then left out.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> to_scale([0.0, 1.0], "elo").round(1).tolist()
    [1000.0, 1173.7]
    """
    x = np.asarray(x, dtype=float)
    if scale == "logit":
        return x
    if scale == "elo":
        return ELO_FACTOR * x + (0.0 if difference else ELO_BASE)
    raise HJAError(f"scale must be 'logit' or 'elo', got {scale!r}")


def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise HJAError(f"level must lie strictly between 0 and 1, got {level!r}")
    return level


def _posterior_draws(idata, name: str, labels, dim: str) -> np.ndarray:
    """Draws of ``name`` as (draws, m), checked against the fit's names."""
    posterior = getattr(idata, "posterior", None)
    if posterior is None or name not in posterior:
        raise HJAError(f"idata has no posterior draws of {name!r}")
    names = [str(v) for v in posterior[dim].values]
    if names != [str(x) for x in labels]:
        raise HJAError(f"the posterior's {dim}s {names} are not the fit's {list(labels)}: "
                       "pass the posterior of this fit")
    x = np.asarray(posterior[name])
    return x.reshape((-1,) + x.shape[2:])


def _credible(draws: np.ndarray, level: float):
    """Posterior mean and equal-tailed interval of every column of (draws, m)."""
    tail = (1.0 - level) / 2.0
    return (draws.mean(axis=0), np.quantile(draws, tail, axis=0),
            np.quantile(draws, 1.0 - tail, axis=0))


def _difference_matrices(inference: WaldInference, level: float):
    """N x N matrices of mu_a - mu_b: estimate, se, lower, upper (antisymmetric layout)."""
    N = len(inference.items)
    pairs, iv = inference.mu_differences(level)
    est, se, lo, hi = (np.zeros((N, N)) for _ in range(4))
    for (a, b), e, s, lower, upper in zip(pairs, iv.estimate, iv.se, iv.lower, iv.upper):
        est[a, b], se[a, b], lo[a, b], hi[a, b] = e, s, lower, upper
        est[b, a], se[b, a], lo[b, a], hi[b, a] = -e, s, -upper, -lower
    return est, se, lo, hi


def leaderboard(
    fit,
    idata=None,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    inference: WaldInference | None = None,
) -> pd.DataFrame:
    """The consensus ranking with its uncertainty, one row per model, best first.

    Parameters
    ----------
    fit : HJAFit
        A fitted HJA model.
    idata : arviz.InferenceData, optional
        Posterior draws of the same model (:func:`hja_bayes.sample_hja`): adds the
        Bayesian columns.
    level : float
        Level of every interval (default 0.95).
    scale : {"logit", "elo"}
        Scale of the score columns: the model's logit scale, or Elo points
        ``400 / ln 10 * mu + 1000``.
    inference : WaldInference, optional
        Wald inference to use instead of computing it from ``fit``.

    Returns
    -------
    DataFrame
        Columns:

        - ``model``; ``score`` (consensus score mu_i), ``score_lower``, ``score_upper``
          (Wald interval at ``level``);
        - ``rank``: position by score (1 = best);
        - ``rank_ub``: Rank(UB), the Chatbot Arena convention
          ``1 + #{j : score_lower_j > score_upper_i}``, the number of models whose whole
          interval lies above this model's, plus one;
        - ``rank_lower``, ``rank_upper``: the ranks compatible with the pairwise Wald
          intervals of the differences ``mu_i - mu_j`` (best: 1 + the models significantly
          better; worst: N - the models significantly worse);
        - ``p_better_next``: probability that the model is better than the next one down,
          ``Phi(d / se(d))`` for their score difference d (the large-sample, flat-prior
          reading of the Wald statistic; NaN on the last row);
        - ``tier``: models that cannot be told apart share a tier.  Going down the ranking,
          a model opens a new tier when the difference between the current tier's first
          model and it is significant (its interval excludes 0);
        - ``comparisons``: comparisons the model took part in.

        With ``idata``, also: ``post_mean``, ``cred_lower``, ``cred_upper`` (posterior mean
        and equal-tailed credible interval of mu_i, on ``scale``); ``post_rank_lower``,
        ``post_rank_upper`` and ``p_best`` (the posterior rank interval and the probability
        of ranking first, :func:`hja_bayes.bayes.rank_posterior`); ``post_p_better_next``
        (the share of draws in which the model beats the next one down).

        ``attrs`` records ``level``, ``scale``, ``rank`` and ``position_bias``.

    Notes
    -----
    Pairwise intervals are not adjusted for multiplicity: each is at ``level``.

    Examples
    --------
    >>> import hja_bayes as hb
    >>> data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300)
    >>> board = leaderboard(hb.fit_hja(data, rank=0))  # doctest: +SKIP
    >>> list(board.columns)[:4]  # doctest: +SKIP
    ['model', 'score', 'score_lower', 'score_upper']
    """
    level = _check_level(level)
    to_scale(0.0, scale)  # validate early
    inference = wald(fit) if inference is None else inference
    mu = inference.mu(level)
    N = len(fit.items)
    est, se, lo, hi = _difference_matrices(inference, level)
    order = np.argsort(-np.asarray(fit.mu), kind="stable")

    rank_ub = np.array([1 + int(np.sum(mu.lower > mu.upper[i])) for i in range(N)])
    better = lo > 0  # better[a, b]: a significantly above b
    rank_lower = 1 + better.sum(axis=0)
    rank_upper = N - better.sum(axis=1)
    p_next = np.full(N, np.nan)
    for pos in range(N - 1):
        a, b = order[pos], order[pos + 1]
        p_next[a] = norm.cdf(est[a, b] / se[a, b]) if se[a, b] > 0 else np.nan
    tier = np.zeros(N, dtype=np.int64)
    current, leader = 1, order[0]
    for i in order:
        if better[leader, i]:
            current, leader = current + 1, i
        tier[i] = current

    table = pd.DataFrame({
        "model": list(fit.items),
        "score": to_scale(mu.estimate, scale),
        "score_lower": to_scale(mu.lower, scale),
        "score_upper": to_scale(mu.upper, scale),
        "rank": np.argsort(order) + 1,
        "rank_ub": rank_ub,
        "rank_lower": rank_lower,
        "rank_upper": rank_upper,
        "p_better_next": p_next,
        "tier": tier,
        "comparisons": _counts(fit.data.comparisons_per_item()),
    })
    if idata is not None:
        from ..bayes import rank_posterior

        draws = _posterior_draws(idata, "mu", fit.items, "item")
        mean, lower, upper = _credible(draws, level)
        table["post_mean"] = to_scale(mean, scale)
        table["cred_lower"] = to_scale(lower, scale)
        table["cred_upper"] = to_scale(upper, scale)
        ranks = rank_posterior(idata, level).table.set_index("item")
        table["post_rank_lower"] = [int(ranks.loc[m, "lower"]) for m in fit.items]
        table["post_rank_upper"] = [int(ranks.loc[m, "upper"]) for m in fit.items]
        table["p_best"] = [float(ranks.loc[m, "p_best"]) for m in fit.items]
        beats = np.full(N, np.nan)
        for pos in range(N - 1):
            a, b = order[pos], order[pos + 1]
            beats[a] = float(np.mean(draws[:, a] > draws[:, b]))
        table["post_p_better_next"] = beats
    table = table.iloc[order].reset_index(drop=True)
    table.attrs.update(level=level, scale=scale, rank=int(fit.rank),
                       position_bias=bool(fit.position_bias), bayes=idata is not None)
    return table


def judge_table(
    fit,
    idata=None,
    level: float = 0.95,
    *,
    inference: WaldInference | None = None,
) -> pd.DataFrame:
    """One row per judge: sensitivity, position bias, leverage and agreement with the consensus.

    Parameters
    ----------
    fit : HJAFit
    idata : arviz.InferenceData, optional
        Posterior draws of the same model: adds ``gamma_cred_lower``, ``gamma_cred_upper``
        (and ``beta_cred_lower``, ``beta_cred_upper``), equal-tailed credible intervals.
    level : float
        Level of the intervals.
    inference : WaldInference, optional
        Wald inference to use instead of computing it from ``fit``.

    Returns
    -------
    DataFrame
        Columns ``judge``; ``gamma``, ``gamma_lower``, ``gamma_upper`` (Wald);
        ``beta``, ``beta_lower``, ``beta_upper`` when position bias was estimated;
        ``leverage`` (h_k = |(U V^T)_k|), ``rho`` (relative leverage) and ``high_leverage``
        (high gamma and high h, :func:`hja_bayes.diagnostics.judge_leverage`);
        ``comparisons``; ``rank_corr``, Kendall's tau-b between the judge's own scores
        ``S_k`` and the consensus mu (1: same order; negative: reversed).
    """
    level = _check_level(level)
    inference = wald(fit) if inference is None else inference
    g = inference.gamma(level)
    lev = judge_leverage(fit.gamma, fit.mu, fit.U, fit.V)
    columns = {
        "judge": list(fit.judges),
        "gamma": g.estimate,
        "gamma_lower": g.lower,
        "gamma_upper": g.upper,
    }
    if fit.position_bias:
        b = inference.position_biases(level)
        columns.update(beta=b.estimate, beta_lower=b.lower, beta_upper=b.upper)
    corr = []
    for row in np.asarray(fit.S):
        if np.ptp(row) == 0 or np.ptp(fit.mu) == 0:
            corr.append(np.nan)
        else:
            corr.append(float(kendalltau(row, fit.mu).statistic))
    columns.update(
        leverage=lev.h, rho=lev.rho, high_leverage=lev.high,
        comparisons=_counts(fit.data.comparisons_per_judge()), rank_corr=np.asarray(corr),
    )
    if idata is not None:
        _, lo, hi = _credible(_posterior_draws(idata, "gamma", fit.judges, "judge"), level)
        columns.update(gamma_cred_lower=lo, gamma_cred_upper=hi)
        if fit.position_bias:
            _, lo, hi = _credible(_posterior_draws(idata, "beta", fit.judges, "judge"), level)
            columns.update(beta_cred_lower=lo, beta_cred_upper=hi)
    table = pd.DataFrame(columns)
    table.attrs.update(level=level, rank=int(fit.rank), position_bias=bool(fit.position_bias),
                       bayes=idata is not None)
    return table


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
    fit : HJAFit
    level : float
        Level of the Wald intervals of the differences.
    scale : {"logit", "elo"}
        Scale of the difference columns (Elo differences carry no offset).
    inference : WaldInference, optional

    Returns
    -------
    DataFrame
        Columns ``model_a``, ``model_b`` (both in leaderboard order), ``difference``
        (``mu_a - mu_b``), ``lower``, ``upper``, ``p_win`` (``expit(mu_a - mu_b)``: the
        probability that a judge of average sensitivity, without position bias, prefers a)
        with ``p_win_lower``, ``p_win_upper`` (the difference interval mapped through the
        logistic function), and ``significant`` (the interval excludes 0).
    """
    level = _check_level(level)
    to_scale(0.0, scale)
    inference = wald(fit) if inference is None else inference
    est, se, lo, hi = _difference_matrices(inference, level)
    order = np.argsort(-np.asarray(fit.mu), kind="stable")
    rows = []
    for a in order:
        for b in order:
            if a == b:
                continue
            rows.append((fit.items[a], fit.items[b], est[a, b], lo[a, b], hi[a, b]))
    table = pd.DataFrame(rows, columns=["model_a", "model_b", "difference", "lower", "upper"])
    table["p_win"] = expit(table["difference"])
    table["p_win_lower"] = expit(table["lower"])
    table["p_win_upper"] = expit(table["upper"])
    table["significant"] = (table["lower"] > 0) | (table["upper"] < 0)
    for column in ("difference", "lower", "upper"):
        table[column] = to_scale(table[column], scale, difference=True)
    table.attrs.update(level=level, scale=scale)
    return table


def _counts(x: np.ndarray) -> np.ndarray:
    """Comparison counts as integers when they are whole numbers (they may be fractional
    only when built from fractional upstream counts)."""
    return x.astype(np.int64) if np.all(x == np.round(x)) else x
