"""The report in Markdown (GitHub tables; figures linked as PNG files beside it)."""

from __future__ import annotations

from .content import Report
from .formatting import md_escape, md_table, shown_columns
from .html import interval_words
from .glossary import glossary

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
    figure_files = figure_files or {}

    def figures(*names: str) -> list[str]:
        out = []
        for name in names:
            if name in figure_files:
                out += [f"![{md_escape(rep.captions.get(name, name))}]({figure_files[name]})", ""]
        return out

    lines = [f"# {md_escape(rep.title)}", "", md_escape(rep.sentences["glance"]), ""]
    if rep.notes:  # the sentences point to them as "the notes"
        lines += ["### Notes", ""] + [f"> {md_escape(n)}\n" for n in rep.notes]
    lines += ["## Leaderboard", "", md_table(shown_columns(rep.leaderboard), rep.scale), "",
              f"Scores on the {'Elo' if rep.scale == 'elo' else 'logit'} scale; "
              f"{interval_words(rep)}.", ""]
    if "fragility" in rep.sentences:
        lines += [f"Fragility: {md_escape(rep.sentences['fragility'])}", ""]
    lines += figures("forest", "win_probability")
    lines += ["## Judges", "", md_escape(rep.sentences["judges"]), "",
              md_escape(rep.sentences["disagreement"]), "", md_table(rep.judges, rep.scale), ""]
    lines += figures("judge_map", "residual")
    if rep.biases is not None:
        lines += ["## Judge biases", "", md_escape(rep.sentences["biases"]), "",
                  md_table(rep.biases, rep.scale), ""]
        lines += figures("biases")
    if rep.agreement is not None:
        ag = rep.agreement
        lines += ["## Agreement", "", md_escape(rep.sentences["agreement"]), "",
                  md_table(ag.alpha, rep.scale), ""]
        if ag.reference is not None:
            lines += [f"### Against {md_escape(ag.reference.attrs['meta']['reference'])}", "",
                      md_table(ag.reference, rep.scale), ""]
        lines += ["### Pairs of judges", "", md_table(ag.kappa, rep.scale), ""]
    if rep.bayes:
        lines += ["## Posterior", "", md_escape(rep.sentences["convergence"]), "",
                  md_table(rep.convergence, rep.scale), ""]
        lines += figures("rank_posterior", "ppc")
    lines += ["## Data", ""]
    lines += [f"- {md_escape(line.strip())}" for line in rep.data_summary.splitlines()
              if line.strip()]
    lines += [""] + figures("observed_win_fraction", "battle_counts")
    lines += ["## Fit", ""]
    lines += [f"- {md_escape(line.strip())}" for line in rep.fit_summary.splitlines()
              if line.strip()]
    lines += [""]
    if rep.rank_table is not None:
        lines += ["### Rank selection", "", md_table(rep.rank_table, rep.scale), ""]
    entries = glossary(rep)
    lines += ["## Reading the tables", ""]
    lines += [f"- **{md_escape(k)}**: {md_escape(v)}" for k, v in entries]
    return "\n".join(lines) + "\n"
