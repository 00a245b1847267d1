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
# # When to trust a judge: train a confidence ranker, certify a threshold, apply it
#
# A judge's verdict is worth keeping when it agrees with what a human would say. We learn a
# confidence score `C(s)` from features `s` (here: how the rest of the PRD Vicuna80 panel
# and the judge itself, with the answers swapped, voted) so that agreeing verdicts rank
# above disagreeing ones; then fixed-sequence testing picks a threshold λ̂ on held-out
# calibration examples with the guarantee `P(disagreement among kept ≤ α) ≥ 1 − δ`; the
# ranker and its certificate are saved, loaded back and applied to new verdicts.
#
# Set `HJA_NOTEBOOK_FAST=1` for small settings (the test suite does).

# %%
import os
import tempfile

import numpy as np
from matplotlib.figure import Figure

from hja_bayes import confidence as hc
from hja_bayes.confidence.pipeline import group_split

FAST = os.environ.get("HJA_NOTEBOOK_FAST") == "1"
EPOCHS, PAIRS = (3, 512) if FAST else (25, 5000)
ALPHA, DELTA = 0.3, 0.1

data = hc.load_prd_vicuna80_confidence("gpt4")
print(data, "features:", ", ".join(data.feature_names[:4]), "...")

# %% [markdown]
# ## Split by question
#
# Verdicts on one question share its answers, so whole questions go to one split, and the
# certificate below treats questions, not verdicts, as the independent units.

# %%
train, cal, test = (data.subset(i) for i in group_split(data.groups, (0.4, 0.4, 0.2), seed=0))
train.n, cal.n, test.n

# %% [markdown]
# ## Train
#
# A small network (inputs turned into normal scores through their training quantiles) with a
# Gaussian weight posterior fitted by SVI on a pairwise margin-ranking loss. It is a
# scikit-learn classifier of agreement: `predict_confidence` is the score the certificate
# thresholds.

# %%
ranker = hc.ConfidenceRanker(n_epochs=EPOCHS, n_pairs=PAIRS, seed=0).fit(train.features, train.agree)
print(f"test AUROC: ranker {hc.auroc(ranker.predict_confidence(test.features), test.agree):.3f}, "
      + ", ".join(f"{k} {hc.auroc(v, test.agree):.3f}" for k, v in test.baselines.items()))

# %% [markdown]
# ## Certify a threshold on the calibration questions

# %%
certificate = ranker.certify(cal.features, cal.agree, alpha=ALPHA, delta=DELTA, groups=cal.groups)
print(certificate.describe())

# %% [markdown]
# ## Save, load, apply
#
# The ranker and its certificate go to a folder (JSON and `.npz`, no pickle) — what
# `hja-bayes confidence train ... --out DIR` writes and `hja-bayes confidence apply DIR data`
# reads.

# %%
folder = os.path.join(tempfile.mkdtemp(), "gpt4_ranker")
ranker.save(folder)
loaded = hc.load_ranker(folder)
trusted = loaded.trusted(test.features)
assert np.array_equal(loaded.predict_confidence(test.features), ranker.predict_confidence(test.features))
agreement = test.agree[trusted].mean() if trusted.any() else float("nan")
print(f"test: {trusted.mean():.1%} of verdicts trusted, agreement among them {agreement:.1%} "
      f"(target ≥ {1 - ALPHA:.0%}; all verdicts: {test.agree.mean():.1%})")

# %% [markdown]
# ## Selective curve on the test split
#
# Agreement among the verdicts kept, against the share kept, when the threshold sweeps
# down the confidences.

# %%
c_test = loaded.predict_confidence(test.features)
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
# ## How much to believe the ranking
#
# Two different statements. The PAC-Bayes bound is about the *Gibbs* ranker (fresh weights
# from the posterior for every comparison); the held-out bound is about the score actually
# deployed (the posterior mean), from disjoint (agree, disagree) pairs of test verdicts, one
# verdict per question. With the 16 test questions of this split they say next to nothing:
# the PAC-Bayes bound comes out at or near 1 (vacuous: the posterior's KL divergence from the
# prior outweighs the few independent units) and the held-out bound about 0.66. Both tighten
# with the number of independent units (see `benchmarks/results/confidence_synthetic.md`).

# %%
print(ranker.pac_bayes_bound(test.features, test.agree, groups=test.groups, n_draws=100 if FAST else 1000))
print(hc.holdout_misranking_bound(c_test, test.agree, 0.05, groups=test.groups))
