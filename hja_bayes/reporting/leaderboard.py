"""The leaderboard: one row per model, best first, with its uncertainty.

:func:`leaderboard` arranges results computed elsewhere -- the scores of a fit (an HJA fit's
consensus mu with its Wald inference, :mod:`hja_bayes.inference`, or a pooled
Bradley-Terry fit's scores with their covariance) and, when given, posterior draws -- into a
DataFrame.  The only arithmetic done here is bookkeeping on those results: counting which
intervals lie above which (Rank(UB), rank intervals, tiers), a change of scale, and the
normal probability of a Wald z-statistic.

Every table carries ``attrs["meta"]`` (:func:`table_meta`): what its intervals are (level,
scale, covariance type, tie model, rank, package version), written beside the rows in the
report's JSON files.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
import pandas as pd
from scipy.special import ndtri

from ..threads import one_blas_thread
from ..bayes.compare import check_posterior
from ..checks import check_choice, check_level, index_of
from ..errors import DataWarning, HJAWarning, ParameterError, warn
from ..graphs import unbounded_items
from ..inference import WaldInference
from ..inference.intervals import quantile
from ..inference.ranking import neighbour_probabilities, rank_intervals
from .fitted import check_fit, cov_type, is_hja, wald
from .scales import ELO_BASE, ELO_FACTOR, Scale, table_scale, to_scale

__all__ = ["ELO_BASE", "ELO_FACTOR", "ScoreIntervals", "leaderboard", "score_intervals",
           "table_meta", "to_scale"]

Style = Literal["default", "arena"]


def table_meta(fit, table: str, level: float, scale: str | None = None, *,
               inference: WaldInference | None = None, **extra) -> dict:
    """What a table's numbers are: written as ``"meta"`` beside its rows in JSON.

    Keys: ``table``, ``model`` ("hja" or "btl"), ``level``, ``scale``, ``interval``
    ("wald"), ``cov_type`` (the information behind the intervals), ``outcome`` (the outcome
    model: "half", a tie counts 1/2 to each side, as for every pooled BTL fit; "davidson";
    "ordinal"), ``terms`` (the linear-predictor terms controlled for: "position", "style",
    "self"), ``rank`` and ``position_bias`` (HJA), ``n_judges``, ``n_models``,
    ``hja_bayes_version``; with a cluster-robust covariance also ``small_sample`` ("CR2":
    t quantiles with Satterthwaite degrees of freedom; "CR1"), ``cluster_column``,
    ``n_clusters``, ``effective_clusters`` and ``df``; and whatever ``extra`` adds.
    ``inference`` (the Wald inference behind the table) overrides the fit's default
    covariance.
    """
    from ..version import __version__

    hja = is_hja(fit)
    if inference is not None and is_hja(fit):
        inference = wald(fit, inference)
    kind = cov_type(fit) if inference is None else inference.cov_type
    meta = {
        "table": table,
        "model": "hja" if hja else "btl",
        "level": float(level),
        "scale": scale,
        "interval": "wald",
        "cov_type": kind,
        "outcome": str(fit.outcome) if hja else "half",
        "terms": [t.name for t in fit.terms] if hja else [],
        "rank": int(fit.rank) if hja else None,
        "position_bias": bool(fit.position_bias) if hja else False,
        "n_judges": len(fit.judges) if hja else None,
        "n_models": len(fit.items),
        "hja_bayes_version": __version__,
    }
    if kind == "cluster":
        meta.update(inference.clustering if inference is not None else (fit.clustering or {}))
    meta.update(extra)
    return meta


def _rank_change(sc, other) -> np.ndarray:
    """Each model's rank in ``other`` minus its rank by the scores ``sc`` (same models)."""
    check_fit(other)
    if set(other.items) != set(sc.items):
        raise ParameterError("the uncontrolled fit must rank the same models")
    scores = np.asarray(other.mu if is_hja(other) else other.scores, dtype=float)
    other_rank = dict(zip(other.items, np.argsort(np.argsort(-scores, kind="stable")) + 1))
    rank = np.argsort(np.argsort(-sc.estimate, kind="stable")) + 1
    return np.array([other_rank[m] for m in sc.items]) - rank


