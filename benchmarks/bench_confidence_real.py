"""Confidence rankers on Trust-or-Escalate and PRD Vicuna80: cross-validated AUROC per judge.

Rows (issue 12): Trust-or-Escalate with features oriented to the verdict (each judge's
probability of the output the target judge chose) and raw (each judge's probability of
output 1), and PRD Vicuna80 with the loader's features.  Every method is fitted on four folds
and scored on the fifth (AUROC within the held-out fold), 5 folds x ``--seeds`` shuffles;
PRD folds keep each question inside one fold.  Goal per row: the default ranker's mean AUROC
>= max(logistic regression, boosting) - 0.01.

Methods: ``default`` = ConfidenceRanker() with its defaults; ``logistic`` =
sklearn LogisticRegression(); ``boosting`` = HistGradientBoostingClassifier(max_depth=2);
``heuristic`` = the loader's heuristic confidence (predictive probability on TE,
panel agreement on PRD).  ``--variants`` adds ablations (see ``VARIANTS``).

Usage: python benchmarks/bench_confidence_real.py [--seeds 2] [--variants deterministic ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hja_bayes.confidence import (  # noqa: E402
    ConfidenceRanker,
    auroc,
    load_prd_vicuna80_confidence,
    load_trust_or_escalate_confidence,
)
from _confidence_common import baselines, cross_validated_auroc, write_results  # noqa: E402

TE_ROWS = ("gpt-4-turbo", "gpt-3.5-turbo", "mistral-7b-instruct")
PRD_ROWS = ("gpt4", "claude", "vicuna-13b")
#: Ablations: settings changed from the default.
VARIANTS = {
    "deterministic": dict(posterior=False),
    "adaptive_margin": dict(margin="adaptive"),
    "paper_margin_adaptive": dict(posterior=False, margin="adaptive"),
    "standardize": dict(preprocess="standardize"),
    "no_transform": dict(preprocess="none"),
    "auto_prior": dict(prior_scale="auto"),
    "kl_weight_1": dict(kl_weight=1.0),
    "old_shape": dict(hidden=(64, 32, 16)),
}


def datasets(names, data_dir):
    for name in names:
        if name == "te":
            for judge in TE_ROWS:
                yield "TE oriented", judge, load_trust_or_escalate_confidence(judge, data_dir), "predictive_probability"
        elif name == "te_raw":
            for judge in TE_ROWS:
                yield ("TE raw", judge, load_trust_or_escalate_confidence(judge, data_dir, orient=False),
                       "predictive_probability")
        elif name == "prd":
            for judge in PRD_ROWS:
                yield "PRD loader", judge, load_prd_vicuna80_confidence(judge), "panel_agreement"


def ranker_method(**settings):
    def method(x_train, a_train, x_test, seed):
        return ConfidenceRanker(seed=seed, **settings).fit(x_train, a_train).predict_confidence(x_test)
    return method


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--datasets", nargs="+", default=["te", "te_raw", "prd"], choices=["te", "te_raw", "prd"])
    parser.add_argument("--variants", nargs="*", default=[], choices=sorted(VARIANTS))
    parser.add_argument("--no-default", action="store_true", help="skip the default and the baselines")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--name", default="confidence_real")
    args = parser.parse_args(argv)
    t0 = time.time()
    methods = {} if args.no_default else {"default": ranker_method(), **baselines()}
    methods.update({v: ranker_method(**VARIANTS[v]) for v in args.variants})
    cols = [m for m in ("logistic", "boosting", "default") if m in methods] + list(args.variants)
    lines = ["| data | judge | n | agree | heuristic | " + " | ".join(cols) + " | goal: default >= max(LR, HGB) - 0.01 |",
             "|" + "---|" * (len(cols) + 6)]
    results = {}
    for kind, judge, data, heuristic in datasets(args.datasets, args.data_dir):
        grouped = kind.startswith("PRD")
        scores = cross_validated_auroc(data, methods, args.seeds, grouped=grouped)
        heur = float(np.mean([auroc(data.baselines[heuristic][t], data.agree[t])
                              for t in _folds_of(data, args.seeds, grouped)]))
        row = {k: {"mean": float(np.mean(v)), "se": float(np.std(v, ddof=1) / np.sqrt(len(v))), "folds": v}
               for k, v in scores.items()}
        goal = ""
        if not args.no_default:
            target = max(row["logistic"]["mean"], row["boosting"]["mean"]) - 0.01
            goal = f"{row['default']['mean']:.3f} vs {target:.3f}: {'met' if row['default']['mean'] >= target else 'MISSED'}"
        results[f"{kind}/{judge}"] = {"n": data.n, "agreement_rate": data.agreement_rate,
                                      "heuristic": heur, "auroc": row, "goal": goal}
        cells = [f"{row[c]['mean']:.3f} ± {row[c]['se']:.3f}" for c in cols]
        lines.append(f"| {kind} | {judge} | {data.n} | {data.agreement_rate:.3f} | {heur:.3f} | "
                     + " | ".join(cells) + f" | {goal} |")
        print(lines[-1], f"({time.time() - t0:.0f} s)", flush=True)
    lines += ["", f"AUROC within held-out folds, mean ± s.e. over 5 folds x {args.seeds} seeds (folds of one "
              "shuffle are not independent, so the s.e. is indicative). Heuristic: predictive probability (TE), "
              f"panel agreement (PRD). Wall time {time.time() - t0:.0f} s."]
    write_results(args.name, {"settings": vars(args), "results": results}, "\n".join(lines))


def _folds_of(data, n_seeds, grouped):
    from _confidence_common import grouped_folds, stratified_folds

    out = []
    for seed in range(n_seeds):
        out += grouped_folds(data.groups, 5, seed) if grouped else stratified_folds(data.agree, 5, seed)
    return out


if __name__ == "__main__":
    main()
