"""Joint coverage of the rank intervals: do all true ranks lie in their intervals at once?

Simulated panels (K judges, N models, rank 1), each fitted by ``fit_hja``; the consensus
ranks' intervals from (a) pairwise 95% Wald intervals, unadjusted (the first release's
``rank_lower`` / ``rank_upper``) and (b) ``hja_bayes.inference.ranking.rank_intervals`` (simultaneous
max-|t| intervals of all differences).  Two designs: independent comparisons (Fisher
covariance) and verdicts coupled within questions (``simulate(..., questions=60,
question_correlation=0.6)``, cluster-robust covariance).  Goal: joint coverage >= 0.93 for (b).

Usage: ``python benchmarks/bench_rank_intervals.py [--replicates 200]``.
Writes ``benchmarks/results/rank_intervals.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

import hja_bayes as hb
from hja_bayes.inference.ranking import rank_intervals

OUT = Path(__file__).parent / "results"


def pairwise_unadjusted(estimate, cov, z=1.959964):
    v = np.diag(cov)
    se = np.sqrt(np.clip(v[:, None] + v[None, :] - 2 * cov, 0, None))
    better = (estimate[:, None] - estimate[None, :] - z * se > 0) & ~np.eye(len(estimate), dtype=bool)
    return 1 + better.sum(0), len(estimate) - better.sum(1)


def study(replicates, seed, questions, judges=6, items=10, per_judge=600):
    hits = {"unadjusted": 0, "simultaneous": 0}
    widths = {"unadjusted": [], "simultaneous": []}
    for rep in range(replicates):
        kwargs = dict(questions=questions, question_correlation=0.6) if questions else {}
        data, truth = hb.simulate(n_judges=judges, n_items=items, rank=1,
                                  comparisons_per_judge=per_judge, seed=seed + rep, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.HJAWarning)
            fit = hb.fit_hja(data, rank=1)
        wald = fit.wald
        estimate, cov = wald.covariance_of(lambda S, b: hb.canonicalize(S, 0).mu)
        true_rank = np.argsort(np.argsort(-truth.mu)) + 1
        for name, (lo, hi) in (("unadjusted", pairwise_unadjusted(estimate, cov)),
                               ("simultaneous", tuple(rank_intervals(estimate, cov)[:2]))):
            hits[name] += bool(np.all((lo <= true_rank) & (true_rank <= hi)))
            widths[name].append(float(np.mean(hi - lo + 1)))
    return {name: dict(joint_coverage=hits[name] / replicates,
                       mcse=float(np.sqrt(hits[name] / replicates * (1 - hits[name] / replicates)
                                          / replicates)),
                       mean_interval_length=float(np.mean(widths[name])))
            for name in hits} | dict(replicates=replicates, cov_type=wald.cov_type,
                                     judges=judges, items=items, per_judge=per_judge,
                                     questions=questions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=4040)
    args = parser.parse_args()
    result = {"independent": study(args.replicates, args.seed, 0),
              "clustered": study(args.replicates, args.seed + 10_000, 60)}
    OUT.mkdir(exist_ok=True)
    (OUT / "rank_intervals.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Joint coverage of rank intervals (`python benchmarks/bench_rank_intervals.py`)", "",
             "| design | covariance | intervals | joint coverage | MCSE | mean length (ranks) | goal >= 0.93 |",
             "|---|---|---|---|---|---|---|"]
    for design, r in result.items():
        for name in ("unadjusted", "simultaneous"):
            ok = "met" if r[name]["joint_coverage"] >= 0.93 else "MISSED"
            lines.append(f"| {design} ({r['replicates']} panels, K={r['judges']}, N={r['items']}) "
                         f"| {r['cov_type']} | {name} | {r[name]['joint_coverage']:.3f} | "
                         f"{r[name]['mcse']:.3f} | {r[name]['mean_interval_length']:.2f} | "
                         f"{ok if name == 'simultaneous' else '(reference)'} |")
    (OUT / "rank_intervals.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
