"""Wald inference for fitted HJA models: the tangent chart (chart.py), the information
(Fisher, sandwich, cluster-robust; information.py), the builder (wald.py) and its result with
delta-method intervals (result.py; which score differences a table lists: pairs.py).

agreement.py (Krippendorff's alpha, Cohen's kappa, agreement with a reference) is imported
on its own, as :func:`hja_bayes.agreement`: binding its function here would hide the module."""

from .chart import RANK_TOLERANCE, FactorChart, factor_chart, tangent_basis
from .information import (
    COV_TYPES,
    chart_information,
    default_cov_type,
    score_covariance,
)
from .pairs import ALL_PAIRS_MAX_ITEMS, item_pairs
from .intervals import Interval
from .result import WaldInference
from .wald import MAX_CONDITION, wald_inference

__all__ = [
    "ALL_PAIRS_MAX_ITEMS",
    "COV_TYPES",
    "FactorChart",
    "Interval",
    "MAX_CONDITION",
    "RANK_TOLERANCE",
    "WaldInference",
    "chart_information",
    "default_cov_type",
    "factor_chart",
    "item_pairs",
    "score_covariance",
    "tangent_basis",
    "wald_inference",
]
