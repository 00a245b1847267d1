"""Writing a report to a folder: HTML, Markdown, figures as PNG, tables as CSV and JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, NamedTuple

import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..errors import ParameterError
from ..inference import WaldInference
from ..inference.fragility import Fragility
from .content import build_report
from .formatting import csv_safe
from .html import png, render_html
from .scales import Scale
from .markdown import render_markdown

__all__ = ["ReportFiles", "plain_json", "report", "table_dict", "table_json", "to_json"]


class ReportFiles(NamedTuple):
    """Paths written by :func:`report`.

    Attributes
    ----------
    html : Path
        The self-contained HTML report.
    markdown : Path
        The same content in Markdown (figures as PNG files beside it).
    tables : tuple of Path
        CSV and JSON files of the tables.
    figures : tuple of Path
        PNG files of the figures.
    """

    html: Path
    markdown: Path
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]


def table_dict(df: pd.DataFrame, meta: dict | None = None) -> dict:
    """``{"meta": {...}, "rows": [...]}``: the rows as records (NaN as null) beside what they
    are (default meta: ``df.attrs["meta"]``)."""
    rows = json.loads(df.to_json(orient="records", force_ascii=False, double_precision=15))
    return {"meta": df.attrs.get("meta", {}) if meta is None else meta, "rows": rows}


def table_json(df: pd.DataFrame, meta: dict | None = None) -> str:
    """:func:`table_dict` as JSON text: the meta indented, one row per line (written by
    pandas: a 1,000-model leaderboard's million pairs in seconds, not the minute that
    indenting every row took)."""
    meta = df.attrs.get("meta", {}) if meta is None else meta
    head = json.dumps(finite(meta), indent=2, ensure_ascii=False, default=plain_json,
                      allow_nan=False)
    # pandas writes every "/" escaped, as backslash-slash (and a backslash as two, so the
    # pair never stands for anything else): written plain, as names like "org/model" read
    text = df.to_json(orient="records", lines=True, force_ascii=False,
                      double_precision=15).strip().replace("\\/", "/")
    rows = text.split("\n") if text else []  # not splitlines: a name may hold U+2028
    body = "".join(f"\n    {row}," for row in rows).rstrip(",") + ("\n  " if rows else "")
    return '{\n  "meta": ' + head.replace("\n", "\n  ") + ',\n  "rows": [' + body + "]\n}\n"


def to_json(obj) -> str:
    """Indented JSON, numpy scalars and arrays as plain values, non-finite numbers as null."""
    return json.dumps(finite(obj), indent=2, ensure_ascii=False, default=plain_json,
                      allow_nan=False) + "\n"


def finite(obj):
    """``obj`` with every NaN or infinite number (numpy's too) as None: strict JSON, which
    ``Infinity`` is not (a leaderboard's ``joint_df`` without prompts had been written so,
    and JavaScript's parser refuses it)."""
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return finite(obj.tolist())
    if isinstance(obj, (float, np.floating)) and not np.isfinite(obj):
        return None
    return obj


def plain_json(x):
    """numpy scalars and arrays as plain JSON values."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not JSON serializable")


def _write_tables(tables: Iterable[tuple[str, pd.DataFrame, dict]], folder: Path) -> list[Path]:
    written = []
    for name, df, meta in tables:
        csv, js = folder / f"{name}.csv", folder / f"{name}.json"
        csv_safe(df).to_csv(csv, index=False)
        js.write_text(table_json(df, meta), encoding="utf-8")
        written += [csv, js]
    return written


def _write_matrices(matrices: dict, folder: Path) -> list[Path]:
    written = []
    for name, df in matrices.items():
        path = folder / f"{name}.csv"
        csv_safe(df).to_csv(path, index=True)
        written.append(path)
    return written


@one_blas_thread
def report(
    fit,
    out_dir: str | Path,
    idata=None,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    title: str | None = None,
    inference: WaldInference | None = None,
    agreement=None,
    uncontrolled=None,
    fragility=(),
    baseline: tuple[str, float] | None = None,
    pairwise: bool | None = None,
) -> ReportFiles:
    """Write the full report of a fitted model to the folder ``out_dir``.

    Files written: ``report.html`` (self-contained: figures inline, no external assets,
    every user string escaped), ``report.md`` with ``figures/*.png``; the tables
    ``leaderboard``, ``judges``, ``pairwise`` (up to
    :data:`~hja_bayes.reporting.content.PAIRWISE_FILE_MODELS` models unless ``pairwise``
    says otherwise; the footer says which) (and ``rank_table`` when the rank was
    selected, ``intervals`` and ``convergence`` with a posterior) as ``.csv`` and as
    ``.json`` -- ``{"meta": {...}, "rows": [...]}``, the rows as records (NaN as null) and
    the meta saying what they are (level, scale, interval method and covariance type, tie
    model, rank, package version; :func:`~hja_bayes.reporting.leaderboard.table_meta`);
    and the observed data as ``observed_win_fraction.csv`` and ``battle_counts.csv``
    (square, models in leaderboard order).  In every CSV, text that a spreadsheet would
    read as a formula (starting with ``= + - @``) is prefixed with ``'``.

    Parameters
    ----------
    fit : HJAFit
    out_dir : str or Path
        Created if needed; existing report files are overwritten.
    idata : arviz.InferenceData, optional
        Posterior draws of the same model: adds credible columns, the posterior rank and
        posterior predictive figures, and ``intervals.csv``/``.json`` (Wald against
        credible, :func:`hja_bayes.compare_intervals`).
    level : float
        Level of every interval.
    scale : {"logit", "elo"}
        Scale of the score columns.
    title : str, optional
        Title of the report (default: from the data).
    inference : WaldInference, optional
        Reused instead of recomputing the Wald inference.
    agreement : Agreement, optional
        From :func:`hja_bayes.agreement` on the fit's judges: adds an "Agreement" section
        and the tables ``agreement_alpha``, ``agreement_kappa`` (and
        ``agreement_reference`` with a reference), each with its own meta.
    uncontrolled : HJAFit, optional
        The fit without its bias terms (``fit.uncontrolled()``): adds the leaderboard's
        ``rank_change`` column.
    fragility : sequence of Fragility, optional
        Fragility audits (:meth:`hja_bayes.hja.HJAFit.fragility`): their sentences go
        under the leaderboard and the units they removed to ``fragility_verdicts`` /
        ``fragility_prompts`` (.csv, .json).
    baseline : (str, float), optional
        Pin one model's score on ``scale``, e.g. ``("gpt-4", 1200)`` with ``scale="elo"``
        (:func:`~hja_bayes.reporting.leaderboard`).
    pairwise : bool, optional
        Whether to write the pairwise table (every ordered pair: N(N - 1) rows); default up
        to :data:`~hja_bayes.reporting.content.PAIRWISE_FILE_MODELS` models.  A pairwise
        file an earlier report left in the folder is removed when it is not written.

    Returns
    -------
    ReportFiles
    """
    if not isinstance(out_dir, (str, os.PathLike)):
        raise ParameterError(f"out_dir is a folder's path, got {type(out_dir).__name__}")
    if title is not None and not isinstance(title, str):
        raise ParameterError(f"title must be text, got {title!r}")
    fragility = _audits(fragility)
    folder = Path(out_dir)
    if folder.exists() and not folder.is_dir():  # before any work (mkdir's FileExistsError)
        raise ParameterError(f"{folder} is a file: the report goes to a folder (out_dir)")
    rep = build_report(fit, idata, level, scale, title=title, inference=inference,
                       agreement=agreement, uncontrolled=uncontrolled, fragility=fragility,
                       baseline=baseline, pairwise=pairwise)
    folder.mkdir(parents=True, exist_ok=True)
    figure_dir = folder / "figures"
    figure_dir.mkdir(exist_ok=True)
    images = {name: png(fig) for name, fig in rep.figures.items()}
    for stale in set(rep.captions) - set(images):  # figures an earlier report left there
        (figure_dir / f"{stale}.png").unlink(missing_ok=True)
    figure_paths = []
    for name, data in images.items():
        path = figure_dir / f"{name}.png"
        path.write_bytes(data)
        figure_paths.append(path)
    html_path = folder / "report.html"
    html_path.write_text(render_html(rep, images), encoding="utf-8")
    md_path = folder / "report.md"
    md_path.write_text(render_markdown(rep, {n: f"figures/{n}.png" for n in images}),
                       encoding="utf-8")
    # the leaderboard's joint statement and display are its own: the other tables' rows use
    # their own quantiles (a pairwise.json had named the joint critical value as its own)
    own = ("baseline", "critical_value", "joint_df", "joint_refusal", "style")
    base = {k: v for k, v in rep.leaderboard.attrs["meta"].items() if k not in own}

    def meta(name, df, **extra):
        first = rep.leaderboard.attrs["meta"] if name == "leaderboard" else base
        return {**first, **df.attrs.get("meta", {}), "table": name, **extra}

    tables = [(name, df, meta(name, df)) for name, df in (
        ("leaderboard", rep.leaderboard), ("judges", rep.judges), ("pairwise", rep.pairwise))
        if name != "pairwise" or rep.pairwise_file]
    if not rep.pairwise_file:  # an earlier report's, of another fit perhaps
        for stale in ("pairwise.csv", "pairwise.json"):
            (folder / stale).unlink(missing_ok=True)
    if rep.rank_table is not None:
        tables.append(("rank_table", rep.rank_table, meta("rank_table", rep.rank_table)))
    if rep.intervals is not None:
        # logits whatever the leaderboard's scale, Wald beside credible, no pinned model
        tables.append(("intervals", rep.intervals, {**meta("intervals", rep.intervals),
                                                     "scale": "logit",
                                                     "interval": "wald and credible"}))
    if rep.convergence is not None:
        tables.append(("convergence", rep.convergence,
                       meta("convergence", rep.convergence, **rep.convergence.attrs)))
    if rep.biases is not None:
        tables.append(("judge_biases", rep.biases, rep.biases.attrs["meta"]))
    if rep.agreement is not None:  # their own meta: none of the fit's intervals apply
        tables += [(df.attrs["meta"]["table"], df, df.attrs["meta"])
                   for df in rep.agreement if df is not None]
    for f in rep.fragility:
        name = f"fragility_{f.unit}s"
        tables.append((name, f.items, meta(
            name, f.items, target=f.target, unit=f.unit, count=f.count,
            total=int(f.total) if float(f.total).is_integer() else float(f.total),
            confirmed=f.confirmed, result=f.result, sentence=f.sentence)))
    written = _write_tables(tables, folder) + _write_matrices(rep.matrices, folder)
    return ReportFiles(html_path, md_path, tuple(written), tuple(figure_paths))


def _audits(fragility) -> tuple:
    """Fragility audits as a tuple (one audit alone as one), or a ParameterError."""
    if isinstance(fragility, Fragility):
        return (fragility,)
    try:
        audits = None if isinstance(fragility, str) else tuple(fragility)
    except TypeError:
        audits = None
    if audits is None or not all(isinstance(f, Fragility) for f in audits):
        raise ParameterError("fragility takes the audits of fit.fragility() (a list of them), "
                             f"got {fragility!r:.80}")
    return audits
