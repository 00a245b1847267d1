"""The sampler's settings (:func:`~hja_bayes.sample_hja`'s arguments), checked before any
work: a bad value is an error naming its argument, not a failure after the sampler has run,
and a setting that cannot act in the mode the call runs in is said, not dropped."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import numpy as np

from ..checks import check_choice, check_flag, check_integer
from ..errors import ParameterError

__all__ = ["SEED_LIMIT", "Settings", "chain_method_for", "check_keep_alpha", "check_quadrature_use",
           "check_settings"]

#: Seeds must be below this: JAX's random keys take a signed 64-bit integer.
SEED_LIMIT = 2 ** 63


class Settings(NamedTuple):
    """Checked values of :func:`~hja_bayes.sample_hja`'s settings."""

    num_warmup: int
    num_samples: int
    num_chains: int
    seed: int
    max_pointwise: int
    count_warmup: bool
    compile_data: bool
    progress_bar: bool
    quadrature: tuple[int, ...]


def check_settings(num_warmup, num_samples, num_chains, seed, *, max_pointwise, count_warmup,
                   compile_data, progress_bar, quadrature, priors) -> Settings:
    """Integers (NumPy's too, as Python ints): warm-up steps, ``max_pointwise`` and the seed
    >= 0 (the seed below :data:`SEED_LIMIT`), draws and chains >= 1; the switches True or
    False; ``quadrature`` a sequence of positive node counts; ``priors`` an ``HJAPriors``.

    Raises
    ------
    ParameterError
        Naming the first argument that is not so.
    """
    from .priors import HJAPriors

    seed = check_integer(seed, "seed")
    if seed >= SEED_LIMIT:
        raise ParameterError(f"seed must be below 2**63, got {seed}")
    if not isinstance(priors, HJAPriors):
        raise ParameterError(f"priors must be an HJAPriors, got {type(priors).__name__}")
    if isinstance(quadrature, (str, bytes)) or not np.iterable(quadrature):
        raise ParameterError(f"quadrature must be a sequence of node counts, e.g. (24, 9, 5, 4), "
                             f"got {quadrature!r}")
    rules = tuple(check_integer(m, "quadrature's node counts", 1) for m in quadrature)
    if 1 in rules:  # one node is the Laplace approximation, which the warnings would not see
        raise ParameterError(f"quadrature's node counts must be at least 2, got {quadrature!r}: "
                             "one node is the Laplace approximation, which prompts beyond the "
                             "sequence get (a shorter sequence, or () for it everywhere)")
    return Settings(check_integer(num_warmup, "num_warmup"),
                    check_integer(num_samples, "num_samples", 1),
                    check_integer(num_chains, "num_chains", 1), seed,
                    check_integer(max_pointwise, "max_pointwise"),
                    check_flag(count_warmup, "count_warmup"),
                    check_flag(compile_data, "compile_data"),
                    check_flag(progress_bar, "progress_bar"), rules)


def check_keep_alpha(keep_alpha, prompt, automatic: bool) -> bool | None:
    """``keep_alpha`` (None, True or False), which acts with integrated prompt effects only:
    an error where the call has no prompt effects or asked for sampled ones (whose draws
    are the answer effects, always kept), a warning where the ``automatic`` choice was
    sampled ones and ``keep_alpha=False`` asked to leave them out."""
    if keep_alpha is None or prompt == "integrated":
        return None if keep_alpha is None else check_flag(keep_alpha, "keep_alpha")
    keep_alpha = check_flag(keep_alpha, "keep_alpha")
    if not prompt:
        raise ParameterError("keep_alpha acts with integrated prompt effects only; this call "
                             "has no prompt effects")
    if not automatic:
        raise ParameterError("keep_alpha acts with integrated prompt effects only: sampled "
                             "answer effects are the draws themselves and are always kept")
    if not keep_alpha:
        warnings.warn("keep_alpha=False has no effect: the automatic choice was sampled prompt "
                      "effects, whose answer effects are the draws themselves and are kept; "
                      "pass prompt_effects='integrated' to integrate them out",
                      UserWarning, stacklevel=3)
    return keep_alpha


def check_quadrature_use(quadrature, prompt, automatic: bool) -> None:
    """``quadrature`` acts with integrated prompt effects only: other than the default, an
    error where the call has no prompt effects or asked for sampled ones, a warning where
    the ``automatic`` choice was sampled ones."""
    from .blocks import QUADRATURE

    if tuple(quadrature) == tuple(QUADRATURE) or prompt == "integrated":
        return
    if not prompt or not automatic:
        raise ParameterError("quadrature acts with integrated prompt effects only; this call "
                             + ("has no prompt effects" if not prompt else
                                "samples the answer effects"))
    warnings.warn("quadrature has no effect: the automatic choice was sampled prompt effects; "
                  "pass prompt_effects='integrated' to integrate them out", UserWarning,
                  stacklevel=3)


def chain_method_for(chain_method, num_chains: int) -> str:
    """The way the chains run: ``chain_method``, or by default "parallel" where JAX has a
    device per chain and "sequential" otherwise.  "parallel" asked for without a device per
    chain runs "sequential" (one compiled program mapping over the chains), with a warning
    saying how to have the devices."""
    devices = jax.local_device_count()
    if chain_method is None:
        return "parallel" if devices >= num_chains > 1 else "sequential"
    chain_method = check_choice(chain_method, "chain_method",
                                ("parallel", "sequential", "vectorized"))
    if chain_method == "parallel" and devices < num_chains:
        warnings.warn(f"chain_method='parallel' needs a device per chain, and JAX sees "
                      f"{devices} for {num_chains} chains: they run one after the other "
                      "(call numpyro.set_host_device_count(n) before JAX starts for n CPU "
                      "devices)", UserWarning, stacklevel=3)
        return "sequential"
    return chain_method
