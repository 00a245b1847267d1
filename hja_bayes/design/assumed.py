"""A fit from assumed scores, for ``plan``: ``S = gamma mu^T`` at rank 0."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ParameterError

__all__ = ["assumed_fit"]

#: Widest spread of assumed scores taken as logits (odds of e^30, about 10^13, that the best
#: model beats the worst); a leaderboard's Elo points read as logits spread over hundreds.
LARGEST_SPREAD = 30.0


def assumed_fit(scores, judges, sensitivities, position_bias):
    """An HJAFit at rank 0 whose 'data' (a ring per judge, both orders: 2 N cells, not every
    ordered pair's N (N - 1)) only carry its chart: ``plan`` builds the allocation."""
    from ..comparisons import Comparisons
    from ..hja.result import HJAFit

    if isinstance(scores, pd.Series):
        items, mu = tuple(str(i) for i in scores.index), scores.to_numpy(dtype=float)
    elif isinstance(scores, dict):
        items, mu = tuple(str(i) for i in scores), np.array(list(scores.values()), dtype=float)
    else:
        try:
            mu = np.asarray(scores, dtype=float).ravel()
        except (TypeError, ValueError):
            hint = (" (a pooled fit's scores: plan(dict(zip(fit.items, fit.scores)), "
                    "judges=...))" if hasattr(scores, "scores") else "")
            raise ParameterError(
                "plan reads a fitted HJA model (fit_hja, load_fit) or assumed scores (an "
                f"array, Series or dict model -> logit); got {type(scores).__name__}"
                + hint) from None
        items = tuple(f"model{i}" for i in range(mu.size))
    if mu.size < 2 or not np.all(np.isfinite(mu)):
        raise ParameterError("scores must hold at least two finite numbers")
    mu = mu - mu.mean()
    if not np.any(mu):
        raise ParameterError("scores are all equal: no gap to detect")
    if np.ptp(mu) > LARGEST_SPREAD:
        raise ParameterError(
            f"scores spread over {np.ptp(mu):.4g} logits (more than {LARGEST_SPREAD:g}): plan "
            f"takes scores in logits, not Elo points (400 / ln 10 = 173.7 of them a logit)")
    if judges is None:
        judges = 1
    if isinstance(judges, (int, np.integer)) and not isinstance(judges, bool) and judges >= 1:
        names = tuple(f"judge{k}" for k in range(judges))
    elif isinstance(judges, (list, tuple, np.ndarray, pd.Index, pd.Series)) and len(judges):
        names = tuple(str(j) for j in judges)
        if len(set(names)) < len(names):
            raise ParameterError(f"judges names a judge twice: {list(names)}")
    else:
        raise ParameterError(f"judges must be a number of judges (1 or more) or a list of their "
                             f"names, got {judges!r}")
    K, N = len(names), mu.size
    gamma = np.ones(K) if sensitivities is None else np.broadcast_to(
        np.asarray(sensitivities, dtype=float), (K,)).copy()
    if np.any(gamma <= 0) or not np.all(np.isfinite(gamma)):
        raise ParameterError("sensitivities must be finite and > 0")
    gamma *= K / gamma.sum()
    beta = np.zeros(K) if position_bias is None else np.broadcast_to(
        np.asarray(position_bias, dtype=float), (K,)).copy()
    if not np.all(np.isfinite(beta)):  # a NaN had ended in "Eigenvalues did not converge"
        raise ParameterError(f"position_bias must be finite, got {position_bias!r}")
    ring = np.arange(N if N > 2 else 1)
    i = np.concatenate([ring, (ring + 1) % N])
    j = np.concatenate([(ring + 1) % N, ring])
    k = np.repeat(np.arange(K), len(i))
    i, j = np.tile(i, K), np.tile(j, K)
    counts = np.column_stack([np.full(len(k), 0.5), np.zeros(len(k)), np.full(len(k), 0.5)])
    data = Comparisons(names, items, k, i, j, counts)
    S = np.outer(gamma, mu)
    return HJAFit(gamma=gamma, mu=mu, U=np.zeros((K, 0)), V=np.zeros((N, 0)), D=np.zeros(0),
                  S=S, beta=beta, rank=0, position_bias=position_bias is not None, nll=0.0,
                  bic=0.0, n_iter=0, converged=True, judges=names, items=items, data=data,
                  ridge=0.0)
