"""The report's glossary ("Reading the tables"): what each column and symbol means, the
general entries and those of the parts a report may show."""

from __future__ import annotations

from .formatting import shown_columns

__all__ = ["AGREEMENT_GLOSSARY", "BAYES_GLOSSARY", "BIAS_GLOSSARY", "FRAGILITY_GLOSSARY",
           "GLOSSARY", "OUTCOME_GLOSSARY", "glossary"]

GLOSSARY = (
    ("Score", "consensus score μ_i, the mean of the judges' score rows; differences are log-odds "
              "for a judge of average sensitivity (Elo scale: 400/ln10 · μ + 1000)."),
    ("Lower / Upper", "Wald (delta-method) interval of the score."),
    ("Rank (UB)", "1 + the number of models whose whole interval lies above this model's "
                  "(the Chatbot Arena convention). Each interval is taken on its own, so it "
                  "can place a model lower than its joint rank interval (Rank from), which "
                  "allows for every comparison at once."),
    ("Rank from / to", "joint rank intervals: all of them cover the true ranks at once with "
                       "the stated probability (simultaneous intervals of every score "
                       "difference)."),
    ("P(better than next)", "Φ(d / se(d)) for the score difference d to the next model down "
                            "(with cluster-robust CR2 intervals, the t distribution's at the "
                            "pair's Satterthwaite degrees of freedom). "
                            "The pair is the one the estimates put next to each other, so the "
                            "value is at least 0.5 by construction and overstates how sure "
                            "that order is (blank on the last row)."),
    ("Tier", "going down the ranking, a model joins the tier when it is not significantly "
             "different from any model already in it (at the joint level), else it opens the "
             "next tier: members of one tier are pairwise indistinguishable; where to cut "
             "between tiers is a convention."),
    ("Unbounded MLE", "yes: the model, alone or in a group of models, won (or lost) every "
                      "comparison with the others, so its maximum-likelihood score is "
                      "infinite; the fit's ridge sets its score, and its intervals and rank "
                      "intervals say nothing. The other models' differences stand."),
    ("γ", "judge sensitivity: how strongly the judge's scores follow the consensus (mean 1; "
          "negative: reversed)."),
    ("β", "position bias: the judge's logit bonus for the answer shown first."),
    ("Both orders", "share of the judge's pairs of models it saw in both presentation orders; "
                    "at 0 its β rests on the model's structure alone."),
    ("Leverage h / ρ", "size of the judge's structured disagreement ‖(UVᵀ)_k‖, absolute and "
                       "relative to its consensus part |γ_k| ‖μ‖ (rank ≥ 1 only)."),
    ("High γ and h", "high leverage: |γ_k| and h both above the panel's medians (and ρ "
                     "above 0.25): a judge with a strong consensus signal that also pulls "
                     "away from it; a large h alone is not flagged.  It does not measure "
                     "influence on the consensus: a judge of small γ_k can move it as much "
                     "(a refit without the judge shows it)."),
    ("Invalid", "share of the judge's rows without a usable verdict (not fitted)."),
    ("Kendall τ", "agreement of the judge's own ranking (a Bradley-Terry fit to its verdicts "
                  "alone) with the consensus ranking; blank when its comparisons do not link "
                  "the models it saw."),
    ("Observed win fraction / Comparisons", "the raw data: share of their meetings the row "
     "model won (ties 1/2), and how often each pair met, all judges and orders pooled."),
    ("Rank selection", "one row per candidate rank: its fit's NLL, free parameters and "
                       "criterion (BIC or CV NLL). Stopped early: its BIC could not beat the "
                       "smaller ranks' best even at its current pace, so its fit was not run "
                       "to the end. Skipped: not fitted, the criterion having stopped "
                       "improving at smaller ranks (fit_hja's patience)."),
)

#: Entries for the outcome model's per-judge parameters, by the judge-table column that shows
#: them.
OUTCOME_GLOSSARY = {
    "nu": ("ν (ties)", "Davidson's tie propensity of the judge: P(tie) = ν / (e^(η/2) + "
                       "e^(−η/2) + ν), so between two equal models it ties with probability "
                       "ν / (2 + ν); no interval for a judge that never tied (ν held at 0)."),
    "gap_1": ("Cut gap 1, 2, …", "the gaps between the judge's positive cut points on the "
                                 "logit scale (t₁ = gap 1, t₂ = gap 1 + gap 2, …; the cut "
                                 "points are ±t): its ordered verdict is neutral when its "
                                 "latent preference lies within ±t₁ (an odd number of "
                                 "levels), and strongest beyond the outermost t."),
}

