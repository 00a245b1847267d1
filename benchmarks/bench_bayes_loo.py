"""PSIS-LOO with prompt effects: plain against integrated importance sampling.

MT-Bench read with ``question_id`` as the cluster, so ``sample_hja`` adds answer-quality
effects.  One verdict then informs the two answer effects it shows, and plain PSIS over the
joint draws leaves some verdicts with Pareto k above 0.7.  ``psis_loo`` (default
``integrate=True``) recomputes those with the two answer effects integrated out of the
weights (adaptive Gauss-Hermite over their conditional posterior).  Reported per rank:
the share of verdicts with k > 0.7 and elpd_loo, plain and integrated, and the seconds each
took (the integrated one's included).  Goal (issue: LOO that holds): MT-Bench rank 1,
share of k > 0.7 <= 1%.

``--dataset chatbot_arena``: Chatbot Arena from JA-Ranking (8,691 prompts, most with one
verdict), sampled with integrated prompt effects (its default) and no answer effects stored
(too many): the plain way draws every effect again; the default leaves every verdict out of
its prompt's integral (the ratio of the prompt's integrals with and without it), no effect
drawn.  ``--posterior PATH``: a saved posterior (``--save``) instead of sampling, to time
the code on the same draws in a fresh process.

    nice python benchmarks/bench_bayes_loo.py                     # ranks 1 (and --ranks)
    nice python benchmarks/bench_bayes_loo.py --dataset chatbot_arena
    python benchmarks/bench_bayes_loo.py --num-warmup 100 --num-samples 100 --out /tmp/loo
    python benchmarks/bench_bayes_loo.py --dataset chatbot_arena --posterior arena_rank1.nc
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
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
    p.add_argument("--dataset", choices=("mtbench", "chatbot_arena"), default="mtbench")
    p.add_argument("--save", default=None,
                   help="write each rank's posterior to SAVE_rank<r>.nc (to time other code "
                        "on the same draws)")
    p.add_argument("--posterior", default=None,
                   help="a saved posterior of the dataset (from --save) instead of sampling")
    p.add_argument("--out", default=None,
                   help="default results/bayes_loo (MT-Bench), results/bayes_loo_arena")
    args = p.parse_args(argv)
    if args.out is None:
        name = "bayes_loo" if args.dataset == "mtbench" else "bayes_loo_arena"
        args.out = str(Path(__file__).parent / "results" / name)
    return args


def single_verdict_points(idata, loo) -> np.ndarray:
    """Which of ``loo``'s points are a verdict alone on its prompt (bool, (points,))."""
    from hja_bayes.bayes.convert import posterior_units

    n = np.asarray(posterior_units(idata).cells.counts).sum(axis=1)
    prompt = np.asarray(idata.constant_data["entry_cluster"])
    return (np.bincount(prompt, weights=n)[prompt] == 1)[loo.cell]


