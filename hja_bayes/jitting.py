"""Compiling small programs fast.

A first fit in a fresh process spends most of its time in XLA compiling its programs, not
running them: on a panel of tens of models a solver step runs in about a millisecond.
:func:`light_jit` compiles with one of two option sets:

* :data:`LIGHT_COMPILE`, for programs that run a few times per fit (the start blocks, the
  objective): LLVM optimisation level 0 without its expensive
  passes, and XLA's elemental emitters instead of its fusion emitters; also for the
  solver's chunk of steps in a process that fits once (the command line,
  ``fit_hja(quick_compile=True)``): 0.5 s of CPU and 1.1 ms a step on Chatbot Arena;
* :data:`LOOP_COMPILE`, for the solver's chunks of steps, a loop on the device that runs
  tens of steps per call: LLVM level 1 with the elemental emitters.  On Chatbot Arena it
  compiles in the time the single step took at level 0 (1.1 s of CPU) and runs a step in
  0.36 ms, against 0.9 ms at level 0 and 1.3 ms for the single level-0 step (plus a return
  to the host after each) it replaced.

Both are for small panels (:data:`hja_bayes.hja.kernels.LIGHT_SIZE`): on a panel of 200,000
cells JAX's defaults run a chunk's step in 175 ms against 374 ms with :data:`LOOP_COMPILE`.

Where this JAX does not know an option, :func:`light_jit` falls back to a plain ``jax.jit``.

``HJA_BAYES_COMPILE=quick`` in the environment when the package is imported
(:func:`quick_everywhere`) compiles with :data:`LIGHT_COMPILE` what would have had
:data:`LOOP_COMPILE`: for processes that fit many different small panels once each (a test
suite, a pipeline's checks), where compiling the solver's loop costs more than its slower
steps (in the test suite's runs about 1.2 s of CPU per panel size against 2 s).
"""

from __future__ import annotations

import functools
import os

import jax

from .programs import ProgramStore, Unkeyable

__all__ = ["LIGHT_COMPILE", "LOOP_COMPILE", "NO_YNNPACK", "compile_lowered", "light_jit",
           "quick_everywhere", "stored_jit"]

#: XLA options of :func:`light_jit`.  XLA's older elemental emitters (fusion emitters off)
#: compile a program in about a third of the time: on Chatbot Arena the start blocks in
#: 0.05 s instead of 0.19-0.31 s (and the canonical decomposition, compiled then, in
#: 0.05-0.11 s instead of 0.26-0.50 s).
LIGHT_COMPILE = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
}

#: XLA options for a program that loops on the device (the solver's chunks of steps): LLVM
#: level 1 with XLA's older elemental emitters instead of its fusion emitters.  Measured on
#: Chatbot Arena's chunk of solver steps (compile CPU seconds, milliseconds per step): these
#: options 1.1 s, 0.36 ms; :data:`LIGHT_COMPILE` 1.5 s, 0.9 ms; JAX's defaults 2.3 s, 0.4 ms
#: (the single step with :data:`LIGHT_COMPILE`, which it replaced: 1.1 s, 1.3 ms plus a
#: return to the host per step).
LOOP_COMPILE = {
    "xla_backend_optimization_level": 1,
    "xla_cpu_use_fusion_emitters": False,
}


#: XLA options without the YNNPACK fusions (jaxlib 0.10's ``kCustom`` fusions, on by default
#: for reductions): in the answer effects' drawing program one of them, the weights'
#: exponentials, took 3.1 of 10.6 ms per draw on Chatbot Arena (one device; 7.7 ms without
#: them), while NUTS's gradient of the integrated potential is faster with them (2.7 against
#: 2.9 ms): an option for the programs measured to gain from it.
NO_YNNPACK = {"xla_cpu_experimental_ynn_fusion_type": ""}


def quick_everywhere() -> bool:
    """Whether ``HJA_BAYES_COMPILE`` is ``quick``: :func:`light_jit` then gives
    :data:`LIGHT_COMPILE` to programs that asked for :data:`LOOP_COMPILE`."""
    return os.environ.get("HJA_BAYES_COMPILE", "").strip().lower() == "quick"


def compile_lowered(lowered, options: dict):
    """``lowered.compile`` (a lowered ``jax.jit`` or ``jax.pmap``) with the XLA ``options``;
    with JAX's defaults where this XLA does not know an option or a value it is given."""
    try:
        return lowered.compile(compiler_options=options)
    except Exception as error:  # XLA's "No such compile option", or an invalid value
        if "option" not in str(error):
            raise
        return lowered.compile()


def light_jit(fun, options=LIGHT_COMPILE, *, name=None, **jit_kwargs):
    """``jax.jit(fun, **jit_kwargs)`` compiled with the XLA ``options`` (default
    :data:`LIGHT_COMPILE`; None: JAX's defaults; :data:`LOOP_COMPILE` becomes
    :data:`LIGHT_COMPILE` under :func:`quick_everywhere`).

    The plain jitted function is the attribute ``plain`` of the result, the options it
    compiles with the attribute ``options``; the light one is
    used unless this JAX rejects an option, after which every call goes to ``plain``.  The
    light programs are kept in a :class:`~hja_bayes.programs.ProgramStore`, so that a fresh
    process reads them back without tracing them; a call the store cannot key goes to
    ``jax.jit`` (as do functions from outside the package).  ``name`` (default: ``fun``'s
    module and qualified name) names the programs on disk; a wrapped function
    (``jax.jacrev(f)`` takes ``f``'s name) needs one.
    """
    if options == LOOP_COMPILE and quick_everywhere():
        options = LIGHT_COMPILE
    plain = jax.jit(fun, **jit_kwargs)
    light = jax.jit(fun, compiler_options=options, **jit_kwargs) if options else plain
    # static positions by name only; the store's key covers the package's own source only
    in_package = (fun.__module__ or "").partition(".")[0] == __name__.partition(".")[0]
    store = (ProgramStore(fun, name, options, **jit_kwargs)
             if in_package and "static_argnums" not in jit_kwargs else None)
    usable = [True]

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if usable[0]:
            try:
                if store is None or jax.config.jax_disable_jit:
                    return light(*args, **kwargs)
                try:
                    return store.call(*args, **kwargs)
                except Unkeyable:
                    return light(*args, **kwargs)
            except RuntimeError as error:  # XLA's "No such compile option: ..."
                if "compile option" not in str(error):
                    raise
                usable[0] = False
        return plain(*args, **kwargs)

    call.plain, call.options = plain, options
    return call


def stored_jit(fun, *, name=None, **jit_kwargs):
    """``jax.jit(fun, **jit_kwargs)`` with JAX's default XLA options, its programs kept
    like :func:`light_jit`'s (for programs a fresh command-line fit runs once)."""
    return light_jit(fun, None, name=name, **jit_kwargs)
