"""One model on few prompts: joint coverage of the rank intervals' simultaneous intervals.

Panels of K=4 judges and N=6 models at rank 0, 600 verdicts per judge coupled within a prompt
(``simulate(..., questions=G, question_correlation=0.6)``); the last model keeps its verdicts
on the first ``keep`` prompts only (a new model with a handful of verdicts, as `hja-bayes
update` adds one).  Under CR2 each difference mu_a - mu_b has its own Satterthwaite df, and
the rare model's are about 1-4.  Three rules for the simultaneous intervals
``d_ab +- c_ab se_ab`` behind the joint rank intervals:

* normal: ``c_ab = c``, the max-|t| quantile of N(0, covariance), no df;
* smallest df: ``c`` of the multivariate t with the smallest df of all the differences (the
  rule until 2026-12-06);
* per pair: ``c_ab = t_df_ab^-1(Phi(c))``, each pair's t quantile of the normal value's tail
  probability (the rule now).

For each panel: whether every difference's interval covers the truth (joint coverage, goal
the level, 0.95), the same for the pairs without the rare model, and the median ratio of
their critical values, per pair against smallest df.  The last design has no rare model
(15 prompts, balanced): the rules then differ little.

Usage: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_rare_model.py [--replicates 300]``.
Writes ``benchmarks/results/rare_model.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

import hja_bayes as hb
from hja_bayes.inference.ranking import simultaneous_critical_value

OUT = Path(__file__).parent / "results"
K, N, PER_JUDGE, RHO, LEVEL = 4, 6, 600, 0.6, 0.95
RULES = ("normal", "smallest df", "per pair")
DESIGNS = {"2 of 60 prompts": (2, 60), "3 of 60 prompts": (3, 60),
           "5 of 30 prompts": (5, 30), "3 of 15 prompts": (3, 15),
           "no rare model, 15 prompts": (15, 15)}


def one_panel(keep: int, prompts: int, seed: int) -> dict:
    data, truth = hb.simulate(n_judges=K, n_items=N, rank=0, comparisons_per_judge=PER_JUDGE,
                              seed=seed, questions=prompts, question_correlation=RHO)
    c = data.clusters
    rare = (data.first == N - 1) | (data.second == N - 1)
    data = data.without(np.where((rare[c.cell] & (c.cluster >= keep))[:, None], c.counts, 0.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        fit = hb.fit_hja(data, rank=0)
        estimate, cov = fit.wald.mu_covariance()
        df = fit.wald.mu_degrees_of_freedom()[1]
    a, b = np.triu_indices(N, 1)
    error = np.abs(estimate[a] - estimate[b] - (truth.mu[a] - truth.mu[b]))
    se = np.sqrt(cov[a, a] + cov[b, b] - 2 * cov[a, b])
    c = simultaneous_critical_value(cov, LEVEL)
    critical = {"normal": np.full(a.size, c),
                "smallest df": np.full(a.size, simultaneous_critical_value(
                    cov, LEVEL, df=float(df[a, b].min()))),
                "per pair": stats.t.ppf(stats.norm.cdf(c), df[a, b])}
    others = b != N - 1
    out = {"smallest_df": float(df[a, b].min()),
           "ratio": float(np.median(critical["per pair"][others]
                                    / critical["smallest df"][others]))}
    for rule, crit in critical.items():
        hit = error <= crit * se
        out[rule] = bool(hit.all())
        out[f"{rule}/others"] = bool(hit[others].all())
    return out


def summarise(panels: list[dict]) -> dict:
    n = len(panels)
    out = {"replicates": n, "median_smallest_df": float(np.median([p["smallest_df"]
                                                                   for p in panels])),
           "ratio_per_pair_to_smallest": float(np.median([p["ratio"] for p in panels]))}
    for rule in RULES:
        for key in (rule, f"{rule}/others"):
            v = float(np.mean([p[key] for p in panels]))
            out[key] = {"coverage": v, "mcse": float(np.sqrt(v * (1 - v) / n))}
    return out


def markdown(result: dict) -> str:
    lines = ["# One model on few prompts (`python benchmarks/bench_rare_model.py`)", "",
             f"K={K} judges, N={N} models, rank 0, {PER_JUDGE} verdicts per judge coupled "
             f"within prompts (copula rho={RHO}); the last model kept on the first prompts only; "
             f"CR2 with Satterthwaite df; joint coverage at {LEVEL} of all {N * (N - 1) // 2} "
             "differences (and of the 10 without the rare model), MCSE binomial. Ratio: median "
             "critical value of the pairs without the rare model, per pair / smallest df.", "",
             f"Load average at the start: {result['load']}; {result['seconds']:.0f} s in all "
             f"(OPENBLAS_NUM_THREADS={result['blas_threads']}).", "",
             "| design | median smallest df | " + " | ".join(
                 f"{r} (all / others)" for r in RULES) + " | ratio |",
             "|---|---|" + "---|" * len(RULES) + "---|"]
    for name, r in result["designs"].items():
        cells = [f"{r[x]['coverage']:.3f} ({r[x]['mcse']:.3f}) / {r[x + '/others']['coverage']:.3f}"
                 for x in RULES]
        lines.append(f"| {name} | {r['median_smallest_df']:.1f} | " + " | ".join(cells)
                     + f" | {r['ratio_per_pair_to_smallest']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result = {"designs": {}, "load": round(load, 2),
              "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default")}
    for d, (name, (keep, prompts)) in enumerate(DESIGNS.items()):
        t = time.perf_counter()
        panels = [one_panel(keep, prompts, args.seed + 1000 * d + rep)
                  for rep in range(args.replicates)]
        r = result["designs"][name] = summarise(panels)
        print(f"{name}: " + ", ".join(f"{x} {r[x]['coverage']:.3f}" for x in RULES)
              + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    result["seconds"] = time.perf_counter() - start
    OUT.mkdir(exist_ok=True)
    (OUT / "rare_model.json").write_text(json.dumps(result, indent=2) + "\n")
    (OUT / "rare_model.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
