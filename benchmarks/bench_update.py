"""fit.update on +1% data against a full refit: equality and speed, warm and in fresh processes.

For each panel the data are split 99% / 1% at random (by verdict); the fit of the 99% is
updated with the 1% (``fit.update``) and compared with ``fit_hja`` on the merged data at the
same rank and terms, and with a tight refit (tol 1e-14) that stands for the exact optimum.

* warm: in one process, after one call of each (compiled), median of 15 calls;
* fresh: a new Python process per call that imports the package, rebuilds the data, loads
  the saved 99% fit (update) or not (refit), and times the one call, with the persistent
  compilation cache as a user has it after earlier runs ("cache on", the cache warmed by a
  first process) and without it ("cache off": everything compiled in the process).
  Median of 3 processes each.

Run: ``OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_update.py`` (writes
benchmarks/results/update.md and .json).
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

HERE = Path(__file__).resolve().parent
PANELS = {
    "sim K3 N12 r1 bias prompts": dict(K=3, N=12, rank=1, T=5000, bias=True, questions=200),
    "sim K3 N40 r1 bias prompts": dict(K=3, N=40, rank=1, T=20000, bias=True, questions=400),
    "sim K10 N50 r2": dict(K=10, N=50, rank=2, T=20000, bias=False, questions=0),
    "sim K20 N100 r3": dict(K=20, N=100, rank=3, T=20000, bias=False, questions=0),
    "MT-Bench r1": dict(mtbench=True, rank=1, bias=False),
    "MT-Bench r1 bias": dict(mtbench=True, rank=1, bias=True),
}


def panel(name):
    """(old Comparisons, new Comparisons, rank, position_bias) for a panel, deterministic."""
    import pandas as pd

    import hja_bayes as hb

    spec = PANELS[name]
    if spec.get("mtbench"):
        frame = hb.datasets.load_ja_ranking("mtbench")
        frame = frame[frame.winner != "invalid"].reset_index(drop=True)
        read = dict(cluster="question_id")
    else:
        data, _ = hb.simulate(n_judges=spec["K"], n_items=spec["N"], rank=spec["rank"],
                              comparisons_per_judge=spec["T"], seed=11,
                              position_bias=0.3 if spec["bias"] else 0.0,
                              questions=spec["questions"],
                              # coupling needs prompts (simulate refuses it without them)
                              question_correlation=0.3 if spec["questions"] else 0.0)
        rows = []
        c = data.clusters
        if c is None:
            for k, i, j, counts in zip(data.judge, data.first, data.second, data.counts):
                rows.append((k, i, j, 0, counts))
        else:
            for g, cell, counts in zip(c.cluster, c.cell, c.counts):
                rows.append((data.judge[cell], data.first[cell], data.second[cell], g, counts))
        expanded = []
        for k, i, j, g, counts in rows:
            for label, n in zip(("model_a", "tie", "model_b"), counts):
                expanded += [(f"judge{k}", f"item{i}", f"item{j}", f"q{g}", label)] * int(n)
        frame = pd.DataFrame(expanded, columns=["judge", "model_a", "model_b", "question_id",
                                                "winner"])
        read = dict(cluster="question_id") if spec["questions"] else {}
    new = np.random.default_rng(0).random(len(frame)) < 0.01
    with warnings.catch_warnings():  # a 1% batch has few verdicts per judge by nature
        warnings.filterwarnings("ignore", message=r".*judges in column .* with a median of")
        batch = hb.Comparisons.from_frame(frame[new], **read)
    return hb.Comparisons.from_frame(frame[~new], **read), batch, spec["rank"], spec["bias"]


def child(args):
    """One timed call in this (fresh) process; prints a JSON line."""
    import hja_bayes as hb

    old, new, rank, bias = panel(args.panel)
    if args.child == "update":  # what the update imports on first use is timed with it
        fit = hb.load_fit(args.fit_dir)
        t = time.perf_counter()
        out = fit.update(new)
    else:
        from hja_bayes.design import merge_comparisons

        merged = merge_comparisons(old, new)
        t = time.perf_counter()
        out = hb.fit_hja(merged, rank=rank, position_bias=bias)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "nll": out.nll, "n_iter": out.n_iter}))


def fresh(kind, name, fit_dir, cache_dir, cache_on: bool, repeats=3):
    env = dict(os.environ, HJA_BAYES_CACHE="on" if cache_on else "off",
               HJA_BAYES_CACHE_DIR=str(cache_dir))
    times = []
    for _ in range(repeats + (1 if cache_on else 0)):  # with the cache, one run fills it
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--panel", name,
                              "--fit-dir", str(fit_dir)], capture_output=True, text=True,
                             env=env, check=True)
        times.append(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])
    return float(np.median(times[1:] if cache_on else times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=("update", "refit"))
    parser.add_argument("--panel")
    parser.add_argument("--fit-dir")
    parser.add_argument("--panels", default=",".join(PANELS))
    parser.add_argument("--out", default=str(HERE / "results" / "update"))
    args = parser.parse_args()
    if args.child:
        return child(args)
    import hja_bayes as hb
    from hja_bayes.design import merge_comparisons

    rows = []
    tmp = Path(tempfile.mkdtemp())
    for name in args.panels.split(","):
        load = os.getloadavg()[0]
        old, new, rank, bias = panel(name)
        merged = merge_comparisons(old, new)
        fit = hb.fit_hja(old, rank=rank, position_bias=bias)
        fit_dir = tmp / name.replace(" ", "_").replace(",", "")
        fit.save(fit_dir)
        updated, refit = fit.update(new), hb.fit_hja(merged, rank=rank, position_bias=bias)
        tight = hb.fit_hja(merged, rank=rank, position_bias=bias, tol=1e-14, max_iter=50_000)

        def median(f, n=15):
            times = []
            for _ in range(n):
                t = time.perf_counter()
                f()
                times.append(time.perf_counter() - t)
            return float(np.median(times))

        warm_update = median(lambda: fit.update(new))
        warm_refit = median(lambda: hb.fit_hja(merged, rank=rank, position_bias=bias))
        # from the same inputs as the update (the old data and the new verdicts)
        warm_merge_refit = median(lambda: hb.fit_hja(merge_comparisons(old, new), rank=rank,
                                                     position_bias=bias))
        row = {
            "panel": name, "comparisons": merged.n_comparisons, "cells": merged.n_cells,
            "new": new.n_comparisons, "rank": rank, "position_bias": bias,
            "update_steps": updated.n_iter, "refit_iterations": refit.n_iter,
            "nll_rel_update_vs_refit": abs(updated.nll - refit.nll) / refit.nll,
            "nll_rel_update_vs_tight": abs(updated.nll - tight.nll) / tight.nll,
            "nll_rel_refit_vs_tight": abs(refit.nll - tight.nll) / tight.nll,
            "max_dS_update_vs_refit": float(np.abs(updated.S - refit.S).max()),
            "max_dS_update_vs_tight": float(np.abs(updated.S - tight.S).max()),
            "max_dS_refit_vs_tight": float(np.abs(refit.S - tight.S).max()),
            "warm_update_s": warm_update, "warm_refit_s": warm_refit,
            "warm_speedup": warm_refit / warm_update,
            "warm_merge_refit_s": warm_merge_refit,
            "warm_speedup_with_merge": warm_merge_refit / warm_update,
        }
        for cache_on in (True, False):
            cache = tmp / ("cache_" + fit_dir.name)
            label = "cache_on" if cache_on else "cache_off"
            u = fresh("update", name, fit_dir, cache, cache_on)
            r = fresh("refit", name, fit_dir, cache, cache_on)
            row.update({f"fresh_{label}_update_s": u, f"fresh_{label}_refit_s": r,
                        f"fresh_{label}_speedup": r / u})
        row["load"] = [load, os.getloadavg()[0]]
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        Path(args.out + ".json").write_text(json.dumps({"rows": rows}, indent=1))
    write_markdown(rows, args.out + ".md")


def write_markdown(rows, path):
    lines = [
        "# fit.update on +1% data against a full refit",
        "",
        "`python benchmarks/bench_update.py` (OPENBLAS_NUM_THREADS=1, nice'd, shared 2-core "
        "machine; load average at the start and end of each panel in the last column). "
        "The 99% fit is updated with 1% more verdicts (`fit.update`, Fisher scoring on the "
        "model's chart from the fit) and compared with `fit_hja` on the merged data (same "
        "rank and terms, default tol 1e-10) and with a tight refit (tol 1e-14) that stands "
        "for the exact optimum. Warm: one process, median of 15 calls after a first one; the "
        "speed-up against the refit alone, and (in brackets) against merging the new verdicts "
        "into the old data and refitting, which starts from the update's own inputs. "
        "Fresh: a new process per call (import, data, load the saved fit, one timed call), "
        "median of 3; cache on: the persistent compilation cache filled by an earlier "
        "process; cache off: everything compiled in the process.",
        "",
        "| panel | comparisons (+new) | update steps / refit iterations | rel. NLL update vs refit | max abs dS update vs tight / refit vs tight | warm update / refit (s) | warm speed-up (with the merge) | fresh, cache on: speed-up (update / refit s) | fresh, cache off: speed-up (update / refit s) | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['panel']} | {r['comparisons']:.0f} (+{r['new']:.0f}) | "
            f"{r['update_steps']} / {r['refit_iterations']} | {r['nll_rel_update_vs_refit']:.1e} | "
            f"{r['max_dS_update_vs_tight']:.1e} / {r['max_dS_refit_vs_tight']:.1e} | "
            f"{r['warm_update_s']:.4f} / {r['warm_refit_s']:.4f} | {r['warm_speedup']:.1f}x "
            f"({r['warm_speedup_with_merge']:.1f}x) | "
            f"{r['fresh_cache_on_speedup']:.1f}x ({r['fresh_cache_on_update_s']:.3f} / "
            f"{r['fresh_cache_on_refit_s']:.3f}) | {r['fresh_cache_off_speedup']:.1f}x "
            f"({r['fresh_cache_off_update_s']:.3f} / {r['fresh_cache_off_refit_s']:.3f}) | "
            f"{r['load'][0]:.1f}-{r['load'][1]:.1f} |")
    Path(path).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
