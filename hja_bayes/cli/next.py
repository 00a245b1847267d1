"""``hja-bayes next``: the next comparisons to ask for, from a saved fit."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import Progress, level_arg, number_arg, positive_int

__all__ = ["add_next_command", "read_judges"]

EPILOG = """\
judges file (--cost):
  A CSV with a row per judge that may be asked: column judge, column cost (one verdict's
  cost, e.g. 1 for an LLM call and 50 for a human), and optionally models: the models that
  judge may see, separated by ';' (empty: every model). Judges not listed are not asked.
  --budget counts verdicts; costs decide which verdicts (the most uncertainty removed per
  unit cost), and --max-cost caps the total spent.

output:
  One row per verdict to collect, in the order chosen: judge, model_a (show it first),
  model_b, the prompt (with --prompts; the column is named as the fit's prompt column,
  e.g. question_id, so that 'update' reads the verdicts collected on these rows), cost,
  gain (expected drop of the goal's uncertainty), uncertainty (expected uncertainty left)
  and step. Presentation orders are balanced per judge and pair.

examples:
  hja-bayes next my_fit --budget 500 --goal top --k 3 --cost judges.csv --out next.csv
  hja-bayes next my_fit --budget 200 --goal ranks --tie-margin 0.1 --prompts prompts.txt
  hja-bayes next my_bayes_fit --budget 100 --goal top --k 3 --posterior"""


def read_judges(path):
    """``(cost, judges)`` from a judges CSV: judge -> cost, judge -> allowed models (None: all)."""
    import pandas as pd

    from ..errors import DataError

    if not Path(path).exists():
        raise DataError(f"no such file: {path}")
    try:
        frame = pd.read_csv(path, dtype={"judge": str})
    except pd.errors.EmptyDataError:
        raise DataError(f"{path} is empty (it needs the columns judge and cost)") from None
    if not isinstance(frame.index, pd.RangeIndex):  # pandas took the extra field as an index
        raise DataError(f"rows of {path} have more fields than its header: separate the "
                        "models of a judge by ';', not ',' (or quote the list)")
    missing = [c for c in ("judge", "cost") if c not in frame]
    if missing:
        raise DataError(f"{path} needs the columns judge and cost; missing {missing}")
    if frame["judge"].duplicated().any():
        raise DataError(f"{path} names a judge twice: "
                        f"{sorted(frame['judge'][frame['judge'].duplicated()])[:5]}")
    cost = dict(zip(frame["judge"], frame["cost"]))
    judges = {}
    for _, row in frame.iterrows():
        models = row.get("models") if "models" in frame else None
        if models is None or (isinstance(models, float) and models != models) or not str(models).strip():
            judges[row["judge"]] = None
        else:
            judges[row["judge"]] = [m.strip() for m in str(models).split(";") if m.strip()]
    return cost, judges


def _read_prompts(path, data):
    """Prompt ids, one per line; a first line naming the column (the fit's prompt column,
    "prompt", "prompt_id" or a prompt column the readers recognise, such as "question_id")
    rather than a prompt of the fit is a header and is skipped."""
    from ..errors import DataError

    if not Path(path).exists():
        raise DataError(f"no such file: {path}")
    prompts = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    known = set(data.clusters.names) if data.clusters is not None else set()
    from .inputs import CLUSTER_COLUMNS

    if prompts and prompts[0] in {data.cluster_column, "prompt", "prompt_id",
                                  *CLUSTER_COLUMNS} - known:
        prompts = prompts[1:]
    if not prompts:
        raise DataError(f"{path} names no prompt (one per line)")
    return prompts


def _cmd_next(args: argparse.Namespace) -> int:
    import sys

    from ..design import next_comparisons
    from ..errors import DataError
    from ..fit_folder import POSTERIOR
    from ..persistence import load_fit, load_posterior

    progress = Progress(args.quiet)
    progress(f"loading the fit from {args.fit_dir}")
    fit = load_fit(args.fit_dir)
    posterior = None
    if args.posterior:
        posterior = load_posterior(args.fit_dir)
        if posterior is None:
            raise DataError(f"{args.fit_dir} holds no posterior: write one with "
                            "'hja-bayes fit ... --bayes', or leave out --posterior")
    elif (Path(args.fit_dir) / POSTERIOR).exists():
        progress("the folder also holds a posterior: --posterior decides the goal by it")
    cost = judges = None
    if args.cost:
        cost, judges = read_judges(args.cost)
        absent = [j for j in fit.judges if j not in cost]
        if absent:
            progress(f"not asked (not in {args.cost}): {', '.join(map(str, absent))}")
    prompts = _read_prompts(args.prompts, fit.data) if args.prompts else None
    progress(f"choosing {args.budget} comparisons for the goal {args.goal!r}")
    table = next_comparisons(fit, args.budget, goal=args.goal, k=args.k, judges=judges,
                             cost=cost, prompts=prompts, seed=args.seed, level=args.level,
                             tie_margin=args.tie_margin, posterior=posterior,
                             max_cost=args.max_cost)
    meta = table.attrs["meta"]
    column = fit.data.cluster_column
    if "prompt" in table and column and column not in table:  # the name 'update' reads
        table = table.rename(columns={"prompt": column})
    if args.out == "-":
        table.to_csv(sys.stdout, index=False)
    else:
        table.to_csv(args.out, index=False)
        progress(f"wrote {len(table)} rows to {args.out}")
    unit = meta["uncertainty_unit"]
    after = float(table["uncertainty"].iloc[-1]) if len(table) else meta["uncertainty_before"]
    progress(f"{unit}: {meta['uncertainty_before']:.3f} now, {after:.3f} expected after "
             f"(total cost {meta['total_cost']:g}, design effect {meta['design_effect']:.2f})")
    screened = meta["screened"]
    if screened is not None:
        progress(f"a large panel: the search chose among the {screened['units_searched']:,} of "
                 f"{screened['units']:,} (judge, pair) units that did most, to first order, "
                 f"for the goal's {screened['contrasts_searched']:,} most uncertain contrasts")
    now, level = meta["undecided_now"], f"{meta['level']:.0%}"
    if now == 0:
        progress(f"the goal '{meta['goal']}' already holds by the fit's joint {level} "
                 "intervals: the rows only tighten intervals that are already decided")
    elif now is not None:
        verb = "is" if now == 1 else "are"
        progress(f"now {now:,} of the goal's {meta['contrasts']:,} contrasts {verb} undecided "
                 f"by the fit's joint {level} intervals")
    return 0


def add_next_command(sub) -> None:
    """Register the ``next`` subcommand."""
    p = sub.add_parser(
        "next", help="the next comparisons to ask for, chosen for a goal",
        description="Choose the next comparisons (judge, model shown first, model shown\n"
                    "second) for a saved fit: those expected to settle the goal fastest per\n"
                    "unit cost, by the Fisher information of each verdict.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("fit_dir", help="folder written by 'hja-bayes fit' or HJAFit.save")
    p.add_argument("--budget", type=positive_int, required=True,
                   help="number of comparisons (verdicts) to choose; costs decide which")
    p.add_argument("--max-cost", dest="max_cost", type=number_arg("--max-cost", 0.0),
                   default=None, help="stop before the chosen verdicts cost more than this")
    p.add_argument("--goal", choices=("top", "ranks", "pairs", "tiers"), default="top",
                   help="top: separate the top k; ranks: decide every neighbouring pair; "
                        "tiers: decide every pair; pairs: shrink every difference (default top)")
    p.add_argument("--k", type=positive_int, default=3, help="with --goal top: k (default 3)")
    p.add_argument("--cost", default=None, metavar="JUDGES_CSV",
                   help="CSV of the judges that may be asked: judge, cost[, models]")
    p.add_argument("--prompts", default=None, metavar="FILE",
                   help="prompt ids, one per line (a first line naming the column, e.g. "
                        "the fit's prompt column, is a header): each row gets one where its "
                        "two answers "
                        "were shown least; a judge gives one verdict per ordered pair and "
                        "prompt, so prompts it has judged fully are passed over")
    p.add_argument("--tie-margin", dest="tie_margin", default=0.2,
                   type=number_arg("--tie-margin", 0.0, closed_low=True),
                   help="logits within which a pair may be declared a tie (default 0.2)")
    p.add_argument("--level", type=level_arg, default=0.95,
                   help="joint level of the intervals that decide the goal (default 0.95)")
    p.add_argument("--posterior", action="store_true",
                   help="decide the goal by the posterior saved in the folder ('fit --bayes'): "
                        "its means, variances and credible intervals")
    p.add_argument("--seed", type=int, default=0,
                   help="breaks ties and picks the order of evenly shown pairs (default 0)")
    p.add_argument("--out", default="next.csv", help="output CSV, '-' for stdout (default next.csv)")
    p.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    p.set_defaults(run=_cmd_next)
