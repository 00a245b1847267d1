"""How fragile is the top spot?  The fragility audit checked against exact refits and brute force.

Part a (close races): simulated panels (K=4 judges, N=5 models, rank 1, 150 verdicts per judge
over 12 prompts, copula rho=0.3) kept only when the two leading models' estimated scores lie
within one Fisher standard error of each other.  For each, ``fit.fragility("top", unit)`` for
verdicts and for prompts; the reported set is then removed again, independently of the audit
(from its table of removed entries), and the model refitted: does another model come first?
Goal: yes in >= 90% of the panels.

Part b (brute force): tiny panels where every small set can be tried.  Verdicts: 2 judges, 3
models, 20 verdicts each over 6 prompts (rank 0; the two leaders 0.15 to 1 logit apart, so
that the answers run from one verdict to several; both judges' sensitivity above 0.3).  Every multiset of up to three (cell, category) removals
smaller than the audit's answer is refitted.  Prompts: 3 judges, 4 models, 120 verdicts each
over 8 prompts; every set of up to three prompts.  Goal: the brute force never finds a smaller
set than the audit.

Part c (MT-Bench): the report's sentence for the top spot, verdicts and prompts
(``question_id``), rank 1.

Part d (putting units back): noisy tiny panels (3 judges, 4 models, 12 verdicts each, no
prompts; ranks 0 and 1, 16 seeds each), the top spot's verdict set with the audit as it is
and with its put-back step (``Search.prune``) replaced by doing nothing, in one process; every
set the audit reports is confirmed by its refit.  No goal: how much smaller the sets come
out, and at what cost in refits and time.

Usage: ``python benchmarks/bench_fragility.py [--close 50] [--tiny 15] [--put-back 16]``.  Writes
``benchmarks/results/fragility.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

import hja_bayes as hb
from hja_bayes.hja.bootstrap import refit_without
from hja_bayes.inference.removal import units_of as _units_of

OUT = Path(__file__).parent / "results"


def removal_of(fit, result) -> np.ndarray:
    """The entry counts that the audit's table of removed units names."""
    data = fit.data
    c = data.clusters
    names = np.asarray(c.names)[c.cluster]
    removed = np.zeros_like(c.counts)
    if result.unit == "prompt":
        take = np.isin(names, result.items["prompt"])
        removed[take] = c.counts[take]
        return removed
    judge = np.asarray(data.judges)[data.judge[c.cell]]
    first = np.asarray(data.items)[data.first[c.cell]]
    second = np.asarray(data.items)[data.second[c.cell]]
    for row in result.items.itertuples():
        e = np.flatnonzero((names == row.prompt) & (judge == row.judge)
                           & (first == row.model_a) & (second == row.model_b))
        removed[e[0], data.categories.index(row.category)] += row.removed
    return removed


def close_races(n_panels: int, seed: int) -> dict:
    rows = []
    s = seed
    while len(rows) < n_panels:
        s += 1
        data, _ = hb.simulate(n_judges=4, n_items=5, rank=1, comparisons_per_judge=150, seed=s,
                              questions=12, question_correlation=0.3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.HJAWarning)
            fit = hb.fit_hja(data, rank=1)
            mu = fit.mu
            a, b = np.argsort(-mu)[:2]
            _, iv = fit.wald_inference("fisher").mu_differences(pairs=[(fit.items[a], fit.items[b])])
        if mu[a] - mu[b] > float(iv.se[0]):
            continue
        row = {"seed": s, "gap": float(mu[a] - mu[b]), "gap_se": float(iv.se[0])}
        for unit in ("verdict", "prompt"):
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", hb.HJAWarning)
                result = fit.fragility("top", unit)
            row[f"{unit}/seconds"] = time.perf_counter() - t
            row[f"{unit}/count"] = result.count
            row[f"{unit}/share"] = None if result.count is None else result.share
            row[f"{unit}/refits"] = result.refits
            row[f"{unit}/predicted"] = result.predicted
            reversed_ = False
            if result.confirmed:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", hb.HJAWarning)
                    again = refit_without(fit, removal_of(fit, result))
                reversed_ = int(np.argmax(again.mu)) != int(a)
            row[f"{unit}/reversed"] = reversed_
        rows.append(row)
        print(f"close race {len(rows)} (seed {s}): verdicts {row['verdict/count']} "
              f"({row['verdict/seconds']:.1f} s), prompts {row['prompt/count']}", flush=True)
    out = {"panels": rows}
    for unit in ("verdict", "prompt"):
        rev = np.array([r[f"{unit}/reversed"] for r in rows], dtype=float)
        counts = [r[f"{unit}/count"] for r in rows if r[f"{unit}/count"] is not None]
        shares = [r[f"{unit}/share"] for r in rows if r[f"{unit}/share"] is not None]
        out[unit] = dict(reversed=float(rev.mean()),
                         found=len(counts) / len(rows),
                         median_count=float(np.median(counts)) if counts else None,
                         median_share=float(np.median(shares)) if shares else None,
                         median_seconds=float(np.median([r[f"{unit}/seconds"] for r in rows])),
                         median_refits=float(np.median([r[f"{unit}/refits"] for r in rows])))
    out["goal_met"] = bool(out["verdict"]["reversed"] >= 0.9)
    return out


