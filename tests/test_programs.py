"""The program store: a fresh process reads a fit's programs back without tracing them, gets
the same bits, and recovers from files that are torn, missing or of another environment."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hja_bayes import programs
from hja_bayes.decomposition import canonical_decomposition
from hja_bayes.jitting import light_jit

#: A fit with intervals in a fresh process: how many functions JAX traced, and a digest of
#: the scores and the interval table.
SCRIPT = r"""
import hashlib, sys
import jax
traced = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kw: event == "/jax/core/compile/jaxpr_trace_duration"
    and traced.append(kw.get("fun_name")))
import numpy as np
import hja_bayes as hb
data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=200, seed=0)
fit = hb.fit_hja(data, rank=1)
table = fit.intervals()
digest = hashlib.sha256(np.asarray(fit.S).tobytes()
                        + table.select_dtypes("number").to_numpy().tobytes()).hexdigest()
print(len(traced), digest, sorted(set(traced)))
"""


def run_fit(cache) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.update(HJA_BAYES_CACHE_DIR=str(cache), HJA_BAYES_CACHE="on")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True,
                         capture_output=True, text=True).stdout.split(maxsplit=2)
    return int(out[0]), out[1], out[2]


def files(cache):
    return sorted((cache / "programs").glob("*/*.program"))


def test_a_fresh_process_reads_a_fit_back_without_tracing_and_recovers_from_bad_files(tmp_path):
    traced, reference, _ = run_fit(tmp_path)
    written = files(tmp_path)
    assert traced > 0 and len(written) >= 4  # start blocks, solver chunk, objective, ...
    traced, digest, names = run_fit(tmp_path)
    assert (traced, digest) == (0, reference), names
    for path in written[::2]:  # torn or missing files: compiled again and written whole
        path.write_bytes(path.read_bytes()[:100])
    for path in written[1::2]:
        path.unlink()
    traced, digest, _ = run_fit(tmp_path)
    assert traced > 0 and digest == reference
    assert files(tmp_path) == written and all(p.stat().st_size > 100 for p in written)
    traced, digest, names = run_fit(tmp_path)
    assert (traced, digest) == (0, reference), names


@pytest.fixture
def store_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HJA_BAYES_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HJA_BAYES_CACHE", raising=False)
    return tmp_path / "programs"


def test_each_static_value_shape_and_dtype_has_its_own_program(store_folder):
    S = np.random.default_rng(0).normal(size=(4, 6))
    first = light_jit(canonical_decomposition, static_argnames="rank")
    expected = {r: jax.jit(canonical_decomposition, static_argnames="rank")(S, r)
                for r in (1, 2)}
    for r in (1, 2):
        for a, b in zip(first(S, r), expected[r]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    first(S[:3], 1)
    first(S.astype(np.float32), 1)
    assert len(list(store_folder.glob("*/*.program"))) == 4
    again = light_jit(canonical_decomposition, static_argnames="rank")  # a new process, as
    for a, b in zip(again(S, 2), expected[2]):                          # far as memory goes
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert len(list(store_folder.glob("*/*.program"))) == 4


def test_traced_calls_and_unstable_static_values_go_to_jax_jit(store_folder):
    S = jnp.asarray(np.random.default_rng(1).normal(size=(3, 5, 6)))
    f = light_jit(canonical_decomposition, static_argnames="rank")
    mu = jax.vmap(lambda s: f(s, 1).mu)(S)  # traced arguments
    np.testing.assert_allclose(mu[1], f(S[1], 1).mu, atol=1e-12)
    elsewhere = jax.device_put(S[1], jax.devices()[-1])  # committed: JAX runs it there
    np.testing.assert_allclose(f(elsewhere, 1).mu, mu[1], atol=1e-12)
    with pytest.raises(programs.Unkeyable):
        programs.stable(object())
    with pytest.raises(programs.Unkeyable):  # a function from outside the package
        programs.stable(lambda x: x)
    assert programs.stable(np.exp) == programs.stable(np.exp)
    assert programs.stable(canonical_decomposition) == programs.stable(canonical_decomposition)
    assert programs.stable(jnp) != programs.stable(np)  # the array-module default is keyed
    assert programs.stable((1, 2.0, "a")) != programs.stable((1, 2, "a"))


def test_the_store_stays_under_its_size(store_folder, monkeypatch):
    monkeypatch.setenv("HJA_BAYES_PROGRAMS_MAX_MB", "0.000001")
    f = light_jit(canonical_decomposition, static_argnames="rank")
    for n in (4, 5, 6):
        f(np.ones((3, n)) + np.eye(3, n), 1)
    assert len(list(store_folder.glob("*/*.program"))) <= 1


def test_a_program_that_cannot_be_stored_leaves_no_partial_file(store_folder, monkeypatch):
    def no_room(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(programs.os, "replace", no_room)  # the write fails at its last step
    f = light_jit(canonical_decomposition, static_argnames="rank")
    S = np.ones((3, 7)) + np.eye(3, 7)
    np.testing.assert_allclose(f(S, 1)[0], canonical_decomposition(S, 1)[0], rtol=1e-12)
    assert list(store_folder.rglob("*.part")) == [] and files(store_folder.parent) == []


def test_a_damaged_program_file_is_never_loaded(store_folder):
    """A bit flipped inside a stored executable that still unpickled had been loaded and run:
    a crash or a hang in every later process.  Each file carries a checksum of its bytes."""
    f = light_jit(canonical_decomposition, static_argnames="rank")
    S = np.random.default_rng(2).normal(size=(3, 8))
    expected = jax.jit(canonical_decomposition, static_argnames="rank")(S, 1)
    f(S, 1)
    (path,) = store_folder.glob("*/*.program")
    raw = bytearray(path.read_bytes())
    raw[int(len(raw) * 0.7)] ^= 0x01
    path.write_bytes(bytes(raw))
    programs.clear()  # a new process, as far as memory goes
    for a, b in zip(light_jit(canonical_decomposition, static_argnames="rank")(S, 1), expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    assert path.exists() and path.read_bytes() != bytes(raw)  # compiled again, written whole


def test_source_written_after_import_turns_the_store_off(store_folder):
    """The key digests the source files on disk: a process that imported the package and
    then saw them edited (a notebook editing the package) had stored its old code's programs
    under the new source's key, for every later process to read.  (pytest's own
    MonkeyPatch: the suite's fixture would turn the store off for this test by itself.)"""
    f = light_jit(canonical_decomposition, static_argnames="rank")
    f(np.ones((3, 9)) + np.eye(3, 9), 1)
    assert len(list(store_folder.rglob("*.program"))) == 1  # the store is on here
    try:
        with pytest.MonkeyPatch.context() as patch:
            programs.environment_key.cache_clear()
            patch.setattr(programs, "_IMPORTED", 0.0)  # every file is newer than that
            assert programs.environment_key() is None and programs.program_folder() is None
            assert programs._source_changed()
            f(np.ones((3, 11)) + np.eye(3, 11), 1)  # a new shape: compiled, not written
            compiled = jax.jit(lambda x: x + 1).lower(1.0).compile()
            programs._write(store_folder / "x" / "y.program", "d", compiled)  # refused too
            assert len(list(store_folder.rglob("*.program"))) == 1
    finally:
        programs.environment_key.cache_clear()
    assert programs.environment_key() is not None and not programs._source_changed()


def test_a_call_under_other_jax_options_gets_its_own_program(store_folder):
    """The JAX options were read once per process: a float32 program compiled inside
    ``jax.enable_x64(False)`` had been stored under the float64 key."""
    f = light_jit(canonical_decomposition, static_argnames="rank")
    S = np.ones((3, 10)) + np.eye(3, 10)
    f(S, 1)
    with jax.enable_x64(False):
        low = f(S, 1)
    assert low[0].dtype == np.float32
    assert len(list(store_folder.glob("*/*.program"))) == 2
    programs.clear()
    again = light_jit(canonical_decomposition, static_argnames="rank")(S, 1)
    assert again[0].dtype == np.float64


def test_a_bad_size_limit_is_said_and_the_default_kept(monkeypatch):
    monkeypatch.setenv("HJA_BAYES_PROGRAMS_MAX_MB", "lots")
    with pytest.warns(UserWarning, match="HJA_BAYES_PROGRAMS_MAX_MB='lots' is not a number"):
        assert programs._limit() == programs.DEFAULT_MAX_MB * 2 ** 20
