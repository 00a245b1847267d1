"""Checks and summaries of a Bayesian HJA posterior.

* :func:`compare_intervals` — Wald against posterior intervals on the same quantities;
* posterior predictive checks: :func:`ppc_judge_win_rates`, :func:`ppc_pair_win_rates`,
  :func:`ppc_calibration`, with :func:`bayesian_p_value`, and a plot for each;
* rank choice by PSIS-LOO over cells next to BIC: :func:`rank_comparison`,
  :func:`compare_ranks`;
* posterior distribution of every item's rank: :func:`rank_posterior`.

Everything here reads an ``InferenceData`` made by :func:`~hja_bayes.sample_hja` (its
``constant_data`` group holds the cells), so it needs neither the data nor the sampler.
"""

from __future__ import annotations

import warnings
from typing import Mapping, NamedTuple, Sequence

import arviz as az
import numpy as np
import pandas as pd
from scipy import sparse

from ..comparisons import Comparisons
from ..errors import IdentifiabilityError

__all__ = [
    "compare_intervals",
    "bayesian_p_value",
    "ppc_judge_win_rates",
    "ppc_pair_win_rates",
    "ppc_calibration",
    "plot_ppc_win_rates",
    "plot_calibration",
    "plot_rank_posterior",
    "rank_comparison",
    "compare_ranks",
    "RankComparison",
    "RankPosterior",
    "rank_posterior",
]

FIRST_SHOWN = "(first shown)"


# ----------------------------------------------------------------------------- helpers
def _draws(idata, name: str) -> np.ndarray:
    """Posterior draws of ``name`` flattened over (chain, draw): shape (draws, ...)."""
    x = np.asarray(idata.posterior[name])
    return x.reshape((-1,) + x.shape[2:])


def _names(idata, dim: str) -> list[str]:
    return [str(v) for v in idata.posterior[dim].values]


def _cells(idata):
    c = idata.constant_data
    return (np.asarray(c["judge_of_cell"]), np.asarray(c["first"]), np.asarray(c["second"]),
            np.asarray(c["n"], dtype=float))


