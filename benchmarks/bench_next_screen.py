"""next_comparisons on large panels: the screened search against the full one.

Two parts:

* ``quality``: simulated panels (10 judges, 40 models, rank 1, 5,000 verdicts per judge:
  7,800 units) that the full search handles in seconds to minutes, goals "top" (k = 3),
  "ranks" and "tiers", each asked for ``--budget`` verdicts by the full search
  (``KEEP_UNITS`` raised above the panel's units) and by the screened one keeping 1,000 or
  250 units (the default keeps 4,000).  Every design is
  scored the same way, independently of either search: the chart covariance updated by all
  the chosen verdicts' information at once (Woodbury), and the goal's expected number of
  undecided contrasts over all its contrasts.
  Reported: the drop each design brings, the screened ones over the full one (goal: at
  least 0.95), and the seconds of each.
* ``large``: a leaderboard-size panel (20 judges, 1,000 models, rank 2, 2,000,000
  comparisons; the rows of ``bench_scale.py``), fitted at rank 2 and saved, then
  ``hja-bayes next FIT --budget 200 --goal top --k 3`` (and ``--goal ranks``) timed as whole
  processes, with their peak memory.  Before the screen such panels were refused.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_next_screen.py [--parts quality,large]``
(writes benchmarks/results/next_screen.md and .json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import hja_bayes as hb
from hja_bayes.design import next as next_module
from hja_bayes.design import screen as screening
from hja_bayes.design.candidates import _derivatives, _weights
from hja_bayes.design.goals import quadratic_forms

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"


def design_uncertainty(fit, table, goal: str, k: int) -> float:
    """The goal's expected undecided count (all contrasts) after ``table``'s verdicts: the
    chart covariance updated by all their information at once (Woodbury, ``Sigma - Sigma D^T
    (W^-1 + D Sigma D^T)^-1 D Sigma``; the chart covariance is singular along directions the
    verdicts do not move, so it is not inverted)."""
    ctx = next_module.DesignContext(fit)
    target, G, effect, _, _ = next_module._goal(ctx, goal, k, 0.95, next_module.TIE_MARGIN)
    judges, items = list(fit.judges), list(fit.items)
    kk = np.array([judges.index(j) for j in table["judge"]])
    i = np.array([items.index(m) for m in table["model_a"]])
    j = np.array([items.index(m) for m in table["model_b"]])
    D = _derivatives(fit, ctx.chart, kk, i, j).toarray()
    SD = ctx.sigma @ D.T
    inner = np.diag(1.0 / _weights(fit, kk, i, j)) + D @ SD
    sigma = ctx.sigma - SD @ np.linalg.solve(inner, SD.T)
    return float(target.uncertainty(effect * quadratic_forms(G, sigma)).sum())


def quality(seeds: int, budget: int) -> list[dict]:
    rows = []
    for seed in range(seeds):
        data, _ = hb.simulate(n_judges=10, n_items=40, rank=1, comparisons_per_judge=5000,
                              seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = hb.fit_hja(data, rank=1)
        for goal, k in (("top", 3), ("ranks", 3), ("tiers", 3)):
            out = {}
            for arm, keep in (("full", 10**9), ("keep1000", 1_000), ("keep250", 250)):
                saved = screening.KEEP_UNITS
                screening.KEEP_UNITS = keep
                try:
                    t = time.perf_counter()
                    table = hb.next_comparisons(fit, budget, goal=goal, k=k)
                    seconds = time.perf_counter() - t
                finally:
                    screening.KEEP_UNITS = saved
                meta = table.attrs["meta"]
                out[arm] = dict(seconds=seconds, after=design_uncertainty(fit, table, goal, k),
                                before=meta["uncertainty_before"], screened=meta["screened"])
            drop = {arm: out[arm]["before"] - out[arm]["after"] for arm in out}
            rows.append(dict(seed=seed, goal=goal, budget=budget, **{
                f"{arm}_{key}": value for arm in out for key, value in out[arm].items()},
                **{f"ratio_{arm}": drop[arm] / drop["full"] for arm in ("keep1000", "keep250")}))
            print(rows[-1], flush=True)
    return rows


#: A whole ``hja-bayes`` process that ends by printing its own peak memory on stderr.
CHILD = """import resource, sys
from hja_bayes.cli import main
code = main(sys.argv[1:])
print("peak_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def large(budget: int) -> list[dict]:
    sys.path.insert(0, str(HERE))
    import bench_scale

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.parquet"
        args = argparse.Namespace(judges=20, items=1000, rank=2, comparisons=2_000_000, seed=0)
        bench_scale.make_rows(args, path)
        fit_dir = Path(tmp) / "fit"
        subprocess.run([sys.executable, "-m", "hja_bayes", "fit", str(path), "--rank", "2",
                        "--out", str(fit_dir), "--quiet"], check=True, capture_output=True)
        for goal in ("top", "ranks"):
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", CHILD, "next", str(fit_dir),
                                   "--budget", str(budget), "--goal", goal, "--k", "3",
                                   "--out", str(Path(tmp) / f"next_{goal}.csv")],
                                  capture_output=True, text=True)
            seconds = time.perf_counter() - t
            lines = done.stderr.strip().splitlines()
            peak = [int(x.split()[1]) for x in lines if x.startswith("peak_kb ")]
            rows.append(dict(goal=goal, budget=budget, returncode=done.returncode,
                             seconds=seconds, peak_gb=peak[0] / 2**20 if peak else None,
                             messages=[x for x in lines if not x.startswith("peak_kb ")][-4:]))
            print(rows[-1], flush=True)
    return rows


