"""``hja-bayes fit``, ``report`` and ``demo``: read a panel, fit it, show and save it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from .common import Progress, add_common, print_table, rank_arg

__all__ = ["add_panel_commands"]

BUNDLED = {"bundled:prd_vicuna80"}
#: Columns taken as the cluster (prompt) of each judgment when --cluster-col is not given.
CLUSTER_COLUMNS = ("question_id", "prompt_id", "conversation_id")


def _read_data(args: argparse.Namespace):
    from ..comparisons import Comparisons
    from ..datasets import load_prd_vicuna80
    from ..errors import DataError

    source = args.data
    if source in BUNDLED:
        frame = load_prd_vicuna80().judgments
        cluster = _cluster_column(frame, getattr(args, "cluster_col", None))
        return Comparisons.from_frame(frame, cluster=cluster), "PRD Vicuna80 (bundled)"
    path = Path(source)
    if not path.exists():
        raise DataError(f"no such file: {source} (or use one of {sorted(BUNDLED)})")
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-1:] == [".gz"]:
        suffixes = suffixes[:-1]
    kind = suffixes[-1] if suffixes else ""
    if kind in (".jsonl", ".json", ".ndjson"):
        frame = pd.read_json(path, lines=True, dtype=False)
    elif kind in (".csv", ".txt", ".tsv"):
        frame = pd.read_csv(path, dtype=str, sep="\t" if kind == ".tsv" else ",")
    else:
        raise DataError(f"{source}: unknown file type {kind or '(none)'!r}; use .csv, .tsv or .jsonl")
    judge = None if args.judge_col == "-" else args.judge_col
    cluster = _cluster_column(frame, args.cluster_col)
    if args.counts:
        for column in (args.n_col, args.wins_col) + ((args.ties_col,) if args.ties_col else ()):
            if column in frame.columns:
                frame[column] = pd.to_numeric(frame[column], errors="coerce")
        data = Comparisons.from_counts(frame, judge=judge, model_a=args.model_a_col,
                                       model_b=args.model_b_col, n=args.n_col,
                                       wins=args.wins_col, ties=args.ties_col or None,
                                       cluster=cluster)
    else:
        data = Comparisons.from_frame(frame, judge=judge, model_a=args.model_a_col,
                                      model_b=args.model_b_col, winner=args.winner_col,
                                      cluster=cluster)
    return data, path.name


def _cluster_column(frame: pd.DataFrame, requested: str | None) -> str | None:
    """The prompt column: the one asked for, '-' for none, else the first known one present."""
    import sys

    if requested == "-":
        return None
    if requested is not None:
        return requested
    found = next((c for c in CLUSTER_COLUMNS if c in frame.columns), None)
    if found is not None:
        print(f"hja-bayes: comparisons are clustered by {found!r} (prompts): intervals are "
              "cluster-robust (--cluster-col - to treat comparisons as independent)",
              file=sys.stderr)
    return found


def _fit(data, args, progress):
    from ..hja import fit_hja

    what = f"rank chosen by {args.rank.upper()}" if isinstance(args.rank, str) else f"rank {args.rank}"
    progress(f"fitting the HJA model ({what}, position bias "
             f"{'on' if args.position_bias else 'off'})")
    fit = fit_hja(data, rank=args.rank, position_bias=args.position_bias, seed=args.seed)
    progress(f"fitted: rank {fit.rank}, {fit.n_iter} iterations, "
             f"{'converged' if fit.converged else 'NOT converged'}")
    return fit


def _sample(data, fit, args, progress):
    if not args.bayes:
        return None
    from ..bayes import sample_hja

    if args.samples < 1 or args.chains < 1:
        raise ValueError("--samples and --chains must be at least 1")
    warmup = args.samples if args.warmup is None else args.warmup
    progress(f"sampling the posterior by NUTS from the MAP ({args.chains} chains x "
             f"{warmup} warm-up + {args.samples} draws)")
    idata = sample_hja(data, fit.rank, init=fit, num_warmup=warmup, num_samples=args.samples,
                       num_chains=args.chains, seed=args.seed, progress_bar=not args.quiet)
    progress("posterior sampled")
    return idata


def _show(fit, level, scale, progress, idata=None):
    from ..reporting import judge_table, leaderboard, wald

    progress("Wald intervals")
    inference = wald(fit)
    board = leaderboard(fit, idata, level=level, scale=scale, inference=inference)
    kind = "Wald and credible" if idata is not None else "Wald"
    print(f"\nLeaderboard ({level:.0%} {kind} intervals, {scale} scale):")
    print_table(board)
    print("\nJudges:")
    print_table(judge_table(fit, idata, level=level, inference=inference))
    return inference


def _cmd_fit(args: argparse.Namespace) -> int:
    progress = Progress(args.quiet)
    progress(f"reading {args.data}")
    data, name = _read_data(args)
    print(data.summary())
    fit = _fit(data, args, progress)
    idata = _sample(data, fit, args, progress)
    inference = _show(fit, args.level, args.scale, progress, idata)
    out = Path(args.out)
    fit.save(out, idata=idata)
    progress(f"saved the fit to {out}/ (fit.json, arrays.npz"
             + (", posterior.nc)" if idata is not None else ")"))
    if args.report:
        from ..reporting import report

        progress("writing the report")
        files = report(fit, out / "report", idata, level=args.level, scale=args.scale,
                       inference=inference, title=f"HJA leaderboard: {name}")
        progress(f"report written: {files.html}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ..persistence import load_fit, load_posterior
    from ..reporting import report

    progress = Progress(args.quiet)
    fit_dir = Path(args.fit_dir)
    progress(f"loading the fit from {fit_dir}")
    fit = load_fit(fit_dir)
    idata = load_posterior(fit_dir)
    if idata is not None:
        progress("found posterior draws (posterior.nc): adding the Bayesian columns")
    out = Path(args.out) if args.out else fit_dir / "report"
    progress("computing intervals and drawing figures")
    files = report(fit, out, idata, level=args.level, scale=args.scale, title=args.title)
    progress("done")
    print(files.html)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..datasets import PRD_CITATION
    from ..reporting import report

    progress = Progress(args.quiet)
    args.data = "bundled:prd_vicuna80"
    progress("reading the bundled PRD Vicuna80 judgments")
    data, _ = _read_data(args)
    print("PRD Vicuna80 —", PRD_CITATION)
    print(data.summary())
    fit = _fit(data, args, progress)
    print()
    print(fit.summary())
    idata = _sample(data, fit, args, progress)
    inference = _show(fit, args.level, args.scale, progress, idata)
    progress("writing the report (tables, figures, HTML)")
    files = report(fit, args.out, idata, level=args.level, scale=args.scale,
                   inference=inference, title="HJA leaderboard: PRD Vicuna80 (five LLM judges)")
    progress("done")
    print(f"\nReport: {files.html}")
    return 0


def _add_model(p: argparse.ArgumentParser, *, rank_default, bias_default: bool) -> None:
    p.add_argument("--rank", type=rank_arg, default=rank_default,
                   help=f"disagreement rank r: an integer, or 'bic' / 'cv' to choose it "
                        f"(default {rank_default})")
    p.add_argument("--position-bias", dest="position_bias", action="store_true",
                   default=bias_default, help="estimate a per-judge first-position bias")
    if bias_default:
        p.add_argument("--no-position-bias", dest="position_bias", action="store_false",
                       help="leave the position bias out")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the cross-validation folds and of the sampler (default 0)")


def _add_bayes(p: argparse.ArgumentParser, *, samples: int) -> None:
    p.add_argument("--bayes", action="store_true",
                   help="also sample the posterior (NUTS from the MAP): credible columns, "
                        "posterior rank and predictive checks")
    p.add_argument("--samples", type=int, default=samples,
                   help=f"with --bayes: draws per chain (default {samples})")
    p.add_argument("--warmup", type=int, default=None,
                   help="with --bayes: warm-up steps per chain (default: --samples)")
    p.add_argument("--chains", type=int, default=2, help="with --bayes: chains (default 2)")


def add_panel_commands(sub) -> None:
    """Register the ``fit``, ``report`` and ``demo`` subcommands."""
    fit = sub.add_parser("fit", help="fit the HJA model to comparison data and save it")
    fit.add_argument("data", help="CSV / JSONL file (one row per judgment), or "
                                  "bundled:prd_vicuna80")
    fit.add_argument("--judge-col", default="judge",
                     help="column naming the judge ('-': one judge) (default judge)")
    fit.add_argument("--model-a-col", default="model_a", help="model shown first (default model_a)")
    fit.add_argument("--model-b-col", default="model_b", help="model shown second (default model_b)")
    fit.add_argument("--winner-col", default="winner",
                     help="verdict: model_a, model_b, tie, or the winner's name (default winner)")
    fit.add_argument("--cluster-col", default=None,
                     help="column naming the prompt / question of each judgment; verdicts on "
                          "one prompt are dependent and the intervals become cluster-robust "
                          f"(default: the first of {', '.join(CLUSTER_COLUMNS)} present; "
                          "'-': none)")
    fit.add_argument("--counts", action="store_true",
                     help="rows are aggregated cells with counts (see --n-col, --wins-col)")
    fit.add_argument("--n-col", default="n", help="with --counts: comparisons (default n)")
    fit.add_argument("--wins-col", default="wins",
                     help="with --counts: wins of model_a, ties counted 1/2 (default wins)")
    fit.add_argument("--ties-col", default="ties", help="with --counts: ties (default ties)")
    _add_model(fit, rank_default="bic", bias_default=False)
    _add_bayes(fit, samples=1000)
    fit.add_argument("--out", default="hja_fit", help="folder for the saved fit (default hja_fit)")
    fit.add_argument("--report", action="store_true", help="also write the report to OUT/report")
    add_common(fit)
    fit.set_defaults(run=_cmd_fit)

    rep = sub.add_parser("report", help="write the HTML/Markdown/CSV/JSON report of a saved fit")
    rep.add_argument("fit_dir", help="folder written by 'hja-bayes fit' or HJAFit.save")
    rep.add_argument("--out", default=None, help="report folder (default FIT_DIR/report)")
    rep.add_argument("--title", default=None, help="report title")
    add_common(rep)
    rep.set_defaults(run=_cmd_report)

    demo = sub.add_parser("demo", help="the full report on the bundled PRD Vicuna80 data")
    demo.add_argument("--out", default="report", help="report folder (default report)")
    _add_model(demo, rank_default="bic", bias_default=True)
    _add_bayes(demo, samples=500)
    add_common(demo)
    demo.set_defaults(run=_cmd_demo)