def _check_level(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return float(level)


def _summaries(draws: np.ndarray, level: float) -> dict[str, np.ndarray]:
    """Mean, sd, equal-tailed and HDI bounds of draws with shape (chain, draw, m)."""
    tail = (1 - level) / 2
    flat = draws.reshape(-1, draws.shape[-1])
    hdi = np.asarray(az.hdi(draws, hdi_prob=level))  # (m, 2)
    return {
        "post_mean": flat.mean(axis=0),
        "post_sd": flat.std(axis=0, ddof=1),
        "eti_lower": np.quantile(flat, tail, axis=0),
        "eti_upper": np.quantile(flat, 1 - tail, axis=0),
        "hdi_lower": hdi[:, 0],
        "hdi_upper": hdi[:, 1],
    }


# -------------------------------------------------------------------- interval comparison
def compare_intervals(fit, idata: az.InferenceData, level: float = 0.95) -> pd.DataFrame:
    """Wald intervals at the MAP beside the posterior's, quantity by quantity.

    Parameters
    ----------
    fit : HJAFit
        The MAP fit (its Wald intervals come from :func:`hja_bayes.wald_inference`).
    idata : InferenceData
        Posterior of the same model (:func:`~hja_bayes.sample_hja`), same data.
    level : float
        Coverage level of every interval.

    Returns
    -------
    DataFrame
        One row per quantity: ``quantity`` ("mu_diff" = mu_a - mu_b for every item pair
        a < b, "gamma", "beta" with position bias, "S_diff" = S_ka - S_kb for every judge and
        pair a < b), ``label``, ``wald_estimate``, ``wald_se``, ``wald_lower``,
        ``wald_upper``, ``post_mean``, ``post_sd``, ``eti_lower``, ``eti_upper``
        (equal-tailed), ``hdi_lower``, ``hdi_upper``, ``sd_ratio`` (posterior sd / Wald
        se), ``width_ratio`` (equal-tailed width / Wald width) and ``hdi_width_ratio``.

    Raises
    ------
    IdentifiabilityError
        When ``fit`` and ``idata`` disagree on rank, position bias, judges or items.
    """
    from ..inference import wald_inference

    level = _check_level(level)
    post = idata.posterior
    if (int(post.attrs["rank"]) != fit.rank
            or bool(post.attrs["position_bias"]) != fit.position_bias
            or _names(idata, "judge") != list(fit.judges)
            or _names(idata, "item") != list(fit.items)):
        raise IdentifiabilityError(
            "fit and posterior describe different models (rank, position bias, judges or items)")
    wald = wald_inference(fit.data, fit.S, fit.beta, fit.rank, position_bias=fit.position_bias)
    table = wald.intervals(level)
    K, N = len(fit.judges), len(fit.items)
    a, b = np.triu_indices(N, k=1)
    mu, gamma, S = (np.asarray(post[v]) for v in ("mu", "gamma", "S"))
    blocks = {"mu_diff": mu[..., a] - mu[..., b], "gamma": gamma}
    if fit.position_bias:
        blocks["beta"] = np.asarray(post["beta"])
    frames = []
    for quantity, draws in blocks.items():
        rows = table[table["quantity"] == quantity].reset_index(drop=True)
        frames.append(_side_by_side(quantity, rows["label"], rows["estimate"], rows["se"],
                                    rows["lower"], rows["upper"], draws, level))
    k = np.repeat(np.arange(K), len(a))
    i, j = np.tile(a, K), np.tile(b, K)
    iv = wald.contrast(lambda S_, beta_: S_[k, i] - S_[k, j], level)
    labels = [f"{fit.judges[x]}: {fit.items[y]} - {fit.items[z]}" for x, y, z in zip(k, i, j)]
    frames.append(_side_by_side("S_diff", labels, iv.estimate, iv.se, iv.lower, iv.upper,
                                S[..., k, i] - S[..., k, j], level))
    return pd.concat(frames, ignore_index=True)


def _side_by_side(quantity, labels, estimate, se, lower, upper, draws, level) -> pd.DataFrame:
    out = pd.DataFrame({"quantity": quantity, "label": list(labels),
                        "wald_estimate": np.asarray(estimate, float), "wald_se": np.asarray(se, float),
                        "wald_lower": np.asarray(lower, float), "wald_upper": np.asarray(upper, float)})
    for name, value in _summaries(draws, level).items():
        out[name] = value
    wald_width = out["wald_upper"] - out["wald_lower"]
    out["sd_ratio"] = out["post_sd"] / out["wald_se"]
    out["width_ratio"] = (out["eti_upper"] - out["eti_lower"]) / wald_width
    out["hdi_width_ratio"] = (out["hdi_upper"] - out["hdi_lower"]) / wald_width
    return out


# ---------------------------------------------------------------- predictive checks
def bayesian_p_value(observed, replicated) -> np.ndarray:
    """Posterior predictive p-value ``P(T_rep > T_obs) + P(T_rep = T_obs) / 2``.

    Parameters
    ----------
    observed : array (m,)
        Statistic on the observed data.
    replicated : array (draws, m)
        The same statistic on each replicated data set.

    Returns
    -------
    ndarray (m,)
        Values near 0 mean the data sit above what the model predicts, near 1 below; the
        half weight on ties (mid-p) keeps discrete statistics from piling up at 0 or 1.

    Examples
    --------
    >>> bayesian_p_value([1.0], [[0.0], [1.0], [2.0], [3.0]])
    array([0.625])
    """
    observed = np.asarray(observed, dtype=float)
    replicated = np.asarray(replicated, dtype=float)
    return (np.mean(replicated > observed, axis=0)
            + 0.5 * np.mean(replicated == observed, axis=0))


def _replicated(idata) -> np.ndarray:
    x = np.asarray(idata.posterior_predictive["wins"], dtype=float)
    return x.reshape(-1, x.shape[-1])


def _group_table(idata, groups: sparse.csr_matrix, offsets: np.ndarray, counts: np.ndarray,
                 level: float) -> dict[str, np.ndarray]:
    """Observed and replicated win rates of linear cell groups ``(G w + offset) / count``."""
    level = _check_level(level)
    obs = np.asarray(idata.observed_data["wins"], dtype=float)
    rep = _replicated(idata)
    obs_rate = (groups @ obs + offsets) / counts
    rep_rate = ((groups @ rep.T).T + offsets) / counts
    tail = (1 - level) / 2
    return {"n": counts, "observed": obs_rate, "predicted_mean": rep_rate.mean(axis=0),
            "predicted_lower": np.quantile(rep_rate, tail, axis=0),
            "predicted_upper": np.quantile(rep_rate, 1 - tail, axis=0),
            "p_value": bayesian_p_value(obs_rate, rep_rate)}


def ppc_judge_win_rates(idata: az.InferenceData, level: float = 0.95) -> pd.DataFrame:
    """Posterior predictive check of every judge's win rate of every item.

    The statistic for (judge k, item i) is the share of k's comparisons involving i that
    i won (ties 1/2 in the observed data; replicated data have no ties).  One more row per
    judge, item ``"(first shown)"``, checks the share won by the first-shown item (the
    position-bias statistic).

    Returns
    -------
    DataFrame
        ``judge``, ``item``, ``n``, ``observed``, ``predicted_mean``, ``predicted_lower``,
        ``predicted_upper`` (central ``level`` interval of the replicated statistic) and
        ``p_value`` (:func:`bayesian_p_value`).
    """
    judge, first, second, n = _cells(idata)
    judges, items = _names(idata, "judge"), _names(idata, "item")
    K, N, C = len(judges), len(items), len(n)
    cols = np.arange(C)
    # item rows: +w as first, -(w) + n as second
    rows = np.concatenate([judge * N + first, judge * N + second, K * N + judge])
    vals = np.concatenate([np.ones(C), -np.ones(C), np.ones(C)])
    G = sparse.csr_matrix((vals, (rows, np.tile(cols, 3))), shape=(K * N + K, C))
    offsets = np.bincount(judge * N + second, n, K * N + K)
    counts = (np.bincount(judge * N + first, n, K * N + K) + offsets
              + np.bincount(K * N + judge, n, K * N + K))
    keep = counts > 0
    stats = _group_table(idata, G[keep], offsets[keep], counts[keep], level)
    labels_j = [judges[g // N] if g < K * N else judges[g - K * N] for g in range(K * N + K)]
    labels_i = [items[g % N] if g < K * N else FIRST_SHOWN for g in range(K * N + K)]
    out = pd.DataFrame({"judge": np.asarray(labels_j)[keep], "item": np.asarray(labels_i)[keep]})
    for k, v in stats.items():
        out[k] = v
    return out


def _pair_groups(idata):
    judge, first, second, n = _cells(idata)
    N = len(_names(idata, "item"))
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    key = (judge * N + lo) * N + hi
    uniq, group = np.unique(key, return_inverse=True)
    sign = np.where(first == lo, 1.0, -1.0)  # wins of the lower-index item
    G = sparse.csr_matrix((sign, (group, np.arange(len(n)))), shape=(len(uniq), len(n)))
    offsets = np.bincount(group, np.where(first == lo, 0.0, n), len(uniq))
    counts = np.bincount(group, n, len(uniq))
    k, rest = np.divmod(uniq, N * N)
    a, b = np.divmod(rest, N)
    return G, offsets, counts, k, a, b, group


def ppc_pair_win_rates(idata: az.InferenceData, level: float = 0.95) -> pd.DataFrame:
    """Posterior predictive check of every (judge, pair) win rate, both orders pooled.

    The statistic for (judge k, items a, b) with a before b in the data's item order is
    the share of k's comparisons of a with b that a won.

    Returns
    -------
    DataFrame
        ``judge``, ``item_a``, ``item_b``, ``n``, ``observed``, ``predicted_mean``,
        ``predicted_lower``, ``predicted_upper``, ``p_value``.
    """
    G, offsets, counts, k, a, b, _ = _pair_groups(idata)
    judges, items = _names(idata, "judge"), _names(idata, "item")
    out = pd.DataFrame({"judge": [judges[x] for x in k], "item_a": [items[x] for x in a],
                        "item_b": [items[x] for x in b]})
    for key, v in _group_table(idata, G, offsets, counts, level).items():
        out[key] = v
    return out


def _cell_probabilities(idata) -> np.ndarray:
    """Posterior draws of the first-shown win probability per cell: (draws, cells)."""
    judge, first, second, _ = _cells(idata)
    S = _draws(idata, "S")
    eta = S[:, judge, first] - S[:, judge, second]
    if "beta" in idata.posterior:
        eta = eta + _draws(idata, "beta")[:, judge]
    return 1.0 / (1.0 + np.exp(-eta))


def ppc_calibration(idata: az.InferenceData, n_bins: int = 10, level: float = 0.95) -> pd.DataFrame:
    """Calibration of predicted against observed win rates over (judge, pair) groups.

    Each (judge, unordered pair) group gets its posterior-mean predicted win rate of the
    lower-index item (count-weighted over both presentation orders); groups are binned by
    it into ``n_bins`` equal-width bins on [0, 1].  Per bin, the count-weighted observed and
    predicted rates are compared with the distribution of the same statistic on replicated
    data.

    Returns
    -------
    DataFrame
        ``bin_lower``, ``bin_upper``, ``groups``, ``n``, ``predicted`` (posterior mean),
        ``observed``, ``predicted_lower``, ``predicted_upper`` (central ``level`` interval of
        the replicated rate), ``p_value``.  Empty bins are left out.
    """
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    G, offsets, counts, *_ = _pair_groups(idata)
    p = _cell_probabilities(idata)
    n = _cells(idata)[3]
    # expected wins of the lower-index item per group: G (n p) + offsets (sign handles order)
    expected = ((G @ (n * p).T).T + offsets) / counts  # (draws, groups)
    predicted = expected.mean(axis=0)
    which = np.minimum((predicted * n_bins).astype(int), n_bins - 1)
    present = np.unique(which)
    B = sparse.csr_matrix((np.ones(len(which)), (np.searchsorted(present, which),
                                                  np.arange(len(which)))),
                          shape=(len(present), len(which)))
    stats = _group_table(idata, B @ G, B @ offsets, B @ counts, level)
    return pd.DataFrame({
        "bin_lower": present / n_bins, "bin_upper": (present + 1) / n_bins,
        "groups": np.asarray(B.sum(axis=1)).ravel().astype(int), "n": stats["n"],
        "predicted": (B @ (predicted * counts)) / (B @ counts), "observed": stats["observed"],
        "predicted_lower": stats["predicted_lower"], "predicted_upper": stats["predicted_upper"],
        "p_value": stats["p_value"],
    })


def plot_ppc_win_rates(table: pd.DataFrame, ax=None, *, alpha: float = 0.05):
    """Observed against predicted win rates with predictive intervals.

    Works on :func:`ppc_judge_win_rates` and :func:`ppc_pair_win_rates` tables; points whose
    two-sided p-value is below ``alpha`` (``min(p, 1 - p) < alpha / 2``) are drawn in red.

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    pred, obs = table["predicted_mean"].to_numpy(), table["observed"].to_numpy()
    err = np.vstack([pred - table["predicted_lower"], table["predicted_upper"] - pred])
    extreme = np.minimum(table["p_value"], 1 - table["p_value"]).to_numpy() < alpha / 2
    for mask, colour, label in ((~extreme, "C0", "within"), (extreme, "C3", f"p < {alpha:g} (two-sided)")):
        if mask.any():
            ax.errorbar(pred[mask], obs[mask], xerr=err[:, mask], fmt="o", ms=3, color=colour,
                        alpha=0.7, elinewidth=0.8, label=label)
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
    ax.set_xlabel("predicted win rate (posterior predictive mean, interval)")
    ax.set_ylabel("observed win rate (ties 1/2)")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def plot_calibration(table: pd.DataFrame, ax=None):
    """Reliability diagram of :func:`ppc_calibration`: observed against predicted rate per
    bin, with the replicated-data band."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
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


# ------------------------------------------------------------------------- rank choice
def rank_comparison(idatas: Mapping[int, az.InferenceData]) -> pd.DataFrame:
    """PSIS-LOO over cells for posteriors of several ranks, next to the MAP's BIC.

    Leave-one-out here leaves out one *cell* (all comparisons of one judge, one ordered
    pair) at a time.  PSIS warnings (Pareto k above 0.7) are not raised but reported in
    ``max_pareto_k`` and ``n_bad_k``.

    Parameters
    ----------
    idatas : mapping rank -> InferenceData
        Posteriors from :func:`~hja_bayes.sample_hja` on the same data.

    Returns
    -------
    DataFrame
        Indexed by rank, sorted by ``elpd_loo`` (best first): ArviZ's ``az.compare`` columns
        (``elpd_loo``, ``p_loo``, ``elpd_diff``, ``weight``, ``se``, ``dse``, ...) plus
        ``bic``, ``map_nll``, ``max_pareto_k``, ``n_bad_k``, ``loo_rank`` and ``bic_rank``.
    """
    if not idatas:
        raise ValueError("no posteriors to compare")
    loos = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto-k notices: reported below
        for r, idata in idatas.items():
            loos[r] = az.loo(idata, pointwise=True)
        table = az.compare(loos, ic="loo") if len(loos) > 1 else None
    if table is None:
        r, loo = next(iter(loos.items()))
        table = pd.DataFrame({"elpd_loo": [loo.elpd_loo], "p_loo": [loo.p_loo],
                              "se": [loo.se]}, index=[r])
    table = table.drop(columns="rank", errors="ignore")  # az.compare's order: see loo_rank
    table.index = [int(r) for r in table.index]
    table.index.name = "rank"
    table["bic"] = [float(idatas[r].posterior.attrs["map_bic"]) for r in table.index]
    table["map_nll"] = [float(idatas[r].posterior.attrs["map_nll"]) for r in table.index]
    table["max_pareto_k"] = [float(np.max(loos[r].pareto_k)) for r in table.index]
    table["n_bad_k"] = [int(np.sum(np.asarray(loos[r].pareto_k) > 0.7)) for r in table.index]
    table["loo_rank"] = table["elpd_loo"].rank(ascending=False).astype(int)
    table["bic_rank"] = table["bic"].rank().astype(int)
    return table


class RankComparison(NamedTuple):
    """Result of :func:`compare_ranks`: the table and the posteriors behind it."""

    table: pd.DataFrame
    idatas: dict


def compare_ranks(data: Comparisons, ranks: Sequence[int] = (0, 1, 2), *,
                  position_bias: bool = False, num_warmup: int = 1000, num_samples: int = 1000,
                  num_chains: int = 2, seed: int = 0, progress_bar: bool = False,
                  **sample_kwargs) -> RankComparison:
    """Sample every candidate rank from its MAP and compare them by PSIS-LOO and BIC.

    Returns
    -------
    RankComparison
        ``table`` from :func:`rank_comparison`; ``idatas`` maps rank -> InferenceData.
    """
    from ..hja import fit_hja
    from .sample import sample_hja

    idatas = {}
    for r in ranks:
        fit = fit_hja(data, r, position_bias=position_bias)
        idatas[int(r)] = sample_hja(data, r, init=fit, num_warmup=num_warmup,
                                    num_samples=num_samples, num_chains=num_chains, seed=seed,
                                    progress_bar=progress_bar, **sample_kwargs)
    return RankComparison(rank_comparison(idatas), idatas)


# ----------------------------------------------------------------------- rank posterior
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


def rank_posterior(idata: az.InferenceData, level: float = 0.95, judge: str | None = None) -> RankPosterior:
    """Posterior distribution of every item's rank, by consensus score or one judge's scores.

    Parameters
    ----------
    idata : InferenceData
    level : float
        Probability of the equal-tailed rank intervals.
    judge : str, optional
        Rank by this judge's score row ``S_k`` instead of the consensus ``mu``.

    Returns
    -------
    RankPosterior
    """
    level = _check_level(level)
    items = _names(idata, "item")
    if judge is None:
        scores = _draws(idata, "mu")
    else:
        judges = _names(idata, "judge")
        if judge not in judges:
            raise IdentifiabilityError(f"unknown judge {judge!r}; judges are {judges}")
        scores = _draws(idata, "S")[:, judges.index(judge)]
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


def plot_rank_posterior(result: RankPosterior, ax=None):
    """Heat map of ``P(rank = m)`` per item (rows sorted by mean rank)."""
    import matplotlib.pyplot as plt

    probs = result.probabilities
    if ax is None:
        _, ax = plt.subplots(figsize=(1 + 0.45 * probs.shape[1], 1 + 0.35 * probs.shape[0]))
    im = ax.imshow(probs.to_numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(probs.shape[1]), [str(c) for c in probs.columns])
    ax.set_yticks(range(probs.shape[0]), list(probs.index))
    ax.set_xlabel("rank")
    ax.figure.colorbar(im, ax=ax, label="posterior probability")
    return ax
