"""Loaders of confidence examples: probability tables, Trust-or-Escalate, PRD Vicuna80.

:func:`from_probability_table`
    Per-prompt probabilities of preferring response 1 (the simulated-annotator features of
    Jung et al. and of the confidence-ranking paper).
:func:`load_trust_or_escalate_confidence`
    The Trust-or-Escalate calibration split (three judges' probabilities; not bundled).
:func:`load_prd_vicuna80_confidence`
    PRD Vicuna80: five LLM judges' verdicts in both presentation orders against the human
    majority vote (bundled).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import pandas as pd

from ..datasets import load_prd_vicuna80, load_trust_or_escalate
from ..checks import index_of
from ..errors import DataError
from .examples import ConfidenceData, check_features
from .panel import panel_features

__all__ = [
    "PRD_JUDGES",
    "TE_JUDGES",
    "from_probability_table",
    "load_prd_vicuna80_confidence",
    "load_trust_or_escalate_confidence",
    "trust_or_escalate_features",
]

#: Judges in the Trust-or-Escalate calibration split, in the order of the peers' cascade
#: (cheapest first).
TE_JUDGES = ("mistral-7b-instruct", "gpt-3.5-turbo", "gpt-4-turbo")
#: Judges in PRD Vicuna80.
PRD_JUDGES = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")


# --------------------------------------------------------------------------------------
# Per-prompt probability tables (simulated annotators)
# --------------------------------------------------------------------------------------
def from_probability_table(
    probs,
    human,
    *,
    orient: bool = True,
    judge: str = "judge",
    feature_names: Sequence[str] | None = None,
) -> ConfidenceData:
    """Examples from a table of per-prompt probabilities of preferring response 1.

    Column t holds ``P(judge prefers response 1 | x; prompt t)``, one column per prompt /
    in-context example set (Jung et al.'s simulated annotators).  The verdict is the
    majority of the mean: response 1 when the mean probability is at least 1/2, else 2.

    Parameters
    ----------
    probs : array_like, shape (n, T)
        Per-prompt probabilities in ``[0, 1]``.
    human : array_like of {1, 2}, shape (n,)
        The human's preferred response.
    orient : bool
        If True (default) every feature is turned into the probability of the response the
        judge chose (``p`` or ``1 - p``), which makes agreement roughly monotone in the
        features; if False the raw probabilities of response 1 are kept (the paper's form).
    judge : str
        Name of the judge.
    feature_names : sequence of str, optional
        Names of the T columns.

    Returns
    -------
    ConfidenceData
        With baselines ``"predictive_probability"`` (the top probability under the first
        prompt) and ``"simulated_annotators"`` (max-mean: the top class probability averaged
        over the prompts).

    Raises
    ------
    DataError
        On probabilities outside ``[0, 1]``, NaN, or human labels other than 1 and 2.

    Examples
    --------
    >>> d = from_probability_table([[0.9, 0.8], [0.3, 0.6]], [1, 1])
    >>> d.verdict.tolist(), d.agree.tolist()
    ([1, 2], [True, False])
    >>> d.features.round(2).tolist()
    [[0.9, 0.8], [0.7, 0.4]]
    """
    p = check_features(probs, name="probabilities", unit=True)
    h = np.asarray(human)
    if h.shape != (p.shape[0],) or not np.all(np.isin(h, (1, 2))):
        raise DataError(f"human must be a vector of 1/2 labels of length {p.shape[0]}")
    mean = p.mean(axis=1)
    verdict = np.where(mean >= 0.5, 1, 2)
    chosen = np.where(verdict[:, None] == 1, p, 1.0 - p)
    baselines = {
        "predictive_probability": np.maximum(p[:, 0], 1.0 - p[:, 0]),
        "simulated_annotators": np.maximum(mean, 1.0 - mean),
    }
    return ConfidenceData(
        features=chosen if orient else p,
        verdict=verdict,
        human=h.astype(int),
        feature_names=tuple(feature_names) if feature_names is not None else (),
        judge=judge,
        baselines=baselines,
    )


# --------------------------------------------------------------------------------------
# Trust or Escalate
# --------------------------------------------------------------------------------------
def load_trust_or_escalate_confidence(
    judge: str = "gpt-4-turbo",
    data_dir: str | os.PathLike | None = None,
    *,
    orient: bool = True,
    panel: bool = True,
) -> ConfidenceData:
    """Examples for one Trust-or-Escalate judge (500 calibration items; not bundled).

    The judge's verdict is the output with the higher probability (output 1 on an exact
    tie); the human label is ``human_preference``.  Features are the judges' probabilities
    (already averaged by the data's authors over their simulated annotators).

    Parameters
    ----------
    judge : {"gpt-4-turbo", "gpt-3.5-turbo", "mistral-7b-instruct"}
        The judge whose agreement is the target.
    data_dir : path, optional
        Folder holding ``trust_or_escalate/`` (see :func:`hja_bayes.datasets.find_data_dir`).
    orient : bool
        If True (default) each feature is a judge's probability of the output *the target
        judge chose*; if False, each judge's probability of output 1.
    panel : bool
        If True (default) the features are all three judges' probabilities (target first);
        if False, the target judge's only.

    Returns
    -------
    ConfidenceData
        Verdict and human coded 1 / 2; baseline ``"predictive_probability"`` is the target
        judge's top probability (which is also Jung et al.'s max-mean, the release holding
        only the averaged probabilities).
    """
    _check_te_judge(judge)
    df = load_trust_or_escalate(data_dir)
    features, verdict, names = trust_or_escalate_features(df, judge, orient=orient, panel=panel)
    p1 = df[f"p_output1__{judge}"].to_numpy(dtype=np.float64)
    p2 = df[f"p_output2__{judge}"].to_numpy(dtype=np.float64)
    return ConfidenceData(
        features=features,
        verdict=verdict,
        human=df["human_preference"].to_numpy(),
        feature_names=names,
        judge=judge,
        baselines={"predictive_probability": np.maximum(p1, p2)},
    )


def _check_te_judge(judge: str) -> None:
    if judge not in TE_JUDGES:
        raise DataError(f"unknown Trust-or-Escalate judge {judge!r}; choose one of {TE_JUDGES}")


def trust_or_escalate_features(frame: pd.DataFrame, judge: str = "gpt-4-turbo", *,
                               orient: bool = True, panel: bool = True):
    """Features and verdicts of one judge from a table in the Trust-or-Escalate layout.

    The table holds ``p_output1__<judge>`` and ``p_output2__<judge>`` for the judges used
    (all three with ``panel``), as the release does; it is how
    :func:`load_trust_or_escalate_confidence` builds its features, and how a ranker trained
    on them scores new rows of that layout.

    Returns
    -------
    (features, verdict, feature_names)
        Features of shape (n, 3) with ``panel`` (the target judge first), else (n, 1);
        verdicts 1 / 2.

    Raises
    ------
    DataError
        For an unknown judge, or a table lacking some of the columns needed (named).
    """
    _check_te_judge(judge)
    judges = (judge,) + tuple(j for j in TE_JUDGES if j != judge) if panel else (judge,)
    missing = [f"p_output{k}__{j}" for j in judges for k in (1, 2)
               if f"p_output{k}__{j}" not in frame.columns]
    if missing:
        raise DataError(f"the Trust-or-Escalate layout lacks the column(s) {missing}")
    p1 = frame[f"p_output1__{judge}"].to_numpy(dtype=np.float64)
    p2 = frame[f"p_output2__{judge}"].to_numpy(dtype=np.float64)
    verdict = np.where(p1 >= p2, 1, 2)
    cols = []
    for j in judges:
        q1 = frame[f"p_output1__{j}"].to_numpy(dtype=np.float64)
        q2 = frame[f"p_output2__{j}"].to_numpy(dtype=np.float64)
        cols.append(np.where(verdict == 1, q1, q2) if orient else q1)
    # the released pairs (p1, p2) sum to 1 up to ~4e-2; clip stray rounding above 1
    features = np.clip(np.column_stack(cols), 0.0, 1.0)
    return features, verdict, tuple(f"p_{'chosen' if orient else 'output1'}__{j}" for j in judges)


# --------------------------------------------------------------------------------------
# PRD Vicuna80
# --------------------------------------------------------------------------------------
def _prd_panel(judgments: pd.DataFrame):
    from ..comparisons import Comparisons
    from ..hja import fit_hja

    return fit_hja(Comparisons.from_frame(judgments), rank=1, position_bias=True)


def _majority(winners: pd.Series):
    counts = winners.value_counts()
    if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
        return None
    return counts.index[0]


def load_prd_vicuna80_confidence(judge: str = "gpt4", *, drop_split_votes: bool = True,
                                 panel=None) -> ConfidenceData:
    """Examples for one PRD Vicuna80 judge against the human majority vote (bundled data).

    An example is one (question, pair of answers) that humans judged, shown in the order the
    humans saw it.  Verdicts have three classes: 0 = the first-shown answer wins, 1 = the
    second wins, 2 = tie; the human label is the majority of the human votes (items whose
    votes split evenly, e.g. 1-1-1, are dropped when ``drop_split_votes``).  The target is
    whether ``judge``'s verdict in the human-shown order equals the human majority.

    Features ("agrees" means "gives the same verdict as the target judge in the human-shown
    order"; all are shares in ``[0, 1]`` except the real-valued panel features):

    - ``self_consistency``: the target judge agrees with itself when the order is swapped;
    - ``agrees__<k>__<order>`` for each other judge k and order (``same`` / ``swapped``);
    - ``panel_agreement``: the share of the other judges' verdicts, both orders, that agree
      (a strong signal: the panel's consensus);
    - ``verdict_is_tie``: the target judge called a tie;
    - with ``panel``: the panel-aware features of :mod:`hja_bayes.confidence.panel`
      (real numbers, not only shares), from an HJA model of all judges' verdicts, and
      ``hja_weighted_agreement``, the other judges' agreement weighted by their fitted
      discrimination ``gamma`` (negative gammas count 0).

    Parameters
    ----------
    judge : {"bard", "claude", "gpt35", "gpt4", "vicuna-13b"}
        The judge whose agreement is the target.
    drop_split_votes : bool
        Drop items with no strict human majority (default); if False they count as ties.
    panel : HJAFit or "fit", optional
        Add panel-aware features from this fitted HJA panel; ``"fit"`` fits one (rank 1,
        with position bias) on all PRD Vicuna80 judgments (the judges' verdicts only).

    Returns
    -------
    ConfidenceData
        Groups are the question ids (use them to keep a question inside one fold).  Baselines:
        ``"self_consistency"`` and ``"panel_agreement"``.

    Examples
    --------
    >>> d = load_prd_vicuna80_confidence("gpt4")
    >>> d.n, d.n_features
    (744, 11)
    """
    if judge not in PRD_JUDGES:
        raise DataError(f"unknown PRD Vicuna80 judge {judge!r}; choose one of {PRD_JUDGES}")
    prd = load_prd_vicuna80()
    llm = prd.judgments
    models = set(llm["model_a"]) | set(llm["model_b"])
    hum = prd.human[prd.human["model_a"].isin(models) & prd.human["model_b"].isin(models)]
    keys = ["question_id", "model_a", "model_b"]
    if drop_split_votes:
        items = hum.groupby(keys)["winner"].apply(_majority).dropna().reset_index()
    else:
        items = hum.groupby(keys)["winner"].apply(lambda w: _majority(w) or "tie").reset_index()
    code = {"model_a": 0, "model_b": 1, "tie": 2}
    human = items["winner"].map(code).to_numpy()

    # each judge's verdict for (question, first, second), as the winning model's name
    won = np.where(
        llm["winner"] == "model_a", llm["model_a"], np.where(llm["winner"] == "model_b", llm["model_b"], "tie")
    )
    lookup = pd.Series(won, index=pd.MultiIndex.from_frame(llm[["judge", "question_id", "model_a", "model_b"]]))
    if lookup.index.has_duplicates:
        raise DataError("PRD Vicuna80 judgments hold duplicate (judge, question, order) rows")

    q = items["question_id"].to_numpy()
    first = items["model_a"].to_numpy()
    second = items["model_b"].to_numpy()

    def verdicts(k: str, swapped: bool) -> np.ndarray:
        a, b = (second, first) if swapped else (first, second)
        idx = pd.MultiIndex.from_arrays([np.full(len(q), k), q, a, b])
        w = lookup.reindex(idx).to_numpy()
        if pd.isna(w).any():
            raise DataError(f"judge {k} lacks a verdict for some human-judged items")
        # back to the human-shown orientation
        return np.where(w == first, 0, np.where(w == second, 1, 2))

    target = verdicts(judge, False)
    cols = {"self_consistency": (verdicts(judge, True) == target).astype(float)}
    others = []
    for k in PRD_JUDGES:
        if k == judge:
            continue
        for order, swapped in (("same", False), ("swapped", True)):
            col = (verdicts(k, swapped) == target).astype(float)
            cols[f"agrees__{k}__{order}"] = col
            others.append(col)
    cols["panel_agreement"] = np.mean(others, axis=0)
    cols["verdict_is_tie"] = (target == 2).astype(float)
    if panel is not None:
        fit = _prd_panel(llm) if isinstance(panel, str) else panel
        cols.update(panel_features(fit, judge, first, second, target))
        # the other judges' agreement weighted by their discrimination gamma (>= 0)
        weights = np.array([max(float(fit.gamma[index_of(k, fit.judges, "judge")]), 0.0)
                            for k in PRD_JUDGES if k != judge for _ in range(2)])
        weights = weights if weights.sum() > 0 else np.ones_like(weights)
        cols["hja_weighted_agreement"] = np.column_stack(others) @ weights / weights.sum()
    return ConfidenceData(
        features=np.column_stack(list(cols.values())),
        verdict=target,
        human=human,
        feature_names=tuple(cols),
        judge=judge,
        baselines={
            "self_consistency": cols["self_consistency"],
            "panel_agreement": cols["panel_agreement"],
        },
        groups=q,
    )
