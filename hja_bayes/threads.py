"""One BLAS thread for the package's linear algebra.

NumPy and SciPy wheels each bring their own OpenBLAS, and each keeps a pool of worker
threads that spin for a while after every call, waiting for the next one.  The package's
numerical code alternates between the two (NumPy's products and eigendecompositions,
SciPy's triangular solves) and JAX, on matrices of tens to hundreds of rows; each library's
spinning workers then hold the cores that the next call's workers need.  On 2 cores a
NumPy ``eigh`` and a SciPy triangular solve of a 52-row matrix took 11 ms a pair with two
threads each, against 0.6 ms with one; MT-Bench's cluster-robust fit and intervals 0.99 s
against 0.12 s (``benchmarks/bench_blas_threads.py``).  So the package's public functions
(:func:`one_blas_thread`) run with every BLAS library limited to one thread (threadpoolctl;
SciPy's is loaded first, so that it is limited too), the caller's setting restored when the
outermost such call returns (nested calls share one limit).  The environment variable
``HJA_BAYES_BLAS_THREADS`` sets another limit (a number), or ``keep`` leaves the caller's.
The libraries are found once (threadpoolctl reads the process's memory map: about 1 ms, the
whole of a small ``fit.update``'s margin) and again only after new modules were imported,
which is how a new BLAS comes into the process.
"""

from __future__ import annotations

import functools
import os
import sys
import threading

from .errors import ParameterError

__all__ = ["blas_threads", "one_blas_thread"]

_lock = threading.Lock()
_active = {"depth": 0, "limits": None}  # calls inside, and the limit to undo after the last
_found = {"modules": -1, "controller": None}  # the libraries, found with this many modules


def blas_threads() -> int | None:
    """The BLAS threads the public functions run with: 1, or ``HJA_BAYES_BLAS_THREADS`` (None
    for ``keep``: the caller's).

    Raises
    ------
    ParameterError
        For a value that is neither ``keep`` nor a positive integer.
    """
    value = os.environ.get("HJA_BAYES_BLAS_THREADS", "1").strip().lower()
    if value == "keep":
        return None
    if not value.isdigit() or int(value) < 1:
        raise ParameterError(f"HJA_BAYES_BLAS_THREADS must be 'keep' or a positive integer, "
                             f"got {value!r}")
    return int(value)


def _enter(limit: int) -> None:
    with _lock:
        if _active["depth"] == 0:
            import scipy.linalg  # noqa: F401  (its OpenBLAS loaded, so it is limited too)
            from threadpoolctl import ThreadpoolController

            if _found["modules"] != len(sys.modules):
                _found["controller"] = ThreadpoolController()
                _found["modules"] = len(sys.modules)
            _active["limits"] = _found["controller"].limit(limits=limit, user_api="blas")
        _active["depth"] += 1


def _exit() -> None:
    with _lock:
        _active["depth"] -= 1
        if _active["depth"] == 0:
            _active["limits"].restore_original_limits()
            _active["limits"] = None


def one_blas_thread(function):
    """``function`` run with every BLAS library limited to :func:`blas_threads` threads
    (the caller's restored after the outermost call)."""

    @functools.wraps(function)
    def limited(*args, **kwargs):
        limit = blas_threads()
        if limit is None:
            return function(*args, **kwargs)
        _enter(limit)
        try:
            return function(*args, **kwargs)
        finally:
            _exit()

    return limited
