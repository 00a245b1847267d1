"""Examples for confidence ranking: the :class:`ConfidenceData` container and its checks.

One example is one pairwise judgement.  Its features ``s`` describe how the judge (and
possibly a panel of other judges) saw it; the target is *agreement*
``a = 1{verdict = human}``.  A confidence ranker learns to put agreeing examples above
disagreeing ones.  The loaders live in :mod:`.loaders`, the simulation in :mod:`.synthetic`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import pandas as pd

from ..errors import DataError, DataWarning, warn

__all__ = ["ConfidenceData", "agreement_of", "check_agree", "check_confidence", "check_features",
           "warn_label_order"]

#: Text labels read as "the judge did not agree" (lower case), for :func:`warn_label_order`.
DISAGREEMENT_WORDS = frozenset({"disagree", "disagreed", "disagrees", "disagreement", "wrong",
                                "incorrect", "no", "false", "fail", "failed", "mismatch"})


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def check_features(features, *, name: str = "features", unit: bool = False) -> np.ndarray:
    """Validate a feature matrix: finite, two-dimensional (and inside ``[0, 1]`` if ``unit``).

    Parameters
    ----------
    features : array_like, shape (n, d) or (n,)
        Feature values; a vector is read as one feature per example.
    name : str
        Name used in error messages.
    unit : bool
        Also require every value in ``[0, 1]`` (probabilities or shares).

    Returns
    -------
    ndarray of float64, shape (n, d)

    Raises
    ------
    DataError
        On NaN or infinite values, values outside ``[0, 1]`` (with ``unit``), an empty
        matrix or more than two dimensions.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise DataError(f"{name} must be a non-empty (n, d) matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise DataError(f"{name} contain NaN or infinite values ({int(np.sum(~np.isfinite(x)))} entries)")
    if unit and np.any((x < 0) | (x > 1)):
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
        # 'True' / 'yes' text and a pandas NA are not numbers: NaN, named below
        af = a.astype(np.float64) if a.dtype.kind in "iuf" else pd.to_numeric(
            pd.Series(a, dtype=object), errors="coerce").to_numpy(np.float64)
        if not np.all(np.isin(af, (0.0, 1.0))):
            bad = np.asarray(a, dtype=object)[~np.isin(af, (0.0, 1.0))]
            raise DataError(f"agree must hold only 0/1 (or booleans); it holds {_plain(bad[0])!r} "
                            f"({len(bad)} such entries)")
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


def agreement_of(y, classes, n: int | None = None, *, need_both: bool = False) -> np.ndarray:
    """Agreement from labels of the two ``classes`` a ranker was fitted on (``classes[1]``
    agrees), checked as :func:`check_agree` checks it.

    Raises
    ------
    DataError
        On a label that is not one of ``classes`` (``"1"`` given to a ranker fitted on 0/1 had
        been read as disagreement), and as :func:`check_agree`.

    Examples
    --------
    >>> agreement_of(["no", "yes"], np.array(["no", "yes"])).tolist()
    [False, True]
    """
    y = np.asarray(y)
    known = np.isin(y, classes)
    if not known.all():
        raise DataError(f"y holds labels the ranker was not fitted with, such as "
                        f"{_plain(y[~known][0])!r} ({int((~known).sum())} entries); its classes "
                        f"are {classes.tolist()}, {_plain(classes[1])!r} meaning agreement")
    return check_agree(y == classes[1], n, need_both=need_both)


def warn_label_order(classes) -> None:
    """Warn where text labels sort so that a word for disagreement is taken as agreement
    (``["agree", "disagree"]``: scikit-learn's order makes the second label the positive)."""
    words = [str(c).strip().lower() for c in classes]
    if classes.dtype.kind in "OUS" and words[1] in DISAGREEMENT_WORDS \
            and words[0] not in DISAGREEMENT_WORDS:
        first, second = classes.tolist()
        warn(f"y's labels sort as [{first!r}, {second!r}]: the second, {second!r}, is taken as "
             "agreement (predict_confidence scores it), as scikit-learn orders classes; pass "
             f"booleans (y == {first!r}) to score agreement", DataWarning)


def _plain(value):
    """A NumPy scalar as the Python value it holds (for messages)."""
    return value.item() if isinstance(value, np.generic) else value


def check_confidence(confidence, n: int | None = None) -> np.ndarray:
    """Validate a vector of confidence scores: one dimension, finite, of the expected length.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Any real scores (only their order matters to the selective-evaluation functions).
    n : int, optional
        Expected length (the number of agreement indicators).

    Returns
    -------
    ndarray of float64, shape (n,)

    Raises
    ------
    DataError
        On a matrix, a length mismatch, NaN or infinite values.

    Examples
    --------
    >>> check_confidence([0.2, 0.9]).tolist()
    [0.2, 0.9]
    """
    c = np.asarray(confidence, dtype=np.float64)
    if c.ndim != 1:
        raise DataError(f"confidence must be a vector, got shape {c.shape}")
    if n is not None and len(c) != n:
        raise DataError(f"confidence has {len(c)} entries but agree has {n}")
    if not np.all(np.isfinite(c)):
        raise DataError("confidence contains NaN or infinite values")
    return c


@dataclass(frozen=True, eq=False)
class ConfidenceData:
    """Examples for learning a judge's confidence.

    Attributes
    ----------
    features : ndarray, shape (n, d)
        Finite real feature vectors (probabilities, shares, panel statistics, ...).
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
    groups : ndarray, shape (n,)
        Group labels (examples in one group share a source item, e.g. a question): used to
        keep a group inside one split and by the group-level certificates; by default every
        example is its own group.
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
