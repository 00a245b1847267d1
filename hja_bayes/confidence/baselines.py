"""Heuristic and linear confidences to compare a learned ranker against."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from .examples import check_agree, check_features
from ..checks import check_positive

__all__ = ["predictive_probability", "simulated_annotators_max_mean", "LogisticConfidence"]


def predictive_probability(probs) -> np.ndarray:
    """The judge's probability for its own verdict under a single prompt.

    Parameters
    ----------
    probs : array_like, shape (n,) or (n, T)
        Probabilities of preferring response 1; with several columns the first prompt is used.

    Returns
    -------
    ndarray, shape (n,)
        ``max(p, 1 - p)``.

    Examples
    --------
    >>> predictive_probability([0.2, 0.7]).tolist()
    [0.8, 0.7]
    """
    p = check_features(probs, name="probabilities", unit=True)[:, 0]
    return np.maximum(p, 1.0 - p)


def simulated_annotators_max_mean(probs) -> np.ndarray:
    """Jung et al.'s simulated-annotator confidence: the top class of the mean probability.

    Parameters
    ----------
    probs : array_like, shape (n, T)
        Per-annotator (per-prompt) probabilities of preferring response 1.

    Returns
    -------
    ndarray, shape (n,)
        ``max(mean_t p_t, 1 - mean_t p_t)``.

    Examples
    --------
    >>> simulated_annotators_max_mean([[0.2, 0.4], [0.9, 0.7]]).round(2).tolist()
    [0.7, 0.8]
    """
    m = check_features(probs, name="probabilities", unit=True).mean(axis=1)
    return np.maximum(m, 1.0 - m)


class LogisticConfidence:
    """L2-penalised logistic regression of agreement on the features.

    A linear reference for the learned rankers: ``P(agree | s) = expit(w's + b)`` fitted by
    L-BFGS with penalty ``|w|^2 / (2 C)`` (the intercept is not penalised).

    Parameters
    ----------
    C : float
        Inverse penalty strength (larger: weaker penalty).

    Examples
    --------
    >>> lr = LogisticConfidence().fit([[0.1], [0.2], [0.8], [0.9]], [0, 1, 0, 1])
    >>> lr.predict([[0.5]]).shape
    (1,)
    """

    def __init__(self, C: float = 1.0):
        self.C = check_positive(C, "C")

    def fit(self, features, agree) -> "LogisticConfidence":
        """Fit the coefficients.

        Parameters
        ----------
        features : array_like, shape (n, d)
            Finite values.
        agree : array_like, shape (n,)
            Agreement indicators (both classes needed).

        Returns
        -------
        self
        """
        x = check_features(features)
        a = check_agree(agree, x.shape[0], need_both=True)
        y = np.where(a, 1.0, -1.0)
        design = np.column_stack([x, np.ones(len(x))])
        penalty = np.r_[np.full(x.shape[1], 1.0 / self.C), 0.0]

        def objective(w):
            z = y * (design @ w)
            value = -log_expit(z).sum() + 0.5 * np.sum(penalty * w * w)
            grad = -design.T @ (y * expit(-z)) + penalty * w
            return value, grad

        res = minimize(objective, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B")
        self.coef_ = res.x[:-1]
        self.intercept_ = float(res.x[-1])
        return self

    def predict(self, features) -> np.ndarray:
        """Fitted probability of agreement.

        Parameters
        ----------
        features : array_like, shape (n, d)

        Returns
        -------
        ndarray, shape (n,)
        """
        x = check_features(features)
        return expit(x @ self.coef_ + self.intercept_)
