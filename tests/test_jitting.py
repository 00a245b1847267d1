"""light_jit: same results as jax.jit, a fallback when an option is unknown, and the quick
options everywhere when asked for."""

import jax.numpy as jnp
import numpy as np

from hja_bayes import jitting


def _f(x, n):
    return jnp.linalg.svd(x.reshape(n, -1), compute_uv=False).sum() + jnp.tanh(x).sum()


def test_light_jit_computes_what_jit_computes():
    f = jitting.light_jit(_f, static_argnames="n")
    x = jnp.asarray(np.random.default_rng(0).normal(size=12))
    np.testing.assert_allclose(f(x, 3), f.plain(x, 3), rtol=1e-12)


def test_an_unknown_option_falls_back_to_a_plain_jit(monkeypatch):
    monkeypatch.setitem(jitting.LIGHT_COMPILE, "xla_no_such_option_anywhere", True)
    f = jitting.light_jit(_f, static_argnames="n")
    x = jnp.arange(6.0)
    np.testing.assert_allclose(f(x, 2), float(_f(x, 2)), rtol=1e-12)


def test_quick_everywhere_gives_the_loops_the_light_options(monkeypatch):
    """HJA_BAYES_COMPILE=quick turns LOOP_COMPILE into LIGHT_COMPILE (and only that), as
    the test suite's conftest sets it; without it the loop keeps its own options."""
    from hja_bayes.hja import loop  # imported under the suite's setting (none with
    # HJA_TEST_XLA_DEFAULTS), set by conftest.py before the package's first import

    assert loop._outer_steps_jit.options == (
        jitting.LIGHT_COMPILE if jitting.quick_everywhere() else jitting.LOOP_COMPILE)
    monkeypatch.setenv("HJA_BAYES_COMPILE", " Quick ")
    assert jitting.light_jit(_f, jitting.LOOP_COMPILE).options == jitting.LIGHT_COMPILE
    assert jitting.light_jit(_f, jitting.NO_YNNPACK).options == jitting.NO_YNNPACK
    assert jitting.light_jit(_f, None).options is None
    for setting in ("", "loop", "off"):
        monkeypatch.setenv("HJA_BAYES_COMPILE", setting)
        assert jitting.light_jit(_f, jitting.LOOP_COMPILE).options == jitting.LOOP_COMPILE
    monkeypatch.delenv("HJA_BAYES_COMPILE")
    f = jitting.light_jit(_f, jitting.LOOP_COMPILE, static_argnames="n")
    assert f.options == jitting.LOOP_COMPILE
    x = jnp.asarray(np.random.default_rng(1).normal(size=12))
    np.testing.assert_allclose(f(x, 4), f.plain(x, 4), rtol=1e-12)