class ScoreIntervals(NamedTuple):
    """Scores of a fit with their Wald standard errors, and those of all differences.

    Attributes
    ----------
    items : tuple of str
    estimate, se : ndarray (N,)
        Scores (logit scale, centred) and standard errors.
    difference, difference_se : ndarray (N, N)
        ``estimate[a] - estimate[b]`` and its standard error (0 on the diagonal).
    comparisons : ndarray (N,)
        Comparisons each model took part in (NaN when the fit does not say).
    covariance : ndarray (N, N)
        Covariance of the scores.
    df, difference_df : ndarray (N,), (N, N)
        Degrees of freedom of the t quantiles of the scores and of their differences
        (Satterthwaite's under the CR2 cluster-robust covariance; inf: normal quantiles).
    joint_refusal : str or None
        Why no joint statement about all the scores can be made (a cluster-robust covariance
        from fewer clusters than models: see
        :meth:`~hja_bayes.inference.WaldInference.joint_refusal`); None when it can.
    """

    items: tuple[str, ...]
    estimate: np.ndarray
    se: np.ndarray
    difference: np.ndarray
    difference_se: np.ndarray
    comparisons: np.ndarray
    covariance: np.ndarray
    df: np.ndarray | None = None
    difference_df: np.ndarray | None = None
    joint_refusal: str | None = None

    def critical(self, level: float, which: str = "score") -> np.ndarray:
        """The two-sided critical values at ``level``: of the scores (N,) or of the
        differences (N, N)."""
        df = self.df if which == "score" else self.difference_df
        if df is None:
            z = float(ndtri(0.5 + level / 2))
            return np.full(np.shape(self.estimate if which == "score" else self.difference), z)
        return quantile(level, df)

    def joint_df(self) -> float:
        """The smallest degrees of freedom of the differences (inf when none is finite)."""
        return np.inf if self.difference_df is None else float(np.min(self.difference_df))


def score_intervals(fit, inference: WaldInference | None = None) -> ScoreIntervals:
    """The consensus scores of an HJA fit (or a pooled BTL fit's scores) with their se.

    Parameters
    ----------
    fit : HJAFit or BTLFit
    inference : WaldInference, optional
        For an HJA fit, reused instead of ``fit.wald``.

    Returns
    -------
    ScoreIntervals
    """
    check_fit(fit)
    N = len(fit.items)
    df = difference_df = refusal = None
    if is_hja(fit):
        inference = wald(fit, inference)
        est, C = inference.mu_covariance(joint=False)
        refusal = inference.joint_refusal(N - 1, f"the scores of {N} models")
        comparisons = counts(fit.data.comparisons_per_item())
        if inference.small_sample == "CR2":
            df, difference_df = inference.mu_degrees_of_freedom()
    else:
        est, C = np.asarray(fit.scores, dtype=float), np.asarray(fit.cov, dtype=float)
        per_item = getattr(fit, "comparisons", None)
        comparisons = np.full(N, np.nan) if per_item is None else counts(np.asarray(per_item))
    se = np.sqrt(np.clip(np.diag(C), 0.0, None))
    dse = np.sqrt(np.clip(np.diag(C)[:, None] + np.diag(C)[None, :] - 2 * C, 0.0, None))
    np.fill_diagonal(dse, 0.0)
    difference = est[:, None] - est[None, :]
    return ScoreIntervals(tuple(fit.items), np.asarray(est, float), np.asarray(se, float),
                          difference, dse, comparisons, np.asarray(C, float), df,
                          difference_df, refusal)


