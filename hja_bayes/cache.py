"""A persistent JAX compilation cache, on by default, so a fresh process skips compiling.

The first fit in a process compiles the solver's programs (seconds); with the cache they are
read back from disk in every later process.  Location: ``$HJA_BAYES_CACHE_DIR``, else
``$XDG_CACHE_HOME/hja_bayes``, else ``~/.cache/hja_bayes``.  ``HJA_BAYES_CACHE=off`` turns it
off.  A cache the user configured for JAX already (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config``) is left as it is.  Like any JAX compilation cache it is trusted code: keep it
in a folder only you can write.

The cache is bounded by ``HJA_BAYES_CACHE_MAX_MB`` (default 1024), but not by JAX's own bound
(``jax_compilation_cache_max_size``): that one reads every entry of the folder again at each
write, so the cost of a compilation grows with the cache (1.05 s per program written with
14,000 entries: 62 s of a short, 125 s Bayesian fit of Chatbot Arena; a test run writes
3,500).  Instead, a process trims the folder when it exits, at most once a day
(:data:`TRIM_INTERVAL`; the file ``last-trim`` records when): the entries read or written
longest ago go first, until the folder is within the bound (:func:`trim_cache`).  A
process that reads an entry while another deletes it warns and compiles the program again.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import time
from pathlib import Path

__all__ = ["cache_dir", "cache_disabled", "enable_compilation_cache", "trim_cache"]

DEFAULT_MAX_MB = 1024
#: Seconds between two trims of the cache folder (one day).
TRIM_INTERVAL = 86400.0
#: JAX's names: an entry ``<key>-cache``, with ``<key>-atime`` where JAX bounds the cache.
_ENTRY, _ATIME = "-cache", "-atime"


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
    # the solver's programs each compile in well under JAX's default 1 s threshold
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:
        due = time.time() - (folder / "last-trim").stat().st_mtime > TRIM_INTERVAL
    except OSError:
        due = True
    if due:
        atexit.register(trim_cache, folder, int(max_mb * 2**20))
    return folder


def trim_cache(folder, max_bytes: int) -> int:
    """Delete the entries of the JAX compilation cache in ``folder`` used longest ago until
    the entries hold at most ``max_bytes``; record the trim in ``folder/last-trim``.

    An entry's last use is the later of its file's access and modification times (JAX does
    not record reads in an unbounded cache; most file systems update the access time at
    least daily).  Other files are left alone.  Returns the number of entries deleted.
    """
    entries, total = [], 0
    with contextlib.suppress(OSError), os.scandir(folder) as listing:
        for item in listing:
            with contextlib.suppress(OSError):
                if item.name.endswith(_ENTRY) and item.is_file():
                    stat = item.stat()
                    entries.append((max(stat.st_atime, stat.st_mtime), item.path, stat.st_size))
                    total += stat.st_size
    entries.sort()
    deleted = 0
    for _, path, size in entries:
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            os.remove(path)
            total -= size
            deleted += 1
        with contextlib.suppress(OSError):
            os.remove(path[: -len(_ENTRY)] + _ATIME)
    with contextlib.suppress(OSError):
        Path(folder, "last-trim").touch()
    return deleted
