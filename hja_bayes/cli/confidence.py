"""``hja-bayes confidence``: train the confidence ranker, certify a threshold, apply it.

Three forms::

    hja-bayes confidence DATA [options]              # one shot: train, certify, test
    hja-bayes confidence train DATA --out DIR        # train + certify, save to DIR
    hja-bayes confidence apply DIR DATA [--out CSV]  # score new verdicts with a saved ranker

(a data file literally named ``train`` or ``apply`` must be given as ``./train``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ParameterError
from .common import Progress

__all__ = ["add_confidence_command"]


def _no_columns_for_named(args) -> None:
    """A named source carries its own human labels and groups: a column named for it would
    be ignored, so it is refused."""
    from ..confidence.pipeline import NAMED_SOURCES

    given = [flag for flag, value in (("--human-col", getattr(args, "asked_human_col",
                                                               args.human_col)),
                                      ("--group-col", args.group_col)) if value is not None]
    if args.data in NAMED_SOURCES and given:
        raise ParameterError(f"{args.data} carries its own human labels and groups: "
                             f"{' and '.join(given)} name a CSV's columns")


def _read(args, progress):
    from ..confidence.pipeline import NAMED_SOURCES, read_confidence_source

    _no_columns_for_named(args)
    progress(f"reading {args.data}")
    data = read_confidence_source(args.data, judge=args.judge, human_col=args.human_col,
                                  group_col=args.group_col, data_dir=args.data_dir)
    print(data)
    names = ", ".join(data.feature_names)
    if args.data in NAMED_SOURCES:
        progress(f"features: {names}")
    else:
        others = " and ".join(repr(c) for c in (args.human_col, args.group_col) if c)
        progress(f"features: {names} ({data.n_features} columns of probabilities of response 1: "
                 f"every column but {others})")
    return data


def _ranker(args):
    from ..confidence import ConfidenceRanker

    settings = {"posterior": args.posterior, "seed": args.seed}
    if args.epochs is not None:
        settings["n_epochs"] = args.epochs
    if args.pairs is not None:
        settings["n_pairs"] = args.pairs
    return ConfidenceRanker(**settings)


def _one_shot(args) -> int:
    from ..confidence.pipeline import run_pipeline

    progress = Progress(args.quiet)
    data = _read(args, progress)
    fraction = 0.25 if args.calibration_fraction is None else args.calibration_fraction
    result = run_pipeline(data, alpha=args.alpha, delta=args.delta, train_fraction=args.train_fraction,
                          calibration_fraction=fraction, epochs=args.epochs,
                          pairs=args.pairs, posterior=args.posterior, seed=args.seed, progress=progress)
    summary = result.summary
    print(f"split by group: {summary['n_train']} train, {summary['n_calibration']} calibration, "
          f"{summary['n_test']} test examples")
    out = Path(args.out or "hja_confidence")
    out.mkdir(parents=True, exist_ok=True)
    from ..reporting.files import to_json  # strict JSON: a one-class split's AUROC is null

    (out / "confidence.json").write_text(to_json(summary), encoding="utf-8")
    result.predictions.to_csv(out / "test_predictions.csv", index=False)
    print(summary["certificate"])
    if summary["threshold"] is not None:
        kept = summary["test_agreement_selected"]
        auroc = ("no AUROC (the test examples are of one class)" if summary["test_auroc"] is None
                 else f"AUROC {summary['test_auroc']:.3f}")
        print(f"Test: coverage {summary['test_coverage']:.1%}, agreement among kept "
              f"{'-' if kept is None else format(kept, '.1%')} "
              f"(all: {summary['test_agreement_all']:.1%}); {auroc}")
    _print_bounds(summary)
    progress(f"wrote {out / 'confidence.json'} and {out / 'test_predictions.csv'}")
    return 0


def _print_bounds(summary: dict) -> None:
    """The misranking bounds of a one-shot run (P(an agreeing verdict scored at or below a
    disagreeing one)), each with what it covers."""
    held, gibbs = summary.get("test_misranking_bound"), summary.get("gibbs_pac_bayes_bound")
    if held:
        print(f"Misranking probability of the confidence (an agreeing verdict scored at or "
              f"below a disagreeing one), at {held['level']:.0%}: at most "
              f"{held['bound']:.3f} ({held['misranked']} of {held['pairs']} disjoint test "
              "pairs misranked)")
    if gibbs:
        print(f"PAC-Bayes-kl bound for the Gibbs ranker (fresh weights per comparison, on the "
              f"training sample, {gibbs['pairs']} pairs, KL {gibbs['kl']:.1f}), at "
              f"{gibbs['level']:.0%}: at most {gibbs['bound']:.3f}")


def _train(args) -> int:
    from ..confidence import save_ranker
    from ..confidence.pipeline import feature_spec, group_split, train_and_certify

    if not args.out:
        raise ParameterError("confidence train needs --out DIR (where the ranker is saved)")
    progress = Progress(args.quiet)
    data = _read(args, progress)
    fraction = 0.5 if args.calibration_fraction is None else args.calibration_fraction
    if not 0.0 < fraction < 1.0:
        raise ParameterError(f"--calibration-fraction must lie in (0, 1), got {fraction}")
    train, cal = (data.subset(i) for i in group_split(data.groups, (1.0 - fraction, fraction), args.seed))
    print(f"split by group: {train.n} train, {cal.n} calibration examples")
    ranker = train_and_certify(train, cal, alpha=args.alpha, delta=args.delta, ranker=_ranker(args),
                               progress=progress)
    spec = feature_spec(args.data, data, human_col=args.human_col, group_col=args.group_col)
    save_ranker(ranker, args.out, extra={"features": spec, "trained_on": args.data,
                                         "n_train": train.n, "n_calibration": cal.n})
    print(ranker.certificate_.describe())
    progress(f"saved the ranker and its certificate in {args.out}")
    return 0


def _apply(args, folder: str) -> int:
    import numpy as np

    from ..confidence import load_ranker
    from ..confidence.pipeline import NAMED_SOURCES, apply_ranker, feature_columns, features_for_apply

    progress = Progress(args.quiet)
    ranker = load_ranker(folder)
    if getattr(ranker, "certificate_", None) is None:
        raise ParameterError(f"the ranker in {folder} carries no certificate: train it with 'confidence train'")
    spec = ranker.saved_extra_.get("features", {})
    progress(f"reading {args.data}")
    if args.group_col is not None:
        raise ParameterError("apply scores each verdict on its own: groups (--group-col) only "
                             "matter to training and certifying")
    _no_columns_for_named(args)
    features, agree, groups, verdict = features_for_apply(spec, args.data, judge=args.judge,
                                                          human_col=args.human_col,
                                                          data_dir=args.data_dir)
    columns = feature_columns(spec)
    if args.data not in NAMED_SOURCES and spec.get("kind") == "trust_or_escalate":
        progress(f"features from {', '.join(columns)} (the Trust-or-Escalate layout the ranker "
                 "was trained on)")
    elif args.data not in NAMED_SOURCES:
        progress(f"features: {', '.join(columns)} (the columns the ranker was trained on)")
    elif spec.get("feature_names"):
        progress(f"features: {', '.join(spec['feature_names'])}")
    frame, summary = apply_ranker(ranker, features, agree)
    frame.insert(0, "verdict", np.asarray(verdict))
    if args.data in NAMED_SOURCES:  # its rows named as the one-shot run's predictions name them
        frame.insert(0, "example", np.arange(len(frame)))
        if groups is not None:
            frame.insert(1, "group", np.asarray(groups))
    else:  # the file's own other columns (ids, ...) lead its rows
        import pandas as pd

        rows = pd.read_csv(args.data).drop(columns=columns, errors="ignore")
        clash = {c: f"{c}_input" for c in frame.columns if c in rows.columns}
        if clash:
            from ..errors import DataWarning, warn

            warn(f"the file's own column(s) {list(clash)} are written as {list(clash.values())} "
                 "beside the scored ones", DataWarning)
        frame = pd.concat([rows.rename(columns=clash).reset_index(drop=True), frame], axis=1)
    print(ranker.certificate_.describe())
    line = f"{summary['n']} verdicts: {summary['coverage']:.1%} trusted"
    if agree is not None and summary.get("agreement_trusted") is not None:
        among = ("" if summary["labelled"] == summary["n"] else
                 f" of the {summary['labelled']} with a human label")
        line += (f"; agreement among trusted{among} {summary['agreement_trusted']:.1%} "
                 f"(all{among}: {summary['agreement_all']:.1%})")
    print(line)
    out = Path(args.out) if args.out else Path(folder) / "applied.csv"
    frame.to_csv(out, index=False)
    progress(f"wrote {out}")
    return 0


#: Options a form does not use (refused there, not ignored), and the defaults of the others.
_UNUSED = {"apply": ("alpha", "delta", "train_fraction", "calibration_fraction", "epochs",
                     "pairs", "seed"),
           "train": ("train_fraction",)}
_DEFAULTS = {"alpha": 0.15, "delta": 0.1, "train_fraction": 0.5, "seed": 0}


def _settle_options(args: argparse.Namespace, form: str) -> None:
    """Refuse the options ``form`` would ignore; fill in the defaults of the others."""
    given = [name for name in _UNUSED.get(form, ()) if getattr(args, name) is not None]
    if form == "apply" and not args.posterior:
        given.append("no_posterior")
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ParameterError(f"confidence {form} does not use {flags}" + (
            ": it scores with the saved ranker and its certificate (train again to change them)"
            if form == "apply" else ": the rest after calibration trains the ranker "
            "(--calibration-fraction)"))
    for name, value in _DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def _cmd_confidence(args: argparse.Namespace) -> int:
    words = list(args.words)
    _settle_options(args, words[0] if words[0] in _UNUSED and len(words) > 1 else "one-shot")
    args.asked_human_col = args.human_col  # before its default: what the user named
    if words[0] != "apply" and args.human_col is None:
        args.human_col = "human"
    if words[0] == "train":
        if len(words) != 2:
            raise ParameterError("usage: hja-bayes confidence train DATA --out DIR")
        args.data = words[1]
        return _train(args)
    if words[0] == "apply":
        if len(words) != 3:
            raise ParameterError("usage: hja-bayes confidence apply DIR DATA [--out CSV]")
        args.data = words[2]
        return _apply(args, words[1])
    if len(words) != 1:
        raise ParameterError("usage: hja-bayes confidence DATA | train DATA --out DIR | apply DIR DATA")
    args.data = words[0]
    return _one_shot(args)


def add_confidence_command(sub) -> None:
    """Register the ``confidence`` subcommand."""
    conf = sub.add_parser(
        "confidence", help="train the confidence ranker, certify a threshold, apply it",
        description="Train the confidence ranker, certify a threshold, apply it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1].replace("``", "").replace("::", ":"),
        usage="hja-bayes confidence [options] (DATA | train DATA | apply DIR DATA)")
    conf.add_argument("words", nargs="+", metavar="DATA | train DATA | apply DIR DATA",
                      help="DATA: bundled:prd_vicuna80, trust_or_escalate, or a CSV of per-prompt "
                           "probabilities of preferring response 1 plus a human column (1/2)")
    conf.add_argument("--judge", default=None,
                      help="judge to assess (default gpt4 / gpt-4-turbo / the file name; apply "
                           "scores the judge its ranker was trained for, and refuses another)")
    conf.add_argument("--human-col", default=None,
                      help="CSV: human label column (default human; apply: the one the ranker "
                           "was trained with)")
    conf.add_argument("--group-col", default=None,
                      help="CSV: column of group labels (e.g. question ids); certificates then treat "
                           "groups, not examples, as independent")
    conf.add_argument("--data-dir", default=None, help="folder of the unbundled data sets")
    conf.add_argument("--alpha", type=float, default=None,
                      help="target disagreement rate among trusted verdicts (default 0.15)")
    conf.add_argument("--delta", type=float, default=None,
                      help="allowed failure probability of the guarantee (default 0.1)")
    conf.add_argument("--train-fraction", type=float, default=None,
                      help="one-shot form: share of groups used to train the ranker (default 0.5)")
    conf.add_argument("--calibration-fraction", type=float, default=None,
                      help="share of groups used to certify the threshold (default 0.25 in the "
                           "one-shot form, where the rest after training is the test split; 0.5 "
                           "with train: a group-level certificate needs many groups)")
    conf.add_argument("--epochs", type=int, default=None, help="training epochs (default: the ranker's)")
    conf.add_argument("--pairs", type=int, default=None,
                      help="(agree, disagree) training pairs (default: the ranker's)")
    conf.add_argument("--no-posterior", dest="posterior", action="store_false",
                      help="deterministic weights instead of the Gaussian weight posterior")
    conf.add_argument("--seed", type=int, default=None,
                      help="seed of the split and the training (default 0)")
    conf.add_argument("--out", default=None,
                      help="one shot: folder for confidence.json and test_predictions.csv (default "
                           "hja_confidence); train: folder for the saved ranker; apply: CSV of the "
                           "scored verdicts (default DIR/applied.csv)")
    conf.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    conf.set_defaults(run=_cmd_confidence)
