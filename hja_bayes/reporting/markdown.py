"""The report in Markdown (GitHub tables; figures linked as PNG files beside it)."""

from __future__ import annotations

from .content import (
    BAYES_GLOSSARY,
    FIGURE_CAPTIONS,
    GLOSSARY,
    Report,
    judges_sentence,
    tiers_sentence,
)
from .formatting import md_escape, md_table

__all__ = ["render_markdown"]


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
        f"# {md_escape(rep.title)}",
        "",
        f"**{md_escape(top['model'])}** ranks first. Tiers (models that cannot be told "
        f"apart): {md_escape(tiers_sentence(board))}.",
        "",
    ]
    lines += [f"> {md_escape(n)}\n" for n in rep.notes]
    lines += ["## Leaderboard", "", md_table(board, rep.scale), "",
              f"Scores on the {'Elo' if rep.scale == 'elo' else 'logit'} scale; intervals at "
              f"{rep.level:.0%} (Wald).", ""]
    figure_files = figure_files or {}
    if "forest" in figure_files:
        lines += [f"![consensus scores]({figure_files['forest']})", ""]
    lines += ["## Judges", "", md_escape(judges_sentence(rep.judges)), "",
              md_table(rep.judges, rep.scale), ""]
    for name in ("judge_map", "residual", "win_probability"):
        if name in figure_files:
            lines += [f"![{md_escape(FIGURE_CAPTIONS[name])}]({figure_files[name]})", ""]
    lines += ["## Data and fit", ""]
    summary = rep.data_summary + "\n" + rep.fit_summary
    lines += [f"- {md_escape(line.strip())}" for line in summary.splitlines() if line.strip()]
    lines += [""]
    if rep.rank_table is not None:
        lines += ["### Rank selection", "", md_table(rep.rank_table, rep.scale), ""]
    if "rank_posterior" in rep.figures:
        lines += ["## Posterior", ""]
        for name in ("rank_posterior", "ppc"):
            if name in figure_files:
                lines += [f"![{md_escape(FIGURE_CAPTIONS[name])}]({figure_files[name]})", ""]
    entries = GLOSSARY + (BAYES_GLOSSARY if "rank_posterior" in rep.figures else ())
    lines += ["## Reading the tables", ""]
    lines += [f"- **{md_escape(k)}**: {md_escape(v)}" for k, v in entries]
    return "\n".join(lines) + "\n"
