"""Checks of the data before a fit, shared by the MAP solver and the Bayesian sampler."""

from __future__ import annotations

import warnings

import numpy as np

from ..comparisons import Comparisons
from ..errors import DataError, DataWarning, IdentifiabilityError

__all__ = ["check_fit_inputs", "separated_judges"]


def separated_judges(data: Comparisons) -> list[str]:
    """Judges whose verdicts all agree with one ordering of the items (MLE at infinity).

    A judge without ties is separated when the directed graph "a beat b at least once" has
    no cycle through all of its items, i.e. every strongly connected component is a single
    item.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    out = []
    for k in range(data.n_judges):
        m = data.judge == k
        if data.ties[m].sum() > 0:
            continue
        a = np.concatenate([data.first[m], data.second[m]])
        b = np.concatenate([data.second[m], data.first[m]])
        won = np.concatenate([data.first_wins[m], data.second_wins[m]]) > 0
        g = coo_matrix((np.ones(won.sum()), (a[won], b[won])), shape=(data.n_items,) * 2)
        n_strong, _ = connected_components(g, directed=True, connection="strong")
        if n_strong == data.n_items:
            out.append(data.judges[k])
    return out


def check_fit_inputs(data, position_bias: bool) -> None:
    """Validate what every fitter needs: Comparisons, a connected graph, order for beta.

    Raises
    ------
    DataError
        When ``data`` is not a :class:`~hja_bayes.comparisons.Comparisons`.
    DisconnectedGraphError
        When the pooled comparison graph is disconnected.
    IdentifiabilityError
        When position bias is asked for on folded data.

    Warns
    -----
    DataWarning
        For judges whose verdicts are perfectly separated.
    """
    if not isinstance(data, Comparisons):
        hint = ""
        if type(data).__name__ == "DataFrame":
            hint = ": build one first, e.g. Comparisons.from_frame(df)"
        raise DataError(f"expected Comparisons, got {type(data).__name__}{hint}")
    data.check_connected()
    if position_bias and not data.order_known:
        raise IdentifiabilityError(
            "position bias needs the presentation order, but these comparisons were folded"
        )
    sep = separated_judges(data)
    if sep:
        warnings.warn(
            f"judge(s) {sep}: every verdict agrees with one ordering (perfect separation), so "
            "their maximum-likelihood scores are infinite; the ridge keeps them finite, "
            "so read their sensitivity as 'very large'",
            DataWarning,
            stacklevel=3,
        )
