"""Speed of the HJA MAP fit plus Wald intervals.

Cases:
- each real panel (MT-Bench, Chatbot Arena, PRD Vicuna80): ``fit_hja(rank="bic")`` then
  ``fit.intervals()`` (goal < 1 s after JIT warm-up);
- a simulated panel K=20, N=100, r=3 with 400k comparisons: ``fit_hja(rank=3)`` then
  ``fit.intervals()`` (goal: MAP + Wald <= 5 s);
- the same panel with 4M comparisons: the cells are the same, so the time should be too
  (memory and time grow with cells, never with rows).

"cold" is the first call in the process (JIT compilation included), "warm" the median of
the following ``--repeats`` calls.  Usage: ``python benchmarks/bench_hja_speed.py``.
Writes ``benchmarks/results/hja_speed.json`` and ``.md``.
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


def timed(fn, repeats):
    t = time.perf_counter()
    fn()
    cold = time.perf_counter() - t
    warm = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t)
    return cold, float(np.median(warm))


def case(data, rank, repeats):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.ConvergenceWarning)
            fit = hb.fit_hja(data, rank=rank)
        fit.intervals()
        return fit

    fit = None

    def keep():
        nonlocal fit
        fit = run()

    cold, warm = timed(keep, repeats)
    return dict(cells=data.n_cells, comparisons=data.n_comparisons, rank=fit.rank,
                n_iter=fit.n_iter, converged=fit.converged, cold_s=cold, warm_s=warm)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    results = {}
    panels = {"PRD Vicuna80": hb.datasets.load_prd_vicuna80().judgments}
    for name, key in (("MT-Bench", "mtbench"), ("Chatbot Arena", "chatbot_arena")):
        try:
            panels[name] = hb.datasets.load_ja_ranking(key)
        except hb.DataError as exc:
            print(f"skipping {name}: {exc}")
    for name, df in panels.items():
        results[name + ' (rank="bic")'] = case(hb.Comparisons.from_frame(df), "bic", args.repeats)
        print(name, results[name + ' (rank="bic")'], flush=True)
    for T in (20_000, 200_000):
        data, _ = hb.simulate(n_judges=20, n_items=100, rank=3, comparisons_per_judge=T, seed=0)
        label = f"simulated K=20 N=100 r=3, {20 * T:,} comparisons (rank=3)"
        results[label] = case(data, 3, args.repeats)
        print(label, results[label], flush=True)
    load = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hja_speed.json").write_text(json.dumps({"load_average": load, "results": results}, indent=1))
    lines = ["# HJA speed: MAP fit + Wald intervals", "",
             f"Command: `python benchmarks/bench_hja_speed.py --repeats {args.repeats}`; "
             f"2 CPUs, load average {load:.1f} at the end (the machine was shared, so times are upper bounds).",
             "", "| case | cells | comparisons | rank | iterations | cold (s) | warm (s) | goal |",
             "|---|---|---|---|---|---|---|---|"]
    for label, r in results.items():
        goal = "< 1 s warm" if "bic" in label else "≤ 5 s"
        limit = 1.0 if "bic" in label else 5.0
        lines.append(f"| {label} | {r['cells']:,} | {r['comparisons']:,.0f} | {r['rank']} | {r['n_iter']} | "
                     f"{r['cold_s']:.2f} | {r['warm_s']:.2f} | {goal}: {'met' if r['warm_s'] <= limit else 'MISSED'} |")
    md = "\n".join(lines) + "\n"
    (args.out / "hja_speed.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