@one_blas_thread
def leaderboard(
    fit,
    idata=None,
    level: float = 0.95,
    scale: Scale | None = None,
    *,
    style: Style = "default",
    baseline: tuple[str, float] | None = None,
    inference: WaldInference | None = None,
    uncontrolled=None,
) -> pd.DataFrame:
    """The consensus ranking with its uncertainty, one row per model, best first.

    Parameters
    ----------
    fit : HJAFit or BTLFit
        A fitted HJA model, or a pooled Bradley-Terry fit (:func:`hja_bayes.fit_pooled_btl`).
    idata : arviz.InferenceData, optional
        Posterior draws of the same HJA model (:func:`hja_bayes.sample_hja`): adds the
        Bayesian columns.
    level : float
        Level of every interval (default 0.95).
    scale : {"logit", "elo"}, optional
        Scale of the score columns: the model's logit scale (the default), or Elo points
        ``400 / ln 10 * mu + 1000`` (the only scale of ``style="arena"``).
    style : {"default", "arena"}
        ``"arena"``: the columns of FastChat's and arena-rank's leaderboards, on the Elo
        scale: ``model``, ``rating``, ``rating_lower``, ``rating_upper``, ``variance`` (of
        the rating, Elo points squared), ``rank_ub``, ``num_battles``.
    baseline : (str, float), optional
        Pin one model's score: ``("gpt-4", 1200)`` shifts every score so that gpt-4's is
        1200 on ``scale`` (FastChat pins one model's Elo).  The pinned model's interval then
        has width 0 and every other interval is that of its difference to the baseline;
        ranks, rank intervals and tiers do not depend on the pin, Rank(UB) does (it counts
        the intervals shown, which are then differences to the pinned model).
    inference : WaldInference, optional
        Wald inference to use instead of the fit's.
    uncontrolled : HJAFit or BTLFit, optional
        The same models fitted without the bias terms (``fit.uncontrolled()``): adds
        ``rank_change``, the model's rank there minus its rank here (positive: it ranks
        higher once style and self-preference are controlled for; Chatbot Arena's
        "rank delta").

    Returns
    -------
    DataFrame
        Columns (default style):

        - ``model``; ``score`` (consensus score mu_i), ``score_lower``, ``score_upper``
          (Wald interval at ``level``; t quantiles, as ``p_better_next``'s, under CR2);
        - ``rank``: position by score (1 = best);
        - ``rank_ub``: Rank(UB), the Chatbot Arena convention
          ``1 + #{j : score_lower_j > score_upper_i}``, the number of models whose whole
          interval lies above this model's, plus one;
        - ``rank_lower``, ``rank_upper``: joint rank intervals: all N of them cover the true
          ranks at once with probability ``level`` (simultaneous intervals of every
          difference ``mu_i - mu_j``, :func:`hja_bayes.inference.ranking.rank_intervals`);
        - ``p_better_next``: ``Phi(d / se(d))`` (t's cdf) for the difference d to the next model
          down.  The pair is chosen by the estimates, so it is >= 0.5 by construction and
          overstates the confidence in that order (a plug-in summary; NaN on the last row);
        - ``tier``: going down the ranking, a model joins the current tier when it is not
          significantly different (at the joint level) from any model already in it, and
          opens a new tier otherwise: members of a tier are pairwise indistinguishable; the
          cut into consecutive tiers is a convention;
        - ``rank_lower``, ``rank_upper``, ``tier``: empty (``<NA>``, with a DataWarning)
          when a cluster-robust covariance has fewer prompts than models (no joint statement
          then: ``attrs["meta"]["joint_refusal"]``);
        - ``comparisons``: comparisons the model took part in;
        - ``unbounded``: the model has no finite maximum-likelihood score (it won, or lost,
          every comparison, alone or with a group of models:
          :func:`~hja_bayes.graphs.unbounded_items`), so the fit's ridge sets its score
          and its intervals say nothing (``<NA>`` for a pooled BTL fit, which does not
          keep its data).  The differences among the other models stand.

        With ``idata``, also: ``post_mean``, ``cred_lower``, ``cred_upper`` (posterior mean
        and equal-tailed credible interval of mu_i, on ``scale``); ``post_rank_lower``,
        ``post_rank_upper`` and ``p_best`` (each model's own central ``level`` interval of
        its rank over the draws, marginal where ``rank_lower``/``rank_upper`` are joint, and
        the probability of ranking first, :func:`hja_bayes.bayes.rank_posterior`);
        ``post_p_better_next``
        (the share of draws in which the model beats the next one down).  A probability of
        0 or 1 estimated from n draws means "below 1/n" or "above 1 - 1/n".

        ``attrs["meta"]`` says what the numbers are (:func:`table_meta`); ``attrs`` also
        records ``level``, ``scale``, ``rank`` and ``position_bias``.

    Raises
    ------
    ParameterError
        For a level outside (0, 1) (strings included), an unknown scale or style, the
        logit scale asked of the arena style, a baseline model that is not in the fit, or
        data instead of a fit.

    Notes
    -----
    The score intervals are each at ``level``; the rank intervals and tiers are joint.

    Examples
    --------
    >>> import hja_bayes as hb
    >>> data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300)
    >>> board = leaderboard(hb.fit_hja(data, rank=0))  # doctest: +SKIP
    >>> list(board.columns)[:4]  # doctest: +SKIP
    ['model', 'score', 'score_lower', 'score_upper']
    """
    check_fit(fit)
    level = check_level(level)
    style = check_choice(style, "style", ("default", "arena"))
    scale = table_scale(scale, style)
    if idata is not None:
        check_posterior(idata, fit)
    sc = score_intervals(fit, inference)
    N = len(sc.items)
    z = sc.critical(level)
    est, se, Dse = sc.estimate, sc.se, sc.difference_se
    order = np.argsort(-est, kind="stable")
    lower, upper = est - z * se, est + z * se
    critical_value = None
    if sc.joint_refusal is None:
        joint = rank_intervals(est, sc.covariance, level,
                               df=np.inf if sc.difference_df is None else sc.difference_df)
        rank_lower, rank_upper, tier = joint.lower, joint.upper, joint.tier
        critical_value = joint.critical_value
    else:  # too few prompts for a joint statement: each score's own interval still stands
        rank_lower = rank_upper = tier = pd.array([pd.NA] * N, dtype="Int64")
        if style == "default":
            warn(f"{sc.joint_refusal}: the joint rank intervals (rank_lower, rank_upper) "
                 "and tiers are left empty; the score intervals, Rank(UB) and p_better_next, "
                 "each about one quantity, stand. More prompts give them back", DataWarning)
    p_next = neighbour_probabilities(est, sc.covariance, sc.difference_df)

    shown, shown_lower, shown_upper = (to_scale(x, scale) for x in (est, lower, upper))
    shown_se = to_scale(se, scale, difference=True)
    pinned = None
    if baseline is not None:
        pinned, value = _baseline(baseline, sc.items)
        if scale == "logit" and abs(value) > 100:  # 1200 logits: Elo points meant
            warn(f"the baseline pins {sc.items[pinned]!r} at {value:g} on the logit scale, "
                 "where scores differ by a few units: Elo points? (scale='elo'; --scale elo)",
                 HJAWarning)
        shift = float(value) - shown[pinned]
        shown_se = to_scale(Dse[:, pinned], scale, difference=True)
        shown = shown + shift
        zp = sc.critical(level, "difference")[:, pinned]
        shown_lower, shown_upper = shown - zp * shown_se, shown + zp * shown_se

    # Arena's Rank(UB), of the intervals shown (a pinned baseline's are of differences to it)
    rank_ub = np.array([1 + int(np.sum(shown_lower > shown_upper[i])) for i in range(N)])
    if style == "arena":
        table = pd.DataFrame({
            "model": list(sc.items), "rating": shown, "rating_lower": shown_lower,
            "rating_upper": shown_upper, "variance": shown_se ** 2, "rank_ub": rank_ub,
            "num_battles": sc.comparisons,
        })
    else:
        table = pd.DataFrame({
            "model": list(sc.items), "score": shown, "score_lower": shown_lower,
            "score_upper": shown_upper, "rank": np.argsort(order) + 1, "rank_ub": rank_ub,
            "rank_lower": rank_lower, "rank_upper": rank_upper, "p_better_next": p_next,
            "tier": tier, "comparisons": sc.comparisons,
            "unbounded": pd.array(unbounded_items(fit.data) if is_hja(fit) else [pd.NA] * N,
                                  dtype="boolean"),
        })
    if uncontrolled is not None:
        table.insert(list(table.columns).index("rank_ub"), "rank_change",
                     _rank_change(sc, uncontrolled))
    n_draws = None
    if idata is not None:
        n_draws = _add_posterior_columns(table, fit, idata, level, scale, order,
                                         None if pinned is None else (pinned, float(value)))
    table = table.iloc[order].reset_index(drop=True)
    extra = {"style": style, "n_draws": n_draws}
    if baseline is not None:
        extra["baseline"] = {"model": sc.items[pinned], "score": float(baseline[1])}
    table.attrs.update(
        level=level, scale=scale, rank=int(fit.rank) if is_hja(fit) else None,
        position_bias=bool(getattr(fit, "position_bias", False)), bayes=idata is not None,
        n_draws=n_draws, meta=table_meta(fit, "leaderboard", level, scale,
                                         inference=inference if is_hja(fit) else None,
                                         critical_value=critical_value,
                                         joint_df=sc.joint_df(),
                                         joint_refusal=sc.joint_refusal, **extra))
    return table


