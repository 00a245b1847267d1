"""Position bias: ``beta_k``, judge k's logit bonus for the item shown first (SPEC §1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import TermColumns, Units

__all__ = ["Position"]


@dataclass(frozen=True)
class Position:
    """Per-judge position bias: a column of ones with one coefficient per judge.

    Parameters
    ----------
    ridge : float, optional
        Ridge on the biases (default: the fit's).
    """

    ridge: float | None = None
    name = "position"
    needs_entries = False

    def columns(self, data, units: Units) -> TermColumns:
        """One column of ones; every judge's bias is estimated."""
        return TermColumns(("position",), np.ones((units.size, 1)),
                           np.ones((data.n_judges, 1), dtype=bool), self.ridge)