def brute_verdicts(n_panels: int) -> dict:
    rows = []
    for s in range(10_000):
        if len(rows) >= n_panels:
            break
        data, _ = hb.simulate(n_judges=2, n_items=3, rank=0, comparisons_per_judge=20, seed=s,
                              questions=6, question_correlation=0.3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.HJAWarning)
            try:
                fit = hb.fit_hja(data, rank=0)
            except hb.HJAError:
                continue
        a, b = (int(x) for x in np.argsort(-fit.mu)[:2])
        if not 0.15 <= fit.mu[a] - fit.mu[b] <= 1.0 or np.min(fit.gamma) < 0.3:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.HJAWarning)
            result = fit.fragility((fit.items[a], fit.items[b]), "verdict")
            units = _units_of(fit)
            counts = units.counts
            types = [(u, k) for u in range(len(counts)) for k in range(counts.shape[1])
                     if counts[u, k] > 0]
            best, tried = None, 0
            limit = 4 if result.count is None else min(result.count, 4)
            for size in range(1, limit):
                for combo in itertools.combinations_with_replacement(range(len(types)), size):
                    removed = np.zeros_like(counts)
                    for u in combo:
                        removed[types[u]] += 1
                    if np.any(removed > counts):
                        continue
                    tried += 1
                    try:
                        f = refit_without(fit, units.to_entries(removed))
                    except hb.HJAError:
                        continue
                    if f.mu[b] > f.mu[a]:
                        best = size
                        break
                if best:
                    break
        rows.append({"seed": s, "gap": float(fit.mu[a] - fit.mu[b]), "audit": result.count,
                     "brute_force_smaller": best, "brute_force_refits": tried})
        print(f"tiny panel {len(rows)} (seed {s}): audit {result.count}, brute force smaller: "
              f"{best} ({tried} refits)", flush=True)
    beaten = sum(r["brute_force_smaller"] is not None for r in rows)
    return {"panels": rows, "beaten": beaten, "goal_met": beaten == 0}


def brute_prompts(n_panels: int) -> dict:
    rows = []
    for s in range(n_panels):
        data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=120,
                              seed=500 + s, questions=8, question_correlation=0.4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.HJAWarning)
            fit = hb.fit_hja(data, rank=0)
            a = int(np.argmax(fit.mu))
            result = fit.fragility("top", "prompt")
            c = data.clusters
            best = None
            limit = 4 if result.count is None else min(result.count, 4)
            for size in range(1, limit):
                for subset in itertools.combinations(range(c.n_clusters), size):
                    removed = np.where(np.isin(c.cluster, subset)[:, None], c.counts, 0.0)
                    try:
                        f = refit_without(fit, removed)
                    except hb.HJAError:
                        continue
                    if int(np.argmax(f.mu)) != a:
                        best = size
                        break
                if best:
                    break
        rows.append({"seed": 500 + s, "audit": result.count, "brute_force_smaller": best})
    beaten = sum(r["brute_force_smaller"] is not None for r in rows)
    found = sum(r["audit"] is not None for r in rows)
    return {"panels": rows, "beaten": beaten, "found": found, "goal_met": beaten == 0}


def mtbench() -> dict:
    data = hb.Comparisons.from_frame(hb.datasets.load_ja_ranking("mtbench"), cluster="question_id")
    fit = hb.fit_hja(data, rank=1)
    out = {"comparisons": data.n_comparisons, "prompts": data.clusters.n_clusters,
           "order": [fit.items[i] for i in np.argsort(-fit.mu)]}
    for unit in ("verdict", "prompt"):
        t = time.perf_counter()
        result = fit.fragility("top", unit)
        out[unit] = {"sentence": result.sentence, "count": result.count,
                     "share": None if result.count is None else result.share,
                     "confirmed": result.confirmed, "result": result.result,
                     "refits": result.refits, "seconds": time.perf_counter() - t,
                     "items": result.items.to_dict(orient="records")}
        print(f"MT-Bench, {unit}s: {result.sentence} ({out[unit]['seconds']:.1f} s)", flush=True)
    return out


