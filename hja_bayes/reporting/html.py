"""The report as one self-contained HTML document.

The document carries everything it shows: styles inline (light, and dark when the reader's
system asks for it), figures as base64 PNG data URIs, no scripts and no external links.
Every user string is escaped (:func:`html.escape`).
"""

from __future__ import annotations

import base64
import html
import io

import pandas as pd

from .content import Report
from .convergence import beyond_chance
from .formatting import html_table, shown_columns, with_intervals
from .glossary import glossary
from .sentences import width_sentence

__all__ = ["CSS", "interval_words", "png", "render_html"]

CSS = """
:root { color-scheme: light dark; }
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1240px; color: #222; background: #fff; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.3em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.8em; }
.scroll { overflow-x: auto; margin-right: min(0px, calc(50% - 50vw + 1em)); }
/* wide tables reach the window's right edge before they scroll */
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f2f4f7; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
td.text { white-space: normal; overflow-wrap: anywhere; max-width: 32em; } /* long names wrap */
tr.flag td { background: #fdecea; }
tr.tier-odd td { background: #f3f6fb; }
.glance { font-size: 1.05em; background: #eef4fb; border-left: 4px solid #1f5fa8;
          padding: 0.5em 1em; overflow-wrap: anywhere; }
.note { background: #fff6e0; border-left: 4px solid #e0a800; padding: 0.4em 1em; }
.row { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.row > figure { flex: 0 1 auto; max-width: 100%; }
figure { margin: 0.8em 0; display: table; }
figcaption { display: table-caption; caption-side: bottom; font-size: 0.85em; color: #555;
             padding-top: 0.3em; }
img { max-width: 100%; height: auto; background: #fff; }
pre { background: #f6f6f6; padding: 0.6em; font-size: 0.85em; white-space: pre-wrap; }
dl dt { font-weight: bold; } dl dd { margin: 0 0 0.4em 1.5em; }
footer { color: #777; font-size: 0.8em; margin-top: 2em; }
@media (prefers-color-scheme: dark) {
  body { color: #ddd; background: #15171a; }
  h2 { border-bottom-color: #444; }
  th, td { border-color: #3a3f46; }
  th { background: #252a31; }
  tr.flag td { background: #4a2323; }
  tr.tier-odd td { background: #1d2228; }
  .glance { background: #1b2836; border-left-color: #5b9bd5; }
  .note { background: #352c16; border-left-color: #c99a06; }
  figcaption, footer { color: #aaa; }
  pre { background: #1f2226; }
  img { border-radius: 3px; }
}
"""


