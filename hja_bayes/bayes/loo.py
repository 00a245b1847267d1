"""PSIS leave-one-out over single comparisons, and the choice of rank by it.

Leaving out one *verdict* (not one cell of many verdicts) is what PSIS-LOO can estimate
reliably: a cell with dozens of comparisons moves the posterior too much when left out
(Pareto k up to 1.45 on MT-Bench).  A verdict's log-likelihood depends only on its cell and
its outcome, so all verdicts of one cell with one outcome have the same draws of the
log-likelihood and the same PSIS result.  :func:`psis_loo` therefore runs PSIS once per
(unit, category) present in the data (per (question, cell, category) when the units are
entries: verdicts on one question share its answer effects and style) and weights by the
number of verdicts: the result is exactly ``az.loo`` over the per-comparison
``log_likelihood`` group, with memory bounded by ``draws x (a chunk of cells)`` however many
comparisons there are.

With prompt effects a verdict also informs the two answer effects it shows, and plain PSIS
over the joint draws can strain there (on MT-Bench rank 1, 1.8% of verdicts had Pareto k
above 0.7).  With sampled effects those points are recomputed by integrated importance
sampling: the two answer effects are integrated out of the importance weights, draw by draw,
against their exact conditional posterior.  Checked against an exact refit without the
verdict (``tests/test_bayes_prompts.py``).  With integrated effects a verdict of a prompt of
a few units (:data:`EXACT_UNITS`) is left out exactly, no effect drawn: its density given
the globals and the other verdicts is the ratio of its prompt's integrals with and without
it, and PSIS runs over the globals' draws; larger prompts' verdicts as with sampled effects.
Both in :mod:`~hja_bayes.bayes.prompt_loo`.
``psis_loo(..., integrate=False)`` gives plain PSIS over the (drawn) effects.
"""

from __future__ import annotations

import warnings
from typing import Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ..checks import check_positive
from ..threads import one_blas_thread
from ..comparisons import Comparisons
from ..errors import ParameterError
from .convert import import_arviz, posterior_outcome, posterior_units
from .predictive import outcome_log_likelihood, posterior_aux, posterior_logits
from .prompt_loo import _BLOCK, _integrated_points, left_out_layout, left_out_log_densities

__all__ = ["EXACT_UNITS", "LooResult", "PARETO_K_LIMIT", "RankComparison", "compare_ranks",
           "pareto_k_limit", "psis_loo", "rank_comparison"]

#: Pareto k above this marks a comparison whose PSIS estimate is unreliable (from 2,154
#: draws on; with fewer, :func:`pareto_k_limit`).
PARETO_K_LIMIT = 0.7


def pareto_k_limit(draws: int) -> float:
    """The Pareto k above which a PSIS estimate from ``draws`` draws is unreliable:
    ``min(1 - 1 / log10(draws), 0.7)`` (Vehtari et al.'s rule, ArviZ's too).

    >>> round(pareto_k_limit(400), 3), pareto_k_limit(4000)
    (0.616, 0.7)
    """
    return float(min(1.0 - 1.0 / np.log10(draws), PARETO_K_LIMIT))

