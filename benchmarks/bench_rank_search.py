"""Rank search: does stopping hopeless BIC candidates early ever change the chosen rank?

Panels simulated with ``hb.simulate`` (K x N, true rank, T comparisons per judge,
heterogeneity 0.5) over ``--seeds`` seeds, each fitted with ``fit_hja(rank="bic")`` twice:
with the early stop of :func:`hja_bayes.hja.selection.cannot_win_bic` (the default) and
with it switched off (every candidate runs to convergence or ``max_iter``).  Two ridges: the
default 0.01 and 1e-6, under which candidates above the true rank crawl.  Reported: how
often a candidate was stopped, whether the chosen rank ever differs (goal: never), the
smallest BIC margin by which a stopped candidate lost when run to the end, and the solver
iterations and seconds saved.

Usage: ``python benchmarks/bench_rank_search.py [--seeds 12]``.
Writes ``benchmarks/results/rank_search.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import hja_bayes as hb
from hja_bayes.hja import selection

OUT = Path(__file__).parent / "results"
DESIGNS = [(5, 6, 0, 40), (5, 6, 1, 100), (6, 8, 1, 60), (8, 12, 2, 150)]


def search(data, ridge: float, early: bool):
    selection.STOP_AFTER = STOP_AFTER if early else 10**9
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = hb.fit_hja(data, rank="bic", ridge=ridge)
    return fit, time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=12)
    args = parser.parse_args()
    rows = []
    for ridge in (0.01, 1e-6):
        for K, N, r, T in DESIGNS:
            warm, _ = hb.simulate(K, N, r, T, seed=10**6, heterogeneity=0.5)
            search(warm, ridge, True)  # compile this size class before timing
            for seed in range(args.seeds):
                data, _ = hb.simulate(K, N, r, T, seed=seed, heterogeneity=0.5)
                a, ta = search(data, ridge, True)
                b, tb = search(data, ridge, False)
                stopped = a.rank_table["stopped_early"].to_numpy()
                margins = (b.rank_table["bic"][stopped] - b.rank_table["bic"].min()).to_numpy()
                rows.append(dict(ridge=ridge, K=K, N=N, true_rank=r, T=T, seed=seed,
                                 chosen_early=a.rank, chosen_full=b.rank,
                                 stopped=int(stopped.sum()),
                                 min_margin=float(margins.min()) if margins.size else None,
                                 iterations_early=int(a.rank_table["n_iter"].sum()),
                                 iterations_full=int(b.rank_table["n_iter"].sum()),
                                 seconds_early=ta, seconds_full=tb))
            print(f"ridge {ridge:g}, K={K}, N={N}, r={r}, T={T}: done", flush=True)
    selection.STOP_AFTER = STOP_AFTER
    write(rows)


def write(rows: list[dict]) -> None:
    OUT.mkdir(exist_ok=True)
    payload = {"rows": rows, "stop_after": STOP_AFTER, "pace_window": selection.PACE_WINDOW,
               "load_average": os.getloadavg()}
    (OUT / "rank_search.json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = ["# Rank search: early stopping of BIC candidates (`python benchmarks/bench_rank_search.py`)",
             "",
             f"Each panel fitted with `rank='bic'` with the early stop (after {STOP_AFTER} "
             f"iterations, pace over {selection.PACE_WINDOW}) and without it; load average at "
             f"the end {os.getloadavg()[0]:.1f} on 2 cores.",
             "",
             "| ridge | K x N, true rank, T | panels | candidates stopped | chosen rank differs "
             "| smallest BIC margin of a stopped candidate (run to the end) | iterations early / full "
             "| seconds early / full |",
             "|---|---|---|---|---|---|---|---|"]
    wrong = 0
    for ridge in (0.01, 1e-6):
        for K, N, r, T in DESIGNS:
            g = [x for x in rows if x["ridge"] == ridge and (x["K"], x["N"], x["true_rank"], x["T"]) == (K, N, r, T)]
            differs = sum(x["chosen_early"] != x["chosen_full"] for x in g)
            wrong += differs
            margins = [x["min_margin"] for x in g if x["min_margin"] is not None]
            lines.append(
                f"| {ridge:g} | {K} x {N}, r={r}, T={T} | {len(g)} | {sum(x['stopped'] for x in g)} "
                f"| {differs} | {min(margins):.1f} |" if margins else
                f"| {ridge:g} | {K} x {N}, r={r}, T={T} | {len(g)} | 0 | {differs} | - |")
            lines[-1] += (f" {sum(x['iterations_early'] for x in g)} / {sum(x['iterations_full'] for x in g)} "
                          f"| {sum(x['seconds_early'] for x in g):.1f} / {sum(x['seconds_full'] for x in g):.1f} |")
    lines += ["", f"Goal: the chosen rank never differs — {'met' if wrong == 0 else f'MISSED ({wrong} panels)'}."]
    (OUT / "rank_search.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


STOP_AFTER = selection.STOP_AFTER

if __name__ == "__main__":
    main()
