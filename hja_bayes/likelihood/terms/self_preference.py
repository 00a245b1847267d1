"""Self-preference: ``lambda_k (1[i = own(k)] - 1[j = own(k)])`` (SPEC §10).

A judge that is also a contestant (or a version of one) may favour its own answers.
``own(k)`` is given by a map from judges to models; judges without one have no coefficient.
``lambda_k`` is identified only through the consensus structure of S: adding ``lambda_k`` to
judge k's score of its own model does the same to every verdict, so at the full rank
(``r + 1 = min(K, N - 1)``, per-judge Bradley–Terry) it is not identified at all, and the fit
refuses it there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ...errors import DataError
from .base import TermColumns, Units

__all__ = ["SelfPreference"]


@dataclass(frozen=True)
class SelfPreference:
    """Self-preference of judges that are also contestants.

    Parameters
    ----------
    owners : mapping of judge -> model, or True
        Which model each judge is; ``True``: every judge whose name is also a model's.
        (Stored as sorted ``(judge, model)`` pairs.)
    ridge : float, optional
        Ridge on the coefficients (default: the fit's).
    """

    owners: tuple | bool = True
    ridge: float | None = None
    name = "self"
    needs_entries = False

    def __post_init__(self):
        if isinstance(self.owners, Mapping):
            object.__setattr__(self, "owners", tuple(sorted((str(k), str(v))
                                                            for k, v in self.owners.items())))

    def own_items(self, data) -> np.ndarray:
        """Per judge, the index of its own model (-1 for none).

        Raises
        ------
        DataError
            A judge or model of the map absent from the data, or no judge owning a model.
        """
        if self.owners is True:
            pairs = [(j, j) for j in data.judges if j in data.items]
        else:
            pairs = list(self.owners)
            if not pairs:
                raise DataError("self_preference names no judge: pass a map {judge: model}, "
                                "or True for judges named like models")
            judges = [j for j, _ in pairs]
            twice = sorted({j for j in judges if judges.count(j) > 1})
            if twice:  # one coefficient per judge: which model it would be is not told
                raise DataError(f"self_preference gives judge(s) {twice} more than one model; "
                                "one model per judge")
            unknown = [j for j, _ in pairs if j not in data.judges]
            missing = [m for _, m in pairs if m not in data.items]
            if unknown or missing:
                raise DataError(
                    "self_preference names " + "; ".join(
                        part for part in (f"judge(s) {unknown} not in the data (or left out "
                                          "of the fit: too few comparisons, leave_out=, a "
                                          "judge locked on a slot)" if unknown else "",
                                          f"model(s) {missing} not in the data" if missing else "")
                        if part))
        if not pairs:
            raise DataError(
                "self_preference=True but no judge is named like a model; pass a map "
                f"{{judge: model}} (judges {list(data.judges)}, models {list(data.items)})")
        own = np.full(data.n_judges, -1)
        for judge, model in pairs:
            own[data.judges.index(judge)] = data.items.index(model)
        return own

    def columns(self, data, units: Units) -> TermColumns:
        """``1[first is the judge's own] - 1[second is]``; judges without a model are held."""
        own = self.own_items(data)[units.judge]
        values = ((units.first == own).astype(float) - (units.second == own).astype(float))
        # a judge whose own model never appears in its verdicts has nothing to estimate
        seen = np.bincount(units.judge, np.abs(values) * units.counts.sum(axis=1), data.n_judges)
        return TermColumns(("self",), values[:, None], (seen > 0)[:, None], self.ridge)
