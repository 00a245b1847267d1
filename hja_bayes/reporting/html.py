"""The report as one self-contained HTML document.

The document carries everything it shows: styles inline, figures as base64 PNG data URIs,
no scripts and no external links.  Every user string is escaped (:func:`html.escape`).
"""

from __future__ import annotations

import base64
import html
import io

from .content import (
    BAYES_GLOSSARY,
    FIGURE_CAPTIONS,
    GLOSSARY,
    Report,
    judges_sentence,
    tiers_sentence,
)
from .formatting import format_value, html_table

__all__ = ["png", "render_html"]

CSS = """
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


def png(fig) -> bytes:
    """A matplotlib Figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def render_html(rep: Report, images: dict[str, bytes] | None = None) -> str:
    """The report as one self-contained HTML document (a string).

    Parameters
    ----------
    rep : Report
        From :func:`~hja_bayes.reporting.build_report`.
    images : dict, optional
        Figure name -> PNG bytes, when already rendered.

    Returns
    -------
    str
    """
    e = html.escape
    images = images or {name: png(fig) for name, fig in rep.figures.items()}

    def figure(name: str) -> str:
        data = base64.b64encode(images[name]).decode("ascii")
        caption = FIGURE_CAPTIONS.get(name, name)
        return (f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{e(caption)}</figcaption></figure>")

    board = rep.leaderboard
    top = board.iloc[0]
    level = f"{rep.level:.0%}"
    glance = (
        f"<p class=\"glance\"><b>{e(str(top['model']))}</b> ranks first "
        f"(score {e(format_value(top['score'], 'score', rep.scale))}, {e(level)} interval "
        f"{e(format_value(top['score_lower'], 'score', rep.scale))} to "
        f"{e(format_value(top['score_upper'], 'score', rep.scale))}). "
        f"Models that cannot be told apart share a tier — {e(tiers_sentence(board))}.</p>"
    )

    def board_class(pos, row):
        return "tier-odd" if int(row["tier"]) % 2 == 1 else ""

    def judge_class(pos, row):
        return "flag" if bool(row["high_leverage"]) else ""

    notes = "".join(f'<p class="note">{e(n)}</p>' for n in rep.notes)
    rank_section = ""
    if rep.rank_table is not None:
        rank_section = ("<h3>Rank selection</h3>"
                        + html_table(rep.rank_table, "rank-table", rep.scale))
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
<style>{CSS}</style>
</head>
<body>
<h1>{e(rep.title)}</h1>
{glance}
{notes}
<h2>Leaderboard</h2>
{html_table(board, "leaderboard", rep.scale, board_class)}
<p>Scores on the {e("Elo" if rep.scale == "elo" else "logit")} scale; intervals at {e(level)}
(Wald{e(", and credible from the posterior" if "rank_posterior" in rep.figures else "")}).
Rows are shaded by tier.</p>
<div class="row">
<div>{figure("forest")}</div>
<div>{figure("win_probability")}</div>
</div>
<h2>Judges</h2>
<p class="glance">{e(judges_sentence(rep.judges))}</p>
{html_table(rep.judges, "judges", rep.scale, judge_class)}
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
