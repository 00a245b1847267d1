"""Ties: Davidson parameter recovery in simulation, and "half" vs "davidson" on real panels.

**Recovery.**  Panels simulated from the Davidson model (K = 5 judges with tie propensities
nu = 0.1, 0.3, 0.6, 1.0, 2.0; N = 8 items; rank 1; position bias 0.3; T comparisons per
judge), fitted with ``fit_hja(..., outcome="davidson", position_bias=True)``.  Reported per
judge: coverage of the 95% Wald interval of nu_k (log scale, mapped back) with its Monte
Carlo standard error sqrt(c (1 - c) / R), the mean relative error of nu_hat and the mean se;
goal: pooled coverage >= 0.93 (issue 10's goal for the other intervals).
Two designs: independent comparisons (Fisher intervals; the sandwich as well), and verdicts
coupled within prompts (``questions=40, question_correlation=0.5``; Fisher vs cluster-robust).
The pooled coverage's MCSE is the sd of the per-replicate coverage over sqrt(R) (judges of a
replicate share a fit).

**Real panels.**  MT-Bench and Chatbot Arena (JA-Ranking sets, ``$HJA_DATA_DIR`` or
``../shared/data``; not bundled) and the bundled PRD Vicuna80, invalid rows dropped, rows
split 80/20 at random over 5 seeds (as ``bench_hja_real.py``).  Each model (rank 0 and 1, with
position bias) is fitted on the 80% with ``outcome="half"`` and ``outcome="davidson"``, and every
held-out row gets ``fit.outcome_proba`` (p_first, p_tie, p_second; for "half", p_tie is the
judge's training tie rate and the rest is split by the logistic probability).  Metrics on the
held-out rows: three-outcome log-loss (mean -log p of the observed outcome; probabilities
floored at 1e-6 and renormalised, the number of rows that hit the floor is reported),
accuracy with ties as a class (argmax of the three), and the Brier score.  The paired
difference davidson - half is averaged over seeds with its sd.

Usage: ``python benchmarks/bench_ties.py [--reps 500] [--cluster-reps 300] [--seeds 5]``.
Writes ``benchmarks/results/ties.json`` and ``ties.md``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import hja_bayes as hb
from hja_bayes.readers import INVALID_LABELS

OUT = Path(__file__).parent / "results"
NU = np.array([0.1, 0.3, 0.6, 1.0, 2.0])
FLOOR = 1e-6
CONFIGS = [("r=0 + position bias", 0), ("r=1 + position bias", 1)]
OUTCOME = {"model_a": 0, "tie": 1, "model_b": 2}
#: Coverage goal of the nu intervals (issue 10's goal for the other Wald intervals).
GOAL = 0.93


def recovery(reps: int, per_judge: int, questions: int, rho: float, cov_types, seed0: int):
    rows = []
    t0 = time.time()
    for rep in range(reps):
        data, truth = hb.simulate(n_judges=len(NU), n_items=8, rank=1, comparisons_per_judge=per_judge,
                                  seed=seed0 + rep, position_bias=0.3, outcome="davidson", nu=NU,
                                  questions=questions, question_correlation=rho)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", hb.ConvergenceWarning)
            fit = hb.fit_hja(data, rank=1, position_bias=True, outcome="davidson")
        for cov_type in cov_types:
            iv = fit.wald_inference(cov_type).outcome_parameters("nu")
            for k in range(len(NU)):
                rows.append(dict(rep=rep, judge=k, nu=NU[k], cov_type=cov_type, estimate=iv.estimate[k],
                                 se=iv.se[k], lower=iv.lower[k], upper=iv.upper[k],
                                 covered=bool(iv.lower[k] <= NU[k] <= iv.upper[k]),
                                 converged=fit.converged))
        if (rep + 1) % 20 == 0:
            print(f"  recovery ({'prompts' if questions else 'independent'}): {rep + 1}/{reps} "
                  f"replicates, {time.time() - t0:.0f}s", flush=True)
    return rows


def summarise_recovery(df: pd.DataFrame) -> dict:
    out = {}
    for cov_type, g in df.groupby("cov_type", sort=False):
        R = g.rep.nunique()
        per_judge = []
        for k, h in g.groupby("judge"):
            c = h.covered.mean()
            per_judge.append(dict(nu=float(h.nu.iloc[0]), coverage=c, mcse=float(np.sqrt(c * (1 - c) / R)),
                                  rel_error=float(((h.estimate - h.nu) / h.nu).mean()),
                                  mean_se=float(h.se.mean()), sd_estimate=float(h.estimate.std(ddof=1))))
        by_rep = g.groupby("rep").covered.mean()
        out[cov_type] = dict(replicates=R, pooled=float(g.covered.mean()),
                             pooled_mcse=float(by_rep.std(ddof=1) / np.sqrt(R)),
                             converged=float(g.converged.mean()), per_judge=per_judge)
    return out


def load(name: str) -> pd.DataFrame:
    if name == "prd":
        df = hb.datasets.load_prd_vicuna80().judgments
    else:
        df = hb.datasets.load_ja_ranking(name)
    valid = ~df.winner.astype(str).str.strip().str.lower().isin(INVALID_LABELS)
    df = df[valid].reset_index(drop=True)
    df["winner"] = df.winner.astype(str).str.strip().str.lower()
    return df[df.winner.isin(OUTCOME)].reset_index(drop=True)


def scores(p: np.ndarray, outcome: np.ndarray) -> dict:
    """Log-loss, accuracy (ties a class) and Brier score of probabilities p (rows x 3)."""
    floored = np.maximum(p, FLOOR)
    floored /= floored.sum(1, keepdims=True)
    observed = p[np.arange(len(p)), outcome]
    onehot = np.eye(3)[outcome]
    return dict(log_loss=float(-np.mean(np.log(floored[np.arange(len(p)), outcome]))),
                accuracy=float(np.mean(np.argmax(p, 1) == outcome)),
                brier=float(np.mean(np.sum((p - onehot) ** 2, 1))),
                floored_rows=int(np.sum(observed < FLOOR)))


def real_panels(names, seeds: int):
    rows = []
    for name in names:
        df = load(name)
        print(f"{name}: {len(df)} rows, {np.mean(df.winner == 'tie'):.3f} ties", flush=True)
        for seed in range(seeds):
            t0 = time.time()
            perm = np.random.default_rng(seed).permutation(len(df))
            cut = int(0.8 * len(df))
            train, test = df.iloc[perm[:cut]], df.iloc[perm[cut:]]
            data = hb.Comparisons.from_frame(train)
            known = test.judge.isin(data.judges) & test.model_a.isin(data.items) & test.model_b.isin(data.items)
            test = test[known]
            outcome = test.winner.map(OUTCOME).to_numpy()
            for label, rank in CONFIGS:
                for ties in ("half", "davidson"):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", hb.ConvergenceWarning)
                        warnings.simplefilter("ignore", hb.DataWarning)
                        fit = hb.fit_hja(data, rank=rank, position_bias=True, outcome=ties)
                    p = fit.outcome_proba(test).to_numpy()
                    rows.append(dict(dataset=name, seed=seed, model=label, ties=ties, n_test=len(test),
                                     test_ties=float(np.mean(outcome == 1)), converged=fit.converged,
                                     **scores(p, outcome)))
            print(f"  {name} seed {seed}: {time.time() - t0:.1f}s", flush=True)
    return rows


def to_markdown(rec: dict, real: pd.DataFrame, args, seconds: float) -> str:
    lines = ["# Ties: Davidson parameter recovery and held-out three-outcome fit", "",
             f"Command: `python benchmarks/bench_ties.py --reps {args.reps} --cluster-reps "
             f"{args.cluster_reps} --seeds {args.seeds}` ({seconds / 60:.1f} min)", ""]
    for design, summary in rec.items():
        lines += [f"## Recovery of nu_k: {design}", ""]
        for cov_type, s in summary.items():
            goal = s["pooled"] >= GOAL
            lines += [f"**{cov_type}**: pooled coverage of the 95% intervals {s['pooled']:.3f} "
                      f"(MCSE {s['pooled_mcse']:.3f}, {s['replicates']} replicates; goal >= {GOAL}: "
                      f"{'met' if goal else 'MISSED'}); fits converged {s['converged']:.0%}.", "",
                      "| nu_k | coverage | MCSE | mean relative error of nu_hat | mean se | sd of nu_hat |",
                      "|---|---|---|---|---|---|"]
            for j in s["per_judge"]:
                lines.append(f"| {j['nu']} | {j['coverage']:.3f} | {j['mcse']:.3f} | {j['rel_error']:+.3f} | "
                             f"{j['mean_se']:.4f} | {j['sd_estimate']:.4f} |")
            lines.append("")
    if len(real):
        lines += ["## Held-out three-outcome fit on real panels (80/20 rows, mean ± sd over seeds)", "",
                  "Log-loss: mean -log p(observed outcome), lower is better; accuracy: argmax of "
                  "(p_first, p_tie, p_second), ties a class; Brier: sum of squared errors over the "
                  "three outcomes. 'half' predicts ties at the judge's training tie rate.", "",
                  "| dataset | model | held-out tie rate | ties | log-loss | accuracy | Brier | rows at the floor |",
                  "|---|---|---|---|---|---|---|---|"]
        for (d, m, t), g in real.groupby(["dataset", "model", "ties"], sort=False):
            lines.append(f"| {d} | {m} | {g.test_ties.mean():.3f} | {t} | {g.log_loss.mean():.4f} ± "
                         f"{g.log_loss.std():.4f} | {g.accuracy.mean():.4f} ± {g.accuracy.std():.4f} | "
                         f"{g.brier.mean():.4f} | {g.floored_rows.sum()} |")
        lines += ["", "Paired difference davidson - half (mean ± sd over seeds; negative log-loss and "
                  "Brier, positive accuracy favour Davidson):", "",
                  "| dataset | model | Δ log-loss | Δ accuracy | Δ Brier |", "|---|---|---|---|---|"]
        wide = real.pivot_table(index=["dataset", "model", "seed"], columns="ties",
                                values=["log_loss", "accuracy", "brier"], sort=False)
        for (d, m), g in wide.groupby(level=[0, 1], sort=False):
            diff = {v: g[(v, "davidson")] - g[(v, "half")] for v in ("log_loss", "accuracy", "brier")}
            lines.append(f"| {d} | {m} | {diff['log_loss'].mean():+.4f} ± {diff['log_loss'].std():.4f} | "
                         f"{diff['accuracy'].mean():+.4f} ± {diff['accuracy'].std():.4f} | "
                         f"{diff['brier'].mean():+.4f} ± {diff['brier'].std():.4f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500, help="replicates, independent comparisons")
    parser.add_argument("--cluster-reps", type=int, default=300, help="replicates, coupled verdicts")
    parser.add_argument("--per-judge", type=int, default=1500)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--datasets", nargs="*", default=["mtbench", "chatbot_arena", "prd"])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    start = time.time()
    raw = {}
    if args.reps:
        raw["independent comparisons"] = recovery(args.reps, args.per_judge, 0, 0.0,
                                                  ("fisher", "sandwich"), 10_000)
    if args.cluster_reps:
        raw["verdicts coupled within 40 prompts (rho = 0.5)"] = recovery(
            args.cluster_reps, args.per_judge, 40, 0.5, ("fisher", "cluster"), 20_000)
    rec = {design: summarise_recovery(pd.DataFrame(rows)) for design, rows in raw.items()}
    real = pd.DataFrame(real_panels(args.datasets, args.seeds)) if args.seeds else pd.DataFrame()
    seconds = time.time() - start
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ties.json").write_text(json.dumps(
        {"recovery": rec, "real": real.to_dict("records"), "nu": NU.tolist(),
         "per_judge": args.per_judge, "seconds": seconds}, indent=1, default=float))
    md = to_markdown(rec, real, args, seconds)
    (args.out / "ties.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
