"""The notes on top of a report: what the reader must know before reading the tables (a fit
that did not converge, judges left out or locked on one slot, models that won or lost every
comparison, draws that show convergence problems, ...), most important first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .convergence import beyond_chance
from .observed import unbeaten_or_winless
from .sentences import convergence_sentence, named, plural

__all__ = ["report_notes"]

#: A judge losing more than this share of its rows to invalid verdicts gets a note.
INVALID_NOTE = 0.2
#: A judge with position bias whose share of pairs seen both ways is below this gets a note.
BOTH_ORDERS_NOTE = 0.1


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%" if x < 0.995 else "100%"


#: First-shown shares outside these are named by a report without position bias (bard: 81%).
SLOT_LEANING = (0.3, 0.7)  # symmetric about 1/2


def _slot_leaning(data) -> list[str]:
    """``judge (share%)`` of judges of enough decided verdicts, first-shown outside the bounds."""
    from ..position_locked import LOCKED_MIN_VERDICTS, LOCKED_SHARE, slot_counts

    first, second = slot_counts(data)
    decided = first + second
    share = np.divide(first, decided, out=np.full(len(first), 0.5), where=decided > 0)
    lean = np.abs(share - 0.5) + 0.5  # a locked judge (its own note) is not named again
    out = (decided >= LOCKED_MIN_VERDICTS) & (lean > SLOT_LEANING[1]) & (lean < LOCKED_SHARE)
    return [f"{data.judges[k]} ({_percent(share[k])})" for k in np.flatnonzero(out)]


def report_notes(fit, judges: pd.DataFrame, convergence: pd.DataFrame | None) -> list[str]:
    """Warnings for the reader, most important first."""
    data = fit.data
    notes = []
    if not fit.converged:
        notes.append(f"The fit did not converge in {plural(fit.n_iter, 'iteration')}: "
                     "estimates may be inaccurate.")
    if data.one_orientation_only:
        notes.append("Every pair of models is shown in one orientation only, so a judge's "
                     "position bias and a disagreement that lines up with the order shown "
                     "cannot be told apart in these data: a fit with position bias gives that "
                     "share to β, one without to the scores.")
    elif "both_orders" in judges.columns:
        low = judges[judges["both_orders"] < BOTH_ORDERS_NOTE]
        if len(low):
            shown = named([f"{r.judge} ({_percent(r.both_orders)})" for r in low.itertuples()],
                          len(judges))
            notes.append("Judges that saw (almost) every pair of models in one order only "
                         f"(share of pairs seen both ways): {shown}. Their β rests on the "
                         "model's structure, not on their own pairs; read it as confounded "
                         "with a preference for the models they saw first.")
    excluded = getattr(fit, "excluded_judges", None) or {}
    if excluded:
        notes.append("Judges left out of the fit (the consensus does not use them): "
                     + "; ".join(f"{j}, which {why}" for j, why in excluded.items()) + ".")
    unbeaten, winless, grouped = unbeaten_or_winless(data)
    if unbeaten or winless or grouped:
        N = data.n_items
        parts = [f"{what}: {named(names, N, table='the leaderboard')}" for what, names in (
            ("won every comparison", unbeaten), ("lost every comparison", winless),
            ("won or lost, as a group, every comparison with the other models", grouped))
            if names]
        notes.append("Models that " + "; that ".join(parts) + ". They have no finite "
                     "maximum-likelihood score (the leaderboard marks them 'Unbounded MLE'): "
                     "their scores and Wald intervals (rank intervals included) are set by "
                     "the fit's ridge penalty, not by the data, and do not measure their "
                     "uncertainty; the differences among the other models are not affected. "
                     + ("Their credible intervals rest on the prior as much as on the data."
                        if convergence is not None else
                        "A posterior ('hja-bayes fit --bayes') gives them intervals under an "
                        "explicit prior."))
    if not data.order_known:
        notes.append("The presentation order was not kept (cells folded): no position bias.")
    elif not fit.position_bias and not data.one_orientation_only:
        leaning = _slot_leaning(data)
        if leaning:
            notes.append("This fit has no position bias term, and judges chose the first-shown "
                         f"answer far from half the time: {named(leaning, len(data.judges))}. "
                         "If that is a preference for a slot, it is read as one for the models "
                         "they saw first: fit with position bias ('hja-bayes fit "
                         "--position-bias'), whose β measures it.")
    unknown = judges["gamma_upper"].isna() & (judges["gamma"] <= 0)  # no interval: its sign
    against = judges[(judges["gamma_upper"] < 0) | unknown]["judge"].tolist()
    if against:
        notes.append("Judge(s) whose sensitivity γ is below 0, interval included where there "
                     "is one (their ranking runs against the consensus): "
                     + named(against, len(judges)) + ".")
    flat = judges[(judges["gamma_lower"] <= 0) & (judges["gamma_upper"] >= 0)]["judge"].tolist()
    if flat:
        notes.append("Judge(s) whose sensitivity γ cannot be told from 0 (its interval "
                     "includes 0: no detectable agreement with the consensus): "
                     + named(flat, len(judges)) + ".")
    if "invalid_share" in judges.columns:
        lost = judges[judges["invalid_share"] > INVALID_NOTE]
        if len(lost):
            notes.append("Judges whose verdict was unusable in many of their rows (those rows "
                         "left out of the fit; share of the judge's rows): "
                         + named([f"{r.judge} {_percent(r.invalid_share)}"
                                  for r in lost.itertuples()], len(judges)) + ".")
    if data.dropped_judges:
        notes.append("Judges with no usable verdict at all, left out: "
                     + named(data.dropped_judges, len(judges) + len(data.dropped_judges))
                     + ".")
    if judges.attrs.get("conditional_beta"):
        notes.append("With prompt effects the posterior's position biases β are per prompt "
                     "(answers of typical quality), on another scale than the Wald β, which "
                     "averages over prompts; the judge table shows no credible β beside it. "
                     "The credible γ are the population-averaged ones (gamma_marginal).")
    if convergence is not None:
        note = _convergence_note(convergence) or _few_draws_note(convergence)
        if note:
            notes.append(note)
        if convergence.attrs.get("prompt_method") == "none" and data.clusters is not None:
            notes.append(f"The posterior was drawn without prompt effects although the "
                         f"verdicts share prompts (column {data.cluster_column!r}): it takes "
                         "them as independent, so its credible intervals leave out what the "
                         "cluster-robust Wald intervals allow for and can be much narrower "
                         "(MT-Bench: 3.1 times narrower than CR2). Prompt effects are the "
                         "default (hja-bayes fit --bayes without --prompt-effects none).")
    return notes


#: A posterior quantity with a bulk effective sample size below this many per chain gets a
#: note (the level at which Stan's diagnostics call it too low).
ESS_PER_CHAIN = 100


def _few_draws_note(table: pd.DataFrame) -> str | None:
    """The note of draws that converged but are few for some quantity: the smallest bulk
    ESS below :data:`ESS_PER_CHAIN` per chain (its posterior mean then carries a Monte Carlo
    error of 1/sqrt(ESS) posterior sd); None otherwise."""
    chains = int(table.attrs.get("n_chains", 1))
    ess = table["min_ess_bulk"].to_numpy(float)
    if not np.isfinite(ess).any() or np.nanmin(ess) >= ESS_PER_CHAIN * chains:
        return None
    low = table.iloc[int(np.nanargmin(ess))]
    return (f"The posterior draws are few for {low['quantity']}: its smallest bulk effective "
            f"sample size is {low['min_ess_bulk']:.0f} from {plural(chains, 'chain')}, under "
            f"{ESS_PER_CHAIN} per chain, so "
            f"its posterior means carry a Monte Carlo error of about "
            f"{1 / np.sqrt(low['min_ess_bulk']):.0%} of a posterior sd, interval ends more; "
            "run more draws (hja-bayes fit --samples).")


def _convergence_note(table: pd.DataFrame) -> str | None:
    """The note on top of a report whose draws show a problem: divergences, R-hat above the
    limit beyond what agreeing chains show by chance (about ``rhat_by_chance`` entries, plus
    three of its standard deviations, a Poisson count's), or no R-hat at all (one chain);
    None when the draws look fine."""
    a = table.attrs
    worst = table["max_rhat"].max()
    beyond = beyond_chance(table)
    if not (a["divergences"] or beyond or not np.isfinite(worst)):
        return None
    todo = ("rerun with a higher target_accept_prob (sample_hja(..., target_accept_prob=0.95)) "
            "or a lower rank" if a["divergences"] else
            "run more chains and draws (hja-bayes fit --chains / --samples)")
    what = "show convergence problems" if a["divergences"] or beyond else "cannot be checked"
    return (f"The posterior draws {what} (" + convergence_sentence(table).rstrip(".")
            + f"): read the credible intervals with care; {todo}.")
