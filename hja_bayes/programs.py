"""Compiled programs kept on disk, so that a fresh process neither compiles nor traces them.

JAX's persistent compilation cache (:mod:`hja_bayes.cache`) spares a fresh process XLA's
compilation, but to find a program's entry JAX first traces the Python function and lowers
it: on the command line's fit of Chatbot Arena, 15 programs and about 1 s of a 4 s run, all
of it repeated in every process.  :class:`ProgramStore` keys a compiled executable by what
fixes it without tracing:

* the environment: the package's source (every module's bytes), the JAX and jaxlib versions,
  the backend and its devices, the host CPU, ``XLA_FLAGS`` and the JAX options that change
  a program;
* the function (module and qualified name) and its XLA options;
* the values of its static arguments, and the tree, shapes, dtypes and weak types of the
  others.

It writes the executable with :mod:`jax.experimental.serialize_executable` and reads it back
in a later process.  Whatever cannot be keyed this way (a static value without a stable
description, a traced argument, a program with closed-over constants) goes to ``jax.jit`` as
before.  A process whose package source files were written after it imported the package
neither reads nor writes programs (the code it runs is not the code on disk), and each file
carries a checksum of its bytes, checked before it is loaded.  Module constants and
functions of the package changed at run time (a test's monkeypatch, an experiment) are not
part of the key: such a process should turn the store off (``HJA_BAYES_CACHE=off``), or it
writes programs built from the changed values under the usual key for every later process
to read.  Like JAX's own cache, the folder holds code that is run: keep it where only you
can write.  The folder is ``programs`` in the compilation cache's folder, bounded by
``HJA_BAYES_PROGRAMS_MAX_MB`` (default 256; least recently written files go first);
``HJA_BAYES_CACHE=off`` turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pickle
import platform
import sys
import tempfile
import time
import types
import warnings
import weakref
from pathlib import Path

import jax
import numpy as np

from .cache import cache_dir, cache_disabled

__all__ = ["ProgramStore", "clear", "environment_key", "program_folder"]

DEFAULT_MAX_MB = 256
#: Programs one function keeps in memory (the oldest go first beyond this).
IN_MEMORY = 256
#: What XLA raises when a program fails to run (a RuntimeError; named so in newer JAX).
_RUNTIME_ERROR = getattr(jax.errors, "JaxRuntimeError", RuntimeError)
#: JAX options that change what a traced program computes.
_CONFIG = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_rank_promotion",
           "jax_numpy_dtype_promotion", "jax_default_prng_impl", "jax_threefry_partitionable",
           "jax_debug_nans", "jax_debug_infs")


#: When this process imported the package: source files written later are not its code.
_IMPORTED = time.time()


class Unkeyable(TypeError):
    """A call whose program cannot be described without tracing it."""


def program_folder() -> Path | None:
    """The store's folder, or None where the cache is off, programs cannot be read back, or
    the package's source changed on disk after this process imported it."""
    if cache_disabled() or not _loadable() or environment_key() is None:
        return None
    return cache_dir() / "programs"


def _source_changed() -> bool:
    """Whether a source file of the package modules this process has loaded was written
    after it imported the package."""
    prefix = __name__.partition(".")[0]
    for name, module in list(sys.modules.items()):
        if name == prefix or name.startswith(prefix + "."):
            try:
                if os.stat(module.__file__).st_mtime > _IMPORTED:
                    return True
            except (AttributeError, TypeError, OSError):  # no file: nothing to compare
                continue
    return False


