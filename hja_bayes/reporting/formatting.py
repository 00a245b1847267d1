"""How a report writes a value: column labels, number formats, HTML and Markdown tables.

Every string that comes from the user (model and judge names, titles, notes) is escaped
here: :func:`html.escape` for HTML, :func:`md_escape` for Markdown, so a model called
``<script>...</script>`` is shown, never run.  :func:`csv_safe` keeps a name such as
``=HYPERLINK(...)`` from being read as a formula by a spreadsheet.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd

from ..bayes.diagnose import rhat_text

__all__ = ["COLUMN_LABELS", "POSTERIOR_PROBABILITIES", "column_label", "csv_safe", "format_value",
           "html_table",
           "is_text", "md_escape", "md_table", "shown_columns"]

#: Display names of the table columns (HTML and Markdown headers).
COLUMN_LABELS = {
    "model": "Model", "score": "Score", "score_lower": "Lower", "score_upper": "Upper",
    "rank": "Rank", "rank_ub": "Rank (UB)", "rank_lower": "Rank from", "rank_upper": "Rank to",
    "p_better_next": "P(better than next)", "tier": "Tier", "comparisons": "Comparisons",
    "judge": "Judge", "gamma": "γ", "gamma_lower": "γ lower", "gamma_upper": "γ upper",
    "beta": "β", "beta_lower": "β lower", "beta_upper": "β upper",
    "both_orders": "Both orders", "leverage": "Leverage h",
    "rho": "ρ", "high_leverage": "High γ and h", "rank_corr": "Kendall τ",
    "invalid_share": "Invalid",
    "model_a": "Model", "model_b": "Opponent", "difference": "Difference", "lower": "Lower",
    "upper": "Upper", "p_win": "P(win)", "p_win_lower": "P lower", "p_win_upper": "P upper",
    "significant": "Significant",
    "post_mean": "Posterior mean", "cred_lower": "Cred. lower", "cred_upper": "Cred. upper",
    "post_rank_lower": "Post. rank from", "post_rank_upper": "Post. rank to",
    "p_best": "P(best)", "post_p_better_next": "Post. P(better than next)",
    "gamma_post_mean": "γ post. mean",
    "gamma_cred_lower": "γ cred. lower", "gamma_cred_upper": "γ cred. upper",
    "beta_cred_lower": "β cred. lower", "beta_cred_upper": "β cred. upper",
    "nll": "NLL", "n_params": "Parameters", "bic": "BIC", "cv_nll": "CV NLL",
    "n_iter": "Iterations", "converged": "Converged", "stopped_early": "Stopped early",
    "skipped": "Skipped",
    "quantity": "Quantity", "entries": "Entries", "max_rhat": "Largest R-hat",
    "min_ess_bulk": "Smallest bulk ESS", "min_ess_tail": "Smallest tail ESS",
    "rating": "Rating", "rating_lower": "Lower", "rating_upper": "Upper",
    "variance": "Variance", "num_battles": "Battles",
    "measure": "Measure", "alpha": "α", "alpha_lower": "α lower", "alpha_upper": "α upper",
    "units": "Units", "values": "Values", "judges": "Judges", "judge_a": "Judge",
    "judge_b": "Other judge", "kappa": "κ", "kappa_lower": "κ lower", "kappa_upper": "κ upper",
    "accuracy": "Accuracy", "accuracy_lower": "Accuracy lower",
    "accuracy_upper": "Accuracy upper", "rank_change": "Rank change", "self": "Self",
    "self_lower": "Self lower", "self_upper": "Self upper",
    "nu": "ν (ties)", "nu_lower": "ν lower", "nu_upper": "ν upper",
    "nu_cred_lower": "ν cred. lower", "nu_cred_upper": "ν cred. upper",
    "unbounded": "Unbounded MLE",
}

def column_label(column: str) -> str:
    """The display name of a column: :data:`COLUMN_LABELS`, or for a term's coefficient
    (``style:length_lower``) or an ordered scale's cut gap (``gap_1_lower``) its readable
    form (``style: length lower``, ``Cut gap 1 lower``)."""
    if column.endswith(" [interval]"):  # a column of with_intervals
        return f"{column_label(column[:-len(' [interval]')])} [interval]"
    if column in COLUMN_LABELS:
        return COLUMN_LABELS[column]
    if column.startswith("style:"):
        name, _, bound = column[len("style:"):].rpartition("_")
        if bound in ("lower", "upper") and name:
            return f"style: {name} {bound}"
        return f"style: {column[len('style:'):]}"
    if column.startswith("gap_"):  # the ordered scale's cut gaps: gap_1, gap_1_lower, ...
        return "Cut " + column.replace("_cred", " cred.").replace("_", " ")
    return column


#: Probabilities estimated as shares of posterior draws: 0 and 1 mean "< 1/n", "> 1 - 1/n".
POSTERIOR_PROBABILITIES = ("p_best", "post_p_better_next")
_COUNTS = ("rank_change", "comparisons", "n_params", "n_iter", "entries", "min_ess_bulk", "min_ess_tail",
           "num_battles", "units", "values")
_SHARES = ("both_orders", "invalid_share")


def format_value(value, column: str, scale: str, n_draws: int | None = None) -> str:
    """One table cell as text: yes/no, whole counts, probabilities, scores on ``scale``.

    A posterior probability (:data:`POSTERIOR_PROBABILITIES`) of exactly 0 or 1 from
    ``n_draws`` draws is written ``< 1/n_draws`` or ``> 1 − 1/n_draws``: that is all the
    draws can say.  Other probabilities are written to three decimals, ``< 0.001`` and
    ``> 0.999`` at the ends.  NaN (or a missing value, ``pd.NA``) is written as an en dash.
    """
    if value is pd.NA:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}" if column in _COUNTS else str(int(value))
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "–"
        text = _float_text(x, column, scale, n_draws)
        # a small negative number rounded to zero reads as zero ("-0.000" had been shown)
        return text[1:] if text.startswith("-") and not re.search("[1-9]", text) else text
    return str(value)


def _float_text(x: float, column: str, scale: str, n_draws: int | None) -> str:
    """A finite number of ``column`` as :func:`format_value` writes it."""
    if column == "max_rhat":
        return rhat_text(x)  # 3 decimals; chains stuck apart (about 1e16) as 9.86e+15
    if column.startswith("min_ess"):
        return f"{x:,.0f}"  # an effective sample size: its decimals mean nothing
    if column in _COUNTS:
        return f"{x:,.0f}" if x == round(x) else f"{x:,.1f}"
    if column in _SHARES:
        return f"{100 * x:.0f}%" if x in (0.0, 1.0) else f"{100 * x:.1f}%"
    if column in POSTERIOR_PROBABILITIES and n_draws:
        if x <= 0.0:
            return f"< 1/{n_draws:,}"
        if x >= 1.0:
            return f"> 1 − 1/{n_draws:,}"
        return f"{x:.3f}"
    if column.startswith("p_"):
        return "> 0.999" if x >= 0.9995 else "< 0.001" if x < 0.0005 else f"{x:.3f}"
    if scale == "elo" and (column.startswith(("score", "cred_", "rating")) or column in (
            "post_mean", "difference", "lower", "upper")):
        return f"{x:.0f}"
    if column in ("nll", "bic", "cv_nll", "variance"):
        return f"{x:.2f}"
    return f"{x:.3f}"


def with_intervals(df: pd.DataFrame, scale: str) -> pd.DataFrame:
    """``df`` for reading: each column ``c`` with ``c_lower`` and ``c_upper`` beside it
    becomes one text column ``c [lower, upper]`` (a wide table of judge biases otherwise
    runs off the page)."""
    out = {}
    for c in df.columns:
        if c.endswith(("_lower", "_upper")) and c.rsplit("_", 1)[0] in df.columns:
            continue
        if f"{c}_lower" in df.columns and f"{c}_upper" in df.columns:
            out[f"{c} [interval]"] = [
                "–" if pd.isna(v) else f"{format_value(v, c, scale)} "
                f"[{format_value(lo, c, scale)}, {format_value(hi, c, scale)}]"
                .replace(" [–, –]", "")
                for v, lo, hi in zip(df[c], df[f"{c}_lower"], df[f"{c}_upper"])]
        else:
            out[c] = df[c].to_numpy()
    return pd.DataFrame(out)


def shown_columns(board: pd.DataFrame) -> pd.DataFrame:
    """A leaderboard as a report shows it: its ``unbounded`` column only where it marks a
    model (a column of "no" on every panel with a finite optimum would be noise)."""
    if "unbounded" in board.columns and not board["unbounded"].fillna(False).any():
        return board.drop(columns="unbounded")
    return board


def is_text(column: str) -> bool:
    """Whether a column holds names (left-aligned) rather than numbers."""
    return column in ("model", "judge", "model_a", "model_b", "quantity", "measure", "judge_a",
                      "judge_b")


def html_table(df: pd.DataFrame, table_id: str, scale: str, row_class=None) -> str:
    """An HTML ``<table id=table_id>`` of ``df``; ``row_class(pos, row)`` names a row's class.

    ``df.attrs["n_draws"]``, when set, is used for the posterior probabilities.
    """
    e = html.escape
    n_draws = df.attrs.get("n_draws")
    head = "".join(
        f'<th class="text">{e(column_label(c))}</th>' if is_text(c)
        else f"<th>{e(column_label(c))}</th>"
        for c in df.columns
    )
    rows = []
    for pos, (_, row) in enumerate(df.iterrows()):
        cls = row_class(pos, row) if row_class else ""
        cells = "".join(
            f'<td class="text">{e(format_value(row[c], c, scale, n_draws))}</td>' if is_text(c)
            else f"<td>{e(format_value(row[c], c, scale, n_draws))}</td>"
            for c in df.columns
        )
        rows.append(f'<tr class="{e(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return (f'<div class="scroll"><table id="{e(table_id)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


_MD_SPECIAL = re.compile(r"([\\`*\[\]|]|<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;))")
_MD_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_escape(text) -> str:
    """User text made inert in Markdown: one line, no HTML, no emphasis, no table breaks.

    Backslash escapes (CommonMark) rather than HTML entities, so the text reads the same in
    a plain-text viewer and in a renderer: ``<script>`` becomes ``\\<script>``, which renders
    as the literal ``<script>``; ``>``, and ``<`` or ``&`` that cannot open a tag or an
    entity, are left alone (``< 0.001`` stays as it is).
    """
    text = " ".join(str(text).splitlines())
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return _MD_EDGE_UNDERSCORE.sub(r"\\_", text)


def md_table(df: pd.DataFrame, scale: str) -> str:
    """A GitHub-flavoured Markdown table of ``df``."""
    n_draws = df.attrs.get("n_draws")
    head = "| " + " | ".join(md_escape(column_label(c)) for c in df.columns) + " |"
    rule = "|" + "|".join(":---" if is_text(c) else "---:" for c in df.columns) + "|"
    body = [
        "| " + " | ".join(md_escape(format_value(row[c], c, scale, n_draws))
                          for c in df.columns) + " |"
        for _, row in df.iterrows()
    ]
    return "\n".join([head, rule, *body])


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells cannot start a spreadsheet formula.

    Text that starts with ``= + - @``, a tab or a carriage return gets a leading ``'``
    (OWASP's advice against CSV injection); numbers are untouched.  The index, when it
    holds names, is treated the same way.
    """
    def neutral(x):
        return "'" + x if isinstance(x, str) and x.startswith(_FORMULA_START) else x

    out = df.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(neutral)
    out.columns = [neutral(c) for c in out.columns]
    if out.index.dtype == object:
        out.index = out.index.map(neutral)
    return out
