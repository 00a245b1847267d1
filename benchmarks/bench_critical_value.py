"""The joint rank intervals' critical value at leaderboard sizes: pruned against every pair.

``simultaneous_critical_value`` takes the 95% quantile over 20,000 draws of the largest
``|z_a - z_b| / se_ab`` over every pair of models.  ``max_abs_t`` finds each draw's largest
without visiting most pairs; the peer here is the direct loop that visits every pair of
every draw (the package's code until 2026-12-05), run in the same process on the same
draws.  Both must give the same numbers, bit for bit.

The covariances are those of real fits: simulated panels (rank 1, or rank 2 with 20 judges
at 1,000 models, 2M comparisons: the leaderboard panel of ``bench_scale.py``), fitted by
``fit_hja`` and read by ``wald_inference().mu_covariance()``; with ``--panels sparse``, a
sparse panel's (3 judges, 1,500 verdicts each on 100 prompts, rank 0, Fisher covariance: a
few models measured against each other closely, most loosely, the se's uneven).

Usage: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_critical_value.py [--items 10 100 300
1000] [--direct-max 1000]`` (the direct loop takes about 140 s at 1,000 models: above
``--direct-max`` models it is not run).  Writes ``benchmarks/results/critical_value.json``
and ``.md``.
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
from hja_bayes.inference.ranking import _difference_se, max_abs_t

OUT = Path(__file__).parent / "results"
DRAWS = 20_000


def every_pair(z, se):
    """The peer: each draw's largest |z_a - z_b| / se_ab, every pair visited."""
    stat = np.zeros(len(z))
    for a in range(z.shape[1] - 1):
        keep = np.flatnonzero(se[a, a + 1:] > 0) + a + 1
        if keep.size:
            np.maximum(stat, np.max(np.abs(z[:, [a]] - z[:, keep]) / se[a, keep], axis=1),
                       out=stat)
    return stat


def covariance(items: int, seed: int, panel: str = "dense") -> np.ndarray:
    """The consensus scores' covariance of a fit to a simulated panel of ``items`` models."""
    if panel == "sparse":
        data, _ = hb.simulate(n_judges=3, n_items=items, rank=0, comparisons_per_judge=1500,
                              questions=100, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.HJAWarning)
            fit = hb.fit_hja(data, rank=0)
        return np.asarray(fit.wald_inference("fisher").mu_covariance()[1])
    big = items >= 1000
    judges, rank = (20, 2) if big else (10, 1)
    per_judge = 100_000 if big else max(2_000, 40 * items)
    data, _ = hb.simulate(n_judges=judges, n_items=items, rank=rank,
                          comparisons_per_judge=per_judge, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.HJAWarning)
        fit = hb.fit_hja(data, rank=rank)
    return np.asarray(fit.wald_inference().mu_covariance()[1])


def run(items: int, seed: int, direct_max: int, panel: str = "dense") -> dict:
    cov = covariance(items, seed, panel)
    se = _difference_se(cov)
    eig, vec = np.linalg.eigh((cov + cov.T) / 2)
    z = np.random.default_rng(0).standard_normal((DRAWS, items)) @ (
        vec * np.sqrt(np.clip(eig, 0.0, None))).T
    t = time.perf_counter()
    pruned = max_abs_t(z, se)
    ours = time.perf_counter() - t
    row = dict(panel=panel, items=items, draws=DRAWS, pruned_s=ours,
               critical_value=float(np.quantile(pruned, 0.95)))
    if items <= direct_max:
        t = time.perf_counter()
        direct = every_pair(z, se)
        row.update(every_pair_s=time.perf_counter() - t,
                   identical=bool(np.array_equal(pruned, direct)))
        row["ratio"] = ours / row["every_pair_s"]
    print(row, flush=True)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, nargs="+", default=[10, 100, 300, 1000])
    parser.add_argument("--direct-max", type=int, default=1000)
    parser.add_argument("--panels", nargs="+", choices=("dense", "sparse"), default=["dense"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    start = os.getloadavg()
    rows = [run(n, args.seed, args.direct_max, panel) for panel in args.panels
            for n in args.items]
    result = dict(load_average_start=start, load_average_end=os.getloadavg(), rows=rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "critical_value.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Joint rank intervals' critical value: pruned against every pair",
             "", f"`python benchmarks/bench_critical_value.py`, {DRAWS:,} draws; load "
             f"{start[0]:.1f} at the start, {result['load_average_end'][0]:.1f} at the end.",
             "", "| panel | models | pruned (s) | every pair (s) | ratio | same numbers | "
             "critical value |", "|---|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        direct = (f"{r['every_pair_s']:.2f} | {r['ratio']:.3f}x | {r['identical']}"
                  if "every_pair_s" in r else "not run | | ")
        lines.append(f"| {r['panel']} | {r['items']} | {r['pruned_s']:.2f} | {direct} | "
                     f"{r['critical_value']:.4f} |")
    (args.out / "critical_value.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
