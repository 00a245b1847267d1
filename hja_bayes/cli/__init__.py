"""Command line ``hja-bayes``: fit a panel, write its report, or run the demo.

::

    hja-bayes fit DATA [--rank bic|cv|N] [--position-bias] [--bayes --samples N] [--out DIR]
    hja-bayes report FIT_DIR [--out DIR] [--scale logit|elo] [--level 0.95]
    hja-bayes confidence DATA [--judge J] [--alpha 0.15] [--delta 0.1] [--out DIR]
    hja-bayes confidence train DATA --out DIR    /    hja-bayes confidence apply DIR DATA
    hja-bayes demo [--out DIR] [--bayes]

``DATA`` is a CSV (optionally gzipped) or JSON Lines file with one row per judgment (or,
with ``--counts``, one row per aggregated cell), or ``bundled:prd_vicuna80``.  Progress
goes to stderr; bad input ends with a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from .confidence import add_confidence_command
from .panel import add_panel_commands

__all__ = ["build_parser", "main"]

class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line and exit code 2."""

    def error(self, message: str):  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``hja-bayes`` argument parser (subcommands fit, report, confidence, demo)."""
    parser = _Parser(prog="hja-bayes", description=__doc__.split("\n\n")[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_panel_commands(sub)
    add_confidence_command(sub)
    return parser


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    text = " ".join(str(message).split())
    print(f"hja-bayes: warning: {text}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hja-bayes`` console script; returns the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 on bad input (one line on stderr, no traceback).
    """
    import matplotlib

    matplotlib.use("Agg")
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        try:
            return args.run(args)
        except (ValueError, OSError, KeyError) as exc:  # HJAError is a ValueError
            text = " ".join(str(exc).split()) or type(exc).__name__
            print(f"hja-bayes: error: {text}", file=sys.stderr)
            return 2
