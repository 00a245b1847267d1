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
# # Wald against credible intervals
#
# The same HJA model gets two kinds of intervals: Wald intervals at the MAP (the
# delta method on the model's tangent chart, fast) and credible intervals from NUTS chains
# started around the MAP (each from a draw of its Laplace approximation; slower, no normal
# approximation). With 8,000 comparisons of five
# models they should agree; where they do not, the normal approximation is doing work.
#
# Set `HJA_NOTEBOOK_FAST=1` for small settings (the test suite does: a few draws, too few
# for R-hat to settle, so its warnings are silenced there).

# %%
import os
import warnings

import hja_bayes as hb

FAST = os.environ.get("HJA_NOTEBOOK_FAST") == "1"
DRAWS = 60 if FAST else 1000
if FAST:  # a handful of draws: R-hat is not expected to settle
    warnings.simplefilter("ignore", hb.ConvergenceWarning)

data = hb.Comparisons.from_frame(hb.datasets.load_prd_vicuna80().judgments)
fit = hb.fit_hja(data, rank=0, position_bias=True)  # the rank BIC picks on these data
idata = hb.sample_hja(data, fit.rank, init=fit, num_warmup=DRAWS, num_samples=DRAWS,
                      num_chains=2, seed=0, progress_bar=False)

# %% [markdown]
# ## The leaderboard with both intervals
#
# `score_lower`/`score_upper` are Wald; `cred_lower`/`cred_upper` are equal-tailed
# credible intervals; `post_rank_lower`/`post_rank_upper` and `p_best` come from the
# posterior distribution of the ranks.

# %%
board = hb.leaderboard(fit, idata)
board[["model", "score", "score_lower", "score_upper", "post_mean", "cred_lower", "cred_upper",
       "rank_ub", "post_rank_lower", "post_rank_upper", "p_best"]]

# %%
hb.forest_plot(fit, idata)

# %% [markdown]
# ## Quantity by quantity
#
# `compare_intervals` puts the two side by side for every score difference μ_a − μ_b,
# every sensitivity γ_k, every position bias β_k and every judge-level difference
# S_ka − S_kb. `width_ratio` is the credible width over the Wald width.

# %%
table = hb.compare_intervals(fit, idata)
table.groupby("quantity")[["sd_ratio", "width_ratio"]].describe().round(3)

# %%
table[table.quantity == "gamma"][["label", "wald_lower", "wald_upper", "eti_lower", "eti_upper"]]

# %% [markdown]
# ## Judges, with both intervals

# %%
hb.judge_table(fit, idata)[["judge", "gamma", "gamma_lower", "gamma_upper", "gamma_cred_lower",
                             "gamma_cred_upper", "beta", "beta_cred_lower", "beta_cred_upper"]]
