"""PSIS leave-one-out over single comparisons, and the choice of rank by it.

Leaving out one *verdict* (not one cell of many verdicts) is what PSIS-LOO can estimate
reliably: a cell with dozens of comparisons moves the posterior too much when left out
(Pareto k up to 1.45 on MT-Bench).  A verdict's log-likelihood depends only on its cell and
its outcome, so all verdicts of one cell with one outcome have the same draws of the
log-likelihood and the same PSIS result.  :func:`psis_loo` therefore runs PSIS once per
(cell, outcome) present in the data (with prompt effects, per (question, cell, outcome):
verdicts on one question share its answer effects) and weights by the number of verdicts: the result is
exactly ``az.loo`` over the per-comparison ``log_likelihood`` group, with memory bounded by
``draws x (a chunk of cells)`` however many comparisons there are.
"""

from __future__ import annotations

import warnings
from typing import Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ..comparisons import Comparisons
from ..errors import ParameterError
from ..likelihood import outcome_model
from .convert import posterior_units
from .predictive import outcome_log_likelihood, posterior_aux, posterior_logits

__all__ = ["LooResult", "RankComparison", "compare_ranks", "psis_loo", "rank_comparison",
           "PARETO_K_LIMIT"]

#: Pareto k above this marks a comparison whose PSIS estimate is unreliable.
PARETO_K_LIMIT = 0.7
#: Draws x cells computed at once.
_BLOCK = 4_000_000


class LooResult(NamedTuple):
    """PSIS-LOO over single comparisons.

    Attributes
    ----------
    elpd_loo, se, p_loo : float
        Expected log pointwise predictive density, its standard error and the effective
        number of parameters (as ``az.loo``).
    n_comparisons : float
        Number of comparisons (the pointwise units).
    pareto_k : ndarray (points,)
        Pareto k of every distinct (cell, outcome).
    counts : ndarray (points,)
        Comparisons sharing each distinct point.
    elpd_i : ndarray (points,)
        Leave-one-out log predictive density of one comparison at each distinct point.
    share_bad_k : float
        Share of comparisons with Pareto k above :data:`PARETO_K_LIMIT`.
    max_pareto_k : float
    cell : ndarray (points,)
        Unit of each distinct point (its cell, or its (question, cell) entry with prompt
        effects); ``outcome`` (0 first wins, 1 tie, 2 second wins).
    outcome : ndarray (points,)
    """

    elpd_loo: float
    se: float
    p_loo: float
    n_comparisons: float
    pareto_k: np.ndarray
    counts: np.ndarray
    elpd_i: np.ndarray
    share_bad_k: float
    max_pareto_k: float
    cell: np.ndarray
    outcome: np.ndarray


def _relative_efficiency(idata) -> float:
    """``az.loo``'s default: mean ESS ("mean" method) over all posterior entries / draws."""
    import arviz as az

    post = idata.posterior
    n = post.sizes["chain"] * post.sizes["draw"]
    if post.sizes["chain"] == 1:
        return 1.0
    ess = az.ess(post, method="mean")
    return float(np.hstack([ess[v].values.ravel() for v in ess.data_vars]).mean() / n)


