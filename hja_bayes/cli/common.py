"""Pieces every ``hja-bayes`` subcommand shares: progress messages, argument types, tables."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from ..errors import ParameterError

__all__ = ["ROWS_HINT", "Progress", "add_common", "level_arg", "number_arg", "positive_int",
           "print_table", "rank_arg", "self_preference_pairs"]


class Progress:
    """Stage messages with elapsed time on stderr."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.start = time.perf_counter()

    @property
    def bar(self) -> bool:
        """Whether to draw progress bars: not when quiet, nor where standard error is not a
        terminal (a bar redrawn in place is noise in a log file)."""
        return not self.quiet and sys.stderr.isatty()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.start
            print(f"[{elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)


def rank_arg(text: str):
    """``bic``, ``cv`` (any case) or an integer >= 0."""
    if text.strip().lower() in ("bic", "cv"):
        return text.strip().lower()
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"rank must be 'bic', 'cv' or an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"rank must be >= 0, got {value}")
    return value


def table_style(text: str) -> str:
    """``default`` or ``arena``: the leaderboard's columns, which a user looking for style
    control may mistake for it (``--style-control``)."""
    if text in ("default", "arena"):
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a leaderboard style (default or arena: the table's columns); to "
        f"control for the answers' style use --style-control{' ' + text if text else ''}")


def positive_int(text: str, least: int = 1) -> int:
    """An integer >= ``least`` (checked when the arguments are read, before any work)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def gamma_scale_arg(text: str) -> float | str:
    """``--gamma-scale``: "empirical", or a positive number."""
    if text == "empirical":
        return text
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'empirical', got "
                                         f"{text!r}")
    return value


def number_arg(name: str, low: float, high: float = float("inf"), *,
               closed_low: bool = False):
    """An argument type: a number strictly between ``low`` and ``high`` (from ``low`` on
    with ``closed_low``), checked when the arguments are read, before any work."""
    interval = (f"lie in [{low:g}, {high:g})" if closed_low
                else f"be finite and > {low:g}" if high == float("inf")
                else f"lie strictly between {low:g} and {high:g}")

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not (low <= value if closed_low else low < value) or not value < high:
            raise argparse.ArgumentTypeError(f"{name} must {interval}, got {value}")
        return value

    return read


def baseline_arg(text: str) -> tuple[str, float]:
    """``--baseline MODEL=SCORE``: the model (its name may hold '=') and its pinned score."""
    model, _, value = text.rpartition("=")
    try:
        score = float(value)
    except ValueError:
        score = float("nan")
    if not model or not np.isfinite(score):
        raise argparse.ArgumentTypeError(f"expected MODEL=SCORE, e.g. gpt-4=1200, got {text!r}")
    return model, score


#: ``--level``: a confidence level strictly between 0 and 1.
level_arg = number_arg("level", 0.0, 1.0)


#: Default of ``--rows``: the rows of a table printed before the rest is counted in one line.
SHOW_ROWS = 40
#: Where the rows not printed are.
ROWS_HINT = "--rows 0 prints them all, --report writes every row to CSV"


def self_preference_pairs(text):
    """``--self-preference``: None (absent), True (bare flag), or JUDGE=MODEL,... as a map."""
    if text is None or text is True:
        return text
    pairs = [part.partition("=") for part in str(text).split(",") if part.strip()]
    if not pairs or any(not sep or not j.strip() or not m.strip() for j, sep, m in pairs):
        raise ParameterError(f"--self-preference takes JUDGE=MODEL pairs separated by commas "
                             f"(or no value: judges named like models), got {text!r}")
    judges = [j.strip() for j, _, _ in pairs]
    twice = sorted({j for j in judges if judges.count(j) > 1})
    if twice:  # a map keeps the last: said, not chosen
        raise ParameterError(f"--self-preference gives judge(s) {twice} more than one model; "
                             "one model per judge")
    return {j.strip(): m.strip() for j, _, m in pairs}


def print_table(df: pd.DataFrame, limit: int | None = None, noun: str = "row",
                where: str = "") -> None:
    """A table on stdout; a missing value (e.g. the last model's P(better than next)) is '-'.

    With ``limit`` (None or 0: every row), a longer table prints its first ``limit`` rows and
    then one line counting the other rows (``noun``: what a row is) and saying ``where`` they
    are."""
    from ..summary import count_of

    shown = df.head(limit) if limit and len(df) > limit else df
    nullable = [c for c in shown.columns  # na_rep does not reach pandas' own missing value
                if isinstance(shown[c].dtype, pd.api.extensions.ExtensionDtype)
                and shown[c].isna().any()]
    if nullable:
        shown = shown.astype({c: object for c in nullable}).fillna({c: "-" for c in nullable})
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(shown.to_string(index=False, na_rep="-", float_format="{:.3f}".format))
    if len(shown) < len(df):
        more = count_of(len(df) - len(shown), f"more {noun}")
        print(f"... {more} not shown{': ' + where if where else ''}")


def add_common(p: argparse.ArgumentParser, *, scale: bool = True, rows: bool = True,
               baseline: bool = False, pairwise: bool = False) -> None:
    """Register the options every table-printing command shares: ``--level``, and
    ``--scale`` and ``--rows`` unless turned off (``--baseline`` and the report's
    ``--pairwise`` where asked for)."""
    p.add_argument("--level", type=level_arg, default=0.95,
                   help="level of every interval (default 0.95)")
    if scale:
        p.add_argument("--scale", choices=("logit", "elo"), default=None,  # see main()
                       help="score scale: logit, or Elo = 400/ln10*mu + 1000 (default logit)")
    if baseline:
        p.add_argument("--baseline", type=baseline_arg, default=None, metavar="MODEL=SCORE",
                       help="pin one model's score, e.g. gpt-4=1200 with --scale elo (every "
                            "other interval is then that of the difference to it)")
    if pairwise:
        p.add_argument("--pairwise", action=argparse.BooleanOptionalAction, default=None,
                       help="write the report's pairwise table, every ordered pair of models "
                            "(default: up to 300 models; N(N-1) rows, 378 MB at 1,000)")
    if rows:
        p.add_argument("--rows", type=lambda text: positive_int(text, least=0), default=SHOW_ROWS, metavar="N",
                       help=f"rows of each table printed on the terminal, the top ones; 0 prints "
                            f"every row (default {SHOW_ROWS})")
    p.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
