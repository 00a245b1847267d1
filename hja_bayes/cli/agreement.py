"""``--agreement`` of ``hja-bayes fit``, ``update`` and ``report``: how much the panel agrees.

Krippendorff's alpha over the panel, Cohen's kappa for every pair of judges and, with a
judge named, each other judge's agreement with it (:func:`hja_bayes.agreement`), printed,
in the JSON and in the report's "Agreement" section.
"""

from __future__ import annotations

import argparse

from .common import ROWS_HINT, print_table

__all__ = ["add_agreement", "check_agreement", "panel_agreement", "show_agreement"]


def add_agreement(p: argparse.ArgumentParser) -> None:
    """Register ``--agreement [JUDGE]`` on the parser ``p``."""
    p.add_argument("--agreement", nargs="?", const="", default=None, metavar="JUDGE",
                   help="also measure the panel's agreement (Krippendorff's alpha, Cohen's "
                        "kappa per pair of judges, bootstrap intervals over prompts; needs "
                        "prompts); with a judge named, every other judge's agreement with it")


def check_agreement(data, args) -> None:
    """Refuse ``--agreement`` before any fitting when the data cannot give it."""
    from ..errors import ParameterError

    wanted = getattr(args, "agreement", None)
    if wanted is None:
        return
    if data.clusters is None:
        raise ParameterError("--agreement needs the prompt of each verdict (--cluster-col): "
                             "agreement is counted over units of one prompt and one pair")
    if wanted and wanted not in data.judges:
        raise ParameterError(f"--agreement {wanted}: no such judge; the judges are "
                             f"{list(data.judges)}")


def panel_agreement(data, args, progress):
    """The :class:`~hja_bayes.Agreement` that ``--agreement`` asks for, or None."""
    wanted = getattr(args, "agreement", None)
    if wanted is None:
        return None
    from ..inference.agreement import agreement

    check_agreement(data, args)
    progress("agreement of the panel (bootstrap over prompts)")
    return agreement(data, reference=wanted or None, level=args.level)


def show_agreement(ag, rows: int | None = None) -> None:
    """The agreement tables on stdout (``rows``: as ``--rows``)."""
    print("\nAgreement of the panel (Krippendorff's alpha):")
    print_table(ag.alpha)
    print("\nPairs of judges (Cohen's kappa):")
    print_table(ag.kappa, rows, "judge pair", ROWS_HINT)
    if ag.reference is not None:
        print("\nAgreement with the reference:")
        print_table(ag.reference, rows, "judge", ROWS_HINT)
