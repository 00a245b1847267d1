"""``hja-bayes categories``: one leaderboard per category of the verdicts (task, language),
as Chatbot Arena shows them, from :func:`~hja_bayes.reporting.categories.leaderboard_by`."""

from __future__ import annotations

import argparse
import re
import sys
import warnings

from .common import Progress, add_common, print_table, table_style
from .inputs import BUNDLED, CLUSTER_COLUMNS

__all__ = ["add_categories_command"]

EPILOG = """\
Each category's verdicts are read and fitted on their own: by default pooled, every verdict
one vote as if one judge gave them all (Chatbot Arena's Bradley-Terry model), or with
--panel as a panel of judges (the HJA model at rank 0: each judge's sensitivity, a
consensus score per model). With prompts (--cluster-col, or a recognised column) the
intervals are cluster-robust within each category. A category whose verdicts do not link
all its models, come from one prompt or lack the --baseline model, or that cannot be
fitted, is left out with a warning naming it and saying why; one with fewer prompts than
models keeps its rows, without joint rank intervals and tiers (which --style arena does not
show). bundled:prd_vicuna80 takes its questions' categories.

output:
  On stdout the stacked leaderboards, one block per category, '(all)' first; with --out
  every row, as CSV or (a name ending in .json) JSON; --out - writes the CSV to stdout
  instead of the blocks (the summary of the verdicts then goes to stderr).

examples:
  hja-bayes categories bundled:prd_vicuna80 --by category
  hja-bayes categories battles.jsonl --by language --scale elo --out by_language.csv
  hja-bayes categories battles.jsonl --by language --baseline gpt-4=1200
  hja-bayes categories votes.csv --by task --panel --judge-col grader --cluster-col prompt_id
  hja-bayes categories votes.csv --by task --panel --leave-out locked-judge"""


def add_categories_command(sub) -> None:
    """Register the ``categories`` subcommand."""
    p = sub.add_parser(
        "categories", help="one leaderboard per category of the verdicts",
        description="One leaderboard per value of a column of the verdicts (a task, a\n"
                    "language, a question type), stacked into one table.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="a file of verdicts, as for 'hja-bayes fit' (one row each), or "
                                "bundled:prd_vicuna80")
    p.add_argument("--by", default="category",
                   help="the column naming each verdict's category (default category)")
    p.add_argument("--panel", action="store_true",
                   help="fit each category as a panel of judges (the HJA model at rank 0) "
                        "instead of pooling every verdict")
    p.add_argument("--judge-col", default=None,
                   help="with --panel: the judge column (default judge); without --panel "
                        "every verdict is pooled and no judge column is read")
    p.add_argument("--model-a-col", default="model_a", help="model shown first (default model_a)")
    p.add_argument("--model-b-col", default="model_b", help="model shown second (default model_b)")
    p.add_argument("--winner-col", default="winner", help="verdict column (default winner)")
    p.add_argument("--cluster-col", default=None,
                   help="column naming each verdict's prompt: cluster-robust intervals "
                        f"(default: the first of {', '.join(CLUSTER_COLUMNS)} present; "
                        "'-': none)")
    p.add_argument("--leave-out", action="append", default=[], metavar="JUDGE",
                   help="leave this judge's verdicts out of every leaderboard, e.g. one locked "
                        "on a presentation slot (repeat for several; read from --judge-col, "
                        "default judge, pooled or not)")
    p.add_argument("--position-bias", action="store_true",
                   help="give each judge (or the pooled judge) a bonus for the first-shown "
                        "answer, e.g. for judges locked on one slot")
    p.add_argument("--outcome", choices=("half", "davidson", "ordinal"), default=None,
                   help="each fit's outcome model, as fit's (default: ordinal when the "
                        "verdicts have a strength scale, else half)")
    p.add_argument("--no-overall", dest="overall", action="store_false",
                   help="leave out the leaderboard over every verdict ('(all)')")
    p.add_argument("--style", type=table_style, default="arena", metavar="{default,arena}",
                   help="the leaderboards' columns (default arena: rating, rating_lower/upper, "
                        "variance, rank_ub, num_battles)")
    p.add_argument("--scale", choices=("logit", "elo"), default=None,  # elo: see main()
                   help="score scale: Elo = 400/ln10*mu + 1000, or logit (default elo)")
    add_common(p, scale=False, baseline=True)
    p.add_argument("--out", default=None,
                   help="file for every row: JSON where the name ends in .json, else CSV; "
                        "'-' for CSV on stdout")
    p.set_defaults(run=run_categories)


