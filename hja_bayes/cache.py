"""A persistent JAX compilation cache, on by default, so a fresh process skips compiling.

The first fit in a process compiles the solver's programs (seconds); with the cache they are
read back from disk in every later process.  Location: ``$HJA_BAYES_CACHE_DIR``, else
``$XDG_CACHE_HOME/hja_bayes``, else ``~/.cache/hja_bayes``.  ``HJA_BAYES_CACHE=off`` turns it
off.  A cache the user configured for JAX already (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config``) is left as it is.  The cache is bounded (least recently used entries are
evicted beyond ``HJA_BAYES_CACHE_MAX_MB``, default 1024) and safe for concurrent processes
(JAX writes entries under a file lock).  Like any JAX compilation cache it is trusted code:
keep it in a folder only you can write.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "cache_disabled", "enable_compilation_cache"]

DEFAULT_MAX_MB = 1024


def cache_dir() -> Path:
    """Where the compilation cache lives (whether or not it is enabled)."""
    if os.environ.get("HJA_BAYES_CACHE_DIR"):
        return Path(os.environ["HJA_BAYES_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hja_bayes"


def cache_disabled() -> bool:
    """Whether the user turned the caches off (``HJA_BAYES_CACHE=off``)."""
    return os.environ.get("HJA_BAYES_CACHE", "on").lower() in ("0", "off", "false", "no")


def enable_compilation_cache() -> Path | None:
    """Point JAX's persistent compilation cache at :func:`cache_dir`, unless turned off.

    Returns the folder in use, or None when the cache is off (``HJA_BAYES_CACHE=off``), JAX
    already has a cache configured by the user, or the folder cannot be created.
    """
    import jax

    if cache_disabled():
        return None
    if jax.config.jax_compilation_cache_dir:  # the user's own choice wins
        return Path(jax.config.jax_compilation_cache_dir)
    try:
        import filelock  # noqa: F401  (JAX needs it for a bounded cache)
    except ImportError:
        return None
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    max_mb = float(os.environ.get("HJA_BAYES_CACHE_MAX_MB", DEFAULT_MAX_MB))
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_compilation_cache_max_size", int(max_mb * 2**20))
    # the solver's programs each compile in well under JAX's default 1 s threshold
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return folder
