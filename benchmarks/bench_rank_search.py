"""Rank search: do its shortcuts ever change the chosen rank?

Two shortcuts: the early stop of hopeless BIC candidates
(:func:`hja_bayes.hja.selection.cannot_win_bic`) and ``patience`` (the search ends after that
many candidates in a row that did not improve the criterion; default
:data:`~hja_bayes.hja.selection.PATIENCE`).

Panels simulated with ``hb.simulate`` (K x N, true rank, T comparisons per judge,
heterogeneity 0.5) over ``--seeds`` seeds, each fitted with ``fit_hja(rank="bic")`` three
times: the full search (every candidate up to rank 4 run to convergence or ``max_iter``),
with the early stop only, and as by default (early stop and patience).  Two ridges: the
default 0.01 and 1e-6, under which candidates above the true rank crawl.  Then the real
panels (MT-Bench, Chatbot Arena, PRD Vicuna80; with and without position bias; ties 1/2
and Davidson), full against default, for BIC and for 5-fold cross-validation.

Reported: whether the chosen rank ever differs from the full search (goal: never), how
often a candidate was stopped or skipped, the smallest BIC margin by which a stopped
candidate lost when run to the end, the solver iterations and seconds of each arm, and,
from every full search, the patience it would have needed: the longest run of candidates
that did not improve the criterion and was followed by one that did (0: the criterion never
improved again once it had stopped improving).

Larger designs (``LARGE``, ``--large-seeds`` seeds each, fewer: every step costs more)
check the early stop where it saves most.

Usage: ``python benchmarks/bench_rank_search.py [--seeds 12] [--large-seeds 3] [--no-real]``.
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
#: larger panels, where each solver step costs more (``--large-seeds`` seeds each)
LARGE = [(10, 60, 2, 3000), (20, 200, 2, 20000)]


def search(data, ridge: float, early: bool, patience, rule="bic", **kw):
    selection.STOP_AFTER = STOP_AFTER if early else 10**9
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = hb.fit_hja(data, rank=rule, ridge=ridge, patience=patience, **kw)
    return fit, time.perf_counter() - t


def patience_needed(criterion) -> int:
    """The longest run of candidates that did not improve ``criterion`` (in rank order)
    and was followed by one that did."""
    best, idle, needed = float("inf"), 0, 0
    for x in criterion:
        if x < best:
            needed, idle, best = max(needed, idle), 0, x
        else:
            idle += 1
    return needed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--large-seeds", type=int, default=3,
                        help="seeds of each larger design (0: none)")
    parser.add_argument("--no-real", action="store_true", help="simulated panels only")
    args = parser.parse_args()
    rows = []
    designs = [(d, args.seeds) for d in DESIGNS] + [(d, args.large_seeds) for d in LARGE]
    for ridge in (0.01, 1e-6):
        for (K, N, r, T), n_seeds in designs:
            if not n_seeds:
                continue
            warm, _ = hb.simulate(K, N, r, T, seed=10**6, heterogeneity=0.5)
            search(warm, ridge, True, None)  # compile this size class before timing
            for seed in range(n_seeds):
                data, _ = hb.simulate(K, N, r, T, seed=seed, heterogeneity=0.5)
                a, ta = search(data, ridge, True, None)
                b, tb = search(data, ridge, False, None)
                c, tc = search(data, ridge, True, selection.PATIENCE)
                stopped = a.rank_table["stopped_early"].to_numpy()
                margins = (b.rank_table["bic"][stopped] - b.rank_table["bic"].min()).to_numpy()
                rows.append(dict(ridge=ridge, K=K, N=N, true_rank=r, T=T, seed=seed,
                                 chosen_early=a.rank, chosen_full=b.rank, chosen_default=c.rank,
                                 stopped=int(stopped.sum()),
                                 skipped=int(c.rank_table["skipped"].sum()),
                                 min_margin=float(margins.min()) if margins.size else None,
                                 patience_needed=patience_needed(b.rank_table["bic"]),
                                 iterations_early=int(a.rank_table["n_iter"].sum()),
                                 iterations_full=int(b.rank_table["n_iter"].sum()),
                                 iterations_default=int(c.rank_table["n_iter"].sum()),
                                 seconds_early=ta, seconds_full=tb, seconds_default=tc))
            print(f"ridge {ridge:g}, K={K}, N={N}, r={r}, T={T}: done", flush=True)
    selection.STOP_AFTER = STOP_AFTER
    real = [] if args.no_real else real_panels()
    write(rows, real)


def real_panels() -> list[dict]:
    """Full search against the default one on the real panels, BIC and cross-validation."""
    panels = {"PRD Vicuna80": hb.datasets.load_prd_vicuna80().judgments}
    for name, key in (("MT-Bench", "mtbench"), ("Chatbot Arena", "chatbot_arena")):
        try:
            panels[name] = hb.datasets.load_ja_ranking(key)
        except hb.DataError as exc:
            print(f"skipping {name}: {exc}")
    out = []
    for name, df in panels.items():
        data = hb.Comparisons.from_frame(df)
        for rule in ("bic", "cv"):
            for position_bias in (False, True):
                for ties in ("half", "davidson"):
                    kw = dict(position_bias=position_bias, ties=ties)
                    try:  # compile this configuration before timing
                        search(data, 0.01, True, selection.PATIENCE, rule, **kw)
                    except hb.HJAError as exc:  # e.g. position bias on folded data
                        print(f"{name} {rule} {kw}: {exc}")
                        continue
                    full, tf = search(data, 0.01, False, None, rule, **kw)
                    default, td = search(data, 0.01, True, selection.PATIENCE, rule, **kw)
                    criterion = full.rank_table["bic" if rule == "bic" else "cv_nll"]
                    out.append(dict(panel=name, rule=rule, position_bias=position_bias, ties=ties,
                                    chosen_full=full.rank, chosen_default=default.rank,
                                    criterion_full=[float(x) for x in criterion],
                                    skipped=int(default.rank_table["skipped"].sum()),
                                    patience_needed=patience_needed(criterion),
                                    iterations_full=int(full.rank_table["n_iter"].sum()),
                                    iterations_default=int(default.rank_table["n_iter"].sum()),
                                    seconds_full=tf, seconds_default=td))
                    print(name, rule, kw, "done", flush=True)
    return out


def write(rows: list[dict], real: list[dict]) -> None:
    OUT.mkdir(exist_ok=True)
    payload = {"rows": rows, "real_panels": real, "stop_after": STOP_AFTER,
               "pace_window": selection.PACE_WINDOW, "patience": selection.PATIENCE,
               "load_average": os.getloadavg()}
    (OUT / "rank_search.json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = ["# Rank search: early stopping and patience (`python benchmarks/bench_rank_search.py`)",
             "",
             f"Each simulated panel fitted with `rank='bic'` three ways: the full search (ranks "
             f"0-4, every candidate to the end), with the early stop only (after {STOP_AFTER} "
             f"iterations, pace over {selection.PACE_WINDOW}), and as by default (early stop and "
             f"patience {selection.PATIENCE}); load average at the end {os.getloadavg()[0]:.1f} "
             f"on {os.cpu_count()} cores.",
             "",
             "| ridge | K x N, true rank, T | panels | candidates stopped / skipped | chosen rank "
             "differs: early / default | smallest BIC margin of a stopped candidate (run to the "
             "end) | patience needed (max) | iterations full / early / default | seconds full / "
             "early / default |",
             "|---|---|---|---|---|---|---|---|---|"]
    wrong = 0
    for ridge in (0.01, 1e-6):
        for K, N, r, T in DESIGNS + LARGE:
            g = [x for x in rows if x["ridge"] == ridge and (x["K"], x["N"], x["true_rank"], x["T"]) == (K, N, r, T)]
            early = sum(x["chosen_early"] != x["chosen_full"] for x in g)
            default = sum(x["chosen_default"] != x["chosen_full"] for x in g)
            wrong += early + default
            margins = [x["min_margin"] for x in g if x["min_margin"] is not None]
            if not g:
                continue
            lines.append(
                f"| {ridge:g} | {K} x {N}, r={r}, T={T} | {len(g)} | {sum(x['stopped'] for x in g)} / "
                f"{sum(x['skipped'] for x in g)} | {early} / {default} | "
                f"{f'{min(margins):.1f}' if margins else '-'} | {max(x['patience_needed'] for x in g)} | "
                f"{sum(x['iterations_full'] for x in g)} / {sum(x['iterations_early'] for x in g)} / "
                f"{sum(x['iterations_default'] for x in g)} | {sum(x['seconds_full'] for x in g):.1f} / "
                f"{sum(x['seconds_early'] for x in g):.1f} / {sum(x['seconds_default'] for x in g):.1f} |")
    if real:
        lines += ["", "Real panels (ridge 0.01, ranks 0 to the identifiable maximum or 4), the full "
                  "search against the default one:", "",
                  "| panel | rule | position bias | ties | criterion by rank (full search) | chosen full / "
                  "default | skipped | patience needed | full-data iterations full / default | seconds full / default |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for x in real:
            wrong += x["chosen_full"] != x["chosen_default"]
            crit = ", ".join(f"{v:.1f}" for v in x["criterion_full"])
            lines.append(f"| {x['panel']} | {x['rule']} | {'yes' if x['position_bias'] else 'no'} | "
                         f"{x['ties']} | {crit} | {x['chosen_full']} / {x['chosen_default']} | "
                         f"{x['skipped']} | {x['patience_needed']} | {x['iterations_full']} / "
                         f"{x['iterations_default']} | {x['seconds_full']:.1f} / {x['seconds_default']:.1f} |")
    needed = max([x["patience_needed"] for x in rows + real] or [0])
    lines += ["", f"Goal: the chosen rank never differs from the full search — "
              f"{'met' if wrong == 0 else f'MISSED ({wrong} searches)'}. The largest patience any "
              f"full search needed: {needed} (the default is {selection.PATIENCE})."]
    (OUT / "rank_search.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


STOP_AFTER = selection.STOP_AFTER

if __name__ == "__main__":
    main()
