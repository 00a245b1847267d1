"""Wald inference for fitted HJA models: the tangent chart (chart.py), the information
(Fisher, sandwich, cluster-robust; information.py), the builder (wald.py) and its result with
delta-method intervals (result.py)."""

from .chart import RANK_TOLERANCE, tangent_basis
from .information import (
    COV_TYPES,
    chart_information,
    default_cov_type,
    score_covariance,
)
from .result import Interval, WaldInference
from .wald import MAX_CONDITION, wald_inference

__all__ = [
    "COV_TYPES",
    "Interval",
    "MAX_CONDITION",
    "RANK_TOLERANCE",
    "WaldInference",
    "chart_information",
    "default_cov_type",
    "score_covariance",
    "tangent_basis",
    "wald_inference",
]
