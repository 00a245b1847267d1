"""Few verdicts per judge: coverage of the Wald intervals, the warning, and the posterior.

Rank-0 panels from ``simulate`` (the truth S = gamma mu^T, gamma averaging 1) with K judges,
N models and a fixed number of verdicts per judge, no prompts (so the default covariance is
Fisher's).  For each panel: whether the 95% Wald intervals of every mu_i - mu_j and every
gamma_k cover the truth, the judges' median standard error of gamma_k, and whether the
few-verdicts warning (``hja_bayes.inference.few_verdicts``) was raised.

* ``--parts wald``: the grid of designs, each row's coverage with its Monte Carlo standard
  error (from the per-panel coverage, since the intervals of one panel are dependent), and the
  same panels grouped by their own median se(gamma_k).
* ``--parts higher_rank``: panels of rank 1 and 2 fitted at their rank: the same coverage
  figures.
* ``--parts bayes``: on three of the designs, the 95% equal-tailed posterior intervals of
  ``sample_hja`` (2 chains x (300 + 500), default priors) against the Wald intervals of the
  same panels.
* ``--parts many_judges``: panels of 50, 100 and 300 judges (crowd raters) over 10 models:
  Wald coverage, the scores' inflation (the least-squares slope of the estimated on the
  true differences, minus 1), the warning's ``inflation_shift`` and who is warned, with the
  rule of median se(gamma_k) alone and with the shift as well; then the posterior on three
  of those designs (``--many-seeds`` and ``--bayes-seeds`` panels).
* ``--parts empirical``: the posterior with ``HJAPriors(gamma_scale="empirical")`` on those
  three designs and two small ones (20 and 5 judges of 20 verdicts).

Usage: ``python benchmarks/bench_few_verdicts.py [--seeds 200] [--bayes-seeds 60]
[--many-seeds 100] [--parts wald,higher_rank,bayes,many_judges,empirical]``.  Writes
``benchmarks/results/few_verdicts.json`` and ``.md``, keeping the parts not run from an
earlier run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

import hja_bayes as hb
from hja_bayes.bayes import HJAPriors
from hja_bayes.inference.few_verdicts import FEW_VERDICTS_SE, INFLATION_SHIFT, inflation_shift

OUT = Path(__file__).parent / "results"
DESIGNS = [(3, 5), (5, 10), (10, 20), (20, 10)]  # (judges, models)
PER_JUDGE = (20, 50, 100, 200, 400)
BAYES = [(20, 10, 0, 20), (5, 10, 0, 20), (10, 10, 1, 50)]  # (judges, models, rank, verdicts)
HIGHER = [(5, 8, 1, 40), (5, 8, 1, 100), (10, 10, 1, 50), (10, 10, 1, 200), (5, 8, 2, 100)]
BUCKETS = (0.0, 0.15, 0.2, 0.25, 0.3, 0.4, np.inf)
MANY = [(K, 10, n) for K in (50, 100, 300) for n in (20, 50, 100, 200)]
MANY_BAYES = [(100, 10, 0, 20), (300, 10, 0, 20), (300, 10, 0, 100)]
EMPIRICAL = MANY_BAYES + [(20, 10, 0, 20), (5, 10, 0, 20)]


def covered(lower, upper, truth) -> float:
    return float(np.mean((lower <= truth) & (truth <= upper)))


def wald_panel(K: int, N: int, per_judge: int, seed: int, rank: int = 0):
    """Data, truth and the Wald coverage figures of one simulated panel."""
    data, truth = hb.simulate(n_judges=K, n_items=N, rank=rank,
                              comparisons_per_judge=per_judge, seed=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = hb.fit_hja(data, rank=rank)
        table = fit.intervals()
        mu, cov = fit.wald.mu_covariance()
    warned = any("rest on few verdicts" in str(w.message) for w in caught)
    drifted = any("drifting towards judges" in str(w.message) for w in caught)
    a, b = np.triu_indices(N, 1)
    diff = table[table.quantity == "mu_diff"]
    gamma = table[table.quantity == "gamma"]
    true = truth.mu[a] - truth.mu[b]
    estimate = mu[a] - mu[b]
    return data, truth, {
        "mu_diff": covered(diff.lower.values, diff.upper.values, true),
        "gamma": covered(gamma.lower.values, gamma.upper.values, truth.gamma),
        "se_gamma": float(np.median(gamma.se.values)), "warned": warned, "drifted": drifted,
        "inflation": float(estimate @ true / (true @ true) - 1),
        "shift": inflation_shift(gamma.se.values, mu, cov)}


def mean_mcse(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else np.nan


def design_row(got: list[dict], **keys) -> dict:
    """One design's row: its keys, the panels' median se(gamma_k), the share warned, and the
    coverage of mu_i - mu_j and gamma_k with their Monte Carlo standard errors."""
    row = dict(keys, se_gamma_median=float(np.median([g["se_gamma"] for g in got])),
               warned=float(np.mean([g["warned"] for g in got])))
    for q in ("mu_diff", "gamma"):
        row[q], row[q + "_mcse"] = mean_mcse([g[q] for g in got])
    return row


def part_wald(seeds: int) -> dict:
    rows, panels = [], []
    for K, N in DESIGNS:
        for per_judge in PER_JUDGE:
            t = time.time()
            got = [wald_panel(K, N, per_judge, seed)[2] for seed in range(seeds)]
            for g in got:
                panels.append(dict(g, K=K))
            row = design_row(got, K=K, N=N, per_judge=per_judge, seeds=seeds)
            rows.append(row)
            print(f"K={K} N={N} {per_judge} verdicts/judge: mu_diff {row['mu_diff']:.3f} "
                  f"({row['mu_diff_mcse']:.3f}), gamma {row['gamma']:.3f}, median se(gamma) "
                  f"{row['se_gamma_median']:.3f}, warned {row['warned']:.2f} "
                  f"[{time.time() - t:.0f} s]", flush=True)
    buckets = []
    for lo, hi in zip(BUCKETS[:-1], BUCKETS[1:]):
        inside = [p for p in panels if lo <= p["se_gamma"] < hi]
        if inside:
            mu, mu_se = mean_mcse([p["mu_diff"] for p in inside])
            g, g_se = mean_mcse([p["gamma"] for p in inside])
            buckets.append({"se_gamma": [lo, hi], "panels": len(inside), "mu_diff": mu,
                            "mu_diff_mcse": mu_se, "gamma": g, "gamma_mcse": g_se,
                            "by_K": {K: float(np.mean([p["mu_diff"] for p in inside
                                                       if p["K"] == K]))
                                     for K, _ in DESIGNS if any(p["K"] == K for p in inside)}})
    return {"designs": rows, "buckets": buckets, "split": split_by_warning(panels)}


def split_by_warning(panels: list[dict]) -> dict:
    """Coverage of the panels with and without the few-verdicts warning, and of those whose
    fit drifted towards no consensus (its ConvergenceWarning)."""
    split = {}
    for name, keep in (("warned", lambda p: p["warned"]), ("not warned", lambda p: not p["warned"]),
                       ("drifting to no consensus", lambda p: p["drifted"])):
        inside = [p for p in panels if keep(p)]
        if not inside:
            continue
        split[name] = {
            "panels": len(inside),
            "mu_diff": mean_mcse([p["mu_diff"] for p in inside]),
            "gamma": mean_mcse([p["gamma"] for p in inside])}
    return split


def part_higher_rank(seeds: int) -> dict:
    rows, panels = [], []
    for K, N, rank, per_judge in HIGHER:
        got = [wald_panel(K, N, per_judge, seed, rank)[2] for seed in range(seeds)]
        panels += got
        row = design_row(got, K=K, N=N, rank=rank, per_judge=per_judge, seeds=seeds)
        rows.append(row)
        print(f"K={K} N={N} rank {rank}, {per_judge} verdicts/judge: mu_diff "
              f"{row['mu_diff']:.3f} ({row['mu_diff_mcse']:.3f}), gamma {row['gamma']:.3f}, "
              f"median se(gamma) {row['se_gamma_median']:.3f}, warned {row['warned']:.2f}",
              flush=True)
    return {"designs": rows, "split": split_by_warning(panels)}


def part_many_judges(seeds: int) -> list[dict]:
    rows = []
    for K, N, per_judge in MANY:
        t = time.time()
        got = [wald_panel(K, N, per_judge, seed)[2] for seed in range(seeds)]
        row = design_row(got, K=K, N=N, per_judge=per_judge, seeds=seeds)
        row["inflation"], row["inflation_mcse"] = mean_mcse([g["inflation"] for g in got])
        row["shift_median"] = float(np.median([g["shift"] for g in got]))
        row["warned_by_se_alone"] = float(np.mean([g["se_gamma"] > FEW_VERDICTS_SE
                                                   for g in got]))
        rows.append(row)
        print(f"K={K} N={N} {per_judge} verdicts/judge: mu_diff {row['mu_diff']:.3f} "
              f"({row['mu_diff_mcse']:.3f}), inflation {row['inflation']:.3f}, shift "
              f"{row['shift_median']:.2f}, warned {row['warned']:.2f} (by se alone "
              f"{row['warned_by_se_alone']:.2f}) [{time.time() - t:.0f} s]", flush=True)
    return rows


def part_bayes(seeds: int, designs=BAYES, priors=None) -> list[dict]:
    rows = []
    for K, N, rank, per_judge in designs:
        t = time.time()
        got = []
        for seed in range(seeds):
            data, truth, wald = wald_panel(K, N, per_judge, seed, rank)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", hb.HJAWarning)
                post = hb.sample_hja(data, rank=rank, num_chains=2, num_warmup=300,
                                     num_samples=500, seed=seed, progress_bar=False,
                                     priors=priors or HJAPriors())
            mu = post.posterior["mu"].values.reshape(-1, N)
            gamma = post.posterior["gamma"].values.reshape(-1, K)
            a, b = np.triu_indices(N, 1)
            lo, hi = np.quantile(mu[:, a] - mu[:, b], [0.025, 0.975], axis=0)
            glo, ghi = np.quantile(gamma, [0.025, 0.975], axis=0)
            got.append({"bayes_mu_diff": covered(lo, hi, truth.mu[a] - truth.mu[b]),
                        "bayes_gamma": covered(glo, ghi, truth.gamma),
                        "wald_mu_diff": wald["mu_diff"], "wald_gamma": wald["gamma"],
                        "gamma_scale": float(post.posterior.attrs["gamma_scale"])})
        row = {"K": K, "N": N, "rank": rank, "per_judge": per_judge, "seeds": seeds,
               "seconds": time.time() - t,
               "gamma_scale_median": float(np.median([g["gamma_scale"] for g in got]))}
        for q in ("bayes_mu_diff", "wald_mu_diff", "bayes_gamma", "wald_gamma"):
            row[q], row[q + "_mcse"] = mean_mcse([g[q] for g in got])
        rows.append(row)
        print(f"K={K} N={N} rank {rank}, {per_judge} verdicts/judge, {seeds} seeds: mu_diff "
              f"posterior {row['bayes_mu_diff']:.3f} ({row['bayes_mu_diff_mcse']:.3f}) against "
              f"Wald {row['wald_mu_diff']:.3f} ({row['wald_mu_diff_mcse']:.3f}); gamma "
              f"{row['bayes_gamma']:.3f} against {row['wald_gamma']:.3f}", flush=True)
    return rows


def markdown(result: dict) -> str:
    lines = ["# Few verdicts per judge: Wald coverage, the warning, the posterior", "",
             f"`python benchmarks/bench_few_verdicts.py` ({result['when']}, load "
             f"{result['load'][0]:.1f}-{result['load'][1]:.1f}). Rank-0 panels simulated with "
             "`simulate` (no prompts: Fisher intervals), 95% intervals, coverage over every "
             "mu_i - mu_j and every gamma_k of a panel, averaged over panels (Monte Carlo "
             "standard error in brackets). The warning fires where the judges' median "
             f"se(gamma_k) is above {FEW_VERDICTS_SE:g}.", ""]
    wald = result.get("wald")
    if wald:
        lines += ["| judges | models | verdicts per judge | panels | mu_i - mu_j | gamma_k | "
                  "median se(gamma_k) | warned |", "|---|---|---|---|---|---|---|---|"]
        for r in wald["designs"]:
            lines.append(f"| {r['K']} | {r['N']} | {r['per_judge']} | {r['seeds']} | "
                         f"{r['mu_diff']:.3f} ({r['mu_diff_mcse']:.3f}) | {r['gamma']:.3f} "
                         f"({r['gamma_mcse']:.3f}) | {r['se_gamma_median']:.3f} | "
                         f"{r['warned']:.0%} |")
        lines += ["", "Every panel above, grouped by its own median se(gamma_k):", "",
                  "| median se(gamma_k) | panels | mu_i - mu_j | gamma_k | mu_i - mu_j by "
                  "number of judges |", "|---|---|---|---|---|"]
        for b in wald["buckets"]:
            lo, hi = b["se_gamma"]
            by = ", ".join(f"K={k}: {v:.3f}" for k, v in b["by_K"].items())
            lines.append(f"| [{lo:g}, {hi:g}) | {b['panels']} | {b['mu_diff']:.3f} "
                         f"({b['mu_diff_mcse']:.3f}) | {b['gamma']:.3f} ({b['gamma_mcse']:.3f})"
                         f" | {by} |")
        lines += ["", "Panels with and without the warning:", ""] + split_lines(wald["split"])
    higher = result.get("higher_rank")
    if isinstance(higher, dict):
        lines += ["", "Rank 1 and 2 (truth and fit):", "",
                  "| judges | models | rank | verdicts per judge | panels | mu_i - mu_j | "
                  "gamma_k | median se(gamma_k) | warned |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in higher["designs"]:
            lines.append(f"| {r['K']} | {r['N']} | {r['rank']} | {r['per_judge']} | "
                         f"{r['seeds']} | {r['mu_diff']:.3f} ({r['mu_diff_mcse']:.3f}) | "
                         f"{r['gamma']:.3f} ({r['gamma_mcse']:.3f}) | "
                         f"{r['se_gamma_median']:.3f} | {r['warned']:.0%} |")
        lines += ["", "Those panels with and without the warning:", ""]
        lines += split_lines(higher["split"])
    bayes = result.get("bayes")
    if bayes:
        lines += ["", "The posterior (`sample_hja`, 2 chains x (300 + 500), default priors) "
                  "against the Wald intervals on the same panels:", "",
                  "| judges | models | rank | verdicts per judge | panels | mu_i - mu_j "
                  "posterior | Wald | gamma_k posterior | Wald | seconds |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in bayes:
            lines.append(f"| {r['K']} | {r['N']} | {r.get('rank', 0)} | {r['per_judge']} | "
                         f"{r['seeds']} | "
                         f"{r['bayes_mu_diff']:.3f} ({r['bayes_mu_diff_mcse']:.3f}) | "
                         f"{r['wald_mu_diff']:.3f} ({r['wald_mu_diff_mcse']:.3f}) | "
                         f"{r['bayes_gamma']:.3f} ({r['bayes_gamma_mcse']:.3f}) | "
                         f"{r['wald_gamma']:.3f} ({r['wald_gamma_mcse']:.3f}) | "
                         f"{r['seconds']:.0f} |")
    many = result.get("many_judges")
    if many:
        load = many.get("load")
        at = f", load {min(load):.1f}-{max(load):.1f}" if load else ""
        lines += ["", f"Many judges ({many['when']}{at}; `--parts many_judges`): rank-0 panels of "
                  "10 models. Inflation: the least-squares slope of the estimated on the true "
                  "differences, minus 1. Shift: the warning's `inflation_shift` (median over "
                  f"panels); it warns above {INFLATION_SHIFT:g}, or where the median "
                  f"se(gamma_k) is above {FEW_VERDICTS_SE:g} (the rule alone: 'by se').", "",
                  "| judges | verdicts per judge | panels | mu_i - mu_j | gamma_k | inflation "
                  "| median se(gamma_k) | shift | warned | by se |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in many["wald"]:
            lines.append(f"| {r['K']} | {r['per_judge']} | {r['seeds']} | {r['mu_diff']:.3f} "
                         f"({r['mu_diff_mcse']:.3f}) | {r['gamma']:.3f} | {r['inflation']:.3f}"
                         f" ({r['inflation_mcse']:.3f}) | {r['se_gamma_median']:.3f} | "
                         f"{r['shift_median']:.2f} | {r['warned']:.0%} | "
                         f"{r['warned_by_se_alone']:.0%} |")
        lines += ["", "The posterior on three of them, as above:", "",
                  "| judges | verdicts per judge | panels | mu_i - mu_j posterior | Wald | "
                  "gamma_k posterior | Wald | seconds |", "|---|---|---|---|---|---|---|---|"]
        lines += [posterior_row(r) for r in many["bayes"]]
    empirical = result.get("empirical")
    if empirical:
        lo, hi = empirical["load"]
        lines += ["", f"The posterior with `HJAPriors(gamma_scale=\"empirical\")` "
                  f"({empirical['when']}, load {min(lo, hi):.1f}-{max(lo, hi):.1f}; "
                  "`--parts empirical`): the prior sd of gamma_k - 1 from the MAP, net of its "
                  "noise (median over panels in the last column); Wald on the same panels:", "",
                  "| judges | verdicts per judge | panels | mu_i - mu_j posterior | Wald | "
                  "gamma_k posterior | Wald | seconds | gamma_scale |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [posterior_row(r) + f" {r['gamma_scale_median']:.2f} |"
                  for r in empirical["rows"]]
    return "\n".join(lines) + "\n"


def posterior_row(r: dict) -> str:
    """A posterior-against-Wald row of the many-judges tables."""
    return (f"| {r['K']} | {r['per_judge']} | {r['seeds']} | {r['bayes_mu_diff']:.3f} "
            f"({r['bayes_mu_diff_mcse']:.3f}) | {r['wald_mu_diff']:.3f} "
            f"({r['wald_mu_diff_mcse']:.3f}) | {r['bayes_gamma']:.3f} | {r['wald_gamma']:.3f} | "
            f"{r['seconds']:.0f} |")


def split_lines(split: dict) -> list[str]:
    return [f"- {name}: {s['panels']} panels, mu_i - mu_j {s['mu_diff'][0]:.3f} "
            f"({s['mu_diff'][1]:.3f}), gamma_k {s['gamma'][0]:.3f} ({s['gamma'][1]:.3f})"
            for name, s in split.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--bayes-seeds", type=int, default=60)
    parser.add_argument("--many-seeds", type=int, default=100)
    parser.add_argument("--parts", default="wald,higher_rank,bayes,many_judges,empirical")
    args = parser.parse_args()
    parts = args.parts.split(",")
    saved = OUT / "few_verdicts.json"
    result = json.loads(saved.read_text()) if saved.exists() else {}
    first = [p for p in ("wald", "higher_rank", "bayes") if p in parts]
    when, load = time.strftime("%Y-%m-%d %H:%M"), [os.getloadavg()[0]]
    for part, run in (("wald", part_wald), ("higher_rank", part_higher_rank),
                      ("bayes", part_bayes)):
        if part in parts:
            result[part] = run(args.bayes_seeds if part == "bayes" else args.seeds)
    if first:  # the header's time and load are those of the first three parts
        load.append(os.getloadavg()[0])
        result.update(when=when, load=[min(load), max(load)], version=hb.__version__)
    if "many_judges" in parts:
        many = {"when": time.strftime("%Y-%m-%d %H:%M"), "load": [os.getloadavg()[0]]}
        many.update(wald=part_many_judges(args.many_seeds),
                    bayes=part_bayes(args.bayes_seeds, MANY_BAYES))
        many["load"] = [many["load"][0], os.getloadavg()[0]]
        result["many_judges"] = many
    if "empirical" in parts:
        start, load0 = time.strftime("%Y-%m-%d %H:%M"), os.getloadavg()[0]
        rows = part_bayes(args.bayes_seeds, EMPIRICAL, HJAPriors(gamma_scale="empirical"))
        result["empirical"] = {"when": start, "load": [load0, os.getloadavg()[0]],
                               "rows": rows}
    OUT.mkdir(exist_ok=True)
    (OUT / "few_verdicts.json").write_text(json.dumps(result, indent=1))
    (OUT / "few_verdicts.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