BAYES_GLOSSARY = (
    ("Posterior mean / Cred. lower / upper", "posterior mean and equal-tailed credible "
     "interval of the score, from the NUTS draws (same level as the Wald interval)."),
    ("Post. rank from / to, P(best)", "equal-tailed posterior interval of the model's rank and "
     "the posterior probability that it ranks first."),
    ("Post. P(better than next)", "share of posterior draws in which the model's score beats "
     "the next model's."),
    ("< 1/n", "a posterior probability estimated as 0 from n draws: all the draws can say is "
              "that it is below about 1/n (likewise > 1 − 1/n)."),
    ("R-hat, ESS", "split R-hat (chains agree when it is near 1; above 1.01 they do not: such "
                   "rows are shaded where more entries are there than chains that agree put "
                   "there by chance) and the effective sample sizes of the bulk and the tails "
                   "of the draws, per quantity its worst entry."),
    ("Quantity (convergence)", "mu, gamma, S, U, V, D: the model's parameters; beta: position "
     "bias; coef: every per-judge term coefficient (position, style, self: beta is its position "
     "column); theta: shared style coefficients; nu, cut gaps: the outcome model's; with prompt "
     "effects, alpha: each answer's effect on its prompt, tau: their spread per model, and "
     "mu_marginal, gamma_marginal, S_marginal: the scores averaged over the prompt effects, on "
     "the Wald intervals' scale."),
)

BIAS_GLOSSARY = (
    ("style:<feature>", "the logit pull of a difference of one standard deviation in the answers' "
                        "feature (difference over sum, e.g. of their lengths); the consensus μ "
                        "is then the ranking when both answers have the same style."),
    ("(panel)", "the panel's value of a style coefficient: the mean over the judges, or the "
                "one shared coefficient."),
    ("self", "self-preference: the logit bonus a judge gives its own model."),
    ("Rank change", "the model's rank without the bias terms minus its rank with them: "
                    "positive, it ranks higher once style and self-preference are controlled."),
)

AGREEMENT_GLOSSARY = (
    ("α (Krippendorff)", "agreement of the whole panel beyond chance over units (a prompt, a pair "
                         "of models, a presentation order): 1 is perfect agreement, 0 no better "
                         "than chance, below 0 systematic disagreement. Ordinal: a tie counts "
                         "as closer to either win than the two wins are to each other."),
    ("κ (Cohen)", "agreement of two judges beyond chance on the units both judged (unweighted)."),
    ("Accuracy", "share of the units judged by both on which the judge's verdict (first wins, "
                 "tie, second wins) is the reference's."),
    ("α / κ / Accuracy lower, upper", "percentile interval of a bootstrap that resamples whole "
                                      "prompts."),
)


FRAGILITY_GLOSSARY = (
    ("Fragility", "the fewest verdicts (or whole prompts) found whose removal changes the "
                  "result named (e.g. who ranks first), each set confirmed by refitting without "
                  "it: a small share means the result rests on a few verdicts. The search is "
                  "greedy, so a smaller set may exist. The sets are in fragility_verdicts.csv "
                  "(prompt, judge, the pair as shown, category: the verdict, e.g. first = the "
                  "first-shown answer won; removed: how many such verdicts) and "
                  "fragility_prompts.csv (verdicts: how many the prompt holds)."),
)


def glossary(rep) -> tuple[tuple[str, str], ...]:
    """The "Reading the tables" entries of a :class:`~hja_bayes.reporting.Report`: the
    general ones of the columns and tables it shows, and those of the parts it shows
    (outcome parameters, posterior, biases, agreement)."""
    columns = set(rep.judges.columns)
    shown = {"β": "beta" in columns, "Both orders": "both_orders" in columns,
             "Leverage h / ρ": "leverage" in columns,
             "High γ and h": "high_leverage" in columns,
             "Invalid": "invalid_share" in columns,
             "Rank selection": getattr(rep, "rank_table", None) is not None,
             "Unbounded MLE": getattr(rep, "leaderboard", None) is not None
             and "unbounded" in shown_columns(rep.leaderboard).columns}
    general = tuple(entry for entry in GLOSSARY if shown.get(entry[0], True))
    outcome = tuple(entry for column, entry in OUTCOME_GLOSSARY.items() if column in columns)
    return (general + outcome + (BAYES_GLOSSARY if rep.bayes else ())
            + (BIAS_GLOSSARY if rep.biases is not None else ())
            + (AGREEMENT_GLOSSARY if rep.agreement is not None else ())
            + (FRAGILITY_GLOSSARY if getattr(rep, "fragility", ()) else ()))