def png(fig) -> bytes:
    """A matplotlib Figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, facecolor="white")
    return buffer.getvalue()


def interval_words(rep: Report) -> str:
    """What the intervals are, e.g. "95% Wald intervals (Fisher information)"."""
    meta = rep.leaderboard.attrs.get("meta", {})
    cov = meta.get("cov_type", "fisher")
    how = {"fisher": "Fisher information", "sandwich": "sandwich covariance",
           "cluster": "cluster-robust covariance by prompt"}.get(cov, cov)
    if cov == "cluster" and meta.get("n_clusters"):
        column = meta.get("cluster_column")
        how += (f" ({'column ' + repr(column) + ', ' if column else ''}"
                f"{meta['n_clusters']:,} clusters, {meta['effective_clusters']:,.1f} effective; "
                + ("CR2, t quantiles with Satterthwaite degrees of freedom)"
                   if meta.get("small_sample") == "CR2" else "CR1, normal quantiles)"))
    text = f"{rep.level:.0%} Wald intervals ({how})"
    if rep.bayes:
        text += " and credible intervals from the posterior draws"
        if rep.leaderboard.attrs.get("posterior_consensus") == "mu_marginal":
            text += (" (with prompt effects: of the population-averaged consensus "
                     "mu_marginal, on the Wald intervals' scale)")
    pin = meta.get("baseline")
    if pin:
        text += (f"; {pin['model']} is pinned at {pin['score']:g}, and every other interval is "
                 "that of the model's difference to it")
    return text


#: The posterior's columns of a leaderboard (:func:`~hja_bayes.reporting.leaderboard`).
POSTERIOR_COLUMNS = ("post_mean", "cred_lower", "cred_upper", "post_rank_lower",
                     "post_rank_upper", "p_best", "post_p_better_next")


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
        if name not in images:
            return ""
        data = base64.b64encode(images[name]).decode("ascii")
        caption = rep.captions.get(name, name)
        return (f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{e(caption)}</figcaption></figure>")

    def row(*names: str) -> str:
        return '<div class="row">' + "".join(figure(n) for n in names) + "</div>"

    def board_class(pos, r):
        return "" if pd.isna(r["tier"]) else "tier-odd" if int(r["tier"]) % 2 == 1 else ""

    def judge_class(pos, r):
        return "flag" if "high_leverage" in r and bool(r["high_leverage"]) else ""

    # with a posterior, its columns in a second table of the same rows: 19 columns in one
    # had run off the page at 1,920 pixels
    board, boards = shown_columns(rep.leaderboard), ""
    posterior = [c for c in board.columns if c in POSTERIOR_COLUMNS]
    if posterior:
        tiers = list(board["tier"])
        boards = ("<h3>The same models by the posterior</h3>" + html_table(
            board[["model", *posterior]], "leaderboard-posterior", rep.scale,
            lambda pos, r: board_class(pos, {"tier": tiers[pos]})))
        board = board.drop(columns=posterior)
    boards = html_table(board, "leaderboard", rep.scale, board_class) + boards
    notes = ("<h3>Notes</h3>" + "".join(f'<p class="note">{e(n)}</p>' for n in rep.notes)
             if rep.notes else "")  # the sentences below point to them as "the notes"
    fragility = ""
    if "fragility" in rep.sentences:
        fragility = f'<p class="glance">Fragility: {e(rep.sentences["fragility"])}</p>'

    N = len(rep.leaderboard)
    pairwise_words = ("; the pairwise table is in pairwise.csv" if rep.pairwise_file else
                      f"; the pairwise table ({N * (N - 1):,} ordered pairs) is not written at "
                      "this size: report(..., pairwise=True) or 'hja-bayes report --pairwise' "
                      "writes it")
    rank_section = ""
    if rep.rank_table is not None:
        rank_section = ("<h3>Rank selection</h3>"
                        + html_table(rep.rank_table, "rank-table", rep.scale))
    entries = glossary(rep)
    terms = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in entries)
    posterior_section = ""
    if rep.bayes:
        # rows above the R-hat limit are shaded where more are there than agreeing chains
        # put by chance (2 x 200 draws put most rows there: the sentence says so)
        shade = beyond_chance(rep.convergence)
        ratio = ""
        if rep.intervals is not None:
            ratio = "<p>" + e(width_sentence(rep.intervals)) + "</p>"
        posterior_section = (
            "<h2>Posterior</h2>"
            f"<p>{e(rep.sentences['convergence'])}</p>"
            + html_table(rep.convergence, "convergence", rep.scale, lambda pos, r: "flag"
                         if shade and r["max_rhat"] > rep.convergence.attrs["rhat_limit"]
                         else "")
            + ratio
            + row("rank_posterior") + row("ppc")
        )
    bias_section = ""
    if rep.biases is not None:
        bias_section = ("<h2>Judge biases</h2>"
                        f'<p class="glance">{e(rep.sentences["biases"])}</p>'
                        + html_table(with_intervals(rep.biases, rep.scale), "judge-biases",
                                     rep.scale) + row("biases"))
    agreement_section = ""
    if rep.agreement is not None:
        ag = rep.agreement
        agreement_section = (
            "<h2>Agreement</h2>"
            f'<p class="glance">{e(rep.sentences["agreement"])}</p>'
            + html_table(ag.alpha, "agreement-alpha", rep.scale)
            + ("" if ag.reference is None else
               f"<h3>Against {e(str(ag.reference.attrs['meta']['reference']))}</h3>"
               + html_table(ag.reference, "agreement-reference", rep.scale))
            + "<h3>Pairs of judges</h3>" + html_table(ag.kappa, "agreement-kappa", rep.scale))
    from ..version import __version__

    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{e(rep.title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{e(rep.title)}</h1>
<p class="glance">{e(rep.sentences["glance"])}</p>
{notes}
<h2>Leaderboard</h2>
{boards}
<p>Scores on the {e("Elo" if rep.scale == "elo" else "logit")} scale; {e(interval_words(rep))}.
{"" if rep.leaderboard["tier"].isna().all() else "Rows are shaded by tier."}</p>
{fragility}
{row("forest", "win_probability")}
<h2>Judges</h2>
<p class="glance">{e(rep.sentences["judges"])}</p>
<p>{e(rep.sentences["disagreement"])}</p>
{html_table(rep.judges, "judges", rep.scale, judge_class)}
{row("judge_map", "residual")}
{bias_section}
{agreement_section}
{posterior_section}
<h2>Data</h2>
<pre>{e(rep.data_summary)}</pre>
{row("observed_win_fraction", "battle_counts")}
<h2>Fit</h2>
<pre>{e(rep.fit_summary)}</pre>
{rank_section}
<h2>Reading the tables</h2>
<dl>{terms}</dl>
<footer>Written by hja_bayes {e(__version__)}. Every table is also beside this file as CSV and
as JSON (with a "meta" block saying what its intervals are){pairwise_words}.</footer>
</body>
</html>
"""
