"""Few prompts: coverage of CR1, CR2 (+ Satterthwaite df) and the wild cluster bootstrap.

Panels of K=5 judges and N=6 models at rank 1 whose verdicts are coupled within a prompt by a
Gaussian copula while every marginal probability is exact (``simulate(..., questions=G,
question_correlation=0.6, question_sizes=...)``), in three designs:

* 15 prompts whose sizes are spread 1:50 (geometrically, ``50 ** linspace(0, 1, 15)``: about
  7 effective clusters);
* 15 prompts of equal size (in expectation);
* 60 prompts spread 1:50 the same way (about 28 effective).

For each panel: the 95% intervals of every mu_i - mu_j (15 per panel) and every gamma_k (5)
under CR1 (G/(G-1), normal quantiles: the previous default), CR2 with Satterthwaite degrees of
freedom (the default now), and the wild cluster bootstrap of the scores (Webb weights, 999
replicates, symmetric percentile-t).  Coverage against the truth with its Monte Carlo
standard error (from the per-panel coverage, since the intervals of one panel are
dependent), the median width relative to CR1, and the median df.

Goal: CR2 covers mu_i - mu_j and gamma_k at >= 92% and <= 98% in every design.

Usage: ``python benchmarks/bench_few_clusters.py [--replicates 200]``.  Writes
``benchmarks/results/few_clusters.json`` and ``.md``.
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

OUT = Path(__file__).parent / "results"
METHODS = ("CR1", "CR2", "wild")
K, N, PER_JUDGE, RHO = 5, 6, 600, 0.6
DESIGNS = {
    "15 prompts, sizes 1:50": dict(questions=15, question_sizes=50 ** np.linspace(0, 1, 15)),
    "15 prompts, balanced": dict(questions=15),
    "60 prompts, sizes 1:50": dict(questions=60, question_sizes=50 ** np.linspace(0, 1, 60)),
}


def one_panel(design: dict, seed: int) -> dict:
    data, truth = hb.simulate(n_judges=K, n_items=N, rank=1, comparisons_per_judge=PER_JUDGE,
                              seed=seed, question_correlation=RHO, **design)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        fit = hb.fit_hja(data, rank=1)
        tables = {"CR1": fit.intervals(cov_type="CR1"), "CR2": fit.intervals(cov_type="CR2"),
                  "wild": fit.bootstrap(wild=True, weights="webb", n=999, seed=seed).table()}
    a, b = np.triu_indices(N, 1)
    true = {"mu_diff": truth.mu[a] - truth.mu[b], "gamma": truth.gamma}
    out = {"effective": data.summary().effective_clusters}
    for method, table in tables.items():
        for quantity, value in true.items():
            rows = table[table["quantity"] == quantity]
            lo, hi = rows["lower"].to_numpy(), rows["upper"].to_numpy()
            out[f"{method}/{quantity}/hit"] = ((lo <= value) & (value <= hi)).tolist()
            out[f"{method}/{quantity}/width"] = (hi - lo).tolist()
            if method == "CR2":
                out[f"{method}/{quantity}/df"] = rows["df"].tolist()
    return out


def summarise(panels: list[dict]) -> dict:
    out = {"replicates": len(panels),
           "effective_clusters": float(np.median([p["effective"] for p in panels]))}
    for method in METHODS:
        for quantity in ("mu_diff", "gamma"):
            hits = np.array([p[f"{method}/{quantity}/hit"] for p in panels], dtype=float)
            widths = np.array([p[f"{method}/{quantity}/width"] for p in panels])
            base = np.array([p[f"CR1/{quantity}/width"] for p in panels])
            per_panel = hits.mean(axis=1)
            entry = dict(coverage=float(hits.mean()),
                         mcse=float(per_panel.std(ddof=1) / np.sqrt(len(panels))),
                         width_vs_cr1=float(np.median(widths / base)))
            if method == "CR2":
                entry["median_df"] = float(np.median([p[f"CR2/{quantity}/df"] for p in panels]))
            out[f"{method}/{quantity}"] = entry
    cr2 = [out[f"CR2/{q}"]["coverage"] for q in ("mu_diff", "gamma")]
    out["goal_met"] = bool(all(0.92 <= c <= 0.98 for c in cr2))
    return out


def markdown(result: dict) -> str:
    lines = ["# Few clusters (`python benchmarks/bench_few_clusters.py`)", "",
             f"K={K} judges, N={N} models, rank 1, {PER_JUDGE} verdicts per judge coupled within "
             f"prompts (copula rho={RHO}); 95% intervals; MCSE from per-panel coverage. "
             "CR1: G/(G-1), normal quantiles (the previous default). CR2: bias-reduced "
             "linearisation with Satterthwaite df, t quantiles (the default). Wild: score "
             "bootstrap, Webb weights, 999 replicates, symmetric percentile-t. Width: median "
             "ratio to CR1's.", "",
             f"Load average at the start: {result['load']}; {result['seconds']:.0f} s in all "
             f"(OPENBLAS_NUM_THREADS={result['blas_threads']}).", ""]
    for name, r in result["designs"].items():
        lines += [f"## {name} ({r['replicates']} panels, median effective clusters "
                  f"{r['effective_clusters']:.1f})", "",
                  "| method | mu_i - mu_j coverage (MCSE) | width / CR1 | gamma_k coverage (MCSE) "
                  "| width / CR1 | median df (mu diff / gamma) |", "|---|---|---|---|---|---|"]
        for m in METHODS:
            md, g = r[f"{m}/mu_diff"], r[f"{m}/gamma"]
            df = (f"{md['median_df']:.1f} / {g['median_df']:.1f}" if m == "CR2" else "-")
            lines.append(f"| {m} | {md['coverage']:.3f} ({md['mcse']:.3f}) | "
                         f"{md['width_vs_cr1']:.2f} | {g['coverage']:.3f} ({g['mcse']:.3f}) | "
                         f"{g['width_vs_cr1']:.2f} | {df} |")
        lines += ["", f"goal CR2 in [0.92, 0.98] for both: {'met' if r['goal_met'] else 'MISSED'}",
                  ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=4100)
    parser.add_argument("--designs", nargs="*", default=list(DESIGNS),
                        help="which designs (names as in DESIGNS)")
    args = parser.parse_args()
    start = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result = {"designs": {}, "load": round(load, 2),
              "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default")}
    for d, name in enumerate(args.designs):
        t = time.perf_counter()
        panels = [one_panel(DESIGNS[name], args.seed + 1000 * d + rep)
                  for rep in range(args.replicates)]
        result["designs"][name] = summarise(panels)
        r = result["designs"][name]
        print(f"{name}: " + ", ".join(
            f"{m} {r[f'{m}/mu_diff']['coverage']:.3f}/{r[f'{m}/gamma']['coverage']:.3f}"
            for m in METHODS) + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    result["seconds"] = time.perf_counter() - start
    OUT.mkdir(exist_ok=True)
    (OUT / "few_clusters.json").write_text(json.dumps(result, indent=2) + "\n")
    (OUT / "few_clusters.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
