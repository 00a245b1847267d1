"""Greedy allocation of verdicts by expected information on a goal's contrasts.

The state is the Fisher covariance ``Sigma`` of the chart coordinates at the fit and the
goal's contrast gradients ``G``.  A block of ``s1`` verdicts in slot 1 and ``s2`` in slot 2
of a candidate adds ``a1 d1 d1^T + a2 d2 d2^T`` (``a = s w``) to the information, and the
variance of contrast ``g`` drops by (Woodbury, two columns)

    dv = e^T (I + R S R)^-1 e,   e = R D^T Sigma g,   S = D^T Sigma D,   R = diag(sqrt a)

with ``D = [d1, d2]``.  Each step takes the candidate with the largest drop of the goal's
uncertainty per unit cost, then updates ``Sigma`` (two rank-one updates) and everything
derived from it exactly, so the next step sees the information of the verdicts already
chosen.  Cost per step: O(contrasts x candidates + dim^2).

Clustered data: the variances that decide the goal are the cluster-robust ones, taken as
``design_effect x`` the Fisher ones (the design effect estimated from the fit); new
verdicts are assumed to come with the same design effect.  From a posterior the design
effect is per contrast: its posterior variance over its Fisher variance at the fit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .candidates import Candidates
from .goals import Goal, quadratic_forms

__all__ = ["Pick", "greedy_allocation", "variance_drop"]

#: Candidates whose score is within this relative distance of the best are tied (the seed
#: decides among them).
TIE = 1e-9


class Pick(NamedTuple):
    """One greedy step: candidate index, verdicts per slot, the drop of the goal's
    uncertainty it was expected to bring, and the uncertainty after it."""

    candidate: int
    s1: int
    s2: int
    gain: float
    after: float


def variance_drop(E1, E2, s11, s22, s12, a1, a2) -> np.ndarray:
    """``e^T (I + R S R)^-1 e`` for every contrast (rows) and candidate (columns)."""
    r1, r2 = np.sqrt(a1), np.sqrt(a2)
    t11, t22, t12 = 1 + a1 * s11, 1 + a2 * s22, r1 * r2 * s12
    det = t11 * t22 - t12 ** 2
    e1, e2 = E1 * r1, E2 * r2
    return (t22 * e1 ** 2 - 2 * t12 * e1 * e2 + t11 * e2 ** 2) / det


def _split(s, n1, n2, limit1, limit2, odd_first):
    """Verdicts per slot for a block of ``s``: fill the rarer presentation order first, split
    the rest evenly (the odd one by ``odd_first``), respect the slots' limits."""
    s = np.broadcast_to(np.asarray(s, dtype=float), n1.shape)
    gap = n2 - n1
    give1 = np.clip(gap, 0, s)
    give2 = np.clip(-gap, 0, s)
    rest = s - give1 - give2
    half = np.floor(rest / 2)
    odd = rest - 2 * half
    s1 = give1 + half + odd * odd_first
    s2 = give2 + half + odd * (1 - odd_first)
    over1 = np.clip(s1 - limit1, 0, None)
    over2 = np.clip(s2 - limit2, 0, None)
    s1 = np.minimum(s1 - over1 + over2, limit1)
    s2 = np.minimum(s2 - over2 + over1, limit2)
    return s1, s2


class _State:
    """Everything the greedy search updates after each pick."""

    def __init__(self, sigma, G, cand: Candidates):
        self.sigma = sigma.copy()
        self.G = G
        self.cand = cand
        SD1 = (cand.D1 @ sigma).T  # dim x c (Sigma symmetric)
        SD2 = (cand.D2 @ sigma).T
        self.E1, self.E2 = G @ SD1, G @ SD2
        self.s11 = np.asarray(cand.D1.multiply(SD1.T).sum(axis=1)).ravel()
        self.s22 = np.asarray(cand.D2.multiply(SD2.T).sum(axis=1)).ravel()
        self.s12 = np.asarray(cand.D1.multiply(SD2.T).sum(axis=1)).ravel()
        self.v = quadratic_forms(G, sigma)

    def add(self, row: int, slot: int, weight: float) -> None:
        """``weight`` more information along the candidate's slot (a rank-one update)."""
        D = self.cand.D1 if slot == 1 else self.cand.D2
        d = D.getrow(row)
        x = np.asarray(d @ self.sigma).ravel()
        dd = float(np.asarray(d @ x).ravel()[0])
        coef = weight / (1 + weight * dd)
        Gx = self.G @ x
        D1x, D2x = self.cand.D1 @ x, self.cand.D2 @ x
        self.E1 -= coef * np.outer(Gx, D1x)
        self.E2 -= coef * np.outer(Gx, D2x)
        self.s11 -= coef * D1x ** 2
        self.s22 -= coef * D2x ** 2
        self.s12 -= coef * D1x * D2x
        self.v -= coef * Gx ** 2
        self.sigma -= coef * np.outer(x, x)


