"""Reading a panel command's data: the file or bundled set, its prompt column (echoed, or
suggested when none is known) and the answers' style features."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

__all__ = ["BUNDLED", "CLUSTER_COLUMNS", "read_data"]

BUNDLED = {"bundled:prd_vicuna80"}
#: Columns taken as the cluster (prompt) of each judgment when --cluster-col is not given.
CLUSTER_COLUMNS = ("question_id", "prompt_id", "conversation_id")


def read_data(args: argparse.Namespace, fit_cluster: str | None = None):
    """The data a panel command names (file, stdin, bundled, or a folder or glob of files,
    scanned by DuckDB), read as its flags say; returns ``(Comparisons, name)``.

    ``fit_cluster``: the prompt column of a fit the data are added to ('-' where it has
    none); without ``--cluster-col`` the data are read with it, so that both are read alike."""
    from ..comparisons import Comparisons
    from ..datasets import load_prd_vicuna80
    from ..errors import DataError
    from ..sources import read_table

    source = args.data
    if source in BUNDLED:
        prd = load_prd_vicuna80()
        frame = prd.judgments
        requested = getattr(args, "cluster_col", None)
        cluster = _cluster_column(frame, requested or fit_cluster)
        table = _features(args, cluster, prd.answers)
        data = _with_features(args, frame, table, cluster=cluster)
        _echo_unused_answers(table, frame, cluster, ("model_a", "model_b"), args)
        _echo_clusters(data, frame, requested, ("judge", "model_a", "model_b", "winner"), "judge",
                       getattr(args, "quiet", False), fit_cluster)
        return data, "PRD Vicuna80 (bundled)"
    scanned = source != "-" and (Path(source).is_dir() or (
        not Path(source).exists() and any(c in source for c in "*?[")))
    if scanned:  # a folder or glob of files: aggregated by DuckDB, the rows never loaded
        from ..scan import scan_columns

        frame = pd.DataFrame(columns=scan_columns(source, engine="duckdb"))  # the schema
    elif source != "-" and not Path(source).exists():
        raise DataError(f"no such file: {source} (or use one of {sorted(BUNDLED)}, or - for "
                        "standard input)")
    else:
        frame = read_table(source)
    judge = None if args.judge_col == "-" else args.judge_col
    cluster = _cluster_column(frame, args.cluster_col or fit_cluster)
    if fit_cluster not in (None, "-") and not args.cluster_col and cluster not in frame.columns:
        raise DataError(f"the fit's prompts are in column {fit_cluster!r}, which "
                        f"{'standard input' if source == '-' else Path(source).name} lacks: "
                        "name its prompt column with --cluster-col")
    given = [f"--{name}-col" for name in ("n", "wins", "ties")
             if getattr(args, f"{name}_col", None) is not None]
    if given and not args.counts:  # they had been ignored, the rows read as verdicts
        raise DataError(f"{', '.join(given)} name count columns: add --counts (rows of "
                        "aggregated cells), or leave them out")
    if scanned:
        if args.counts or getattr(args, "style_control", None) is not None:
            raise DataError(f"{'--counts' if args.counts else '--style-control'} reads one "
                            "file, not a folder or glob of them")
        used = (args.model_a_col, args.model_b_col, args.winner_col)
        # the prompts' incidence (an entry per prompt and cell) comes into memory, so that
        # the saved fit keeps it
        data = Comparisons.scan(source, engine="duckdb", judge=judge, model_a=args.model_a_col,
                                model_b=args.model_b_col, winner=args.winner_col,
                                cluster=cluster, scale=args.scale_levels, incidence="memory")
    elif args.counts:
        n, wins = args.n_col or "n", args.wins_col or "wins"
        ties = "ties" if args.ties_col is None else args.ties_col or None
        used = (args.model_a_col, args.model_b_col, n, wins, ties)
        data = Comparisons.from_counts(frame, judge=judge, model_a=args.model_a_col,
                                       model_b=args.model_b_col, n=n, wins=wins, ties=ties,
                                       cluster=cluster)
    else:
        used = (args.model_a_col, args.model_b_col, args.winner_col)
        table = _features(args, cluster)
        data = _with_features(args, frame, table, judge=judge, model_a=args.model_a_col,
                              model_b=args.model_b_col, winner=args.winner_col,
                              cluster=cluster, scale=args.scale_levels)
        _echo_unused_answers(table, frame, cluster, (args.model_a_col, args.model_b_col), args)
    _echo_clusters(data, frame, args.cluster_col, used, judge, args.quiet, fit_cluster)
    return data, "standard input" if source == "-" else Path(source).name


def _with_features(args: argparse.Namespace, frame: pd.DataFrame, table, **read):
    """``Comparisons.from_frame`` with the style-feature table.  Bare ``--style-control``
    asks for every feature: one that does not vary (PRD's answers have no headers) is left
    out by the reader, which records it in the data's summary (and so in the report); the
    CLI says so on stderr as a fact rather than a warning."""
    import warnings

    from ..comparisons import Comparisons
    from ..errors import DataWarning

    if table is None or getattr(args, "style_control", None) is not True:
        return Comparisons.from_frame(frame, features=table, **read)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"style feature\(s\) .* do not vary", DataWarning)
        data = Comparisons.from_frame(frame, features=table, **read)
    left = [c for c in table.columns[2:] if c not in data.feature_names]
    if left and not getattr(args, "quiet", False):
        print(f"hja-bayes: style feature(s) {left} take one value over the compared answers "
              "and are left out (nothing to control for)", file=sys.stderr)
    return data


def _features(args: argparse.Namespace, cluster: str | None, bundled_answers=None):
    """The style-feature table for ``--style-control``: counted from ``--answers`` (or the
    bundled answers), or read from ``--features``; only the features asked for, or (bare
    ``--style-control``) every one that varies over the answers.  None without style."""
    from ..errors import DataError

    wanted = getattr(args, "style_control", None)
    answers = getattr(args, "answers", None)
    table_file = getattr(args, "features", None)
    given = [name for name, value in (("--answers", answers), ("--features", table_file),
                                      ("--style-scope", getattr(args, "style_scope", None)))
             if value is not None]
    if wanted is None:
        if given:  # they had been ignored: a fit without style, exit 0
            raise DataError(f"{' and '.join(given)} only shape{'s' * (len(given) == 1)} a "
                            "style control: add "
                            "--style-control (bare for every feature that varies, or a comma "
                            "list such as length,lists,bold)")
        return None
    if answers and table_file:
        raise DataError("give the answers (--answers) or their features (--features), not both")
    from ..features import style_features
    from ..sources import read_table

    if cluster is None:
        raise DataError("--style-control needs the prompt of every verdict: name it with "
                        "--cluster-col (the answers table uses the same column)")
    if table_file:
        table = read_table(table_file)
        missing = [c for c in (cluster, "model") if c not in table.columns]
        if missing:
            raise DataError(f"{table_file} lacks the column(s) {missing} (its columns: "
                            f"{list(table.columns)}): --features reads the prompt column "
                            "(--cluster-col), 'model' and one numeric column per feature")
    elif answers:
        frame = read_table(answers)
        missing = [c for c in (cluster, "model", "answer") if c not in frame.columns]
        if missing:
            raise DataError(f"{answers} lacks the column(s) {missing} (its columns: "
                            f"{list(frame.columns)}): --answers reads the prompt column "
                            "(--cluster-col), 'model' and 'answer' (the text); a table of "
                            "numeric features per (prompt, model) goes to --features")
        table = style_features(frame, prompt=cluster)
    elif bundled_answers is not None:
        table = style_features(bundled_answers, prompt=cluster)
    else:
        raise DataError("--style-control needs the answers (--answers FILE, with the prompt "
                        "column, 'model' and 'answer') or their features (--features FILE)")
    names = [c for c in table.columns if c not in (cluster, "model")]
    # bare --style-control: every feature (one that does not vary is left out by the reader,
    # which warns and records it in the data's summary, and so in the report)
    if wanted is not True:
        names = [c.strip() for c in str(wanted).split(",") if c.strip()]
        missing = [c for c in names if c not in table.columns]
        if missing:
            raise DataError(f"style feature(s) {missing} not among "
                            f"{[c for c in table.columns if c not in (cluster, 'model')]}")
    return table[[cluster, "model", *names]]


def _cluster_column(frame: pd.DataFrame, requested: str | None) -> str | None:
    """The prompt column: the one asked for, '-' for none, else the first known one present."""
    if requested == "-":
        return None
    if requested is not None:
        return requested
    return next((c for c in CLUSTER_COLUMNS if c in frame.columns), None)


def _echo_clusters(data, frame, requested, used, judge, quiet: bool = False,
                   fit_cluster: str | None = None) -> None:
    """Say on stderr which column the intervals are clustered by (unless ``quiet``); without
    one, warn (even when quiet) and suggest a column that looks like the prompts (values
    shared by several judges).  With ``fit_cluster`` (data added to a fit, read as the fit
    was unless ``requested``) the line is about the added verdicts and says so."""
    from ..readers import prompt_like_columns

    c = data.clusters
    if c is not None and fit_cluster is None:
        from ..errors import DataError, ParameterError
        from ..inference.information import check_clusters

        try:
            check_clusters(data)  # the intervals' own rule, said before the fit, not after it
        except ParameterError:
            how = "named with --cluster-col" if requested else "recognised"
            raise DataError(f"the prompt column {data.cluster_column!r} ({how}) holds one "
                            "prompt: cluster-robust intervals need at least two; "
                            "--cluster-col - treats the comparisons as independent") from None
    if c is not None and quiet:
        return
    if c is not None:
        summary = data.summary()
        if fit_cluster is not None:
            how = "named with --cluster-col" if requested else "as the fit's"
            print(f"hja-bayes: the new verdicts' prompts from column {data.cluster_column!r} "
                  f"({how}): {summary.n_clusters} prompts", file=sys.stderr)
            return
        how = "named with --cluster-col" if requested else "recognised"
        print(f"hja-bayes: clusters (prompts) from column {data.cluster_column!r} ({how}): "
              f"{summary.n_clusters} clusters, {summary.effective_clusters:.1f} effective; "
              "intervals are cluster-robust (CR2 with Satterthwaite degrees of freedom, or "
              "CR1 where CR2 would not fit in memory, said then; --cluster-col - to treat "
              "comparisons as independent)", file=sys.stderr)
        return
    if fit_cluster == "-" and not requested:
        if not quiet:
            print("hja-bayes: no prompt column, as the fit had none: the new comparisons are "
                  "treated as independent too", file=sys.stderr)
        return
    if requested == "-":
        if quiet:
            return
        print("hja-bayes: no cluster column (--cluster-col -): comparisons are treated as "
              "independent (Fisher intervals)", file=sys.stderr)
        return
    line = ("no prompt column named (--cluster-col) or recognised "
            f"({', '.join(CLUSTER_COLUMNS)}): comparisons are treated as independent, and the "
            "intervals are too narrow if the judges rated shared prompts")
    candidates = prompt_like_columns(frame, exclude=used, judge=judge)
    if candidates:
        column, n_values, judges = candidates[0]
        line += (f". Column {column!r} looks like one ({n_values} values, each seen by "
                 f"{judges:.1f} judges on average): pass --cluster-col {column}")
    from ..errors import DataWarning, warn

    warn(line, DataWarning)  # said on one line by the command, and kept for --format json


def _echo_unused_answers(table, frame, cluster, models, args) -> None:
    """Say on stderr (unless quiet) how many rows of the answers' feature table no verdict
    compares (answers to other prompts, or of models not judged): a mismatch of names
    between the two files shows there."""
    if table is None or getattr(args, "quiet", False):
        return
    keys = lambda p, m: p.astype(str) + "\0" + m.astype(str)  # noqa: E731
    compared = set(keys(frame[cluster], frame[models[0]])) | set(
        keys(frame[cluster], frame[models[1]]))
    unused = ~keys(table[cluster], table["model"]).isin(compared)
    if unused.any():
        first = table[unused].iloc[0]
        print(f"hja-bayes: {int(unused.sum()):,} of {len(table):,} answers are not compared in "
              f"the verdicts (not used), e.g. model {str(first['model'])!r} on prompt "
              f"{str(first[cluster])!r}", file=sys.stderr)
