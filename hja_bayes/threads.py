"""One BLAS thread for the package's linear algebra.

NumPy and SciPy wheels each bring their own OpenBLAS, and each keeps a pool of worker
threads that spin for a while after every call, waiting for the next one.  The package's
numerical code alternates between the two (NumPy's products and eigendecompositions,
SciPy's triangular solves) and JAX, on matrices of tens to hundreds of rows; each library's
spinning workers then hold the cores that the next call's workers need.  On 2 cores a
NumPy ``eigh`` and a SciPy triangular solve of a 52-row matrix took 11 ms a pair with two
threads each, against 0.6 ms with one; MT-Bench's cluster-robust fit and intervals 1.07 s
against 0.15 s (``benchmarks/bench_blas_threads.py``).  So the package's entry points
(:func:`one_blas_thread`) run with every BLAS library limited to one thread (threadpoolctl),
the caller's setting restored on return.  The environment variable ``HJA_BAYES_BLAS_THREADS``
sets another limit (a number), or ``keep`` leaves the caller's.
"""

from __future__ import annotations

import functools
import os

__all__ = ["blas_threads", "one_blas_thread"]


def blas_threads() -> int | None:
    """The BLAS threads the entry points run with: 1, or ``HJA_BAYES_BLAS_THREADS`` (None for
    ``keep``: the caller's)."""
    value = os.environ.get("HJA_BAYES_BLAS_THREADS", "1").strip().lower()
    if value == "keep":
        return None
    try:
        return max(1, int(value))
    except ValueError:
        return 1


def one_blas_thread(function):
    """``function`` run with every BLAS library limited to :func:`blas_threads` threads
    (restored after)."""

    @functools.wraps(function)
    def limited(*args, **kwargs):
        limit = blas_threads()
        if limit is None:
            return function(*args, **kwargs)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=limit, user_api="blas"):
            return function(*args, **kwargs)

    return limited
