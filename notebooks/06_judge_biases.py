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
# # Judge biases: style, self-preference, position, and how fragile the top spot is
#
# Judges, LLMs and people alike, prefer the longer and the more formatted of two answers;
# a judge that is also a contestant may prefer its own answers; many prefer whichever answer
# is shown first. Left in the data, all of it flows into the consensus ranking μ. Here, on
# PRD Vicuna80 (bundled: five LLM judges, which are also the five models compared, on 80
# questions, with the answers' texts and the human votes), we
#
# 1. measure each answer's style (length, lists, bold) and see how it differs by model;
# 2. fit the model with a style term and a self-preference term per judge, beside the same
#    model without them, and read how the ranking changes;
# 3. compare the judges' taste for length with the human voters';
# 4. check on held-out questions which consensus predicts the humans' votes better;
# 5. ask how few verdicts, or prompts, hold the top spot up, and how much the judges agree.
#
# Set `HJA_NOTEBOOK_FAST=1` to run on small settings (the test suite does).

# %%
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import hja_bayes as hb
from hja_bayes.features import join_features

FAST = os.environ.get("HJA_NOTEBOOK_FAST") == "1"
SPLITS = 2 if FAST else 10

prd = hb.datasets.load_prd_vicuna80()
table = hb.style_features(prd.answers)  # one row per (question, model)
table.groupby("model")[["length", "headers", "lists", "bold"]].mean().round(1)

# %% [markdown]
# gpt4 writes the longest answers and the most list items, gpt35 the shortest; only bard
# uses bold, and no answer has markdown headers (that feature is left out when the data are
# read, with a warning, silenced in the cell below: `data.feature_names` shows what is left).
# A judge that rewards length therefore rewards gpt4 for its style
# as well as for its substance: the style term tells the two apart.
#
# ## Two fits: with and without the bias terms
#
# The features enter the linear predictor as `θ_kᵀ(x_qi − x_qj)`, per judge
# (`style="per_judge"`: `θ_k = θ + δ_k`), with each feature the difference of the two answers
# over their sum, scaled by its standard deviation over the comparisons (Chatbot Arena's
# transform). `self_preference=True` adds `λ_k` for a judge comparing its own answer (PRD's
# judges are named like the models), `position_bias=True` the first-position bias β_k.
# `fit.uncontrolled()` is the same model without the style and self-preference terms.

# %%
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r".*do not vary over the comparisons")
    data = hb.Comparisons.from_frame(prd.judgments, cluster="question_id", features=table)
print(data.feature_names)
fit = hb.fit_hja(data, rank=0, position_bias=True, style="per_judge", self_preference=True)
plain = fit.uncontrolled()
board = hb.leaderboard(fit, uncontrolled=plain)
board[["model", "score", "score_lower", "score_upper", "rank", "rank_change", "tier"]]

# %% [markdown]
# `rank_change` is the rank without the bias terms minus the rank with them (positive: the
# model rises once style is controlled). With the terms, μ is the ranking when both answers
# have the same style. The intervals are cluster-robust by question (CR2).

# %%
fig, ax = plt.subplots(figsize=(6, 3))
for shift, (label, model) in enumerate((("with the bias terms", fit), ("without", plain))):
    rows = model.intervals().query("quantity == 'mu'").set_index("label").loc[board["model"]]
    y = np.arange(len(rows)) + 0.15 * (1 - 2 * shift)
    ax.errorbar(rows["estimate"], y, xerr=[rows["estimate"] - rows["lower"],
                                           rows["upper"] - rows["estimate"]],
                fmt="o", capsize=3, label=label)
ax.set_yticks(np.arange(len(board)), board["model"])
ax.invert_yaxis()
ax.set_xlabel("consensus score μ (logit), 95% cluster-robust interval")
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## Each judge's biases
#
# `bias_table` has one row per judge: β (position), each style coefficient (per standard
# deviation of the relative difference) and λ (self-preference), with 95% intervals, and a
# `(panel)` row for the panel's mean style coefficients.

# %%
biases = hb.bias_table(fit).set_index("judge")
columns = ["beta", "style:length", "style:length_lower", "style:length_upper", "style:lists",
           "style:bold", "self", "self_lower", "self_upper"]
biases[columns].round(2)

# %% [markdown]
# Every judge rewards the longer answer; none of the self-preference intervals excludes 0 on
# these data. Do people reward length too? The human votes on the same answers (pooled
# voters, read as one judge) give their own coefficient, on the same scale:

# %%
models = sorted(set(prd.answers["model"]))
human = prd.human[prd.human["model_a"].isin(models) & prd.human["model_b"].isin(models)]
human = human.assign(judge="humans").reset_index(drop=True)
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r".*do not vary over the comparisons")
    human_data = hb.Comparisons.from_frame(human, cluster="question_id", features=table)
