"""The words of a report: title, one-paragraph readings of the tables, captions (the notes:
:mod:`.notes`).

Each function reads a table (or the fit's own fields) and says what it shows; none computes
a statistic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..bayes.diagnose import STUCK_MEANING, STUCK_RHAT, rhat_text
from ..diagnostics import RHO_THRESHOLD
from ..summary import about, listed
from .fitted import interval_name
from .formatting import format_value
from .pairwise import win_probability_meaning

__all__ = ["agreement_sentence", "biases_sentence", "captions", "clusters_note",
           "convergence_sentence", "default_title", "disagreement_sentence", "glance_sentence",
           "judges_sentence", "named", "plural", "prompt_method_sentence", "tiers_sentence",
           "width_sentence"]


def plural(n: float, word: str, many: str | None = None) -> str:
    """``"1 judge"``, ``"3 judges"``, ``"1,200 comparisons"``."""
    count = f"{n:,.0f}" if float(n) == round(float(n)) else f"{n:,.1f}"
    return f"{count} {word if float(n) == 1 else (many or word + 's')}"


def default_title(data) -> str:
    """A title from the data, e.g. ``"5 models ranked by 5 judges (8,000 comparisons)"``."""
    return (f"{plural(data.n_items, 'model')} ranked by {plural(data.n_judges, 'judge')} "
            f"({plural(data.n_comparisons, 'comparison')})")


def tiers_sentence(board: pd.DataFrame, most: int = 30) -> str:
    """"tier 1: a, b; tier 2: c" from a leaderboard, naming about ``most`` models at most."""
    parts, named = [], 0
    for tier, group in board.groupby("tier", sort=True):
        if named and named + len(group) > most:  # a 1,000-model board's would fill a page
            return "; ".join(parts + [f"then {plural(len(board) - named, 'more model')} in "
                                      f"tiers {int(tier)} to {int(board['tier'].max())}"])
        names = [str(m) for m in group["model"]]
        parts.append(f"tier {int(tier)}: " + ", ".join(names[:most])
                     + (f" and {len(names) - most} more" if len(names) > most else ""))
        named += len(names)
    return "; ".join(parts)


def glance_sentence(board: pd.DataFrame, level: float, scale: str) -> str:
    """Who ranks first, with its interval, and the tiers."""
    top = board.iloc[0]

    def f(x):
        return format_value(x, "score", scale)

    pin = board.attrs.get("meta", {}).get("baseline") or {}
    first = (f"{top['model']} ranks first (score {f(top['score'])}, the pinned baseline). "
             if pin.get("model") == top["model"] else
             f"{top['model']} ranks first (score {f(top['score'])}, {level:.0%} interval "
             f"{f(top['score_lower'])} to {f(top['score_upper'])}"
             + (f", of its difference to {pin['model']}, pinned at {f(pin['score'])}). "
                if pin else "). "))
    unbounded = top.get("unbounded")
    if unbounded is not None and not pd.isna(unbounded) and bool(unbounded):
        first += ("Its score has no finite maximum-likelihood value (Unbounded MLE, see the "
                  "notes): the fit's ridge sets it, and its interval and place say little. ")
    if board["tier"].isna().all():  # too few prompts for a joint statement
        return first + "There are no tiers or rank intervals: too few prompts (see the notes)."
    upper = top.get("rank_upper")  # a first named without its doubt had misled
    if upper is not None and not pd.isna(upper) and int(upper) > 1:
        first += (f"Its rank interval runs from 1 to {int(upper)}: the data do not settle "
                  "first place. ")
    n_tiers = int(board["tier"].max())
    return first + ("No two models can be told apart at this level: they share one tier."
                    if n_tiers == 1 and len(board) > 1 else
                    f"{plural(n_tiers, 'tier')} — {tiers_sentence(board)}. Within a tier no "
                    "two models can be told apart (jointly, at this level); going down the "
                    "ranking, a model opens the next tier once it is clearly below one member "
                    "of the current tier, so it may still be indistinguishable from others "
                    "there (the rank intervals show which).")


def _gamma(judge) -> str:
    """A judge's γ with its interval where the table has one (a judge of few verdicts can
    top the panel with an interval from 1.7 to 4.8)."""
    lower, upper = judge.get("gamma_lower"), judge.get("gamma_upper")
    if lower is None or upper is None or pd.isna(lower) or pd.isna(upper):
        return f"γ = {judge['gamma']:.2f}"
    return f"γ = {judge['gamma']:.2f}, interval {lower:.2f} to {upper:.2f}"


def judges_sentence(judges: pd.DataFrame, locked=()) -> str:
    """Who follows the consensus most and least, who is flagged, who has the largest bias;
    not the ``locked`` (on one slot, no position bias): their γ measures the order shown."""
    if len(judges) == 1:  # gamma averages 1 over the judges: one judge's is 1 by definition
        parts = [f"One judge ({judges['judge'].iloc[0]}): the consensus is its own ranking, "
                 "and its sensitivity γ is 1 by definition."]
    else:
        free = judges[~judges["judge"].isin(list(locked))]
        free = free if len(free) > 1 else judges
        most = free.loc[free["gamma"].idxmax()]
        least = free.loc[free["gamma"].idxmin()]
        parts = [f"Most sensitive judge: {most['judge']} ({_gamma(most)}); least: "
                 f"{least['judge']} ({_gamma(least)})"
                 + (f", leaving out {named([str(j) for j in locked], len(judges))}, whose γ "
                    "follows the slot they chose (see the notes)." if len(free) < len(judges)
                    else ".")]
    if "high_leverage" in judges.columns:
        flagged = [str(j) for j in judges.loc[judges["high_leverage"].astype(bool), "judge"]]
        parts.append("High sensitivity with high leverage: "
                     + (named(flagged, len(judges)) if flagged else "none") + ".")
    if "beta" in judges.columns:
        big = judges.loc[judges["beta"].abs().idxmax()]
        side = "first" if big["beta"] > 0 else "second"
        parts.append(f"Largest position bias: {big['judge']} (β = {big['beta']:.2f}, favours "
                     f"the answer shown {side}).")
    return " ".join(parts)


def disagreement_sentence(fit) -> str:
    """Whether the judges disagree in a structured way, in one sentence."""
    if fit.rank == 0:  # "found" only where a search looked (a fixed rank 0 had said it too)
        how = ("No structured disagreement was found (rank selection chose rank 0)"
               if fit.rank_table is not None else "The model was fitted at rank 0, without "
               "structured disagreement (rank='bic', --rank bic, would look for it)")
        return (f"{how}: each judge's scores are its sensitivity times the consensus, "
                "S = γμᵀ, so leverage and the residual map are left out.")
    return (f"The judges disagree in a structured way beyond their sensitivity (rank "
            f"{fit.rank}): the leverage columns and the residual map show who and on which "
            "models.")


def clusters_note(meta: dict, few: float) -> str | None:
    """A note when the cluster-robust intervals rest on fewer than ``few`` effective
    clusters, or on too few for the joint rank intervals (from a table's meta), else None."""
    if meta.get("cov_type") != "cluster":
        return None
    joint = meta.get("joint_refusal")
    joint = joint and f"There are no joint rank intervals or tiers: {joint}."
    if meta.get("effective_clusters", few) >= few:
        return joint or None
    column = meta.get("cluster_column")
    source = f" (column {column!r})" if column else ""
    how = ("bias-reduced CR2 covariance with t quantiles of Satterthwaite degrees of freedom"
           if meta.get("small_sample") == "CR2" else "CR1 covariance with normal quantiles, "
           "which is too narrow there")
    return (f"The intervals rest on few prompts: {plural(meta['n_clusters'], 'cluster')}"
            f"{source}, {meta['effective_clusters']:.1f} effective once their sizes are "
            f"weighed; they use the {how}. " + (joint or "In the joint rank intervals each "
                                                "difference has its own degrees of freedom."))


def convergence_sentence(table: pd.DataFrame) -> str:
    """Draws, divergences and the worst R-hat / ESS, in one sentence."""
    a = table.attrs
    worst = table["max_rhat"].max()
    ess = table["min_ess_bulk"].min()
    above = ""
    if worst > a["rhat_limit"]:
        above = f" (above {a['rhat_limit']}"
        if a.get("rhat_above"):
            above += (f" in {a['rhat_above']:,} of {a['rhat_entries']:,} entries; chains that "
                      f"agree would put about {about(a['rhat_by_chance'])} there by chance at "
                      "these effective sample sizes")
        above += ")"
    if worst >= STUCK_RHAT:
        above = above[:-1] + f"; {STUCK_MEANING})"
    rhat = f"largest R-hat {rhat_text(worst)}{above}" if not np.isnan(worst) else (
        "R-hat not computed (it compares 2 or more chains of at least 4 draws: nothing checks "
        "that the sampler converged)")
    return (f"{plural(a['n_draws'], 'draw')} from {plural(a['n_chains'], 'chain')}, "
            f"{plural(a['divergences'], 'divergent transition')}; {rhat}, smallest bulk ESS "
            f"{ess:,.0f}.")


def prompt_method_sentence(table: pd.DataFrame, clustered: bool = False) -> str:
    """How the sampler handled the answer (prompt) effects and why; without them "", or,
    where the data name prompts (``clustered``), that the credible intervals ignore them."""
    a = table.attrs
    method, why = a.get("prompt_method", "none"), a.get("prompt_method_reason", "")
    text = {"integrated": "The answer effects were integrated out of the likelihood",
            "sampled": "NUTS sampled every answer effect"}.get(method)
    if text is None:
        return ("The posterior has no answer effects: its credible intervals take the "
                "verdicts as independent, while the Wald intervals beside them are "
                "cluster-robust over the prompts, so the credible ones are narrower where "
                "verdicts on one prompt agree (sample with answer effects to compare like "
                "with like)." if clustered and method == "none" else "")
    return text + (f" ({why})." if why else ".")


def width_sentence(intervals) -> str:
    """Median width of the credible intervals relative to the Wald ones, per quantity, for
    the rows on one scale; the others (per-prompt coefficients of a model with prompt
    effects) are named, not compared."""
    same = intervals[intervals["scale"] == "marginal"] if "scale" in intervals else intervals
    med = same.groupby("quantity", sort=False)["width_ratio"].median()
    text = ("Median width of the credible interval relative to the Wald interval: "
            + ", ".join(f"{q} {v:.2f}" for q, v in med.items()) + " (all rows in intervals.csv).")
    other = sorted(set(intervals["quantity"]) - set(med.index))
    if other:
        text += (f" Not compared: {', '.join(other)}, whose posterior is per prompt (answers "
                 "of typical quality), while the Wald intervals average over the prompts.")
    return text


def biases_sentence(table) -> str:
    """The judge biases in words: the panel's style pulls, the largest self-preference and
    position bias, with their intervals."""
    from .biases import PANEL

    judges = table[table["judge"] != PANEL]
    panel = table[table["judge"] == PANEL]
    parts = []

    def value(row, name):
        return f"{row[name]:.2f} [{row[f'{name}_lower']:.2f}, {row[f'{name}_upper']:.2f}]"

    for column in (c for c in table.columns if c.startswith("style:") and
                   not c.endswith(("_lower", "_upper"))):
        feature = column.split(":", 1)[1]
        text = (f"a one-sd difference in {feature} moves a verdict by {value(panel.iloc[0], column)}"
                " logits for the panel")
        known = judges.dropna(subset=[column])
        if len(known) > 1:
            lo, hi = known.loc[known[column].idxmin()], known.loc[known[column].idxmax()]
            text += (f" (from {lo[column]:.2f} for {lo['judge']} to {hi[column]:.2f} for "
                     f"{hi['judge']})")
        parts.append(text)
    for column, what in (("self", "self-preference"), ("beta", "position bias")):
        known = judges.dropna(subset=[column]) if column in table else judges.iloc[:0]
        if len(known):
            top = known.loc[known[column].abs().idxmax()]
            parts.append(f"the largest {what} is {top['judge']}'s: {value(top, column)}")
    if not parts:
        return "No bias terms were fitted."
    text = "; ".join(parts)
    transform = table.attrs.get("meta", {}).get("feature_transform")
    unit = f" A style feature's difference between the two answers is {transform}." if (
        transform and any(c.startswith("style:") for c in table.columns)) else ""
    return text[0].upper() + text[1:] + "." + unit


def agreement_sentence(agreement) -> str:
    """Krippendorff's alpha of the panel and the range of accuracies against the reference."""
    alpha = agreement.alpha.set_index("measure")
    meta = agreement.alpha.attrs["meta"]

    def value(row, name):
        lo, hi = row[f"{name}_lower"], row[f"{name}_upper"]
        bounds = "" if np.isnan(lo) else f" [{lo:.2f}, {hi:.2f}]"
        return f"{row[name]:.2f}{bounds}"

    first = alpha.iloc[0]
    text = (f"Krippendorff's α of {plural(first['judges'], 'judge')} over "
            f"{plural(first['units'], 'unit')} (a prompt, a pair of models, an order) judged "
            "by at least two: "
            + ", ".join(f"{m} {value(r, 'alpha')}" for m, r in alpha.iterrows()))
    if meta["n_boot"]:
        replicates = plural(meta["n_boot"], "bootstrap replicate")
        text += (f" ({meta['level']:.0%} intervals from {replicates} of the "
                 f"{plural(meta['n_prompts'], 'prompt')})")
    text += "."
    reference = agreement.reference
    if reference is not None:
        ref_meta = reference.attrs["meta"]
        known = reference.dropna(subset=["accuracy"])
        if len(known):
            best = known.loc[known["accuracy"].idxmax()]
            worst = known.loc[known["accuracy"].idxmin()]
            text += (f" Against {ref_meta['reference']}, accuracy ranges from "
                     f"{value(worst, 'accuracy')} ({worst['judge']}) to "
                     f"{value(best, 'accuracy')} ({best['judge']}).")
        split = ref_meta.get("reference_split", 0)
        if split:
            text += (f" {plural(split, 'unit')} where the reference's verdicts tied for most "
                     "frequent were left out.")
    return text


def named(names, of: int, most: int = 20, table: str = "the judges table") -> str:
    """``names`` joined by commas, the first ``most`` of them and a count of the rest (a
    crowd's judge list would fill the page), ``of`` saying how many there are in all and
    ``table`` where they are all listed."""
    names = list(names)
    if len(names) <= most:
        return listed(names)
    return f"{listed(names, most)} ({len(names):,} of {of:,}; {table} has them all)"


def captions(fit, level: float, bayes: bool = False, meta: dict | None = None, *,
             pairwise_file: bool = True) -> dict[str, str]:
    """Figure name -> caption (``bayes``: the forest plot and the judge figure also draw
    credible intervals; ``meta``: the leaderboard's metadata, naming the intervals' covariance
    and a pinned baseline; ``pairwise_file``: whether pairwise.csv is beside the report)."""
    from .plots import FOREST_MODELS, HEATMAP_MODELS

    meta = meta or {}
    N = len(fit.items)
    cells = win_probability_meaning(fit, "the row model", "the column model")  # the heat map's
    wald = f"{level:.0%} {interval_name(meta)} intervals"
    intervals = (f"{wald} and, below each, the posterior mean with its credible interval"
                 if bayes else wald)
    gammas = f"{wald} and, below each, its credible interval" if bayes else wald
    pin = meta.get("baseline")
    pinned = (f"; {pin['model']} is pinned at {pin['score']:g} and every other interval is of "
              "the difference to it" if pin else "")
    text = {
        "forest": f"Consensus scores with {intervals}, best first{pinned}"
                  + ("; dotted lines separate tiers (models in one tier cannot be told apart)."
                     if meta.get("critical_value", 1) is not None else
                     "; no tiers (the joint statement behind them is refused: see the notes)."),
        "judge_map": (f"Judges by sensitivity γ_k (with {gammas}) and leverage h_k; red: "
                      "high sensitivity and high leverage (|γ_k| and h_k above the panel's "
                      f"medians, ρ_k above {RHO_THRESHOLD:g}: a reversed judge, γ_k below 0, "
                      "can be red)." if fit.rank > 0 else
                      f"Judge sensitivity γ_k with {gammas} (rank 0: a judge's scores are "
                      "γ_k times the consensus)."),
        "residual": "Structured disagreement UVᵀ, judges and models ordered by biclustering: "
                    "red, the judge rates the model above its consensus part; blue, below.",
        "win_probability": f"{cells[0].upper()}{cells[1:]}. Hatched: the pair's own "
                           f"{level:.0%} interval of the difference covers 0 (one pair at a "
                           "time; the tiers and rank intervals hold for every pair at once, "
                           "so a pair not hatched can still share a tier).",
        "observed_win_fraction": "Observed share of their comparisons that the row model won "
                                 "(ties 1/2, all judges and orders pooled); blank: never met.",
        "battle_counts": "Number of comparisons between each pair of models (all judges).",
        "rank_posterior": "Posterior probability of every rank for every model.",
        "biases": f"Judge biases on the logit scale with {level:.0%} Wald intervals: "
                  + ", ".join(part for name, part in (
                      ("position", "position bias β"),
                      ("style", "style pulls per feature (red diamond: the panel's value)"),
                      ("self", "self-preference")) if name in {t.name for t in fit.terms})
                  + ".",
        "ppc": "Posterior predictive checks: each judge's win rate of each model (and of the "
               "first-shown answer) against its predictive interval, red when outside; "
               "calibration of predicted against observed win rates"
               + ("" if str(fit.outcome) == "half" else "; each judge's tie rate, or its "
                  "share of each verdict category on a graded scale") + ".",
    }
    for name, shown, file in (("forest", FOREST_MODELS, "leaderboard"),
                              ("residual", HEATMAP_MODELS, "the saved fit (its U, V)"),
                              ("win_probability", HEATMAP_MODELS, "pairwise" if pairwise_file
                               else "the pairwise table (pairwise_table(fit), or the report "
                                    "with --pairwise)"),
                              ("observed_win_fraction", HEATMAP_MODELS, "observed_win_fraction"),
                              ("battle_counts", HEATMAP_MODELS, "battle_counts")):
        if N > shown:
            where = file if " " in file else f"{file}.csv"
            text[name] += f" The figure shows {shown} of the {N:,} models; {where} has them all."
    return text
