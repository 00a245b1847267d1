"""Ordered verdicts: coverage of the ordinal model's Wald intervals, and what the strength of
preference is worth on held-out verdicts.

**Coverage.**  Panels simulated from the ordinal model (``simulate(outcome="ordinal")``: the
five levels A>>B .. B>>A, K = 4 judges with cut-point gaps (0.4, 0.8), (0.6, 0.6), (0.8, 1.2),
(0.5, 1.0); N = 6 models; rank 1; position bias 0.3; T verdicts per judge), fitted with
``fit_hja(..., outcome="ordinal", position_bias=True)`` at the true rank.  Reported: coverage
of the 95% Fisher intervals of every mu_i - mu_j, gamma_k and cut-point gap (log scale,
mapped back), each with its Monte Carlo standard error (the sd of the per-panel coverage over
sqrt(R): intervals of one panel share a fit); goal [93, 97]%.  A second design couples the
verdicts within 40 prompts (``question_correlation=0.5``) and compares Fisher with the
cluster-robust intervals.

**Held-out.**  The same simulated design, verdicts split 80/20 at random (the split keeps
whole verdicts), fitted on 80% three ways: ordinal on the five levels, and "half" and
"davidson" on the verdicts collapsed to first / tie / second.  On the held-out 20%: the
three-outcome log-loss of all three (the ordinal model's five probabilities summed to three)
and the five-level log-loss of the ordinal model; the paired differences are averaged over
the seeds.  No real panel with ordered verdicts is among the data sets here (PRD's raw scores
are three-valued), so the comparison is on simulated panels only.

Usage: ``python benchmarks/bench_ordinal.py [--reps 200] [--cluster-reps 200] [--seeds 20]``.
Writes ``benchmarks/results/ordinal.json`` and ``ordinal.md``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

import hja_bayes as hb
from hja_bayes.categories import collapse_counts
from hja_bayes.likelihood import outcome_model, probabilities

OUT = Path(__file__).parent / "results"
GAPS = np.array([[0.4, 0.8], [0.6, 0.6], [0.8, 1.2], [0.5, 1.0]])
K, N = len(GAPS), 6
GOAL = (0.93, 0.97)


def simulate(seed: int, per_judge: int, questions: int = 0, rho: float = 0.0):
    return hb.simulate(n_judges=K, n_items=N, rank=1, comparisons_per_judge=per_judge, seed=seed,
                       position_bias=0.3, outcome="ordinal", gaps=GAPS, questions=questions,
                       question_correlation=rho)


def coverage(reps: int, per_judge: int, questions: int, rho: float, cov_types, seed0: int):
    """Per panel and covariance, the share of intervals covering the truth, by quantity."""
    rows = []
    t0 = time.time()
    for rep in range(reps):
        data, truth = simulate(seed0 + rep, per_judge, questions, rho)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.ConvergenceWarning)
            fit = hb.fit_hja(data, rank=1, position_bias=True, outcome="ordinal")
        a, b = np.triu_indices(N, 1)
        true_diff = truth.mu[a] - truth.mu[b]
        for cov_type in cov_types:
            wald = fit.wald_inference(cov_type)
            _, diff = wald.mu_differences(0.95, pairs="all")
            gamma = wald.gamma(0.95)
            hits = {"mu_diff": (diff.lower <= true_diff) & (true_diff <= diff.upper),
                    "gamma": (gamma.lower <= truth.gamma) & (truth.gamma <= gamma.upper)}
            gaps = [wald.outcome_parameters(f"gap_{j + 1}", 0.95) for j in range(2)]
            lower = np.column_stack([g.lower for g in gaps])
            upper = np.column_stack([g.upper for g in gaps])
            hits["gaps"] = ((lower <= truth.gaps) & (truth.gaps <= upper)).ravel()
            for quantity, h in hits.items():
                rows.append(dict(rep=rep, cov_type=cov_type, quantity=quantity,
                                 covered=float(np.mean(h)), n=int(np.size(h))))
    return rows, time.time() - t0


def summarise(rows):
    out = {}
    for key in sorted({(r["cov_type"], r["quantity"]) for r in rows}):
        c = np.array([r["covered"] for r in rows if (r["cov_type"], r["quantity"]) == key])
        out[f"{key[0]}:{key[1]}"] = dict(coverage=float(c.mean()),
                                         mcse=float(c.std(ddof=1) / np.sqrt(len(c))),
                                         panels=len(c))
    return out


def split_verdicts(data, rng, share=0.2):
    """(train, test) counts per cell: each verdict held out with probability ``share``."""
    counts = np.rint(data.counts).astype(np.int64)
    test = rng.binomial(counts, share).astype(float)
    return data.counts - test, test


def held_out(seeds: int, per_judge: int):
    rows = []
    model5 = outcome_model("ordinal", 5)
    for seed in range(seeds):
        data, _ = simulate(1000 + seed, per_judge)
        train_counts, test = split_verdicts(data, np.random.default_rng(seed))
        keep = train_counts.sum(1) > 0
        train = hb.Comparisons(data.judges, data.items, data.judge[keep], data.first[keep],
                               data.second[keep], train_counts[keep], categories=data.categories)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.ConvergenceWarning)
            fits = {name: hb.fit_hja(train, rank=1, position_bias=True, outcome=name)
                    for name in ("ordinal", "half", "davidson")}
        test3 = collapse_counts(test)
        n = test.sum()
        row = dict(seed=seed, n_test=float(n))
        for name, fit in fits.items():
            eta = fit.logits(data.judge, data.first, data.second)
            if name == "ordinal":
                p5 = probabilities(model5, eta, np.log(fit.aux)[data.judge])
                p3 = collapse_counts(p5)
                row["ordinal_5"] = float(-np.sum(test * np.log(p5)) / n)
            elif name == "davidson":
                with np.errstate(divide="ignore"):
                    p3 = probabilities(fit.outcome_model, eta, np.log(fit.aux)[data.judge])
            else:  # no tie probability: the judge's training tie rate, the rest by expit(eta)
                frame = {"judge": np.asarray(data.judges)[data.judge],
                         "model_a": np.asarray(data.items)[data.first],
                         "model_b": np.asarray(data.items)[data.second]}
                import pandas as pd

                p3 = fit.outcome_proba(pd.DataFrame(frame)).to_numpy()
            p3 = np.clip(p3, 1e-12, 1.0)
            row[f"{name}_3"] = float(-np.sum(test3 * np.log(p3)) / n)
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--cluster-reps", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--per-judge", type=int, default=800)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    result = {"config": vars(args), "goal": GOAL}
    rows, seconds = coverage(args.reps, args.per_judge, 0, 0.0, ("fisher",), 0)
    result["independent"] = dict(summary=summarise(rows), seconds=seconds)
    rows, seconds = coverage(args.cluster_reps, args.per_judge, 40, 0.5, ("fisher", "cluster"),
                             5000)
    result["prompts"] = dict(summary=summarise(rows), seconds=seconds)
    held = held_out(args.seeds, args.per_judge)
    diffs = {}
    for name in ("half", "davidson"):
        d = np.array([r[f"{name}_3"] - r["ordinal_3"] for r in held])
        diffs[name] = dict(mean=float(d.mean()), sd=float(d.std(ddof=1)),
                           se=float(d.std(ddof=1) / np.sqrt(len(d))))
    result["held_out"] = dict(rows=held, minus_ordinal=diffs,
                              mean={k: float(np.mean([r[k] for r in held]))
                                    for k in ("ordinal_5", "ordinal_3", "half_3", "davidson_3")})
    (OUT / "ordinal.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = ["# Ordered verdicts: coverage and held-out log-loss", "",
             f"Command: `python benchmarks/bench_ordinal.py --reps {args.reps} --cluster-reps "
             f"{args.cluster_reps} --seeds {args.seeds} --per-judge {args.per_judge}`", "",
             "## Coverage of 95% intervals (goal [93, 97]%)", "",
             "| design | covariance | quantity | coverage | MCSE | panels |", "|---|---|---|---|---|---|"]
    for design in ("independent", "prompts"):
        for key, s in result[design]["summary"].items():
            cov, quantity = key.split(":")
            lines.append(f"| {design} | {cov} | {quantity} | {s['coverage']:.3f} | "
                         f"{s['mcse']:.3f} | {s['panels']} |")
        lines.append("")
    m = result["held_out"]["mean"]
    lines += ["## Held-out log-loss per verdict (20% of the verdicts, "
              f"{args.seeds} seeds)", "",
              f"- ordinal, five levels: {m['ordinal_5']:.4f}",
              f"- three outcomes: ordinal {m['ordinal_3']:.4f}, davidson {m['davidson_3']:.4f}, "
              f"half {m['half_3']:.4f}"]
    for name, d in diffs.items():
        lines.append(f"- {name} minus ordinal (three outcomes): {d['mean']:+.4f} (se {d['se']:.4f})")
    (OUT / "ordinal.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
