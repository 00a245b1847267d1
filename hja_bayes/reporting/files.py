"""Writing a report to a folder: HTML, Markdown, figures as PNG, tables as CSV and JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, NamedTuple

import pandas as pd

from ..inference import WaldInference
from .content import build_report
from .html import png, render_html
from .leaderboard import Scale
from .markdown import render_markdown

__all__ = ["ReportFiles", "report"]


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


def _write_tables(tables: Iterable[tuple[str, pd.DataFrame]], folder: Path) -> list[Path]:
    written = []
    for name, df in tables:
        csv, js = folder / f"{name}.csv", folder / f"{name}.json"
        df.to_csv(csv, index=False)
        js.write_text(df.to_json(orient="records", indent=2, force_ascii=False) + "\n",
                      encoding="utf-8")
        written += [csv, js]
    return written


def report(
    fit,
    out_dir: str | Path,
    idata=None,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    title: str | None = None,
    inference: WaldInference | None = None,
) -> ReportFiles:
    """Write the full report of a fitted model to the folder ``out_dir``.

    Files written: ``report.html`` (self-contained: figures inline, no external assets,
    every user string escaped), ``report.md`` with ``figures/*.png``, and
    ``leaderboard``, ``judges``, ``pairwise`` (and ``rank_table`` when the rank was
    selected) as ``.csv`` and ``.json`` (records; NaN as null).

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
        Title of the report.
    inference : WaldInference, optional
        Reused instead of recomputing the Wald inference.

    Returns
    -------
    ReportFiles
    """
    rep = build_report(fit, idata, level, scale, title=title, inference=inference)
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    figure_dir = folder / "figures"
    figure_dir.mkdir(exist_ok=True)
    images = {name: png(fig) for name, fig in rep.figures.items()}
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
    tables = [("leaderboard", rep.leaderboard), ("judges", rep.judges),
              ("pairwise", rep.pairwise)]
    if rep.rank_table is not None:
        tables.append(("rank_table", rep.rank_table))
    if rep.intervals is not None:
        tables.append(("intervals", rep.intervals))
    written = _write_tables(tables, folder)
    return ReportFiles(html_path, md_path, tuple(written), tuple(figure_paths))
