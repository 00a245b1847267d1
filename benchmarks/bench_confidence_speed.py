"""Training time of the confidence rankers: 3,000 examples, 5,000 pairs (goal <= 30 s).

The first fit of each variant includes JAX compilation; the second (another seed, same
shapes) reuses the compiled trainer.  Both are reported; the goal is judged on the first.

Usage: python benchmarks/bench_confidence_speed.py [--n 3000] [--n-pairs 5000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hja_bayes.confidence import ConfidenceRanker, simulate_confidence_data  # noqa: E402
from _confidence_common import write_results  # noqa: E402

VARIANTS = {
    "gaussian_posterior (default)": dict(),
    "gaussian_posterior, prior_scale='auto'": dict(prior_scale="auto"),
    "margin_adaptive": dict(posterior=False, margin="adaptive"),
    "vanilla": dict(posterior=False, margin=0.1),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--n-pairs", type=int, default=5000)
    parser.add_argument("--goal", type=float, default=30.0)
    parser.add_argument("--name", default="confidence_speed")
    args = parser.parse_args(argv)
    data = simulate_confidence_data(args.n, seed=0).data
    rows, out = [], {}
    for name, kw in VARIANTS.items():
        times = []
        for seed in (0, 1):
            t = time.perf_counter()
            r = ConfidenceRanker(n_pairs=args.n_pairs, seed=seed, **kw).fit(data.features, data.agree)
            r.predict_confidence(data.features)
            times.append(time.perf_counter() - t)
        out[name] = {"first_fit_s": times[0], "second_fit_s": times[1], "goal_met": times[0] <= args.goal}
        rows.append(
            f"| {name} | {times[0]:.1f} | {times[1]:.1f} | {'met' if times[0] <= args.goal else 'MISSED'} |"
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table = "\n".join(
        [
            f"Training on {args.n} examples, {args.n_pairs} pairs, the default 25 epochs (goal <= {args.goal:g} s)",
            "",
            "| variant | first fit incl. compilation (s) | second fit (s) | goal |",
            "|---|---|---|---|",
            *rows,
            "",
            f"{os.cpu_count()} CPUs, load average {load:.1f} when finished (the machine is shared).",
        ]
    )
    write_results(args.name, {"settings": vars(args), "results": out, "load_average": load}, table)


if __name__ == "__main__":
    main()
