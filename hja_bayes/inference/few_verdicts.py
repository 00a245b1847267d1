"""Few verdicts per judge: when the Wald intervals of gamma and mu run short of their level.

Each judge's sensitivity gamma_k is estimated from that judge's own verdicts, and the
consensus is the mean of the rows ``gamma_k mu`` (plus, above rank 0, disagreement): with few
verdicts per judge the likelihood is far from quadratic along these bilinear directions, the
maximum-likelihood scores are inflated (the small-sample bias of logistic fits, once per
judge) and the Wald intervals, which read only the curvature at the estimate, cover less than
their level.  The standard error of gamma_k measures it on the data at hand (gamma averages
1, so it is a relative error).  Simulated panels (``benchmarks/bench_few_verdicts.py``,
``benchmarks/results/few_verdicts.md``): at rank 0 the 95% intervals of mu_i - mu_j covered
0.948 where the judges' median se(gamma_k) was below 0.15, 0.938-0.939 up to
:data:`FEW_VERDICTS_SE`, 0.931, 0.915 and 0.896 above (the gamma_k 0.944 down to 0.821),
more so with more judges; above rank 0 the gamma_k ran short in the same way while mu mostly
kept its level, except with many judges (10 judges of 50 verdicts at rank 1: 0.923).  The
Bayesian model's posterior (:func:`hja_bayes.sample_hja`), whose priors keep gamma and mu
from running away, covered 0.93-0.97 on those panels.

Many judges (crowd raters, say) make it worse at any number of verdicts each: the inflation
(a few percent of every score at 100 verdicts per judge, over 10% at 20) does not shrink as
judges are added, while the intervals do.  :func:`inflation_shift` estimates how far it
moves a typical difference in its own standard errors, ``(median se(gamma_k))^2 / 2`` times
the median ``|mu_i - mu_j| / se(mu_i - mu_j)``; above :data:`INFLATION_SHIFT` the warning
fires whatever the standard errors of gamma (simulated panels of 50 to 300 judges:
``benchmarks/bench_few_verdicts.py --parts many_judges``); on a panel of fewer than
:data:`CROWD_SIZE` judges that the few-verdicts rule already warns, the warning keeps its
small-panel wording and remedy.  The posterior with its default
prior narrows the gap there without closing it; with the judges' spread estimated from the
data (``HJAPriors(gamma_scale="empirical")``, ``--parts empirical``) it covered 0.92-0.95.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataWarning, warn

__all__ = ["CROWD_SIZE", "FEW_VERDICTS_SE", "INFLATION_SHIFT", "few_verdicts",
           "few_verdicts_note", "inflation_shift", "warn_few_verdicts"]

#: The judges' median standard error of gamma_k above which the Wald intervals of mu and
#: gamma are said to run short (see the module's notes).
FEW_VERDICTS_SE = 0.25
#: The :func:`inflation_shift` above which the Wald intervals of mu are said to run short.
INFLATION_SHIFT = 0.3
#: Where the few-verdicts rule already applies, the crowd's sentence is added only from this
#: many judges on: :data:`INFLATION_SHIFT` was calibrated on panels of 50 to 300 judges, and
#: smaller panels with few verdicts each are what the few-verdicts rule was measured on.
CROWD_SIZE = 30
#: At most this many models (evenly spaced in the ranking) enter the median over pairs.
_SHIFT_MODELS = 200


def inflation_shift(gamma_se: np.ndarray, mu: np.ndarray, mu_cov: np.ndarray) -> float:
    """How far the small-sample inflation of the scores moves a typical difference, in its
    own standard errors: ``(median se(gamma_k))^2 / 2`` times the median over pairs of
    ``|mu_i - mu_j| / se(mu_i - mu_j)`` (0 for a single judge).  A yardstick calibrated on
    simulated rank-0 panels, not a bias estimate: the scores' inflation there was 0.5 to 1
    times the squared median se(gamma_k)."""
    gamma_se, mu = _finite(gamma_se), np.asarray(mu, dtype=float)
    if gamma_se.size < 2 or mu.size < 2:
        return 0.0
    keep = np.argsort(-mu, kind="stable")[
        np.unique(np.linspace(0, mu.size - 1, min(mu.size, _SHIFT_MODELS)).astype(int))]
    a, b = np.triu_indices(keep.size, 1)
    a, b = keep[a], keep[b]
    var = np.diagonal(mu_cov)[a] + np.diagonal(mu_cov)[b] - 2 * mu_cov[a, b]
    ok = var > 0
    if not ok.any():
        return 0.0
    t = np.abs(mu[a] - mu[b])[ok] / np.sqrt(var[ok])
    return float(np.median(gamma_se) ** 2 / 2 * np.median(t))


def _finite(gamma_se) -> np.ndarray:
    """The standard errors that are numbers (a judge without one, NaN, does not turn the
    judges' median into NaN and the rules off)."""
    gamma_se = np.asarray(gamma_se, dtype=float).ravel()
    return gamma_se[np.isfinite(gamma_se)]


def few_verdicts(gamma_se: np.ndarray) -> float | None:
    """The judges' median standard error of gamma_k where it is above
    :data:`FEW_VERDICTS_SE`, else None (also for a single judge: gamma = 1 by definition).
    Judges without a standard error (NaN) are left out of the median."""
    gamma_se = _finite(gamma_se)
    if gamma_se.size < 2:
        return None
    median = float(np.median(gamma_se))
    return median if median > FEW_VERDICTS_SE else None


def _diagnosis(gamma_se, mu, mu_cov):
    """``(few, many, shift, median se)`` of the warning and the note, or None when neither
    rule (:func:`few_verdicts`, :data:`INFLATION_SHIFT`) applies.  ``many`` (the crowd's
    sentence) needs :data:`CROWD_SIZE` judges where ``few`` holds already."""
    few = few_verdicts(gamma_se) is not None
    shift = 0.0 if mu is None else inflation_shift(gamma_se, mu, mu_cov)
    many = shift > INFLATION_SHIFT and (not few or _finite(gamma_se).size >= CROWD_SIZE)
    if not few and not many:
        return None
    return few, many, shift, float(np.median(_finite(gamma_se)))


def warn_few_verdicts(gamma_se: np.ndarray, rank: int, mu=None, mu_cov=None) -> None:
    """A DataWarning when :func:`few_verdicts` finds the judges resting on few verdicts, or
    (given the scores ``mu`` and their covariance) :func:`inflation_shift` exceeds
    :data:`INFLATION_SHIFT`."""
    found = _diagnosis(gamma_se, mu, mu_cov)
    if found is None:
        return
    few, many, shift, median = found
    parts = []
    if few and rank == 0:
        parts.append("the Wald intervals of mu and gamma then cover less than their level "
                     "(simulated rank-0 panels of 3 to 20 judges with 20 verdicts each: mu_i - "
                     "mu_j 0.88-0.93, gamma_k 0.72-0.89)")
    elif few:
        parts.append("the Wald intervals of gamma then cover less than their level, and with "
                     "many judges those of mu too (simulated rank-1 panels: gamma_k 0.87-0.92; "
                     "10 judges of 50 verdicts: mu_i - mu_j 0.92)")
    if many:
        parts.append(
            f"with {np.size(gamma_se)} judges the inflation of the scores that each judge's "
            f"small fit brings moves a typical difference by about {shift:.1f} of its "
            "standard errors: it does not shrink as judges are added, the intervals do, and "
            "the Wald intervals of mu_i - mu_j cover less than their level (simulated rank-0 "
            "panels of 50 to 300 judges where this fires: 0.61-0.91)")
    pooled = "one pooled judge (judge=None; hja-bayes fit --judge-col -)"
    remedy = ("The Bayesian model's posterior covered 0.93-0.97 on such panels (sample_hja; "
              f"hja-bayes fit --bayes); more verdicts per judge, or {pooled} when only the "
              "consensus is wanted, also avoid it") if not many else (
        "The Bayesian model's posterior with the judges' spread estimated from the data "
        "(sample_hja(..., priors=HJAPriors(gamma_scale='empirical')); hja-bayes fit --bayes "
        "--gamma-scale empirical) covered 0.92-0.95 of the score differences on such panels "
        "(its default prior 0.82-0.91), its gamma_k 0.88-0.95; more verdicts per judge close "
        f"the gap, and {pooled} avoids it when only the consensus is wanted")
    warn("the judges' sensitivities rest on few verdicts each"
         + ("" if few else " for this many judges")
         + f" (median standard error of gamma_k {median:.2g}, "
         + (f"above {FEW_VERDICTS_SE:g} counts as few" if few else
            f"{np.size(gamma_se)} judges") + "): "
         + "; ".join(parts) + f" (benchmarks/bench_few_verdicts.py). {remedy}", DataWarning)


def few_verdicts_note(gamma_se: np.ndarray, rank: int, posterior: bool, mu=None,
                      mu_cov=None) -> str | None:
    """The report's note of :func:`warn_few_verdicts` (None where it does not apply)."""
    found = _diagnosis(gamma_se, mu, mu_cov)
    if found is None:
        return None
    few, many, shift, median = found
    if not few:
        what = ""
    elif rank == 0:
        what = ("the Wald intervals of the consensus scores μ and the sensitivities γ cover "
                "less than their level (in simulations, 95% intervals covered 0.88–0.93 of the "
                "score differences and 0.72–0.89 of the γ at 20 verdicts per judge). ")
    else:
        what = ("the Wald intervals of the sensitivities γ cover less than their level, and "
                "with many judges those of μ too (in simulations at rank 1, 0.87–0.92 of the "
                "γ; 0.92 of the score differences with 10 judges of 50 verdicts). ")
    if many:
        what += (f"With {np.size(gamma_se)} judges the inflation of the scores that each "
                 f"judge's small fit brings moves a typical difference by about {shift:.1f} of "
                 "its standard errors: it does not shrink as judges are added, the intervals "
                 "do (in simulations with 50 to 300 judges where this is noted, 95% intervals "
                 "covered 0.61–0.91 of the score differences). ")
    return ("The judges' sensitivities rest on few verdicts each"
            + ("" if few else " for this many judges")
            + f" (median standard error of γ {median:.2g}, "
            + (f"above {FEW_VERDICTS_SE:g} counts as few" if few else
               f"{np.size(gamma_se)} judges") + "): "
            + what
            + ("A posterior with the judges' spread estimated from the data ('hja-bayes fit "
               "--bayes --gamma-scale empirical') covered 0.92–0.95 of the score differences "
               "there; more verdicts per judge close the gap, and one pooled judge "
               "('hja-bayes fit --judge-col -') avoids it when only the consensus is wanted."
               if many else
               "In those simulations the posterior's credible intervals, "
               "shown beside them here, covered 0.93–0.97." if posterior else
               "In those simulations a posterior ('hja-bayes fit --bayes') covered 0.93–0.97."))