human_fit = hb.fit_hja(human_data, rank=0, position_bias=True, style="per_judge")
human_bias = hb.bias_table(human_fit).set_index("judge").loc[["humans"]]
length = pd.concat([biases, human_bias])[["style:length", "style:length_lower",
                                          "style:length_upper"]]

fig, ax = plt.subplots(figsize=(6, 3))
y = np.arange(len(length))
ax.errorbar(length["style:length"], y, xerr=[length["style:length"] - length["style:length_lower"],
                                             length["style:length_upper"] - length["style:length"]],
            fmt="o", capsize=3)
ax.set_yticks(y, length.index)
ax.invert_yaxis()
ax.axvline(0, color="grey", lw=0.8)
ax.set_xlabel("length coefficient (logit per sd), 95% interval")
fig.tight_layout()
length.round(2)

# %% [markdown]
# The people's coefficient is about the panel's: length sways the humans as much as it
# sways the LLM judges. So a consensus with the style term *removed* is not the better
# predictor of human votes; one that models style is.
#
# ## Which consensus predicts the humans? Held-out questions
#
# Hold out 16 of the 80 questions; fit the LLM judges on the other 64 (nothing from the
# held-out questions is used), and predict each decisive human vote on a held-out question
# by the sign of
#
# * without control: `μ_a − μ_b` of the plain fit;
# * with control: `μ_a − μ_b + θᵀ(x_qa − x_qb)`, the controlled consensus plus the panel's
#   mean style coefficients applied to the two answers' features (transformed with the
#   training data's scale);
# * the controlled consensus alone, `μ_a − μ_b`.

# %%
features = list(data.feature_names)
rng = np.random.default_rng(0)
questions = np.unique(prd.judgments["question_id"])
rows = []
for split in range(SPLITS):
    held_out = rng.choice(questions, 16, replace=False)
    train = prd.judgments[~prd.judgments["question_id"].isin(held_out)]
    votes = human[human["question_id"].isin(held_out) & (human["winner"] != "tie")]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*do not vary over the comparisons")
        train_data = hb.Comparisons.from_frame(train, cluster="question_id", features=table)
        scale = join_features(train, table[["question_id", "model", *features]],
                              cluster="question_id").scale
        x = join_features(votes, table[["question_id", "model", *features]],
                          cluster="question_id", scale=scale).features
    controlled = hb.fit_hja(train_data, rank=0, position_bias=True, style="per_judge",
                            self_preference=True)
    uncontrolled = controlled.uncontrolled()
    first = np.array([controlled.items.index(m) for m in votes["model_a"]])
    second = np.array([controlled.items.index(m) for m in votes["model_b"]])
    theta = np.array([controlled.coefficient(f"style:{f}").mean() for f in features])
    y = (votes["winner"] == "model_a").to_numpy()
    mu, mu_plain = controlled.mu, uncontrolled.mu
    rows.append({"without control": np.mean((mu_plain[first] - mu_plain[second] > 0) == y),
                 "with control": np.mean((mu[first] - mu[second] + x @ theta > 0) == y),
                 "controlled μ alone": np.mean((mu[first] - mu[second] > 0) == y),
                 "votes": len(votes)})
agreement_with_humans = pd.DataFrame(rows)
agreement_with_humans.agg(["mean", "std"]).round(3)

# %% [markdown]
# Modelling style lifts the agreement with the held-out human votes (in
# `benchmarks/bench_style.py`, over 20 splits: 0.716 without control, 0.766 with it), while
# the controlled consensus alone agrees less: the gain comes from modelling the judges'
# (and the people's) taste for length, not from pretending it is absent.
#
# ## How fragile is the top spot?
#
# `fit.fragility` removes the verdicts (or whole prompts) that hold the leader up most, by
# their influence on `μ_first − μ_second`, until another model comes first, and confirms
# the flip by an exact refit (Broderick et al.'s approximate maximum influence perturbation).

# %%
by_verdict = fit.fragility("top", "verdict")
print(by_verdict.sentence)
if not FAST:
    print(fit.fragility("top", "prompt").sentence)

# %% [markdown]
# A lead that a handful of verdicts can overturn deserves the tier the leaderboard gives it
# (gpt4 and claude share tier 1), not a bare rank 1.
#
# ## How much do the judges agree?
#
# Krippendorff's α over the units (question, pair, order) and the judges, Cohen's κ for
# every pair of judges, and, with the human votes added as one more coder, each judge's
# agreement with the people; intervals by bootstrap over the questions.

# %%
panel_and_people = pd.concat([prd.judgments, human], ignore_index=True)
coders = hb.Comparisons.from_frame(panel_and_people, cluster="question_id")
agree = hb.agreement(coders, reference="humans", n_boot=100 if FAST else 1000)
agree.alpha

# %%
agree.kappa

# %%
agree.reference
