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
# # When to trust a judge: confidence ranking and selective evaluation
#
# A judge's verdict is worth keeping when it agrees with what a human would say. We learn a
# confidence score `C(s)` from features `s` (here: how the rest of the PRD Vicuna80 panel
# and the judge itself, with the answers swapped, voted) so that agreeing verdicts rank
# above disagreeing ones; then fixed-sequence testing picks a threshold λ̂ on held-out
# calibration examples with the guarantee `P(disagreement among kept ≤ α) ≥ 1 − δ`; finally
# we check coverage and agreement on a test split.
#
# Set `HJA_NOTEBOOK_FAST=1` for small settings (the test suite does).

# %%
import os

import numpy as np
from matplotlib.figure import Figure

from hja_bayes import confidence as hc

FAST = os.environ.get("HJA_NOTEBOOK_FAST") == "1"
EPOCHS, PAIRS = (3, 512) if FAST else (30, 5000)
ALPHA, DELTA = 0.25, 0.1

data = hc.load_prd_vicuna80_confidence("gpt4")
print(data, "features:", ", ".join(data.feature_names[:4]), "...")

# %% [markdown]
# ## Split by question
#
# Examples from one question share answers, so whole questions go to one split.

# %%
rng = np.random.default_rng(0)
questions = rng.permutation(np.unique(data.groups))
third = len(questions) // 3
parts = [questions[:third], questions[third:2 * third], questions[2 * third:]]
train, cal, test = (data.subset(np.flatnonzero(np.isin(data.groups, p))) for p in parts)
train.n, cal.n, test.n

# %% [markdown]
# ## Train the ranker
#
# An MLP trained on (agree, disagree) pairs with a margin-adaptive objective and a
# Gaussian weight posterior (SVI).

# %%
ranker = hc.ConfidenceRanker(n_epochs=EPOCHS, n_pairs=PAIRS, seed=0).fit(train.features, train.agree)
c_cal, c_test = ranker.predict(cal.features), ranker.predict(test.features)
print(f"test AUROC: ranker {hc.auroc(c_test, test.agree):.3f}, "
      + ", ".join(f"{k} {hc.auroc(v, test.agree):.3f}" for k, v in test.baselines.items()))

# %% [markdown]
# ## Certify a threshold, then apply it

# %%
lam = hc.fixed_sequence_threshold(c_cal, cal.agree, alpha=ALPHA, delta=DELTA)
coverage, agreement = hc.selective_accuracy(c_test, test.agree, lam)
print(f"threshold {lam}; test coverage {coverage:.1%}, agreement among kept {agreement:.1%} "
      f"(target ≥ {1 - ALPHA:.0%}; all verdicts: {test.agree.mean():.1%})")

# %% [markdown]
# ## Selective curve on the test split
#
# Agreement among the verdicts kept, against the share kept, when the threshold sweeps
# down the confidences.

# %%
curve = hc.selective_curve(c_test, test.agree)
fig = Figure(figsize=(5.5, 3.5), layout="constrained")
ax = fig.add_subplot()
ax.plot(curve.coverage, curve.accuracy, label="learned ranker")
for name, scores in test.baselines.items():
    base = hc.selective_curve(scores, test.agree)
    ax.plot(base.coverage, base.accuracy, linestyle="--", label=name)
ax.axhline(1 - ALPHA, color="grey", linestyle=":", label="target agreement")
ax.set_xlabel("coverage")
ax.set_ylabel("agreement among kept")
ax.legend(fontsize=8)
fig

# %% [markdown]
# ## How much to believe the ranker: a PAC-Bayes bound
#
# The Gibbs ranker's misranking probability, bounded with the honest sample size
# (disjoint agree/disagree pairs, not the overlapping training pairs).

# %%
ranker.pac_bayes_bound(test.features, test.agree, n_draws=100 if FAST else 1000)
