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
# # Quickstart: an uncertainty-aware leaderboard
#
# Five LLM judges (bard, claude, gpt35, gpt4, vicuna-13b) compared the answers of the same
# five models on 80 questions, every pair in both presentation orders (PRD Vicuna80,
# bundled with the package). We fit the HJA model `S = γμᵀ + UVᵀ` with a per-judge
# position bias β, and read the consensus ranking with its intervals, the judges'
# diagnostics, and the figures of the report.
#
# Set `HJA_NOTEBOOK_FAST=1` to run on small settings (the test suite does).

# %%
import os
import tempfile

import hja_bayes as hb

FAST = os.environ.get("HJA_NOTEBOOK_FAST") == "1"

prd = hb.datasets.load_prd_vicuna80()
data = hb.Comparisons.from_frame(prd.judgments)
print(data.summary())

# %% [markdown]
# ## Fit
#
# The rank of the structured disagreement `UVᵀ` is chosen by BIC among 0..3 (in fast mode
# it is fixed at 0, which is what BIC picks on these data). The search stops once BIC has
# risen for `patience` ranks in a row (default 1): the rank table marks the ranks it did not
# fit as `skipped`, without a BIC (`patience=None` fits every rank).

# %%
fit = hb.fit_hja(data, rank=0 if FAST else "bic", position_bias=True)
print(fit.summary())
fit.rank_table

# %% [markdown]
# ## The leaderboard
#
# `score` is the consensus score μ with its 95% Wald interval; `rank_ub` is Chatbot
# Arena's Rank(UB) (one plus the number of models whose whole interval lies above);
# `rank_lower`/`rank_upper` are the ranks compatible with the joint (simultaneous) intervals;
# `tier` cuts the ranking into consecutive groups: within a tier no two models can be told
# apart (jointly), though a model may also be indistinguishable from one in the tier above.

# %%
board = hb.leaderboard(fit)
board

# %% [markdown]
# The same on the Elo scale (400/ln10 · μ + 1000):

# %%
hb.leaderboard(fit, scale="elo")[["model", "score", "score_lower", "score_upper", "tier"]]

# %% [markdown]
# In Chatbot Arena's columns (FastChat / arena-rank names), with one model's rating pinned
# as FastChat does; the table's `attrs["meta"]` says what the intervals are:

# %%
arena = hb.leaderboard(fit, style="arena", baseline=("gpt35", 1000))
print(arena.attrs["meta"]["cov_type"], arena.attrs["meta"]["level"])
arena

# %% [markdown]
# ## The judges
#
# γ_k: how strongly the judge follows the consensus; β_k: its bonus for the answer shown
# first, with the share of its pairs it saw in both orders; Kendall τ: how well the judge's
# own ranking (a Bradley-Terry fit to its verdicts alone) agrees with the consensus. At
# rank ≥ 1 the leverage h_k (how far its scores stray from the consensus in a structured
# way) is added; at rank 0, what BIC picks here, there is none to show.

# %%
hb.judge_table(fit)

# %% [markdown]
# Any differentiable function of the scores gets a Wald interval too, e.g. the gap
# between the two best models for judge gpt4:

# %%
i, j = fit.items.index(board["model"][0]), fit.items.index(board["model"][1])
k = fit.judges.index("gpt4")
fit.contrast(lambda S, beta: S[k, i] - S[k, j])

# %% [markdown]
# ## Figures

# %%
hb.forest_plot(fit)

# %%
hb.win_probability_heatmap(fit)

# %% [markdown]
# And the raw material: the share of their meetings each model won (ties 1/2).

# %%
hb.observed_heatmap(data, "win_fraction", order=board["model"])

# %% [markdown]
# ## The full report
#
# One self-contained HTML file (figures inline), Markdown, every table as CSV, and the
# leaderboard, pairwise, judge and rank tables as JSON too.

# %%
out = tempfile.mkdtemp(prefix="hja_report_")
files = hb.report(fit, out, title="PRD Vicuna80")
print(files.html)
sorted(p.name for p in files.tables)

# %% [markdown]
# ## Save and load
#
# A fit saves to a folder of JSON and .npz (no pickle) and loads back exactly.

# %%
fit.save(os.path.join(out, "fit"))
same = hb.load_fit(os.path.join(out, "fit"))
assert (same.S == fit.S).all() and (same.beta == fit.beta).all()
hb.leaderboard(same).equals(board)