def write(result: dict) -> None:
    OUT.mkdir(exist_ok=True)
    (OUT / "next_screen.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# next_comparisons on large panels: the screened search "
             "(`python benchmarks/bench_next_screen.py`)", "",
             f"Load average {result['load_start'][0]:.1f} at the start, "
             f"{result['load_end'][0]:.1f} at the end, {os.cpu_count()} CPUs.", ""]
    if result["quality"]:
        lines += ["10 judges x 40 models, rank 1, 5,000 verdicts per judge (7,800 units); each "
                  "design scored by the dense covariance after its verdicts (all contrasts):", "",
                  "| seed | goal | budget | uncertainty now | after: full / 1,000 units kept / "
                  "250 kept | drop over the full search's: 1,000 / 250 | seconds: full / 1,000 "
                  "/ 250 |", "|---|---|---|---|---|---|---|"]
        for r in result["quality"]:
            lines.append(f"| {r['seed']} | {r['goal']} | {r['budget']} | {r['full_before']:.3f} | "
                         f"{r['full_after']:.3f} / {r['keep1000_after']:.3f} / "
                         f"{r['keep250_after']:.3f} | {r['ratio_keep1000']:.3f} / "
                         f"{r['ratio_keep250']:.3f} | {r['full_seconds']:.1f} / "
                         f"{r['keep1000_seconds']:.1f} / {r['keep250_seconds']:.1f} |")
        worst = min(min(r["ratio_keep1000"], r["ratio_keep250"]) for r in result["quality"])
        lines += ["", f"Goal: the screened design's drop at least 0.95 of the full one's — "
                  f"{'met' if worst >= 0.95 else 'MISSED'} (worst {worst:.3f})."]
    if result["large"]:
        lines += ["", "20 judges x 1,000 models, rank 2, 2,000,000 comparisons, `hja-bayes next` "
                  "as a whole process:", "", "| goal | budget | exit | seconds | peak GB | last "
                  "messages |", "|---|---|---|---|---|---|"]
        for r in result["large"]:
            peak = "-" if r["peak_gb"] is None else f"{r['peak_gb']:.2f}"
            lines.append(f"| {r['goal']} | {r['budget']} | {r['returncode']} | "
                         f"{r['seconds']:.1f} | {peak} | {' / '.join(r['messages'])} |")
    (OUT / "next_screen.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="quality,large")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=200)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    result = dict(load_start=os.getloadavg())
    result["quality"] = quality(args.seeds, args.budget) if "quality" in parts else []
    result["large"] = large(args.budget) if "large" in parts else []
    result["load_end"] = os.getloadavg()
    write(result)


if __name__ == "__main__":
    main()
