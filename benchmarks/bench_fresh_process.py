"""What a user feels: fresh processes, timed whole (import, compile, fit, intervals, output).

1. ``import hja_bayes`` against ``import jax.numpy, pandas`` (goal: ratio <= 1.1), median of
   ``--repeats`` fresh interpreters each, alternating.
2. ``hja-bayes fit chatbot_arena.csv --rank bic`` (Chatbot Arena from the JA-Ranking data,
   10 judges x 20 models), first run on a machine (an empty compilation cache: goal <= 0.6x
   the peer) and repeat runs (the cache filled: goal <= 0.4x), against a fresh process that
   fits arena-rank's pooled Bradley-Terry model with its confidence intervals on the same
   rows.  The peer runs in its own virtual environment (arena-rank pins its own jax):
   ``--arena-python`` (default ``$ARENA_PYTHON``); without it the ratios are not computed.
3. The same CLI call on a 5-judge x 5-model panel (the size of PandaLM).

Usage: ``python benchmarks/bench_fresh_process.py [--repeats 5] [--arena-python PATH]``.
Writes ``benchmarks/results/fresh_process.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import hja_bayes as hb

OUT = Path(__file__).parent / "results"
#: Goals (ratios to the peer): import, first run, repeat run.
GOAL_IMPORT, GOAL_FIRST, GOAL_REPEAT = 1.1, 0.6, 0.4
CLI = Path(sys.executable).with_name("hja-bayes")

PEER = r"""
import sys, pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.utils.data_utils import PairDataset
rows = pd.read_csv(sys.argv[1], dtype=str)
rows = rows[rows["winner"].isin(["model_a", "model_b", "tie"])]
data = PairDataset.from_pandas(rows)
model = BradleyTerry(len(data.competitors))
model.fit(data)
out = model.compute_ratings_and_cis(data)
print(len(out["competitors"]))
"""


def timed(cmd, env=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - t


def env_with(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.update(extra)
    return env


def import_times(repeats: int) -> dict:
    env = env_with(HJA_BAYES_CACHE="off")
    ours, base = [], []
    for _ in range(repeats):
        ours.append(timed([sys.executable, "-c", "import hja_bayes"], env))
        base.append(timed([sys.executable, "-c", "import jax.numpy, pandas"], env))
    a, b = statistics.median(ours), statistics.median(base)
    return dict(hja_bayes_s=a, jax_numpy_pandas_s=b, ratio=a / b, goal=GOAL_IMPORT,
                met=a / b <= GOAL_IMPORT)


def cli_times(csv: Path, repeats: int, work: Path, peer=None) -> dict:
    """Cold and repeat runs of the CLI; with ``peer`` (a command), one peer run after each
    pair, so both sides see the same load."""
    cold, warm, peers = [], [], []
    for r in range(repeats):
        cache = work / f"cache{r}"
        shutil.rmtree(cache, ignore_errors=True)
        env = env_with(HJA_BAYES_CACHE_DIR=str(cache), MPLBACKEND="Agg")
        cmd = [str(CLI), "fit", str(csv), "--rank", "bic", "--quiet", "--out",
               str(work / "fit")]
        cold.append(timed(cmd, env))
        warm.append(timed(cmd, env))
        if peer is not None:
            peers.append(timed(peer, env_with()))
    out = dict(cold_s=statistics.median(cold), warm_s=statistics.median(warm),
               cold_runs=cold, warm_runs=warm)
    if peers:
        out.update(peer_s=statistics.median(peers), peer_runs=peers)
    return out


def rows_of(data):
    """One row per judgment from the cells of a Comparisons."""
    import numpy as np
    import pandas as pd

    cells = data.to_frame()
    parts = []
    for label, count in (("model_a", data.first_wins), ("tie", data.ties),
                         ("model_b", data.second_wins)):
        repeat = np.rint(count).astype(int)
        parts.append(cells.loc[cells.index.repeat(repeat), ["judge", "model_a", "model_b"]]
                     .assign(winner=label))
    return pd.concat(parts, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--arena-python", default=os.environ.get("ARENA_PYTHON"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hja_fresh_"))
    arena_csv = hb.datasets.find_data_dir() / "ja_ranking" / "chatbot_arena.csv"
    result = dict(load_average_start=os.getloadavg()[0], imports=import_times(args.repeats))
    print("import", result["imports"], flush=True)
    peer = [args.arena_python, "-c", PEER, str(arena_csv)] if args.arena_python else None
    result["chatbot_arena"] = cli_times(arena_csv, args.repeats, work, peer)
    print("chatbot arena", result["chatbot_arena"], flush=True)
    small, _ = hb.simulate(n_judges=5, n_items=5, rank=1, comparisons_per_judge=300, seed=0)
    small_csv = work / "small.csv"
    rows_of(small).to_csv(small_csv, index=False)
    result["panel_5x5"] = cli_times(small_csv, args.repeats, work)
    print("5x5", result["panel_5x5"], flush=True)
    if args.arena_python:
        a = result["chatbot_arena"]
        p = a["peer_s"]
        result["arena_rank_s"] = p
        result["arena_rank_runs"] = a["peer_runs"]
        result["ratio_cold"] = a["cold_s"] / p
        result["ratio_warm"] = a["warm_s"] / p
        result["met_cold"] = result["ratio_cold"] <= GOAL_FIRST
        result["met_warm"] = result["ratio_warm"] <= GOAL_REPEAT
    OUT.mkdir(exist_ok=True)
    (OUT / "fresh_process.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Fresh processes (`python benchmarks/bench_fresh_process.py`)", "",
             f"median of {args.repeats} fresh processes each; machine: {os.cpu_count()} cores, "
             f"load average {result['load_average_start']:.1f} at the start, "
             f"{os.getloadavg()[0]:.1f} at the end; each arena-rank run follows one cold and "
             "one repeat run of ours, so both sides see the same load (compare the ratios)", "",
             "| what | seconds | peer | ratio | goal |", "|---|---|---|---|---|"]
    imp = result["imports"]
    lines.append(f"| `import hja_bayes` | {imp['hja_bayes_s']:.2f} | `import jax.numpy, pandas` "
                 f"{imp['jax_numpy_pandas_s']:.2f} | {imp['ratio']:.2f} | <= {GOAL_IMPORT}: "
                 f"{'met' if imp['met'] else 'MISSED'} |")
    a = result["chatbot_arena"]
    peer = result.get("arena_rank_s")
    for key, goal, label in (("cold", GOAL_FIRST, "first run (empty cache)"),
                             ("warm", GOAL_REPEAT, "repeat run")):
        if peer:
            ratio = result[f"ratio_{key}"]
            verdict = f"<= {goal}: {'met' if ratio <= goal else 'MISSED'}"
            lines.append(f"| `hja-bayes fit chatbot_arena.csv --rank bic`, {label} | "
                         f"{a[key + '_s']:.1f} | arena-rank fit + CIs {peer:.1f} | {ratio:.2f} | {verdict} |")
        else:
            lines.append(f"| `hja-bayes fit chatbot_arena.csv --rank bic`, {label} | "
                         f"{a[key + '_s']:.1f} | (peer not run) | | |")
    s = result["panel_5x5"]
    lines.append(f"| same on a 5 x 5 panel, first run | {s['cold_s']:.1f} | | | |")
    lines.append(f"| same on a 5 x 5 panel, repeat run | {s['warm_s']:.1f} | | | |")
    (OUT / "fresh_process.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
