"""Confidence rankers on Trust-or-Escalate and PRD Vicuna80: cross-validated AUROC per judge.

Every method is fitted on four folds and scored on the fifth (AUROC within the held-out
fold), for 5 folds x ``--seeds`` shuffles; the table gives the mean AUROC over the
fold-seed pairs and its standard error (folds of one shuffle are not independent, so the
error is indicative).  PRD folds keep each question inside one fold.

Usage: python benchmarks/bench_confidence_real.py [--seeds 5] [--datasets te prd]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hja_bayes.confidence import (  # noqa: E402
    PRD_JUDGES,
    TE_JUDGES,
    ConfidenceRanker,
    LogisticConfidence,
    auroc,
    load_prd_vicuna80_confidence,
    load_trust_or_escalate_confidence,
)
from _confidence_common import grouped_folds, stratified_folds, write_results  # noqa: E402

RANKERS = {
    "vanilla": dict(posterior=False, margin=0.1),
    "margin_adaptive": dict(posterior=False),
    "gaussian_posterior": dict(),
}
# goals from the issue (Trust-or-Escalate, predictive probability and logistic regression)
TE_GOALS = {
    "gpt-4-turbo": (0.764, 0.753),
    "gpt-3.5-turbo": (0.743, 0.768),
    "mistral-7b-instruct": (0.732, 0.755),
}


def evaluate(data, heuristics, n_seeds, grouped, n_epochs):
    scores = {name: [] for name in list(heuristics) + ["logistic_regression"] + list(RANKERS)}
    for seed in range(n_seeds):
        folds = grouped_folds(data.groups, 5, seed) if grouped else stratified_folds(data.agree, 5, seed)
        for f, test in enumerate(folds):
            train = np.setdiff1d(np.arange(data.n), test)
            x_tr, a_tr, x_te, a_te = data.features[train], data.agree[train], data.features[test], data.agree[test]
            for name in heuristics:
                scores[name].append(auroc(data.baselines[name][test], a_te))
            lr = LogisticConfidence().fit(x_tr, a_tr)
            scores["logistic_regression"].append(auroc(lr.predict(x_te), a_te))
            for name, kw in RANKERS.items():
                r = ConfidenceRanker(seed=10 * seed + f, n_epochs=n_epochs, **kw).fit(x_tr, a_tr)
                scores[name].append(auroc(r.predict(x_te), a_te))
    return {k: (float(np.mean(v)), float(np.std(v, ddof=1) / np.sqrt(len(v)))) for k, v in scores.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--datasets", nargs="+", default=["te", "prd"], choices=["te", "prd"])
    parser.add_argument("--n-epochs", type=int, default=30)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--name", default="confidence_real")
    args = parser.parse_args(argv)
    t0 = time.time()
    results, lines = {}, []
    cols = ["heuristic", "logistic_regression", "vanilla", "margin_adaptive", "gaussian_posterior"]
    header = "| data | judge | agree rate | " + " | ".join(cols) + " | default vs goals |"
    lines += [header, "|" + "---|" * (len(cols) + 4)]
    jobs = []
    if "te" in args.datasets:
        jobs += [("te", j) for j in TE_JUDGES[::-1]]
    if "prd" in args.datasets:
        jobs += [("prd", j) for j in PRD_JUDGES]
    for ds, judge in jobs:
        if ds == "te":
            data = load_trust_or_escalate_confidence(judge, args.data_dir)
            heur = ["predictive_probability"]
        else:
            data = load_prd_vicuna80_confidence(judge)
            heur = ["self_consistency", "panel_agreement"]
        res = evaluate(data, heur, args.seeds, ds == "prd", args.n_epochs)
        default = res["gaussian_posterior"][0]
        verdict = ""
        if ds == "te":
            pp_goal, lr_goal = TE_GOALS[judge]
            lr_here = res["logistic_regression"][0]
            verdict = (
                f">= PP ({res['predictive_probability'][0]:.3f}): {'met' if default >= res['predictive_probability'][0] else 'MISSED'}; "
                f">= LR-0.01 ({lr_here - 0.01:.3f}): {'met' if default >= lr_here - 0.01 else 'MISSED'}; "
                f"issue's figures PP {pp_goal} / LR {lr_goal}"
            )
        results[f"{ds}/{judge}"] = {"n": data.n, "agreement_rate": data.agreement_rate, "auroc": res}
        heur_txt = " / ".join(f"{res[h][0]:.3f}" for h in heur)
        cells = [heur_txt] + [f"{res[c][0]:.3f} ± {res[c][1]:.3f}" for c in cols[1:]]
        lines.append(f"| {ds} | {judge} | {data.agreement_rate:.3f} | " + " | ".join(cells) + f" | {verdict} |")
        print(lines[-1], flush=True)
    lines.append("")
    lines.append(
        f"AUROC within held-out folds, mean ± s.e. over 5 folds x {args.seeds} seeds; heuristic = predictive "
        "probability (TE) or self-consistency / panel agreement (PRD). Wall time "
        f"{time.time() - t0:.0f} s."
    )
    write_results(args.name, {"settings": vars(args), "results": results}, "\n".join(lines))


if __name__ == "__main__":
    main()
