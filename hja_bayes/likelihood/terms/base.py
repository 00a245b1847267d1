"""What a linear-predictor term is: columns of a design over the likelihood's units.

The linear predictor of a verdict by judge k on item i (shown first) against j is

    eta = S[k, i] - S[k, j] + sum_q Z[k, q] X[u, q] + sum_g theta_g Xg[u, g]

where the scores S carry the HJA structure and every other term is linear: a column of
``X`` with one coefficient per judge (position bias ``beta_k``: a column of ones;
self-preference ``lambda_k``; per-judge style ``theta_k``), or a column of ``Xg`` with one
coefficient for the whole panel (shared style ``theta``).  A term is a small frozen object
whose :meth:`columns` gives its columns for a set of units (:class:`Units`): the cells, or,
when a term varies by prompt (style features), the (prompt, cell) entries.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Design", "TermColumns", "Units"]


class Units(NamedTuple):
    """The units the likelihood sums over, in NumPy: cells, or (prompt, cell) entries.

    Attributes
    ----------
    judge, first, second : int arrays (units,)
    counts : float array (units, C)
    cell : int array (units,)
        The cell each unit belongs to (``arange`` for cells).
    cluster : int array (units,) or None
        The prompt of each entry (None for cells).
    features : float array (units, F) or None
        Style-feature differences first minus second (entries only).
    """

    judge: np.ndarray
    first: np.ndarray
    second: np.ndarray
    counts: np.ndarray
    cell: np.ndarray
    cluster: np.ndarray | None = None
    features: np.ndarray | None = None

    @property
    def size(self) -> int:
        """The number of units."""
        return len(self.judge)


class TermColumns(NamedTuple):
    """A term's columns of the design.

    Attributes
    ----------
    names : tuple of str
        One per column (e.g. ``"style:length"``).
    values : float array (units, q)
    free : bool array (K, q) or None
        For per-judge coefficients, which judges' coefficients are estimated (the others
        are held at 0); None for panel-wide coefficients.
    penalty : float or None
        Ridge on the term's coefficients (None: the fit's ridge).
    """

    names: tuple
    values: np.ndarray
    free: np.ndarray | None
    penalty: float | None = None


class Design(NamedTuple):
    """The linear terms of eta for one set of units (see the module documentation).

    Attributes
    ----------
    names : tuple of str
        Judge-coefficient columns (``Z``'s), in order.
    X : (units, q)
    free : bool (K, q)
    penalty : (q,)
        Ridge of each column's coefficients (NaN: the fit's ridge).
    global_names : tuple of str
        Panel-wide coefficients (``theta``'s).
    Xg : (units, g)
    global_penalty : (g,)
    level : {"cells", "entries"}
    """

    names: tuple
    X: np.ndarray
    free: np.ndarray
    penalty: np.ndarray
    global_names: tuple
    Xg: np.ndarray
    global_penalty: np.ndarray
    level: str

    def column(self, name: str) -> int | None:
        """Index of a judge-coefficient column, None if absent."""
        return self.names.index(name) if name in self.names else None

    def penalties(self, ridge: float) -> tuple[np.ndarray, np.ndarray]:
        """The columns' ridges with the fit's ``ridge`` where a term has none of its own."""
        return (np.where(np.isnan(self.penalty), ridge, self.penalty),
                np.where(np.isnan(self.global_penalty), ridge, self.global_penalty))
