"""R-hat and effective sample sizes of every entry of a posterior quantity at once.

ArviZ computes its rank-normalised diagnostics (Vehtari et al. 2021) one entry at a time,
about 5 ms each: with thousands of answer effects that is tens of seconds after sampling.
Here the same inputs are formed over whole arrays (the ranks over chains and draws together,
their normal scores with Blom's offset) and handed to NumPyro's array functions:

* :func:`rank_rhat` is ArviZ's rank R-hat, to rounding: the larger split R-hat of the
  rank-normalised draws and of their folded (``|x - median|``) ranks;
* :func:`mixing` adds the bulk and tail effective sample sizes: NumPyro's estimator
  (Geyer's initial monotone sequence, as ArviZ's, without ArviZ's refinement at the lag
  where the sequence is cut, with its bound of ``n log10(n)`` for ``n`` draws) of ArviZ's
  inputs, the rank-normalised split chains and the split chains' indicators of the 5% and
  95% quantiles (the smaller ESS).

* :func:`rhat_by_chance`: the probability that chains drawing from one and the same
  distribution, with these effective sample sizes, show a rank R-hat above a limit.

All take draws shaped ``(chain, draw, ...)`` and give one value per entry, NaN where a
diagnostic is undefined (fewer than 4 draws, fewer than 2 chains for R-hat, non-finite
draws); draws that do not vary have R-hat NaN and every split draw as ESS.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Mixing", "mixing", "rank_rhat", "rank_rhat_by_chance", "rhat_by_chance"]

#: Blom's offset in the normal scores of ranks, ``(rank - 3/8) / (n + 1/4)``.
BLOM = 3 / 8
#: The quantiles whose indicators give the tail ESS.
TAIL = (0.05, 0.95)
#: Entries diagnosed together: bounds the working copies (a few of chains x draws x CHUNK
#: per thread).
CHUNK = 512
#: Chunks diagnosed at once at most, in threads, one per usable core (two chunks of 512
#: entries hold as much memory as one of 1,024 did): rank R-hat of 4,306 entries x 4,000
#: draws 3.6 -> 1.6 s on two cores.
THREADS = 2


class Mixing(NamedTuple):
    """Per-entry diagnostics, each shaped like one draw of the quantity."""

    rhat: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray
    rhat_by_chance: np.ndarray


def _entries(draws, min_chains: int) -> tuple[np.ndarray, tuple]:
    """Draws as (chain, draw, entries), with the entries' shape; NaN marks too few draws."""
    x = np.asarray(draws, dtype=float)
    if x.ndim < 2:
        raise ValueError(f"draws must be shaped (chain, draw, ...), got shape {x.shape}")
    shape = x.shape[2:]
    x = x.reshape(x.shape[0], x.shape[1], int(np.prod(shape)))
    if x.shape[0] < min_chains or x.shape[1] < 4:
        x = np.full(x.shape, np.nan)
    return x, shape


def _chunked(diagnose, x: np.ndarray, outputs: int) -> list[np.ndarray]:
    """``diagnose`` (entries -> ``outputs`` arrays, one value per entry) over chunks of
    entries, up to :data:`THREADS` at a time in threads (the sorts and ufuncs release the
    GIL); undefined entries (a non-finite draw, too few draws) get NaN."""
    def one(i):
        chunk = x[..., i:i + CHUNK]
        defined = np.isfinite(chunk).all(axis=(0, 1))
        values = (diagnose(np.where(defined, chunk, 0.0)) if defined.any()
                  else [np.full(chunk.shape[2], np.nan)] * outputs)
        return [np.where(defined, v, np.nan) for v in values]

    from ..btl import usable_cores

    starts = range(0, x.shape[2], CHUNK)
    threads = min(THREADS, usable_cores(), len(starts))
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(one, starts))
    else:
        results = [one(i) for i in starts]
    if not results:
        return [np.zeros(0)] * outputs
    return [np.concatenate(p) for p in zip(*results)]


