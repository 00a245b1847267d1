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
# # Posterior predictive checks and the choice of rank
#
# Does the fitted model reproduce what the judges did? We replicate the data from the
# posterior and compare every judge's win rate of every model (and of the first-shown
# answer: the position-bias statistic) with its predictive interval; then we compare the
# disagreement ranks r = 0 and r = 1 by PSIS-LOO over single comparisons, next to BIC.
#
# Set `HJA_NOTEBOOK_FAST=1` for small settings (the test suite does).

# %%
import os
import warnings

import hja_bayes as hb
from hja_bayes import bayes

FAST = os.environ.get("HJA_NOTEBOOK_FAST") == "1"
DRAWS = 50 if FAST else 1000
if FAST:  # a handful of draws: R-hat is not expected to settle
    warnings.simplefilter("ignore", hb.ConvergenceWarning)

data = hb.Comparisons.from_frame(hb.datasets.load_prd_vicuna80().judgments)

# %% [markdown]
# ## Rank choice: BIC and PSIS-LOO
#
# `compare_ranks` fits the MAP and samples the posterior for each candidate rank.

# %%
choice = bayes.compare_ranks(data, ranks=(0, 1), position_bias=True, num_warmup=DRAWS,
                             num_samples=DRAWS, num_chains=2, seed=0)
choice.table[["elpd_loo", "p_loo", "elpd_diff", "se", "bic", "loo_rank", "bic_rank",
              "max_pareto_k"]]

# %% [markdown]
# ## Posterior predictive checks at rank 0

# %%
idata = choice.idatas[0]
checks = bayes.ppc_judge_win_rates(idata)
checks[checks.item == bayes.FIRST_SHOWN]

# %%
hb.posterior_predictive_plot(idata)

# %% [markdown]
# Share of (judge, model) win rates whose Bayesian p-value is extreme (two-sided 5%):

# %%
extreme = (checks.p_value.clip(upper=1 - checks.p_value) < 0.025).mean()
print(f"{extreme:.1%} of {len(checks)} statistics outside their 95% predictive interval")

# %% [markdown]
# ## The ranking, as a posterior distribution

# %%
hb.rank_posterior_plot(idata)
