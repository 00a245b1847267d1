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
"""

from __future__ import annotations

import numpy as np

from ..errors import DataWarning, warn

__all__ = ["FEW_VERDICTS_SE", "few_verdicts", "few_verdicts_note", "warn_few_verdicts"]

#: The judges' median standard error of gamma_k above which the Wald intervals of mu and
#: gamma are said to run short (see the module's notes).
FEW_VERDICTS_SE = 0.25


def few_verdicts(gamma_se: np.ndarray) -> float | None:
    """The judges' median standard error of gamma_k where it is above
    :data:`FEW_VERDICTS_SE`, else None (also for a single judge: gamma = 1 by definition)."""
    gamma_se = np.asarray(gamma_se, dtype=float)
    if gamma_se.size < 2:
        return None
    median = float(np.median(gamma_se))
    return median if median > FEW_VERDICTS_SE else None


def warn_few_verdicts(gamma_se: np.ndarray, rank: int) -> None:
    """A DataWarning when :func:`few_verdicts` finds the judges resting on few verdicts."""
    median = few_verdicts(gamma_se)
    if median is None:
        return
    if rank == 0:
        what = ("the Wald intervals of mu and gamma then cover less than their level (simulated "
                "rank-0 panels of 3 to 20 judges with 20 verdicts each: mu_i - mu_j 0.88-0.93, "
                "gamma_k 0.72-0.89")
    else:
        what = ("the Wald intervals of gamma then cover less than their level, and with many "
                "judges those of mu too (simulated rank-1 panels: gamma_k 0.87-0.92; 10 judges "
                "of 50 verdicts: mu_i - mu_j 0.92")
    warn(
        f"the judges' sensitivities rest on few verdicts each (median standard error of "
        f"gamma_k {median:.2g}, above {FEW_VERDICTS_SE:g} counts as few): {what}; "
        "benchmarks/bench_few_verdicts.py). The Bayesian model's posterior covered 0.93-0.97 "
        "on such panels (sample_hja; hja-bayes fit --bayes); more verdicts per judge, or one "
        "pooled judge (judge=None) when only the consensus is wanted, also avoid it",
        DataWarning)


def few_verdicts_note(gamma_se: np.ndarray, rank: int, posterior: bool) -> str | None:
    """The report's note of :func:`warn_few_verdicts` (None where it does not apply)."""
    median = few_verdicts(gamma_se)
    if median is None:
        return None
    if rank == 0:
        what = ("the consensus scores μ and the sensitivities γ cover less than their level "
                "(in simulations, 95% intervals covered 0.88–0.93 of the score differences and "
                "0.72–0.89 of the γ at 20 verdicts per judge). ")
    else:
        what = ("the sensitivities γ cover less than their level, and with many judges those "
                "of μ too (in simulations at rank 1, 0.87–0.92 of the γ; 0.92 of the score "
                "differences with 10 judges of 50 verdicts). ")
    return (f"The judges' sensitivities rest on few verdicts each (median standard error of "
            f"γ {median:.2g}, above {FEW_VERDICTS_SE:g} counts as few): the Wald intervals of "
            + what
            + ("In those simulations the posterior's credible intervals, shown beside them "
               "here, covered 0.93–0.97." if posterior else "In those simulations a "
               "posterior ('hja-bayes fit --bayes') covered 0.93–0.97."))
