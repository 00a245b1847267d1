# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Ties and ordered verdicts: choosing the outcome model
#
# A verdict is not always "A wins" or "B wins". Judges tie, and some scales grade the
# preference (`A>>B, A>B, A=B, B>A, B>>A`, as in Arena-Hard). The outcome model says what a
# verdict's category is, given the linear predictor η of the pair:
#
# * `outcome="half"` (the default; Chatbot Arena's and the papers' convention): a tie counts
#   ½ to each side of a Bernoulli likelihood;
# * `outcome="davidson"`: three outcomes, with a tie propensity ν_k per judge;
# * `outcome="ordinal"`: a cumulative logit over any number of ordered levels, with each
#   judge's own cut points.
#
# In every model the odds of "first better" over "second better" are `e^η`, so S, μ and γ
# keep their meaning. Below: Davidson's ties on PRD Vicuna80 (bundled), then a simulated
# five-level panel, where the truth is known, fitted on its five levels and collapsed to
# three.
#
# Set `HJA_NOTEBOOK_FAST=1` to run on small settings (the test suite does).

# %%
import os

import numpy as np
import pandas as pd

import hja_bayes as hb

FAST = os.environ.get("HJA_NOTEBOOK_FAST") == "1"

prd = hb.datasets.load_prd_vicuna80()
data = hb.Comparisons.from_frame(prd.judgments, cluster="question_id")
half = hb.fit_hja(data, rank=0, position_bias=True)
davidson = hb.fit_hja(data, rank=0, position_bias=True, outcome="davidson")
ties = pd.Series(np.bincount(data.judge, data.ties, data.n_judges)
                 / data.comparisons_per_judge(), index=data.judges, name="tie rate")
judges = hb.judge_table(davidson).set_index("judge")[["nu", "nu_lower", "nu_upper"]]
judges.join(ties).round(3)

# %% [markdown]
# ν_k is judge k's tie propensity (`P(tie) = ν_k / (e^{η/2} + e^{−η/2} + ν_k)`), with its
# cluster-robust interval: gpt35 and gpt4 tie far more often than vicuna-13b or bard. The
# ranking is the same under both models; the scores are not on the same scale, since
# counting a tie ½ pulls the half model's η towards 0, while Davidson's η is the log odds
# among the decisive verdicts:

# %%
scores = pd.DataFrame({"half": hb.leaderboard(half).set_index("model")["score"],
                       "davidson": hb.leaderboard(davidson).set_index("model")["score"]})
scores.assign(ratio=scores["davidson"] / scores["half"]).round(3)

# %% [markdown]
# What each model predicts for one verdict, gpt4 judging gpt4's answer (shown first) against
# claude's: with "half" the tie probability is the judge's training tie rate, with
# "davidson" it comes from ν_k and η.

# %%
row = pd.DataFrame({"judge": ["gpt4"], "model_a": ["gpt4"], "model_b": ["claude"]})
pd.concat({"half": half.outcome_proba(row), "davidson": davidson.outcome_proba(row)}).round(3)

# %% [markdown]
# ## Ordered verdicts
#
# A panel of 4 judges and 6 models at rank 1 whose verdicts are five-level grades, drawn
# from the cumulative-logit model (cut-point gaps 0.6 and 1.2 for every judge), coupled
# within 100 prompts. The ordinal model reads all five levels; the three-outcome models
# read the same verdicts collapsed to first / tie / second (`data.collapsed()`): strong and
# weak preferences alike.

# %%
per_judge = 600 if FAST else 1500
graded, truth = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=per_judge,
                            seed=3, outcome="ordinal", questions=100,
                            question_correlation=0.3)
print(graded.categories, graded.counts.sum(axis=0).astype(int))
fits = {"ordinal (5 levels)": hb.fit_hja(graded, rank=1, outcome="ordinal"),
        "davidson (collapsed)": hb.fit_hja(graded.collapsed(), rank=1, outcome="davidson"),
        "half (collapsed)": hb.fit_hja(graded.collapsed(), rank=1)}
a, b = np.triu_indices(6, 1)
true_order = np.sign(truth.mu[a] - truth.mu[b])
diffs = {name: fit.intervals().query("quantity == 'mu_diff'") for name, fit in fits.items()}
z_half = np.abs(diffs["half (collapsed)"].eval("estimate / se").to_numpy())
rows = {}
for name, diff in diffs.items():
    decided = np.sign(diff["lower"].to_numpy()) == np.sign(diff["upper"].to_numpy())
    rows[name] = {
        "pairs decided (of 15)": int(decided.sum()),
        "decided against the truth": int(np.sum(decided & (np.sign(diff["estimate"])
                                                           != true_order))),
        "|estimate / se|, median ratio to half's": np.median(
            np.abs(diff.eval("estimate / se").to_numpy()) / z_half),
        "correlation with true μ": np.corrcoef(fits[name].mu, truth.mu)[0, 1]}
pd.DataFrame(rows).T.round(3)

# %% [markdown]
# The models' scores are on different scales, so they are compared by scale-free figures:
# the pairs `μ_i − μ_j` whose 95% cluster-robust interval excludes 0, and each difference's
# estimate over its standard error, relative to the half model's. Reading the grades, the
# ordinal fit's differences stand about 1.1–1.3 standard errors for each of the collapsed
# fit's (1.30 at 600 verdicts per judge, 1.09 at 1,500, in runs of this cell): the grades
# carry what about 1.2–1.7× as many three-outcome verdicts would. Its cut gaps, per judge,
# against the truth (0.6, 1.2):

# %%
gaps = fits["ordinal (5 levels)"].intervals().query("quantity.str.startswith('gap')")
gaps.pivot(index="label", columns="quantity", values="estimate").round(3)
