"""One BLAS thread for the package's linear algebra.

NumPy and SciPy wheels each bring their own OpenBLAS, and each keeps a pool of worker
threads that spin for a while after every call, waiting for the next one.  The package's
numerical code alternates between the two (NumPy's products and eigendecompositions,
SciPy's triangular solves) and JAX, on matrices of tens to hundreds of rows; each library's
spinning workers then hold the cores that the next call's workers need.  On 2 cores a
NumPy ``eigh`` and a SciPy triangular solve of a 52-row matrix took 11 ms a pair with two
threads each, against 0.6 ms with one; MT-Bench's cluster-robust fit and intervals 0.99 s
against 0.12 s (``benchmarks/bench_blas_threads.py``).  So the package's public functions
(:func:`one_blas_thread`) run with every BLAS library limited to one thread (threadpoolctl),
the caller's setting restored when the outermost such call returns (nested calls share one
limit).  SciPy's OpenBLAS is loaded first, so that it is limited too when a call imports
SciPy's linear algebra: the shared library alone where the wheel bundles it (3 ms; the
import that loads it later finds it loaded), which spares a call that never uses SciPy the
import of ``scipy.linalg`` (65-400 ms, most of a fresh process's ``fit.update``).  The
environment variable ``HJA_BAYES_BLAS_THREADS`` sets another limit (a number), or ``keep``
leaves the caller's.
The libraries are found once (threadpoolctl reads the process's memory map: about 1 ms, the
whole of a small ``fit.update``'s margin) and again only after new modules were imported,
which is how a new BLAS comes into the process.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.util
import os
import sys
import threading

from .errors import ParameterError

__all__ = ["blas_threads", "one_blas_thread"]

_lock = threading.Lock()
_active = {"depth": 0, "limits": None}  # calls inside, and the limit to undo after the last
_found = {"modules": -1, "controller": None}  # the libraries, found with this many modules
_scipy_blas = []  # SciPy's BLAS, once loaded: its library (or the module that loaded it)


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


def _load_scipy_blas() -> None:
    """Load the OpenBLAS that SciPy's linear algebra uses, without importing it where the
    wheel bundles the library (``scipy.libs`` on Linux and Windows, ``scipy/.dylibs`` on
    macOS); otherwise (a SciPy built on a system BLAS) by importing ``scipy.linalg``."""
    if _scipy_blas:
        return
    if "scipy.linalg" not in sys.modules:
        try:
            folder = os.path.dirname(importlib.util.find_spec("scipy").origin)
            found = [path for pattern in (os.path.join(folder + ".libs", "lib*openblas*"),
                                          os.path.join(folder, ".dylibs", "lib*openblas*"))
                     for path in sorted(glob.glob(pattern))]
            _scipy_blas.append(ctypes.CDLL(found[0]))
            return
        except (AttributeError, TypeError, IndexError, OSError):  # no spec or origin (a
            pass  # frozen application), not bundled, or not loadable alone: imported
    import scipy.linalg

    _scipy_blas.append(scipy.linalg)


def _enter(limit: int) -> None:
    with _lock:
        if _active["depth"] == 0:
            _load_scipy_blas()  # limited with the rest, before a call imports it
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
