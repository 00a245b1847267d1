"""Adaptive design against uniform random allocation and Chatbot Arena's sampling rule.

Simulated panels (K = 3 judges: a good LLM judge at cost 1, a noisy one at cost 1, a
sensitive but costly one at cost 10; N = 12 or 40 models; rank 1; position biases;
verdicts on a pool of prompts, coupled within a prompt by a Gaussian copula).  Every run
starts from the same random 5% design (5% of the run's cost cap, judges and ordered pairs
uniform) and then spends, round after round, 10% of what it has spent so far:

* adaptive: ``next_comparisons(fit, goal=..., cost=...)`` (goal "top" with k = 3, or
  "ranks" with tie margin 0.2), fitted by ``fit.update`` after every round;
* random: judge and ordered pair uniformly at random;
* arena: Chatbot Arena's active sampling rule (Chiang et al. 2024, section 5: a pair is
  drawn with probability proportional to the drop of its win rate's standard error from
  one more battle, ``sqrt(s2 / n) - sqrt(s2 / (n + 1))``, ``s2 = p (1 - p)`` with the pooled
  win rate p smoothed by +1/+2, n its battles so far; the judge uniform, the order random);
* adaptive_explore30, adaptive_explore50 (only with ``--methods``): 30% (50%) of every
  round uniformly at random, the rest as ``next_comparisons`` asks;
* adaptive_once, adaptive_doubling, adaptive_weighted20 (only with ``--parts coverage
  --methods``): the whole budget asked for at once after the start, rounds as large as what
  was spent before them, and a randomised rule with known probabilities fitted with
  importance weights (:func:`weighted_rows`);
* adaptive_two_stage (only with ``--parts coverage --methods``): as adaptive_once, but the
  intervals come from the second stage's verdicts alone (the start only chose the design,
  so the design does not depend on the data it is judged by);
* adaptive_level995 (only with ``--methods``): ``next_comparisons(level=0.995)`` in every
  round, a stricter decision for the design alone (the checks stay at 95%).

After each round the goals are checked with the package's joint (max-|t|, 95%) intervals
from the cluster-robust covariance:

* top: the joint rank intervals separate some 3 models from the rest (the stopping rule a
  user can apply); "correct" when they are the true top 3;
* ranks: every neighbouring pair in the estimated order has a joint interval that excludes
  0 or lies inside [-0.2, 0.2] (a declared tie).

Reported: cost and comparisons at which each goal is first met (censored at the cap),
the adaptive rule's saving against each peer (median over seeds of the paired ratio), and
coverage at the stopping time: the joint rank intervals hold every true rank, and the 95%
marginal intervals of every mu_i - mu_j; after a fixed budget (``--parts coverage``), the
coverage and mean squared z of every mu_i - mu_j under the designs of
:data:`COVERAGE_DESIGNS` (``--methods`` picks them), and with ``--parts pairs`` the same
runs again with the coverage of groups of pairs (by true gap, neighbours, comparisons);
``--coverage-start`` and ``--prompts`` and ``--rho`` change the random start's cost, the
prompt pool and the coupling of verdicts on a prompt, and such runs are kept apart as
variants.  Also: ``plan()``'s predicted power against simulated power, and the MT-Bench
replay (comparisons needed to reach the full data's top 3 with joint confidence, in the
order ``next_comparisons`` asks for against random order).

Run (nice'd, single-threaded BLAS, about an hour on two shared cores)::

    OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_adaptive.py --seeds 20
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import hja_bayes as hb
from hja_bayes.comparisons import aggregate_cells
from hja_bayes.inference.ranking import rank_intervals, simultaneous_critical_value

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
COSTS = np.array([1.0, 1.0, 10.0])
JUDGES = ("llm", "noisy", "costly")
GAMMA = np.array([1.0, 0.3, 1.7])  # scaled to sum 3 below
BETA = np.array([0.3, 0.1, -0.2])
PROMPTS = 2000
RHO = 0.3
MARGIN = 0.2
LEVEL = 0.95
DRAWS = 5000  # critical-value draws per check (the package's default is 20,000)


# ----------------------------------------------------------------------------- truth
class Truth:
    """A rank-1 panel: evenly spread consensus (normal quantiles), three judges, biases,
    answer qualities per (prompt, model) for the copula."""

    def __init__(self, n_items: int, seed: int, spread: float = 1.0, heterogeneity: float = 0.3):
        from scipy.special import ndtri

        rng = np.random.default_rng(10_000 + seed)
        N = n_items
        mu = spread * ndtri((N - np.arange(N) - 0.5) / N)
        mu = mu[rng.permutation(N)]
        mu -= mu.mean()
        gamma = GAMMA * 3 / GAMMA.sum()
        Q, _ = np.linalg.qr(np.column_stack([np.ones(N), mu, rng.standard_normal(N)]))
        V = np.sqrt(N) * Q[:, 2]
        U = rng.standard_normal(3)
        U -= U.mean()
        R = np.outer(U, V)
        R *= heterogeneity * np.linalg.norm(np.outer(gamma, mu)) / np.linalg.norm(R)
        self.S = np.outer(gamma, mu) + R
        self.mu = self.S.mean(axis=0)
        self.N = N
        self.quality = rng.standard_normal((PROMPTS, N))
        self.order = np.argsort(-self.mu)
        self.rank = np.empty(N, dtype=int)
        self.rank[self.order] = np.arange(1, N + 1)

    def draw(self, rng, k, i, j, q):
        """First-shown wins (0/1) for verdicts (k, i, j) on prompts q."""
        from scipy.special import expit, ndtr

        p = expit(BETA[k] + self.S[k, i] - self.S[k, j])
        latent = np.sqrt(RHO) * (self.quality[q, i] - self.quality[q, j]) / np.sqrt(2) \
            + np.sqrt(1 - RHO) * rng.standard_normal(len(k))
        return (ndtr(-latent) < p).astype(float)


def comparisons(truth: Truth, k, i, j, q, y, w=None):
    """Rows -> Comparisons with prompts (clusters), naming only the judges present; with
    ``w``, each verdict counts ``w`` times (fractional counts: a weighted fit)."""
    w = np.ones(len(y)) if w is None else w
    counts = np.column_stack([w * y, np.zeros_like(y), w * (1 - y)])
    present, k = np.unique(k, return_inverse=True)
    return aggregate_cells(tuple(JUDGES[x] for x in present),
                           tuple(f"m{x:02d}" for x in range(truth.N)), k, i, j, counts,
                           cluster=q, cluster_names=tuple(f"q{x}" for x in range(PROMPTS)),
                           rows_read=len(k), rows_used=len(k))


# ------------------------------------------------------------------------ allocation
def _until(rng, spend, judges):
    """How many of the judges (drawn in order) it takes to spend ``spend``."""
    return int(np.searchsorted(np.cumsum(COSTS[judges]), spend) + 1)


def random_rows(rng, N, spend):
    """Uniform judge and ordered pair until ``spend`` is used; prompts uniform."""
    n = int(2 * spend / COSTS.min()) + 10
    k = rng.integers(3, size=n)
    n = min(_until(rng, spend, k), n)
    i = rng.integers(N, size=n)
    j = (i + rng.integers(1, N, size=n)) % N
    return k[:n], i, j, rng.integers(PROMPTS, size=n)


def arena_rows(rng, N, spend, n_pair, win_pair, chunks: int = 50):
    """Chatbot Arena's rule for pairs (battle counts updated in 50 chunks per round, the
    win rates fixed within a round), judge uniform, order random, prompts uniform."""
    a, b = np.triu_indices(N, 1)
    n = n_pair[a, b].astype(float).copy()
    p = (win_pair[a, b] + 1) / (n + 2)
    s2 = p * (1 - p)
    k_all = rng.integers(3, size=int(2 * spend / COSTS.min()) + 10)
    total = min(_until(rng, spend, k_all), len(k_all))
    pairs = []
    for size in np.diff(np.linspace(0, total, chunks + 1).round().astype(int)):
        if size == 0:
            continue
        safe = np.maximum(n, 0.5)
        weight = np.sqrt(s2 / safe) - np.sqrt(s2 / (safe + 1))
        c = rng.choice(len(a), size=size, p=weight / weight.sum())
        np.add.at(n, c, 1)
        pairs.append(c)
    c = np.concatenate(pairs)
    swap = rng.random(len(c)) < 0.5
    first, second = np.where(swap, b[c], a[c]), np.where(swap, a[c], b[c])
    return k_all[:total], first, second, rng.integers(PROMPTS, size=total)


def adaptive_rows(fit, spend, goal, seed, N, prompt_rng=None, level=LEVEL):
    """``next_comparisons``'s rows; with ``prompt_rng``, prompts drawn uniformly instead of
    by its answer-spreading rule; ``level``: the joint level that decides the goal."""
    prompts = None if prompt_rng is not None else [f"q{x}" for x in range(PROMPTS)]
    table = hb.next_comparisons(fit, int(spend), goal=goal, k=3,
                                cost=dict(zip(JUDGES, COSTS)), tie_margin=MARGIN,
                                prompts=prompts, max_cost=spend, seed=seed, level=level)
    index = {name: x for x, name in enumerate(fit.items)}
    jdx = {name: x for x, name in enumerate(JUDGES)}
    q = (prompt_rng.integers(PROMPTS, size=len(table)) if prompt_rng is not None
         else table["prompt"].str[1:].astype(int).to_numpy())
    return (table["judge"].map(jdx).to_numpy(), table["model_a"].map(index).to_numpy(),
            table["model_b"].map(index).to_numpy(), q)


# ---------------------------------------------------------------------------- checks
def check(fit, truth: Truth):
    """(top separated?, which, ranks decided?, joint rank coverage, marginal coverage)."""
    wald = fit.wald_inference("cluster")
    mu, cov = wald.mu_covariance()
    c = simultaneous_critical_value(cov, LEVEL, draws=DRAWS)
    v = np.diag(cov)
    se = np.sqrt(np.clip(v[:, None] + v[None, :] - 2 * cov, 0, None))
    diff = mu[:, None] - mu[None, :]
    better = (diff - c * se > 0)
    N = len(mu)
    lower = 1 + better.sum(axis=0)
    upper = N - better.sum(axis=1)
    order = np.argsort(-mu)
    top3 = order[:3]
    separated = all(better[a, b] for a in top3 for b in order[3:])
    correct = separated and set(top3) == set(truth.order[:3])
    a, b = order[:-1], order[1:]
    d, s = diff[a, b], se[a, b]
    decided = (d - c * s > 0) | (np.abs(d) + c * s < MARGIN)
    ranks = bool(decided.all())
    joint = bool(np.all((lower <= truth.rank) & (truth.rank <= upper)))
    true_diff = truth.mu[:, None] - truth.mu[None, :]
    iu = np.triu_indices(N, 1)
    marginal = float(np.mean(np.abs(diff[iu] - true_diff[iu]) <= 1.959964 * se[iu]))
    return separated, correct, ranks, joint, marginal


# ------------------------------------------------------------------------------ runs
def run(truth: Truth, method: str, seed: int, cap: float, goal: str | None, log=None):
    """One run; returns per goal the cost, comparisons, correctness and coverage at the
    first check where the goal holds (None when the cap came first)."""
    N = truth.N
    rng = np.random.default_rng(seed)
    start_rng = np.random.default_rng(20_000 + seed)  # the same start for every method
    k, i, j, q = random_rows(start_rng, N, 0.05 * cap)
    draw_rng = np.random.default_rng(30_000 + seed)
    y = truth.draw(draw_rng, k, i, j, q)
    all_rows = [np.column_stack([k, i, j, q]), ]
    all_y = [y]
    fit = hb.fit_hja(comparisons(truth, k, i, j, q, y), rank=1, position_bias=True)
    spent = float(COSTS[k].sum())
    n_rows = len(k)
    n_pair = np.zeros((N, N))
    win_pair = np.zeros((N, N))

    def tally(k, i, j, y):
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        np.add.at(n_pair, (lo, hi), 1)
        np.add.at(win_pair, (lo, hi), np.where(i < j, y, 1 - y))

    tally(k, i, j, y)
    want = {goal: None}
    while True:
        separated, correct, ranks, joint, marginal = check(fit, truth)
        status = {"top": separated, "ranks": ranks}
        for g in want:
            if want[g] is None and status[g]:
                want[g] = {"cost": spent, "comparisons": n_rows, "correct": bool(correct)
                           if g == "top" else None, "joint_coverage": joint,
                           "marginal_coverage": marginal,
                           "per_judge": np.bincount(np.concatenate(all_rows)[:, 0],
                                                    minlength=3).tolist()}
        if all(v is not None for v in want.values()) or spent >= cap:
            break
        spend = min(max(0.1 * spent, 10.0), cap - spent)
        if method == "arena":
            new = arena_rows(rng, N, spend, n_pair, win_pair)
        else:
            new = _round_rows(method, fit, rng, spend, goal, seed, N)
        k, i, j, q = new
        if len(k) == 0:
            break
        y = truth.draw(draw_rng, k, i, j, q)
        tally(k, i, j, y)
        spent += float(COSTS[k].sum())
        n_rows += len(k)
        try:
            fit = fit.update(comparisons(truth, k, i, j, q, y))
        except hb.HJAError:
            all_rows.append(np.column_stack([k, i, j, q]))
            all_y.append(y)
            r = np.concatenate(all_rows)
            fit = hb.fit_hja(comparisons(truth, *r.T, np.concatenate(all_y)), rank=1,
                             position_bias=True)
            continue
        all_rows.append(np.column_stack([k, i, j, q]))
        all_y.append(y)
        if log:
            log(f"    {method:8s} spent {spent:9.0f} rows {n_rows:7d}")
    return want


# ------------------------------------------------------------------------- coverage
#: Designs of the fixed-budget coverage runs: the adaptive rule, uniform random allocation,
#: the adaptive rule with prompts drawn uniformly (not spread over answers), the adaptive
#: rule with 30% or 50% of each round's spending uniformly at random, the rule asked once
#: for the whole budget after the start (one adaptation) or at doubling budgets (four), and
#: a randomised rule with known probabilities fitted with importance weights
#: (:func:`weighted_rows`); the two-stage design (the start only chooses the design, the
#: intervals come from the second stage alone), and the rule deciding at level 0.995.
COVERAGE_DESIGNS = ("adaptive", "random", "adaptive_random_prompts", "adaptive_explore30",
                    "adaptive_explore50", "adaptive_once", "adaptive_doubling",
                    "adaptive_weighted20", "adaptive_two_stage", "adaptive_level995")
ONCE = ("adaptive_once", "adaptive_two_stage")  # the whole budget asked for after the start
EXPLORE = "adaptive_explore"  # + the share of each round spent at random, in percent
WEIGHTED = "adaptive_weighted"  # + the share of uniform allocation mixed in, in percent


def weighted_rows(fit, rng, spend, goal, seed, N, share):
    """A randomised round with known selection probabilities: every verdict's (judge,
    ordered pair) drawn independently from ``(1 - share)`` times the shares of what
    ``next_comparisons`` asks for this round plus ``share`` times uniform allocation, prompts
    uniform; each verdict weighted ``sqrt(uniform / its probability)`` (the square-root
    importance weights of adaptively weighted M-estimators, Zhang, Janson and Murphy 2021:
    with known probabilities the weighted scores have a conditional variance fixed in advance,
    that of uniform allocation, which is what lets such intervals keep their level in the
    limit; here, with prompts shared across rounds and 100 seeds, they covered 0.939)."""
    k, i, j, _ = adaptive_rows(fit, spend, goal, seed, N, prompt_rng=rng)
    units = 3 * N * N
    asked = np.bincount((k * N + i) * N + j, minlength=units).astype(float)
    judge, first, second = np.unravel_index(np.arange(units), (3, N, N))
    uniform = np.where(first != second, 1.0 / (3 * N * (N - 1)), 0.0)
    p = ((1 - share) * asked / asked.sum() + share * uniform) if asked.sum() > 0 else uniform
    n = int(2 * spend / COSTS.min()) + 10
    u = rng.choice(units, size=n, p=p)
    u = u[:min(_until(rng, spend, judge[u]), n)]
    return (judge[u], first[u], second[u], rng.integers(PROMPTS, size=len(u)),
            np.sqrt(uniform[u] / p[u]))


def _round_rows(method, fit, rng, spend, goal, seed, N):
    if method == "adaptive_level995":
        return adaptive_rows(fit, spend, goal, seed, N, level=0.995)
    if method == "random":
        return random_rows(rng, N, spend)
    if method == "adaptive_random_prompts":
        return adaptive_rows(fit, spend, goal, seed, N, prompt_rng=rng)
    if method.startswith(EXPLORE):
        share = int(method[len(EXPLORE):]) / 100
        parts = [random_rows(rng, N, share * spend)]
        if (1 - share) * spend >= 1:
            parts.append(adaptive_rows(fit, (1 - share) * spend, goal, seed, N))
        return tuple(np.concatenate(x) for x in zip(*parts))
    return adaptive_rows(fit, spend, goal, seed, N)


def _pair_z(fit, truth, cov_type: str = "cluster") -> np.ndarray:
    """The error of every estimated mu_i - mu_j (i < j) over its standard error."""
    mu, cov = fit.wald_inference(cov_type).mu_covariance()
    v = np.diag(cov)
    iu = np.triu_indices(truth.N, 1)
    se = np.sqrt(np.clip(v[:, None] + v[None, :] - 2 * cov, 0, None))[iu]
    err = (mu[:, None] - mu[None, :])[iu] - (truth.mu[:, None] - truth.mu[None, :])[iu]
    return err / se


#: Bins of the true gap |mu_i - mu_j| in the pair table (the upper edges).
GAP_BINS = (0.25, 0.5, 1.0, 2.0, np.inf)


def _pair_groups(fit, truth) -> dict:
    """The pairs i < j of one run by group: ``{label: (z, true gap)}`` by the true gap, by
    whether the two are neighbours in the true order, and by the pair's share of the run's
    comparisons (quartiles of the pairs, Q4 the most compared; any judge, either order)."""
    N = truth.N
    iu = np.triu_indices(N, 1)
    z = _pair_z(fit, truth)
    gap = (truth.mu[:, None] - truth.mu[None, :])[iu]
    d = fit.data
    n = np.zeros((N, N))
    np.add.at(n, (d.first, d.second), d.n)
    n = (n + n.T)[iu]
    neighbours = (np.abs(truth.rank[:, None] - truth.rank[None, :]) == 1)[iu]
    quartile = np.minimum(4 * np.argsort(np.argsort(n, kind="stable")) // n.size, 3)
    groups, lo = {}, 0.0
    for hi in GAP_BINS:
        groups[f"gap {lo:g} to {hi:g}"] = (np.abs(gap) >= lo) & (np.abs(gap) < hi)
        lo = hi
    groups["true neighbours"], groups["not neighbours"] = neighbours, ~neighbours
    for q in range(4):
        groups[f"comparisons Q{q + 1}"] = quartile == q
    groups["all pairs"] = np.ones(len(z), dtype=bool)
    return {label: (z[at], gap[at]) for label, at in groups.items()}


def _pair_summary(per_run: list[dict]) -> dict:
    """Per group, over the runs: pairs, coverage of the 95% intervals with its Monte Carlo
    se (a ratio over runs, since a run's pairs share its errors), mean squared z, and mean
    z signed by the true gap (above 0: the estimates overstate the gaps)."""
    out = {}
    for label in per_run[0]:
        n = np.array([len(r[label][0]) for r in per_run], dtype=float)
        covered = np.array([np.sum(np.abs(r[label][0]) <= 1.959964) for r in per_run])
        z = np.concatenate([r[label][0] for r in per_run])
        gap = np.concatenate([r[label][1] for r in per_run])
        c = covered.sum() / n.sum()
        se = (np.sqrt(len(n) / (len(n) - 1) * np.sum((covered - c * n) ** 2)) / n.sum()
              if len(n) > 1 else np.nan)
        out[label] = {"pairs": int(n.sum()), "coverage": float(c), "mcse": float(se),
                      "mean_z2": float(np.mean(z ** 2)),
                      "mean_signed_z": float(np.mean(z * np.sign(gap)))}
    return out


def fixed_budget_coverage(seeds: int, log, N: int = 12, start: float = 2_500.0,
                          budget: float = 25_000.0, goal: str = "ranks",
                          methods=("adaptive", "random"), pairs: bool = False,
                          seed_start: int = 0):
    """Coverage after spending a fixed budget (no data-dependent stopping): the designs of
    :data:`COVERAGE_DESIGNS` from the same start on the same truth; with ``pairs``, also
    the coverage of groups of pairs per design (:func:`_pair_groups`, :func:`_pair_summary`)."""
    out = {"N": N, "start": start, "budget": budget, "goal": goal, "runs": []}
    groups = {m: [] for m in methods}
    for seed in range(seed_start, seed_start + seeds):
        truth = Truth(N, 1_000 + seed)
        for method in methods:
            rng = np.random.default_rng(seed)
            k, i, j, q = random_rows(np.random.default_rng(20_000 + seed), N, start)
            draw_rng = np.random.default_rng(30_000 + seed)
            y = truth.draw(draw_rng, k, i, j, q)
            fit = hb.fit_hja(comparisons(truth, k, i, j, q, y), rank=1, position_bias=True)
            spent = float(COSTS[k].sum())
            second_stage = []
            while spent < budget:
                spend = min(budget if method in ONCE else spent if method == "adaptive_doubling"
                            else 0.1 * spent, budget - spent)
                w = None
                if method.startswith(WEIGHTED):
                    k, i, j, q, w = weighted_rows(fit, rng, spend, goal, seed, N,
                                                  int(method[len(WEIGHTED):]) / 100)
                elif method in ONCE + ("adaptive_doubling",):
                    k, i, j, q = adaptive_rows(fit, spend, goal, seed, N)
                else:
                    k, i, j, q = _round_rows(method, fit, rng, spend, goal, seed, N)
                if len(k) == 0:
                    break
                y = truth.draw(draw_rng, k, i, j, q)
                spent += float(COSTS[k].sum())
                if method == "adaptive_two_stage":  # fitted without the start
                    second_stage.append((k, i, j, q, y))
                    rows = (np.concatenate(x) for x in zip(*second_stage))
                    fit = hb.fit_hja(comparisons(truth, *rows), rank=1, position_bias=True)
                else:
                    fit = fit.update(comparisons(truth, k, i, j, q, y, w))
            _, _, _, joint, marginal = check(fit, truth)
            _, se = _pair_differences(fit, N)
            neighbours = (np.abs(truth.rank[:, None] - truth.rank[None, :]) == 1)[
                np.triu_indices(N, 1)]
            out["runs"].append({"seed": seed, "method": method, "cost": spent,
                                "joint_coverage": joint, "marginal_coverage": marginal,
                                "mean_z2": float(np.mean(_pair_z(fit, truth) ** 2)),
                                "neighbour_se": float(se[neighbours].mean()),
                                "by_covariance": _coverages(fit, truth)})
            if pairs:
                groups[method].append(_pair_groups(fit, truth))
        if (seed - seed_start) % 10 == 9:
            log(f"coverage: {seed - seed_start + 1} seeds")
    if pairs:
        out["pairs"] = {m: _pair_summary(g) for m, g in groups.items()}
    return out


def _coverage_rows(runs):
    """(design, table cells): seeds, joint and marginal coverage (MC se), mean squared z."""
    for m in COVERAGE_DESIGNS:
        mine = [r for r in runs if r["method"] == m]
        if not mine:
            continue
        n = len(mine)
        joint = np.array([r["joint_coverage"] for r in mine], dtype=float)
        marg = np.array([r["marginal_coverage"] for r in mine])
        z2 = [r["mean_z2"] for r in mine if "mean_z2" in r]
        z2 = f"{np.mean(z2):.3f}" if len(z2) == n else "-"
        se = [r["neighbour_se"] for r in mine if "neighbour_se" in r]
        se = f"{np.mean(se):.3f} ({len(se)} seeds)" if se else "-"
        other = [r["by_covariance"] for r in mine if "by_covariance" in r]
        other = (" / ".join(f"{np.mean([c[t] for c in other]):.3f}" for t in ("fisher", "sandwich"))
                 + f" ({len(other)} seeds)") if other else "-"
        yield m, (f"{n} | {joint.mean():.3f} ({joint.std(ddof=1) / np.sqrt(n):.3f}) | "
                  f"{marg.mean():.3f} ({marg.std(ddof=1) / np.sqrt(n):.3f}) | {z2} | {se} | "
                  f"{other}")


def _pair_table(by_pair, coverage) -> list[str]:
    """The pair groups' coverage after the fixed budget (``--parts pairs``), and how many of
    its runs ended where the same seed's run of the coverage table did."""
    summary = by_pair["pairs"]
    designs = [m for m in COVERAGE_DESIGNS if m in summary]
    seeds = len(by_pair["runs"]) // len(designs)
    table = {(r["seed"], r["method"]): r["marginal_coverage"] for r in coverage["runs"]}
    same = {m: sum(table.get((r["seed"], m)) == r["marginal_coverage"]
                   for r in by_pair["runs"] if r["method"] == m) for m in designs}
    lines = [
        f"Where the pairs lose coverage after the fixed budget ({seeds} seeds, `--parts pairs`: "
        "the coverage table's seeds and settings, run again with every pair recorded; runs "
        "ending with the same coverage as the table's: "
        + ", ".join(f"{m} {same[m]} of {seeds}" for m in designs)
        + "; the others took another path: fits that differ in their last digits (another "
        "machine, another version of the code) can change which comparison is asked next): "
        "marginal 95% coverage of mu_i - mu_j (MC se over seeds), the mean squared z, the mean z "
        "signed by the true gap (above 0: the estimates overstate the gaps) and the number "
        "of pairs, by the true gap |mu_i - mu_j|, by whether the two are neighbours in the "
        "true order, and by the pair's share of the run's comparisons (quartiles of the 66 "
        "pairs within each run, Q4 the most compared):", "",
        "| pairs | " + " | ".join(designs) + " |", "|---|" + "---|" * len(designs)]
    for label in summary[designs[0]]:
        cells = [summary[m][label] for m in designs]
        lines.append(f"| {label} | " + " | ".join(
            f"{c['coverage']:.3f} ({c['mcse']:.3f}); {c['mean_z2']:.2f}; "
            f"{c['mean_signed_z']:+.2f}; {c['pairs']}" for c in cells) + " |")
    return lines + [""]


def _coverages(fit, truth):
    """Marginal 95% coverage of every mu_i - mu_j under each covariance."""
    return {cov_type: float(np.mean(np.abs(_pair_z(fit, truth, cov_type)) <= 1.959964))
            for cov_type in ("cluster", "fisher", "sandwich")}


def _pair_differences(fit, N):
    """Every estimated mu_i - mu_j (i < j) and its cluster-robust standard error."""
    mu, cov = fit.wald_inference("cluster").mu_covariance()
    v = np.diag(cov)
    iu = np.triu_indices(N, 1)
    return ((mu[:, None] - mu[None, :])[iu],
            np.sqrt(np.clip(v[:, None] + v[None, :] - 2 * cov, 0, None))[iu])


def coverage_diagnosis(seeds: int, log, N: int = 12, start: float = 2_500.0,
                       budget: float = 25_000.0, replicates: int = 20):
    """Where the adaptive design's coverage goes: the adaptive run, and the same final
    design refitted on ``replicates`` fresh outcome sets, each with its prompts' answer
    qualities drawn afresh (so the design no longer depends on the data), without prompt
    dependence, and with a fresh prompt for every verdict (none reused across rounds).
    Per seed also, over the fresh outcome sets, each pair's spread of estimates over its
    mean cluster-robust standard error (1: the standard errors are right for that
    design)."""
    global RHO, PROMPTS
    saved = RHO, PROMPTS
    out = {}
    for name, rho, prompts in (("prompts reused, rho 0.3", 0.3, 2_000),
                               ("no prompt dependence, rho 0", 0.0, 2_000),
                               ("a fresh prompt for every verdict, rho 0.3", 0.3, 40_000)):
        RHO, PROMPTS = rho, prompts
        rows_out = []
        for seed in range(seeds):
            truth = Truth(N, 1_000 + seed)
            k, i, j, q = random_rows(np.random.default_rng(20_000 + seed), N, start)
            draw_rng = np.random.default_rng(30_000 + seed)
            y = truth.draw(draw_rng, k, i, j, q)
            rows = [np.column_stack([k, i, j, q])]
            fit = hb.fit_hja(comparisons(truth, k, i, j, q, y), rank=1, position_bias=True)
            spent = float(COSTS[k].sum())
            while spent < budget:
                spend = min(0.1 * spent, budget - spent)
                k, i, j, q = adaptive_rows(fit, spend, "ranks", seed, N)
                y = truth.draw(draw_rng, k, i, j, q)
                spent += float(COSTS[k].sum())
                fit = fit.update(comparisons(truth, k, i, j, q, y))
                rows.append(np.column_stack([k, i, j, q]))
            r = np.concatenate(rows)
            fresh, estimates, ses = [], [], []
            for m in range(replicates):
                rng = np.random.default_rng([99 + seed, m])
                fresh_truth = copy.copy(truth)  # the answers' qualities drawn afresh too
                fresh_truth.quality = rng.standard_normal(truth.quality.shape)
                y_fresh = fresh_truth.draw(rng, *r.T)
                refit = hb.fit_hja(comparisons(truth, *r.T, y_fresh), rank=1,
                                   position_bias=True)
                fresh.append(_coverages(refit, truth))
                d, se = _pair_differences(refit, N)
                estimates.append(d)
                ses.append(se)
            row = {"seed": seed, "adaptive": _coverages(fit, truth),
                   "same_design_fresh_outcomes": {c: float(np.mean([f[c] for f in fresh]))
                                                  for c in fresh[0]},
                   "fresh_share_below_0.8": float(np.mean([f["cluster"] < 0.8 for f in fresh]))}
            if replicates > 1:
                row["sd_over_se"] = np.round(np.std(estimates, axis=0, ddof=1)
                                             / np.mean(ses, axis=0), 4).tolist()
            rows_out.append(row)
        out[name] = rows_out
        log(f"coverage diagnosis, {name}: " + ", ".join(
            f"{kind} {np.mean([r[kind]['cluster'] for r in rows_out]):.3f}"
            for kind in ("adaptive", "same_design_fresh_outcomes")))
    RHO, PROMPTS = saved
    return {"N": N, "start": start, "budget": budget, "seeds": seeds,
            "replicates": replicates, "variants": out}


# --------------------------------------------------------------------------- plan()
class FittedTruth:
    """Scores and biases taken as the truth, prompts drawn afresh per study (copula)."""

    def __init__(self, S, beta):
        self.S, self.beta = np.asarray(S), np.asarray(beta)

    def draw(self, rng, k, i, j, q, prompts):
        from scipy.special import expit, ndtr

        quality = rng.standard_normal((prompts, self.S.shape[1]))
        p = expit(self.beta[k] + self.S[k, i] - self.S[k, j])
        latent = np.sqrt(RHO) * (quality[q, i] - quality[q, j]) / np.sqrt(2) \
            + np.sqrt(1 - RHO) * rng.standard_normal(len(k))
        return (ndtr(-latent) < p).astype(float)


def _study(rng, truth, T, prompts, names):
    K, N = truth.S.shape
    k = np.repeat(np.arange(K), T)
    i = rng.integers(N, size=len(k))
    j = (i + rng.integers(1, N, size=len(k))) % N
    q = rng.integers(prompts, size=len(k))
    y = truth.draw(rng, k, i, j, q, prompts)
    counts = np.column_stack([y, np.zeros_like(y), 1 - y])
    return aggregate_cells(JUDGES, names, k, i, j, counts, cluster=q,
                           cluster_names=tuple(f"q{x}" for x in range(prompts)))


def plan_check(replicates: int, log, n_items: int = 8, prompts: int = 400, seed: int = 0):
    """plan()'s joint power against simulated studies, at sizes planned for 0.5 .. 0.95."""
    truth0 = Truth(n_items, seed)
    rng = np.random.default_rng(seed)
    names = tuple(f"m{x:02d}" for x in range(n_items))
    # a large pilot on many prompts pins the intra-prompt correlation down
    K = 3
    pilot_T, pilot_prompts = 20_000, 2_000
    k = np.repeat(np.arange(K), pilot_T)
    i = rng.integers(n_items, size=len(k))
    j = (i + rng.integers(1, n_items, size=len(k))) % n_items
    q = rng.integers(pilot_prompts, size=len(k))
    y = FittedTruth(truth0.S, BETA).draw(rng, k, i, j, q, pilot_prompts)
    pilot = hb.fit_hja(aggregate_cells(JUDGES, names, k, i, j, np.column_stack(
        [y, np.zeros_like(y), 1 - y]), cluster=q, cluster_names=tuple(
        f"q{x}" for x in range(pilot_prompts))), rank=1, position_bias=True)
    truth = FittedTruth(pilot.S, pilot.beta)  # the plan's assumed truth, exactly
    order = np.argsort(-pilot.mu)
    rows = []
    for target in (0.5, 0.7, 0.8, 0.9, 0.95):
        planned = hb.plan(pilot, pairs="adjacent", power=target, prompts=prompts,
                          allocation="uniform")
        T = planned.comparisons_per_judge
        hits = 0
        t = time.time()
        for r in range(replicates):
            data = _study(rng, truth, T, prompts, names)
            fit = hb.fit_hja(data, rank=1, position_bias=True)
            mu, cov = fit.wald_inference("cluster").mu_covariance()
            c = simultaneous_critical_value(cov, LEVEL)
            v = np.diag(cov)
            a, b = order[:-1], order[1:]
            se = np.sqrt(v[a] + v[b] - 2 * cov[a, b])
            hits += bool(np.all(mu[a] - mu[b] > c * se))
        simulated = hits / replicates
        rows.append({"target": target, "comparisons_per_judge": T, "predicted": planned.power,
                     "simulated": simulated,
                     "mc_se": float(np.sqrt(simulated * (1 - simulated) / replicates)),
                     "icc": planned.icc, "design_effect": float(planned.curve.set_index(
                         "comparisons_per_judge").design_effect.get(T, np.nan)),
                     "critical_value": planned.critical_value, "seconds": time.time() - t})
        log(f"plan check: target {target}: T = {T}, predicted {planned.power:.3f}, "
            f"simulated {simulated:.3f} ({replicates} studies, {time.time() - t:.0f}s)")
    return {"n_items": n_items, "prompts": prompts, "replicates": replicates,
            "pilot_comparisons_per_judge": pilot_T, "pilot_prompts": pilot_prompts,
            "pairs": "adjacent (7), joint power, max-|t| over every pair, cluster-robust",
            "rows": rows}


# ------------------------------------------------------------------ MT-Bench replay
def _separations(fit):
    """The joint rank intervals' separations: {(winner, loser)} by name, and the mean
    rank-interval length."""
    mu, cov = fit.wald.mu_covariance()
    r = rank_intervals(mu, cov, LEVEL)
    pairs = {(fit.items[a], fit.items[b]) for a, b in zip(*np.nonzero(r.better))}
    return pairs, float(np.mean(r.upper - r.lower))


def _top_of(separated, items, k=3):
    """The set of k models separated from every other model, or None."""
    for top in [set(c) for c in __import__("itertools").combinations(items, k)]:
        if all((a, b) in separated for a in top for b in set(items) - top):
            return top
    return None


#: (target, start share, goal asked of next_comparisons, step share)
def _ask(fit, frame, pool, take, goal, seed):
    """next_comparisons among the verdicts still in the pool: (cells -> rows, the table)."""
    import pandas as pd

    left = frame.loc[sorted(pool)]
    left = left[left.judge.isin(fit.judges)]
    groups = left.groupby(["judge", "model_a", "model_b"]).groups
    cand = pd.DataFrame([(*key, len(idx)) for key, idx in groups.items()],
                        columns=["judge", "model_a", "model_b", "limit"])
    return groups, hb.next_comparisons(fit, min(take, int(cand.limit.sum())), goal=goal, k=3,
                                       candidates=cand, seed=seed)


REPLAYS = (("top3", 0.10, "top", 0.01), ("top3", 0.02, "top", 0.0025),
           ("all", 0.10, "tiers", 0.01), ("all", 0.02, "tiers", 0.0025))


def mtbench_replay(seeds: int, log, leave_out_locked: bool = False):
    """Replay MT-Bench's verdicts from a random start: in the order next_comparisons asks
    for (among the verdicts not yet played) or in random order, until the joint rank
    intervals separate the full data's top 3 ("top3"), or make every separation the full
    data make ("all").  ``leave_out_locked``: without the judges locked on one presentation
    slot (:mod:`hja_bayes.position_locked`), the full data's target included."""
    try:
        frame = hb.datasets.load_ja_ranking("mtbench")
    except hb.DataError as exc:
        log(f"MT-Bench replay skipped: {exc}")
        return {"skipped": str(exc)}
    frame = frame[frame.winner != "invalid"].reset_index(drop=True)
    read = dict(cluster="question_id")
    left_out = []
    if leave_out_locked:
        from hja_bayes.position_locked import locked_judges

        left_out = sorted(j.judge for j in locked_judges(hb.Comparisons.from_frame(frame, **read)))
        frame = frame[~frame.judge.isin(left_out)].reset_index(drop=True)
        log(f"MT-Bench replay without the locked judges {left_out}")
    full = hb.fit_hja(hb.Comparisons.from_frame(frame, **read), rank=1)
    full_pairs, full_width = _separations(full)
    target = _top_of(full_pairs, full.items)
    log(f"MT-Bench: full data top 3 {sorted(target) if target else None}, "
        f"{len(full_pairs)} separated pairs")
    n = len(frame)
    out = {"rows": n, "target_top3": sorted(target), "rank": 1, "left_out": left_out,
           "full_separations": sorted(map(list, full_pairs)), "cov_type": "cluster (question)",
           "full_mean_rank_interval": full_width, "runs": []}
    for name, start_share, goal, step_share in REPLAYS:
        n0, step = int(start_share * n), int(step_share * n)
        for seed in range(seeds):
            for method in ("adaptive", "random"):
                rng = np.random.default_rng(seed)
                perm = rng.permutation(n)
                used = list(perm[:n0])
                pool = set(perm[n0:].tolist())
                fit = hb.fit_hja(hb.Comparisons.from_frame(frame.iloc[used], **read), rank=1)
                trajectory, reached = [], None
                while True:
                    try:
                        got, width = _separations(fit)
                    except hb.HJAError:  # too few verdicts to identify every judge's row
                        got, width = set(), float(len(fit.items) - 1)
                    done = (_top_of(got, fit.items) == target) if name == "top3" \
                        else got >= full_pairs
                    trajectory.append((len(used), bool(done), width))
                    if done:
                        reached = len(used)
                        break
                    if not pool:
                        break
                    take = min(step, len(pool))
                    asked = None
                    if method == "adaptive":
                        try:
                            asked = _ask(fit, frame, pool, take, goal, seed)
                        except hb.HJAError:
                            asked = None  # not identified yet: this round at random
                    if asked is None:
                        new = rng.choice(sorted(pool), take, replace=False).tolist()
                    else:
                        groups, asked = asked
                        new = []
                        for key, count in asked.groupby(
                                ["judge", "model_a", "model_b"]).size().items():
                            new += rng.choice(np.asarray(groups[key]), count,
                                              replace=False).tolist()
                    pool -= set(new)
                    used += new
                    try:
                        fit = fit.update(frame.loc[new], **read)
                    except hb.HJAError:
                        fit = hb.fit_hja(hb.Comparisons.from_frame(frame.iloc[used], **read),
                                         rank=1)
                out["runs"].append({"replay": name, "start": n0, "step": step, "goal": goal,
                                    "seed": seed,
                                    "method": method, "reached": reached,
                                    "trajectory": trajectory})
                log(f"MT-Bench {name} from {n0}: seed {seed} {method}: reached at {reached}")
    return out


# ---------------------------------------------------------------------------- report
def _value(entry, key, cap):
    """(value, censored) of a run's cost or comparisons at the goal (the cap when missed)."""
    return (cap, True) if entry is None else (entry[key], False)


def _per_seed(entries, goal, method, key, fill) -> np.ndarray:
    """Every seed's ``key`` (cost or comparisons) for a goal and method (``fill`` if capped)."""
    return np.array([_value(e[f"{goal}:{method}"], key, fill)[0] for e in entries])


def summarise(results) -> list[str]:
    """The Markdown report of the three parts."""
    lines = ["# Adaptive design: next_comparisons against random allocation and Arena's rule", ""]
    settings = results.get("settings", {})
    lines += [
        "`OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_adaptive.py` (see the script's "
        "docstring for the protocol; a shared 2-core machine, load average "
        f"{settings.get('load_start', float('nan')):.1f} at the start).", ""]
    sim = results.get("simulation")
    caps = results.get("caps", {})
    if sim:
        lines += [
            "## Simulated panels", "",
            f"K = 3 judges, costs {settings['costs']}, sensitivities gamma {settings['gamma']}, "
            f"position biases {settings['beta']}; rank 1 (disagreement 0.3 of the consensus); "
            "consensus scores at normal quantiles (N = 12: neighbouring gaps 0.21-0.58; "
            f"N = 40: 0.06-0.47); verdicts on {settings['prompts']} prompts, coupled within a "
            f"prompt by a Gaussian copula (rho {settings['copula_rho']}); joint level "
            f"{settings['level']}, cluster-robust covariance; tie margin {settings['tie_margin']} "
            "for the ranks goal. Every run starts from the same uniform random design "
            "worth 5% of its cost cap, then adds 10% of its spending per round; cost and "
            "comparisons are counted at the first check where the goal holds (capped runs count "
            "as the cap, which favours the peers). Savings: one minus the median over seeds of "
            "the paired ratio adaptive / peer."
            + (f" {results['simulation_note']}" if results.get("simulation_note") else ""), "",
            "| N | goal | cap (cost) | seeds | median cost to goal: adaptive / random / Arena | "
            "saving in cost vs random / vs Arena | median comparisons: adaptive / random / Arena "
            "| saving in comparisons vs random / vs Arena | goal missed within the cap: "
            "adaptive / random / Arena | joint rank coverage at the stop: adaptive / random / "
            "Arena | marginal 95% coverage of mu_i - mu_j: adaptive / random / Arena | top 3 "
            "correct (adaptive) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for N, entries in sim.items():
            for goal in ("top", "ranks"):
                key = f"{goal}:adaptive"
                if not entries or key not in entries[0]:
                    continue
                cap = caps.get(str(N), {}).get(goal, float("nan"))
                med, miss, ratio_cost, ratio_rows, joint, marginal = {}, {}, {}, {}, {}, {}
                for m in ("adaptive", "random", "arena"):
                    runs = [e[f"{goal}:{m}"] for e in entries]
                    costs = [_value(r, "cost", cap) for r in runs]
                    rows = [_value(r, "comparisons", np.nan) for r in runs]
                    med[m] = (np.median([c for c, _ in costs]),
                              np.nanmedian([c for c, _ in rows]))
                    miss[m] = sum(c for _, c in costs)
                    done = [r for r in runs if r is not None]
                    joint[m] = np.mean([r["joint_coverage"] for r in done]) if done else np.nan
                    marginal[m] = np.mean([r["marginal_coverage"] for r in done]) if done else np.nan
                spent = functools.partial(_per_seed, entries, goal)
                for m in ("random", "arena"):
                    ratio_cost[m] = 1 - np.median(spent("adaptive", "cost", cap)
                                                  / spent(m, "cost", cap))
                    ratio_rows[m] = 1 - np.nanmedian(spent("adaptive", "comparisons", np.nan)
                                                     / spent(m, "comparisons", np.nan))
                correct = [e[f"{goal}:adaptive"]["correct"] for e in entries
                           if e[f"{goal}:adaptive"] and goal == "top"]
                lines.append(
                    f"| {N} | {goal} | {cap:,.0f} | {len(entries)} | "
                    + " / ".join(f"{med[m][0]:,.0f}" for m in ("adaptive", "random", "arena"))
                    + f" | {ratio_cost['random']:.0%} / {ratio_cost['arena']:.0%} | "
                    + " / ".join(f"{med[m][1]:,.0f}" for m in ("adaptive", "random", "arena"))
                    + f" | {ratio_rows['random']:.0%} / {ratio_rows['arena']:.0%} | "
                    + " / ".join(str(miss[m]) for m in ("adaptive", "random", "arena"))
                    + " | " + " / ".join(f"{joint[m]:.2f}" for m in ("adaptive", "random", "arena"))
                    + " | " + " / ".join(f"{marginal[m]:.3f}" for m in ("adaptive", "random", "arena"))
                    + f" | {(f'{np.mean(correct):.2f}' if correct else '-')} |")
        lines += ["", "Share of the comparisons made by each judge (llm / noisy / costly), the "
                  "start included, at the goal:", "",
                  "| N | goal | adaptive | random | Arena |", "|---|---|---|---|---|"]
        for N, entries in sim.items():
            for goal in ("top", "ranks"):
                if not entries or f"{goal}:adaptive" not in entries[0]:
                    continue
                cells = []
                for m in ("adaptive", "random", "arena"):
                    counts = np.sum([e[f"{goal}:{m}"]["per_judge"] for e in entries
                                     if e[f"{goal}:{m}"]], axis=0)
                    cells.append(" / ".join(f"{c:.2f}" for c in counts / counts.sum()))
                lines.append(f"| {N} | {goal} | " + " | ".join(cells) + " |")
        lines.append("")
    explore = [(N, goal) for N, entries in (sim or {}).items() for goal in ("top", "ranks")
               if entries and f"{goal}:adaptive_explore30" in entries[0]]
    if explore:
        lines += [
            "With 30% of every round's spending uniformly at random and 70% as "
            "`next_comparisons` asks (`--methods adaptive_explore30`), on the same seeds "
            "(savings: one minus the median paired ratio):", "",
            "| N | goal | seeds | median cost to goal: 30% random / adaptive | saving in cost "
            "vs random / vs Arena | median comparisons: 30% random / adaptive | marginal 95% "
            "coverage of mu_i - mu_j at the stop |", "|---|---|---|---|---|---|---|"]
        for N, goal in explore:
            entries = sim[N]
            cap = caps.get(str(N), {}).get(goal, float("nan"))
            spent = functools.partial(_per_seed, entries, goal)
            mine = spent("adaptive_explore30", "cost", cap)
            saving = [1 - np.median(mine / spent(m, "cost", cap)) for m in ("random", "arena")]
            done = [e[f"{goal}:adaptive_explore30"] for e in entries]
            marginal = np.mean([r["marginal_coverage"] for r in done if r is not None])
            lines.append(
                f"| {N} | {goal} | {len(entries)} | {np.median(mine):,.0f} / "
                f"{np.median(spent('adaptive', 'cost', cap)):,.0f} | {saving[0]:.0%} / "
                f"{saving[1]:.0%} | "
                f"{np.nanmedian(spent('adaptive_explore30', 'comparisons', np.nan)):,.0f} / "
                f"{np.nanmedian(spent('adaptive', 'comparisons', np.nan)):,.0f} | "
                f"{marginal:.3f} |")
        lines.append("")
    more = results.get("simulation_more_seeds", {})
    if more:
        lines += [
            "Marginal 95% coverage of every mu_i - mu_j at the stop over more seeds: the "
            "seeds above and the further ones run with `--seed-start 20 --methods "
            "adaptive,adaptive_explore30` (MC se over seeds):", "",
            "| N | goal | design | seeds | coverage at the stop | median cost to goal |",
            "|---|---|---|---|---|---|"]
        for N, extra in more.items():
            entries = (sim or {}).get(N, []) + extra
            for goal in ("top", "ranks"):
                for m in ("adaptive", "adaptive_explore30"):
                    done = [e[f"{goal}:{m}"] for e in entries if e.get(f"{goal}:{m}")]
                    if not done:
                        continue
                    c = np.array([r["marginal_coverage"] for r in done])
                    lines.append(f"| {N} | {goal} | {m} | {len(c)} | {c.mean():.3f} "
                                 f"({c.std(ddof=1) / np.sqrt(len(c)):.3f}) | "
                                 f"{np.median([r['cost'] for r in done]):,.0f} |")
        lines.append("")
    cov = results.get("coverage")
    if cov:
        lines += [
            "## Coverage after a fixed budget", "",
            f"N = {cov['N']}, the simulated panel above; from a random start worth "
            f"{cov['start']:,.0f}, {cov['budget']:,.0f} spent in rounds of 10% either as "
            f"`next_comparisons(goal=\"{cov['goal']}\")` asks or uniformly at random "
            "(adaptive_once: the whole budget asked for at once after the start; "
            "adaptive_doubling: rounds as large as what was spent before them; "
            "adaptive_weighted20: each verdict drawn from 80% the rule's shares + 20% "
            "uniform, fitted with square-root importance weights toward uniform allocation; "
            "adaptive_two_stage: as adaptive_once, the intervals from the second stage's "
            "verdicts alone; adaptive_level995: the rule deciding at level 0.995); "
            "no data-dependent stopping (the goal rows above stop when the goal holds, which "
            "selects the estimates). 95% intervals, cluster-robust; MC se from the seeds. "
            "The last column: the mean standard error of the true neighbours' differences "
            "(the precision the design buys where the ranks goal needs it; recorded from "
            "2026-12-05 on)."
            + (f" {cov['note']}" if cov.get("note") else ""), "",
            "| design | seeds | joint rank coverage (nominal >= 0.95) | marginal coverage of "
            "every mu_i - mu_j (nominal 0.95) | mean squared z of mu_i - mu_j (nominal 1) | "
            "mean se of true neighbours' differences | marginal coverage under the Fisher / "
            "sandwich covariance |",
            "|---|---|---|---|---|---|---|"]
        lines += [f"| {m} | {cells} |" for m, cells in _coverage_rows(cov["runs"])] + [""]
    variants = results.get("coverage_variants")
    if variants:
        lines += [
            "The adaptive design after the same budget with another random start (cost), "
            "prompt pool or coupling of verdicts on a prompt (the same truths and seeds; "
            "`--coverage-start`, `--prompts`, `--rho`):", "",
            "| start (cost), prompts, rho | design | seeds | joint rank coverage | marginal "
            "coverage of every mu_i - mu_j | mean squared z | mean se of true neighbours' "
            "differences | Fisher / sandwich |", "|---|---|---|---|---|---|---|---|"]
        for cov in variants.values():
            lines += [f"| {cov['start']:,.0f}, {cov['prompts']:,}, {cov['rho']:g} | {m} | {cells} |"
                      for m, cells in _coverage_rows(cov["runs"])]
        lines.append("")
    by_pair = results.get("coverage_pairs")
    if by_pair:
        lines += _pair_table(by_pair, results.get("coverage", {"runs": []}))
    diag = results.get("coverage_diagnosis")
    if diag:
        reps = diag.get("replicates", 1)
        lines += [
            "Where the adaptive design's coverage goes (N = 12, the same budget, "
            f"{diag['seeds']} seeds; marginal 95% coverage of every mu_i - mu_j under the "
            "cluster-robust / Fisher / sandwich covariance, MC se of the cluster-robust one "
            "over seeds): the adaptive run itself, and the same final design refitted on "
            f"{reps} fresh outcome set(s), the answers' qualities drawn afresh (so that the "
            "design no longer depends on the data); "
            "the share of fits whose cluster-robust coverage falls below 0.8; and, over the fresh "
            "outcome sets, each pair's spread of estimates over its mean cluster-robust "
            "standard error (root mean square over pairs and seeds, so that it reads as the "
            "ratio of the variances; 1: right for that design):", "",
            "| setting | adaptive run | same design, fresh outcomes | fits below 0.8: "
            "adaptive / fresh | sd / se, fresh outcomes |", "|---|---|---|---|---|"]
        for name, runs in diag["variants"].items():
            cells = []
            for kind in ("adaptive", "same_design_fresh_outcomes"):
                c = np.array([r[kind]["cluster"] for r in runs])
                cells.append(" / ".join(f"{np.mean([r[kind][t] for r in runs]):.3f}"
                                        for t in ("cluster", "fisher", "sandwich"))
                             + f" ({c.std(ddof=1) / np.sqrt(len(c)):.3f})")
            low = [np.mean([r["adaptive"]["cluster"] < 0.8 for r in runs]),
                   np.mean([r.get("fresh_share_below_0.8", np.nan) for r in runs])]
            low = [f"{100 * x:.0f}%" if np.isfinite(x) else "-" for x in low]
            ratio = [x for r in runs for x in r.get("sd_over_se", [])]
            ratio = f"{np.sqrt(np.mean(np.square(ratio))):.3f}" if ratio else "-"
            lines.append(f"| {name} | {cells[0]} | {cells[1]} | {' / '.join(low)} | {ratio} |")
        lines.append("")
    plan = results.get("plan")
    if plan:
        lines += [
            "## plan(): predicted against simulated power", "",
            f"N = {plan['n_items']} models (the simulated panel's design at N = 8), K = 3, rank 1, "
            f"position biases; a pilot of {plan['pilot_comparisons_per_judge']:,} comparisons "
            f"per judge on {plan['pilot_prompts']:,} prompts gives the assumed truth (its "
            "estimates, from which the studies are then simulated) and the intra-prompt "
            f"correlation; each study spreads T comparisons per judge over {plan['prompts']} "
            f"prompts; {plan['pairs']}; {plan['replicates']} simulated studies per size.", "",
            "| target power | comparisons per judge | design effect | predicted | simulated "
            "(MC se) | difference |", "|---|---|---|---|---|---|"]
        for r in plan["rows"]:
            lines.append(f"| {r['target']} | {r['comparisons_per_judge']:,} | "
                         f"{r['design_effect']:.2f} | {r['predicted']:.3f} | "
                         f"{r['simulated']:.3f} ({r['mc_se']:.3f}) | "
                         f"{100 * (r['simulated'] - r['predicted']):+.1f} points |")
        lines.append("")
    mt = results.get("mtbench")
    if mt and "runs" in mt:
        lines += [
            "## MT-Bench replay", "",
            f"{mt['rows']:,} valid verdicts ("
            + (f"19 judges: without {', '.join(mt['left_out'])}, locked on one presentation "
               "slot" if mt.get("left_out") else "20 judges")
            + f", 6 models, 80 questions), rank 1, "
            f"{mt['cov_type']} covariance. The full data's joint rank intervals separate the "
            f"top 3 {mt['target_top3']} from the rest and make {len(mt['full_separations'])} "
            "separations in all. From a random start, verdicts are replayed in the order "
            "`next_comparisons` asks for (among those not yet played; goal \"top\" for the "
            "top 3, \"tiers\" for all separations) or at random, a step at a time, until the "
            "target holds.", "",
            "| target | start | step | seeds | median verdicts to target: adaptive / random | "
            "saving (median paired ratio) | reached at the start: adaptive / random | "
            "never reached: adaptive / random |", "|---|---|---|---|---|---|---|---|"]
        groups = {}
        for r in mt["runs"]:
            groups.setdefault((r["replay"], r["start"], r["step"]), {}).setdefault(
                r["method"], {})[r["seed"]] = r["reached"]
        for (name, start, step), by in groups.items():
            seeds = sorted(by["adaptive"])
            a = np.array([by["adaptive"][s] or mt["rows"] for s in seeds], dtype=float)
            b = np.array([by["random"][s] or mt["rows"] for s in seeds], dtype=float)
            lines.append(
                f"| {name} | {start} | {step} | {len(seeds)} | {np.median(a):,.0f} / "
                f"{np.median(b):,.0f} | {1 - np.median(a / b):.0%} | {int(np.sum(a == start))} / "
                f"{int(np.sum(b == start))} | "
                f"{sum(by['adaptive'][s] is None for s in seeds)} / "
                f"{sum(by['random'][s] is None for s in seeds)} |")
        lines.append("")
    elif mt:
        lines += ["## MT-Bench replay", "", f"skipped: {mt['skipped']}", ""]
    return lines


def main(argv=None):
    global PROMPTS, RHO
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--seed-start", type=int, default=0,
                        help="first seed (to split a run over processes; --merge joins them)")
    parser.add_argument("--sizes", default="12,40")
    parser.add_argument("--caps", default="100000:400000,2000000:6000000",
                        help="cost caps per size, top:ranks (the start design is 5%% of it)")
    parser.add_argument("--out", default=str(RESULTS / "adaptive"))
    parser.add_argument("--parts", default="sim,plan,mtbench")
    parser.add_argument("--goals", default="top,ranks")
    parser.add_argument("--methods", default="adaptive,random,arena")
    parser.add_argument("--plan-replicates", type=int, default=1000)
    parser.add_argument("--mtbench-seeds", type=int, default=20)
    parser.add_argument("--leave-out-locked", action="store_true",
                        help="MT-Bench replay without the judges locked on one slot")
    parser.add_argument("--coverage-seeds", type=int, default=100)
    parser.add_argument("--diagnosis-seeds", type=int, default=30)
    parser.add_argument("--diagnosis-replicates", type=int, default=20,
                        help="fresh outcome sets per final design in --parts diagnosis")
    parser.add_argument("--merge", default="",
                        help="with --parts report: JSON files of parts run separately")
    parser.add_argument("--coverage-start", type=float, default=2_500.0,
                        help="with --parts coverage: cost of the random start")
    parser.add_argument("--prompts", type=int, default=PROMPTS, help="the prompt pool")
    parser.add_argument("--rho", type=float, default=RHO,
                        help="the copula's coupling of verdicts on one prompt")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    variant = (args.coverage_start, args.prompts, args.rho) != (2_500.0, PROMPTS, RHO)
    if variant and args.parts != "coverage":
        parser.error("--coverage-start, --prompts and --rho go with --parts coverage alone")
    PROMPTS, RHO = args.prompts, args.rho
    log = (lambda s: print(s, file=sys.stderr, flush=True))
    path = Path(args.out + ".json")
    previous = json.loads(path.read_text()) if path.exists() else {}
    load_start = previous.get("settings", {}).get("load_start", os.getloadavg()[0])
    results = {**previous, "settings": {"costs": dict(zip(JUDGES, COSTS.tolist())),
                            "gamma": dict(zip(JUDGES, (GAMMA * 3 / GAMMA.sum()).round(3).tolist())),
                            "beta": dict(zip(JUDGES, BETA.tolist())), "prompts": PROMPTS,
                            "copula_rho": RHO, "tie_margin": MARGIN, "level": LEVEL,
                            "rank": 1, "load_start": load_start}}
    if variant and "settings" in previous:  # the main runs' settings stay
        results["settings"] = previous["settings"]
    t0 = time.time()
    parts = args.parts.split(",")
    if "sim" in parts:
        sizes = [int(s) for s in args.sizes.split(",")]
        caps = [[float(x) for x in c.split(":")] for c in args.caps.split(",")]
        goals = args.goals.split(",")
        sim = {}
        for N, cap in zip(sizes, caps):
            sim[N] = []
            for seed in range(args.seed_start, args.seed_start + args.seeds):
                truth = Truth(N, seed)
                entry = {"seed": seed}
                for goal in goals:
                    goal_cap = cap[0] if goal == "top" else cap[1]
                    for method in args.methods.split(","):
                        t = time.time()
                        entry[f"{goal}:{method}"] = run(truth, method, seed, goal_cap, goal,
                                                        log if args.verbose else None)[goal]
                        entry[f"{goal}:{method}:seconds"] = time.time() - t
                sim[N].append(entry)
                log(f"N={N} seed {seed}: " + "; ".join(
                    f"{key} {value['cost'] if value else None}" for key, value in entry.items()
                    if key.count(":") == 1 and key != "seed")
                    + f"  [{time.time() - t0:.0f}s, load {os.getloadavg()[0]:.1f}]")
                results["simulation"] = {str(n): v for n, v in sim.items()}
                Path(args.out + ".json").write_text(json.dumps(results, indent=1))
    if "sim" in parts or ("report" in parts and "caps" not in results):
        results["caps"] = {str(n): {"top": c[0], "ranks": c[1]} for n, c in zip(
            [int(x) for x in args.sizes.split(",")],
            [[float(x) for x in c.split(":")] for c in args.caps.split(",")])}
        Path(args.out + ".json").write_text(json.dumps(results, indent=1))
    if "mtbench" in parts:
        results["mtbench"] = mtbench_replay(args.mtbench_seeds, log, args.leave_out_locked)
        Path(args.out + ".json").write_text(json.dumps(results, indent=1))
    if "coverage" in parts:  # the designs and seeds not run keep their earlier runs
        methods = [m for m in args.methods.split(",") if m in COVERAGE_DESIGNS]
        coverage = fixed_budget_coverage(args.coverage_seeds, log, methods=methods,
                                         start=args.coverage_start, seed_start=args.seed_start)
        if not variant:
            ran = range(args.seed_start, args.seed_start + args.coverage_seeds)
            coverage["runs"] += [r for r in previous.get("coverage", {}).get("runs", [])
                                 if r["method"] not in methods or r["seed"] not in ran]
            results["coverage"] = coverage
        else:  # another start, pool or coupling: a variant, kept apart
            coverage.update(prompts=PROMPTS, rho=RHO)
            label = f"start {args.coverage_start:,.0f}, {PROMPTS:,} prompts, rho {RHO:g}"
            results.setdefault("coverage_variants", {})[label] = coverage
        Path(args.out + ".json").write_text(json.dumps(results, indent=1))
    if "pairs" in parts:  # the fixed-budget runs again, recording every pair
        methods = [m for m in args.methods.split(",") if m in COVERAGE_DESIGNS]
        results["coverage_pairs"] = fixed_budget_coverage(args.coverage_seeds, log,
                                                          methods=methods, pairs=True)
        Path(args.out + ".json").write_text(json.dumps(results, indent=1))
    if "diagnosis" in parts:
        results["coverage_diagnosis"] = coverage_diagnosis(args.diagnosis_seeds, log,
                                                           replicates=args.diagnosis_replicates)
        Path(args.out + ".json").write_text(json.dumps(results, indent=1))
    if "plan" in parts:
        results["plan"] = plan_check(args.plan_replicates, log)
        Path(args.out + ".json").write_text(json.dumps(results, indent=1))
    if "report" in parts:  # merge the parts run separately, then write the Markdown
        for extra in args.merge.split(",") if args.merge else []:
            other = json.loads(Path(extra).read_text())
            results.update({k: v for k, v in other.items()
                            if k in ("plan", "mtbench", "coverage", "coverage_diagnosis",
                                     "coverage_pairs")})
            for n, entries in other.get("simulation", {}).items():  # seeds or methods run
                mine = {e["seed"]: e for e in results.setdefault("simulation", {}).get(n, [])}
                for e in entries:  # elsewhere: later files win, key by key
                    mine.setdefault(e["seed"], {}).update(e)
                results["simulation"][n] = [mine[s] for s in sorted(mine)]
        Path(args.out + ".md").write_text("\n".join(summarise(results)) + "\n")
    if not isinstance(results.get("seconds"), dict):
        results["seconds"] = {"sim": results["seconds"]} if "seconds" in results else {}
    results["seconds"][args.parts] = time.time() - t0
    results["settings"]["load_end"] = os.getloadavg()[0]
    Path(args.out + ".json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
