"""Exceptions and warnings raised by hja_bayes.

Every error the library raises on purpose derives from :class:`HJAError`, itself a
``ValueError``, so callers can catch the library's complaints without catching bugs.
"""

__all__ = [
    "HJAError",
    "DataError",
    "DisconnectedGraphError",
    "IdentifiabilityError",
    "DataWarning",
    "ConvergenceWarning",
]


class HJAError(ValueError):
    """Base class of the errors hja_bayes raises for bad input or ill-posed problems."""


class DataError(HJAError):
    """The comparison data cannot be read or aggregated as given."""


class DisconnectedGraphError(HJAError):
    """The comparison graph is disconnected, so relative scores are not identified."""


class IdentifiabilityError(HJAError):
    """The requested model is not identified by the data or the constraints."""


class DataWarning(UserWarning):
    """Something in the data deserves attention but does not stop the analysis."""


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped before meeting its convergence criterion."""
