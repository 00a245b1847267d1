"""One self-contained report of a fitted model: HTML, Markdown, CSV and JSON.

The HTML file carries everything it shows: styles inline, figures as base64 PNG data URIs,
no scripts and no external links.  Every string that comes from the user (model and judge
names, the title, notes) goes through :func:`html.escape`, in the HTML and the Markdown
alike, so a model called ``<script>...</script>`` is shown, never run.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from typing import Iterable, NamedTuple

import numpy as np
import pandas as pd

from ..inference import WaldInference
from .leaderboard import Scale, judge_table, leaderboard, pairwise_table, wald
from .plots import forest_plot, judge_map, residual_heatmap, win_probability_heatmap
from .posterior_plots import posterior_predictive_plot, rank_posterior_plot

__all__ = ["Report", "ReportFiles", "build_report", "report"]

#: Display names of the table columns (HTML and Markdown headers).
COLUMN_LABELS = {
    "model": "Model", "score": "Score", "score_lower": "Lower", "score_upper": "Upper",
    "rank": "Rank", "rank_ub": "Rank (UB)", "rank_lower": "Rank from", "rank_upper": "Rank to",
    "p_better_next": "P(better than next)", "tier": "Tier", "comparisons": "Comparisons",
    "judge": "Judge", "gamma": "γ", "gamma_lower": "γ lower", "gamma_upper": "γ upper",
    "beta": "β", "beta_lower": "β lower", "beta_upper": "β upper", "leverage": "Leverage h",
    "rho": "ρ", "high_leverage": "High leverage", "rank_corr": "Kendall τ vs consensus",
    "model_a": "Model", "model_b": "Opponent", "difference": "Difference", "lower": "Lower",
    "upper": "Upper", "p_win": "P(win)", "p_win_lower": "P lower", "p_win_upper": "P upper",
    "significant": "Significant",
    "post_mean": "Posterior mean", "cred_lower": "Cred. lower", "cred_upper": "Cred. upper",
    "post_rank_lower": "Post. rank from", "post_rank_upper": "Post. rank to",
    "p_best": "P(best)", "post_p_better_next": "Post. P(better than next)",
    "gamma_cred_lower": "γ cred. lower", "gamma_cred_upper": "γ cred. upper",
    "beta_cred_lower": "β cred. lower", "beta_cred_upper": "β cred. upper",
    "nll": "NLL", "n_params": "Parameters", "bic": "BIC", "cv_nll": "CV NLL",
    "n_iter": "Iterations", "converged": "Converged",
}

GLOSSARY = (
    ("Score", "consensus score μ_i, the mean of the judges' score rows; differences are log-odds "
              "for a judge of average sensitivity (Elo scale: 400/ln10 · μ + 1000)."),
    ("Lower / Upper", "Wald (delta-method) interval of the score."),
    ("Rank (UB)", "1 + the number of models whose whole interval lies above this model's "
                  "(the Chatbot Arena convention)."),
    ("Rank from / to", "the ranks compatible with the pairwise Wald intervals of the score "
                       "differences (not adjusted for multiplicity)."),
    ("P(better than next)", "Φ(d / se(d)) for the score difference d to the next model down."),
    ("Tier", "a model opens a new tier when it is significantly below the first model of the "
             "current tier; models in one tier cannot be told apart."),
    ("γ", "judge sensitivity: how strongly the judge's scores follow the consensus (mean 1; "
          "negative: reversed)."),
    ("β", "position bias: the judge's logit bonus for the answer shown first."),
    ("Leverage h / ρ", "size of the judge's structured disagreement ‖(UVᵀ)_k‖, absolute and "
                       "relative to its consensus part |γ_k| ‖μ‖."),
    ("High leverage", "high sensitivity and high leverage at once: a judge that moves the "
                      "consensus and pulls away from it."),
    ("Kendall τ", "agreement of the judge's own ranking with the consensus ranking."),
)

BAYES_GLOSSARY = (
    ("Posterior mean / Cred. lower / upper", "posterior mean and equal-tailed credible "
     "interval of the score, from the NUTS draws (same level as the Wald interval)."),
    ("Post. rank from / to, P(best)", "equal-tailed posterior interval of the model's rank and "
     "the posterior probability that it ranks first."),
    ("Post. P(better than next)", "share of posterior draws in which the model's score beats "
     "the next model's."),
)

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f2f4f7; }
td.text, th.text { text-align: left; }
tr.flag td { background: #fdecea; }
tr.tier-odd td { background: #f7f9fc; }
.glance { font-size: 1.05em; background: #eef4fb; border-left: 4px solid #1f5fa8;
          padding: 0.5em 1em; }
.note { background: #fff6e0; border-left: 4px solid #e0a800; padding: 0.4em 1em; }
.row { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.row > div { flex: 1 1 420px; }
img { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 0.6em; font-size: 0.85em; white-space: pre-wrap; }
dl dt { font-weight: bold; } dl dd { margin: 0 0 0.4em 1.5em; }
footer { color: #777; font-size: 0.8em; margin-top: 2em; }
"""


