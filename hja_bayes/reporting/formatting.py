"""How a report writes a value: column labels, number formats, HTML and Markdown tables.

Every string that comes from the user (model and judge names, titles, notes) is escaped
here: :func:`html.escape` for HTML, :func:`md_escape` for Markdown, so a model called
``<script>...</script>`` is shown, never run.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

__all__ = ["COLUMN_LABELS", "format_value", "html_table", "is_text", "md_escape", "md_table"]

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


def format_value(value, column: str, scale: str) -> str:
    """One table cell as text: yes/no, whole counts, probabilities, scores on ``scale``."""
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


def is_text(column: str) -> bool:
    """Whether a column holds names (left-aligned) rather than numbers."""
    return column in ("model", "judge", "model_a", "model_b")


def html_table(df: pd.DataFrame, table_id: str, scale: str, row_class=None) -> str:
    """An HTML ``<table id=table_id>`` of ``df``; ``row_class(pos, row)`` names a row's class."""
    e = html.escape
    head = "".join(
        f'<th class="text">{e(COLUMN_LABELS.get(c, c))}</th>' if is_text(c)
        else f"<th>{e(COLUMN_LABELS.get(c, c))}</th>"
        for c in df.columns
    )
    rows = []
    for pos, (_, row) in enumerate(df.iterrows()):
        cls = row_class(pos, row) if row_class else ""
        cells = "".join(
            f'<td class="text">{e(format_value(row[c], c, scale))}</td>' if is_text(c)
            else f"<td>{e(format_value(row[c], c, scale))}</td>"
            for c in df.columns
        )
        rows.append(f'<tr class="{e(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return (f'<table id="{e(table_id)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def md_escape(text: str) -> str:
    """User text made inert in Markdown (no HTML, one line, no table breaks)."""
    text = html.escape(str(text), quote=False)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(df: pd.DataFrame, scale: str) -> str:
    """A GitHub-flavoured Markdown table of ``df``."""
    head = "| " + " | ".join(md_escape(COLUMN_LABELS.get(c, c)) for c in df.columns) + " |"
    rule = "|" + "|".join(":---" if is_text(c) else "---:" for c in df.columns) + "|"
    body = [
        "| " + " | ".join(md_escape(format_value(row[c], c, scale)) for c in df.columns) + " |"
        for _, row in df.iterrows()
    ]
    return "\n".join([head, rule, *body])
