"""``hja-bayes fit``, ``report`` and ``demo``: read a panel, fit it, show and save it."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ParameterError
from .agreement import add_agreement, check_agreement, panel_agreement, show_agreement
from .common import (ROWS_HINT, Progress, add_common, gamma_scale_arg, positive_int,
                     print_table, rank_arg, self_preference_pairs, table_style)
from .fit_json import bias_terms, json_summary
from .inputs import CLUSTER_COLUMNS, read_data

__all__ = ["add_bayes", "add_panel_commands", "add_reader", "prompt_effects_of", "publish",
           "sample_posterior", "uncontrolled"]


FIT_EPILOG = """\
input:
  DATA is a CSV / TSV, JSON Lines, JSON array (FastChat clean_battle), or parquet file
  (optionally .gz), '-' for standard input (any of these, recognised by its content:
  gzip and parquet by their magic bytes, JSON by its first character, TSV by tabs without
  commas), bundled:prd_vicuna80, or a folder or glob ('logs/*.parquet') of such
  files, aggregated by DuckDB without loading the rows (pip install 'hja_bayes[duckdb]';
  not with --counts or --style-control). One row per verdict with the columns named by
  --judge-col, --model-a-col, --model-b-col and --winner-col.
  Verdicts: model_a / a (first shown wins), model_b / b, tie / draw / tie (bothbad) /
  tie (inconsistent) / both_bad (a tie), or the winning model's own name; invalid / error /
  unknown / none / n/a / na / null / an empty cell mean no usable verdict (counted, not
  fitted).
  Kaggle-style one-hot columns winner_model_a / winner_model_b / winner_tie are read
  when there is no winner column. With --counts: one row per cell with n, wins, ties.
  Ordered verdicts: Arena-Hard's A>>B, A>B, A=B, B>A, B>>A, or whole numbers with
  --verdict-scale LO..HI (higher favours model_a); fitted with --outcome ordinal.
  One judge only (e.g. Chatbot Arena votes): --judge-col -

