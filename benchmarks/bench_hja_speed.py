"""Speed of the HJA MAP fit plus Wald intervals.

Cases:
- each real panel (MT-Bench, Chatbot Arena, PRD Vicuna80): ``fit_hja(rank="bic")`` then
  ``fit.intervals()`` (goal < 1 s after JIT warm-up);
- a simulated panel K=20, N=100, r=3 with 400k comparisons: ``fit_hja(rank=3)`` then
  ``fit.intervals()`` (goal: MAP + Wald <= 5 s);
- the same panel with 4M comparisons: the cells are the same, so the time should be too
  (memory and time grow with cells, never with rows).

"cold" is the first call in the process (JIT compilation included), "warm" the median of
the following ``--repeats`` calls.

Against the peer, in the same process (when ``arena_rank`` is importable, e.g. the
``bench`` extra): Chatbot Arena's ``fit_hja(rank="bic")`` + ``fit.intervals()`` against
arena-rank's pooled ``BradleyTerry.fit`` + ``compute_ratings_and_cis`` on the same rows
(each side's data object built beforehand, outside the timing; building it is reported
apart), one call of each in turn, ``--peer-repeats`` pairs after one warm-up pair; the goal
is a median ratio <= 0.5.  Both run on the one JAX of the process (arena-rank pins its own
JAX version: install it where it can have that one, and hja_bayes there with ``--no-deps``).

Usage: ``python benchmarks/bench_hja_speed.py [--repeats 3] [--peer-repeats 15]``.
Writes ``benchmarks/results/hja_speed.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from importlib.metadata import version
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


WARM_GOAL = 0.5


def against_peer(df, repeats):
    """Warm Chatbot Arena fit + intervals, ours and arena-rank's, alternating in one process;
    None when arena-rank is not importable."""
    try:
        from arena_rank.models.bradley_terry import BradleyTerry
        from arena_rank.utils.data_utils import PairDataset
    except ImportError as exc:
        print(f"arena-rank not importable ({exc}): no warm ratio")
        return None
    import jax

    rows = df[df["winner"].isin(["model_a", "model_b", "tie"])]
    times = {k: [] for k in ("ours", "peer", "ours_data", "peer_data")}

    def clock(key, fn):
        t = time.perf_counter()
        out = fn()
        times[key].append(time.perf_counter() - t)
        return out

    def ours(data):
        fit = hb.fit_hja(data, rank="bic")
        fit.intervals()
        return fit

    def peer(dataset):
        model = BradleyTerry(len(dataset.competitors))
        model.fit(dataset)
        return np.asarray(model.compute_ratings_and_cis(dataset)["rating_lower"])

    for i in range(repeats + 1):  # the first pair compiles
        data = clock("ours_data", lambda: hb.Comparisons.from_frame(df))
        fit = clock("ours", lambda: ours(data))
        dataset = clock("peer_data", lambda: PairDataset.from_pandas(rows))
        clock("peer", lambda: peer(dataset))
    med = {k: float(np.median(v[1:])) for k, v in times.items()}
    return dict(ours_s=med["ours"], peer_s=med["peer"], ratio=med["ours"] / med["peer"],
                ours_data_s=med["ours_data"], peer_data_s=med["peer_data"],
                ratio_with_data=(med["ours"] + med["ours_data"]) / (med["peer"] + med["peer_data"]),
                ours_runs=times["ours"][1:], peer_runs=times["peer"][1:], repeats=repeats,
                rank=fit.rank, ranks_fitted=int((fit.rank_table["n_iter"] > 0).sum()),
                n_iter=int(fit.rank_table["n_iter"].sum()), jax=jax.__version__,
                arena_rank=version("arena-rank"), goal=WARM_GOAL,
                met=med["ours"] / med["peer"] <= WARM_GOAL, load_average=os.getloadavg()[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer-repeats", type=int, default=15)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    results = {}
    panels = {"PRD Vicuna80": hb.datasets.load_prd_vicuna80().judgments}
    for name, key in (("MT-Bench", "mtbench"), ("Chatbot Arena", "chatbot_arena")):
        try:
            panels[name] = hb.datasets.load_ja_ranking(key)
        except hb.DataError as exc:
            print(f"skipping {name}: {exc}")
    load_start = os.getloadavg()[0]
    for name, df in panels.items():
        results[name + ' (rank="bic")'] = case(hb.Comparisons.from_frame(df), "bic", args.repeats)
        print(name, results[name + ' (rank="bic")'], flush=True)
    peer = None
    if "Chatbot Arena" in panels:  # after the cold calls above
        peer = against_peer(panels["Chatbot Arena"], args.peer_repeats)
        print("against arena-rank", peer, flush=True)
    for T in (20_000, 200_000):
        data, _ = hb.simulate(n_judges=20, n_items=100, rank=3, comparisons_per_judge=T, seed=0)
        label = f"simulated K=20 N=100 r=3, {20 * T:,} comparisons (rank=3)"
        results[label] = case(data, 3, args.repeats)
        print(label, results[label], flush=True)
    load = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hja_speed.json").write_text(json.dumps(
        {"load_average_start": load_start, "load_average": load, "against_arena_rank": peer,
         "results": results}, indent=1))
    lines = ["# HJA speed: MAP fit + Wald intervals", "",
             f"Command: `python benchmarks/bench_hja_speed.py --repeats {args.repeats} "
             f"--peer-repeats {args.peer_repeats}`; {os.cpu_count()} CPUs, load average "
             f"{load_start:.1f} at the start, {load:.1f} at the end (the machine was shared, so "
             "times are upper bounds; compare the ratio).", ""]
    if peer is not None:
        lines += [
            f"Warm, in one process (JAX {peer['jax']}, arena-rank {peer['arena_rank']}, "
            f"{peer['repeats']} alternating pairs after one warm-up pair, load "
            f"{peer['load_average']:.1f}): Chatbot Arena `fit_hja(rank=\"bic\")` + `intervals()` "
            f"{peer['ours_s']:.3f} s (rank {peer['rank']}, {peer['ranks_fitted']} ranks fitted, "
            f"{peer['n_iter']} solver steps) against arena-rank's `BradleyTerry.fit` + "
            f"`compute_ratings_and_cis` {peer['peer_s']:.3f} s: **{peer['ratio']:.2f}x** (goal <= "
            f"{WARM_GOAL}: {'met' if peer['met'] else 'MISSED'}). Building each side's data "
            f"object from the rows: {peer['ours_data_s']:.3f} s (`Comparisons.from_frame`) and "
            f"{peer['peer_data_s']:.3f} s (`PairDataset.from_pandas`); with it, "
            f"{peer['ratio_with_data']:.2f}x.", ""]
    lines += ["| case | cells | comparisons | rank | iterations | cold (s) | warm (s) | goal |",
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
