"""Leaderboard scale: N=1000 models, K=20 judges, rank 2, 2M sparse comparisons.

Goal (issue 14, 4): ``Comparisons.from_frame`` + ``fit_hja(rank=2)`` + ``fit.intervals()`` <= 1.0x
arena-rank's pooled Bradley-Terry fit + confidence intervals on the same rows, with a peak
memory (RSS) <= 3 GB.

The panel comes from ``hja_bayes.simulate`` (each judge compares ``comparisons / K`` pairs
drawn uniformly among the N (N - 1) / 2, so each judge sees a random ~20% of the pairs once
or so).  Its rows (one per judgment) are written to a temporary parquet file.  Each side
then runs in a fresh process that reads the rows (not timed) and times its stages:

* ours: ``from_frame``, ``fit_hja(rank=2)`` (the MAP, JIT compilation included: a fresh
  process), ``fit.wald_inference()`` (information, factorisation) and ``fit.intervals()``
  (the table: mu, gamma, neighbouring differences); then, for reference, the per-comparison
  sandwich (``cov_type="sandwich"``) on the same fit;
* the peer (its own virtual environment, ``--arena-python``, default ``$ARENA_PYTHON``):
  ``PairDataset.from_pandas``, ``BradleyTerry.fit``, ``compute_ratings_and_cis``.

Peak memory is each process's maximum resident set (``getrusage``), the rows included.
The machine is shared: the load average is recorded at the start and the end; compare the
ratios, not the seconds.

``--one-process`` runs both sides in one process instead (the peer's environment, this
repository on ``PYTHONPATH``, so both use the peer's pinned JAX): each side's first call
(compilation included) and then a repeat, in both orders (ours first, the peer first, each
order a fresh process); it writes ``scale_one_process.json`` and ``.md`` and says which JAX,
how many threads and what was timed.

Usage: ``python benchmarks/bench_scale.py [--arena-python PATH] [--one-process] [--items 1000] ...``.
Writes ``benchmarks/results/scale.json`` and ``scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).parent / "results"
GOAL_RATIO, GOAL_GB = 1.0, 3.0

#: Each side's timed stages, shared by the one-side workers and the one-process run.
OUR_STAGES = r"""
import time, warnings
import hja_bayes as hb


def ours(rows, rank):
    times = {}
    t = time.perf_counter()
    data = hb.Comparisons.from_frame(rows)
    times["from_frame_s"] = time.perf_counter() - t
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.ConvergenceWarning)
        fit = hb.fit_hja(data, rank=rank)
    times["fit_s"] = time.perf_counter() - t
    t = time.perf_counter()
    wald = fit.wald_inference()
    times["wald_s"] = time.perf_counter() - t
    t = time.perf_counter()
    table = fit.intervals()
    times["table_s"] = time.perf_counter() - t
    times["n_iter"] = int(fit.n_iter)
    return times, data, fit, wald, table
"""

PEER_STAGES = r"""
import time
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.utils.data_utils import PairDataset


def peer(rows):
    rows = rows[rows["winner"].isin(["model_a", "model_b", "tie"])]
    times = {}
    t = time.perf_counter()
    data = PairDataset.from_pandas(rows)
    times["dataset_s"] = time.perf_counter() - t
    t = time.perf_counter()
    model = BradleyTerry(len(data.competitors))
    model.fit(data)
    times["fit_s"] = time.perf_counter() - t
    t = time.perf_counter()
    out = model.compute_ratings_and_cis(data)
    times["cis_s"] = time.perf_counter() - t
    return times, out
"""

WORKER = OUR_STAGES + r"""
import json, resource, sys
import pandas as pd

times, data, fit, wald, table = ours(pd.read_parquet(sys.argv[1]), int(sys.argv[2]))
rss_main = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
t = time.perf_counter()
fit.intervals(cov_type="sandwich")
times["sandwich_s"] = time.perf_counter() - t
print(json.dumps(dict(times, cells=int(data.n_cells), comparisons=float(data.n_comparisons),
                      converged=bool(fit.converged), rows=len(table),
                      cov_type=wald.cov_type, condition_number=wald.condition_number,
                      peak_gb=rss_main,
                      peak_gb_with_sandwich=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)))
"""

PEER = PEER_STAGES + r"""
import json, resource, sys
import pandas as pd

times, out = peer(pd.read_parquet(sys.argv[1]))
print(json.dumps(dict(times, competitors=len(out["competitors"]),
                      peak_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)))
"""

BOTH = OUR_STAGES + PEER_STAGES + r"""
import json, os, sys
import jax
import numpy as np
import pandas as pd