examples:
  hja-bayes fit votes.csv --rank bic --position-bias --report --out fit
  hja-bayes fit clean_battle.json --judge-col - --style arena --baseline gpt-4=1200
  hja-bayes fit votes.parquet --format json > result.json
  cat votes.jsonl | hja-bayes fit - --judge-col grader --winner-col verdict"""


def _fit(data, args, progress):
    from ..hja import fit_hja

    what = f"rank chosen by {args.rank.upper()}" if isinstance(args.rank, str) else f"rank {args.rank}"
    outcome = args.outcome or ("ordinal" if len(data.categories) != 3 else "half")
    self_preference = self_preference_pairs(args.self_preference)
    style = (args.style_scope or "per_judge") if data.feature_names else None
    ties = outcome == "half" and data.ties.sum() > 0
    extras = "".join([f", leaving out {', '.join(map(repr, args.leave_out))}"
                      if args.leave_out else "",
                      f", outcome {outcome}" if outcome != "half" else "",
                      f", style ({', '.join(data.feature_names)}; {style})" if style else "",
                      ", self-preference" if self_preference is not None else "",
                      ", ties counted 1/2 to each side; --outcome davidson models them"
                      if ties else ""])
    progress(f"fitting the HJA model ({what}, position bias "
             f"{'on' if args.position_bias else 'off'}{extras})")
    # a command fits once: compile the solver quickly rather than for many fits
    fit = fit_hja(data, rank=args.rank, position_bias=args.position_bias, seed=args.seed,
                  progress=isinstance(args.rank, str) and not args.quiet, outcome=outcome,
                  style=style, self_preference=self_preference, quick_compile=True,
                  leave_out=args.leave_out)
    progress(f"fitted: rank {fit.rank}, {fit.n_iter} iterations, "
             f"{'converged' if fit.converged else 'NOT converged'}")
    return fit


#: ``--prompt-effects`` choices and what ``sample_hja(prompt_effects=...)`` is given.
PROMPT_EFFECTS = {"auto": None, "sampled": "sampled", "integrated": "integrated", "none": False}


def prompt_effects_of(data, args):
    """``--prompt-effects`` checked on the data: ``(prompt_effects, method, why)`` or None."""
    if not getattr(args, "bayes", False):
        given = [f"--{name.replace('_', '-')}" for name, default
                 in getattr(args, "sampler_defaults", {}).items() if getattr(args, name) != default]
        if given:  # they had been ignored without a word
            raise ParameterError(f"{', '.join(given)} set the sampler: add --bayes to sample the "
                                 "posterior (without it they do nothing)")
        return None
    from ..bayes.problem import prompt_setting

    asked = PROMPT_EFFECTS[args.prompt_effects]
    if asked and data.clusters is None:
        raise ParameterError(f"--prompt-effects {args.prompt_effects} needs prompts: name their "
                             "column with --cluster-col")
    return (asked, *prompt_setting(data, asked))


def sample_posterior(data, fit, args, progress, prompts):
    """With --bayes: the posterior by NUTS from the fit, as the options ask (else None)."""
    if not args.bayes:
        return None
    from ..bayes import HJAPriors, sample_hja

    warmup = args.samples if args.warmup is None else args.warmup
    asked, method, why = prompts
    progress(f"sampling the posterior by NUTS from the MAP ({args.chains} chains x "
             f"{warmup} warm-up + {args.samples} draws"
             + (f"; prompt effects {method}: {why}" if method else
                "; no answer effects: the credible intervals take the verdicts as independent"
                if data.clusters is not None else "") + ")"
             + ("" if progress.bar else "; no progress bar: standard error is not a terminal"))
    idata = sample_hja(data, fit.rank, init=fit, num_warmup=warmup, num_samples=args.samples,
                       num_chains=args.chains, seed=args.seed, progress_bar=progress.bar,
                       prompt_effects=asked, priors=HJAPriors(gamma_scale=args.gamma_scale))
    progress("posterior sampled")
    return idata


def uncontrolled(fit, progress):
    """The fit without its bias terms (for the rank change), or None when it has none."""
    if not any(t.name in ("style", "self") for t in fit.terms):
        return None
    progress("fitting the same model without its bias terms, for the rank change")
    return fit.uncontrolled()


def _tables(fit, args, idata=None, uncontrolled=None):
    from ..reporting import judge_table, leaderboard, wald

    inference = wald(fit)
    board = leaderboard(fit, idata, level=args.level, scale=args.scale,
                        style=getattr(args, "style", "default"),
                        baseline=getattr(args, "baseline", None), inference=inference,
                        uncontrolled=uncontrolled)
    return inference, board, judge_table(fit, idata, level=args.level, inference=inference)


def _show(board, judges, args, progress, idata=None, fit=None, inference=None):
    """The leaderboard, the judges and (any beyond the judges' beta) the bias terms."""
    wald_kind = {"cluster": "cluster-robust Wald", "sandwich": "sandwich Wald"}.get(
        board.attrs.get("meta", {}).get("cov_type", "fisher"), "Wald")
    kind = f"{wald_kind} and credible" if idata is not None else wald_kind
    scale = board.attrs["scale"]
    print(f"\nLeaderboard ({args.level:.0%} {kind} intervals, {scale} scale):")
    print_table(board, args.rows, "model", ROWS_HINT)
    n = board.attrs.get("n_draws")
    if n:  # 1.000 would read as certainty
        print(f"(posterior probabilities from {n:,} draws: 0.000 and 1.000 mean below 1/{n:,} "
              f"and above 1 - 1/{n:,})")
    print("\nJudges:")
    print_table(judges, args.rows, "judge", ROWS_HINT)
    biases = None if fit is None else bias_terms(fit, args.level, inference)
    if biases is not None:
        print("\nJudge biases (logit scale):")
        print_table(biases, args.rows, "judge", ROWS_HINT)


def _fragility(fit, args, progress) -> list:
    """With --fragility: how few verdicts (and prompts) put another model first."""
    if not getattr(args, "fragility", False):
        return []
    units = ["verdict"] + (["prompt"] if fit.data.clusters is not None else [])
    out = []
    for unit in units:
        progress(f"fragility of the top spot ({unit}s: influence, then exact refits)")
        out.append(fit.fragility("top", unit))
    return out


def _cmd_fit(args: argparse.Namespace) -> int:
    progress = Progress(args.quiet)
    progress(f"reading {args.data}")
    data, name = read_data(args)
    if args.baseline is not None:  # a model not in the data: said before the fit, not after
        from ..checks import index_of

        index_of(args.baseline[0], data.items, "model")
    prompts = prompt_effects_of(data, args)
    check_agreement(data, args)
    if args.format != "json":
        print(data.summary())
    fit = _fit(data, args, progress)
    plain = uncontrolled(fit, progress)
    idata = sample_posterior(data, fit, args, progress, prompts)
    return publish(data, fit, args, progress, name, Path(args.out), idata, plain)


def publish(data, fit, args, progress, name, out: Path, idata=None, plain=None) -> int:
    """What ``fit`` and ``update`` end with: the tables, the saved folder, stdout, and the
    report with ``--report``."""
    progress("Wald intervals")
    inference, board, judges = _tables(fit, args, idata, plain)
    fragile = _fragility(fit, args, progress)
    agree = panel_agreement(fit.data, args, progress)
    replaced = (Path(out) / "fit.json").exists()
    fit.save(out, idata=idata)
    if args.format == "json":
        print(json_summary(data, fit, board, judges, out, fragile, agree,
                           getattr(args, "said_warnings", ()),
                           bias_terms(fit, args.level, inference)), end="")
    else:
        _show(board, judges, args, progress, idata, fit, inference)
        for f in fragile:
            print(f"\nFragility ({f.unit}s): {f.sentence}")
        if agree is not None:
            show_agreement(agree, args.rows)
    progress(f"saved the fit to {out}/ (fit.json, arrays.npz"
             + (", posterior.nc)" if idata is not None else ")")
             + (", replacing the fit saved there before" if replaced else ""))
    if args.report:
        from ..reporting import report
        from ..reporting.sentences import default_title

        progress("writing the report")
        files = report(fit, out / "report", idata, level=args.level, scale=args.scale,
                       inference=inference, title=args.title or f"{name}: "
                       + default_title(fit.data), uncontrolled=plain, fragility=fragile,
                       agreement=agree, baseline=args.baseline, pairwise=args.pairwise)
        progress(f"report written: {files.html}")
    elif (out / "report").exists():
        progress(f"{out / 'report'} still shows the fit before: --report (or 'hja-bayes "
                 "report') writes it again")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from ..persistence import load_fit, load_posterior
    from ..reporting import report

    progress = Progress(args.quiet)
    fit_dir = Path(args.fit_dir)
    progress(f"loading the fit from {fit_dir}")
    fit, idata = load_fit(fit_dir), load_posterior(fit_dir)
    if args.baseline is not None:  # an unknown model: said before any refit
        from ..checks import index_of

        index_of(args.baseline[0], fit.items, "model")
    if idata is not None:
        progress("found posterior draws (posterior.nc): adding the Bayesian columns")
    out = Path(args.out) if args.out else fit_dir / "report"
    agree = panel_agreement(fit.data, args, progress)
    plain = uncontrolled(fit, progress)  # the rank change (fit --report shows it too)
    progress("computing intervals and drawing figures")
    from ..reporting.sentences import default_title

    # the folder's name stands for the data's, which a saved fit does not keep
    title = args.title or f"{fit_dir.resolve().name}: {default_title(fit.data)}"
    files = report(fit, out, idata, level=args.level, scale=args.scale, title=title,
                   agreement=agree, baseline=args.baseline, uncontrolled=plain,
                   pairwise=args.pairwise)
    progress("done")
    print(files.html)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..datasets import PRD_CITATION
    from ..reporting import report

    progress = Progress(args.quiet)
    args.data = "bundled:prd_vicuna80"
    progress("reading the bundled PRD Vicuna80 judgments")
    data, _ = read_data(args)
    prompts = prompt_effects_of(data, args)
    print("PRD Vicuna80 —", PRD_CITATION)
    print(data.summary())
    fit = _fit(data, args, progress)
    print()
    print(fit.summary())
    plain = uncontrolled(fit, progress)
    idata = sample_posterior(data, fit, args, progress, prompts)
    progress("Wald intervals")
    inference, board, judges = _tables(fit, args, idata, plain)
    _show(board, judges, args, progress, idata, fit, inference)
    progress("writing the report (tables, figures, HTML)")
    files = report(fit, args.out, idata, level=args.level, scale=args.scale,
                   inference=inference, uncontrolled=plain,
                   title="PRD Vicuna80: 5 models ranked by 5 LLM judges (8,000 comparisons)")
    progress("done")
    print(f"\nReport: {files.html}")
    return 0


def add_reader(p: argparse.ArgumentParser) -> None:
    """The columns of a verdicts file (shared by ``fit`` and ``update``)."""
    p.add_argument("--judge-col", default="judge",
                   help="column naming the judge; '-' when one judge made every verdict "
                        "(e.g. crowd votes) (default judge)")
    p.add_argument("--model-a-col", default="model_a", help="model shown first (default model_a)")
    p.add_argument("--model-b-col", default="model_b", help="model shown second (default model_b)")
    p.add_argument("--winner-col", default="winner",
                   help="verdict: model_a, model_b, tie, or the winner's name; see 'input' "
                        "below (default winner)")
    p.add_argument("--cluster-col", default=None,
                   help="column naming the prompt / question of each judgment; verdicts on "
                        "one prompt are dependent and the intervals become cluster-robust "
                        f"(default: the first of {', '.join(CLUSTER_COLUMNS)} present; "
                        "'-': none)")
    p.add_argument("--verdict-scale", dest="scale_levels", default=None, metavar="LO..HI",
                   help="verdicts are whole numbers from LO to HI, higher favouring model_a "
                        "(e.g. -2..2): ordered verdicts (Arena-Hard's A>>B .. B>>A labels "
                        "are recognised without it)")
    p.add_argument("--counts", action="store_true",
                   help="rows are aggregated cells with counts (see --n-col, --wins-col)")
    p.add_argument("--n-col", help="with --counts: comparisons (default n)")
    p.add_argument("--wins-col", help="with --counts: wins of model_a, ties counted 1/2 "
                                      "(default wins)")
    p.add_argument("--ties-col", help="with --counts: ties (default ties)")


def _add_style(p: argparse.ArgumentParser, *, bundled: bool) -> None:
    where = "the bundled answers" if bundled else "--answers or --features"
    p.add_argument("--style-control", nargs="?", const=True,
                   default=True if bundled else None, metavar="FEATURES",
                   help=f"control for the answers' style (features of {where}): a comma list "
                        "such as length,lists,bold, or bare for every feature that varies"
                        + (" (default: on)" if bundled else ""))
    if bundled:
        p.add_argument("--no-style-control", dest="style_control", action="store_const",
                       const=None, help="leave style out")
    p.add_argument("--style-scope", choices=("per_judge", "shared"), default=None,
                   help="one style coefficient per judge and feature, or one per feature "
                        "(default per_judge)")


def _add_model(p: argparse.ArgumentParser, *, rank_default, bias_default: bool,
               self_default: bool = False) -> None:
    p.add_argument("--rank", type=rank_arg, default=rank_default,
                   help=f"disagreement rank r: an integer, or 'bic' / 'cv' to choose it "
                        f"(default {rank_default})")
    p.add_argument("--position-bias", dest="position_bias", action="store_true",
                   default=bias_default, help="estimate a per-judge first-position bias"
                   + (" (default: on)" if bias_default else ""))
    p.add_argument("--leave-out", action="append", default=[], metavar="JUDGE",
                   help="leave this judge out of the fit (repeat for several)")
    if bias_default:
        p.add_argument("--no-position-bias", dest="position_bias", action="store_false",
                       help="leave the position bias out")
    p.add_argument("--outcome", choices=("half", "davidson", "ordinal"), default=None,
                   help="outcome model: ties count 1/2 (half), Davidson's ties (davidson), or "
                        "ordered verdicts (ordinal; the default when the verdicts have a "
                        "strength scale, else half)")
    p.add_argument("--self-preference", nargs="?", const=True,
                   default=True if self_default else None, metavar="JUDGE=MODEL,...",
                   help="estimate each judge's bonus for its own model: bare, judges named "
                        "like a model; or pairs such as gpt4=gpt-4,claude=claude-v1"
                        + (" (default: on)" if self_default else ""))
    if self_default:
        p.add_argument("--no-self-preference", dest="self_preference", action="store_const",
                       const=None, help="leave self-preference out")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the cross-validation folds and of the sampler (default 0)")


def add_bayes(p: argparse.ArgumentParser, *, samples: int) -> None:
    """--bayes and the sampler's options (fit, update, demo)."""
    p.add_argument("--bayes", action="store_true",
                   help="also sample the posterior (NUTS from the MAP): credible columns, "
                        "posterior rank and predictive checks")
    p.add_argument("--samples", type=positive_int, default=samples,
                   help=f"with --bayes: draws per chain (default {samples})")
    p.add_argument("--warmup", type=positive_int, default=None,
                   help="with --bayes: warm-up steps per chain (default: --samples)")
    p.add_argument("--chains", type=positive_int, default=2,
                   help="with --bayes: chains (default 2)")
    p.add_argument("--gamma-scale", type=gamma_scale_arg, default=1.0,
                   help="with --bayes: prior sd of the judges' sensitivities around 1 (default "
                        "1), or 'empirical': their spread net of noise, from the fit (a crowd "
                        "of raters with few verdicts each)")
    p.add_argument("--prompt-effects", choices=tuple(PROMPT_EFFECTS), default="auto",
                   help="with --bayes and prompts (the data's prompt column): answer-quality "
                        "effects per (prompt, model), sampled by NUTS or integrated out of the "
                        "likelihood; 'auto' (default) picks by the data's layout and says "
                        "which, 'none' leaves them out")
    p.set_defaults(sampler_defaults=dict(samples=samples, warmup=None, chains=2, gamma_scale=1.0,
                                         prompt_effects="auto"))


def add_panel_commands(sub) -> None:
    """Register the ``fit``, ``report`` and ``demo`` subcommands."""
    fit = sub.add_parser(
        "fit", help="fit the HJA model to comparison data and save it",
        description="Fit the HJA model to comparison data, print the leaderboard and the\n"
                    "judge table, and save the fit (and optionally its report).",
        epilog=FIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    fit.add_argument("data", help="file of verdicts (see 'input' below), '-' for stdin, "
                                  "bundled:prd_vicuna80, or a folder or glob of files")
    add_reader(fit)
    fit.add_argument("--answers", default=None, metavar="FILE",
                     help="the answers judged: the prompt column (as --cluster-col), 'model' "
                          "and 'answer' (text); style features are counted from them")
    fit.add_argument("--features", default=None, metavar="FILE",
                     help="style features per (prompt, model) instead of --answers: the prompt "
                          "column, 'model' and one numeric column per feature")
    _add_style(fit, bundled=False)
    _add_model(fit, rank_default="bic", bias_default=False)
    add_bayes(fit, samples=1000)
    fit.add_argument("--out", default="hja_fit", help="folder for the saved fit (default hja_fit)")
    fit.add_argument("--report", action="store_true", help="also write the report to OUT/report")
    fit.add_argument("--title", default=None, help="with --report: its title (default: from "
                                                   "the file name and the data)")
    fit.add_argument("--format", choices=("text", "json"), default="text",
                     help="stdout: tables as text, or one JSON object (data summary, fit, "
                          "leaderboard and judges as {meta, rows}, the warnings) (default "
                          "text)")
    fit.add_argument("--style", type=table_style, default="default", metavar="{default,arena}",
                     help="columns of the leaderboard on stdout (text or JSON): ours, or "
                          "FastChat's (rating, variance, rank_ub, num_battles; Elo); the "
                          "report keeps its own (default default)")
    fit.add_argument("--fragility", action="store_true",
                     help="also find how few verdicts (and, with prompts, how few prompts) "
                          "would put another model first, each set confirmed by an exact "
                          "refit (printed, in the JSON and in the report)")
    add_agreement(fit)
    add_common(fit, baseline=True, pairwise=True)
    fit.set_defaults(run=_cmd_fit)

    rep = sub.add_parser(
        "report", help="write the HTML/Markdown/CSV/JSON report of a saved fit",
        description="Write the report of a fit saved by 'hja-bayes fit': report.html\n"
                    "(self-contained), report.md with figures/, and every table as CSV and\n"
                    "JSON.",
        epilog="examples:\n  hja-bayes report hja_fit --scale elo --level 0.9 --out board\n"
               "  hja-bayes report hja_fit --scale elo --baseline gpt-4=1200",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument("fit_dir", help="folder written by 'hja-bayes fit' or HJAFit.save")
    rep.add_argument("--out", default=None, help="report folder (default FIT_DIR/report)")
    rep.add_argument("--title", default=None, help="report title (default: the folder's "
                                                   "name and the data's counts)")
    add_agreement(rep)
    add_common(rep, rows=False, baseline=True, pairwise=True)
    rep.set_defaults(run=_cmd_report)

    demo = sub.add_parser(
        "demo", help="the full report on the bundled PRD Vicuna80 data",
        description="Fit the bundled PRD Vicuna80 panel (5 LLM judges, 5 models, 8,000\n"
                    "verdicts) and write its full report.",
        epilog="examples:\n  hja-bayes demo --out report\n"
               "  hja-bayes demo --bayes --samples 300 --out report",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--out", default="report", help="report folder (default report)")
    _add_model(demo, rank_default="bic", bias_default=True, self_default=True)
    _add_style(demo, bundled=True)
    add_bayes(demo, samples=500)
    add_common(demo)
    demo.set_defaults(run=_cmd_demo)