def _rows(args):
    """The verdicts as rows, with the category column (bundled PRD: its questions')."""
    from ..errors import DataError
    from ..sources import read_table

    if args.data in BUNDLED:
        from ..datasets import load_prd_vicuna80

        prd = load_prd_vicuna80()
        if args.by not in prd.questions.columns or args.by == "question_id":
            return prd.judgments
        return prd.judgments.merge(prd.questions[["question_id", args.by]], on="question_id",
                                   how="left")
    frame = read_table(args.data)
    if args.by not in frame.columns:
        raise DataError(f"no category column {args.by!r} (--by); the columns there are "
                        f"{list(frame.columns)}")
    return frame


#: A locked judge's name in the fits' warning (its repr, before its slot and share).
LOCKED_NAME = re.compile(r"""('[^']*'|"[^"]*") \(the (?:first|second)-shown""")


def _split(w, by: str) -> tuple[str | None, str]:
    """A fit's warning as (its category, as leaderboard_by names it in front, or None; the
    rest of the message)."""
    text = str(w.message)
    found = re.match(rf"""{re.escape(by)} ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"): """, text)
    return (found.group(1), text[found.end():]) if found else (None, text)


def _listed(names, most: int = 10) -> str:
    """Names, the first ``most`` of them and how many more."""
    names = list(names)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _rewarn(caught, by: str, pooled: bool) -> None:
    """The fits' warnings again, those of few prompts, of few verdicts per judge and of
    judges locked on one presentation slot (one per category) each said once, naming the
    categories (and, for a panel, the locked judges)."""
    few = [w for w in caught if "rest on few clusters" in str(w.message)]
    thin = [w for w in caught if "rest on few verdicts" in str(w.message)]
    locked = [w for w in caught if "chose one presentation slot" in str(w.message)]
    left = [w for w in caught if _split(w, by)[1].startswith("left out of the fit: ")]
    for w in caught:
        if w not in few and w not in thin and w not in locked and w not in left:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if len(left) == 1:
        warnings.warn_explicit(left[0].message, left[0].category, left[0].filename,
                               left[0].lineno)
    elif left:
        names = sorted({name for w in left for name in re.findall(r"judge '([^']*)'",
                                                                  str(w.message))})
        first = _split(left[0], by)[1][len("left out of the fit: "):]
        warnings.warn(f"judges left out of the fits of {len(left)} categories "
                      f"({', '.join(names)}); in the first: {first}", left[0].category)
    if locked:
        where = _listed(dict.fromkeys(c for c, _ in (_split(w, by) for w in locked) if c))
        names = sorted({name for w in locked
                        for name in re.findall(LOCKED_NAME, _split(w, by)[1])})
        # pooled, the one judge is every verdict of the category, not a judge of the file
        who = "every verdict pooled as one judge's" if pooled else ", ".join(names)
        warnings.warn(f"{len(locked)} {'category has' if len(locked) == 1 else 'categories have'} "
                      f"judges locked on one presentation slot ({who}; {by} {where}): their "
                      "verdicts follow where an answer was shown, not what it says; fitting such "
                      "a category alone says what they do to it; --position-bias gives each "
                      "judge's slot preference a term of its own, --leave-out JUDGE leaves "
                      "them out", locked[0].category)
    if few:
        sizes = sorted(int(re.search(r"G = (\d+)", str(w.message)).group(1)) for w in few)
        warnings.warn(f"{len(few)} categories rest on few prompts ({sizes[0]} to {sizes[-1]} "
                      "each; below 30 effective counts as few): the intervals shown for them "
                      "use the bias-reduced CR2 covariance with Satterthwaite degrees of "
                      "freedom, which covered 93-95% in simulations down to 4 effective "
                      "prompts",
                      few[0].category)
    if thin:
        from ..inference.few_verdicts import FEW_VERDICTS_SE

        se = sorted(float(re.search(r"gamma_k ([^,]+),", str(w.message)).group(1)) for w in thin)
        which = ("1 category's judges rest" if len(thin) == 1
                 else f"{len(thin)} categories' judges rest")
        warnings.warn(f"{which} on few verdicts each (median standard error of gamma_k "
                      f"{se[0]:.2g}{f' to {se[-1]:.2g}' if len(se) > 1 else ''}; above "
                      f"{FEW_VERDICTS_SE:g} counts as few): their Wald intervals of mu and gamma "
                      "cover less than their level; fitting such a category alone says why and "
                      "what to do", thin[0].category)


