"""How sure is the order?  Rank intervals, tiers and neighbour probabilities from the
covariance of the consensus scores.

Pairwise intervals at level 95% each do not make the ranks 95% sure: with N models there are
N(N-1)/2 comparisons.  Here the differences ``mu_a - mu_b`` get *simultaneous* intervals:
``d_ab +- c se_ab`` with ``c`` the ``level`` quantile of ``max_ab |Z_a - Z_b| / se_ab`` for
``Z ~ N(0, Sigma)`` (the covariance of the estimates; a max-|t| critical value, found by
simulation with a fixed seed).  When the covariance is estimated from few clusters (CR2), each
difference has its own Satterthwaite degrees of freedom ``df_ab``, and its critical value is
the t quantile with ``df_ab`` of the same tail probability, ``t_df_ab^-1(Phi(c))``: a model
measured on a few prompts widens its own pairs, not every pair (the smallest df for all, the
rule before, made every rank interval span the board when one new model had been seen on
two prompts; ``benchmarks/bench_rare_model.py``).  When all of them cover,
which happens with probability about ``level``, every true rank lies in its interval: the
rank intervals are joint.

* rank interval of model i: ``[1 + #{j significantly above i}, N - #{j significantly below i}]``;
* tiers: going down the estimated order, a model joins the current tier when it is not
  significantly different from *any* model already in it, and opens a new tier otherwise.
  Members of a tier are thus pairwise indistinguishable at the joint level; the cut into
  consecutive tiers is one such grouping among several (a convention, not an estimate);
* neighbour probability: ``Phi(d / se)`` (the t distribution's cdf with ``df``) for a model
  and the next one down in the estimated order.  Because the pair is chosen by the estimates it is >= 1/2 by construction and
  overstates the confidence in that order; read it as a plug-in summary, not a posterior.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import ndtr, stdtr, stdtrit

from ..checks import check_integer, check_level, check_numbers
from ..errors import ParameterError

__all__ = ["RankIntervals", "max_abs_t", "neighbour_probabilities", "pair_critical_values",
           "rank_intervals"]

_DRAWS = 20_000


class RankIntervals(NamedTuple):
    """Joint rank intervals and tiers (arrays in the input's item order).

    Attributes
    ----------
    lower, upper : ndarray of int
        Best and worst rank compatible with the simultaneous intervals (1 = best).
    tier : ndarray of int
        Tier number (1 = top), see the module notes.
    better : ndarray of bool (N, N)
        ``better[a, b]``: a is significantly above b at the joint level.
    critical_value : float
        The simultaneous critical value ``c`` (1.96 would be the unadjusted one at 95%); with
        per-pair degrees of freedom, on the normal scale (each pair's is its t quantile).
    level : float
    """

    lower: np.ndarray
    upper: np.ndarray
    tier: np.ndarray
    better: np.ndarray
    critical_value: float
    level: float


def _check(estimate, covariance) -> tuple[np.ndarray, np.ndarray]:
    estimate = check_numbers(estimate, "the scores", ndim=1)
    covariance = _covariance(covariance)
    if covariance.shape != (estimate.size, estimate.size):
        raise ParameterError(f"need N scores and an N x N covariance, got {estimate.shape} "
                             f"and {covariance.shape}")
    return estimate, covariance


def _covariance(covariance) -> np.ndarray:
    """A finite, symmetric (symmetrised), square matrix with no negative variance."""
    covariance = check_numbers(covariance, "the covariance", ndim=2)
    if covariance.shape[0] != covariance.shape[1]:
        raise ParameterError(f"the covariance must be square, got shape {covariance.shape}")
    covariance = (covariance + covariance.T) / 2
    scale = max(float(np.max(np.abs(covariance), initial=0.0)), np.finfo(float).tiny)
    if np.any(np.diag(covariance) < -1e-10 * scale):
        raise ParameterError("the covariance has a negative variance: it is not a covariance")
    return covariance


def _difference_se(covariance: np.ndarray) -> np.ndarray:
    v = np.diag(covariance)
    return np.sqrt(np.clip(v[:, None] + v[None, :] - 2 * covariance, 0.0, None))


def simultaneous_critical_value(covariance, level: float = 0.95, *, seed: int = 0,
                                draws: int = _DRAWS, df: float = np.inf) -> float:
    """``level`` quantile of ``max_ab |Z_a - Z_b| / se_ab`` for ``Z ~ N(0, covariance)``, or
    for ``Z`` multivariate t with ``df`` degrees of freedom (``N(0, covariance) / sqrt(chi2_df
    / df)``, one scale per draw).

    Deterministic for a given ``seed``; with 20,000 draws the quantile's own Monte Carlo
    error is about 0.01 at 95%.
    """
    level = check_level(level)
    covariance = _covariance(covariance)
    draws = check_integer(draws, "draws", 1)
    N = covariance.shape[0]
    if N < 2:
        return 0.0
    se = _difference_se(covariance)
    if not np.any(np.triu(se, 1) > 0):
        return 0.0
    # a symmetric square root: works for the singular covariance of centred scores
    eig, vec = np.linalg.eigh(covariance)
    if eig[0] < -1e-8 * max(eig[-1], np.finfo(float).tiny):
        raise ParameterError(f"the covariance is not positive semi-definite (an eigenvalue "
                             f"{eig[0]:.3g}, the largest {eig[-1]:.3g})")
    root = vec * np.sqrt(np.clip(eig, 0.0, None))
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((draws, N)) @ root.T
    if np.isfinite(df):
        if not df > 0:
            raise ParameterError(f"df must be positive, got {df}")
        z = z / np.sqrt(rng.chisquare(df, size=(draws, 1)) / df)
    return float(np.quantile(max_abs_t(z, se), level))


#: :func:`max_abs_t` works on blocks of about this many (draw, model) numbers.
_BLOCK = 4_000_000
#: Up to this many models :func:`max_abs_t` visits every pair (pruning does not pay), and
#: above :data:`_ROWS_MAX` each draw's candidate pairs alone.
_EVERY_PAIR_MAX = 32
_ROWS_MAX = 400


def max_abs_t(z, se) -> np.ndarray:
    """Per draw (row of ``z``), ``max_{a < b} |z_a - z_b| / se_ab`` over the pairs with
    ``se_ab > 0`` (the upper triangle of ``se``); 0 where there is none.

    Exact, without visiting most pairs (above :data:`_EVERY_PAIR_MAX` models).
    ``max(z_a - min z, max z - z_a) / min_b se_ab`` (a's *reach*) bounds every pair of model
    a, so a pair can beat a draw's running maximum only if both its models reach beyond
    it.  Up to :data:`_ROWS_MAX` models, model a's pairs are visited in the draws where a
    reaches beyond the maximum so far (which starts at the pair of the draw's largest and
    smallest values); above, each pair is also bounded through per-model scales (see
    :func:`_by_draws`), which stays tight when the se's are uneven (a sparse panel, where a
    few models measured against each other have se's far below the rest): at 20,000 draws
    and 1,000 models, about 2 s instead of minutes there and a quarter of the time before
    for a leaderboard's covariance; the same numbers as every pair
    (``benchmarks/bench_critical_value.py``).
    """
    z = np.asarray(z, dtype=float)
    N = z.shape[1]
    if N <= _EVERY_PAIR_MAX:
        return _every_pair(z, np.asarray(se, dtype=float))
    upper = np.triu(np.asarray(se, dtype=float), 1)
    safe = upper + upper.T  # each pair's se as the upper triangle has it, in both places
    safe = np.where(safe > 0, safe, np.inf)
    np.fill_diagonal(safe, np.inf)
    nearest = safe.min(axis=1)
    return (_by_rows if N <= _ROWS_MAX else _by_draws)(z, safe, nearest)


def _every_pair(z, se) -> np.ndarray:
    stat = np.zeros(len(z))
    for a in range(z.shape[1] - 1):  # one model's pairs at a time: (draws, N) numbers
        keep = np.flatnonzero(se[a, a + 1:] > 0) + a + 1
        if keep.size:
            np.maximum(stat, np.max(np.abs(z[:, [a]] - z[:, keep]) / se[a, keep], axis=1),
                       out=stat)
    return stat


def _reach(z, lo, hi, nearest):
    """The bound on a model's pairs, widened by a rounding margin so that no pair it
    passes over can win."""
    return np.maximum(z - lo, hi - z) / nearest * (1 + 1e-9)


def _by_rows(z, safe, nearest) -> np.ndarray:
    draws, N = z.shape
    rows = [a for a in np.argsort(nearest, kind="stable") if np.isfinite(nearest[a])]
    stat = np.zeros(draws)
    block = max(1, min(draws, _BLOCK // N))
    for start in range(0, draws, block):
        zt = np.ascontiguousarray(z[start:start + block].T)  # (N, draws in the block)
        hi, lo = zt.max(axis=0), zt.min(axis=0)
        best = np.abs(hi - lo) / safe[zt.argmax(axis=0), zt.argmin(axis=0)]
        for a in rows:
            need = np.flatnonzero(_reach(zt[a], lo, hi, nearest[a]) > best)
            if need.size:
                values = np.abs(zt[a, need] - zt[:, need]) / safe[a][:, None]
                best[need] = np.maximum(best[need], values.max(axis=0))
        stat[start:start + block] = best
    return stat


def _scales(safe) -> np.ndarray:
    """Per model ``w_a`` with ``se_ab^2 ~ w_a^2 + w_b^2`` (exact for independent scores, where
    ``w_a`` is a's sd): the double-centred squared se's, from the se's alone."""
    finite = np.isfinite(safe)
    square = np.where(finite, safe, 0.0) ** 2
    row = square.sum(axis=1) / np.maximum(finite.sum(axis=1), 1)
    w2 = row - square.sum() / max(finite.sum(), 1) / 2
    return np.sqrt(np.clip(w2, 1e-12 * max(row.max(), np.finfo(float).tiny), None))


def _by_draws(z, safe, nearest, ends: int = 8, per_model: int = 4) -> np.ndarray:
    """Bounds each pair by scale ``w`` (:func:`_scales`): with ``u = z / w``, ``z_a - z_b <=
    w_a u_a^+ + w_b u_b^- <= hypot(w_a, w_b) sqrt(u_a^+2 + u_b^-2)`` (Cauchy-Schwarz), so
    ``|z_a - z_b| / se_ab <= sqrt(u_a^+2 + u_b^-2) / c`` with ``c`` the least ``se_ab /
    hypot(w_a, w_b)``.  The ``per_model * N`` pairs of least ratio (models measured against
    each other, whose se is below the scales') are visited in every draw, and ``c`` is taken
    over the rest; a pair beyond them is visited in a draw where its upper model is a *top*
    (``u_a^+2 + max u^-2 > (best c)^2``), its lower one a *bottom* (likewise), and both
    reach beyond the draw's best (:func:`_reach`, their nearest se among the rest)."""
    draws, N = z.shape
    w = _scales(safe)
    a, b = np.triu_indices(N, 1)
    ratio = safe[a, b] / np.hypot(w[a], w[b])
    k = min(per_model * N, np.count_nonzero(ratio < 0.98), ratio.size - 1)
    part = np.argpartition(ratio, k)
    c, few = ratio[part[k]], part[:k]
    fa, fb = a[few], b[few]
    rest = safe.copy()
    rest[fa, fb] = rest[fb, fa] = np.inf
    nearest = rest.min(axis=1)  # among the pairs not visited in every draw
    stat = np.zeros(draws)
    block = max(1, _BLOCK // max(N, k))
    for start in range(0, draws, block):
        zb = z[start:start + block]
        u = zb / w
        ends_u = np.argpartition(u, (ends - 1, N - ends), axis=1)
        pick = np.concatenate([ends_u[:, :ends], ends_u[:, N - ends:]], axis=1)
        zp = np.take_along_axis(zb, pick, axis=1)
        zt = np.ascontiguousarray(zb.T)  # (N, draws in the block): rows gathered faster
        best = np.maximum((np.abs(zp[:, :, None] - zp[:, None, :])
                           / safe[pick[:, :, None], pick[:, None, :]]).max(axis=(1, 2)),
                          (np.abs(zt[fa] - zt[fb]) / safe[fa, fb, None]).max(axis=0, initial=0.0))
        live = _reach(zb, zb.min(axis=1)[:, None], zb.max(axis=1)[:, None],
                      nearest) > best[:, None]
        up, down = np.clip(u, 0.0, None) ** 2, np.clip(-u, 0.0, None) ** 2
        limit = ((best * c / (1 + 1e-9)) ** 2)[:, None]
        top = live & (up + down.max(axis=1, keepdims=True) > limit)
        bottom = live & (down + up.max(axis=1, keepdims=True) > limit)
        _visit(zb, safe, top, bottom, best)
        stat[start:start + block] = best
    return stat


def _visit(z, safe, top, bottom, best, many: int = 256) -> None:
    """Raise ``best`` (per draw) to the largest pair of a top and a bottom in each draw: the
    draws with more than ``many`` such pairs one at a time, the others all at once."""
    count = top.sum(axis=1) * bottom.sum(axis=1)
    for d in np.flatnonzero(count > many):
        t, s = np.flatnonzero(top[d]), np.flatnonzero(bottom[d])
        best[d] = max(best[d], (np.abs(z[d, t][:, None] - z[d, s]) / safe[np.ix_(t, s)]).max())
    top = top & (count <= many)[:, None]
    td, ta = np.nonzero(top)
    bd, bb = np.nonzero(bottom)
    per_draw = np.bincount(bd, minlength=len(z))
    meets, first = per_draw[td], (np.cumsum(per_draw) - per_draw)[td]  # ta meets these bb
    offset = np.arange(meets.sum()) - np.repeat(np.cumsum(meets) - meets, meets)
    d, a = np.repeat(td, meets), np.repeat(ta, meets)
    b = bb[np.repeat(first, meets) + offset]
    np.maximum.at(best, d, np.abs(z[d, a] - z[d, b]) / safe[a, b])


def rank_intervals(estimate, covariance, level: float = 0.95, *, seed: int = 0,
                   draws: int = _DRAWS, df: float = np.inf) -> RankIntervals:
    """Joint rank intervals and tiers from scores and their covariance.

    Parameters
    ----------
    estimate : array (N,)
        Estimated scores (higher is better).
    covariance : array (N, N)
        Their covariance (Fisher, sandwich or cluster-robust; may be singular).
    level : float
        Joint level: all N rank intervals cover the true ranks with this probability
        (asymptotically).
    seed, draws
        Of the simulation of the critical value.
    df : float or array (N, N)
        A number: degrees of freedom of the multivariate t behind the critical value (inf:
        normal).  An array: each difference's own (Satterthwaite's, with a CR2
        cluster-robust covariance; inf where normal), its critical value the t quantile of
        the normal critical value's tail probability (see the module notes).

    Returns
    -------
    RankIntervals

    Examples
    --------
    >>> r = rank_intervals([1.0, 0.0, -1.0], np.eye(3) * 0.01)
    >>> r.lower.tolist(), r.upper.tolist(), r.tier.tolist()
    ([1, 2, 3], [1, 2, 3], [1, 2, 3])
    """
    estimate, covariance = _check(estimate, covariance)
    level = check_level(level)
    N = estimate.size
    per_pair = np.ndim(df) == 2
    c = simultaneous_critical_value(covariance, level, seed=seed, draws=draws,
                                    df=np.inf if per_pair else df)
    critical = pair_critical_values(c, df, N) if per_pair else c
    se = _difference_se(covariance)
    diff = estimate[:, None] - estimate[None, :]
    better = (diff - critical * se > 0) & ~np.eye(N, dtype=bool)
    lower = 1 + better.sum(axis=0)
    upper = N - better.sum(axis=1)
    order = np.argsort(-estimate, kind="stable")
    tier = np.zeros(N, dtype=np.int64)
    current, members = 1, []
    for i in order:
        if any(better[m, i] for m in members):
            current, members = current + 1, []
        members.append(i)
        tier[i] = current
    return RankIntervals(lower, upper, tier, better, c, level)


def pair_critical_values(c: float, df, N: int | None = None) -> np.ndarray:
    """Each pair's critical value ``t_df_ab^-1(Phi(c))`` (N x N), for a max-|t| value ``c``
    of the normal approximation and the pairs' degrees of freedom ``df`` (N x N; ``c``
    where ``df_ab`` is inf): the tail probability of ``c`` carried to each pair's t."""
    df = np.asarray(df, dtype=float)
    N = (df.shape[0] if df.ndim else 0) if N is None else N
    if df.shape != (N, N) or not np.all(df > 0):
        raise ParameterError(f"df must be positive, one per pair ({N} x {N}), got shape "
                             f"{df.shape}")
    a, b = np.triu_indices(N, 1)  # symmetric: each pair once
    upper = df[a, b]
    finite = np.isfinite(upper)
    values = np.full(a.size, float(c))
    values[finite] = stdtrit(upper[finite], ndtr(c))
    out = np.full((N, N), float(c))
    out[a, b] = out[b, a] = values
    return out


def neighbour_probabilities(estimate, covariance, df=None) -> np.ndarray:
    """``Phi(d / se)`` for each model and the next one down in the estimated order.

    NaN for the last model.  The pair is chosen by the estimates, so each value is >= 1/2 by
    construction: a plug-in summary of the Wald statistic, not the probability that the
    estimated order is right.  With ``df`` (N x N degrees of freedom of the differences,
    inf for normal), the t distribution's cdf instead of Phi.
    """
    estimate, covariance = _check(estimate, covariance)
    if df is not None:
        df = np.broadcast_to(np.asarray(df, dtype=float), covariance.shape) if np.ndim(df) == 0 \
            else np.asarray(df, dtype=float)
        if df.shape != covariance.shape:
            raise ParameterError(f"df must be a number or an N x N array, got shape {df.shape}")
    se = _difference_se(covariance)
    order = np.argsort(-estimate, kind="stable")
    out = np.full(estimate.size, np.nan)
    for a, b in zip(order[:-1], order[1:]):
        if se[a, b] > 0:
            z = (estimate[a] - estimate[b]) / se[a, b]
            nu = np.inf if df is None else float(df[a, b])
            out[a] = float(ndtr(z) if not np.isfinite(nu) else stdtr(nu, z))
    return out
