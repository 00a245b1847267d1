"""Posterior predictive checks of a Bayesian HJA posterior.

Win rates per (judge, item) and per (judge, pair), and the calibration of predicted against
observed win rates, each with the predictive interval of the statistic on replicated data and
its Bayesian p-value.  Win rates are read in the three-outcome view of any scale (every
category on an item's side a win, the middle one half); tie rates and, for other scales,
each judge's share of every category have checks of their own.  Everything reads an ``InferenceData`` from
:func:`~hja_bayes.bayes.sample_hja` (cells in ``constant_data``, replicated wins in
``posterior_predictive``); predicted probabilities come from the likelihood seam.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse

from ..categories import collapse_counts
from ..checks import check_integer, check_level
from ..errors import ParameterError
from ..likelihood import probabilities
from .convert import coordinate_names, posterior_cells, posterior_outcome, posterior_units
from .predictive import posterior_aux, posterior_logits
from .recover import posterior_effects

__all__ = [
    "FIRST_SHOWN",
    "bayesian_p_value",
    "expected_wins",
    "ppc_category_rates",
    "ppc_calibration",
    "ppc_judge_win_rates",
    "ppc_pair_win_rates",
    "ppc_tie_rates",
]

#: The "item" label of the rows checking the share won by the first-shown answer.
FIRST_SHOWN = "(first shown)"


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


def _replicated(idata, variable: str = "wins") -> np.ndarray:
    x = np.asarray(idata.posterior_predictive[variable], dtype=float)
    return x.reshape(-1, x.shape[-1])


def _group_table(idata, groups: sparse.csr_matrix, offsets: np.ndarray, counts: np.ndarray,
                 level: float, variable: str = "wins") -> dict[str, np.ndarray]:
    """Observed and replicated rates of linear cell groups ``(G x + offset) / count`` of the
    per-cell counts ``variable`` (wins, or ties)."""
    level = check_level(level)
    obs = np.asarray(idata.observed_data[variable], dtype=float)
    rep = _replicated(idata, variable)
    obs_rate = (groups @ obs + offsets) / counts
    rep_rate = ((groups @ rep.T).T + offsets) / counts
    tail = (1 - level) / 2
    return {"n": counts, "observed": obs_rate, "predicted_mean": rep_rate.mean(axis=0),
            "predicted_lower": np.quantile(rep_rate, tail, axis=0),
            "predicted_upper": np.quantile(rep_rate, 1 - tail, axis=0),
            "p_value": bayesian_p_value(obs_rate, rep_rate)}


def ppc_judge_win_rates(idata, level: float = 0.95) -> pd.DataFrame:
    """Posterior predictive check of every judge's win rate of every item.

    The statistic for (judge k, item i) is the share of k's comparisons involving i that
    i won, a tie counting 1/2.  The replicated verdicts are drawn from the outcome model:
    with Davidson's ties or ordered verdicts they hold ties, with ``"half"`` (which has no
    tie probability) they are whole wins, binomial draws whose spread is somewhat wider
    than that of data with ties (per verdict p(1 - p) against p(1 - p) - t/4, t the tie
    share): there the p-values lean toward 1/2.  One more row per judge, item
    ``"(first shown)"``, checks the share won by the first-shown item (the position-bias
    statistic).

    Returns
    -------
    DataFrame
        ``judge``, ``item``, ``n``, ``observed``, ``predicted_mean``, ``predicted_lower``,
        ``predicted_upper`` (central ``level`` interval of the replicated statistic) and
        ``p_value`` (:func:`bayesian_p_value`).
    """
    cells = posterior_cells(idata)
    judge, first, second, n = cells.judge, cells.first, cells.second, cells.n
    judges, items = coordinate_names(idata, "judge"), coordinate_names(idata, "item")
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
    cells = posterior_cells(idata)
    judge, first, second, n = cells.judge, cells.first, cells.second, cells.n
    N = len(coordinate_names(idata, "item"))
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    key = (judge * N + lo) * N + hi
    uniq, group = np.unique(key, return_inverse=True)
    sign = np.where(first == lo, 1.0, -1.0)  # wins of the lower-index item
    G = sparse.csr_matrix((sign, (group, np.arange(len(n)))), shape=(len(uniq), len(n)))
    offsets = np.bincount(group, np.where(first == lo, 0.0, n), len(uniq))
    counts = np.bincount(group, n, len(uniq))
    k, rest = np.divmod(uniq, N * N)
    a, b = np.divmod(rest, N)
    return G, offsets, counts, k, a, b


def ppc_pair_win_rates(idata, level: float = 0.95) -> pd.DataFrame:
    """Posterior predictive check of every (judge, pair) win rate, both orders pooled.

    The statistic for (judge k, items a, b) with a before b in the data's item order is
    the share of k's comparisons of a with b that a won.

    Returns
    -------
    DataFrame
        ``judge``, ``item_a``, ``item_b``, ``n``, ``observed``, ``predicted_mean``,
        ``predicted_lower``, ``predicted_upper``, ``p_value``.
    """
    G, offsets, counts, k, a, b = _pair_groups(idata)
    judges, items = coordinate_names(idata, "judge"), coordinate_names(idata, "item")
    out = pd.DataFrame({"judge": [judges[x] for x in k], "item_a": [items[x] for x in a],
                        "item_b": [items[x] for x in b]})
    for key, v in _group_table(idata, G, offsets, counts, level).items():
        out[key] = v
    return out


def expected_wins(idata) -> np.ndarray:
    """Posterior draws of each cell's expected wins of the first-shown item (ties 1/2).

    ``sum_u n_u (p_first + p_tie / 2)`` over the cell's likelihood units (the cell itself,
    or its (question, cell) entries), the probabilities from the outcome model (collapsed
    to three outcomes) at every draw's logits.

    Returns
    -------
    ndarray (draws, cells)
    """
    units = posterior_units(idata)
    alpha = None if units.prompt is None else posterior_effects(idata)
    p = probabilities(posterior_outcome(idata), posterior_logits(idata, units, alpha=alpha),
                      posterior_aux(idata, units))
    three = collapse_counts(np.asarray(p, dtype=float))
    per_unit = np.asarray(units.cells.n) * (three[..., 0] + 0.5 * three[..., 1])
    n_cells = len(posterior_cells(idata).judge)
    to_cells = sparse.csr_matrix((np.ones(len(units.cell)), (np.arange(len(units.cell)),
                                                              units.cell)),
                                 shape=(len(units.cell), n_cells))
    return np.asarray((to_cells.T @ per_unit.T).T)


def ppc_calibration(idata, n_bins: int = 10, level: float = 0.95) -> pd.DataFrame:
    """Calibration of predicted against observed win rates over (judge, pair) groups.

    Each (judge, unordered pair) group gets its posterior-mean predicted win rate of the
    lower-index item (count-weighted over both presentation orders, ties 1/2); groups are
    binned by it into ``n_bins`` equal-width bins on [0, 1].  Per bin, the count-weighted
    observed and predicted rates are compared with the distribution of the same statistic
    on replicated data.

    Returns
    -------
    DataFrame
        ``bin_lower``, ``bin_upper``, ``groups``, ``n``, ``predicted`` (posterior mean),
        ``observed``, ``predicted_lower``, ``predicted_upper`` (central ``level`` interval of
        the replicated rate), ``p_value``.  Empty bins are left out.
    """
    n_bins = check_integer(n_bins, "n_bins", 1)
    G, offsets, counts, *_ = _pair_groups(idata)
    # posterior mean of the cells' expected wins: stored when the posterior was assembled
    # (older posteriors: computed again)
    stored = [g["expected_wins"] for g in (getattr(idata, "constant_data", None),
                                           idata.posterior_predictive)
              if g is not None and "expected_wins" in g]
    if stored:
        wins = np.asarray(stored[0], dtype=float)
    else:
        wins = expected_wins(idata).mean(axis=0)
    # the lower-index item's per group: G w + offsets (the sign handles the order)
    predicted = (G @ wins + offsets) / counts
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


def ppc_tie_rates(idata, level: float = 0.95) -> pd.DataFrame:
    """Posterior predictive check of every judge's tie rate (the middle category).

    For posteriors of outcome models that predict ties (Davidson, an ordinal scale of odd
    length).

    Returns
    -------
    DataFrame
        ``judge``, ``n``, ``observed`` (share of the judge's comparisons that were ties),
        ``predicted_mean``, ``predicted_lower``, ``predicted_upper``, ``p_value``.

    Raises
    ------
    ParameterError
        When the posterior has no replicated ties (an outcome model without ties).
    """
    if "ties" not in idata.posterior_predictive:
        raise ParameterError("the posterior has no replicated ties: sample it with "
                             "outcome='davidson' (or an ordinal scale)")
    cells = posterior_cells(idata)
    judges = coordinate_names(idata, "judge")
    K, C = len(judges), len(cells.n)
    G = sparse.csr_matrix((np.ones(C), (cells.judge, np.arange(C))), shape=(K, C))
    counts = np.bincount(cells.judge, cells.n, K)
    keep = counts > 0
    stats = _group_table(idata, G[keep], np.zeros(int(keep.sum())), counts[keep], level, "ties")
    out = pd.DataFrame({"judge": np.asarray(judges)[keep]})
    for k, v in stats.items():
        out[k] = v
    return out


def ppc_category_rates(idata, level: float = 0.95) -> pd.DataFrame:
    """Posterior predictive check of every judge's share of each verdict category.

    For posteriors on a scale other than (first, tie, second) (e.g. ``outcome="ordinal"``
    on a five-level scale), whose posterior predictive holds each judge's replicated
    category counts.

    Returns
    -------
    DataFrame
        ``judge``, ``category``, ``n`` (the judge's verdicts), ``observed`` (share in the
        category), ``predicted_mean``, ``predicted_lower``, ``predicted_upper`` (central
        ``level`` interval of the replicated share), ``p_value``.

    Raises
    ------
    ParameterError
        When the posterior has no replicated category counts (three-outcome models: see
        :func:`ppc_judge_win_rates` and :func:`ppc_tie_rates`).
    """
    level = check_level(level)
    if "category_counts" not in idata.posterior_predictive:
        raise ParameterError("the posterior has no replicated category counts: they are kept "
                             "for scales other than (first, tie, second), e.g. outcome='ordinal'")
    obs = np.asarray(idata.observed_data["category_counts"], dtype=float)  # (K, C)
    rep = np.asarray(idata.posterior_predictive["category_counts"], dtype=float)
    rep = rep.reshape((-1,) + obs.shape)
    n = obs.sum(axis=1)
    keep = n > 0
    judges = np.asarray(coordinate_names(idata, "judge"))
    categories = [str(c) for c in idata.posterior_predictive["category"].values]
    C = obs.shape[1]
    obs_rate = obs[keep] / n[keep, None]
    rep_rate = rep[:, keep] / n[keep, None]
    tail = (1 - level) / 2
    flat = (lambda x: x.reshape(x.shape[:-2] + (-1,)))
    return pd.DataFrame({
        "judge": np.repeat(judges[keep], C), "category": np.tile(categories, int(keep.sum())),
        "n": np.repeat(n[keep], C), "observed": obs_rate.ravel(),
        "predicted_mean": rep_rate.mean(axis=0).ravel(),
        "predicted_lower": np.quantile(rep_rate, tail, axis=0).ravel(),
        "predicted_upper": np.quantile(rep_rate, 1 - tail, axis=0).ravel(),
        "p_value": bayesian_p_value(obs_rate.ravel(), flat(rep_rate)),
    })
