"""Examples for confidence ranking: a judge's features, its verdict, the human label.

One example is one pairwise judgement.  Its features ``s`` in ``[0, 1]^d`` describe how the
judge (and possibly a panel of other judges) saw it; the target is *agreement*
``a = 1{verdict = human}``.  A confidence ranker learns to put agreeing examples above
disagreeing ones.

Loaders
-------
:func:`from_probability_table`
    Per-prompt probabilities of preferring response 1 (the simulated-annotator features of
    Jung et al. and of the confidence-ranking paper).
:func:`load_trust_or_escalate_confidence`
    The Trust-or-Escalate calibration split (three judges' probabilities; not bundled).
:func:`load_prd_vicuna80_confidence`
    PRD Vicuna80: five LLM judges' verdicts in both presentation orders against the human
    majority vote (bundled).
:func:`simulate_confidence_data`
    A Bernoulli simulation in which the judge's own confidence is non-monotone in agreement.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from ..datasets import load_prd_vicuna80, load_trust_or_escalate
from ..errors import DataError

__all__ = [
    "ConfidenceData",
    "SyntheticConfidence",
    "from_probability_table",
    "load_trust_or_escalate_confidence",
    "load_prd_vicuna80_confidence",
    "simulate_confidence_data",
    "TE_JUDGES",
    "PRD_JUDGES",
]

#: Judges in the Trust-or-Escalate calibration split, in the order of the peers' cascade
#: (cheapest first).
TE_JUDGES = ("mistral-7b-instruct", "gpt-3.5-turbo", "gpt-4-turbo")
#: Judges in PRD Vicuna80.
PRD_JUDGES = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def check_features(features, *, name: str = "features") -> np.ndarray:
    """Validate a feature matrix: finite, inside ``[0, 1]``, two-dimensional.

    Parameters
    ----------
    features : array_like, shape (n, d) or (n,)
        Feature values; a vector is read as one feature per example.
    name : str
        Name used in error messages.

    Returns
    -------
    ndarray of float64, shape (n, d)

    Raises
    ------
    DataError
        On NaN or infinite values, values outside ``[0, 1]``, an empty matrix or more than
        two dimensions.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise DataError(f"{name} must be a non-empty (n, d) matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise DataError(f"{name} contain NaN or infinite values ({int(np.sum(~np.isfinite(x)))} entries)")
    if np.any((x < 0) | (x > 1)):
        raise DataError(
            f"{name} must lie in [0, 1] (they are probabilities or shares); "
            f"found values in [{x.min():g}, {x.max():g}]"
        )
    return x


def check_agree(agree, n: int | None = None, *, need_both: bool = False) -> np.ndarray:
    """Validate agreement indicators (0/1 or booleans).

    Parameters
    ----------
    agree : array_like, shape (n,)
        1 where the judge agreed with the human label.
    n : int, optional
        Expected length.
    need_both : bool
        Require at least one agreeing and one disagreeing example (needed to form pairs).

    Returns
    -------
    ndarray of bool, shape (n,)

    Raises
    ------
    DataError
        On values other than 0/1, a length mismatch, or (with ``need_both``) one class only.
    """
    a = np.asarray(agree)
    if a.ndim != 1:
        raise DataError(f"agree must be a vector, got shape {a.shape}")
    if a.dtype != bool:
        af = np.asarray(a, dtype=np.float64)
        if not np.all(np.isin(af, (0.0, 1.0))):
            raise DataError("agree must hold only 0/1 (or booleans)")
        a = af == 1.0
    if n is not None and len(a) != n:
        raise DataError(f"agree has {len(a)} entries but there are {n} examples")
    if need_both:
        n_agree = int(a.sum())
        if n_agree == 0 or n_agree == len(a):
            which = "agree" if n_agree else "disagree"
            raise DataError(
                f"every example has the judge {which} with the human label: a ranking needs both "
                "agreeing and disagreeing examples (no (agree, disagree) pairs can be formed)"
            )
    return a


@dataclass(frozen=True, eq=False)
class ConfidenceData:
    """Examples for learning a judge's confidence.

    Attributes
    ----------
    features : ndarray, shape (n, d)
        Feature vectors in ``[0, 1]``.
    verdict : ndarray of int, shape (n,)
        The judge's verdict per example (labels as the loader documents them).
    human : ndarray of int, shape (n,)
        The human reference label, coded like ``verdict``.
    agree : ndarray of bool, shape (n,)
        ``verdict == human``.
    feature_names : tuple of str
        One name per feature column.
    judge : str
        The judge whose verdicts are being assessed.
    baselines : mapping of str to ndarray
        Heuristic confidences the loader can compute (e.g. ``"predictive_probability"``,
        ``"simulated_annotators"``), each of shape (n,) and in ``[0, 1]``.
    groups : ndarray of int, shape (n,)
        Group labels for cross-validation (examples in one group share a source item); by
        default every example is its own group.
    """

    features: np.ndarray
    verdict: np.ndarray
    human: np.ndarray
    agree: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    judge: str = "judge"
    baselines: Mapping[str, np.ndarray] = field(default_factory=dict)
    groups: np.ndarray | None = None

    def __post_init__(self) -> None:
        x = check_features(self.features)
        n = x.shape[0]
        verdict = np.asarray(self.verdict)
        human = np.asarray(self.human)
        if verdict.shape != (n,) or human.shape != (n,):
            raise DataError(
                f"verdict and human must have shape ({n},), got {verdict.shape} and {human.shape}"
            )
        agree = verdict == human
        if self.agree is not None and not np.array_equal(check_agree(self.agree, n), agree):
            raise DataError("agree is not equal to (verdict == human)")
        names = tuple(self.feature_names) or tuple(f"s{t}" for t in range(x.shape[1]))
        if len(names) != x.shape[1]:
            raise DataError(f"{len(names)} feature names for {x.shape[1]} features")
        base = {}
        for key, value in dict(self.baselines).items():
            v = np.asarray(value, dtype=np.float64)
            if v.shape != (n,):
                raise DataError(f"baseline {key!r} must have shape ({n},), got {v.shape}")
            base[key] = _readonly(v)
        groups = np.arange(n) if self.groups is None else np.asarray(self.groups)
        if groups.shape != (n,):
            raise DataError(f"groups must have shape ({n},), got {groups.shape}")
        object.__setattr__(self, "features", _readonly(x))
        object.__setattr__(self, "verdict", _readonly(verdict))
        object.__setattr__(self, "human", _readonly(human))
        object.__setattr__(self, "agree", _readonly(agree))
        object.__setattr__(self, "feature_names", names)
        object.__setattr__(self, "baselines", base)
        object.__setattr__(self, "groups", _readonly(groups))

    @property
    def n(self) -> int:
        """Number of examples."""
        return self.features.shape[0]

    @property
    def n_features(self) -> int:
        """Number of features d."""
        return self.features.shape[1]

    @property
    def agreement_rate(self) -> float:
        """Share of examples on which the judge agrees with the human label."""
        return float(self.agree.mean())

    def subset(self, index) -> "ConfidenceData":
        """The examples selected by ``index`` (integer indices or a boolean mask).

        Parameters
        ----------
        index : array_like
            Integer positions or a boolean mask of length n.

        Returns
        -------
        ConfidenceData
        """
        idx = np.asarray(index)
        return ConfidenceData(
            features=self.features[idx],
            verdict=self.verdict[idx],
            human=self.human[idx],
            feature_names=self.feature_names,
            judge=self.judge,
            baselines={k: v[idx] for k, v in self.baselines.items()},
            groups=self.groups[idx],
        )

    def __repr__(self) -> str:
        return (
            f"ConfidenceData(judge={self.judge!r}, n={self.n}, d={self.n_features}, "
            f"agreement_rate={self.agreement_rate:.3f})"
        )


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
    p = check_features(probs, name="probabilities")
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
    if judge not in TE_JUDGES:
        raise DataError(f"unknown Trust-or-Escalate judge {judge!r}; choose one of {TE_JUDGES}")
    df = load_trust_or_escalate(data_dir)
    human = df["human_preference"].to_numpy()
    p1 = df[f"p_output1__{judge}"].to_numpy(dtype=np.float64)
    p2 = df[f"p_output2__{judge}"].to_numpy(dtype=np.float64)
    verdict = np.where(p1 >= p2, 1, 2)
    judges = (judge,) + tuple(j for j in TE_JUDGES if j != judge) if panel else (judge,)
    cols = []
    for j in judges:
        q1 = df[f"p_output1__{j}"].to_numpy(dtype=np.float64)
        q2 = df[f"p_output2__{j}"].to_numpy(dtype=np.float64)
        cols.append(np.where(verdict == 1, q1, q2) if orient else q1)
    # the released pairs (p1, p2) sum to 1 up to ~4e-2; clip stray rounding above 1
    features = np.clip(np.column_stack(cols), 0.0, 1.0)
    return ConfidenceData(
        features=features,
        verdict=verdict,
        human=human,
        feature_names=tuple(f"p_{'chosen' if orient else 'output1'}__{j}" for j in judges),
        judge=judge,
        baselines={"predictive_probability": np.maximum(p1, p2)},
    )


# --------------------------------------------------------------------------------------
# PRD Vicuna80
# --------------------------------------------------------------------------------------
def _majority(winners: pd.Series):
    counts = winners.value_counts()
    if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
        return None
    return counts.index[0]


def load_prd_vicuna80_confidence(judge: str = "gpt4", *, drop_split_votes: bool = True) -> ConfidenceData:
    """Examples for one PRD Vicuna80 judge against the human majority vote (bundled data).

    An example is one (question, pair of answers) that humans judged, shown in the order the
    humans saw it.  Verdicts have three classes: 0 = the first-shown answer wins, 1 = the
    second wins, 2 = tie; the human label is the majority of the human votes (items whose
    votes split evenly, e.g. 1-1-1, are dropped when ``drop_split_votes``).  The target is
    whether ``judge``'s verdict in the human-shown order equals the human majority.

    Features (all in ``[0, 1]``; "agrees" means "gives the same verdict as the target judge
    in the human-shown order"):

    - ``self_consistency``: the target judge agrees with itself when the order is swapped;
    - ``agrees__<k>__<order>`` for each other judge k and order (``same`` / ``swapped``);
    - ``panel_agreement``: the share of the other judges' verdicts, both orders, that agree
      (a strong signal: the panel's consensus);
    - ``verdict_is_tie``: the target judge called a tie.

    Parameters
    ----------
    judge : {"bard", "claude", "gpt35", "gpt4", "vicuna-13b"}
        The judge whose agreement is the target.
    drop_split_votes : bool
        Drop items with no strict human majority (default); if False they count as ties.

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


# --------------------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------------------
class SyntheticConfidence(NamedTuple):
    """Simulated examples together with the truth they were drawn from.

    Attributes
    ----------
    data : ConfidenceData
        The examples (features oriented towards the verdict, see :func:`from_probability_table`).
    agree_probability : ndarray, shape (n,)
        The true probability that the judge agrees with the human on each example.
    strength, sensitivity : ndarray, shape (n,)
        The latent log-odds strength ``|m|`` and prompt sensitivity ``v`` of each example.
    """

    data: ConfidenceData
    agree_probability: np.ndarray
    strength: np.ndarray
    sensitivity: np.ndarray


def synthetic_agree_probability(strength, sensitivity, *, overconfidence: float = 1.25) -> np.ndarray:
    """The simulation's true agreement probability (see :func:`simulate_confidence_data`).

    Parameters
    ----------
    strength : array_like
        Latent log-odds strength ``|m| >= 0``.
    sensitivity : array_like
        Prompt sensitivity ``v >= 0``.
    overconfidence : float
        How steeply agreement falls once ``|m|`` exceeds 2.5.

    Returns
    -------
    ndarray
        ``expit(1.5 |m| - 1.2 v - overconfidence * softplus(2 (|m| - 2.5)))``.

    Examples
    --------
    >>> synthetic_agree_probability([0.0, 2.0, 5.0], [0.0, 0.0, 0.0]).round(3).tolist()
    [0.498, 0.931, 0.776]
    """
    m = np.asarray(strength, dtype=np.float64)
    v = np.asarray(sensitivity, dtype=np.float64)
    logit = 1.5 * m - 1.2 * v - overconfidence * np.logaddexp(0.0, 2.0 * (m - 2.5))
    return 1.0 / (1.0 + np.exp(-logit))


def simulate_confidence_data(
    n: int = 3000,
    n_prompts: int = 8,
    *,
    seed: int | np.random.Generator = 0,
    scale: float = 2.0,
    max_sensitivity: float = 2.0,
    overconfidence: float = 1.25,
    orient: bool = True,
) -> SyntheticConfidence:
    """Simulate a judge whose own confidence is non-monotone in its agreement with humans.

    A Bernoulli simulation in the spirit of the confidence-ranking paper's: per example,

    1. a latent log-odds ``m ~ N(0, scale^2)`` that the judge prefers response 1 and a prompt
       sensitivity ``v ~ Uniform(0, max_sensitivity)``;
    2. per-prompt probabilities ``s_t = expit(m + v e_t)``, ``e_t ~ N(0, 1)``,
       t = 1..``n_prompts`` (the simulated annotators);
    3. the verdict: response 1 if ``mean_t s_t >= 1/2``, else 2;
    4. agreement ``a ~ Bernoulli(pi)`` with
       ``pi = expit(1.5 |m| - 1.2 v - overconfidence * softplus(2 (|m| - 2.5)))``; the human
       label is the verdict if ``a`` else the other response.

    Agreement rises with ``|m|`` and falls with ``v``, but beyond ``|m| = 2.5`` (where every
    prompt gives a probability near 0 or 1) it drops again: the judge is most confident
    exactly where it is often wrong.  With the defaults about 59% of verdicts agree; the true
    ``pi`` ranks agreement with AUROC about 0.78, the max-mean heuristic about 0.70 and the
    single-prompt probability about 0.60.  The top-probability heuristics
    are therefore non-monotone in agreement, while the prompt-to-prompt spread (which
    reveals ``v``) and the size of the probabilities (which reveals ``|m|``) let a learned
    ranker recover ``pi``.

    Parameters
    ----------
    n : int
        Number of examples.
    n_prompts : int
        Number of simulated annotators (features).
    seed : int or numpy Generator
        Randomness.
    scale, max_sensitivity, overconfidence : float
        Simulation parameters (see above).
    orient : bool
        Passed to :func:`from_probability_table`.

    Returns
    -------
    SyntheticConfidence

    Examples
    --------
    >>> sim = simulate_confidence_data(200, seed=1)
    >>> sim.data.features.shape
    (200, 8)
    """
    if n < 1 or n_prompts < 1:
        raise DataError("n and n_prompts must be positive")
    rng = np.random.default_rng(seed)
    m = rng.normal(0.0, scale, size=n)
    v = rng.uniform(0.0, max_sensitivity, size=n)
    logits = m[:, None] + v[:, None] * rng.standard_normal((n, n_prompts))
    s = 1.0 / (1.0 + np.exp(-logits))
    pi = synthetic_agree_probability(np.abs(m), v, overconfidence=overconfidence)
    agree = rng.random(n) < pi
    verdict = np.where(s.mean(axis=1) >= 0.5, 1, 2)
    human = np.where(agree, verdict, 3 - verdict)
    data = from_probability_table(s, human, orient=orient, judge="synthetic")
    return SyntheticConfidence(data, pi, np.abs(m), v)
