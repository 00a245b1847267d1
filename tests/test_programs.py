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
