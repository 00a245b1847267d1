"""Programs over runs of posterior draws, side by side on the devices JAX sees.

Work done draw by draw after sampling (the answer effects drawn back, leave-one-out's prompt
integrals) runs as one compiled program over a chunk of draws, a ``lax.scan`` from one draw
to the next: a vectorised map over draws batches their Newton loops, a shape XLA's CPU
runtime was seen never to return from (``laplace_at``).  Where JAX sees several devices
(e.g. the host devices of ``numpyro.set_host_device_count`` that ran the chains), each chunk
is split into one run of consecutive draws per device, run side by side by ``jax.pmap``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..jitting import NO_YNNPACK, compile_lowered

__all__ = ["DrawProgram"]


class DrawProgram:
    """``program`` over chunks of ``chunk`` draws, on every device JAX sees.

    ``program(*args)`` takes arrays with the draws along their first axis (or None) and
    returns a pytree of arrays with the draws first.  It is compiled on first use, once (every
    chunk has one shape), without YNNPACK's fusions (:data:`~hja_bayes.jitting.NO_YNNPACK`:
    measured faster for these programs).

    Attributes
    ----------
    lanes : int
        Devices the draws are split over (1: one device, ``jax.jit``).
    """

    def __init__(self, program, chunk: int):
        self.chunk = int(chunk)
        devices = jax.local_device_count()
        self.lanes = devices if devices > 1 and self.chunk % devices == 0 else 1
        self._program = jax.pmap(program) if self.lanes > 1 else jax.jit(program)
        self._compiled = None

    def __call__(self, *args):
        """The program over one chunk: ``args`` (chunk, ...) or None; the outputs as NumPy
        arrays (chunk, ...)."""
        if self.lanes > 1:  # (lanes, draws per lane, ...): consecutive draws per device
            args = [None if a is None
                    else np.reshape(a, (self.lanes, self.chunk // self.lanes) + np.shape(a)[1:])
                    for a in args]
        args = [None if a is None else jnp.asarray(a) for a in args]
        if self._compiled is None:
            self._compiled = compile_lowered(self._program.lower(*args), NO_YNNPACK)
        out = self._compiled(*args)
        if self.lanes == 1:
            return jax.tree.map(np.asarray, out)
        return jax.tree.map(lambda x: np.asarray(x).reshape((self.chunk,) + x.shape[2:]), out)
