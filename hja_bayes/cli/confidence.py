"""``hja-bayes confidence``: train the confidence ranker, certify a threshold, apply it."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import Progress

__all__ = ["add_confidence_command"]


def _cmd_confidence(args: argparse.Namespace) -> int:
    import json

    from ..confidence.pipeline import read_confidence_source, run_pipeline

    progress = Progress(args.quiet)
    progress(f"reading {args.data}")
    data = read_confidence_source(args.data, judge=args.judge, human_col=args.human_col,
                                  data_dir=args.data_dir)
    print(data)
    result = run_pipeline(data, alpha=args.alpha, delta=args.delta,
                          train_fraction=args.train_fraction,
                          calibration_fraction=args.calibration_fraction, epochs=args.epochs,
                          pairs=args.pairs, posterior=args.posterior, seed=args.seed,
                          progress=progress)
    summary = result.summary
    print(f"split by group: {summary['n_train']} train, {summary['n_calibration']} calibration, "
          f"{summary['n_test']} test examples")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "confidence.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    result.predictions.to_csv(out / "test_predictions.csv", index=False)
    target, threshold = 1 - args.alpha, summary["threshold"]
    if threshold is None:
        print(f"No threshold certifies agreement >= {target:.0%} with probability "
              f"{1 - args.delta:.0%} on these calibration examples: abstain on everything.")
    else:
        print(f"Threshold {threshold:.4f}: trust verdicts with confidence >= it "
              f"(certified agreement >= {target:.0%} with probability >= {1 - args.delta:.0%}).")
        print(f"Test: coverage {summary['test_coverage']:.1%}, agreement among kept "
              f"{summary['test_agreement_selected']:.1%} (all: {summary['test_agreement_all']:.1%}); "
              f"AUROC {summary['test_auroc']:.3f}")
    progress(f"wrote {out / 'confidence.json'} and {out / 'test_predictions.csv'}")
    return 0


def add_confidence_command(sub) -> None:
    """Register the ``confidence`` subcommand."""
    conf = sub.add_parser(
        "confidence", help="train the confidence ranker, certify a threshold, apply it")
    conf.add_argument("data", help="bundled:prd_vicuna80, trust_or_escalate, or a CSV of "
                                   "per-prompt probabilities of preferring response 1 plus a "
                                   "human column (1/2)")
    conf.add_argument("--judge", default=None,
                      help="judge to assess (default gpt4 / gpt-4-turbo / the file name)")
    conf.add_argument("--human-col", default="human", help="CSV: human label column (default human)")
    conf.add_argument("--data-dir", default=None, help="folder of the unbundled data sets")
    conf.add_argument("--alpha", type=float, default=0.15,
                      help="target disagreement rate among trusted verdicts (default 0.15)")
    conf.add_argument("--delta", type=float, default=0.1,
                      help="allowed failure probability of the guarantee (default 0.1)")
    conf.add_argument("--train-fraction", type=float, default=0.5,
                      help="share of groups used to train the ranker (default 0.5)")
    conf.add_argument("--calibration-fraction", type=float, default=0.25,
                      help="share of groups used to pick the threshold (default 0.25); the "
                           "rest is the test split")
    conf.add_argument("--epochs", type=int, default=30, help="training epochs (default 30)")
    conf.add_argument("--pairs", type=int, default=5000,
                      help="(agree, disagree) training pairs (default 5000)")
    conf.add_argument("--no-posterior", dest="posterior", action="store_false",
                      help="deterministic weights instead of the Gaussian weight posterior")
    conf.add_argument("--seed", type=int, default=0, help="seed of the split and the training")
    conf.add_argument("--out", default="hja_confidence",
                      help="folder for confidence.json and test_predictions.csv")
    conf.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    conf.set_defaults(run=_cmd_confidence)
