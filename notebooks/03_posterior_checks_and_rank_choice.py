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
# `compare_ranks` fits the MAP and samples the posterior for each candidate rank. PSIS-LOO
# leaves out one verdict at a time (not a whole cell of many verdicts), so its Pareto k stay
# small: `share_bad_k` is the share of verdicts whose k exceeds the limit for this many draws
# (0.7 from 2,154 draws on; `min(1 - 1/log10 S, 0.7)` below, as ArviZ's `az.loo`).

# %%
choice = bayes.compare_ranks(data, ranks=(0, 1), position_bias=True, num_warmup=DRAWS,
                             num_samples=DRAWS, num_chains=2, seed=0)
choice.table[["elpd_loo", "p_loo", "elpd_diff", "dse", "bic", "loo_rank", "bic_rank",
              "max_pareto_k", "share_bad_k"]]

# %% [markdown]
# With the full draws the rank-1 posterior warns (a `ConvergenceWarning`) that its
# smallest component D[0] is not separated from zero: rank 1 is more than these data
# support, and both criteria agree (LOO and BIC rank 0 first; the LOO difference is about
# 1.5 of its standard errors).

# %% [markdown]
# ## Posterior predictive checks at rank 0

# %%
idata = choice.idatas[0]
checks = bayes.ppc_judge_win_rates(idata)
checks[checks.item == bayes.FIRST_SHOWN]

# %%
hb.posterior_predictive_plot(idata)

# %% [markdown]
# Share of the (judge, model) and first-shown win rates whose Bayesian p-value is extreme
# (two-sided 5%):

# %%
extreme = (checks.p_value.clip(upper=1 - checks.p_value) < 0.025).mean()
print(f"{extreme:.1%} of {len(checks)} statistics outside their 95% predictive interval")

# %% [markdown]
# ## The ranking, as a posterior distribution

# %%
hb.rank_posterior_plot(idata)

# %% [markdown]
# ## What the priors say before the data
#
# "Weakly informative" is checked, not asserted: the prior predictive gives the implied prior
# of every pair's win probability. Under the default scales about 30% of consensus pairs and
# 31% of judge pairs fall outside [0.1, 0.9] a priori at rank 0 (40% at rank 1; uniform win
# probabilities would put 20% there).

# %%
prior = bayes.prior_predictive(data, 0, position_bias=True, num_samples=200 if FAST else 2000)
print({k: v for k, v in prior.shares.items()})
hb.reporting.prior_predictive_plot(prior)