@functools.cache
def _loadable() -> bool:
    """Whether a program read back can run: on the CPU, once JAX's LAPACK kernels (which JAX
    readies while lowering a program that uses them, a step a read program skips) are."""
    if jax.default_backend() != "cpu":
        return False
    try:
        from jaxlib import lapack

        lapack._lapack.initialize()
    except Exception:  # noqa: BLE001  (another jaxlib: use JAX's own cache only)
        return False
    return True


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            lines = [line for line in info if line.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.processor()


@functools.cache
def environment_key() -> str | None:
    """A digest of everything outside a call, but the JAX options (:func:`config_key`), that
    fixes its compiled program; None where a source file of the package was written after
    this process imported it (its code is then not what the files say)."""
    import jaxlib

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        if path.stat().st_mtime > _IMPORTED:
            return None
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    device = jax.devices()[0]
    parts = [jax.__version__, jaxlib.__version__, jax.default_backend(), device.device_kind,
             device.client.platform_version, str(jax.device_count()), platform.machine(),
             _cpu(), os.environ.get("XLA_FLAGS", "")]
    digest.update("\x00".join(parts).encode())
    return digest.hexdigest()


def config_key() -> tuple:
    """The JAX options that change what a traced program computes, as they are now (a
    call inside ``with jax.enable_x64(False)`` gets a program of its own)."""
    return tuple(repr(getattr(jax.config, name, None)) for name in _CONFIG)


def stable(value):
    """A description of a static value that is the same in every process (``Unkeyable``
    where there is none)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, np.generic):
        return (type(value).__name__, value.item())
    if isinstance(value, (tuple, list)):
        return (type(value).__qualname__, tuple(stable(v) for v in value))
    if isinstance(value, np.ufunc):
        return ("ufunc", value.__name__)
    if isinstance(value, types.ModuleType):  # e.g. an array-module argument's default
        return ("module", value.__name__)
    if isinstance(value, types.FunctionType):
        if (value.__module__ or "").partition(".")[0] != __name__.partition(".")[0]:
            raise Unkeyable(f"{value.__qualname__} is not the package's: its source is not "
                            "in the key")
        cells = tuple(stable(c.cell_contents) for c in value.__closure__ or ())
        return ("function", value.__module__, value.__qualname__, cells,
                stable(value.__defaults__))
    if isinstance(value, functools.partial):
        return ("partial", stable(value.func), stable(value.args),
                stable(tuple(sorted(value.keywords.items()))))
    raise Unkeyable(f"no stable description of {type(value).__qualname__}")


@functools.cache
def _home():
    """Where the store's programs run: JAX's first device."""
    return jax.sharding.SingleDeviceSharding(jax.devices()[0])


def _leaf(leaf):
    if isinstance(leaf, jax.core.Tracer):
        raise Unkeyable("a traced argument")
    if (isinstance(leaf, jax.Array) and getattr(leaf, "committed", True)
            and leaf.sharding != _home()):
        raise Unkeyable("an argument placed on another device")
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        return (leaf.shape, leaf.dtype.str, bool(getattr(leaf, "weak_type", False)))
    if isinstance(leaf, (bool, int, float, complex)):
        return type(leaf).__name__
    raise Unkeyable(f"an argument of type {type(leaf).__qualname__}")


class ProgramStore:
    """The compiled programs of one jitted function, in memory and on disk.

    ``fun`` is compiled with the XLA ``options`` (None: JAX's defaults) and ``jit_kwargs``
    (static arguments by name only); ``name`` (default: ``fun``'s module and qualified
    name) names its programs.  :meth:`call` runs a call through a compiled executable found
    in memory, on disk, or compiled now (and written); :class:`Unkeyable` where the call
    cannot be keyed.
    """

    def __init__(self, fun, name=None, options=None, **jit_kwargs):
        if name is None and hasattr(fun, "__wrapped__"):
            raise ValueError(f"{fun.__qualname__} wraps another function: name its programs")
        names = jit_kwargs.get("static_argnames", ())
        self.static_names = frozenset((names,) if isinstance(names, str) else names)
        params = list(inspect.signature(fun).parameters.values())
        self.static_positions = frozenset(
            i for i, p in enumerate(params) if p.name in self.static_names
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        self.fun, self.compiler_options, self.jit_kwargs = fun, options, jit_kwargs
        self.name = name or f"{fun.__module__}.{fun.__qualname__}"
        self.options = repr((sorted((options or {}).items()), sorted(jit_kwargs.items())))
        self.loaded = {}  # key -> [program, its file if read from there and not yet run]
        _STORES.add(self)

    def split(self, args, kwargs):
        """The dynamic arguments and a hashable key of the call."""
        static = [(i, a) for i, a in enumerate(args) if i in self.static_positions]
        static += sorted((k, v) for k, v in kwargs.items() if k in self.static_names)
        args = tuple(a for i, a in enumerate(args) if i not in self.static_positions)
        kwargs = {k: v for k, v in kwargs.items() if k not in self.static_names}
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        return args, kwargs, (tree, tuple(_leaf(leaf) for leaf in leaves), tuple(static),
                              config_key())

    def call(self, *args, **kwargs):
        """Run the program for these arguments: from memory, from the store, or compiled
        and stored."""
        if getattr(jax.config, "jax_default_device", None) is not None:
            raise Unkeyable("a default device set by the user")
        dynamic, dynamic_kwargs, key = self.split(args, kwargs)
        try:
            entry = self.loaded[key]
        except TypeError as error:  # an unhashable static value
            raise Unkeyable(str(error)) from None
        except KeyError:
            if len(self.loaded) >= IN_MEMORY:
                del self.loaded[next(iter(self.loaded))]
            entry = self.loaded[key] = self.find(key, args, kwargs)
        if entry is None:
            raise Unkeyable("no stable description of the call")
        program, path = entry
        if path is None:
            return program(*dynamic, **dynamic_kwargs)
        try:  # the first run of a program read from disk: a fault shows now, not later
            out = jax.block_until_ready(program(*dynamic, **dynamic_kwargs))
            entry[1] = None
            return out
        except Exception:  # noqa: BLE001  (XLA's error, or arguments it does not take)
            path.unlink(missing_ok=True)
            entry[:] = [self.compile(args, kwargs), None]
            return entry[0](*dynamic, **dynamic_kwargs)

    def find(self, key, args, kwargs):
        """``[program, path]`` for ``key``: read from ``path`` on disk, or compiled now and
        written there (``path`` None); None where the call has no stable description."""
        tree, leaves, static, config = key
        try:
            description = repr((self.name, self.options, str(tree), leaves,
                                tuple((k, stable(v)) for k, v in static), config))
        except Unkeyable:
            return None
        if "0x" in description or "..." in description:  # an address, an elided repr
            return None
        folder = program_folder()
        name = hashlib.sha256(description.encode()).hexdigest()[:40] + ".program"
        path = folder / environment_key()[:20] / name if folder is not None else None
        if path is not None and path.exists():
            program = _read(path, description)
            if program is not None:
                return [program, path]
        hits = _JAX_CACHE_HITS[0]
        program = self.compile(args, kwargs)
        # an executable JAX read from its own cache does not serialise whole again
        if path is not None and _JAX_CACHE_HITS[0] == hits:
            _write(path, description, program)
        return [program, None]

    def compile(self, args, kwargs):
        """Compiled now, under a name of its own: JAX's cache then holds no copy of it
        (see :func:`_count_jax_cache_hits`)."""
        @functools.wraps(self.fun)
        def renamed(*a, **k):
            return self.fun(*a, **k)

        renamed.__name__ = f"{self.fun.__name__}_{os.urandom(4).hex()}"
        options = {"compiler_options": self.compiler_options} if self.compiler_options else {}
        return jax.jit(renamed, **options, **self.jit_kwargs).lower(*args, **kwargs).compile()


_STORES = weakref.WeakSet()


def clear() -> None:
    """Drop every store's programs from memory (those on disk stay), as
    ``jax.clear_caches()`` does for JAX's own."""
    for store in list(_STORES):
        store.loaded.clear()


#: Persistent-cache hits of JAX in this process (see :func:`_count_jax_cache_hits`).
_JAX_CACHE_HITS = [0]


def _count_jax_cache_hits(event: str, **_) -> None:
    """Counts JAX's persistent-cache hits: an executable JAX read from its cache serialises
    without its compiled kernels (it fails when read back), so a program compiled in such a
    moment is not written.  The store compiles each program under a new name, which JAX's
    cache cannot hold, so this is a guard only."""
    if event == "/jax/compilation_cache/cache_hits":
        _JAX_CACHE_HITS[0] += 1


jax.monitoring.register_event_listener(_count_jax_cache_hits)


def _read(path: Path, description: str):
    from jax.experimental.serialize_executable import deserialize_and_load

    try:
        raw = path.read_bytes()
        check, blob = raw[:_DIGEST], raw[_DIGEST:]
        if hashlib.sha256(blob).digest() != check:  # damaged: loading it could crash or hang
            raise ValueError("checksum")
        saved, serialized, in_tree, out_tree = pickle.loads(blob)
        if saved != description:  # a digest shared by two calls
            return None
        return deserialize_and_load(serialized, in_tree, out_tree)
    except Exception:  # noqa: BLE001  (a torn or stale file: compile again)
        path.unlink(missing_ok=True)
        return None


def _write(path: Path, description: str, program) -> None:
    from jax.experimental.serialize_executable import serialize

    temporary = None
    if _source_changed():  # this process's code is no longer the source the key names
        return
    try:
        blob = pickle.dumps((description, *serialize(program)))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(hashlib.sha256(blob).digest() + blob)
        os.replace(temporary, path)
        _bound(path.parent.parent, len(blob))
    except Exception:  # noqa: BLE001  (not serialisable, or no room: keep it in memory)
        if temporary is not None:  # a partial file is no use to the next process
            Path(temporary).unlink(missing_ok=True)
        return


#: Bytes of the checksum that starts each program's file.
_DIGEST = 32
#: Bytes in each store folder as this process last counted them.
_STORED = {}
#: A partial file older than this (seconds) was left by a process that died writing it.
_STALE_PART = 3600


def _limit() -> float:
    """``HJA_BAYES_PROGRAMS_MAX_MB`` in bytes; the default, with a warning, where it is not
    a number >= 0."""
    text = os.environ.get("HJA_BAYES_PROGRAMS_MAX_MB", str(DEFAULT_MAX_MB))
    try:
        megabytes = float(text)
        if not megabytes >= 0:
            raise ValueError(text)
    except ValueError:
        warnings.warn(f"HJA_BAYES_PROGRAMS_MAX_MB={text!r} is not a number of megabytes >= 0: "
                      f"the program store keeps to {DEFAULT_MAX_MB}", UserWarning, stacklevel=2)
        megabytes = DEFAULT_MAX_MB
    return megabytes * 2 ** 20


def _bound(root: Path, written: int) -> None:
    """Delete the least recently written programs beyond the size limit (the folder is
    listed once per process, and again only when over the limit)."""
    limit = _limit()
    counted = _STORED.get(root)
    if counted is not None and counted + written <= limit:
        _STORED[root] = counted + written
        return
    for part in root.glob("*/*.part"):
        if part.stat().st_mtime < time.time() - _STALE_PART:
            part.unlink(missing_ok=True)
    files = [(p.stat().st_mtime, p.stat().st_size, p) for p in root.glob("*/*.program")]
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files, key=lambda f: f[0]):
        if total <= limit:
            break
        path.unlink(missing_ok=True)
        total -= size
    _STORED[root] = total
