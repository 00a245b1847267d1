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

from ..threads import one_blas_thread
from ..by_category import ALL, fit_by_category
from ..checks import check_choice, check_level
from ..errors import DataError, DataWarning, IdentifiabilityError, warn
from .fitted import cov_type
from .leaderboard import Scale, Style, leaderboard
from .scales import table_scale

__all__ = ["ALL", "leaderboard_by"]


@one_blas_thread
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
        ``fitter(comparisons) -> fit`` for one category's data.  Default, as ``hja-bayes
        categories``: every vote pooled (Arena style), by :func:`hja_bayes.fit_pooled_btl`
        (Fisher intervals), or where ``cluster=`` names the prompts (``judge`` None, the
        default) by ``hja_bayes.fit_hja(d, rank=0)``: the same MLE with cluster-robust
        intervals.  E.g. ``lambda d: hja_bayes.fit_hja(d, rank=0)`` with ``judge="judge"``
        for a panel of judges.
    style, level, scale, baseline
        As in :func:`~hja_bayes.reporting.leaderboard` (default: Arena columns on the Elo
        scale).  A category without the baseline model is left out (DataWarning); a
        baseline that no category has is a ParameterError.
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
        category whose comparisons do not link all its models, that cannot be fitted, whose
        verdicts come from one prompt under a cluster-robust covariance, that has a model
        seen on one prompt only (no cluster-robust interval can be made for it), or that
        lacks the baseline model is left out with a DataWarning saying why): at its top what holds
        for every leaderboard, under ``"per_category"`` what differs (e.g. ``n_models``,
        ``n_clusters``, ``critical_value``).  A category's fit and table warnings are said
        with the category in front.  A category with fewer prompts than models (under a
        cluster-robust covariance) keeps its rows; its joint rank intervals and tiers are
        empty (:func:`leaderboard`), one DataWarning names such categories (default style)
        and ``meta["unranked"]`` lists them.

    Raises
    ------
    DataError
        When the column ``by`` is missing, or no category could be fitted.
    """
    level = check_level(level)
    scale = table_scale(scale, check_choice(style, "style", ("default", "arena")))
    if fitter is None and columns.get("cluster") is not None and columns.get("judge") is None:
        fitter = _pooled_cluster_robust  # as the CLI: the pooled MLE, cluster-robust
    said: dict = {}  # each fit's warnings, said below naming its category
    fits, skipped = fit_by_category(rows, by, fitter=_recording(fitter, said),
                                    overall=overall, **columns)
    skipped = dict(skipped)
    model = baseline[0] if isinstance(baseline, (tuple, list)) and baseline else None
    pinned = isinstance(model, str) and any(model in fit.items for fit in fits.values())
    tables, metas, unranked = [], {}, []
    for name, fit in fits.items():
        _say(said.pop(id(fit), []), f"{by} {name!r}: ")
        why = _why_not(fit, model if pinned else None)
        if why:
            skipped[name] = why
            continue
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # said once below, naming the categories:
                warnings.filterwarnings("ignore", ".*tiers are left empty", DataWarning)
                board = leaderboard(fit, level=level, scale=scale, style=style,
                                    baseline=baseline)
        except (DataError, IdentifiabilityError) as exc:
            skipped[name] = " ".join(str(exc).split())
            continue
        finally:
            _say(caught, f"{by} {name!r}: ")
        if board.attrs["meta"].get("joint_refusal"):
            unranked.append(name)
        board.insert(0, "category", name)
        tables.append(board)
        metas[name] = board.attrs["meta"]
    if skipped:
        warn(f"categories left out: {skipped}", DataWarning)
    if unranked and style == "default":
        warn(f"categories with fewer prompts than models: {unranked}: no joint statement about "
             "every score can be made from a cluster-robust covariance of so few prompts, so "
             "their rank_lower, rank_upper and tier are left empty; their score intervals, "
             "Rank(UB) and p_better_next stand", DataWarning)
    if not tables:
        raise DataError(f"no category of {by!r} could be fitted: {skipped}")
    if baseline is None:
        _warn_missing_models(tables, by)
    table = pd.concat(tables, ignore_index=True)
    table.attrs.update(meta=_stacked_meta(metas, style=style, by=by, skipped=skipped,
                                          unranked=unranked),
                       level=level, scale=tables[-1].attrs["scale"])
    return table


def _warn_missing_models(tables, by: str) -> None:
    """Say which categories lack some models: each category's scores are centred on its own
    models, so with different sets their values do not compare across categories."""
    models = {m: set(t["model"]) for m, t in ((t["category"].iloc[0], t) for t in tables)}
    every = set().union(*models.values())
    missing = {name: sorted(every - have, key=str) for name, have in models.items()
               if have != every}
    if missing:
        warn(f"categories of {by!r} without every model: {missing}: each category's scores "
             "are centred on the models it has, so they do not compare across categories "
             "(ranks within each do); pin a model they share (baseline=; CLI: --baseline) to "
             "compare scores", DataWarning)


def _pooled_cluster_robust(data):
    """The default fitter where the rows name their prompts (``cluster=``): the pooled
    Bradley-Terry MLE (data read with ``judge=None``) with cluster-robust intervals, as
    ``hja-bayes categories`` fits it."""
    from ..hja import fit_hja

    return fit_hja(data, rank=0)


def _recording(fitter, said: dict):
    """``fitter`` (default :func:`hja_bayes.fit_pooled_btl`) keeping each fit's warnings in
    ``said``, by the fit's id, to be said naming its category; those of a fit that fails are
    said at once, as they came (the category is left out, saying why)."""
    if fitter is None:
        from ..btl import fit_pooled_btl as fitter

    def fit(data):
        caught: list = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = fitter(data)
        except BaseException:
            _say(caught, "")
            raise
        said[id(result)] = caught
        return result
    return fit


def _say(caught, prefix: str) -> None:
    """Warnings caught while fitting or tabling one category, said again with ``prefix``
    (the category) in front."""
    for w in caught:
        warnings.warn_explicit(prefix + str(w.message), w.category, w.filename, w.lineno)


def _why_not(fit, baseline_model: str | None) -> str | None:
    """Why a category's fit cannot be tabled (None where it can): cluster-robust intervals
    from fewer than two prompts, or no baseline model to pin."""
    data = getattr(fit, "data", None)
    if cov_type(fit) == "cluster" and data is not None and data.clusters is not None:
        from ..inference.information import occupied_clusters

        n = occupied_clusters(data.clusters)
        if n < 2:
            return (f"its verdicts come from {n} prompt{'' if n == 1 else 's'} (column "
                    f"{data.cluster_column!r}): cluster-robust intervals need at least two; "
                    "read the rows without prompts (cluster=None; CLI: --cluster-col -) for "
                    "Fisher intervals, or merge it into another category")
    if baseline_model is not None and baseline_model not in fit.items:
        return (f"no model {baseline_model!r} to pin (baseline; CLI: --baseline): its models "
                f"are {list(fit.items)}; table it without a baseline, or pin a model it has")
    return None


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays, or values that do not compare
        return False


def _stacked_meta(metas: dict, **extra) -> dict:
    """The stacked table's meta: at the top only what holds for every category's
    leaderboard (the level, scale, model, covariance type, ...), and under
    ``per_category`` what differs, by category (its number of models, prompts, critical
    value, ...)."""
    first, *rest = metas.values()
    common = {k: v for k, v in first.items()
              if all(k in m and _same(m[k], v) for m in rest)}
    per_category = {name: {k: v for k, v in m.items() if k not in common}
                    for name, m in metas.items()}
    return {**common, "table": "leaderboard_by", **extra, "categories": list(metas),
            "per_category": per_category}
