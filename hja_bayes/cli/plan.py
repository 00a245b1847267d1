"""``hja-bayes plan``: comparisons per judge that detect the gaps asked for, from a saved fit."""

from __future__ import annotations

import argparse
import sys

from .common import Progress, level_arg, positive_int, print_table

__all__ = ["add_plan_command"]

EPILOG = """\
The saved fit is the pilot: its estimates are the assumed truth (or --gap), its judges'
mix of pairs the allocation (or --allocation uniform), its prompts the design effect
(--prompts and --icc change them).

output:
  On stdout the answer, what was assumed, and the power curve over sizes around it. With
  --out, one row per pair asked: model_a, model_b, gap, sd, se and power at that size.

examples:
  hja-bayes plan my_fit --pairs adjacent --power 0.8
  hja-bayes plan my_fit --pairs top --k 3 --gap 0.2 --prompts 400 --out plan.csv
  hja-bayes plan my_fit --pairs all --multiplicity pairs --target each"""


def _cmd_plan(args: argparse.Namespace) -> int:
    from ..design import plan
    from ..persistence import load_fit

    progress = Progress(args.quiet)
    progress(f"loading the fit from {args.fit_dir}")
    fit = load_fit(args.fit_dir)
    progress(f"planning for the pairs {args.pairs!r} at power {args.power} (joint level "
             f"{args.level}, {args.multiplicity})")
    result = plan(fit, gap=args.gap, pairs=args.pairs, k=args.k, level=args.level,
                  power=args.power, multiplicity=args.multiplicity, target=args.target,
                  prompts=args.prompts, icc=args.icc, allocation=args.allocation,
                  max_per_judge=args.max_per_judge, seed=args.seed)
    every = "every pair asked at once" if result.target == "all" else "the weakest pair"
    notes = [note.replace("plan(..., prompts=)", "--prompts") for note in result.notes]
    if result.comparisons_per_judge is None:  # the note that says so, and why, goes first
        reach = [note for note in notes if " is out of reach " in note]
        notes = [note for note in notes if note not in reach]
        print(f"{every[0].upper()}{every[1:]}: {reach[0]}")
    else:
        print(f"{result.comparisons_per_judge:,} comparisons per judge "
              f"({result.total_comparisons:,} in all) detect {every} with power "
              f"{result.power:.3f} ({len(result.table):,} pairs; critical value "
              f"{result.critical_value:.3f})")
    for note in notes:
        print(f"  {note}")
    print()
    print_table(result.curve)
    if args.out:
        target = sys.stdout if args.out == "-" else args.out
        result.table.to_csv(target, index=False)
        if args.out != "-":
            progress(f"wrote {len(result.table)} pairs to {args.out}")
    return 0


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _power(text: str) -> float:
    value = _number(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"power must lie strictly between 0 and 1, got {value}")
    return value


def _icc(text: str) -> float:
    value = _number(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"icc must lie in [0, 1), got {value}")
    return value


def _gap(text: str) -> float:
    value = _number(text)
    if not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"gap must be finite and > 0, got {value}")
    return value


def add_plan_command(sub) -> None:
    """Register the ``plan`` subcommand."""
    p = sub.add_parser(
        "plan", help="comparisons per judge needed to detect score gaps (power)",
        description="How many comparisons per judge detect the gaps asked for jointly, at a\n"
                    "level and power, from a saved fit taken as the pilot.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("fit_dir", help="folder written by 'hja-bayes fit' or HJAFit.save")
    p.add_argument("--pairs", choices=("adjacent", "top", "all"), default="adjacent",
                   help="the differences to detect: neighbours in the fit's order, the top k "
                        "against the rest, or every pair (default adjacent)")
    p.add_argument("--k", type=positive_int, default=3, help="with --pairs top: k (default 3)")
    p.add_argument("--gap", type=_gap, default=None,
                   help="the gap to detect in every pair, logits (default: the fit's own)")
    p.add_argument("--power", type=_power, default=0.8, help="target power (default 0.8)")
    p.add_argument("--level", type=level_arg, default=0.95,
                   help="joint confidence level (default 0.95)")
    p.add_argument("--multiplicity", choices=("ranks", "pairs", "bonferroni", "none"),
                   default="ranks",
                   help="critical value: max-|t| over every pair of models (the joint rank "
                        "intervals'), over the pairs asked, Bonferroni, or none (default ranks)")
    p.add_argument("--target", choices=("all", "each"), default="all",
                   help="power that every pair is detected at once, or the weakest one "
                        "(default all)")
    p.add_argument("--prompts", type=lambda text: positive_int(text, least=2), default=None,
                   help="prompts the comparisons are spread over (default: the fit's)")
    p.add_argument("--icc", type=_icc, default=None,
                   help="intra-prompt correlation (default: from the fit)")
    p.add_argument("--allocation", choices=("source", "uniform"), default=None,
                   help="each judge's mix of pairs: the fit's (default) or uniform")
    p.add_argument("--max-per-judge", dest="max_per_judge", type=positive_int,
                   default=10_000_000, help="largest size searched (default 10,000,000)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the simulated critical values and joint power (default 0)")
    p.add_argument("--out", default=None, help="CSV of the pairs asked, '-' for stdout")
    p.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    p.set_defaults(run=_cmd_plan)
