"""Large panels: which contrasts and units the greedy search runs on.

The greedy search (:mod:`~hja_bayes.design.greedy`) holds, for every candidate unit, its
derivatives in the chart and its variance drop on every contrast of the goal: at 20 judges
and 1,000 models that is 10 million units, 3,000 chart coordinates and, for the top 3, some
3,000 contrasts; and each of its steps visits every (unit, contrast).  For the decision
goals ("top", "ranks", "tiers") on panels of more than :data:`KEEP_UNITS` units it runs
instead on

* the :data:`LIVE_CONTRASTS` contrasts with the largest uncertainty now, less those with a
  negligible share of it: a contrast's uncertainty only falls as verdicts come in, so the
  others can change the goal's count by at most their sum, which is carried along as a
  constant (:attr:`Screen.rest`);
* the :data:`KEEP_UNITS` units (fewer if the search cannot hold them: ``capacity``, units x
  chart coordinates, :data:`~hja_bayes.design.candidates.MAX_WORK`) whose first block, on
  its own, would lower those contrasts' uncertainty most per unit cost to first order.

The first-order score of a unit is ``sum_c U'_c a e_c^2 / (1 + a s)`` per slot (``U'_c``:
the slope of contrast c's uncertainty in its variance; ``e_c``, ``s``, ``a``: as in
:mod:`~hja_bayes.design.greedy`), the two slots summed.  A verdict's derivative is
``u_first - u_second + p_k`` in the chart, with ``u_i`` and ``p_k`` per judge, so every
pair's ``e`` and ``s`` come from a few models x models matrices per judge: 20 judges and
1,000 models take seconds, not the ten minutes of scoring each unit exactly.  The search then
chooses exactly among the units kept.  ``goal="pairs"`` (A-optimality: every variance
counts, none can be held) is not screened.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .candidates import Units, _derivatives, _weights, cell_counts, held
from .goals import Goal, quadratic_forms
from .greedy import _split

__all__ = ["KEEP_UNITS", "LIVE_CONTRASTS", "Screen", "first_order_scores", "screen"]

#: Contrasts a screened search steers by: at most this many, those with the largest
#: uncertainty now, and of those only the ones holding more than :data:`NEGLIGIBLE` of
#: their total.
LIVE_CONTRASTS = 200
NEGLIGIBLE = 1e-9
#: Units a screened search chooses among (fewer where the search cannot hold them).
KEEP_UNITS = 4_000
#: Relative step of the numerical slope of a contrast's uncertainty in its variance.
STEP = 1e-4


class Screen(NamedTuple):
    """What a screened search runs on.

    Attributes
    ----------
    contrasts : int array
        Indices of the goal's contrasts it steers by.
    units : int array
        Indices of the units it chooses among.
    rest : float
        The uncertainty of the other contrasts now, held as a constant.
    """

    contrasts: np.ndarray
    units: np.ndarray
    rest: float


def _pair_forms(M, a, b):
    """``M[a, a] + M[b, b] - 2 M[a, b]`` for a symmetric matrix M."""
    return M[a, a] + M[b, b] - 2.0 * M[a, b]


def first_order_scores(fit, chart, sigma, H, slopes, units: Units, block: int) -> np.ndarray:
    """Every unit's first-order drop of the steering sums per unit cost: (units, columns of
    ``slopes``) for contrast rows ``H = G sigma`` and slopes (contrasts, columns); -inf
    where a unit can take no verdict.  A block that splits unevenly between the two
    presentation orders is scored by the better split."""
    K, N = len(fit.judges), len(fit.items)
    table = cell_counts(fit.data)
    out = np.full((units.size, slopes.shape[1]), -np.inf)
    zero = np.zeros(N, dtype=np.int64)
    for k in range(K):
        at = np.flatnonzero(units.judge == k)
        if not at.size:
            continue
        judge = np.full(N, k)
        U = _derivatives(fit, chart, judge, np.arange(N), zero)  # rows u_i - u_0 + p_k
        p = _derivatives(fit, chart, judge[:1], zero[:1], zero[:1])  # p_k
        W = np.asarray(U @ (U @ sigma).T)
        Sp = np.asarray(p @ sigma).ravel()
        omega, pi = U @ Sp, float((p @ Sp)[0])
        Z, h = np.asarray(U @ H.T), np.asarray(p @ H.T).ravel()
        a, b = units.a[at], units.b[at]
        shift = 2.0 * (omega[a] - omega[b])
        s11 = _pair_forms(W, a, b) + shift + pi
        s22 = _pair_forms(W, a, b) - shift + pi
        w1, w2 = _weights(fit, judge[:1].repeat(at.size), a, b), \
            _weights(fit, judge[:1].repeat(at.size), b, a)
        n1, n2 = held(fit.data, k, a, b, table), held(fit.data, k, b, a, table)
        limits = units.limit1[at], units.limit2[at]
        splits = [_split(block, n1, n2, *limits, np.full(at.size, odd)) for odd in (0.0, 1.0)]
        for j, slope in enumerate(slopes.T):
            T = Z @ (slope[:, None] * Z.T)
            zt = Z @ (slope * h)
            cross, hh = 2.0 * (zt[a] - zt[b]), float(slope @ h ** 2)
            q1 = _pair_forms(T, a, b) + cross + hh
            q2 = _pair_forms(T, a, b) - cross + hh
            for s1, s2 in splits:
                a1, a2 = s1 * w1, s2 * w2
                price = (s1 + s2) * units.cost[at]
                drop = a1 * q1 / (1 + a1 * s11) + a2 * q2 / (1 + a2 * s22)
                score = np.where(price > 0, drop / np.where(price > 0, price, 1.0), -np.inf)
                out[at, j] = np.maximum(out[at, j], score)
    return out


def screen(fit, chart, sigma, G, target: Goal, design_effect, units: Units, block: int,
           capacity: int) -> Screen:
    """The contrasts and units a screened search runs on (see the module's notes).

    ``sigma``: the Fisher covariance of the chart; ``G``: the goal's contrast gradients;
    ``design_effect``: one number, or one per contrast; ``block``: verdicts per step;
    ``capacity``: units x chart coordinates the search may hold.
    """
    design_effect = np.asarray(design_effect, dtype=float)
    v_all = quadratic_forms(G, sigma)
    now_all = target.uncertainty(design_effect * v_all)
    # the most uncertain first; where that underflows to 0, the least decided by |t|
    t = np.abs(target.estimate) / np.sqrt(np.clip(design_effect * v_all, 1e-300, None))
    top = np.lexsort((t, -now_all))[:LIVE_CONTRASTS]
    total = now_all[top].sum()
    live = np.sort(top[now_all[top] > NEGLIGIBLE * total] if total > 0 else top)
    rest = float(now_all.sum() - now_all[live].sum())
    v, goal = v_all[live], target.subset(live)
    effect = design_effect[live] if design_effect.ndim else design_effect
    # the count's slope in each contrast's variance, and the relative variances' (what the
    # search goes by once the goal looks decided)
    up = goal.uncertainty(effect * v * (1 + STEP))
    down = goal.uncertainty(effect * v * (1 - STEP))
    slopes = np.column_stack([(up - down) / (2 * STEP * v), 1.0 / np.clip(v, 1e-300, None)])
    scores = first_order_scores(fit, chart, sigma, G[live] @ sigma, slopes, units, block)
    now = now_all[live].sum()
    count = scores[:, 0]
    score = count if count.max(initial=0.0) > 1e-12 * max(now, 1e-300) else scores[:, 1]
    best = np.argsort(-score, kind="stable")[:max(1, min(KEEP_UNITS, capacity // chart.dim))]
    return Screen(live, np.sort(best[np.isfinite(score[best])]), rest)