def _varies(x: np.ndarray) -> np.ndarray:
    return np.ptp(x, axis=(0, 1)) >= np.finfo(float).resolution


def _split(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as chains of their own (the middle draw of an odd
    count left out)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def _normal_scores(x: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks (ties averaged) over chains and draws, entry by entry.

    One sort per entry puts the n scores of the ranks 1..n (computed once) in place; SciPy's
    ``rankdata`` (2-3× slower over many entries) ranks only the entries with tied draws."""
    from scipy.stats import rankdata

    chains, n, k = x.shape
    total = chains * n
    rows = np.ascontiguousarray(x.reshape(total, k).T)
    order = np.argsort(rows, axis=1)
    scores = np.empty_like(rows)
    np.put_along_axis(scores, order, _scores_of_ranks(np.arange(1.0, total + 1), total)[None],
                      axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    tied = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
    if tied.any():
        scores[tied] = _scores_of_ranks(rankdata(rows[tied], method="average", axis=1), total)
    return scores.T.reshape(x.shape)


def _scores_of_ranks(ranks, n: int) -> np.ndarray:
    """Blom's normal scores of ranks among ``n`` draws."""
    from scipy.special import ndtri

    return ndtri((ranks - BLOM) / (n + 1 - 2 * BLOM))


def _folded_scores(split: np.ndarray) -> np.ndarray:
    """Normal scores of the split chains' distances from their median."""
    return _normal_scores(np.abs(split - np.median(split, axis=(0, 1))))


def _rhat(x: np.ndarray, bulk_scores: np.ndarray, folded_scores: np.ndarray) -> np.ndarray:
    from numpyro.diagnostics import gelman_rubin

    with np.errstate(invalid="ignore", divide="ignore"):
        # fmax: chains each stuck at its own value have every folded score tied, a folded
        # R-hat of 0/0, and the bulk one is what says they never met
        rhat = np.fmax(gelman_rubin(bulk_scores), gelman_rubin(folded_scores))
    return np.where(_varies(x), rhat, np.nan)


def _chance(x: np.ndarray, bulk_scores: np.ndarray, folded_scores: np.ndarray,
            limit: float) -> np.ndarray:
    """:func:`rhat_by_chance` of one chunk, from its split chains' scores."""
    from scipy.stats import chi2

    m, n = bulk_scores.shape[:2]
    above = [chi2.sf((m - 1) * _within_ess(scores) * (limit ** 2 - 1 + 1 / n), m - 1)
             for scores in (bulk_scores, folded_scores)]
    return np.where(_varies(x), 1 - (1 - above[0]) * (1 - above[1]), np.nan)


def _ess(chains: np.ndarray) -> np.ndarray:
    """NumPyro's effective sample size over (chain, draw, entries), at most ArviZ's
    ``n log10(n)`` of ``n`` draws; every draw counts where an entry does not vary.

    The bound is ArviZ's floor on the autocorrelation time, ``1 / log10(n)``: strongly
    antithetic draws (a lag-1 autocorrelation near -1) have a Geyer sum below 1/2, and
    NumPyro's estimate ``n / tau`` is then huge or negative (-4,376 for one chain of 100)."""
    from numpyro.diagnostics import effective_sample_size

    varies = _varies(chains)
    filler = np.arange(chains.shape[1], dtype=float)[:, None]  # any varying series
    n = chains.shape[0] * chains.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = effective_sample_size(np.where(varies, chains, filler))
    most = n * np.log10(n)
    return np.where(varies, np.where((ess <= 0) | (ess > most), most, ess), n)


def _within_ess(chains: np.ndarray) -> np.ndarray:
    """The mean effective size of one chain, each chain's own (no between-chain term, which
    chains that disagree would shrink)."""
    return np.mean([_ess(chains[c:c + 1]) for c in range(chains.shape[0])], axis=0)


def rank_rhat(draws) -> np.ndarray:
    """Rank-normalised split R-hat of every entry (ArviZ's ``rhat(method="rank")``).

    Parameters
    ----------
    draws : array, shape (chain, draw, ...)

    Returns
    -------
    ndarray, shape ``draws.shape[2:]``
    """
    x, shape = _entries(draws, min_chains=2)

    def diagnose(chunk):
        split = _split(chunk)
        return (_rhat(chunk, _normal_scores(split), _folded_scores(split)),)

    return _chunked(diagnose, x, 1)[0].reshape(shape)


def rank_rhat_by_chance(draws, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rank_rhat` and :func:`rhat_by_chance` together, from one set of normal scores
    (their cost; the chance adds a tenth)."""
    x, shape = _entries(draws, min_chains=2)

    def diagnose(chunk):
        split = _split(chunk)
        bulk, folded = _normal_scores(split), _folded_scores(split)
        return _rhat(chunk, bulk, folded), _chance(chunk, bulk, folded, limit)

    return tuple(v.reshape(shape) for v in _chunked(diagnose, x, 2))


def mixing(draws, limit: float = 1.01) -> Mixing:
    """Rank R-hat, bulk ESS and tail ESS of every entry, sharing their ranks.

    Parameters
    ----------
    draws : array, shape (chain, draw, ...)
    limit : float
        The R-hat limit of ``rhat_by_chance``.

    Returns
    -------
    Mixing
        ``rhat`` as :func:`rank_rhat` (NaN with one chain); ``ess_bulk``, the ESS of the
        rank-normalised split chains; ``ess_tail``, the smaller ESS of the split chains'
        indicators of their 5% and 95% quantiles; ``rhat_by_chance`` as
        :func:`rhat_by_chance` at ``limit`` (NaN with one chain).
    """
    x, shape = _entries(draws, min_chains=1)

    def diagnose(chunk):
        split = _split(chunk)
        bulk_scores = _normal_scores(split)
        if chunk.shape[0] >= 2:
            folded = _folded_scores(split)
            rhat = _rhat(chunk, bulk_scores, folded)
            chance = _chance(chunk, bulk_scores, folded, limit)
        else:
            rhat = chance = np.full(chunk.shape[2], np.nan)
        quantiles = np.quantile(chunk, TAIL, axis=(0, 1))
        tail = np.minimum(*(_ess((split <= q).astype(float)) for q in quantiles))
        return rhat, _ess(bulk_scores), tail, chance

    return Mixing(*(v.reshape(shape) for v in _chunked(diagnose, x, 4)))


def rhat_by_chance(draws, limit: float) -> np.ndarray:
    """The probability that chains which agree show a rank R-hat above ``limit`` by chance.

    For ``M`` split chains of ``n`` draws from one stationary distribution, each with
    effective size ``n_e`` (each split chain's own ESS, averaged: chains that disagree do
    not lower it as they lower the ESS over all chains), the chain means vary as
    ``sigma^2 / n_e * chi2(M - 1) / (M - 1)``, so the split R-hat's square is about
    ``1 - 1/n + chi2(M - 1) / ((M - 1) n_e)``: above ``limit`` with probability
    ``P(chi2(M - 1) > (M - 1) n_e (limit^2 - 1 + 1/n))``.  That of the rank R-hat (the larger
    of the bulk and the folded one, :func:`rank_rhat`) combines the two, each with its own
    ESS, as if independent.  An approximation: on 4,000 AR(1) entries per design (2 or 4
    chains of 200 to 2,000 draws, autocorrelation 0 to 0.9) the predicted count was 0.8 to
    0.93 times the observed one, and 1.7 times it for independent draws where few entries
    exceed the limit; chains shifted apart exceed it far more often than predicted
    (``tests/test_bayes_mixing.py``).

    Parameters
    ----------
    draws : array, shape (chain, draw, ...)
    limit : float

    Returns
    -------
    ndarray, shape ``draws.shape[2:]``
        NaN where R-hat is undefined.
    """
    return rank_rhat_by_chance(draws, limit)[1]
