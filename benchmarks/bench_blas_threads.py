"""One BLAS thread in the package's entry points (``hja_bayes.threads``) against the caller's.

Each workload runs in a fresh process twice: as a user gets it (the entry points limit every
BLAS library to one thread) and with ``HJA_BAYES_BLAS_THREADS=keep`` (the libraries' own
pools, one thread per core: what the package did before).  In each process the workload runs
once to compile, then ``--repeats`` times; the median is reported, with the load average.

* cluster-robust (CR2) fit and intervals: ``fit_hja(data, rank="bic")`` then
  ``fit.intervals()`` on MT-Bench, Chatbot Arena (JA-Ranking slices, prompts from
  ``question_id``) and PRD;
* the fragility audit by prompts on MT-Bench (rank 1).

Run: ``python benchmarks/bench_blas_threads.py`` (writes benchmarks/results/blas_threads.md
and .json; needs the data sets, ``HJA_DATA_DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results"

WORKLOAD = r"""
import json, sys, time, warnings
import numpy as np
import hja_bayes as hb

warnings.simplefilter("ignore")
name, repeats = sys.argv[1], int(sys.argv[2])
if name == "prd":
    data = hb.Comparisons.from_frame(hb.datasets.load_prd_vicuna80().judgments,
                                     cluster="question_id")
else:
    data = hb.Comparisons.from_frame(hb.datasets.load_ja_ranking(name.split(":")[0]),
                                     cluster="question_id")
if name.endswith(":fragility"):
    fit = hb.fit_hja(data, rank=1)
    work = lambda: fit.fragility("top", "prompt")
else:
    work = lambda: hb.fit_hja(data, rank="bic").intervals()
work()
times = []
for _ in range(repeats):
    t = time.perf_counter()
    work()
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""

WORKLOADS = {"mtbench": "MT-Bench, CR2 fit + intervals",
             "chatbot_arena": "Chatbot Arena, CR2 fit + intervals",
             "prd": "PRD, CR2 fit + intervals",
             "mtbench:fragility": "MT-Bench, fragility by prompts (rank 1)"}


def run(name: str, repeats: int, keep: bool) -> float:
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if keep:
        env["HJA_BAYES_BLAS_THREADS"] = "keep"
    else:
        env.pop("HJA_BAYES_BLAS_THREADS", None)
    done = subprocess.run([sys.executable, "-c", WORKLOAD, name, str(repeats)], env=env,
                          capture_output=True, text=True, check=True)
    times = json.loads(done.stdout.strip().splitlines()[-1])
    return float(sorted(times)[len(times) // 2])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows, loads = [], [os.getloadavg()]
    for name, label in WORKLOADS.items():
        one, keep = run(name, args.repeats, False), run(name, args.repeats, True)
        rows.append(dict(workload=label, one_thread_s=one, callers_threads_s=keep,
                         ratio=one / keep))
        print(f"{label}: {one:.3f} s against {keep:.3f} s ({one / keep:.2f}x)", flush=True)
    loads.append(os.getloadavg())
    payload = dict(cores=os.cpu_count(), repeats=args.repeats, rows=rows,
                   load_average=[[round(x, 2) for x in load] for load in loads])
    OUT.mkdir(exist_ok=True)
    (OUT / "blas_threads.json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = ["# One BLAS thread against the caller's (`python benchmarks/bench_blas_threads.py`)",
             "", f"{os.cpu_count()} cores; median of {args.repeats} warm calls in a fresh "
             "process each; load average (1, 5, 15 min) at the start "
             f"{payload['load_average'][0]} and the end {payload['load_average'][1]}.", "",
             "| workload | one BLAS thread (default) | the libraries' own threads (`keep`) "
             "| ratio |", "|---|---|---|---|"]
    lines += [f"| {r['workload']} | {r['one_thread_s']:.3f} s | {r['callers_threads_s']:.3f} s "
              f"| {r['ratio']:.2f}x |" for r in rows]
    (OUT / "blas_threads.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
