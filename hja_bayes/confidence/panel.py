"""Panel-aware confidence features: what a fitted HJA panel says about one judge's verdict.

A judge is more likely right when the rest of the panel agrees with it.  Beyond the other
judges' raw verdicts on the same item, a fitted HJA model (``S = gamma mu^T + U V^T``, position
bias ``beta``) summarises every judge's behaviour on every pair of models.  For an example
(judge k, first-shown model i, second-shown model j, verdict v) the features are, each turned
towards the verdict (``p`` for "first wins", ``1 - p`` for "second wins", ``1 - |2p - 1|``,
how close to a coin flip, for a tie):

``hja_consensus``
    the other judges' average fitted probability that i beats j, position bias left out;
``hja_own``
    judge k's own fitted probability for the verdict as shown (with its position bias);
``hja_deviation``
    ``(S_ki - S_kj) - gamma_k (mu_i - mu_j)``, judge k's departure from its scaled consensus
    on this pair, signed towards the verdict (``-|.|`` for a tie);
``hja_bias_for_verdict``
    ``beta_k`` if the verdict is "first wins", ``-beta_k`` if "second wins", 0 for a tie: how
    much of the verdict the judge's position bias explains.

The panel is fitted on judges' verdicts only, never on the human labels, so it may use every
judgment (including those of examples later held out): the features are unsupervised.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..checks import index_of, indices_of

__all__ = ["PANEL_FEATURES", "panel_features"]

#: Names of the features :func:`panel_features` returns, in order.
PANEL_FEATURES = ("hja_consensus", "hja_own", "hja_deviation", "hja_bias_for_verdict")


def _towards(p: np.ndarray, verdict: np.ndarray) -> np.ndarray:
    return np.where(verdict == 0, p, np.where(verdict == 1, 1.0 - p, 1.0 - np.abs(2.0 * p - 1.0)))


def panel_features(fit, judge: str, first, second, verdict) -> dict[str, np.ndarray]:
    """Features of one judge's verdicts from a fitted HJA panel.

    Parameters
    ----------
    fit : HJAFit
        A panel fitted on the judges' comparisons (``hja_bayes.hja.fit_hja``).
    judge : str
        The judge whose verdicts are assessed.
    first, second : array_like of str, shape (n,)
        The models shown first and second.
    verdict : array_like of int, shape (n,)
        0 = first wins, 1 = second wins, 2 = tie.

    Returns
    -------
    dict of str to ndarray
        The features named in :data:`PANEL_FEATURES`, each of shape (n,).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> import numpy as np
    >>> fit = SimpleNamespace(judges=("a", "b"), items=("x", "y"), gamma=np.ones(2),
    ...                       mu=np.array([1.0, 0.0]), S=np.array([[1.0, 0.0], [1.0, 0.0]]),
    ...                       beta=np.zeros(2))
    >>> f = panel_features(fit, "a", ["x"], ["y"], [0])
    >>> round(float(f["hja_consensus"][0]), 4), float(f["hja_deviation"][0])
    (0.7311, 0.0)
    """
    k = index_of(judge, fit.judges, "judge")
    i = indices_of(np.asarray(first), fit.items, "item")
    j = indices_of(np.asarray(second), fit.items, "item")
    v = np.asarray(verdict)
    others = [m for m in range(len(fit.judges)) if m != k]
    consensus = np.mean([expit(fit.S[m, i] - fit.S[m, j]) for m in others], axis=0) if others else \
        expit(fit.mu[i] - fit.mu[j])
    own = expit(fit.beta[k] + fit.S[k, i] - fit.S[k, j])
    deviation = (fit.S[k, i] - fit.S[k, j]) - fit.gamma[k] * (fit.mu[i] - fit.mu[j])
    sign = np.where(v == 0, 1.0, np.where(v == 1, -1.0, 0.0))
    return {
        "hja_consensus": _towards(consensus, v),
        "hja_own": _towards(own, v),
        "hja_deviation": np.where(v == 2, -np.abs(deviation), sign * deviation),
        "hja_bias_for_verdict": sign * fit.beta[k],
    }
