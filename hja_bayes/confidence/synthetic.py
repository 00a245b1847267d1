"""A Bernoulli simulation of a judge whose own confidence is non-monotone in agreement."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import DataError
from .examples import ConfidenceData
from .loaders import from_probability_table

__all__ = ["SyntheticConfidence", "simulate_confidence_data", "synthetic_agree_probability"]


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


def synthetic_agree_probability(
    strength, sensitivity, *, overconfidence: float = 1.25, base_logit: float = 1.0
) -> np.ndarray:
    """The simulation's true agreement probability (see :func:`simulate_confidence_data`).

    Parameters
    ----------
    strength : array_like
        Latent log-odds strength ``|m| >= 0``.
    sensitivity : array_like
        Prompt sensitivity ``v >= 0``.
    overconfidence : float
        How steeply agreement falls once ``|m|`` exceeds 2.5.
    base_logit : float
        Agreement log-odds at ``m = v = 0`` (before the overconfidence term).

    Returns
    -------
    ndarray
        ``expit(base_logit + 1.5 |m| - 1.2 v - overconfidence * softplus(2 (|m| - 2.5)))``.

    Examples
    --------
    >>> synthetic_agree_probability([0.0, 2.0, 5.0], [0.0, 0.0, 0.0], base_logit=0.0).round(3).tolist()
    [0.498, 0.931, 0.776]
    """
    m = np.asarray(strength, dtype=np.float64)
    v = np.asarray(sensitivity, dtype=np.float64)
    logit = base_logit + 1.5 * m - 1.2 * v - overconfidence * np.logaddexp(0.0, 2.0 * (m - 2.5))
    return 1.0 / (1.0 + np.exp(-logit))


def simulate_confidence_data(
    n: int = 3000,
    n_prompts: int = 8,
    *,
    seed: int | np.random.Generator = 0,
    scale: float = 2.0,
    max_sensitivity: float = 2.0,
    overconfidence: float = 1.25,
    base_logit: float = 1.0,
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
       ``pi = expit(base_logit + 1.5 |m| - 1.2 v - overconfidence * softplus(2 (|m| - 2.5)))``;
       the human label is the verdict if ``a`` else the other response.

    Agreement rises with ``|m|`` and falls with ``v``, but beyond ``|m| = 2.5`` (where every
    prompt gives a probability near 0 or 1) it drops again: the judge is most confident
    exactly where it is often wrong.  With the defaults about 77% of verdicts agree (as on
    Trust-or-Escalate); the true ``pi`` ranks agreement with AUROC about 0.78, the max-mean
    heuristic about 0.70 and the single-prompt probability about 0.60; the 2.5% of examples
    with the highest max-mean agree only about 75% of the time, against about 97% for the
    highest ``pi``.  The top-probability heuristics
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
    scale, max_sensitivity, overconfidence, base_logit : float
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
    pi = synthetic_agree_probability(np.abs(m), v, overconfidence=overconfidence, base_logit=base_logit)
    agree = rng.random(n) < pi
    verdict = np.where(s.mean(axis=1) >= 0.5, 1, 2)
    human = np.where(agree, verdict, 3 - verdict)
    data = from_probability_table(s, human, orient=orient, judge="synthetic")
    return SyntheticConfidence(data, pi, np.abs(m), v)