def main(argv=None) -> dict:
    args = parse_args(argv)
    data = hb.Comparisons.from_frame(hb.datasets.load_ja_ranking(args.dataset, args.data_dir),
                                     cluster="question_id")
    rows = []
    if args.posterior:
        import arviz as az

        saved = az.from_netcdf(args.posterior)
        post = saved.posterior
        args.ranks = [int(post.attrs["rank"])]
        args.num_chains, args.num_samples = post.sizes["chain"], post.sizes["draw"]
        args.num_warmup, args.seed = int(post.attrs["num_warmup"]), int(post.attrs["seed"])
    for rank in args.ranks:
        if args.posterior:
            idata = saved
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", hb.ConvergenceWarning)
                idata = hb.sample_hja(data, rank, num_warmup=args.num_warmup,
                                      num_samples=args.num_samples, num_chains=args.num_chains,
                                      seed=args.seed, progress_bar=False)
        if args.save:
            idata.to_netcdf(f"{args.save}_rank{rank}.nc")
        t0 = time.perf_counter()
        plain = psis_loo(idata, integrate=False)
        plain_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        integrated = psis_loo(idata)
        seconds = time.perf_counter() - t0
        redone = integrated.integrated
        single = single_verdict_points(idata, integrated)
        few = redone.sum() <= 1_000  # the points' own values, where few
        rows.append({
            "rank": rank, "comparisons": plain.n_comparisons,
            "plain_share_bad_k": plain.share_bad_k, "plain_max_k": plain.max_pareto_k,
            "plain_elpd_loo": plain.elpd_loo, "plain_se": plain.se,
            "share_bad_k": integrated.share_bad_k, "max_k": integrated.max_pareto_k,
            "elpd_loo": integrated.elpd_loo, "se": integrated.se,
            "points_integrated": int(redone.sum()),
            "verdicts_integrated": float(integrated.counts[redone].sum()),
            "alpha_stored": "alpha" in idata.posterior,
            "single_verdicts": int(single.sum()),
            "single_verdicts_plain_bad_k": int((plain.pareto_k[single] > PARETO_K_LIMIT).sum()),
            "single_verdicts_bad_k": int((integrated.pareto_k[single] > PARETO_K_LIMIT).sum()),
            "k_before_after": [[float(a), float(b)] for a, b in
                               zip(plain.pareto_k[redone], integrated.pareto_k[redone])]
            if few else None,
            "elpd_i_before_after": [[float(a), float(b)] for a, b in
                                    zip(plain.elpd_i[redone], integrated.elpd_i[redone])]
            if few else None,
            "loo_seconds": seconds, "plain_seconds": plain_seconds,
            "sampling_seconds": float(idata.posterior.attrs["sampling_time"]),
            "goal_met": bool(integrated.share_bad_k <= GOAL) if rank == 1 else None})
        print(f"rank {rank}: plain {plain.share_bad_k:.4f} ({plain_seconds:.0f} s), integrated "
              f"{integrated.share_bad_k:.4f} ({seconds:.0f} s)", file=sys.stderr, flush=True)
    result = {"dataset": args.dataset, "data": repr(data),
              "questions": data.clusters.n_clusters, "rows": rows,
              "settings": {"num_warmup": args.num_warmup, "num_samples": args.num_samples,
                           "num_chains": args.num_chains, "seed": args.seed,
                           "posterior": args.posterior},
              "load_average": os.getloadavg()}
    write(result, Path(args.out))
    return result


def write(result: dict, out: Path) -> None:
    s = result["settings"]
    name = {"mtbench": "MT-Bench", "chatbot_arena": "Chatbot Arena"}[
        result.get("dataset", "mtbench")]
    lines = [f"# PSIS-LOO with prompt effects on {name}: plain and integrated", "",
             f"{result['data']}, {result['questions']} questions, prompt effects on; "
             f"{s['num_chains']} chains x ({s['num_warmup']} warm-up + {s['num_samples']} "
             f"draws), seed {s['seed']}.  Load average at the end: "
             f"{', '.join(f'{x:.1f}' for x in result['load_average'])}.", "",
             f"| rank | share k > {PARETO_K_LIMIT} plain | max k plain | elpd_loo plain (se) | "
             f"verdicts integrated | share k > {PARETO_K_LIMIT} integrated | max k integrated "
             f"| elpd_loo integrated (se) | seconds plain / integrated | single verdicts "
             f"alone on their prompt (k > {PARETO_K_LIMIT} plain / integrated) "
             f"| goal (rank 1: <= 1%) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        goal = "" if r["goal_met"] is None else ("met" if r["goal_met"] else "MISSED")
        lines.append(f"| {r['rank']} | {r['plain_share_bad_k']:.4f} | {r['plain_max_k']:.2f} | "
                     f"{r['plain_elpd_loo']:.1f} ({r['plain_se']:.1f}) | "
                     f"{r['verdicts_integrated']:.0f} | {r['share_bad_k']:.4f} | "
                     f"{r['max_k']:.2f} | {r['elpd_loo']:.1f} ({r['se']:.1f}) | "
                     f"{r.get('plain_seconds', float('nan')):.0f} / {r['loo_seconds']:.0f} | "
                     f"{r.get('single_verdicts', '-')} ({r.get('single_verdicts_plain_bad_k', '-')}"
                     f" / {r.get('single_verdicts_bad_k', '-')}) | {goal} |")
    lines += ["", ("Integrated: with sampled answer effects (MT-Bench), the points recomputed "
                   "by integrated importance sampling; with integrated ones (Chatbot Arena), "
                   "every verdict, left out of its prompt's integral (the ratio of the "
                   "prompt's integrals with and without it), no effect drawn.")]
    text = "\n".join(lines) + "\n"
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=float))


if __name__ == "__main__":
    main()
