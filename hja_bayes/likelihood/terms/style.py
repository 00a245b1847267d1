"""Answer style: ``theta_k^T (x_qi - x_qj)``, the pull of length and formatting (SPEC §10).

``x_qi`` are features of model i's answer to prompt q (length, markdown headers, list items,
bold spans, or the user's own; :func:`hja_bayes.features.style_features`), stored on the
data as transformed differences per (prompt, cell) entry.  ``scope="per_judge"`` gives every
judge its own coefficients, ``theta_k = theta + delta_k`` with ``theta`` the panel mean and
``sum_k delta_k = 0`` (both get intervals); ``scope="shared"`` one coefficient per feature
for the whole panel.  The consensus mu is then the ranking when both answers have the same
style.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...checks import check_choice
from ...errors import DataError
from .base import TermColumns, Units

__all__ = ["Style", "STYLE_SCOPES"]

#: How style coefficients are shared across judges.
STYLE_SCOPES = ("shared", "per_judge")


@dataclass(frozen=True)
class Style:
    """Style control on the answers' features.

    Parameters
    ----------
    scope : {"per_judge", "shared"}
        One coefficient per judge and feature, or one per feature for the panel.
    features : tuple of str, optional
        The features to control for (default: every feature the data carry).
    ridge : float, optional
        Ridge on the coefficients (default: the fit's).
    """

    scope: str = "per_judge"
    features: tuple | None = None
    ridge: float | None = None
    name = "style"
    needs_entries = True

    def __post_init__(self):
        object.__setattr__(self, "scope", check_choice(self.scope, "style", STYLE_SCOPES))
        if self.features is not None:
            object.__setattr__(self, "features", tuple(str(f) for f in self.features))

    def selected(self, data) -> tuple[str, ...]:
        """The feature names used, checked against the data's."""
        have = tuple(getattr(data, "feature_names", ()))
        if not have:
            raise DataError(
                "style control needs answer features: read the data with features= (a table "
                "from hja_bayes.style_features, or per-row columns) and cluster=<prompt column>")
        wanted = have if self.features is None else self.features
        missing = [f for f in wanted if f not in have]
        if missing:
            raise DataError(f"style feature(s) {missing} not in the data; it has {list(have)}")
        return tuple(wanted)

    def columns(self, data, units: Units) -> TermColumns:
        """The selected feature differences, per judge or shared."""
        names = self.selected(data)
        index = [data.feature_names.index(f) for f in names]
        values = np.asarray(units.features, dtype=float)[:, index]
        labels = tuple(f"style:{f}" for f in names)
        free = np.ones((data.n_judges, len(names)), dtype=bool) if self.scope == "per_judge" else None
        return TermColumns(labels, values, free, self.ridge)