def greedy_allocation(sigma, G, goal: Goal, cand: Candidates, budget: int, *, block: int = 1,
                      design_effect: float = 1.0, seed: int = 0,
                      max_cost: float | None = None) -> list[Pick]:
    """Choose ``budget`` verdicts in blocks of ``block``, greedily by uncertainty drop per cost.

    Parameters
    ----------
    sigma : (dim, dim)
        Fisher covariance of the chart coordinates at the fit.
    G : (n, dim)
        The goal's contrast gradients.
    goal : Goal
    cand : Candidates
    budget : int
        Verdicts to choose.
    block : int
        Verdicts per step (the last step may take fewer).
    design_effect : float or (n,) array
        Deciding over Fisher variance of the contrasts (1 without clusters), one for all or
        one per contrast.
    seed : int
        Breaks ties between equally good candidates, and decides which order gets the odd
        verdict of a block.
    max_cost : float, optional
        Stop before the total cost would exceed it (a block takes fewer verdicts where a
        whole one would).

    Returns
    -------
    list of Pick
    """
    rng = np.random.default_rng(seed)
    key = rng.permutation(cand.size)
    odd_first = rng.integers(0, 2, cand.size).astype(float)
    state = _State(sigma, G, cand)
    design_effect = np.asarray(design_effect, dtype=float)
    per_column = design_effect[:, None] if design_effect.ndim else design_effect
    n1, n2 = cand.n1.astype(float).copy(), cand.n2.astype(float).copy()
    limit1, limit2 = cand.limit1.astype(float).copy(), cand.limit2.astype(float).copy()
    picks: list[Pick] = []
    chosen = spent = 0.0
    while chosen < budget:
        s = min(block, budget - chosen)
        if max_cost is not None:  # a block shrinks to what the cost left allows
            s = np.clip(np.minimum(s, np.floor((max_cost * (1 + 1e-12) - spent) / cand.cost)),
                        0, None)
        s1, s2 = _split(s, n1, n2, limit1, limit2, odd_first)
        size = s1 + s2
        price = size * cand.cost
        live = size > 0
        if max_cost is not None:
            live &= spent + price <= max_cost * (1 + 1e-12)
        if not live.any():
            break
        drop = variance_drop(state.E1, state.E2, state.s11[None], state.s22[None],
                             state.s12[None], (s1 * cand.w1)[None], (s2 * cand.w2)[None])
        now = goal.uncertainty(design_effect * state.v)
        after = goal.uncertainty(per_column * np.clip(state.v[:, None] - drop, 0, None))
        gain = (now[:, None] - after).sum(axis=0)
        score = np.where(live, gain / np.where(live, price, 1.0), -np.inf)
        best = score.max()
        if not best > 1e-12 * max(now.sum(), 1e-300):  # the goal looks decided: keep
            # shrinking the contrasts' variances (relative A-optimality) instead
            relative = (drop / np.clip(state.v, 1e-300, None)[:, None]).sum(axis=0)
            score = np.where(live, relative / np.where(live, price, 1.0), -np.inf)
            best = score.max()
        tied = np.flatnonzero(score >= best - TIE * abs(best))
        c = int(tied[np.argmin(key[tied])])
        a1, a2 = s1[c] * cand.w1[c], s2[c] * cand.w2[c]
        if s1[c]:
            state.add(c, 1, a1)
        if s2[c]:
            state.add(c, 2, a2)
        n1[c] += s1[c]
        n2[c] += s2[c]
        limit1[c] -= s1[c]
        limit2[c] -= s2[c]
        chosen += size[c]
        spent += price[c]
        left = float(goal.uncertainty(design_effect * state.v).sum())
        picks.append(Pick(c, int(s1[c]), int(s2[c]), float(gain[c]), left))
    return picks
