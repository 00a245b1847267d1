"""Per-category leaderboards: one fit per category (e.g. language, task), one table.

Chatbot Arena shows a leaderboard per category of prompt; :func:`leaderboard_by` does the
same for any column of the rows: the rows are split and each part fitted on its own by
:func:`hja_bayes.by_category.fit_by_category` (a pooled Bradley-Terry fit by default, or any
fitter given), and this module stacks the leaderboards with a ``category`` column.
"""

from __future__ import annotations

import warnings
from typing import Callable

import pandas as pd

from ..by_category import ALL, fit_by_category
from ..checks import check_level
from ..errors import DataError, DataWarning, IdentifiabilityError, warn
from .leaderboard import Scale, Style, leaderboard, table_meta

__all__ = ["ALL", "leaderboard_by"]


def leaderboard_by(
    rows,
    by: str = "category",
    *,
    fitter: Callable | None = None,
    style: Style = "arena",
    level: float = 0.95,
    scale: Scale = "elo",
    baseline: tuple[str, float] | None = None,
    overall: bool = True,
    **columns,
) -> pd.DataFrame:
    """One leaderboard per value of the column ``by``, stacked into one table.

    Parameters
    ----------
    rows : DataFrame, or a table with ``.to_pandas()``
        One row per verdict, with the column ``by``.
    by : str
        The column that names each row's category (default ``"category"``).
    fitter : callable, optional
        ``fitter(comparisons) -> fit`` for one category's data; default
        :func:`hja_bayes.fit_pooled_btl` (Arena style: every vote pooled; Fisher intervals,
        so with ``cluster=`` among the columns it warns).  E.g.
        ``lambda d: hja_bayes.fit_hja(d, rank=0)`` for a panel of judges, or for the pooled
        model with cluster-robust intervals (``judge`` None, the default).
    style, level, scale, baseline
        As in :func:`~hja_bayes.reporting.leaderboard` (default: Arena columns on the Elo
        scale).  A baseline must be a model that every category has (else a
        ParameterError).
    overall : bool
        Also a leaderboard over all rows, labelled ``"(all)"``, first.
    **columns
        Column names for :func:`hja_bayes.readers.read_frame` (``judge``, ``model_a``,
        ``model_b``, ``winner``, ...); ``judge`` defaults to None (one judge).

    Returns
    -------
    DataFrame
        The leaderboards, each best first, with a first column ``category``.
        ``attrs["meta"]`` says what they are and which categories were left out (a
        category whose comparisons do not link all its models, or that cannot be fitted, is
        left out with a DataWarning).  A category with fewer prompts than models (under a
        cluster-robust covariance) keeps its rows; its joint rank intervals and tiers are
        empty (:func:`leaderboard`), one DataWarning names such categories (default style)
        and ``meta["unranked"]`` lists them.

    Raises
    ------
    DataError
        When the column ``by`` is missing, or no category could be fitted.
    """
    level = check_level(level)
    fits, skipped = fit_by_category(rows, by, fitter=fitter, overall=overall, **columns)
    skipped = dict(skipped)
    tables, last_fit, unranked = [], None, []
    for name, fit in fits.items():
        try:
            with warnings.catch_warnings():  # said once below, naming the categories
                warnings.filterwarnings("ignore", ".*tiers are left empty", DataWarning)
                board = leaderboard(fit, level=level, scale=scale, style=style,
                                    baseline=baseline)
        except (DataError, IdentifiabilityError) as exc:
            skipped[name] = " ".join(str(exc).split())
            continue
        if board.attrs["meta"].get("joint_refusal"):
            unranked.append(name)
        board.insert(0, "category", name)
        tables.append(board)
        last_fit = fit
    if skipped:
        warn(f"categories left out: {skipped}", DataWarning)
    if unranked and style == "default":
        warn(f"categories with fewer prompts than models: {unranked}: no joint statement about "
             "every score can be made from a cluster-robust covariance of so few prompts, so "
             "their rank_lower, rank_upper and tier are left empty; their score intervals, "
             "Rank(UB) and p_better_next stand", DataWarning)
    if not tables:
        raise DataError(f"no category of {by!r} could be fitted: {skipped}")
    table = pd.concat(tables, ignore_index=True)
    meta = dict(tables[-1].attrs["meta"])
    meta.update(table_meta(last_fit, "leaderboard_by", level, tables[-1].attrs["scale"]),
                style=style, by=by, categories=[t["category"].iloc[0] for t in tables],
                skipped=skipped, unranked=unranked)
    table.attrs.update(meta=meta, level=level, scale=tables[-1].attrs["scale"])
    return table
