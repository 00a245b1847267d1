"""plan() over every pair of many models: time and peak memory of a whole call.

Assumed scores evenly spread over 4 logits, 3 judges, ``pairs="all"``, a gap of 0.3 logits
to detect in every pair at power 0.8 (``multiplicity="pairs"``).  Each size runs in a fresh
process, so its peak resident memory is the call's own (with the import's).  With
``--peer PATH`` the same call runs from another checkout of the package as well (e.g. one
from before the contrasts were drawn through the models' scores), on the sizes up to
``--peer-up-to``, and the ratio of the two is printed.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_plan_scale.py [--sizes 30,60,120,200,500]
[--peer PATH]`` (writes benchmarks/results/plan_scale.md and .json).
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

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]  # this checkout: "ours"

CHILD = """
import json, resource, sys, time
import numpy as np
import hja_bayes as hb
N = int(sys.argv[1])
t = time.perf_counter()
p = hb.plan(np.linspace(2.0, -2.0, N), judges=3, pairs="all", multiplicity="pairs",
            power=0.8, gap=0.3)
print(json.dumps({"package": hb.__file__, "seconds": time.perf_counter() - t,
                  "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
                  "comparisons_per_judge": p.comparisons_per_judge, "power": p.power,
                  "critical_value": p.critical_value, "pairs": len(p.table)}))
"""


def run(n_models: int, path: str, timeout: float) -> dict:
    """The call in a fresh process importing the package from the checkout at ``path`` (run
    from a neutral folder: ``python -c`` puts the working folder first on the path)."""
    env = dict(os.environ, PYTHONPATH=str(path))
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, str(n_models)], env=env,
                             cwd=tempfile.gettempdir(), capture_output=True, text=True,
                             timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"timed_out": timeout}
    except subprocess.CalledProcessError as error:
        return {"failed": error.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def describe(r: dict) -> str:
    if "timed_out" in r:
        return f"over {r['timed_out']:.0f} s (stopped)"
    if "failed" in r:
        return f"failed: {r['failed']}"
    return (f"{r['seconds']:.1f} s, {r['peak_gb']:.2f} GB, {r['comparisons_per_judge']} per "
            f"judge, power {r['power']:.3f}, c = {r['critical_value']:.3f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="30,60,120,200,500")
    parser.add_argument("--peer", help="another checkout's root, run the same way")
    parser.add_argument("--peer-up-to", type=int, default=120)
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--out", default=str(RESULTS / "plan_scale"))
    args = parser.parse_args(argv)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        row = {"models": n, "ours": run(n, ROOT, args.timeout)}
        if args.peer and n <= args.peer_up_to:
            row["peer"] = run(n, args.peer, args.timeout)
        rows.append(row)
        line = f"{n} models ({n * (n - 1) // 2} pairs): {describe(row['ours'])}"
        if "peer" in row:
            line += f"; peer {describe(row['peer'])}"
            if "seconds" in row["peer"] and "seconds" in row["ours"]:
                line += (f"; time {row['ours']['seconds'] / row['peer']['seconds']:.2f}x, "
                         f"memory {row['ours']['peak_gb'] / row['peer']['peak_gb']:.2f}x")
        print(line, flush=True)
    result = {"rows": rows, "load_end": os.getloadavg()[0], "date": time.ctime(),
              "peer": args.peer}
    Path(args.out + ".json").write_text(json.dumps(result, indent=1))
    lines = ["# plan() over every pair", "",
             "| models | pairs | ours | peer | time ratio |", "|---|---|---|---|---|"]
    for row in rows:
        peer = row.get("peer")
        ratio = (f"{row['ours']['seconds'] / peer['seconds']:.2f}x"
                 if peer and "seconds" in peer and "seconds" in row["ours"] else "")
        lines.append(f"| {row['models']} | {row['models'] * (row['models'] - 1) // 2} | "
                     f"{describe(row['ours'])} | {describe(peer) if peer else ''} | {ratio} |")
    lines.append("")
    lines.append(f"Load at the end {result['load_end']:.2f}; {result['date']}.")
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
