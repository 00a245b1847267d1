"""Judge confidence: learn which verdicts to trust, then evaluate selectively with a guarantee.

The second paper's pipeline (SPEC section 7): per example, features ``s`` in ``[0, 1]^d``
(a judge's probabilities under several prompts, or a panel's verdicts) and agreement
``a = 1{judge verdict = human label}``; a ranker ``C(s)`` learned so that agreeing examples
rank above disagreeing ones; fixed-sequence testing picks a threshold with a finite-sample
guarantee on the agreement of the examples kept; a cascade of judges escalates the rest.
"""

from .baselines import LogisticConfidence, predictive_probability, simulated_annotators_max_mean
from .examples import ConfidenceData
from .loaders import (
    PRD_JUDGES,
    TE_JUDGES,
    from_probability_table,
    load_prd_vicuna80_confidence,
    load_trust_or_escalate_confidence,
)
from .synthetic import SyntheticConfidence, simulate_confidence_data
from .network import mlp_confidence
from .pac_bayes import PACBayesBound, kl_bernoulli, kl_inverse_upper, pac_bayes_kl_bound
from .ranker import ConfidenceRanker
from .train import optimal_margin
from .metrics import SelectiveCurve, auroc, ranking_loss, selective_accuracy, selective_curve
from .selective import (
    Cascade,
    CascadeResult,
    apply_cascade,
    binomial_upper_bound,
    calibrate_cascade,
    fixed_sequence_threshold,
)

__all__ = [
    "Cascade",
    "CascadeResult",
    "ConfidenceData",
    "ConfidenceRanker",
    "LogisticConfidence",
    "PACBayesBound",
    "PRD_JUDGES",
    "SelectiveCurve",
    "SyntheticConfidence",
    "TE_JUDGES",
    "apply_cascade",
    "auroc",
    "binomial_upper_bound",
    "calibrate_cascade",
    "fixed_sequence_threshold",
    "kl_bernoulli",
    "kl_inverse_upper",
    "mlp_confidence",
    "optimal_margin",
    "pac_bayes_kl_bound",
    "from_probability_table",
    "load_prd_vicuna80_confidence",
    "load_trust_or_escalate_confidence",
    "predictive_probability",
    "ranking_loss",
    "selective_accuracy",
    "selective_curve",
    "simulate_confidence_data",
    "simulated_annotators_max_mean",
]
