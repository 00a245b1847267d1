"""light_jit: same results as jax.jit, and a fallback when an option is unknown."""

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
