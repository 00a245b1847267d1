"""Judge confidence: learn which verdicts to trust, then evaluate selectively with a guarantee.

The second paper's pipeline (SPEC section 7): per example, features ``s`` (a judge's
probabilities under several prompts, a panel's verdicts, statistics of a fitted HJA panel)
and agreement ``a = 1{judge verdict = human label}``; a ranker ``C(s)`` learned so that
agreeing examples rank above disagreeing ones (:class:`ConfidenceRanker`, a scikit-learn
classifier); fixed-sequence testing picks a threshold with a finite-sample guarantee on the
agreement of the examples kept (by group when examples come in groups); a cascade of judges
escalates the rest.

Modules: ``examples`` (the container and checks), ``loaders``, ``synthetic``, ``panel``
(HJA features), ``inputs``, ``network``, ``train``, ``fitting``, ``ranker``, ``storage``,
``pac_bayes``, ``metrics``, ``selective``, ``grouped``, ``cascade``, ``baselines``,
``pipeline`` (train -> certify -> apply, shared by the CLI and the benchmarks).
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
from .pac_bayes import (
    HoldoutBound,
    PACBayesBound,
    holdout_misranking_bound,
    kl_bernoulli,
    kl_inverse_upper,
    pac_bayes_kl_bound,
)
from .ranker import ConfidenceRanker, RankerNotFittedError, load_ranker
from .storage import save_ranker
from .train import optimal_margin
from .metrics import SelectiveCurve, auroc, ranking_loss, selective_accuracy, selective_curve
from .cascade import Cascade, CascadeResult, apply_cascade, calibrate_cascade
from .selective import Certificate, binomial_upper_bound, certify_threshold, fixed_sequence_threshold

__all__ = [
    "Cascade",
    "CascadeResult",
    "Certificate",
    "ConfidenceData",
    "ConfidenceRanker",
    "HoldoutBound",
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
    "certify_threshold",
    "fixed_sequence_threshold",
    "holdout_misranking_bound",
    "kl_bernoulli",
    "kl_inverse_upper",
    "load_ranker",
    "mlp_confidence",
    "optimal_margin",
    "pac_bayes_kl_bound",
    "from_probability_table",
    "load_prd_vicuna80_confidence",
    "load_trust_or_escalate_confidence",
    "predictive_probability",
    "RankerNotFittedError",
    "ranking_loss",
    "save_ranker",
    "selective_accuracy",
    "selective_curve",
    "simulate_confidence_data",
    "simulated_annotators_max_mean",
]
