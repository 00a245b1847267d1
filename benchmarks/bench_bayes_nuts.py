"""NUTS efficiency at leaderboard-like size: effective draws per gradient evaluation.

K=20 judges, N=100 models, rank 3, 400k comparisons (about 97k folded cells), no position
bias; 2 chains x (200 warm-up + 200 draws) started near the MAP.  The figure of merit is
machine-independent: the minimum bulk ESS over mu, gamma and S per 1,000 gradient
evaluations of the kept draws (goal >= 15; the first release had 3.6 with 167 leapfrog steps
per draw), with R-hat <= 1.02 and no divergences.  Warm-up gradients, ESS per second and
the wall times are reported beside it.

    nice python benchmarks/bench_bayes_nuts.py                      # the issue's setting
    python benchmarks/bench_bayes_nuts.py --judges 5 --items 12 --comparisons 20000 \
        --out /tmp/nuts_smoke                                       # smoke test

Chains run in parallel on the machine's cores (``numpyro.set_host_device_count``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpyro

numpyro.set_host_device_count(max(2, os.cpu_count() or 2))

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402

from hja_bayes import ConvergenceWarning, fit_hja, sample_hja, simulate  # noqa: E402

GOAL_ESS_PER_1000 = 15.0
GOAL_RHAT = 1.02


def iid_rhat_null(chains: int, draws: int, quantities: int, replicates: int = 20,
                  seed: int = 0) -> tuple[float, float]:
    """Median and 95% quantile of max R-hat over ``quantities`` independent normal
    quantities drawn iid (a perfect sampler): the noise floor of the R-hat goal."""
    rng = np.random.default_rng(seed)
    maxima = [float(az.rhat(az.convert_to_dataset(
        {"x": rng.normal(size=(chains, draws, quantities))}))["x"].max())
        for _ in range(replicates)]
    return float(np.median(maxima)), float(np.quantile(maxima, 0.95))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--judges", type=int, default=20)
    p.add_argument("--items", type=int, default=100)
    p.add_argument("--rank", type=int, default=3)
    p.add_argument("--comparisons", type=int, default=400_000, help="in total")
    p.add_argument("--num-warmup", type=int, default=200)
    p.add_argument("--num-samples", type=int, default=200)
    p.add_argument("--num-chains", type=int, default=2)
    p.add_argument("--mass-matrix", default="diagonal", choices=["laplace", "diagonal", "adapt"])
    p.add_argument("--start", default="laplace", choices=["laplace", "map"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "bayes_nuts"))
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    data, _ = simulate(args.judges, args.items, args.rank, args.comparisons // args.judges,
                       seed=args.seed)
    folded = data.fold_order().n_cells
    print(f"{data!r}; {folded} folded cells", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    fit = fit_hja(data, args.rank)
    map_seconds = time.perf_counter() - t0
    print(f"MAP: {map_seconds:.1f} s", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        idata = sample_hja(data, args.rank, init=fit, num_warmup=args.num_warmup,
                           num_samples=args.num_samples, num_chains=args.num_chains,
                           seed=args.seed, mass_matrix=args.mass_matrix, start=args.start,
                           count_warmup=True, progress_bar=False)
    wall = time.perf_counter() - t0
    post, attrs = idata.posterior, idata.posterior.attrs
    names = ("mu", "gamma", "S")
    ess = az.ess(post[list(names)], method="bulk")
    rhat = az.rhat(post[list(names)])
    min_ess = min(float(ess[v].min()) for v in names)
    max_rhat = max(float(rhat[v].max()) for v in names)
    n_quantities = sum(int(post[v].isel(chain=0, draw=0).size) for v in names)
    null_median, null_q95 = iid_rhat_null(args.num_chains, args.num_samples, n_quantities)
    lp = np.asarray(idata.sample_stats["lp"])
    gradients = int(attrs["gradients"])
    steps = np.asarray(idata.sample_stats["n_steps"])
    result = {
        "setting": {"judges": args.judges, "items": args.items, "rank": args.rank,
                    "comparisons": float(data.n_comparisons), "cells": data.n_cells,
                    "folded_cells": folded, "num_warmup": args.num_warmup,
                    "num_samples": args.num_samples, "num_chains": args.num_chains,
                    "mass_matrix": args.mass_matrix, "start": args.start, "seed": args.seed,
                    "chain_method": attrs["chain_method"], "cpu_count": os.cpu_count()},
        "min_bulk_ess": min_ess,
        "gradients_kept": gradients,
        "ess_per_1000_gradients": 1000 * min_ess / gradients,
        "warmup_gradients": int(attrs["warmup_gradients"]),
        "mean_steps_per_draw": float(steps.mean()),
        "max_rhat": max_rhat,
        "max_rhat_mu_gamma": max(float(rhat[v].max()) for v in ("mu", "gamma")),
        # the rank R-hat is the larger of a location one (rank-normalised split R-hat) and a
        # scale one (the same of |x - median|): which of the two is high says what differs
        "max_rhat_location": max(float(az.rhat(post[[v]], method="z_scale")[v].max()) for v in names),
        "max_rhat_scale": max(float(az.rhat(post[[v]], method="folded")[v].max()) for v in names),
        "min_tail_ess": min(float(az.ess(post[[v]], method="tail")[v].min()) for v in names),
        "quantities": n_quantities,
        "iid_max_rhat_median": null_median,
        "iid_max_rhat_q95": null_q95,
        "lp_chain_means": [float(x) for x in lp.mean(axis=1)],
        "lp_sd": float(lp.std()),
        "divergences": int(idata.sample_stats["diverging"].sum()),
        "step_size": [float(x) for x in np.asarray(idata.sample_stats["step_size"])[:, -1]],
        "sampling_seconds": float(attrs["sampling_time"]),
        "sample_hja_seconds": wall,
        "map_seconds": map_seconds,
        "ess_per_second": min_ess / float(attrs["sampling_time"]),
        "warnings": [str(w.message)[:200] for w in caught],
        "load_average": os.getloadavg(),
    }
    result["goals"] = {
        "ess_per_1000_gradients >= 15": result["ess_per_1000_gradients"] >= GOAL_ESS_PER_1000,
        "max_rhat <= 1.02": max_rhat <= GOAL_RHAT,
        "divergences == 0": result["divergences"] == 0,
    }
    write(result, Path(args.out))
    return result


def write(result: dict, out: Path) -> None:
    s = result["setting"]
    met = result["goals"]

    def mark(key):
        return "met" if met[key] else "MISSED"

    lines = [
        "# NUTS efficiency (Bayesian HJA)", "",
        f"K={s['judges']}, N={s['items']}, r={s['rank']}, {s['comparisons']:.0f} comparisons "
        f"({s['cells']} cells, {s['folded_cells']} folded), no position bias; "
        f"{s['num_chains']} chains x ({s['num_warmup']} warm-up + {s['num_samples']} draws), "
        f"start {s['start']}, mass matrix {s['mass_matrix']}, chains {s['chain_method']} on "
        f"{s['cpu_count']} cores; load average at the end "
        f"{', '.join(f'{x:.1f}' for x in result['load_average'])}.", "",
        "| figure | value | goal |", "|---|---|---|",
        f"| min bulk ESS (mu, gamma, S) per 1,000 gradients of kept draws | "
        f"{result['ess_per_1000_gradients']:.1f} | >= 15 ({mark('ess_per_1000_gradients >= 15')}) |",
        f"| max R-hat (mu, gamma, S) | {result['max_rhat']:.4f} | <= 1.02 "
        f"({mark('max_rhat <= 1.02')}) |",
        f"| max R-hat of a perfect sampler (iid draws, same shape: {result['quantities']} "
        f"quantities), median / 95% quantile | {result['iid_max_rhat_median']:.4f} / "
        f"{result['iid_max_rhat_q95']:.4f} | |",
        f"| max R-hat (mu, gamma only) | {result['max_rhat_mu_gamma']:.4f} | |",
        f"| max R-hat of location (rank-normalised split) / of scale (folded) | "
        f"{result['max_rhat_location']:.4f} / {result['max_rhat_scale']:.4f} | |",
        f"| min tail ESS | {result['min_tail_ess']:.0f} | |",
        f"| lp chain means (lp sd) | {', '.join(f'{x:.1f}' for x in result['lp_chain_means'])} "
        f"({result['lp_sd']:.1f}) | |",
        f"| divergences | {result['divergences']} | 0 ({mark('divergences == 0')}) |",
        f"| min bulk ESS | {result['min_bulk_ess']:.0f} | |",
        f"| gradients of kept draws | {result['gradients_kept']} | |",
        f"| mean leapfrog steps per kept draw | {result['mean_steps_per_draw']:.1f} | "
        "(first release: 167) |",
        f"| warm-up gradients | {result['warmup_gradients']} | |",
        f"| ESS per second of sampling | {result['ess_per_second']:.2f} | |",
        f"| sampling seconds (Laplace, compilation, warm-up, draws) | "
        f"{result['sampling_seconds']:.0f} | (first release: 388) |",
        f"| sample_hja seconds (all of it) | {result['sample_hja_seconds']:.0f} | |",
        f"| MAP seconds | {result['map_seconds']:.0f} | |",
    ]
    if result["warnings"]:
        lines += ["", "Warnings:", *[f"- {w}" for w in result["warnings"]]]
    text = "\n".join(lines) + "\n"
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=float))


if __name__ == "__main__":
    main()