rows = pd.read_parquet(sys.argv[1])
rank, order = int(sys.argv[2]), sys.argv[3].split(",")
out = {"jax": jax.__version__, "numpy": np.__version__,
       "xla_flags": os.environ.get("XLA_FLAGS", ""), "cpus": os.cpu_count(), "calls": []}
for call in order:
    t = time.perf_counter()
    times = ours(rows, rank)[0] if call.startswith("ours") else peer(rows)[0]
    out["calls"].append(dict(times, call=call, total_s=time.perf_counter() - t))
print(json.dumps(out))
"""


def run_json(cmd: list[str]) -> tuple[dict, float]:
    """Run a script that prints one JSON line last; its result and the process's wall time."""
    t = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def make_rows(args, path: Path) -> dict:
    from bench_fresh_process import rows_of

    import hja_bayes as hb

    t = time.perf_counter()
    data, _ = hb.simulate(n_judges=args.judges, n_items=args.items, rank=args.rank,
                          comparisons_per_judge=args.comparisons // args.judges, seed=args.seed)
    rows = rows_of(data)
    rows.to_parquet(path)
    return dict(rows=len(rows), cells=int(data.n_cells), seconds=time.perf_counter() - t)


def verdict(value: float, goal: float) -> str:
    return f"<= {goal:g}: {'met' if value <= goal else 'MISSED'}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judges", type=int, default=20)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--rank", type=int, default=2)
    parser.add_argument("--comparisons", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arena-python", default=os.environ.get("ARENA_PYTHON"))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--one-process", action="store_true")
    args = parser.parse_args(argv)
    if args.one_process:
        return one_process(args)
    result = dict(load_average_start=os.getloadavg(), cpus=os.cpu_count(),
                  panel=dict(judges=args.judges, items=args.items, rank=args.rank,
                             comparisons=args.comparisons, seed=args.seed))
    with tempfile.TemporaryDirectory(prefix="hja_scale_") as work:
        path = Path(work) / "rows.parquet"
        result["panel"].update(make_rows(args, path))
        print("panel", result["panel"], flush=True)
        ours, wall = run_json([sys.executable, "-c", WORKER, str(path), str(args.rank)])
        ours["process_s"] = wall
        ours["total_s"] = ours["from_frame_s"] + ours["fit_s"] + ours["wald_s"] + ours["table_s"]
        result["hja_bayes"] = ours
        print("hja_bayes", ours, flush=True)
        if args.arena_python:
            peer, wall = run_json([args.arena_python, "-c", PEER, str(path)])
            peer["process_s"] = wall
            peer["total_s"] = peer["dataset_s"] + peer["fit_s"] + peer["cis_s"]
            result["arena_rank"] = peer
            result["ratio"] = ours["total_s"] / peer["total_s"]
            result["met_ratio"] = result["ratio"] <= GOAL_RATIO
            print("arena_rank", peer, flush=True)
    result["met_memory"] = ours["peak_gb"] <= GOAL_GB
    result["load_average_end"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "scale.md").write_text(report(result, args))
    print(report(result, args))