def put_back(seeds: int) -> dict:
    from hja_bayes.inference import removal

    keep = removal.Search.prune
    rows = []
    for rank in (0, 1):
        for seed in range(seeds):
            data, _ = hb.simulate(3, 4, rank, 12, seed=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = hb.fit_hja(data, rank)
                row = {"rank": rank, "seed": seed}
                for label in ("without", "with"):
                    removal.Search.prune = keep if label == "with" else (
                        lambda self, order, refit: (order, refit))
                    try:
                        t = time.perf_counter()
                        result = fit.fragility("top")
                        row[label] = {"count": result.count, "refits": result.refits,
                                      "seconds": time.perf_counter() - t}
                    finally:
                        removal.Search.prune = keep
            rows.append(row)
    both = [r for r in rows if r["with"]["count"] is not None
            and r["without"]["count"] is not None]
    total = {label: sum(r[label]["count"] for r in both) for label in ("without", "with")}
    print(f"put back: {total['with']} verdicts in all against {total['without']} "
          f"({len(both)} panels)", flush=True)
    return {"panels": rows, "total": total, "compared": len(both),
            "smaller": sum(r["with"]["count"] < r["without"]["count"] for r in both),
            "larger": sum(r["with"]["count"] > r["without"]["count"] for r in both),
            "refits": {label: float(np.median([r[label]["refits"] for r in both]))
                       for label in ("without", "with")},
            "seconds": {label: float(np.median([r[label]["seconds"] for r in both]))
                        for label in ("without", "with")},
            "max_seconds": {label: float(max(r[label]["seconds"] for r in both))
                            for label in ("without", "with")}}


def markdown(r: dict) -> str:
    close, tiny, prompts, mt = r["close"], r["tiny"], r["prompts"], r["mtbench"]
    lines = ["# Fragility of the top spot (`python benchmarks/bench_fragility.py`)", "",
             f"Load average at the start {r['load']}; {r['seconds']:.0f} s in all.", "",
             f"## a. Close races ({len(close['panels'])} panels: K=4, N=5, rank 1, 150 verdicts "
             "per judge over 12 prompts, leaders within one Fisher se)", "",
             "| unit | set found | reversed on an independent refit | median count | median share "
             "| median refits | median seconds |", "|---|---|---|---|---|---|---|"]
    for unit in ("verdict", "prompt"):
        u = close[unit]
        share = "-" if u["median_share"] is None else f"{100 * u['median_share']:.2f}%"
        count = "-" if u["median_count"] is None else f"{u['median_count']:.0f}"
        lines.append(f"| {unit} | {u['found']:.0%} | {u['reversed']:.0%} | {count} | {share} | "
                     f"{u['median_refits']:.0f} | {u['median_seconds']:.1f} |")
    lines += ["", f"goal >= 90% of the verdict sets reverse the top spot: "
                  f"{'met' if close['goal_met'] else 'MISSED'}", "",
              "## b. Brute force on tiny panels", "",
              f"Verdicts ({len(tiny['panels'])} panels, 2 judges x 3 models x 20 verdicts, "
              "leaders 0.15-1 logit apart): "
              f"audit sizes {sorted(x['audit'] for x in tiny['panels'] if x['audit'] is not None)}"
              f" (none found in {sum(x['audit'] is None for x in tiny['panels'])}); "
              f"brute force (every multiset of up to 3 removals smaller than the audit's) found a "
              f"smaller set in {tiny['beaten']} panels.", "",
              f"Prompts ({len(prompts['panels'])} panels, 3 judges x 4 models x 120 verdicts over "
              f"8 prompts): a set found in {prompts['found']}; audit sizes "
              f"{sorted(x['audit'] for x in prompts['panels'] if x['audit'] is not None)}; brute "
              f"force (every set of up to 3 prompts smaller than the audit's) found a smaller set "
              f"in {prompts['beaten']} panels.", "",
              f"goal: never beaten: {'met' if tiny['goal_met'] and prompts['goal_met'] else 'MISSED'}",
              "", f"## c. MT-Bench (rank 1, {mt['comparisons']:,.0f} verdicts, {mt['prompts']} "
              f"questions; order {' > '.join(mt['order'])})", ""]
    for unit in ("verdict", "prompt"):
        lines.append(f"- {unit}s: {mt[unit]['sentence']} ({mt[unit]['refits']} refits, "
                     f"{mt[unit]['seconds']:.1f} s)")
    d = r["put_back"]
    lines += ["", "## d. Putting units back (noisy tiny panels: 3 judges x 4 models x 12 "
              "verdicts, ranks 0 and 1)", "",
              f"{d['compared']} panels with a set both ways: {d['total']['with']} verdicts in all "
              f"with the put-back step against {d['total']['without']} without "
              f"({d['total']['with'] / d['total']['without']:.2f}x); smaller in {d['smaller']}, "
              f"larger in {d['larger']}; median refits {d['refits']['with']:.0f} against "
              f"{d['refits']['without']:.0f}, median seconds {d['seconds']['with']:.2f} against "
              f"{d['seconds']['without']:.2f} (largest {d['max_seconds']['with']:.2f} against "
              f"{d['max_seconds']['without']:.2f})"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--close", type=int, default=50)
    parser.add_argument("--tiny", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7000)
    parser.add_argument("--put-back", type=int, default=16, help="seeds per rank in part d")
    args = parser.parse_args()
    start = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result = {"load": round(load, 2)}
    result["mtbench"] = mtbench()
    result["close"] = close_races(args.close, args.seed)
    result["tiny"] = brute_verdicts(args.tiny)
    result["prompts"] = brute_prompts(args.tiny)
    result["put_back"] = put_back(args.put_back)
    result["seconds"] = time.perf_counter() - start
    OUT.mkdir(exist_ok=True)
    (OUT / "fragility.json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    (OUT / "fragility.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
