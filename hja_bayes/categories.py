"""Ordered outcome categories of a verdict, and how they collapse to three.

Categories run from the strongest preference for the item shown first to the strongest for
the second.  Three-outcome data have ``("first", "tie", "second")``; an ordinal scale of C
levels has its own labels (Arena-Hard's five: ``A>>B, A>B, A=B, B>A, B>>A``).  Every scale
collapses to three outcomes: the categories on the first item's side, the middle one (a tie,
for odd C) and those on the second's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["THREE", "CountViews", "collapse_counts", "row_totals"]

#: The three-outcome categories.
THREE = ("first", "tie", "second")


def row_totals(counts: np.ndarray) -> np.ndarray:
    """``counts.sum(axis=1)`` with the columns added one by one: NumPy's sum over a short last
    axis takes 31 ms for two million rows of three categories, this 7 ms (the same numbers:
    for three columns the same order of additions)."""
    total = np.array(counts[:, 0], dtype=float)
    for c in range(1, counts.shape[1]):
        total += counts[:, c]
    return total


def collapse_counts(counts) -> np.ndarray:
    """Counts of C ordered categories as (first side, middle, second side): (..., 3).

    Examples
    --------
    >>> collapse_counts([[3, 1, 0, 2, 5]]).tolist()
    [[4.0, 0.0, 7.0]]
    """
    counts = np.asarray(counts, dtype=float)
    C = counts.shape[-1]
    if C == 3:  # already three (a copy: callers may write to what they get)
        return counts.copy()
    half = C // 2
    middle = counts[..., half] if C % 2 else np.zeros(counts.shape[:-1])
    return np.stack([counts[..., :half].sum(axis=-1), middle,
                     counts[..., C - half:].sum(axis=-1)], axis=-1)


class CountViews:
    """Views of a ``counts`` array (rows x ordered categories) collapsed to three outcomes:
    verdicts per row, for each side and tied (rows: a panel's cells or its prompts' entries)."""

    __slots__ = ()
    counts: np.ndarray

    @property
    def n(self) -> np.ndarray:
        """Comparisons per row."""
        return row_totals(self.counts)

    @property
    def first_wins(self) -> np.ndarray:
        """Verdicts for the first-shown item per row (every category on its side)."""
        return self._side(0)

    @property
    def ties(self) -> np.ndarray:
        """Verdicts in the middle category (ties) per row; 0 for a scale of even length."""
        return self._side(1)

    @property
    def second_wins(self) -> np.ndarray:
        """Verdicts for the second-shown item per row."""
        return self._side(2)

    @property
    def wins(self) -> np.ndarray:
        """Wins of the first-shown item per row, ties counted 1/2."""
        three = self._three()
        return three[:, 0] + three[:, 1] / 2

    def _side(self, which: int) -> np.ndarray:
        """Column ``which`` of the collapsed counts (a new array)."""
        return np.array(self._three()[:, which], dtype=float)

    def _three(self) -> np.ndarray:
        """The counts collapsed to three columns: of three categories, the counts themselves
        (read, not copied)."""
        return self.counts if self.counts.shape[1] == 3 else collapse_counts(self.counts)
