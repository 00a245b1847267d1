"""Train -> certify -> apply: the confidence pipeline shared by the CLI and the benchmarks.

* :func:`read_confidence_source` reads labelled examples (a named data set or a CSV of
  per-prompt probabilities) and remembers how their features were built;
* :func:`train_and_certify` trains a :class:`ConfidenceRanker` on one split and certifies a
  threshold on another (group-level test whenever the examples come in groups);
* :func:`apply_ranker` scores new examples with a trained (possibly saved and reloaded)
  ranker and keeps those at or above the certified threshold;
* :func:`run_pipeline` does all three on one data set split by group.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..checks import check_probability
from ..errors import DataError, ParameterError
from ..sources import row_label
from .examples import ConfidenceData
from .loaders import (TE_JUDGES, from_probability_table, load_prd_vicuna80_confidence,
                      load_trust_or_escalate_confidence, trust_or_escalate_features)
from .metrics import auroc, ranking_loss
from .pac_bayes import misranking_bounds
from .ranker import ConfidenceRanker
from .selective import is_grouped

__all__ = [
    "NAMED_SOURCES",
    "PipelineResult",
    "apply_ranker",
    "feature_columns",
    "feature_spec",
    "features_for_apply",
    "group_split",
    "read_confidence_source",
    "run_pipeline",
    "train_and_certify",
]

#: Sources the pipeline knows by name.
NAMED_SOURCES = ("bundled:prd_vicuna80", "trust_or_escalate")


class PipelineResult(NamedTuple):
    """What one train -> certify -> apply run produced.

    Attributes
    ----------
    summary : dict
        Sizes, the certificate (threshold, None: abstain on everything; grouped or not),
        test coverage, agreement and ranking metrics.
    predictions : DataFrame
        Test examples: example (its position among the examples read, from 0), confidence,
        agree, selected.
    ranker : ConfidenceRanker
        The trained ranker, with its ``certificate_``.
    """

    summary: dict
    predictions: pd.DataFrame
    ranker: ConfidenceRanker


def read_confidence_source(source: str, *, judge: str | None = None, human_col: str = "human",
                           group_col: str | None = None, data_dir: str | None = None) -> ConfidenceData:
    """Labelled examples from a named source or a CSV of probabilities.

    ``source`` is ``bundled:prd_vicuna80``, ``trust_or_escalate``, or a CSV whose columns are
    the judge's probabilities of preferring response 1, a human label column (1/2) and
    optionally a group column.  :func:`feature_spec` says how the features were built, so
    :func:`features_for_apply` can rebuild them on new data; ``feature_names`` of the result
    are the columns taken as features.

    Raises
    ------
    DataError
        For a CSV column (other than the labels and groups) that is not a probability:
        text, values outside ``[0, 1]``, or only 0 and 1 (a flag or a label, such as whether
        the judge was right, would leak into the features).
    """
    if source == "bundled:prd_vicuna80":
        return load_prd_vicuna80_confidence(judge or "gpt4")
    if source == "trust_or_escalate":
        return load_trust_or_escalate_confidence(judge or "gpt-4-turbo", data_dir=data_dir)
    frame = _read_csv(source)
    columns = _probability_columns(frame, human_col, group_col, need_human=True)
    probs = _probabilities(frame, columns, human_col)
    flags = [c for c, x in zip(columns, probs.T) if np.all((x == 0) | (x == 1))]
    if flags:
        raise DataError(f"column(s) {flags} hold only 0 and 1: flags or labels, not a judge's "
                        "probabilities of preferring response 1 (as features they would leak "
                        "into the ranker or mislead it); drop them from the file, or name the "
                        "human labels with human_col= (--human-col) and the groups with "
                        "group_col= (--group-col)")
    if _labels(frame, human_col, missing_ok=False) is None:
        raise DataError(f"the human label column {human_col!r} is empty")
    groups = None if group_col is None else _groups(frame, group_col)
    base = from_probability_table(probs, frame[human_col].to_numpy(),
                                  judge=judge or Path(source).stem, feature_names=columns)
    return ConfidenceData(features=base.features, verdict=base.verdict, human=base.human,
                          feature_names=base.feature_names, judge=base.judge,
                          baselines=base.baselines, groups=groups)


def feature_spec(source: str, data: ConfidenceData, *, human_col: str = "human",
                 group_col: str | None = None) -> dict:
    """How the features of ``data`` (read from ``source``) were built, as a JSON-able dict."""
    if source in NAMED_SOURCES:
        return {"kind": source, "judge": data.judge, "feature_names": list(data.feature_names)}
    return {"kind": "probability_table", "columns": list(data.feature_names), "human_col": human_col,
            "group_col": group_col, "judge": data.judge}


def _probabilities(frame: pd.DataFrame, columns, human_col: str, slack: float = 0.0) -> np.ndarray:
    """The probability columns as floats, each bad value named by column and row (``slack``:
    rounding allowed outside ``[0, 1]``)."""
    text = [c for c in columns if frame[c].notna().any()
            and pd.to_numeric(frame[c], errors="coerce").isna().gt(frame[c].isna()).any()]
    if text:
        raise DataError(f"column(s) {text} hold text: every column but the human label "
                        f"({human_col!r}) and the groups (group_col=, --group-col) must be a "
                        "probability of preferring response 1; drop the others")
    probs = frame[list(columns)].to_numpy(dtype=float)
    missing = ~np.isfinite(probs)
    if missing.any():
        row, col = np.argwhere(missing)[0]
        raise DataError(f"{int(missing.sum())} missing or non-finite probabilities, the first "
                        f"in column {columns[col]!r} at {row_label(frame.index, row)}: drop or fill "
                        "those rows")
    outside = [c for c, x in zip(columns, probs.T) if np.any((x < -slack) | (x > 1 + slack))]
    if outside:
        raise DataError(f"column(s) {outside} hold values outside [0, 1]: every column but the "
                        f"human label ({human_col!r}) and the groups (group_col=, --group-col) "
                        "must be a probability of preferring response 1; drop the others")
    return probs


def _labels(frame: pd.DataFrame, human_col: str, missing_ok: bool) -> np.ndarray | None:
    """The human labels (1 or 2) as floats, NaN where missing (allowed with ``missing_ok``);
    None when every one is missing.  Any other value is an error naming its row."""
    human = pd.to_numeric(frame[human_col], errors="coerce")
    missing = frame[human_col].isna().to_numpy()
    bad = ~human.isin([1, 2]).to_numpy() & (~missing if missing_ok else True)
    if bad.any():
        row = int(np.argmax(bad))
        value = frame[human_col].iloc[row]
        value = value.item() if isinstance(value, np.generic) else value
        raise DataError(f"the human label column {human_col!r} holds {value!r} at "
                        f"{row_label(frame.index, row)} ({int(bad.sum())} such rows): labels are 1 "
                        "(response 1 preferred) or 2" + (", or empty where unknown"
                                                         if missing_ok else ""))
    return None if missing.all() else human.to_numpy(dtype=float)


def _groups(frame: pd.DataFrame, group_col: str) -> np.ndarray:
    """The group labels as text; a missing or empty one is an error naming its row (an empty
    cell had mixed NaN with the names and failed deep in NumPy's sort)."""
    column = frame[group_col]
    text = column.astype(str)
    bad = (column.isna() | (text.str.strip() == "")).to_numpy()
    if bad.any():
        raise DataError(f"the group column {group_col!r} is empty at "
                        f"{row_label(frame.index, int(np.argmax(bad)))} ({int(bad.sum())} such rows): "
                        "every example needs its group (a certificate treats groups as "
                        "independent)")
    return text.to_numpy(dtype=object)


def _read_csv(source: str) -> pd.DataFrame:
    """The CSV's rows, indexed by their line in the file (messages name it)."""
    from ..sources import line_index

    path = Path(source)
    if not path.exists():
        raise DataError(f"no such file: {source} (or use one of {list(NAMED_SOURCES)})")
    text = path.read_text(encoding="utf-8-sig")
    if not text.strip():
        raise DataError(f"{source} is empty")
    frame = pd.read_csv(io.StringIO(text))
    if frame.empty:
        raise DataError(f"{source} has a header but no rows")
    lines = line_index(text, ",", len(frame))
    if lines is not None:
        frame.index = lines
    return frame


def _probability_columns(frame, human_col, group_col, *, need_human: bool) -> list[str]:
    for col, what in ((human_col, "human label"), (group_col, "group")):
        if col is not None and col not in frame.columns and (need_human or what == "group"):
            hint = ""
            if what == "human label":
                alike = [c for c in frame.columns if "human" in str(c).lower()]
                hint = (f"; name it with human_col= (--human-col), e.g. {alike[0]!r}" if alike
                        else "; name it with human_col= (--human-col)")
                if "human_preference" in frame.columns and any(
                        str(c).startswith("p_output1__") for c in frame.columns):
                    hint = ("; this is the Trust-or-Escalate release's layout, which the source "
                            "'trust_or_escalate' reads (its folder's parent as data_dir=, "
                            "--data-dir)")
            raise DataError(f"{what} column {col!r} not found{hint}; the columns there are "
                            f"{list(frame.columns)}")
    return [c for c in frame.columns if c not in (human_col, group_col)]


def features_for_apply(spec: dict, source: str, *, judge: str | None = None,
                       human_col: str | None = None, data_dir: str | None = None):
    """Features (built as in training), human labels if present, groups: for :func:`apply_ranker`.

    Parameters
    ----------
    spec : dict
        How the training features were built (:func:`feature_spec`, saved with the ranker).
    source : str
        The named source the ranker was trained on, or a CSV: with the same probability
        columns for a ranker trained on a CSV, in the release's layout (``p_output1__<judge>``
        and ``p_output2__<judge>`` for the three judges) for one trained on
        ``trust_or_escalate``; human labels optional.  A ranker trained on
        ``bundled:prd_vicuna80`` applies to that data set only.
    judge : str, optional
        The judge whose verdicts are scored: must be the one the ranker was trained for (a
        ranker's features are ordered and oriented by its judge's verdicts, and its threshold
        certified on that judge's agreement with humans).
    human_col : str, optional
        A CSV's column of human labels (1/2), when not the one named in training; a column
        named so must exist.  Without it, labels are read where that column is present.
    data_dir : path, optional
        Folder of the unbundled data sets.

    Returns
    -------
    (features, agree or None, groups or None, verdict)

    Raises
    ------
    ParameterError
        For a ``judge`` other than the ranker's.
    DataError
        For data the ranker cannot read, saying what it needs.
    """
    kind, trained = spec.get("kind", "probability_table"), spec.get("judge")
    if judge is not None and trained is not None and judge != trained:
        raise ParameterError(
            f"this ranker was trained for judge {trained!r} and scores that judge's verdicts only "
            "(its features are ordered and oriented by that judge's verdict, its threshold "
            f"certified on that judge's agreement with humans); to assess {judge!r}, train a "
            f"ranker for it (hja-bayes confidence train DATA --judge {judge} --out DIR), or "
            "leave the judge (--judge) out")
    if human_col is not None and source in NAMED_SOURCES:  # before it is read, not after
        raise ParameterError(f"{source} carries its own human labels: human_col is for a CSV")
    if source in NAMED_SOURCES:
        if kind != source:
            what = (f"a CSV of probabilities (columns {list(spec.get('columns', ()))})"
                    if kind == "probability_table" else kind)
            raise DataError(f"this ranker was trained on {what}: apply it to data of that kind, "
                            f"not to {source}")
        data = read_confidence_source(source, judge=trained, data_dir=data_dir)
        return data.features, data.agree, data.groups if is_grouped(data.groups) else None, data.verdict
    frame = _read_csv(source)
    if human_col is not None and human_col not in frame.columns:
        raise DataError(f"{source} has no column {human_col!r} (human_col=, --human-col); its "
                        f"columns: {list(frame.columns)}")
    if kind == "trust_or_escalate":
        return _trust_or_escalate_rows(frame, trained or "gpt-4-turbo", source,
                                       human_col or "human_preference")
    if kind != "probability_table":
        raise DataError(f"this ranker was trained on {kind}, whose features are built from that "
                        "data set's judgments (each verdict's agreement with the other judges', "
                        f"in both orders), not read from a CSV: apply it to {kind}")
    missing = [c for c in spec["columns"] if c not in frame.columns]
    if missing:
        raise DataError(f"{source} lacks the probability columns the ranker was trained on: {missing}")
    human_col = human_col or spec.get("human_col")
    p = _probabilities(frame, list(spec["columns"]), human_col)
    verdict = np.where(p.mean(axis=1) >= 0.5, 1, 2)
    features = np.where(verdict[:, None] == 1, p, 1.0 - p)
    group_col = spec.get("group_col")
    groups = _groups(frame, group_col) if group_col and group_col in frame.columns else None
    return features, _agree(frame, human_col, verdict), groups, verdict


def feature_columns(spec: dict) -> list[str]:
    """The columns of a CSV that a ranker saved with ``spec`` reads its features from."""
    if spec.get("kind") == "trust_or_escalate":
        return list(_TE_COLUMNS)
    return list(spec.get("columns", ()))


#: The columns of the Trust-or-Escalate release that its features are built from.
_TE_COLUMNS = tuple(f"p_output{k}__{j}" for j in TE_JUDGES for k in (1, 2))


def _trust_or_escalate_rows(frame: pd.DataFrame, judge: str, source: str, human_col: str):
    """Features of a CSV in the Trust-or-Escalate release's layout (see features_for_apply)."""
    missing = [c for c in _TE_COLUMNS if c not in frame.columns]
    if missing:
        lacks = (f"lacks {missing}" if len(missing) < len(_TE_COLUMNS)
                 else f"has none of them (its columns: {list(frame.columns)})")
        raise DataError(f"this ranker was trained on trust_or_escalate for {judge!r}: a CSV must "
                        f"hold that release's columns {list(_TE_COLUMNS)} (each judge's "
                        "probability of each output; human_preference, 1 or 2, optional), as "
                        f"calibration_judge_probs.csv does; {source} {lacks}")
    p = _probabilities(frame, _TE_COLUMNS, human_col, slack=1e-3)
    features, verdict, _ = trust_or_escalate_features(pd.DataFrame(p, columns=_TE_COLUMNS), judge)
    return features, _agree(frame, human_col, verdict), None, verdict


def _agree(frame: pd.DataFrame, human_col: str | None, verdict: np.ndarray):
    """Agreement of the verdicts with the file's human labels: None without the column, NA
    where a row has no label."""
    labels = _labels(frame, human_col, missing_ok=True) if human_col in frame.columns else None
    if labels is None:
        return None
    return pd.array(np.where(np.isnan(labels), None, verdict == labels), dtype="boolean")


def group_split(groups, fractions, seed) -> list[np.ndarray]:
    """Indices of the parts of a split (e.g. train / calibration / test), whole groups together."""
    rng = np.random.default_rng(seed)
    unique = rng.permutation(np.unique(groups))
    cuts = np.round(np.cumsum(fractions)[:-1] * len(unique)).astype(int)
    return [np.flatnonzero(np.isin(groups, part)) for part in np.split(unique, cuts)]


def train_and_certify(train: ConfidenceData, calibration: ConfidenceData, *, alpha: float = 0.15,
                      delta: float = 0.1, ranker: ConfidenceRanker | None = None,
                      progress=None) -> ConfidenceRanker:
    """Fit a ranker on ``train`` and certify a threshold on ``calibration``.

    The certificate uses the group-level test whenever the calibration examples come in
    groups (some group with several examples), the binomial test otherwise.

    Parameters
    ----------
    train, calibration : ConfidenceData
        Disjoint examples (whole groups in one of them).
    alpha, delta : float
        Target disagreement rate and failure probability.
    ranker : ConfidenceRanker, optional
        An unfitted ranker with the settings to use (default settings otherwise).
    progress : callable, optional
        Receives stage messages.

    Returns
    -------
    ConfidenceRanker
        Fitted, with ``certificate_``.
    """
    check_probability(alpha, "alpha", open_low=True, open_high=True)
    check_probability(delta, "delta", open_low=True, open_high=True)
    say = progress or (lambda message: None)
    model = ConfidenceRanker() if ranker is None else ranker
    say(f"training the confidence ranker on {train.n} examples "
        f"({'Gaussian weight posterior' if model.posterior else 'deterministic weights'})")
    model.fit(train.features, train.agree)
    grouped = is_grouped(calibration.groups)
    say(f"certifying a threshold on {calibration.n} calibration examples "
        f"({'group-level test' if grouped else 'binomial test'})")
    model.certify(calibration.features, calibration.agree, alpha, delta,
                  groups=calibration.groups if grouped else None)
    return model


def apply_ranker(ranker: ConfidenceRanker, features, agree=None) -> tuple[pd.DataFrame, dict]:
    """Score examples and keep those at or above the certified threshold.

    Returns
    -------
    (predictions, summary)
        ``predictions`` has columns confidence, trusted (and agree when known: NA for a row
        without a human label); ``summary`` the coverage and, with labels, ``labelled`` (the
        rows with one) and the agreement among trusted and all labelled examples, AUROC.
    """
    confidence = ranker.predict_confidence(features)
    threshold = ranker.certificate_.threshold
    trusted = np.zeros(len(confidence), dtype=bool) if threshold is None else confidence >= threshold
    frame = pd.DataFrame({"confidence": confidence, "trusted": trusted})
    summary = {"n": int(len(confidence)), "threshold": threshold, "coverage": float(trusted.mean())}
    if agree is not None:  # NA where a row has no human label: measured on the others
        agree = pd.array(agree, dtype="boolean")
        frame["agree"] = agree
        known = ~np.asarray(agree.isna())
        a, t = agree[known].to_numpy(dtype=bool), trusted[known]
        summary["labelled"] = int(known.sum())
        summary["agreement_trusted"] = float(a[t].mean()) if t.any() else None
        summary["agreement_all"] = float(a.mean()) if a.size else None
        if 0 < a.sum() < a.size:
            summary["auroc"] = auroc(confidence[known], a)
    return frame, summary


def run_pipeline(data: ConfidenceData, *, alpha: float = 0.15, delta: float = 0.1,
                 train_fraction: float = 0.5, calibration_fraction: float = 0.25,
                 epochs: int | None = None, pairs: int | None = None, posterior: bool = True,
                 seed: int = 0, progress=None) -> PipelineResult:
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
    groups = np.arange(data.n) if data.groups is None else np.asarray(data.groups)
    parts = group_split(groups, fractions, seed)
    for name, part in zip(("train", "calibration", "test"), parts):
        if len(part) == 0:
            raise DataError(f"the split leaves the {name} part empty: too few examples to "
                            f"split by these fractions (examples: {data.n}, groups: "
                            f"{len(np.unique(groups))})")
    train, cal, test = (data.subset(i) for i in parts)
    settings = {"posterior": posterior, "seed": seed}
    if epochs is not None:
        settings["n_epochs"] = epochs
    if pairs is not None:
        settings["n_pairs"] = pairs
    ranker = train_and_certify(train, cal, alpha=alpha, delta=delta,
                               ranker=ConfidenceRanker(**settings), progress=progress)
    frame, applied = apply_ranker(ranker, test.features, test.agree)
    c_test = frame["confidence"].to_numpy()
    cert = ranker.certificate_
    summary = {
        "judge": data.judge, "features": list(data.feature_names),
        "alpha": alpha, "delta": delta, "seed": seed,
        "n_train": train.n, "n_calibration": cal.n, "n_test": test.n,
        "threshold": cert.threshold, "grouped_certificate": cert.grouped,
        "certificate": cert.describe(), "margin": float(ranker.margin_),
        "test_coverage": applied["coverage"],
        "test_agreement_selected": applied["agreement_trusted"],
        "test_agreement_all": applied["agreement_all"],
        "test_auroc": None, "test_ranking_loss": None,  # a test split of one class has none
    }
    if 0 < test.agree.sum() < test.n:
        summary["test_auroc"] = auroc(c_test, test.agree)
        summary["test_ranking_loss"] = ranking_loss(c_test, test.agree)
        for name, scores in test.baselines.items():
            summary[f"test_auroc_{name}"] = auroc(scores, test.agree)
    summary.update(misranking_bounds(ranker, c_test, test, train, seed=seed))
    frame = frame.rename(columns={"trusted": "selected"})[["confidence", "agree", "selected"]]
    return PipelineResult(summary, frame.assign(example=parts[2])[["example", *frame]], ranker)
