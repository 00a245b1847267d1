"""Exceptions and warnings raised by hja_bayes.

One tree per family, so callers catch the library's complaints without catching bugs::

    HJAError (ValueError)
    ├── DataError               the comparisons cannot be read or aggregated as given
    │   └── DisconnectedGraphError   the comparison graph falls apart
    ├── IdentifiabilityError    the model asked for is not identified by the data
    └── ParameterError          an argument is out of its range or of the wrong kind

    HJAWarning (UserWarning)
    ├── DataWarning             something in the data deserves attention
    └── ConvergenceWarning      an iterative solver stopped early
"""

import functools
import os
import sys
import warnings

__all__ = [
    "HJAError",
    "DataError",
    "DisconnectedGraphError",
    "IdentifiabilityError",
    "ParameterError",
    "HJAWarning",
    "DataWarning",
    "ConvergenceWarning",
    "warn",
]


class HJAError(ValueError):
    """Base class of the errors hja_bayes raises for bad input or ill-posed problems."""


class DataError(HJAError):
    """The comparison data cannot be read or aggregated as given."""


class DisconnectedGraphError(DataError):
    """The comparison graph is disconnected, so relative scores are not identified."""


class IdentifiabilityError(HJAError):
    """The requested model is not identified by the data or the constraints."""


class ParameterError(HJAError):
    """An argument is out of range, of the wrong type, or names something unknown."""


class HJAWarning(UserWarning):
    """Base class of the warnings hja_bayes issues."""


class DataWarning(HJAWarning):
    """Something in the data deserves attention but does not stop the analysis."""


class ConvergenceWarning(HJAWarning):
    """An iterative solver stopped before meeting its convergence criterion."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: ``functools.cached_property`` runs the package's cached quantities from its own frame
_FUNCTOOLS = functools.__file__


def warn(message: str, category: type[Warning] = HJAWarning) -> None:
    """``warnings.warn`` attributed to the first caller outside this package.

    A warning then names the line of the user's code that led to it, whichever path inside
    the package raised it (what Python 3.12's ``skip_file_prefixes`` does).
    """
    frame, level = sys._getframe(1), 2
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename == _FUNCTOOLS):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