def _baseline(baseline, items) -> tuple[int, float]:
    try:
        model, value = baseline
        value = float(value)
    except (TypeError, ValueError):
        value = float("nan")
    if not np.isfinite(value):  # a NaN score had made every score NaN
        raise ParameterError(
            f"baseline must be (model, score), e.g. ('gpt-4', 1200), got {baseline!r}")
    return index_of(model, items, "model"), value


def posterior_draws(idata, name: str, labels, dim: str) -> np.ndarray:
    """Draws of ``name`` as (draws, m), checked against the fit's names."""
    posterior = getattr(idata, "posterior", None)
    if posterior is None or name not in posterior:
        raise ParameterError(f"idata has no posterior draws of {name!r}")
    names = [str(v) for v in posterior[dim].values]
    if names != [str(x) for x in labels]:
        raise ParameterError(f"the posterior's {dim}s {names} are not the fit's {list(labels)}: "
                             "pass the posterior of this fit")
    x = np.asarray(posterior[name])
    return x.reshape((-1,) + x.shape[2:])


def credible(draws: np.ndarray, level: float):
    """Posterior mean and equal-tailed interval of every column of (draws, m)."""
    tail = (1.0 - level) / 2.0
    return (draws.mean(axis=0), np.quantile(draws, tail, axis=0),
            np.quantile(draws, 1.0 - tail, axis=0))


