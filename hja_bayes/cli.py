"""Command line: ``hja-bayes demo`` (and, as they land, fit / report / confidence)."""

from __future__ import annotations

import argparse
import sys

import pandas as pd


__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from .btl import fit_pooled_btl
    from .data import Comparisons
    from .datasets import PRD_CITATION, load_prd_vicuna80

    prd = load_prd_vicuna80()
    data = Comparisons.from_frame(prd.judgments)
    print("PRD Vicuna80 —", PRD_CITATION)
    print(data.summary())
    print()
    fit = fit_pooled_btl(data)
    print(f"Pooled Bradley–Terry leaderboard (logit scale, {args.level:.0%} Wald intervals):")
    with pd.option_context("display.float_format", "{:.3f}".format, "display.width", 120):
        print(fit.table(level=args.level).to_string(index=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hja-bayes", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="leaderboard of the bundled PRD Vicuna80 data")
    demo.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    demo.set_defaults(run=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hja-bayes`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, OSError) as exc:  # HJAError is a ValueError
        print(f"hja-bayes: error: {exc}", file=sys.stderr)
        return 2
