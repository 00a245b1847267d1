"""``hja-bayes update``: add verdicts to a saved fit, warm-started at it (``fit.update``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .agreement import add_agreement
from .common import Progress, add_common
from .inputs import read_data
from .panel import (add_bayes, add_reader, prompt_effects_of, publish, sample_posterior,
                    uncontrolled)

__all__ = ["add_update_command"]


def _cmd_update(args: argparse.Namespace) -> int:
    from ..design.update import newcomers
    from ..errors import DataError
    from ..fit_folder import POSTERIOR
    from ..persistence import load_fit
    from ..summary import count_of, number
    from ..verdicts import scale_of

    progress = Progress(args.quiet)
    fit_dir = Path(args.fit_dir)
    out = Path(args.out)
    had_posterior = (fit_dir / POSTERIOR).exists()
    if out.resolve() == fit_dir.resolve() and had_posterior and not args.bayes:
        raise DataError(f"{fit_dir} also holds a posterior of the earlier data, which an update "
                        "in place would delete: write the update elsewhere with --out, or add "
                        "--bayes to sample a posterior of all the verdicts in its place")
    progress(f"loading the fit from {fit_dir}")
    fit = load_fit(fit_dir)
    if args.scale_levels is None:  # a numeric scale is read as the fit's
        args.scale_levels = scale_of(fit.data.categories)
    progress(f"reading {args.data}")
    if fit.data.clusters is not None and not fit.data.cluster_column and not args.cluster_col:
        raise DataError(f"the fit in {fit_dir} has prompts but does not record their column (it "
                        "was saved by an earlier version): name the new verdicts' prompt column "
                        "with --cluster-col")
    new, name = _read_new(args, fit)
    progress(f"adding {count_of(new.n_comparisons, 'comparison')} to the fit's "
             f"{number(fit.data.n_comparisons)} (rank {fit.rank} kept, as the fit chose it: "
             "'hja-bayes fit' on all the verdicts chooses the rank afresh)")
    added = {what: names for what, names in newcomers(fit, new).items() if names}
    if added:
        progress("new " + " and new ".join(f"{what} {names}" for what, names in added.items())
                 + f": the model is fitted afresh to all the verdicts at rank {fit.rank} (a "
                 "warm start needs the fit's own judges and models)")
    fit = fit.update(new)
    steps = f"{fit.n_iter} step{'' if fit.n_iter == 1 else 's'}"
    progress(f"updated: {steps}, {'converged' if fit.converged else 'NOT converged'}")
    prompts = prompt_effects_of(fit.data, args)
    if had_posterior and not args.bayes:
        progress(f"the posterior in {fit_dir} (posterior.nc) is of the earlier verdicts and is "
                 "not carried over: --bayes samples one of all the verdicts")
    if args.format != "json":
        print(fit.data.summary())
    plain = uncontrolled(fit, progress)
    idata = sample_posterior(fit.data, fit, args, progress, prompts)
    return publish(fit.data, fit, args, progress, f"{fit_dir.name} with {name}", out,
                   idata, plain)


def _read_new(args: argparse.Namespace, fit):
    """The new verdicts, read as ``fit`` reads them.  Two of the reader's warnings are about
    the file alone: few verdicts per judge (a small batch has few by nature; the fit's judges
    have their own), and judges none of whose rows here are usable, which stay in the fit
    with its verdicts: said so."""
    import re
    import warnings

    from ..errors import DataWarning, warn

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=r".*judges in column .* with a median of")
        read = read_data(args, fit.data.cluster_column or ("-" if fit.data.clusters is None
                                                           else None))
    for w in caught:
        text = str(w.message)
        dropped = re.match(r"(judge|model)\(s\) whose rows here are all unusable, left out "
                           r"of these data: (.*)", text)
        if dropped and dropped.group(1) == "judge":
            warn(f"judge(s) none of whose new rows are usable: {dropped.group(2)} (those in "
                 "the fit keep their verdicts there)", DataWarning)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return read


def add_update_command(sub) -> None:
    """Register the ``update`` subcommand."""
    upd = sub.add_parser(
        "update", help="add verdicts to a saved fit, warm-started at it",
        description="Add new verdicts to a fit saved by 'hja-bayes fit': the fit's rank and\n"
                    "terms are kept, and the model is fitted to all the verdicts starting\n"
                    "from the saved fit (the same optimum as a refit at that rank). New\n"
                    "judges or models are added, the model then fitted afresh to all the\n"
                    "verdicts (the fit's folder holds them). Prints and saves as 'fit' does;\n"
                    "--bayes samples the posterior of all the verdicts from the updated fit\n"
                    "(a saved posterior is of the earlier ones and is not carried over).",
        epilog="input:\n  DATA is read as by 'hja-bayes fit' (same columns and options), its "
               "prompts from the\n  fit's prompt column unless --cluster-col names another, "
               "and numeric verdicts on\n  the fit's --verdict-scale; new prompts, pairs, "
               "judges and models are fine.\n\n"
               "the loop of adaptive design:\n"
               "  hja-bayes next fit1 --budget 500 --goal top --out next.csv\n"
               "  (collect the verdicts next.csv asks for into new.csv)\n"
               "  hja-bayes update fit1 new.csv --out fit2 --report\n"
               "  hja-bayes next fit2 --budget 500 --goal top --out next.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    upd.add_argument("fit_dir", help="folder written by 'hja-bayes fit' or HJAFit.save")
    upd.add_argument("data", help="file of new verdicts, or '-' for stdin (as for 'fit')")
    add_reader(upd)
    upd.add_argument("--out", required=True,
                     help="folder for the updated fit; FIT_DIR itself replaces it (each run "
                          "adds DATA's verdicts: adding them twice counts them twice)")
    add_bayes(upd, samples=1000)
    upd.add_argument("--seed", type=int, default=0, help="with --bayes: the sampler's seed "
                                                          "(default 0)")
    upd.add_argument("--report", action="store_true", help="also write the report to OUT/report")
    upd.add_argument("--title", default=None, help="with --report: its title")
    upd.add_argument("--format", choices=("text", "json"), default="text",
                     help="stdout: tables as text, or one JSON object (as 'fit')")
    add_agreement(upd)
    add_common(upd, baseline=True, pairwise=True)
    upd.set_defaults(run=_cmd_update)
