"""Logs beyond memory: a large synthetic judge log scanned by DuckDB, fitted, with
cluster-robust intervals, under a peak-RSS budget; and from_frame + pooled BTL against
evalica on rows in memory.

Three stages (each can run alone):

``generate``
    Writes ``--rows`` judgments (``prompt``, ``judge``, ``model_a``, ``model_b``,
    ``winner``) among ``--models`` models, ``--judges`` judges and ``--prompts`` prompts as
    parquet partitioned in folders ``part=NNN/`` under ``--data``, in chunks (bounded
    memory).  The truth is a rank-1 HJA panel (``S = gamma mu^T + u v^T``) plus a
    per-(prompt, model) answer effect; 10% ties, 0.5% invalid verdicts.
``scan``
    In a fresh subprocess: ``Comparisons.scan(data, cluster="prompt", incidence="engine")``
    with DuckDB under ``--memory-limit``, ``fit_hja(rank=1)`` and cluster-robust intervals
    (prompt scores summed in the engine).  Reports each step's wall time and the process's
    peak RSS (``ru_maxrss``, DuckDB's memory included: it runs in the process).
``memory``
    ``--memory-rows`` rows in a pandas frame: ``from_frame`` + ``fit_pooled_btl`` against
    ``evalica.bradley_terry`` on the same rows (both end to end from the rows; best of
    ``--repeats``).

The defaults are the goal: 100M rows, 200 models, 20 judges, 5M prompts, 2 GB peak RSS.
On a small shared machine run smaller sizes (``--rows 20000000``) and say so.  Results go to
``benchmarks/results/scan_<rows>.json`` and ``.md``, with the load average beside the times::

    nice python benchmarks/bench_scan.py --data /tmp/scanlog generate scan memory
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).resolve().parent / "results"
VERDICTS = np.array(["model_a", "model_b", "tie", "invalid"], dtype=object)


def truth(n_models: int, n_judges: int, seed: int):
    """A rank-1 HJA score matrix (K, N)."""
    rng = np.random.default_rng(seed)
    mu = np.sort(rng.normal(0, 1, n_models))[::-1]
    mu -= mu.mean()
    gamma = rng.uniform(0.6, 1.4, n_judges)
    gamma *= n_judges / gamma.sum()
    v = rng.normal(0, 0.4, n_models)
    v -= v.mean()
    u = rng.normal(0, 1, n_judges)
    return np.outer(gamma, mu) + np.outer(u, v)


def generate(args) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(args.data)
    if out.exists() and any(out.rglob("*.parquet")):
        raise SystemExit(f"{out} already holds parquet files: remove it or pick another --data")
    S = truth(args.models, args.judges, args.seed)
    models = pa.array([f"model-{i:03d}" for i in range(args.models)])
    judges = pa.array([f"judge-{k:02d}" for k in range(args.judges)])
    verdicts = pa.array(list(VERDICTS))
    rng = np.random.default_rng(args.seed + 1)
    t0 = time.perf_counter()
    written, part = 0, 0
    while written < args.rows:
        n = min(args.chunk, args.rows - written)
        prompt = rng.integers(0, args.prompts, n)
        k = rng.integers(0, args.judges, n)
        i = rng.integers(0, args.models, n)
        j = (i + rng.integers(1, args.models, n)) % args.models
        # the answers' quality on a prompt: a hash of (prompt, model), fixed across rows
        effect = 0.5 * (((prompt * 1_000_003 + i * 7919) % 9973) / 9973 - 0.5) \
            - 0.5 * (((prompt * 1_000_003 + j * 7919) % 9973) / 9973 - 0.5)
        p = 1 / (1 + np.exp(-(S[k, i] - S[k, j] + effect)))
        u = rng.random(n)
        verdict = np.where(u < 0.9 * p, 0, np.where(u < 0.9, 1, 2))
        verdict = np.where(rng.random(n) < 0.005, 3, verdict)
        table = pa.table({
            "prompt": pa.array(prompt, pa.int64()),
            "judge": pa.DictionaryArray.from_arrays(pa.array(k, pa.int32()), judges),
            "model_a": pa.DictionaryArray.from_arrays(pa.array(i, pa.int32()), models),
            "model_b": pa.DictionaryArray.from_arrays(pa.array(j, pa.int32()), models),
            "winner": pa.DictionaryArray.from_arrays(pa.array(verdict, pa.int32()), verdicts),
        })
        folder = out / f"part={part:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, folder / "data.parquet", row_group_size=1 << 20)
        written += n
        part += 1
        print(f"  generated {written:,} rows", file=sys.stderr, flush=True)
    size = sum(f.stat().st_size for f in out.rglob("*.parquet"))
    return {"rows": written, "files": part, "bytes": size,
            "seconds": time.perf_counter() - t0}


def _scan_child(args) -> dict:
    """Runs in a fresh process: scan, fit, intervals; returns timings and peak RSS."""
    import warnings

    from hja_bayes import Comparisons, fit_hja

    timings = {}
    t0 = time.perf_counter()
    data = Comparisons.scan(args.data, cluster="prompt", incidence="engine",
                            memory_limit=args.memory_limit, rows_per_group=args.rows_per_group)
    timings["scan"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_hja(data, rank=1)
    timings["fit_hja_rank1"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    wald = fit.wald_inference("cluster")
    table = wald.intervals()
    timings["cluster_intervals"] = time.perf_counter() - t0
    return {"seconds": timings, "total_seconds": sum(timings.values()),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "rows_read": data.rows_read, "rows_used": data.rows_used,
            "judges": data.n_judges, "models": data.n_items, "cells": data.n_cells,
            "prompts": data.clusters.n_clusters, "converged": bool(fit.converged),
            "iterations": int(fit.n_iter), "mu_se_median": float(
                table[table.quantity == "mu"]["se"].median())}


def scan(args) -> dict:
    command = [sys.executable, __file__, "--data", str(args.data), "--memory-limit",
               args.memory_limit, "--rows-per-group", str(args.rows_per_group), "_scan_child"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the scan failed:\n{done.stderr[-4000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    report["peak_rss_children_bytes"] = usage.ru_maxrss * 1024
    return report


def memory(args) -> dict:
    import evalica
    import pandas as pd

    from hja_bayes import Comparisons, fit_pooled_btl

    S = truth(args.models, args.judges, args.seed)
    rng = np.random.default_rng(args.seed + 2)
    n = args.memory_rows
    i = rng.integers(0, args.models, n)
    j = (i + rng.integers(1, args.models, n)) % args.models
    k = rng.integers(0, args.judges, n)
    p = 1 / (1 + np.exp(-(S[k, i] - S[k, j])))
    u = rng.random(n)
    names = np.array([f"model-{m:03d}" for m in range(args.models)], dtype=object)
    rows = pd.DataFrame({"model_a": names[i], "model_b": names[j],
                         "winner": VERDICTS[np.where(u < 0.9 * p, 0, np.where(u < 0.9, 1, 2))]})
    outcome = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y,
               "tie": evalica.Winner.Draw}

    def ours():
        fit_pooled_btl(Comparisons.from_frame(rows, judge=None))

    def theirs():
        evalica.bradley_terry(rows["model_a"], rows["model_b"], rows["winner"].map(outcome))

    best = {}
    for name, fn in (("hja_bayes", ours), ("evalica", theirs)):
        runs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        best[name] = {"best": min(runs), "runs": runs}
    return {"rows": n, "models": args.models, "seconds": best,
            "ratio_hja_over_evalica": best["hja_bayes"]["best"] / best["evalica"]["best"]}


def write_markdown(path: Path, report: dict) -> None:
    title = ("Logs beyond memory: DuckDB scan, rank-1 fit, cluster-robust intervals"
             if "scan" in report else "In memory: from_frame + pooled BTL against evalica")
    lines = [f"# {title}", "",
             f"Machine: {report['machine']['cpu_count']} CPUs, shared; load average "
             f"{report['machine']['load_before']} before, {report['machine']['load_after']} after "
             "(1, 5, 15 min).", f"Command: `{report['command']}`", ""]
    if "generate" in report:
        g = report["generate"]
        lines += [f"Generated {g['rows']:,} rows in {g['files']} parquet files "
                  f"({g['bytes'] / 2**30:.2f} GiB) in {g['seconds']:.0f} s.", ""]
    if "scan" in report:
        s = report["scan"]
        lines += ["| step | seconds |", "|---|---|"]
        lines += [f"| {k} | {v:.1f} |" for k, v in s["seconds"].items()]
        lines += [f"| total | {s['total_seconds']:.1f} |", "",
                  f"{s['rows_read']:,} rows read ({s['rows_used']:,} used), {s['judges']} judges, "
                  f"{s['models']} models, {s['cells']:,} cells, {s['prompts']:,} prompts; "
                  f"peak RSS {s['peak_rss_bytes'] / 2**30:.2f} GiB (budget "
                  f"{report['config']['rss_budget_gib']} GiB); fit converged: {s['converged']} "
                  f"({s['iterations']} iterations).", ""]
    if "memory" in report:
        m = report["memory"]
        lines += [f"In memory, {m['rows']:,} rows, {m['models']} models: from_frame + "
                  f"fit_pooled_btl {m['seconds']['hja_bayes']['best']:.2f} s, evalica "
                  f"bradley_terry {m['seconds']['evalica']['best']:.2f} s (best of "
                  f"{len(m['seconds']['evalica']['runs'])}); ratio "
                  f"{m['ratio_hja_over_evalica']:.2f}.", ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stages", nargs="+",
                        choices=["generate", "scan", "memory", "_scan_child"])
    parser.add_argument("--data", type=Path, default=Path("scan_log"),
                        help="folder of the generated log (about 0.8 GiB at 100M rows)")
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--judges", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=5_000_000)
    parser.add_argument("--chunk", type=int, default=5_000_000, help="rows per parquet file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-limit", default="500MB", help="DuckDB's memory_limit")
    parser.add_argument("--rows-per-group", type=int, default=500_000)
    parser.add_argument("--rss-budget-gib", type=float, default=2.0)
    parser.add_argument("--memory-rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.stages == ["_scan_child"]:
        print(json.dumps(_scan_child(args)))
        return {}
    report = {"command": " ".join(["python benchmarks/bench_scan.py",
                                   *(argv if argv is not None else sys.argv[1:])]),
              "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                         if k not in ("stages", "out")},
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "load_before": [round(x, 2) for x in os.getloadavg()]}}
    for stage in args.stages:
        print(f"{stage} ...", file=sys.stderr, flush=True)
        report[stage] = {"generate": generate, "scan": scan, "memory": memory}[stage](args)
        print(json.dumps(report[stage], indent=1), file=sys.stderr, flush=True)
    report["machine"]["load_after"] = [round(x, 2) for x in os.getloadavg()]
    rows = report.get("generate", {}).get("rows") or args.rows
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"scan_{rows // 1_000_000}M" if "scan" in report else "scan_memory"
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    write_markdown(args.out / f"{stem}.md", report)
    return report


if __name__ == "__main__":
    main()
