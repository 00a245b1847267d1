"""The sampler's convergence diagnostics, one row per posterior quantity.

R-hat is ArviZ's rank-normalised split R-hat and the effective sample sizes are bulk and
tail ESS (NumPyro's estimator on ArviZ's inputs), computed for every entry at once by
:mod:`hja_bayes.bayes.mixing`; divergences are NUTS's own count.  The report shows them
beside every posterior column, so a reader can tell whether the draws can carry the claims
made from them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..bayes.mixing import mixing

__all__ = ["RHAT_LIMIT", "beyond_chance", "convergence_table"]

#: R-hat above this value flags a quantity whose chains disagree.
RHAT_LIMIT = 1.01
#: Quantities shown first, in this order; every other posterior quantity follows (the terms'
#: coefficients, the outcome model's parameters, prompt effects and their marginal summaries).
QUANTITIES = ("mu", "mu_marginal", "gamma", "gamma_marginal", "beta", "coef", "theta", "D", "S",
              "S_marginal", "U", "V", "tau", "alpha")


def convergence_table(idata) -> pd.DataFrame:
    """Largest R-hat and smallest bulk and tail ESS of every posterior quantity (every sampled
    and every reported one: the consensus on both scales, the terms' coefficients, the
    outcome model's parameters, the prompt effects).

    Parameters
    ----------
    idata : arviz.InferenceData
        From :func:`hja_bayes.sample_hja`.

    Returns
    -------
    DataFrame
        Columns ``quantity``, ``entries``, ``max_rhat``, ``min_ess_bulk``,
        ``min_ess_tail``.  ``attrs``: ``n_draws`` (all chains), ``n_chains``,
        ``divergences`` (after warm-up), ``rhat_limit``, ``rhat_above`` (entries above it,
        of ``rhat_entries`` with an R-hat), ``rhat_by_chance`` (how many chains that agree
        would put above it at these effective sample sizes,
        :func:`~hja_bayes.bayes.mixing.rhat_by_chance`; NaN when none is above),
        ``prompt_method`` ("sampled",
        "integrated" or "none") and ``prompt_method_reason`` (why; empty for a posterior
        saved before the reason was recorded).
    """
    post = idata.posterior
    present = [q for q in post.data_vars if post[q].size > 0]
    names = [q for q in QUANTITIES if q in present] + [q for q in present if q not in QUANTITIES]
    rows, above, entries, by_chance = [], 0, 0, 0.0
    for name in names:
        r, b, t, c = (v.ravel() for v in mixing(post[name].transpose("chain", "draw", ...).values,
                                                RHAT_LIMIT))
        rows.append((name, r.size, _nanmax(r), _nanmin(b), _nanmin(t)))
        above += int(np.sum(r > RHAT_LIMIT))
        entries += int(np.isfinite(r).sum())
        by_chance += float(np.nansum(c))
    by_chance = by_chance if above else float("nan")
    table = pd.DataFrame(rows, columns=["quantity", "entries", "max_rhat", "min_ess_bulk",
                                        "min_ess_tail"])
    stats = getattr(idata, "sample_stats", None)
    divergences = int(stats["diverging"].sum()) if stats is not None and "diverging" in stats else 0
    table.attrs.update(n_draws=int(post.sizes["chain"] * post.sizes["draw"]),
                       n_chains=int(post.sizes["chain"]), divergences=divergences,
                       rhat_limit=RHAT_LIMIT, rhat_above=above, rhat_entries=entries,
                       rhat_by_chance=by_chance,
                       prompt_method=str(post.attrs.get("prompt_method", "none")),
                       prompt_method_reason=str(post.attrs.get("prompt_method_reason", "")))
    return table


def beyond_chance(table: pd.DataFrame) -> bool:
    """Whether more entries of ``table`` (:func:`convergence_table`) are above the R-hat
    limit than chains that agree put there by chance (``rhat_by_chance``, plus three of its
    standard deviations, a Poisson count's, plus one)."""
    a = table.attrs
    chance = float(a.get("rhat_by_chance", 0.0))
    chance = 0.0 if np.isnan(chance) else chance
    return bool(table["max_rhat"].max() > a["rhat_limit"]
                and a.get("rhat_above", 1) > chance + 3 * np.sqrt(chance) + 1)


def _nanmax(x: np.ndarray) -> float:
    return float(np.nanmax(x)) if np.isfinite(x).any() else float("nan")


def _nanmin(x: np.ndarray) -> float:
    return float(np.nanmin(x)) if np.isfinite(x).any() else float("nan")
