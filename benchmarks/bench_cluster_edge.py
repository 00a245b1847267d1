"""The fewest prompts cluster-robust intervals are given for: do they still cover there?

A cluster-robust covariance from G prompts has rank at most G - 1.  The library gives one
quantity's interval from G = 2 prompts on (CR2, t quantile at its Satterthwaite df, about 1
there) and a joint statement about q free quantities where q <= G - 1 (the leaderboard's
rank intervals over N models from G = N prompts on); it refuses below.  This checks both
edges by simulation, K = 3 judges, N = 4 models, rank 0, 200 verdicts per judge coupled
within prompts (copula rho 0.3):

* G = 2: the 95% intervals of every mu_i - mu_j (6 per panel), CR2 against Fisher (which
  ignores the prompts), and the median width ratio CR2 / Fisher;
* G = N = 4: the leaderboard's joint 95% rank intervals (3 free quantities from a covariance
  of rank 3) hold every true rank.

Usage: ``python benchmarks/bench_cluster_edge.py [--replicates 300]``.  Writes
``benchmarks/results/cluster_edge.json`` and ``.md``.
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
from hja_bayes.reporting.pairwise import pairwise_table

OUT = Path(__file__).parent / "results"
K, N, PER_JUDGE, RHO = 3, 4, 200, 0.3


def panel(questions: int, seed: int):
    data, truth = hb.simulate(n_judges=K, n_items=N, rank=0, comparisons_per_judge=PER_JUDGE,
                              seed=seed, questions=questions, question_correlation=RHO)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        return data, truth, hb.fit_hja(data, rank=0)


def two_prompts(seed: int) -> dict:
    data, truth, fit = panel(2, seed)
    mu = dict(zip(data.items, np.asarray(truth.mu)))
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        tables = {"CR2": pairwise_table(fit),
                  "Fisher": pairwise_table(fit, inference=fit.wald_inference("fisher"))}
    for name, table in tables.items():
        rows = table[table["model_a"] < table["model_b"]]
        true = np.array([mu[a] - mu[b] for a, b in zip(rows["model_a"], rows["model_b"])])
        out[name] = ((rows["lower"] <= true) & (true <= rows["upper"])).mean()
        out[f"{name}/width"] = float(np.median(rows["upper"] - rows["lower"]))
    return out


def as_many_prompts_as_models(seed: int) -> dict:
    data, truth, fit = panel(N, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        board = hb.leaderboard(fit).set_index("model").loc[list(data.items)]
    true_rank = np.argsort(np.argsort(-np.asarray(truth.mu))) + 1
    lower, upper = board["rank_lower"].to_numpy(float), board["rank_upper"].to_numpy(float)
    given = bool(np.all(np.isfinite(lower)))
    return {"given": given,
            "held": given and bool(np.all((lower <= true_rank) & (true_rank <= upper)))}


def mean_mcse(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    seeds = range(args.seed, args.seed + args.replicates)
    two = [two_prompts(s) for s in seeds]
    edge = [as_many_prompts_as_models(s) for s in seeds]
    result = {"replicates": args.replicates, "load": round(load, 2)}
    for name in ("CR2", "Fisher"):
        result[f"G=2 {name} coverage"], result[f"G=2 {name} mcse"] = mean_mcse(
            [p[name] for p in two])
    result["G=2 width CR2 / Fisher"] = float(np.median(
        [p["CR2/width"] / p["Fisher/width"] for p in two]))
    result["G=N rank intervals given"] = float(np.mean([p["given"] for p in edge]))
    result["G=N joint coverage"], result["G=N mcse"] = mean_mcse([p["held"] for p in edge])
    result["seconds"] = round(time.perf_counter() - start, 1)
    OUT.mkdir(exist_ok=True)
    (OUT / "cluster_edge.json").write_text(json.dumps(result, indent=2) + "\n")
    text = "\n".join([
        "# Cluster-robust intervals at their edge (`python benchmarks/bench_cluster_edge.py`)",
        "",
        f"K={K} judges, N={N} models, rank 0, {PER_JUDGE} verdicts per judge coupled within "
        f"prompts (copula rho={RHO}); {args.replicates} panels per design; load "
        f"{result['load']} at the start, {result['seconds']:.0f} s in all. MCSE from the "
        "per-panel coverage.", "",
        "| design | what | coverage (MCSE) |", "|---|---|---|",
        f"| G = 2 | 95% CR2 intervals of every mu_i - mu_j | "
        f"{result['G=2 CR2 coverage']:.3f} ({result['G=2 CR2 mcse']:.3f}); median width "
        f"{result['G=2 width CR2 / Fisher']:.1f}x Fisher's |",
        f"| G = 2 | Fisher's (prompts ignored) | {result['G=2 Fisher coverage']:.3f} "
        f"({result['G=2 Fisher mcse']:.3f}) |",
        f"| G = N = 4 | joint 95% rank intervals hold every true rank (given in "
        f"{result['G=N rank intervals given']:.0%} of panels) | "
        f"{result['G=N joint coverage']:.3f} ({result['G=N mcse']:.3f}) |", ""])
    (OUT / "cluster_edge.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
