"""Coverage of 95% credible intervals against Wald's, on the same simulated replicates.

Setting (the HJA paper's ablation): K=4 judges, N=8 items, rank 1, T=2500 comparisons per
judge, heterogeneity 1.  Per replicate: MAP fit, Wald intervals at the MAP, and NUTS from
the MAP; then, for every mu_i - mu_j, gamma_k and S_ki - S_kj, whether the equal-tailed
credible interval and the Wald interval cover the truth, and the ratio posterior sd /
Wald se.

Design for two shared CPU cores: two sequential chains per replicate with a short run
(500 warm-up + 500 draws each; the model has 18 coordinates and a dense mass matrix), and
the per-replicate R-hat, bulk ESS and divergences are recorded so that the short warm-up
can be checked.
Each replicate compiles its own sampler (the data are folded into the program), which
dominates the cost.

    nice python benchmarks/bench_bayes_coverage.py --replicates 50
    python benchmarks/bench_bayes_coverage.py --replicates 2 --num-warmup 50 \
        --num-samples 50 --out /tmp/smoke                      # smoke test
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402

from hja_bayes import ConvergenceWarning, compare_intervals, fit_hja, sample_hja, simulate  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replicates", type=int, default=50)
    p.add_argument("--judges", type=int, default=4)
    p.add_argument("--items", type=int, default=8)
    p.add_argument("--rank", type=int, default=1)
    p.add_argument("--comparisons", type=int, default=2500)
    p.add_argument("--num-warmup", type=int, default=500)
    p.add_argument("--num-samples", type=int, default=500)
    p.add_argument("--num-chains", type=int, default=2)
    p.add_argument("--level", type=float, default=0.95)
    p.add_argument("--first-seed", type=int, default=1000)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "bayes_coverage"))
    p.add_argument("--resume", action="store_true",
                   help="keep the replicates already in OUT.json (same setting) and run the rest")
    return p.parse_args(argv)


def truth_values(table, truth, judges, items):
    """True value of every row of a compare_intervals table."""
    mu, S, gamma = truth.mu, truth.S, truth.gamma
    out = []
    for q, label in zip(table["quantity"], table["label"]):
        if q == "mu_diff":
            a, b = label.split(" - ")
            out.append(mu[items.index(a)] - mu[items.index(b)])
        elif q == "gamma":
            out.append(gamma[judges.index(label)])
        elif q == "S_diff":
            judge, pair = label.split(": ")
            a, b = pair.split(" - ")
            k = judges.index(judge)
            out.append(S[k, items.index(a)] - S[k, items.index(b)])
        else:
            out.append(np.nan)
    return np.asarray(out)


def main(argv=None) -> dict:
    args = parse_args(argv)
    rows, done, t_before = [], set(), 0.0
    if args.resume and Path(args.out).with_suffix(".json").exists():
        previous = json.loads(Path(args.out).with_suffix(".json").read_text())
        rows, t_before = previous["rows"], previous["seconds"]
        done = {r["replicate"] for r in rows}
    t_start = time.perf_counter() - t_before
    for rep in range(args.replicates):
        if rep in done:
            continue
        seed = args.first_seed + rep
        data, truth = simulate(args.judges, args.items, args.rank, args.comparisons, seed=seed)
        t0 = time.perf_counter()
        fit = fit_hja(data, args.rank)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            idata = sample_hja(data, args.rank, init=fit, num_warmup=args.num_warmup,
                               num_samples=args.num_samples, num_chains=args.num_chains,
                               seed=seed, progress_bar=False)
        table = compare_intervals(fit, idata, args.level)
        table["truth"] = truth_values(table, truth, list(data.judges), list(data.items))
        post = idata.posterior
        rhat = float(az.rhat(post).to_array().max())
        ess = float(az.ess(post, method="bulk").to_array().min())
        div = int(idata.sample_stats["diverging"].sum())
        for q in ("mu_diff", "gamma", "S_diff"):
            t = table[table["quantity"] == q]
            rows.append({
                "replicate": rep, "seed": seed, "quantity": q, "n": int(len(t)),
                "bayes_covered": int(((t["eti_lower"] <= t["truth"]) & (t["truth"] <= t["eti_upper"])).sum()),
                "hdi_covered": int(((t["hdi_lower"] <= t["truth"]) & (t["truth"] <= t["hdi_upper"])).sum()),
                "wald_covered": int(((t["wald_lower"] <= t["truth"]) & (t["truth"] <= t["wald_upper"])).sum()),
                "median_sd_ratio": float(t["sd_ratio"].median()),
                "median_width_ratio": float(t["width_ratio"].median()),
                "max_rhat": rhat, "min_ess_bulk": ess, "divergences": div,
                "warnings": len(caught), "seconds": time.perf_counter() - t0,
            })
        print(f"replicate {rep}: {time.perf_counter() - t0:.1f} s, max R-hat {rhat:.4f}, "
              f"min ESS {ess:.0f}, divergences {div}", flush=True)
        _write(args, rows, time.perf_counter() - t_start)  # keep partial results
    return _write(args, rows, time.perf_counter() - t_start)


def _write(args, rows, seconds) -> dict:
    summary = {}
    for q in ("mu_diff", "gamma", "S_diff", "all"):
        sel = [r for r in rows if q == "all" or r["quantity"] == q]
        n = sum(r["n"] for r in sel)
        summary[q] = {
            "intervals": n,
            "bayes_coverage": sum(r["bayes_covered"] for r in sel) / n,
            "hdi_coverage": sum(r["hdi_covered"] for r in sel) / n,
            "wald_coverage": sum(r["wald_covered"] for r in sel) / n,
            "median_sd_ratio": float(np.median([r["median_sd_ratio"] for r in sel])),
            "median_width_ratio": float(np.median([r["median_width_ratio"] for r in sel])),
        }
    reps = {r["replicate"]: r for r in rows}
    result = {
        "setting": {k: getattr(args, k) for k in ("judges", "items", "rank", "comparisons",
                                                  "num_warmup", "num_samples", "num_chains",
                                                  "level", "first_seed")},
        "replicates_done": len(reps),
        "seconds": seconds,
        "summary": summary,
        "worst_rhat": max(r["max_rhat"] for r in reps.values()),
        "min_ess_bulk": min(r["min_ess_bulk"] for r in reps.values()),
        "total_divergences": sum(r["divergences"] for r in reps.values()),
        "replicates_with_warnings": sum(r["warnings"] > 0 for r in reps.values()),
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2))
    lines = [
        "# Bayesian HJA: coverage of credible against Wald intervals",
        "",
        f"K={args.judges}, N={args.items}, r={args.rank}, T={args.comparisons} per judge, "
        f"{len(reps)} replicates (seeds {args.first_seed}..{args.first_seed + len(reps) - 1}), "
        f"{args.num_chains} chain(s) x ({args.num_warmup} warm-up + {args.num_samples} draws) per "
        f"replicate, level {args.level}; {seconds / 60:.1f} min in all.",
        "",
        "| quantity | intervals | credible (equal-tailed) | credible (HDI) | Wald | median sd/se | median width ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for q, s in summary.items():
        lines.append(f"| {q} | {s['intervals']} | {100 * s['bayes_coverage']:.1f}% | "
                     f"{100 * s['hdi_coverage']:.1f}% | {100 * s['wald_coverage']:.1f}% | "
                     f"{s['median_sd_ratio']:.3f} | {s['median_width_ratio']:.3f} |")
    lines += [
        "",
        f"Sampler over all replicates: worst R-hat {result['worst_rhat']:.4f} , smallest bulk ESS {result['min_ess_bulk']:.0f}, divergences "
        f"{result['total_divergences']}, replicates with a ConvergenceWarning "
        f"{result['replicates_with_warnings']}.",
        "",
        "Intervals within a replicate share its data, so they are not independent: the "
        "Monte Carlo error of a coverage figure is larger than sqrt(p(1-p)/intervals).",
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


if __name__ == "__main__":
    main()
