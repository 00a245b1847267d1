"""``hja-bayes plan``: comparisons per judge that detect the gaps asked for, from a saved fit
or, before any data, from assumed scores."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext, redirect_stdout

from .common import Progress, level_arg, number_arg, positive_int, print_table

__all__ = ["add_plan_command"]

EPILOG = """\
The saved fit is the pilot: its estimates are the assumed truth (or --gap), its judges'
mix of pairs the allocation (or --allocation uniform), its prompts the design effect
(--prompts and --icc change them).  Before any data, assume the scores instead: --scores
reads them from a CSV (columns model and score, logits), --models N spaces N models --gap
apart; --judges judges of sensitivity 1 then compare every ordered pair equally often,
and the comparisons are independent unless --prompts and --icc say otherwise.

output:
  On stdout the answer, what was assumed, and the power curve over sizes around it. With
  --out, one row per pair asked: model_a, model_b, gap, sd (the estimate's standard
  deviation), se (the standard error its test uses: CR2's, about sd), critical (the pair's
  critical value: with prompts the t quantile at G - 1 degrees of freedom, about the
  Satterthwaite ones of the fit's intervals) and power at that size (at --max-per-judge when out of reach); '-' for
  stdout, the rest then on stderr.

examples:
  hja-bayes plan my_fit --pairs adjacent --power 0.8
  hja-bayes plan my_fit --pairs top --k 3 --gap 0.2 --prompts 400 --out plan.csv
  hja-bayes plan my_fit --pairs all --multiplicity pairs --target each
  hja-bayes plan --models 8 --gap 0.3 --judges 3 --prompts 1000 --icc 0.05
  hja-bayes plan --scores scores.csv --judges 2 --pairs top --k 3 --gap 0.2"""


def _critical_said(result) -> str:
    """The critical value the plan's test uses: with prompts each pair's t quantile."""
    c = f"{result.critical_value:.3f}"
    if result.prompts is None or "critical" not in result.table:
        return c
    return (f"{float(result.table.critical.iloc[0]):.3f}: the max-|t| value {c} as a t quantile "
            f"at {result.prompts - 1} degrees of freedom")


def _cmd_plan(args: argparse.Namespace) -> int:
    from ..design.plan import plan
    from ..errors import ParameterError
    from ..persistence import load_fit

    problem = _check_source(args)
    if problem:
        raise ParameterError(problem)
    progress = Progress(args.quiet)
    if args.fit_dir is not None:
        progress(f"loading the fit from {args.fit_dir}")
        source = load_fit(args.fit_dir)
        assumed = {"allocation": args.allocation}
    else:
        source = (_read_scores(args.scores) if args.scores is not None
                  else [-args.gap * i for i in range(args.models)])
        assumed = {"judges": args.judges or 1}
    progress(f"planning for the pairs {args.pairs!r} at power {args.power} (joint level "
             f"{args.level}, {args.multiplicity})")
    try:
        result = plan(source, gap=args.gap, pairs=args.pairs, k=args.k, level=args.level,
                      power=args.power, multiplicity=args.multiplicity, target=args.target,
                      prompts=args.prompts, icc=args.icc, max_per_judge=args.max_per_judge,
                      seed=args.seed, **assumed)
    except ParameterError as error:  # the library's argument, said as the option
        raise ParameterError(str(error).replace("(prompts=)", "(--prompts)")
                             .replace("pass gap=", "pass --gap")) from None
    # with --out -, stdout is the CSV alone: the summary and the curve go to stderr
    with redirect_stdout(sys.stderr) if args.out == "-" else nullcontext():
        _print_summary(result)
    if args.out:
        target = sys.stdout if args.out == "-" else args.out
        result.table.to_csv(target, index=False)
        if args.out != "-":
            progress(f"wrote {len(result.table)} pairs to {args.out} (their errors and power "
                     f"at {result.table.attrs['comparisons_per_judge']:,} comparisons per judge)")
    return 0


def _print_summary(result) -> None:
    """The answer in a sentence, the plan's notes, and the power curve."""
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
              f"{_critical_said(result)})")
    for note in notes:
        print(f"  {note}")
    print()
    print_table(result.curve)


