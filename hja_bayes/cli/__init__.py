"""Command line ``hja-bayes``: fit a panel, add verdicts to a fit, write its report, run the
demo, choose the next comparisons, certify a judge.

The argument plumbing lives here; the commands are in :mod:`~hja_bayes.cli.panel` (fit,
report, demo), :mod:`~hja_bayes.cli.update`, :mod:`~hja_bayes.cli.next`,
:mod:`~hja_bayes.cli.plan`, :mod:`~hja_bayes.cli.categories` and
:mod:`~hja_bayes.cli.confidence`.
Progress goes to stderr; bad input ends with a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path

from .categories import add_categories_command
from .confidence import add_confidence_command
from .next import add_next_command
from .plan import add_plan_command
from .panel import add_panel_commands
from .update import add_update_command

__all__ = ["build_parser", "main"]

DESCRIPTION = """\
Rank LLMs from pairwise comparisons made by a panel of judges, with honest uncertainty.

DATA is a CSV, TSV, JSON Lines or JSON array file (FastChat's clean_battle files), a
parquet file, '-' for standard input, bundled:prd_vicuna80, or a folder or glob of such
files (aggregated by DuckDB, the rows never loaded). Each row is one verdict (or, with
--counts, one aggregated cell). Progress goes to stderr; bad input ends with a
one-line error and exit code 2."""

EXAMPLES = """\
examples:
  hja-bayes demo --out report
  hja-bayes fit votes.csv --rank bic --position-bias --report --out fit
  hja-bayes fit clean_battle.json --judge-col - --style arena --format json > board.json
  cat votes.jsonl | hja-bayes fit - --judge-col grader --winner-col verdict
  hja-bayes report fit --scale elo --level 0.9
  hja-bayes next fit --budget 500 --goal top --k 3 --cost judges.csv --out next.csv
  hja-bayes plan fit --pairs top --k 3 --power 0.8
  hja-bayes update fit new_votes.csv --out fit2 --report
  hja-bayes categories battles.jsonl --by language --out by_language.csv
  hja-bayes <command> --help      (the options of one command)"""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line and exit code 2, and which takes no
    abbreviation of an option (``--ties davidson`` had been read as ``--ties-col``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``hja-bayes`` argument parser (subcommands fit, update, report, demo, next, plan,
    categories, confidence)."""
    from ..version import __version__

    parser = _Parser(prog="hja-bayes", description=DESCRIPTION, epilog=EXAMPLES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hja-bayes {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                title="commands", metavar="command")
    add_panel_commands(sub)
    add_update_command(sub)
    add_next_command(sub)
    add_plan_command(sub)
    add_categories_command(sub)
    add_confidence_command(sub)
    return parser


def _devices_for_chains(chains: int) -> None:
    """One CPU device per chain, up to the cores this process may use, so that a Bayesian
    fit's chains run side by side (``sample_hja``'s parallel chains; Chatbot Arena's two
    chains of 1,000 + 1,000 draws took 155 s one after the other on two cores).  JAX reads
    the count before its first operation only: a process that already ran one (a program
    calling :func:`main`), or whose user chose a count (``XLA_FLAGS``' host device count,
    ``JAX_NUM_CPU_DEVICES``), keeps its devices."""
    from ..btl import usable_cores

    n = min(int(chains), usable_cores())
    chosen = ("xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
              or "JAX_NUM_CPU_DEVICES" in os.environ)
    if n < 2 or chosen:
        return
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", n)
    except (AttributeError, RuntimeError):  # an older JAX, or its backend already started
        pass


#: Options whose value may start with a minus sign (``--verdict-scale -2..2``): argparse reads
#: such a value as an option of its own unless it is joined to its option with ``=``.
SIGNED_VALUES = re.compile(r"-?\d+\.\.-?\d+")
SIGNED_OPTIONS = ("--verdict-scale",)


class _InterruptsCounted:
    """Ctrl-C counted as well as raised: an interrupt that lands in a callback which
    swallows exceptions (JAX's garbage-collection callback) had let the command run on and
    exit 0.  Installed only over Python's own handler, in the main thread."""

    def __init__(self):
        self.count, self.previous = 0, None

    def __enter__(self):
        import signal
        import threading

        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self.previous = signal.signal(signal.SIGINT, self._interrupted)
        return self

    def _interrupted(self, signum, frame):
        self.count += 1
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.previous is not None:
            import signal

            signal.signal(signal.SIGINT, self.previous)
        return False


def _unwritable_folder(out: str) -> str | None:
    """Why the folder ``out`` cannot be written, or None."""
    path = Path(out)
    if out == "-":
        return "a folder is written there, not standard output (--format json prints there)"
    if path.exists() and not path.is_dir():
        return "exists and is not a folder"
    # the nearest existing folder on the way (the name next is this package's submodule)
    existing = [p for p in (path, *path.parents) if p.exists()][0]
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} cannot be written to"
    return None


def _joined_signed_values(argv: list[str]) -> list[str]:
    """``argv`` with ``--verdict-scale -2..2`` written as ``--verdict-scale=-2..2``."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in SIGNED_OPTIONS and SIGNED_VALUES.fullmatch(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _one_line_warnings(said: list):
    """A ``warnings.showwarning`` that prints each warning on one line, once per command
    (the leaderboard on the terminal and the report's would otherwise say it twice), and
    keeps it in ``said`` as ``{"category", "message"}`` (``--format json`` prints them)."""
    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if all(w["message"] != text for w in said):
            said.append({"category": category.__name__, "message": text})
            print(f"hja-bayes: warning: {text}", file=sys.stderr)

    return show


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hja-bayes`` console script; returns the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 on bad input (one line on stderr, no traceback), 1 when the reader
        of the output closed it before the end (``| head``), 130 when interrupted (Ctrl-C).
    """
    if "matplotlib" in sys.modules:
        sys.modules["matplotlib"].use("Agg")
    else:  # read when plotting first imports it: importing it here costs every command
        os.environ["MPLBACKEND"] = "Agg"
    parser = build_parser()
    args = parser.parse_args(_joined_signed_values(sys.argv[1:] if argv is None else argv))
    if hasattr(args, "scale"):  # given, or the table's: Elo for the arena style, categories'
        arena = getattr(args, "style", None) == "arena"
        if arena and args.scale == "logit":  # it had printed Elo all the same
            parser.error("--style arena is on the Elo scale (FastChat's columns): --style "
                         "default --scale logit for the logit scale")
        if args.scale is None:
            args.scale = "elo" if arena or args.command == "categories" else "logit"
    if getattr(args, "title", None) is not None and getattr(args, "report", True) is False:
        parser.error("--title is the report's: add --report (it had been ignored)")
    if args.command in ("fit", "update", "report", "demo") and args.out is not None:
        why = _unwritable_folder(args.out)  # said before the work, not after it
        if why:
            parser.error(f"--out {args.out}: {why}")
    elif args.command in ("categories", "next", "plan") and args.out not in (None, "-"):
        folder = Path(args.out).parent  # a file's: its folder must be there
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            parser.error(f"--out {args.out}: its folder {folder} does not exist or cannot be "
                         "written to")
    from ..errors import HJAWarning

    with warnings.catch_warnings(), _InterruptsCounted() as interrupts:
        warnings.simplefilter("always", HJAWarning)  # the library's warnings reach the user
        args.said_warnings = []
        warnings.showwarning = _one_line_warnings(args.said_warnings)
        try:
            if getattr(args, "bayes", False):
                _devices_for_chains(getattr(args, "chains", 1))  # imports JAX: interruptible
            code = args.run(args)
            if interrupts.count:  # raised where it was swallowed (JAX's GC callback)
                raise KeyboardInterrupt
            return code
        except BrokenPipeError:  # the reader left (`... | head`): no traceback, no "error"
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # the exit's flush would fail again
            print("hja-bayes: stopped: the reader of the output closed it", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # Ctrl-C: a line, not the traceback of wherever it was
            print("\nhja-bayes: interrupted", file=sys.stderr)
            return 130
        except (ValueError, OSError, KeyError) as exc:  # HJAError is a ValueError
            text = " ".join(str(exc).split()) or type(exc).__name__
            if "cov_type='fisher'" in text:  # the library's advice, said for the command line
                text += " (on the command line: --cluster-col - treats them as independent)"
            print(f"hja-bayes: error: {text}", file=sys.stderr)
            return 2
