"""Which differences of consensus scores a table lists: all pairs of a small panel, the
neighbours in the ranking of a large one (N - 1 rows instead of N (N - 1) / 2)."""

from __future__ import annotations

import numpy as np

from ..checks import check_choice, indices_of
from ..errors import ParameterError

__all__ = ["ALL_PAIRS_MAX_ITEMS", "item_pairs"]

#: Up to this many models ``intervals()`` lists every pairwise difference by default; above
#: it only the neighbours in the ranking.
ALL_PAIRS_MAX_ITEMS = 100


def item_pairs(pairs, items, estimate) -> np.ndarray:
    """Item index pairs ``(a, b)`` of the differences ``mu_a - mu_b`` named by ``pairs``.

    Parameters
    ----------
    pairs : "all", "adjacent", "none", None or sequence of (item, item)
        ``"all"``: every ``a < b`` in the item order (N (N - 1) / 2 pairs);
        ``"adjacent"``: each item and the next one in the ranking by ``estimate``, best
        first (N - 1 pairs, ``estimate[a] >= estimate[b]``); ``"none"``: no pair; a sequence
        of pairs of item names or indices: those, in that order.  None: ``"all"`` up to
        :data:`ALL_PAIRS_MAX_ITEMS` items, else ``"adjacent"``.
    items : sequence of str
        Item names.
    estimate : array (N,)
        The scores that rank the items (for ``"adjacent"``).

    Returns
    -------
    ndarray (n_pairs, 2) of int

    Raises
    ------
    ParameterError
        For an unknown keyword, a malformed pair, a pair of one item with itself or an
        unknown item.

    Examples
    --------
    >>> item_pairs("adjacent", ["a", "b", "c"], [0.0, 1.0, -1.0]).tolist()
    [[1, 0], [0, 2]]
    """
    N = len(items)
    if pairs is None:
        pairs = "all" if N <= ALL_PAIRS_MAX_ITEMS else "adjacent"
    if isinstance(pairs, str):
        check_choice(pairs, "pairs", ("all", "adjacent", "none"))
        if pairs == "all":
            return np.column_stack(np.triu_indices(N, k=1))
        if pairs == "none":
            return np.zeros((0, 2), dtype=int)
        order = np.argsort(-np.asarray(estimate, dtype=float), kind="stable")
        return np.column_stack([order[:-1], order[1:]])
    shape = "pairs must be 'all', 'adjacent', 'none' or a sequence of (item, item)"
    try:
        listed = list(pairs)
    except TypeError:
        raise ParameterError(f"{shape}, got {type(pairs).__name__}") from None
    if any(np.ndim(p) != 1 or len(p) != 2 for p in listed):
        raise ParameterError(shape)
    if not listed:
        return np.zeros((0, 2), dtype=int)
    a, b = zip(*listed)
    out = np.column_stack([indices_of(list(a), items, "item"), indices_of(list(b), items, "item")])
    same = out[:, 0] == out[:, 1]
    if same.any():
        raise ParameterError(f"a pair compares two different items, got "
                             f"{listed[int(np.argmax(same))]!r}")
    return out