def psis_loo(idata, *, reff: float | None = None) -> LooResult:
    """PSIS leave-one-out cross-validation over single comparisons.

    Parameters
    ----------
    idata : InferenceData
        From :func:`~hja_bayes.bayes.sample_hja`.
    reff : float, optional
        Relative efficiency of the draws (default: as ``az.loo``).

    Returns
    -------
    LooResult
        Equal to ``az.loo(idata)`` on the per-comparison ``log_likelihood`` group (when it
        was stored), computed without it.
    """
    import arviz as az

    units = posterior_units(idata)
    cells = units.cells
    counts = np.stack([cells.first_wins, cells.ties, cells.second_wins], axis=-1)
    outcome = outcome_model(str(idata.posterior.attrs.get("outcome", "half")))
    post = idata.posterior
    draws = post.sizes["chain"] * post.sizes["draw"]
    reff = _relative_efficiency(idata) if reff is None else float(reff)
    chunk = max(1, _BLOCK // max(draws, 1))
    n_cells = counts.shape[0]
    k_all, elpd_all, lpd_all, w_all, cell_all, out_all = [], [], [], [], [], []
    for start in range(0, n_cells, chunk):
        stop = min(start + chunk, n_cells)
        take = np.arange(start, start + chunk) if n_cells > chunk else np.arange(n_cells)
        take = np.minimum(take, n_cells - 1)  # pad the last chunk: one shape, one compilation
        ll = outcome_log_likelihood(posterior_logits(idata, units, take), outcome,
                                    posterior_aux(idata, units, take))
        ll = ll[:, : stop - start]
        present = counts[start:stop] > 0
        c_idx, o_idx = np.nonzero(present)
        points = ll[:, c_idx, o_idx].T  # (points, draws)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ArviZ's notices on k; reported below
            lw, k = az.psislw(-points, reff)
        elpd_all.append(logsumexp(lw + points, axis=1))
        lpd_all.append(logsumexp(points, axis=1) - np.log(draws))
        k_all.append(np.asarray(k))
        w_all.append(counts[start:stop][c_idx, o_idx])
        cell_all.append(c_idx + start)
        out_all.append(o_idx)
    elpd_i, lpd_i, k = (np.concatenate(x) for x in (elpd_all, lpd_all, k_all))
    w = np.concatenate(w_all).astype(float)
    n = w.sum()
    elpd = float(w @ elpd_i)
    var = float(w @ (elpd_i - elpd / n) ** 2 / n)
    bad = k > PARETO_K_LIMIT
    return LooResult(elpd, float(np.sqrt(n * var)), float(w @ (lpd_i - elpd_i)), float(n), k, w,
                     elpd_i, float(w[bad].sum() / n), float(k.max(initial=-np.inf)),
                     np.concatenate(cell_all), np.concatenate(out_all))


def rank_comparison(idatas: Mapping[int, object]) -> pd.DataFrame:
    """PSIS-LOO over single comparisons for posteriors of several ranks, next to the MAP's BIC.

    Parameters
    ----------
    idatas : mapping rank -> InferenceData
        Posteriors from :func:`~hja_bayes.sample_hja` on the same data.

    Returns
    -------
    DataFrame
        Indexed by rank, sorted by ``elpd_loo`` (best first): ``elpd_loo``, ``p_loo``,
        ``se``, ``elpd_diff`` and ``dse`` (difference to the best rank and its standard
        error, from the paired pointwise differences), ``n_comparisons``,
        ``max_pareto_k``, ``share_bad_k`` and ``n_bad_k`` (comparisons with Pareto k above
        0.7), ``bic``, ``map_nll``, ``loo_rank`` and ``bic_rank``.
    """
    if not idatas:
        raise ParameterError("no posteriors to compare")
    loos = {int(r): psis_loo(idata) for r, idata in idatas.items()}
    best = max(loos, key=lambda r: loos[r].elpd_loo)
    rows = []
    for r, loo in loos.items():
        ref = loos[best]
        if loo.counts.shape != ref.counts.shape or not np.array_equal(loo.counts, ref.counts):
            raise ParameterError("the posteriors were not sampled from the same data")
        diff = ref.elpd_i - loo.elpd_i
        n = loo.n_comparisons
        mean = float(loo.counts @ diff) / n
        dse = float(np.sqrt(n * (loo.counts @ (diff - mean) ** 2) / n))
        rows.append({"rank": r, "elpd_loo": loo.elpd_loo, "p_loo": loo.p_loo, "se": loo.se,
                     "elpd_diff": ref.elpd_loo - loo.elpd_loo, "dse": dse,
                     "n_comparisons": n, "max_pareto_k": loo.max_pareto_k,
                     "share_bad_k": loo.share_bad_k,
                     "n_bad_k": int(loo.counts[loo.pareto_k > PARETO_K_LIMIT].sum()),
                     "bic": float(idatas[r].posterior.attrs["map_bic"]),
                     "map_nll": float(idatas[r].posterior.attrs["map_nll"])})
    table = pd.DataFrame(rows).set_index("rank").sort_values("elpd_loo", ascending=False)
    table["loo_rank"] = table["elpd_loo"].rank(ascending=False, method="min").astype(int)
    table["bic_rank"] = table["bic"].rank(method="min").astype(int)
    return table


class RankComparison(NamedTuple):
    """Result of :func:`compare_ranks`: the table and the posteriors behind it."""

    table: pd.DataFrame
    idatas: dict


def compare_ranks(data: Comparisons, ranks: Sequence[int] = (0, 1, 2), *,
                  position_bias: bool = False, num_warmup: int = 500, num_samples: int = 1000,
                  num_chains: int = 4, seed: int = 0, progress_bar: bool = False,
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
