"""The judge table: one row per judge of an HJA fit.

It arranges the fit's sensitivities and position biases with their Wald intervals, the
leverage diagnostics (:mod:`hja_bayes.diagnostics`), credible intervals from posterior
draws, and bookkeeping of the judge's own data (comparisons, share of its pairs shown in
both orders, share of its rows without a usable verdict).  Kendall's tau compares the
judge's own ranking -- its per-judge Bradley-Terry scores (:func:`hja_bayes.fit_per_judge_btl`),
fitted to its verdicts alone -- with the consensus
(:func:`~hja_bayes.diagnostics.own_ranking_agreement`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..bayes.compare import check_posterior
from ..checks import check_level
from ..diagnostics import judge_leverage, own_ranking_agreement
from ..errors import ParameterError
from ..hja.inputs import without_interval
from ..inference import WaldInference
from .fitted import check_fit, is_hja, wald
from .leaderboard import counts, credible, posterior_draws, table_meta
from .observed import both_orders_share, invalid_share

__all__ = ["judge_table"]


@one_blas_thread
def judge_table(
    fit,
    idata=None,
    level: float = 0.95,
    *,
    inference: WaldInference | None = None,
) -> pd.DataFrame:
    """One row per judge: sensitivity, position bias, leverage and agreement with the consensus.

    Parameters
    ----------
    fit : HJAFit
    idata : arviz.InferenceData, optional
        Posterior draws of the same model: adds ``gamma_post_mean`` (posterior mean),
        ``gamma_cred_lower``, ``gamma_cred_upper`` (and ``beta_cred_lower``,
        ``beta_cred_upper``, ``nu_cred_lower``, ...), equal-tailed credible intervals.  With
        prompt effects the posterior's gamma is ``gamma_marginal``, on the Wald columns'
        population-averaged scale (an approximation: its mean can differ from the MAP of the
        model without answer effects by more than the intervals' widths), and no credible
        beta, nu or cut gap is shown: the posterior's are per prompt, on another scale
        (``attrs["conditional_beta"]``).
    level : float
        Level of the intervals.
    inference : WaldInference, optional
        Wald inference to use instead of the fit's.

    Returns
    -------
    DataFrame
        Columns ``judge``; ``gamma``, ``gamma_lower``, ``gamma_upper`` (Wald);
        ``beta``, ``beta_lower``, ``beta_upper`` and ``both_orders`` (the share of the
        judge's pairs of models it saw in both presentation orders: at 0, its beta rests on
        the model's structure alone and cannot be told apart from a preference for the
        models it saw first) when position bias was estimated; at rank >= 1, ``leverage``
        (h_k = |(U V^T)_k|), ``rho`` (relative leverage) and ``high_leverage`` (high gamma
        and high h, :func:`hja_bayes.diagnostics.judge_leverage`) -- at rank 0 there is no
        structured disagreement and these columns are left out; the outcome model's
        per-judge parameters with their Wald intervals (``nu``, ``nu_lower``, ``nu_upper``
        for Davidson's ties: NaN bounds for a judge that never tied, its nu held at 0;
        ``gap_1``, ``gap_1_lower``, ... for ordered verdicts, the gaps between the
        positive cut points: :meth:`~hja_bayes.inference.WaldInference.outcome_parameters`;
        NaN bounds beside a level the judge never used, nor its mirror, where the ridge
        alone sets the gap: :func:`hja_bayes.hja.inputs.unused_levels`);
        ``comparisons``;
        ``invalid_share`` (rows of the judge without a usable verdict, when any row was
        rejected); ``rank_corr``, Kendall's tau-b between the judge's own ranking and the
        consensus (:func:`own_ranking_agreement`).  ``attrs["meta"]`` says what the
        numbers are.

    Raises
    ------
    ParameterError
        For a BTL fit (it has no judges), data instead of a fit, or a bad level.
    """
    check_fit(fit, "judge_table")
    if not is_hja(fit):
        raise ParameterError("judge_table needs an HJA fit: a pooled BTL fit has no judges")
    if idata is not None:
        check_posterior(idata, fit)
    level = check_level(level)
    inference = wald(fit, inference)
    g = inference.gamma(level)
    blank = without_interval(fit.data, fit.outcome_model)  # the ridge's: see the warnings
    columns = {
        "judge": list(fit.judges),
        "gamma": g.estimate,
        "gamma_lower": np.where(blank["gamma"], np.nan, g.lower),
        "gamma_upper": np.where(blank["gamma"], np.nan, g.upper),
    }
    if fit.position_bias:
        b = inference.position_biases(level)
        columns.update(beta=b.estimate, beta_lower=b.lower, beta_upper=b.upper,
                       both_orders=both_orders_share(fit.data))
    if fit.rank > 0:
        lev = judge_leverage(fit.gamma, fit.mu, fit.U, fit.V)
        columns.update(leverage=lev.h, rho=lev.rho, high_leverage=lev.high)
    for name in fit.outcome_model.aux_names:  # Davidson's nu, the ordered scale's cut gaps
        iv = inference.outcome_parameters(name, level)
        none = blank.get(name, np.zeros(len(fit.judges), dtype=bool))
        columns.update({name: iv.estimate, f"{name}_lower": np.where(none, np.nan, iv.lower),
                        f"{name}_upper": np.where(none, np.nan, iv.upper)})
    columns["comparisons"] = counts(fit.data.comparisons_per_judge())
    invalid = invalid_share(fit.data)
    if invalid is not None:
        columns["invalid_share"] = invalid
    columns["rank_corr"] = own_ranking_agreement(fit)
    n_draws = None
    conditional = idata is not None and "gamma_marginal" in idata.posterior
    if idata is not None:
        # with prompt effects, gamma on the population-averaged scale of the Wald columns
        name = "gamma_marginal" if conditional else "gamma"
        draws = posterior_draws(idata, name, fit.judges, "judge")
        n_draws = int(draws.shape[0])
        mean, lo, hi = credible(draws, level)
        columns.update(gamma_post_mean=mean, gamma_cred_lower=lo, gamma_cred_upper=hi)
        if fit.position_bias and not conditional:
            _, lo, hi = credible(posterior_draws(idata, "beta", fit.judges, "judge"), level)
            columns.update(beta_cred_lower=lo, beta_cred_upper=hi)
        for name in fit.outcome_model.aux_names if not conditional else ():
            _, lo, hi = credible(posterior_draws(idata, name, fit.judges, "judge"), level)
            columns.update({f"{name}_cred_lower": lo, f"{name}_cred_upper": hi})
    table = pd.DataFrame(columns)
    # with prompt effects the posterior's beta is per prompt: not set beside the Wald beta
    table.attrs.update(level=level, rank=int(fit.rank), position_bias=bool(fit.position_bias),
                       bayes=idata is not None, n_draws=n_draws,
                       conditional_beta=bool(conditional and fit.position_bias),
                       meta=table_meta(fit, "judges", level, None, n_draws=n_draws,
                                       credible_gamma="gamma_marginal" if conditional else
                                       "gamma" if idata is not None else None))
    return table
