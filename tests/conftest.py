import os
import types
from pathlib import Path

import pytest

# The suite uses the package's persistent compilation cache as any process does (the user's
# cache folder, hja_bayes.cache): a run reads back what earlier runs compiled.  On a machine
# whose cache is empty the first run compiles everything and takes about twice as long.
# HJA_BAYES_CACHE=off or HJA_BAYES_CACHE_DIR, set before pytest starts, are respected.
# Tests compile hundreds of small programs and run most of them a few times, so XLA's quick
# options (LLVM level 0 without its expensive passes, the older elemental emitters: the
# options of hja_bayes.jitting.LIGHT_COMPILE) are set for the whole run, subprocesses
# included: with an empty cache the suite took 8 min 4 s instead of 10 min 28 s.  What users
# run compiles with JAX's defaults, and the benchmarks measure that.  Flags already in
# XLA_FLAGS come after these and win; HJA_TEST_XLA_DEFAULTS=1 leaves XLA_FLAGS alone (so does
# `make test-min`: the oldest jaxlib allowed aborts on these flags).  (XLA reads them when JAX
# first computes, which no import below does.)  The solver's loop asks for its own options
# (LLVM level 1, which programs' own options put above XLA_FLAGS): HJA_BAYES_COMPILE=quick,
# read when the package is imported, gives it the quick ones too (in the suite's runs it took
# 2.0 s of CPU per panel size to compile, 1.2 s with these; hja_bayes.jitting).
QUICK_XLA_FLAGS = ("--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
                   " --xla_cpu_use_fusion_emitters=false")
if not os.environ.get("HJA_TEST_XLA_DEFAULTS"):
    os.environ["XLA_FLAGS"] = f"{QUICK_XLA_FLAGS} {os.environ.get('XLA_FLAGS', '')}".strip()
    os.environ.setdefault("HJA_BAYES_COMPILE", "quick")

import hja_bayes  # noqa: E402, F401  (enables float64 in JAX before any test builds arrays)

SHARED_DATA = Path(os.environ.get("HJA_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def shared_data_or_skip(*parts: str) -> Path:
    """Path of an unbundled data file; the test skips (saying why) when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"unbundled data set not present (no license to ship it): {path}")
    return path


def _of_the_package(target) -> bool:
    """Whether a monkeypatch target is one of the package's modules or objects (or a dotted
    path into the package)."""
    if isinstance(target, str):
        return target.partition(".")[0] == "hja_bayes"
    name = target.__name__ if isinstance(target, types.ModuleType) else getattr(
        target, "__module__", None)
    return isinstance(name, str) and name.partition(".")[0] == "hja_bayes"


@pytest.fixture
def monkeypatch(monkeypatch):
    """pytest's ``monkeypatch``; a test that patches the package's own modules or objects runs
    with the program store off (``HJA_BAYES_CACHE=off``), and the compiled programs of the
    process are dropped after it: programs are keyed without the package's module values
    (:mod:`hja_bayes.programs`), so a patched constant or function would otherwise reach
    other tests' programs through the store's shared folder or this process's memory."""
    patched = []

    def guarded(plain):
        def patch(target, *args, **kwargs):
            if _of_the_package(target) and not patched:
                monkeypatch.setenv("HJA_BAYES_CACHE", "off")
                patched.append(target)
            return plain(target, *args, **kwargs)
        return patch

    for name in ("setattr", "delattr", "setitem", "delitem"):
        setattr(monkeypatch, name, guarded(getattr(monkeypatch, name)))
    yield monkeypatch
    if patched:
        monkeypatch.undo()
        import jax

        from hja_bayes import programs

        programs.clear()
        jax.clear_caches()


def release_memory():
    """Drop JAX's compiled programs and hand the C heap's freed pages back to the system
    (glibc keeps them otherwise, and the process's resident size never comes down)."""
    import ctypes
    import gc
    import sys

    import jax

    from hja_bayes import programs

    jax.clear_caches()
    programs.clear()
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


def resident_bytes() -> int | None:
    """The process's resident memory now (None where /proc is not there to read it)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


# resident size above which a finished module's compiled programs are dropped: make test runs
# two worker processes, each at most 1.5 GB with 0.8 here (a first run took 6 min 4 s, against
# 6 min 17 s and 1.9 GB a worker with 1.2)
RELEASE_ABOVE_BYTES = int(float(os.environ.get("HJA_TEST_RELEASE_ABOVE_GB", "0.8")) * 2**30)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Release memory after a test module once the process holds more than
    ``RELEASE_ABOVE_BYTES`` (:func:`release_memory`): over the whole suite the compiled
    programs alone raised the process's peak from 4.3 to 6.9 GB, while recompiling what the
    next module shares costs about half a minute in all when released after every module."""
    yield
    resident = resident_bytes()
    if resident is None or resident > RELEASE_ABOVE_BYTES:
        release_memory()
