"""Train -> certify -> apply: the confidence pipeline shared by the CLI and the benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..checks import check_probability
from ..errors import DataError, ParameterError
from .examples import ConfidenceData
from .loaders import from_probability_table, load_prd_vicuna80_confidence, load_trust_or_escalate_confidence
from .metrics import auroc, ranking_loss, selective_accuracy
from .ranker import ConfidenceRanker
from .selective import fixed_sequence_threshold

__all__ = ["PipelineResult", "group_split", "read_confidence_source", "run_pipeline"]

#: Sources the pipeline knows by name.
NAMED_SOURCES = ("bundled:prd_vicuna80", "trust_or_escalate")


class PipelineResult(NamedTuple):
    """What one train -> certify -> apply run produced.

    Attributes
    ----------
    summary : dict
        Sizes, the certified threshold (None: abstain on everything), test coverage,
        agreement and ranking metrics.
    predictions : DataFrame
        Test examples: confidence, agree, selected.
    ranker : ConfidenceRanker
        The trained ranker.
    """

    summary: dict
    predictions: pd.DataFrame
    ranker: ConfidenceRanker


def read_confidence_source(source: str, *, judge: str | None = None, human_col: str = "human",
                           data_dir: str | None = None) -> ConfidenceData:
    """Examples for the confidence ranker from a named source or a CSV of probabilities.

    ``source`` is ``bundled:prd_vicuna80``, ``trust_or_escalate``, or a CSV whose columns are
    the judge's probabilities of preferring response 1 plus a human label column (1/2).
    """
    if source == "bundled:prd_vicuna80":
        return load_prd_vicuna80_confidence(judge or "gpt4")
    if source == "trust_or_escalate":
        return load_trust_or_escalate_confidence(judge or "gpt-4-turbo", data_dir=data_dir)
    path = Path(source)
    if not path.exists():
        raise DataError(f"no such file: {source} (or use one of {list(NAMED_SOURCES)})")
    frame = pd.read_csv(path)
    if human_col not in frame.columns:
        raise DataError(f"column {human_col!r} not found; the columns there are "
                        f"{list(frame.columns)}")
    columns = [c for c in frame.columns if c != human_col]
    try:
        probs = frame[columns].to_numpy(dtype=float)
    except ValueError as exc:
        raise DataError(f"every column but {human_col!r} must hold probabilities: {exc}") from None
    return from_probability_table(probs, frame[human_col].to_numpy(),
                                  judge=judge or path.stem, feature_names=columns)


def group_split(groups, fractions, seed) -> list[np.ndarray]:
    """Indices of train / calibration / test examples, whole groups kept together."""
    rng = np.random.default_rng(seed)
    unique = rng.permutation(np.unique(groups))
    cuts = np.round(np.cumsum(fractions)[:-1] * len(unique)).astype(int)
    parts = np.split(unique, cuts)
    return [np.flatnonzero(np.isin(groups, part)) for part in parts]


def run_pipeline(data: ConfidenceData, *, alpha: float = 0.15, delta: float = 0.1,
                 train_fraction: float = 0.5, calibration_fraction: float = 0.25,
                 epochs: int = 30, pairs: int = 5000, posterior: bool = True, seed: int = 0,
                 progress=None) -> PipelineResult:
    """Split by group, train the ranker, certify a threshold on calibration, apply to test.

    Raises
    ------
    ParameterError
        For ``alpha`` or ``delta`` outside (0, 1), or fractions that are not positive and
        summing below 1.
    """
    check_probability(alpha, "alpha", open_low=True, open_high=True)
    check_probability(delta, "delta", open_low=True, open_high=True)
    fractions = (train_fraction, calibration_fraction, 1.0 - train_fraction - calibration_fraction)
    if min(fractions) <= 0:
        raise ParameterError("train and calibration fractions must be positive and sum below 1")
    say = progress or (lambda message: None)
    groups = np.arange(data.n) if data.groups is None else np.asarray(data.groups)
    train, cal, test = (data.subset(i) for i in group_split(groups, fractions, seed))
    say(f"training the confidence ranker ({epochs} epochs, {pairs} pairs, "
        f"{'Gaussian weight posterior' if posterior else 'deterministic weights'})")
    ranker = ConfidenceRanker(posterior=posterior, n_pairs=pairs, n_epochs=epochs, seed=seed)
    ranker.fit(train.features, train.agree)
    say("calibrating the threshold by fixed-sequence testing")
    c_cal, c_test = ranker.predict(cal.features), ranker.predict(test.features)
    threshold = fixed_sequence_threshold(c_cal, cal.agree, alpha, delta)
    coverage, agreement = selective_accuracy(c_test, test.agree, threshold)
    summary = {
        "judge": data.judge, "alpha": alpha, "delta": delta, "seed": seed,
        "n_train": train.n, "n_calibration": cal.n, "n_test": test.n,
        "threshold": threshold, "margin": float(ranker.margin_),
        "test_coverage": coverage,
        "test_agreement_selected": None if np.isnan(agreement) else agreement,
        "test_agreement_all": float(np.mean(test.agree)),
        "test_auroc": auroc(c_test, test.agree),
        "test_ranking_loss": ranking_loss(c_test, test.agree),
    }
    for name, scores in test.baselines.items():
        summary[f"test_auroc_{name}"] = auroc(scores, test.agree)
    predictions = pd.DataFrame({
        "confidence": c_test, "agree": test.agree,
        "selected": (c_test >= threshold) if threshold is not None else False,
    })
    return PipelineResult(summary, predictions, ranker)
