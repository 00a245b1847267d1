"""Compiling small programs fast.

A first fit in a fresh process spends most of its time in XLA compiling the solver's step,
not running it: on a panel of tens of models a step runs in about a millisecond either way.
:func:`light_jit` compiles at LLVM optimisation level 0 without its expensive passes, which
cuts the compilation of the solver step by about a third (3.2 s -> 2.3 s on Chatbot Arena,
under load) for a step that runs in 1.5 ms instead of 0.75 ms; it is used where the panel is
small.  (Turning XLA's CPU fusion emitters off as well compiles in 0.7 s, but the step then
takes 3 ms, which a repeat run, whose programs come from the compilation cache, pays 113
times.)  Where this JAX does not know an option, it falls back to a plain ``jax.jit``.
"""

from __future__ import annotations

import functools

import jax

__all__ = ["LIGHT_COMPILE", "LOOP_COMPILE", "light_jit"]

#: XLA options of :func:`light_jit`.
LIGHT_COMPILE = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
}

#: XLA options for a program that loops on the device (the solver's blocks of steps): LLVM
#: level 1 with XLA's older elemental emitters instead of its fusion emitters.  Measured on
#: Chatbot Arena's block of solver steps (compile CPU seconds, milliseconds per step): these
#: options 1.1 s, 0.36 ms; :data:`LIGHT_COMPILE` 1.5 s, 0.9 ms; JAX's defaults 2.3 s, 0.4 ms
#: (the single step with :data:`LIGHT_COMPILE`, which it replaced: 1.1 s, 1.3 ms plus a
#: return to the host per step).
LOOP_COMPILE = {
    "xla_backend_optimization_level": 1,
    "xla_cpu_use_fusion_emitters": False,
}


def light_jit(fun, options=LIGHT_COMPILE, **jit_kwargs):
    """``jax.jit(fun, **jit_kwargs)`` compiled with the XLA ``options`` (default
    :data:`LIGHT_COMPILE`).

    The plain jitted function is the attribute ``plain`` of the result; the light one is
    used unless this JAX rejects an option, after which every call goes to ``plain``.
    """
    light = jax.jit(fun, compiler_options=options, **jit_kwargs)
    plain = jax.jit(fun, **jit_kwargs)
    usable = [True]

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if usable[0]:
            try:
                return light(*args, **kwargs)
            except RuntimeError as error:  # XLA's "No such compile option: ..."
                if "compile option" not in str(error):
                    raise
                usable[0] = False
        return plain(*args, **kwargs)

    call.plain = plain
    return call
