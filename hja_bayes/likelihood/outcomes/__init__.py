"""The outcome models, one file each, and their registry.

A new outcome model is one file here (its :class:`OutcomeModel`: log-probabilities of its
categories, its extra per-judge parameters with their prior and names, optionally faster
hand-written derivatives) plus one entry in :data:`OUTCOME_MODELS`.
"""

from __future__ import annotations

from typing import Callable

from ...checks import check_choice
from .base import (
    OutcomeModel,
    category_derivatives,
    information,
    log_likelihood,
    probabilities,
    sandwich_meat,
    score,
)
from .davidson import DAVIDSON
from .half import HALF
from .ordinal import ordinal, ordinal_cut_points

__all__ = ["DAVIDSON", "HALF", "OUTCOME_MODELS", "OutcomeModel", "category_derivatives",
           "deprecated_ties", "information", "log_likelihood", "ordinal", "ordinal_cut_points",
           "outcome_model", "probabilities", "sandwich_meat", "score"]

#: Outcome models by keyword: each entry makes the model for the data's ordered categories
#: (the three-outcome models take any scale collapsed to first / tie / second).
OUTCOME_MODELS: dict[str, Callable[[tuple], OutcomeModel]] = {
    "half": lambda categories: HALF,
    "davidson": lambda categories: DAVIDSON,
    "ordinal": ordinal,
}


def deprecated_ties(ties, outcome):
    """``outcome``, or the deprecated ``ties=`` alias (with a DeprecationWarning).

    Raises
    ------
    ParameterError
        When both are given and differ (``outcome`` other than None or its default
        "half"): the alias had silently won.
    """
    from ...errors import ParameterError, warn

    if ties is None:
        return outcome
    warn("ties= is deprecated: use outcome= (same values)", DeprecationWarning)
    if outcome is not None and (not isinstance(outcome, str) or outcome not in ("half", ties)):
        raise ParameterError(f"ties={ties!r} and outcome={outcome!r} disagree: give outcome= "
                             "alone (ties= is its deprecated name)")
    return ties


def outcome_model(outcome: str | OutcomeModel = "half", categories=None) -> OutcomeModel:
    """The outcome model for a keyword, or the model itself.

    Parameters
    ----------
    outcome : {"half", "davidson", "ordinal"} or OutcomeModel
    categories : tuple of str or int, optional
        The data's ordered categories (or their number); the ordinal model is made for them
        (default: the five-level scale).

    Raises
    ------
    ParameterError
        For an unknown keyword (the message lists the known ones).
    """
    if isinstance(outcome, OutcomeModel):
        return outcome
    name = check_choice(outcome, "outcome", tuple(OUTCOME_MODELS))
    if name == "ordinal" and categories is None:
        categories = 5
    if isinstance(categories, list):
        categories = tuple(categories)
    return OUTCOME_MODELS[name](categories)