def _check_source(args: argparse.Namespace) -> str | None:
    """What is wrong with the choice of source (a saved fit, --scores or --models), if
    anything: exactly one, and the options each one takes."""
    given = [args.fit_dir is not None, args.scores is not None, args.models is not None]
    if sum(given) != 1:
        return "give one of a saved fit (FIT_DIR), --scores FILE or --models N"
    if args.fit_dir is not None and args.judges is not None:
        return "--judges is for assumed scores (--scores, --models): a fit has its own judges"
    if args.fit_dir is None and args.allocation is not None:
        return "--allocation is for a saved fit: assumed scores compare every pair equally often"
    if args.models is not None and args.gap is None:
        return "--models N spaces the models --gap apart: give --gap"
    from ..design.assumed import LARGEST_SPREAD

    if args.models is not None and (args.models - 1) * abs(args.gap) > LARGEST_SPREAD:
        return (f"--models {args.models} spaced --gap {args.gap:g} apart spread over "
                f"{(args.models - 1) * abs(args.gap):.4g} logits, more than {LARGEST_SPREAD:g} "
                "(the far pairs never in doubt): give the scores you expect (--scores FILE, "
                "e.g. your leaderboard's, in logits) and --gap for the difference to detect")
    if args.fit_dir is None and args.icc is not None and args.prompts is None:
        return "--icc needs --prompts: assumed scores have no prompts of their own"
    return None


def _read_scores(path: str):
    """Assumed scores from a CSV with columns ``model`` and ``score`` (a Series by model)."""
    import pandas as pd

    from ..errors import DataError

    from pathlib import Path

    if not Path(path).is_file():
        raise DataError(f"no such file: {path}")
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path} is empty (it needs the columns model and score)") from None
    missing = [c for c in ("model", "score") if c not in table.columns]
    if missing:
        raise DataError(f"{path}: no column {' or '.join(missing)} (the columns are "
                        f"{', '.join(map(str, table.columns))}; model and score are needed)")
    if table.model.duplicated().any():
        twice = sorted(table.model[table.model.duplicated()].astype(str).unique())
        raise DataError(f"{path}: a model is given twice: {', '.join(twice)}")
    scores = pd.to_numeric(table.score, errors="coerce")
    if scores.isna().any():
        row = int(scores.isna().to_numpy().argmax())
        value = table.score.iloc[row]
        raise DataError(f"{path}: the score of {table.model.iloc[row]!r} is not a number "
                        f"({'an empty cell' if pd.isna(value) else repr(value)})")
    return pd.Series(scores.to_numpy(dtype=float), index=table.model.astype(str))


def add_plan_command(sub) -> None:
    """Register the ``plan`` subcommand."""
    p = sub.add_parser(
        "plan", help="comparisons per judge needed to detect score gaps (power)",
        description="How many comparisons per judge detect the gaps asked for jointly, at a\n"
                    "level and power, from a saved fit taken as the pilot or from assumed\n"
                    "scores.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("fit_dir", nargs="?", default=None,
                   help="folder written by 'hja-bayes fit' or HJAFit.save (the pilot)")
    p.add_argument("--scores", default=None,
                   help="instead of a fit: a CSV of assumed scores (columns model, score)")
    p.add_argument("--models", type=lambda text: positive_int(text, least=2), default=None,
                   help="instead of a fit: this many models, each --gap below the one before")
    p.add_argument("--judges", type=positive_int, default=None,
                   help="with --scores or --models: judges (default 1), each comparing every "
                        "ordered pair equally often")
    p.add_argument("--pairs", choices=("adjacent", "top", "all"), default="adjacent",
                   help="the differences to detect: neighbours in the fit's order, the top k "
                        "against the rest, or every pair (default adjacent)")
    p.add_argument("--k", type=positive_int, default=3, help="with --pairs top: k (default 3)")
    p.add_argument("--gap", type=number_arg("gap", 0.0), default=None,
                   help="the gap to detect in every pair, logits (default: the fit's own)")
    p.add_argument("--power", type=number_arg("power", 0.0, 1.0), default=0.8,
                   help="target power (default 0.8)")
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
                   help="prompts the comparisons are spread over (default: the fit's; "
                        "from assumed scores, independent comparisons)")
    p.add_argument("--icc", type=number_arg("icc", 0.0, 1.0, closed_low=True), default=None,
                   help="intra-prompt correlation (default: from the fit; 0 from assumed "
                        "scores)")
    p.add_argument("--allocation", choices=("source", "uniform"), default=None,
                   help="each judge's mix of pairs: the fit's (default) or uniform")
    p.add_argument("--max-per-judge", dest="max_per_judge", type=positive_int,
                   default=10_000_000, help="largest size searched (default 10,000,000)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the simulated critical values and joint power (default 0)")
    p.add_argument("--out", default=None, help="CSV of the pairs asked, '-' for stdout")
    p.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    p.set_defaults(run=_cmd_plan)