class Report(NamedTuple):
    """Everything a report shows, before it is written anywhere.

    Attributes
    ----------
    title : str
    leaderboard, judges, pairwise : DataFrame
        The tables (see :func:`~hja_bayes.reporting.leaderboard`,
        :func:`~hja_bayes.reporting.judge_table`, :func:`~hja_bayes.reporting.pairwise_table`).
    rank_table : DataFrame or None
        Rank-selection criteria, when the rank was selected.
    figures : dict
        Name -> matplotlib Figure.
    intervals : DataFrame or None
        Wald against credible intervals (:func:`hja_bayes.compare_intervals`), with a
        posterior.
    notes : tuple of str
        Warnings for the reader (e.g. one orientation only, no convergence).
    data_summary, fit_summary : str
        Plain-text summaries of the data and the fit.
    level : float
    scale : str
    """

    title: str
    leaderboard: pd.DataFrame
    judges: pd.DataFrame
    pairwise: pd.DataFrame
    rank_table: pd.DataFrame | None
    figures: dict
    intervals: pd.DataFrame | None
    notes: tuple[str, ...]
    data_summary: str
    fit_summary: str
    level: float
    scale: str


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


def build_report(
    fit,
    idata=None,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    title: str | None = None,
    inference: WaldInference | None = None,
) -> Report:
    """Collect the tables, figures and notes of a report (nothing is written).

    Parameters
    ----------
    fit : HJAFit
    idata : arviz.InferenceData, optional
        Posterior draws of the same model (:func:`hja_bayes.sample_hja`): adds credible
        columns, the posterior rank and posterior predictive figures.
    level : float
        Level of every interval.
    scale : {"logit", "elo"}
        Scale of the score columns.
    title : str, optional
        Report title (default: "HJA leaderboard").
    inference : WaldInference, optional
        Reused instead of recomputing the Wald inference.

    Returns
    -------
    Report
    """
    inference = wald(fit) if inference is None else inference
    board = leaderboard(fit, idata, level=level, scale=scale, inference=inference)
    judges = judge_table(fit, idata, level=level, inference=inference)
    pairs = pairwise_table(fit, level, scale, inference=inference)
    figures = {
        "forest": forest_plot(fit, level=level, scale=scale, table=board),
        "judge_map": judge_map(fit, level, table=judges),
        "residual": residual_heatmap(fit),
        "win_probability": win_probability_heatmap(fit, level, table=pairwise_table(
            fit, level, inference=inference)),
    }
    intervals = None
    if idata is not None:
        from ..bayes import compare_intervals

        figures["rank_posterior"] = rank_posterior_plot(idata, level)
        figures["ppc"] = posterior_predictive_plot(idata, level)
        intervals = compare_intervals(fit, idata, level)
    notes = []
    if fit.data.one_orientation_only:
        notes.append("Every pair of models is shown in one orientation only, so position bias "
                     "and structured disagreement cannot be told apart in these data.")
    if not fit.data.order_known:
        notes.append("The presentation order was not kept (cells folded): no position bias.")
    if not fit.converged:
        notes.append(f"The fit did not converge in {fit.n_iter} iterations: estimates may be "
                     "inaccurate.")
    if np.any(fit.gamma <= 0):
        bad = [fit.judges[k] for k in np.flatnonzero(np.asarray(fit.gamma) <= 0)]
        notes.append("Judge(s) with non-positive sensitivity γ (their ranking runs against the "
                     "consensus): " + ", ".join(bad) + ".")
    return Report(
        title=title or "HJA leaderboard",
        leaderboard=board, judges=judges, pairwise=pairs, rank_table=fit.rank_table,
        figures=figures, intervals=intervals, notes=tuple(notes), data_summary=str(fit.data.summary()),
        fit_summary=fit.summary(), level=float(level), scale=scale,
    )


# ---------------------------------------------------------------------- formatting
def _format_value(value, column: str, scale: str) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "–"
        if column in ("comparisons", "n_params", "n_iter"):
            return f"{x:,.0f}" if x == round(x) else f"{x:,.1f}"
        if column.startswith("p_"):
            return ">0.999" if x >= 0.9995 else "<0.001" if x < 0.0005 else f"{x:.3f}"
        if scale == "elo" and (column.startswith(("score", "cred_")) or column in (
                "post_mean", "difference", "lower", "upper")):
            return f"{x:.0f}"
        if column in ("nll", "bic", "cv_nll"):
            return f"{x:.2f}"
        return f"{x:.3f}"
    return str(value)


def _is_text(column: str) -> bool:
    return column in ("model", "judge", "model_a", "model_b")