def one_process(args) -> None:
    """Both sides in one process of the peer's environment, in both orders."""
    if not args.arena_python:
        raise SystemExit("--one-process needs --arena-python (the peer's environment)")
    result = dict(load_average_start=os.getloadavg(),
                  panel=dict(judges=args.judges, items=args.items, rank=args.rank,
                             comparisons=args.comparisons, seed=args.seed), runs=[])
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    with tempfile.TemporaryDirectory(prefix="hja_scale_") as work:
        path = Path(work) / "rows.parquet"
        result["panel"].update(make_rows(args, path))
        for order in ("ours,peer,ours again,peer again", "peer,ours,peer again,ours again"):
            t = time.perf_counter()
            done = subprocess.run([args.arena_python, "-c", BOTH, str(path), str(args.rank),
                                   order], check=True, capture_output=True, text=True, env=env)
            run = json.loads(done.stdout.strip().splitlines()[-1])
            run["process_s"] = time.perf_counter() - t
            result["runs"].append(run)
            print(order, run, flush=True)
    result["load_average_end"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale_one_process.json").write_text(json.dumps(result, indent=2) + "\n")
    p, first = result["panel"], result["runs"][0]
    lines = ["# Leaderboard scale in one process (`python benchmarks/bench_scale.py "
             "--arena-python PATH --one-process`)", "",
             f"K={p['judges']}, N={p['items']}, rank {p['rank']}, {p['rows']:,} comparisons; "
             f"both sides in one process of the peer's environment (JAX {first['jax']}, NumPy "
             f"{first['numpy']}, {first['cpus']} CPUs, XLA_FLAGS "
             f"'{first['xla_flags']}'), each order in a fresh process; load average "
             f"{result['load_average_start'][0]:.1f} at the start, "
             f"{result['load_average_end'][0]:.1f} at the end. Ours: from_frame + fit_hja + "
             "wald_inference + intervals(); the peer: PairDataset.from_pandas + "
             "BradleyTerry.fit + compute_ratings_and_cis.", "",
             "| order | call | ours (s): read, fit, intervals, total | arena-rank (s): read, "
             "fit, CIs, total |", "|---|---|---|---|"]
    for run in result["runs"]:
        order = " then ".join(c["call"] for c in run["calls"][:2])
        for c in run["calls"]:
            if c["call"].startswith("ours"):
                intervals = c["wald_s"] + c["table_s"]
                cell = (f"{c['from_frame_s']:.2f}, {c['fit_s']:.2f} ({c['n_iter']} it.), "
                        f"{intervals:.2f}, **{c['total_s']:.2f}** | |")
            else:
                cell = (f" | {c['dataset_s']:.2f}, {c['fit_s']:.2f}, {c['cis_s']:.2f}, "
                        f"**{c['total_s']:.2f}** |")
            lines.append(f"| {order} | {c['call']} | {cell}")
    for run in result["runs"]:
        calls = {c["call"]: c["total_s"] for c in run["calls"]}
        lines.append("")
        lines.append(f"Order {run['calls'][0]['call']} first: first calls "
                     f"{calls['ours'] / calls['peer']:.2f}x, repeats "
                     f"{calls['ours again'] / calls['peer again']:.2f}x (goal <= 1.0).")
    (args.out / "scale_one_process.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def report(result: dict, args) -> str:
    p, o = result["panel"], result["hja_bayes"]
    peer = result.get("arena_rank")
    command = "python benchmarks/bench_scale.py" + (" --arena-python PATH" if peer else "")
    lines = [
        f"# Leaderboard scale (`{command}`)", "",
        f"K={p['judges']} judges, N={p['items']} models, rank {p['rank']}, "
        f"{p['rows']:,} comparisons in {p['cells']:,} cells (seed {p['seed']}); each side in a "
        f"fresh process (JIT compilation included); {result['cpus']} CPUs, load average "
        f"{result['load_average_start'][0]:.1f} at the start, {result['load_average_end'][0]:.1f} "
        "at the end (a shared machine: compare the ratios).", "",
        "| stage | hja_bayes (s) | arena-rank (s) |", "|---|---|---|",
        f"| read the rows into the model's data | from_frame {o['from_frame_s']:.2f} | "
        f"PairDataset.from_pandas {peer['dataset_s']:.2f} |" if peer else
        f"| read the rows | from_frame {o['from_frame_s']:.2f} | |",
        f"| fit | fit_hja(rank={p['rank']}) {o['fit_s']:.2f} ({o['n_iter']} iterations"
        f"{'' if o['converged'] else ', NOT converged'}) | BradleyTerry.fit {peer['fit_s']:.2f} |"
        if peer else f"| fit | fit_hja {o['fit_s']:.2f} | |",
        f"| intervals | wald_inference {o['wald_s']:.2f} + intervals() table {o['table_s']:.2f} "
        f"({o['rows']:,} rows) | compute_ratings_and_cis {peer['cis_s']:.2f} |" if peer else
        f"| intervals | {o['wald_s']:.2f} + {o['table_s']:.2f} | |",
        f"| total | {o['total_s']:.2f} | {peer['total_s']:.2f} |" if peer else
        f"| total | {o['total_s']:.2f} | |",
        f"| whole process (import, read, compile, all) | {o['process_s']:.1f} | "
        f"{peer['process_s']:.1f} |" if peer else f"| whole process | {o['process_s']:.1f} | |",
        f"| peak memory (GB, max RSS) | {o['peak_gb']:.2f} | {peer['peak_gb']:.2f} |" if peer else
        f"| peak memory (GB) | {o['peak_gb']:.2f} | |",
        "",
        "| goal | figure | verdict |", "|---|---|---|",
    ]
    if peer:
        lines.append(f"| from_frame + fit + intervals vs arena-rank fit + CIs | ratio "
                     f"{result['ratio']:.2f} | {verdict(result['ratio'], GOAL_RATIO)} |")
    else:
        lines.append("| ratio to arena-rank | peer not run (pass --arena-python) | |")
    lines.append(f"| peak memory | {o['peak_gb']:.2f} GB | {verdict(o['peak_gb'], GOAL_GB)} |")
    lines += ["", f"For reference on the same fit: the per-comparison sandwich "
              f"(`intervals(cov_type=\"sandwich\")`) {o['sandwich_s']:.2f} s, peak "
              f"{o['peak_gb_with_sandwich']:.2f} GB after it; condition number of the "
              f"information {o['condition_number']:.3g}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
