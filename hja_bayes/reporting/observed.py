"""Tables of the observed data (counts, not estimates): battles, win fractions, orders, rejects.

These are bookkeeping on the comparison cells of a :class:`~hja_bayes.comparisons.Comparisons`
-- sums and ratios of counts -- shown beside the model's estimates so a reader can check
them against the raw material.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..checks import check_comparisons, indices_of
from ..errors import ParameterError
from ..graphs import unbounded_items

__all__ = ["battle_counts", "both_orders_share", "invalid_share", "observed_win_fraction",
           "unbeaten_or_winless"]


def _order(data, order: Sequence[str] | None) -> np.ndarray:
    check_comparisons(data)
    if order is None:
        return np.arange(data.n_items)
    if isinstance(order, str):
        raise ParameterError(f"order is a sequence of model names, got the text {order!r}")
    idx = indices_of(list(order), data.items, "model")
    if len(idx) == 0 or len(np.unique(idx)) != len(idx):
        raise ParameterError(f"order names the models to show, each once, got {len(idx)} "
                             f"names ({len(np.unique(idx))} distinct)")
    return idx


def _pooled(data) -> tuple[np.ndarray, np.ndarray]:
    """(N, N) comparisons and wins of row over column, all judges and both orders pooled
    (ties 1/2)."""
    N = data.n_items
    n = np.zeros((N, N))
    wins = np.zeros((N, N))
    np.add.at(n, (data.first, data.second), data.n)
    np.add.at(wins, (data.first, data.second), data.wins)
    np.add.at(wins, (data.second, data.first), data.n - data.wins)
    return n + n.T, wins


def battle_counts(data, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Comparisons between every pair of models, all judges and both orders together.

    Parameters
    ----------
    data : Comparisons
    order : sequence of str, optional
        Models of the rows and columns, in order, each once (default: all, the data's order).

    Returns
    -------
    DataFrame
        Square, indexed and labelled by model; symmetric; 0 on the diagonal.
    """
    idx = _order(data, order)
    n, _ = _pooled(data)
    names = [data.items[i] for i in idx]
    table = pd.DataFrame(n[np.ix_(idx, idx)], index=names, columns=names)
    if np.all(table.to_numpy() == np.round(table.to_numpy())):
        table = table.astype(np.int64)
    table.index.name = "model"
    return table


def observed_win_fraction(data, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Share of the comparisons between row and column model that the row model won.

    Ties count 1/2; all judges and both presentation orders are pooled.  NaN where the two
    models never met (and on the diagonal).

    Parameters
    ----------
    data : Comparisons
    order : sequence of str, optional
        Models of the rows and columns, in order, each once (default: all, the data's order).

    Returns
    -------
    DataFrame
        Square, indexed and labelled by model; ``W + W.T = 1`` where the models met.
    """
    idx = _order(data, order)
    n, wins = _pooled(data)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(n > 0, wins / np.where(n > 0, n, 1.0), np.nan)
    names = [data.items[i] for i in idx]
    table = pd.DataFrame(frac[np.ix_(idx, idx)], index=names, columns=names)
    table.index.name = "model"
    return table


def both_orders_share(data) -> np.ndarray:
    """Per judge, the share of its pairs of models that it saw in both presentation orders.

    A judge's position bias beta_k is identified from its own data only through pairs it
    saw both ways; at 0 it rests on the model's structure alone.

    Returns
    -------
    ndarray (K,)
        NaN when the order was not kept (folded cells).
    """
    if not data.order_known:
        return np.full(data.n_judges, np.nan)
    share = np.zeros(data.n_judges)
    N = data.n_items
    for k in range(data.n_judges):
        m = data.judge == k
        shown = np.zeros((N, N), dtype=bool)
        shown[data.first[m], data.second[m]] = True
        pairs = shown | shown.T
        both = shown & shown.T
        share[k] = both[np.triu_indices(N, 1)].sum() / max(pairs[np.triu_indices(N, 1)].sum(), 1)
    return share


def invalid_share(data) -> np.ndarray | None:
    """Per judge, the share of its rows that had no usable verdict (rejected when read).

    Returns
    -------
    ndarray (K,) or None
        None when no row was rejected, or the data do not say which judge's rows were.
        A judge's rows are its comparisons plus its rejected rows.
    """
    rejected = getattr(data, "rejected_by_judge", None)
    if not rejected:
        return None
    bad = np.array([float(rejected.get(j, 0)) for j in data.judges])
    used = data.comparisons_per_judge()
    return bad / (bad + used)


def unbeaten_or_winless(data) -> tuple[list[str], list[str], list[str]]:
    """The models without a finite maximum-likelihood score
    (:func:`~hja_bayes.graphs.unbounded_items`): those that won every comparison they
    took part in, those that lost every one, and the others (in a group that won, or
    lost, every comparison with another group).

    Ties break both (a tie is half a win).  Only the fit's prior keeps their scores finite,
    so their intervals say little.

    Returns
    -------
    (unbeaten, winless, grouped) : lists of model names
    """
    n, wins = _pooled(data)
    won, played = wins.sum(axis=1), n.sum(axis=1)
    marked = unbounded_items(data)
    unbeaten, winless = marked & (won >= played), marked & (won <= 0)
    return tuple([data.items[i] for i in np.flatnonzero(m)]
                 for m in (unbeaten, winless, marked & ~unbeaten & ~winless))