def _html_table(df: pd.DataFrame, table_id: str, scale: str, row_class=None) -> str:
    e = html.escape
    head = "".join(
        f'<th class="text">{e(COLUMN_LABELS.get(c, c))}</th>' if _is_text(c)
        else f"<th>{e(COLUMN_LABELS.get(c, c))}</th>"
        for c in df.columns
    )
    rows = []
    for pos, (_, row) in enumerate(df.iterrows()):
        cls = row_class(pos, row) if row_class else ""
        cells = "".join(
            f'<td class="text">{e(_format_value(row[c], c, scale))}</td>' if _is_text(c)
            else f"<td>{e(_format_value(row[c], c, scale))}</td>"
            for c in df.columns
        )
        rows.append(f'<tr class="{e(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return (f'<table id="{e(table_id)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _md_escape(text: str) -> str:
    text = html.escape(str(text), quote=False)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(df: pd.DataFrame, scale: str) -> str:
    head = "| " + " | ".join(_md_escape(COLUMN_LABELS.get(c, c)) for c in df.columns) + " |"
    rule = "|" + "|".join(":---" if _is_text(c) else "---:" for c in df.columns) + "|"
    body = [
        "| " + " | ".join(_md_escape(_format_value(row[c], c, scale)) for c in df.columns) + " |"
        for _, row in df.iterrows()
    ]
    return "\n".join([head, rule, *body])


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _tiers_sentence(board: pd.DataFrame) -> str:
    parts = []
    for tier, group in board.groupby("tier", sort=True):
        parts.append(f"tier {int(tier)}: " + ", ".join(str(m) for m in group["model"]))
    return "; ".join(parts)


def _judges_sentence(judges: pd.DataFrame) -> str:
    """Who follows the consensus most and least, who is flagged, who has the largest bias."""
    most = judges.loc[judges["gamma"].idxmax()]
    least = judges.loc[judges["gamma"].idxmin()]
    flagged = [str(j) for j in judges.loc[judges["high_leverage"].astype(bool), "judge"]]
    parts = [
        f"Most sensitive judge: {most['judge']} (γ = {most['gamma']:.2f}); least: "
        f"{least['judge']} (γ = {least['gamma']:.2f}).",
        "High sensitivity with high leverage: " + (", ".join(flagged) if flagged else "none") + ".",
    ]
    if "beta" in judges.columns:
        big = judges.loc[judges["beta"].abs().idxmax()]
        side = "first" if big["beta"] > 0 else "second"
        parts.append(f"Largest position bias: {big['judge']} (β = {big['beta']:.2f}, favours "
                     f"the answer shown {side}).")
    return " ".join(parts)


_FIGURE_CAPTIONS = {
    "forest": "Consensus scores with Wald intervals, best first; dotted lines separate tiers.",
    "judge_map": "Judges by sensitivity γ_k and leverage h_k; red: high sensitivity and high "
                 "leverage.",
    "residual": "Structured disagreement UVᵀ, judges and models ordered by biclustering: red, "
                "the judge rates the model above its consensus part; blue, below.",
    "win_probability": "Probability that the row model beats the column model for a judge of "
                       "average sensitivity without position bias.",
    "rank_posterior": "Posterior probability of every rank for every model.",
    "ppc": "Posterior predictive checks: each judge's win rate of each model (and of the "
           "first-shown answer) against its predictive interval, red when outside; "
           "calibration of predicted against observed win rates.",
}


def render_html(rep: Report, images: dict[str, bytes] | None = None) -> str:
    """The report as one self-contained HTML document (a string).

    Parameters
    ----------
    rep : Report
        From :func:`build_report`.
    images : dict, optional
        Figure name -> PNG bytes, when already rendered.

    Returns
    -------
    str
    """
    e = html.escape
    images = images or {name: _png(fig) for name, fig in rep.figures.items()}

    def figure(name: str) -> str:
        data = base64.b64encode(images[name]).decode("ascii")
        caption = _FIGURE_CAPTIONS.get(name, name)
        return (f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{e(caption)}</figcaption></figure>")

    board = rep.leaderboard
    top = board.iloc[0]
    level = f"{rep.level:.0%}"
    glance = (
        f"<p class=\"glance\"><b>{e(str(top['model']))}</b> ranks first "
        f"(score {e(_format_value(top['score'], 'score', rep.scale))}, {e(level)} interval "
        f"{e(_format_value(top['score_lower'], 'score', rep.scale))} to "
        f"{e(_format_value(top['score_upper'], 'score', rep.scale))}). "
        f"Models that cannot be told apart share a tier — {e(_tiers_sentence(board))}.</p>"
    )
    def board_class(pos, row):
        return "tier-odd" if int(row["tier"]) % 2 == 1 else ""

    def judge_class(pos, row):
        return "flag" if bool(row["high_leverage"]) else ""

    notes = "".join(f'<p class="note">{e(n)}</p>' for n in rep.notes)
    rank_section = ""
    if rep.rank_table is not None:
        rank_section = ("<h3>Rank selection</h3>"
                        + _html_table(rep.rank_table, "rank-table", rep.scale))
    entries = GLOSSARY + (BAYES_GLOSSARY if "rank_posterior" in rep.figures else ())
    glossary = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in entries)
    posterior_section = ""
    if "rank_posterior" in rep.figures:
        ratio = ""
        if rep.intervals is not None:
            med = rep.intervals.groupby("quantity")["width_ratio"].median()
            ratio = ("<p>Median width of the credible interval relative to the Wald interval: "
                     + e(", ".join(f"{q} {v:.2f}" for q, v in med.items()))
                     + " (all rows in intervals.csv).</p>")
        posterior_section = (
            "<h2>Posterior</h2>" + ratio
            + f'<div class="row"><div>{figure("rank_posterior")}</div></div>'
            + f"{figure('ppc')}"
        )
    from ..version import __version__

    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(rep.title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{e(rep.title)}</h1>
{glance}
{notes}
<h2>Leaderboard</h2>
{_html_table(board, "leaderboard", rep.scale, board_class)}
<p>Scores on the {e("Elo" if rep.scale == "elo" else "logit")} scale; intervals at {e(level)}
(Wald{e(", and credible from the posterior" if "rank_posterior" in rep.figures else "")}).
Rows are shaded by tier.</p>
<div class="row">
<div>{figure("forest")}</div>
<div>{figure("win_probability")}</div>
</div>
<h2>Judges</h2>
<p class="glance">{e(_judges_sentence(rep.judges))}</p>
{_html_table(rep.judges, "judges", rep.scale, judge_class)}
<div class="row">
<div>{figure("judge_map")}</div>
<div>{figure("residual")}</div>
</div>
{posterior_section}
<h2>Data and fit</h2>
<pre>{e(rep.data_summary)}</pre>
<pre>{e(rep.fit_summary)}</pre>
{rank_section}
<h2>Reading the tables</h2>
<dl>{glossary}</dl>
<footer>Written by hja_bayes {e(__version__)}. Pairwise tables: pairwise.csv beside this
file.</footer>
</body>
</html>
"""


def render_markdown(rep: Report, figure_files: dict[str, str] | None = None) -> str:
    """The report in Markdown (GitHub tables; user strings escaped).

    Parameters
    ----------
    rep : Report
    figure_files : dict, optional
        Figure name -> relative path of its PNG, to link the figures.

    Returns
    -------
    str
    """
    board = rep.leaderboard
    top = board.iloc[0]
    lines = [
        f"# {_md_escape(rep.title)}",
        "",
        f"**{_md_escape(top['model'])}** ranks first. Tiers (models that cannot be told "
        f"apart): {_md_escape(_tiers_sentence(board))}.",
        "",
    ]
    lines += [f"> {_md_escape(n)}\n" for n in rep.notes]
    lines += ["## Leaderboard", "", _md_table(board, rep.scale), "",
              f"Scores on the {'Elo' if rep.scale == 'elo' else 'logit'} scale; intervals at "
              f"{rep.level:.0%} (Wald).", ""]
    figure_files = figure_files or {}
    if "forest" in figure_files:
        lines += [f"![consensus scores]({figure_files['forest']})", ""]
    lines += ["## Judges", "", _md_escape(_judges_sentence(rep.judges)), "",
              _md_table(rep.judges, rep.scale), ""]
    for name in ("judge_map", "residual", "win_probability"):
        if name in figure_files:
            lines += [f"![{_md_escape(_FIGURE_CAPTIONS[name])}]({figure_files[name]})", ""]
    lines += ["## Data and fit", ""]
    summary = rep.data_summary + "\n" + rep.fit_summary
    lines += [f"- {_md_escape(line.strip())}" for line in summary.splitlines() if line.strip()]
    lines += [""]
    if rep.rank_table is not None:
        lines += ["### Rank selection", "", _md_table(rep.rank_table, rep.scale), ""]
    if "rank_posterior" in rep.figures:
        lines += ["## Posterior", ""]
        for name in ("rank_posterior", "ppc"):
            if name in figure_files:
                lines += [f"![{_md_escape(_FIGURE_CAPTIONS[name])}]({figure_files[name]})", ""]
    entries = GLOSSARY + (BAYES_GLOSSARY if "rank_posterior" in rep.figures else ())
    lines += ["## Reading the tables", ""]
    lines += [f"- **{_md_escape(k)}**: {_md_escape(v)}" for k, v in entries]
    return "\n".join(lines) + "\n"


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
    images = {name: _png(fig) for name, fig in rep.figures.items()}
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
