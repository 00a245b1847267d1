"""The HJA MAP solver: state, pure kernels, driver, rank selection and the fitted result.

``state`` (the solver state), ``kernels`` (pure ``init`` / ``step``, the block steps, and
``run_steps``: chunks of outer steps with the fail-safe in one device loop), ``solve`` (the
driver: chunks between host checks), ``selection`` (BIC, CV, folds, patience), ``result``
(:class:`HJAFit` as data), ``inputs`` (checks shared with the Bayesian sampler) and
``fit`` (the public fitters).
"""

from .fit import fit_btl_svd, fit_hja
from .inputs import check_fit_inputs, separated_judges
from .result import DEFAULT_RIDGE, HJAFit
from .selection import rank_criteria, split_comparisons

__all__ = [
    "DEFAULT_RIDGE",
    "HJAFit",
    "check_fit_inputs",
    "fit_btl_svd",
    "fit_hja",
    "rank_criteria",
    "separated_judges",
    "split_comparisons",
]