def _without_judges(rows, column: str, names, progress):
    """The rows without those of the judges named by --leave-out (each must be there)."""
    if not names:
        return rows
    from ..errors import DataError

    if column not in rows.columns:
        raise DataError(f"--leave-out needs the judge column {column!r} (--judge-col); the "
                        f"columns there are {list(rows.columns)}")
    judges = rows[column].astype(str)
    missing = sorted(set(names) - set(judges))
    if missing:
        raise DataError(f"--leave-out: no judge {', '.join(map(repr, missing))} in column "
                        f"{column!r}")
    out = judges.isin(names).to_numpy()
    progress(f"leaving out {int(out.sum()):,} verdicts of {', '.join(map(repr, names))}")
    return rows[~out]


def run_categories(args) -> int:
    """``hja-bayes categories``: read, fit each category, print and write the table."""
    if args.judge_col and not args.panel:
        from ..errors import ParameterError

        raise ParameterError("--judge-col needs --panel: without it every verdict is pooled")
    progress = Progress(args.quiet)
    progress(f"reading {args.data}")
    rows = _without_judges(_rows(args), args.judge_col or "judge", args.leave_out, progress)
    cluster = args.cluster_col or next((c for c in CLUSTER_COLUMNS if c in rows.columns), None)
    columns = dict(model_a=args.model_a_col, model_b=args.model_b_col, winner=args.winner_col,
                   cluster=None if cluster == "-" else cluster,
                   judge=(args.judge_col or "judge") if args.panel else None)
    from ..comparisons import Comparisons
    from ..hja import fit_hja
    from ..reporting import leaderboard_by

    # every row read once as a whole: what is used and what is left out, said before the fits
    to_stdout = args.out == "-"  # the CSV alone on stdout; the summary on stderr
    whole = Comparisons.from_frame(rows, **columns)
    print(whole.summary(), file=sys.stderr if to_stdout else sys.stdout)
    outcome = args.outcome or ("ordinal" if len(whole.categories) != 3 else "half")

    def fitter(data):  # pooled (one judge) or a panel: at rank 0, cluster-robust with prompts
        return fit_hja(data, rank=0, position_bias=args.position_bias, outcome=outcome)

    how = ("a panel of judges (HJA, rank 0)" if args.panel else "every verdict pooled") + (
        f", outcome {outcome}" if outcome != "half" else "")
    progress(f"one fit per value of {args.by!r}, {how}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = leaderboard_by(rows, by=args.by, fitter=fitter, style=args.style,
                               level=args.level, scale=args.scale, overall=args.overall,
                               baseline=args.baseline, **columns)
    _rewarn(caught, args.by, pooled=not args.panel)
    if to_stdout:
        table.to_csv(sys.stdout, index=False)
        return 0
    meta = table.attrs["meta"]
    kind = {"cluster": f", cluster-robust by {cluster!r}"}.get(meta.get("cov_type"), "")
    print(f"\nLeaderboards by {args.by!r} ({len(meta['categories'])} fitted; {args.level:.0%} "
          f"intervals{kind}, {table.attrs['scale']} scale, {how}):")
    for name, part in table.groupby("category", sort=False):
        print(f"\n{name}:")
        print_table(part.drop(columns="category"), args.rows, "model",
                    "--rows 0 prints them all, --out writes every row")
    if args.out:
        if str(args.out).lower().endswith(".json"):
            from ..reporting.files import table_dict, to_json

            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(to_json(table_dict(table)))
        else:
            table.to_csv(args.out, index=False)
        progress(f"wrote {len(table)} rows to {args.out}")
    return 0
