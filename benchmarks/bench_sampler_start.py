"""The first ``sample_hja`` in a fresh process: how much of it is NumPyro's start-up.

NumPyro starts a chain by evaluating the model and its gradient outside any compiled
program; JAX then compiles every operation on its own.  ``sample_hja``'s whitened model is
one compiled density (``hja_bayes.bayes.laplace.preconditioned``), so that start-up is a few
compiled calls.  Each run is a new process with the compilation cache off (what a user meets
the first time), sampling PRD Vicuna80 (bundled) with position bias, 2 chains x (50 + 50);
the time of the whole call and of NumPyro's ``HMC.init`` (every chain's start) are reported.

Run: ``python benchmarks/bench_sampler_start.py [--repeats 3]`` (writes
``benchmarks/results/sampler_start.md`` and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).parent / "results"

CHILD = r"""
import json, sys, time, warnings
import numpyro.infer.hmc as hmc
import hja_bayes as hb
warnings.simplefilter("ignore")
rank = int(sys.argv[1])
data = hb.Comparisons.from_frame(hb.datasets.load_prd_vicuna80().judgments)
fit = hb.fit_hja(data, rank=rank, position_bias=True)
start, spent = hmc.HMC.init, []
def timed(self, *args, **kwargs):
    t = time.perf_counter()
    out = start(self, *args, **kwargs)
    spent.append(time.perf_counter() - t)
    return out
hmc.HMC.init = timed
t = time.perf_counter()
hb.sample_hja(data, rank, init=fit, num_warmup=50, num_samples=50, num_chains=2, seed=0,
              progress_bar=False)
print(json.dumps({"total": time.perf_counter() - t, "init": spent}))
"""


def one_run(rank: int) -> dict:
    env = dict(os.environ, HJA_BAYES_CACHE="off")
    out = subprocess.run([sys.executable, "-c", CHILD, str(rank)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    result = {}
    for rank in (0, 1):
        runs = [one_run(rank) for _ in range(args.repeats)]
        result[f"rank {rank}"] = {
            "runs": runs,
            "total_s": statistics.median(r["total"] for r in runs),
            "init_s": statistics.median(sum(r["init"]) for r in runs),
            "first_chain_init_s": statistics.median(r["init"][0] for r in runs),
        }
        print(rank, result[f"rank {rank}"], flush=True)
    load.append(os.getloadavg()[0])
    result["load"] = load
    OUT.mkdir(exist_ok=True)
    (OUT / "sampler_start.json").write_text(json.dumps(result, indent=2))
    lines = ["# The first `sample_hja` in a fresh process", "",
             f"`python benchmarks/bench_sampler_start.py --repeats {args.repeats}`: PRD "
             "Vicuna80 with position bias, 2 chains x (50 + 50), a new process per run with "
             "the compilation cache off; medians of the runs; load average "
             f"{load[0]:.1f} at the start, {load[1]:.1f} at the end.", "",
             "| rank | whole `sample_hja` call (s) | NumPyro's `HMC.init`, both chains (s) | "
             "first chain's start (s) |", "|---|---|---|---|"]
    for rank in (0, 1):
        r = result[f"rank {rank}"]
        lines.append(f"| {rank} | {r['total_s']:.1f} | {r['init_s']:.1f} | "
                     f"{r['first_chain_init_s']:.1f} |")
    (OUT / "sampler_start.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
