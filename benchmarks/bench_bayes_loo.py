"""PSIS-LOO with prompt effects: plain against integrated importance sampling.

MT-Bench read with ``question_id`` as the cluster, so ``sample_hja`` adds answer-quality
effects.  One verdict then informs the two answer effects it shows, and plain PSIS over the
joint draws leaves some verdicts with Pareto k above 0.7.  ``psis_loo`` (default
``integrate=True``) recomputes those with the two answer effects integrated out of the
weights (adaptive Gauss-Hermite over their conditional posterior).  Reported per rank:
the share of verdicts with k > 0.7 and elpd_loo, plain and integrated, and the seconds the
integration took.  Goal (issue: LOO that holds): MT-Bench rank 1, share of k > 0.7 <= 1%.

    nice python benchmarks/bench_bayes_loo.py                     # ranks 1 (and --ranks)
    python benchmarks/bench_bayes_loo.py --num-warmup 100 --num-samples 100 --out /tmp/loo
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpyro

numpyro.set_host_device_count(4)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hja_bayes as hb  # noqa: E402
from hja_bayes.bayes import psis_loo  # noqa: E402
from hja_bayes.bayes.loo import PARETO_K_LIMIT  # noqa: E402

GOAL = 0.01


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", nargs="+", type=int, default=[1])
    p.add_argument("--num-warmup", type=int, default=500)
    p.add_argument("--num-samples", type=int, default=1000)
    p.add_argument("--num-chains", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "bayes_loo"))
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    data = hb.Comparisons.from_frame(hb.datasets.load_ja_ranking("mtbench", args.data_dir),
                                     cluster="question_id")
    rows = []
    for rank in args.ranks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.ConvergenceWarning)
            idata = hb.sample_hja(data, rank, num_warmup=args.num_warmup,
                                  num_samples=args.num_samples, num_chains=args.num_chains,
                                  seed=args.seed, progress_bar=False)
        plain = psis_loo(idata, integrate=False)
        t0 = time.perf_counter()
        integrated = psis_loo(idata)
        seconds = time.perf_counter() - t0
        redone = integrated.integrated
        rows.append({
            "rank": rank, "comparisons": plain.n_comparisons,
            "plain_share_bad_k": plain.share_bad_k, "plain_max_k": plain.max_pareto_k,
            "plain_elpd_loo": plain.elpd_loo, "plain_se": plain.se,
            "share_bad_k": integrated.share_bad_k, "max_k": integrated.max_pareto_k,
            "elpd_loo": integrated.elpd_loo, "se": integrated.se,
            "points_integrated": int(redone.sum()),
            "verdicts_integrated": float(integrated.counts[redone].sum()),
            "k_before_after": [[float(a), float(b)] for a, b in
                               zip(plain.pareto_k[redone], integrated.pareto_k[redone])],
            "elpd_i_before_after": [[float(a), float(b)] for a, b in
                                    zip(plain.elpd_i[redone], integrated.elpd_i[redone])],
            "loo_seconds": seconds,
            "sampling_seconds": float(idata.posterior.attrs["sampling_time"]),
            "goal_met": bool(integrated.share_bad_k <= GOAL) if rank == 1 else None})
        print(f"rank {rank}: plain {plain.share_bad_k:.4f}, integrated "
              f"{integrated.share_bad_k:.4f} ({seconds:.0f} s)", file=sys.stderr, flush=True)
    result = {"data": repr(data), "questions": data.clusters.n_clusters, "rows": rows,
              "settings": {"num_warmup": args.num_warmup, "num_samples": args.num_samples,
                           "num_chains": args.num_chains, "seed": args.seed},
              "load_average": os.getloadavg()}
    write(result, Path(args.out))
    return result


def write(result: dict, out: Path) -> None:
    s = result["settings"]
    lines = ["# PSIS-LOO with prompt effects on MT-Bench: plain and integrated", "",
             f"{result['data']}, {result['questions']} questions, prompt effects on; "
             f"{s['num_chains']} chains x ({s['num_warmup']} warm-up + {s['num_samples']} "
             f"draws), seed {s['seed']}.  Load average at the end: "
             f"{', '.join(f'{x:.1f}' for x in result['load_average'])}.", "",
             f"| rank | share k > {PARETO_K_LIMIT} plain | max k plain | elpd_loo plain (se) | "
             f"verdicts integrated | share k > {PARETO_K_LIMIT} integrated | max k integrated "
             f"| elpd_loo integrated (se) | integration s | goal (rank 1: <= 1%) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        goal = "" if r["goal_met"] is None else ("met" if r["goal_met"] else "MISSED")
        lines.append(f"| {r['rank']} | {r['plain_share_bad_k']:.4f} | {r['plain_max_k']:.2f} | "
                     f"{r['plain_elpd_loo']:.1f} ({r['plain_se']:.1f}) | "
                     f"{r['verdicts_integrated']:.0f} | {r['share_bad_k']:.4f} | "
                     f"{r['max_k']:.2f} | {r['elpd_loo']:.1f} ({r['se']:.1f}) | "
                     f"{r['loo_seconds']:.0f} | {goal} |")
    text = "\n".join(lines) + "\n"
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=float))


if __name__ == "__main__":
    main()