#: With integrated prompt effects, the verdicts of prompts of at most this many units are left
#: out of their prompt's integral exactly (each such point costs one integral over the
#: prompt's units, so a prompt's points cost about the square of its units); larger prompts'
#: by PSIS over drawn effects, as with sampled effects.  Chatbot Arena's prompts have 1-4
#: units; MT-Bench's about 120 (there the exact layout held 1.2 million units).
EXACT_UNITS = 16


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
        Pareto k of every distinct (unit, category).
    counts : ndarray (points,)
        Comparisons sharing each distinct point.
    elpd_i : ndarray (points,)
        Leave-one-out log predictive density of one comparison at each distinct point.
    share_bad_k : float
        Share of comparisons with Pareto k above ``k_limit``.
    max_pareto_k : float
    cell : ndarray (points,)
        Unit of each distinct point (its cell, or its (question, cell) entry with prompt
        effects); ``outcome``: its category (index into the outcome model's categories:
        0 first wins, 1 tie, 2 second wins for three outcomes).
    outcome : ndarray (points,)
    integrated : ndarray of bool (points,)
        Points whose answer effects were integrated out: those recomputed by integrated
        importance sampling (plain Pareto k above ``k_limit``), and with
        integrated prompt effects every point of a prompt of at most :data:`EXACT_UNITS`
        units (left out of its prompt's integral); their ``pareto_k`` is that estimate's.
    k_limit : float
        The Pareto k above which an estimate counts as unreliable at this number of draws
        (:func:`pareto_k_limit`: 0.7 from 2,154 draws on, 0.616 at 400).
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
    integrated: np.ndarray
    k_limit: float = PARETO_K_LIMIT


def _relative_efficiency(idata) -> float:
    """``az.loo``'s default: mean ESS ("mean" method) over all posterior entries / draws;
    with integrated prompt effects over the sampler's draws only, not the answer effects
    drawn afterwards from their conditionals (stored or not: the same value either way)."""
    az = import_arviz()

    post = idata.posterior
    n = post.sizes["chain"] * post.sizes["draw"]
    if post.sizes["chain"] == 1:
        return 1.0
    if post.attrs.get("prompt_method") == "integrated" and "alpha" in post:
        post = post.drop_vars("alpha")
    ess = az.ess(post, method="mean")
    return float(np.hstack([ess[v].values.ravel() for v in ess.data_vars]).mean() / n)


@one_blas_thread
def psis_loo(idata, *, reff: float | None = None, integrate: bool = True) -> LooResult:
    """PSIS leave-one-out cross-validation over single comparisons.

    Parameters
    ----------
    idata : InferenceData
        From :func:`~hja_bayes.bayes.sample_hja`.
    reff : float, optional
        Relative efficiency of the draws, finite and > 0 (default: as ``az.loo``, the mean
        ESS per draw over the posterior's entries; with integrated prompt effects the
        answer effects drawn afterwards are left out of that mean, whether stored or not).
    integrate : bool
        With prompt effects, leave the answer effects' part out exactly where it can be
        (``LooResult.integrated`` marks those points; their k and LOO density are those of
        the integrated estimate).  Sampled effects: every point whose plain Pareto k is above
        :func:`pareto_k_limit` is recomputed with its two answer effects integrated out of
        the importance weights (:mod:`~hja_bayes.bayes.prompt_loo`).  Integrated effects: on
        prompts of at most :data:`EXACT_UNITS` units, every point's density given the globals
        and the other verdicts is the ratio of its prompt's integrals with and without it,
        by the sampler's own rules, and PSIS runs over the globals' draws; the log pointwise
        predictive density (hence ``p_loo``) is then that of the same density (its part of
        the globals' effective number of parameters).  Larger prompts' points as with
        sampled effects, over effects drawn again.  No effect without prompt effects.

    Returns
    -------
    LooResult
        Without prompt effects, or with ``integrate=False``: equal to ``az.loo(idata)`` on
        the per-comparison ``log_likelihood`` group (when it was stored), computed without
        it (with integrated prompt effects and ``alpha`` stored, at the same ``reff``).
    """
    units = posterior_units(idata)
    counts = np.asarray(units.cells.counts, dtype=float)
    outcome = posterior_outcome(idata)
    post = idata.posterior
    reff = _relative_efficiency(idata) if reff is None else check_positive(reff, "reff")
    unit, which = np.nonzero(counts > 0)  # every point, in the result's order
    limit = pareto_k_limit(post.sizes["chain"] * post.sizes["draw"])
    exact = np.zeros(len(unit), dtype=bool)
    if units.prompt is not None and integrate and (
            post.attrs.get("prompt_method") == "integrated" or "alpha" not in post):
        q = np.asarray(idata.constant_data["entry_cluster"])
        exact = (np.bincount(q)[q] <= EXACT_UNITS)[unit]
    elpd_i, lpd_i, k = np.empty(len(unit)), np.empty(len(unit)), np.empty(len(unit))
    if exact.any():
        elpd_i[exact], lpd_i[exact], k[exact] = _exact_points(idata, units, outcome,
                                                              unit[exact], which[exact], reff)
    integrated = exact.copy()
    rest = ~exact
    if rest.any():
        alpha = None
        if units.prompt is not None:  # stored, or drawn again
            from .recover import posterior_effects

            alpha = posterior_effects(idata)
        elpd_i[rest], lpd_i[rest], k[rest] = _plain_points(idata, units, outcome, unit[rest],
                                                           which[rest], reff, alpha)
        if integrate and units.prompt is not None:
            again = rest & (k > limit)
            if again.any():
                k[again], elpd_i[again] = _integrated_points(
                    idata, units, outcome, unit[again], which[again], reff, alpha=alpha)
            integrated |= again
    w = counts[unit, which]
    n = w.sum()
    elpd = float(w @ elpd_i)
    var = float(w @ (elpd_i - elpd / n) ** 2 / n)
    bad = k > limit
    return LooResult(elpd, float(np.sqrt(n * var)), float(w @ (lpd_i - elpd_i)), float(n), k, w,
                     elpd_i, float(w[bad].sum() / n), float(k.max(initial=-np.inf)),
                     unit, which, integrated, limit)


def _plain_points(idata, units, outcome, unit, which, reff, alpha) -> tuple:
    """PSIS of the points (``unit`` ascending) over the draws of the posterior's parameters
    (with prompt effects, their answer effects ``alpha``): as :func:`_psis`, a chunk of
    units at a time."""
    draws = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    cells = np.unique(unit)
    chunk = max(1, _BLOCK // max(draws, 1))
    out = np.empty((3, len(unit)))
    for lo in range(0, len(cells), chunk):
        take = cells[lo:lo + chunk]
        # padded by repeating units: every chunk has one shape, one compilation
        padded = np.resize(take, chunk) if len(cells) > chunk else take
        ll = outcome_log_likelihood(posterior_logits(idata, units, padded, alpha), outcome,
                                    posterior_aux(idata, units, padded))
        at = slice(np.searchsorted(unit, take[0]), np.searchsorted(unit, take[-1], "right"))
        here = np.searchsorted(take, unit[at])
        out[:, at] = _psis(ll[:, here, which[at]].T, reff)
    return tuple(out)


def _exact_points(idata, units, outcome, unit, which, reff) -> tuple:
    """PSIS of the points over the globals' draws with their densities given the globals and
    the other verdicts (integrated prompt effects; :mod:`~hja_bayes.bayes.prompt_loo`), by
    the sampler's rules: as :func:`_psis`."""
    from .recover import posterior_answers, posterior_globals

    _, question, item = posterior_answers(idata)
    rules = idata.posterior.attrs.get("quadrature")  # older posteriors: the default
    layout = left_out_layout(units.cells, units.prompt, question, item, unit, which,
                             **({} if rules is None else {"quadrature": tuple(
                                 int(m) for m in str(rules).split(",") if m)}))
    points = left_out_log_densities(layout, *posterior_globals(idata), units.cells, outcome)
    return _psis(points, reff)


def _psis(points, reff: float) -> tuple:
    """PSIS of every point's log-likelihood draws (points, draws): its leave-one-out log
    density, its log pointwise predictive density and its Pareto k, in chunks of points."""
    az = import_arviz()

    draws = points.shape[1]
    out = []
    step = max(1, _BLOCK // max(draws, 1))
    for lo in range(0, len(points), step):
        ll = points[lo:lo + step]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ArviZ's notices on k; reported by psis_loo
            lw, k = az.psislw(-ll, reff)
        out.append((logsumexp(lw + ll, axis=1), logsumexp(ll, axis=1) - np.log(draws),
                    np.asarray(k)))
    return tuple(np.concatenate(x) for x in zip(*out)) if out else (np.empty(0),) * 3


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
        :func:`pareto_k_limit`), ``bic``, ``map_nll``, ``loo_rank`` and ``bic_rank``.
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
                     "n_bad_k": int(loo.counts[loo.pareto_k > loo.k_limit].sum()),
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


@one_blas_thread
def compare_ranks(data: Comparisons, ranks: Sequence[int] = (0, 1, 2), *,
                  position_bias: bool = False, outcome: str = "half",
                  num_warmup: int = 500, num_samples: int = 1000,
                  num_chains: int = 4, seed: int = 0, progress_bar: bool = False,
                  **sample_kwargs) -> RankComparison:
    """Sample every candidate rank from its MAP and compare them by PSIS-LOO and BIC.

    Every rank's MAP is ``fit_hja(data, r, position_bias=, outcome=)``; ``sample_kwargs``
    go to :func:`~hja_bayes.bayes.sample_hja`.

    Returns
    -------
    RankComparison
        ``table`` from :func:`rank_comparison`; ``idatas`` maps rank -> InferenceData.
    """
    from ..hja import fit_hja
    from .run import sample_hja

    idatas = {}
    for r in ranks:
        fit = fit_hja(data, r, position_bias=position_bias, outcome=outcome)
        idatas[int(r)] = sample_hja(data, r, init=fit, num_warmup=num_warmup,
                                    num_samples=num_samples, num_chains=num_chains, seed=seed,
                                    progress_bar=progress_bar, **sample_kwargs)
    return RankComparison(rank_comparison(idatas), idatas)
