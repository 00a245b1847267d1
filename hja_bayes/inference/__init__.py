"""Wald inference for fitted HJA models: the tangent chart, the information (Fisher, sandwich,
cluster-robust) and delta-method intervals."""

from .chart import RANK_TOLERANCE, tangent_basis
from .information import (
    COV_TYPES,
    chart_information,
    default_cov_type,
    score_covariance,
)
from .wald import MAX_CONDITION, Interval, WaldInference, wald_inference

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