def _add_posterior_columns(table, fit, idata, level, scale, order, pinned=None) -> int:
    """Credible interval, posterior rank and P(best) columns; returns the number of draws.
    ``pinned`` (index, score): each draw's difference to that model, as the Wald columns."""
    from ..bayes import rank_posterior
    from ..bayes.ranks import consensus_name

    # with prompt effects: the population-averaged consensus, the Wald intervals' scale
    name = consensus_name(idata)
    draws = posterior_draws(idata, name, fit.items, "item")
    table.attrs["posterior_consensus"] = name
    if pinned is None:
        shown = [to_scale(v, scale) for v in credible(draws, level)]
    else:
        shown = [to_scale(v, scale, difference=True) + pinned[1]
                 for v in credible(draws - draws[:, [pinned[0]]], level)]
    table["post_mean"], table["cred_lower"], table["cred_upper"] = shown
    ranks = rank_posterior(idata, level).table.set_index("item")
    table["post_rank_lower"] = [int(ranks.loc[m, "lower"]) for m in fit.items]
    table["post_rank_upper"] = [int(ranks.loc[m, "upper"]) for m in fit.items]
    table["p_best"] = [float(ranks.loc[m, "p_best"]) for m in fit.items]
    beats = np.full(len(fit.items), np.nan)
    beats[order[:-1]] = np.mean(draws[:, order[:-1]] > draws[:, order[1:]], axis=0)
    table["post_p_better_next"] = beats
    return int(draws.shape[0])


def counts(x: np.ndarray) -> np.ndarray:
    """Comparison counts as integers when they are whole numbers (they may be fractional
    only when built from fractional upstream counts)."""
    x = np.asarray(x, dtype=float)
    return x.astype(np.int64) if np.all(x == np.round(x)) else x
