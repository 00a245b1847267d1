"""Sequential chains as one compiled program.

On one device NumPyro runs chains one after the other in a Python loop: it compiles the
sampler again for every chain (its collection loop is keyed on a closure made per chain) and
starts each chain by evaluating the model and its gradient outside any compiled program.
:func:`one_program`, given to NumPyro as a callable chain method, maps one chain over the
chains' starts inside a single compiled program instead; NumPyro then shows no bar per
iteration, so :func:`chains_bar` counts the chains as they end.
"""

from __future__ import annotations

import jax

__all__ = ["chains_bar", "one_program"]


def one_program(chain, done=None):
    """NumPyro's chain method for sequential chains: ``chain`` (one chain's run, from its
    start) mapped over the starts in one compiled program, ``done()`` called as each chain
    ends (what it saves: :mod:`hja_bayes.bayes.run`)."""
    def one(start):
        out = chain(start)
        if done is not None:  # the chain's draws are its argument: called once they exist
            jax.debug.callback(lambda _: done(), jax.tree.leaves(out)[0])
        return out

    return jax.jit(lambda starts: jax.lax.map(one, starts))


def chains_bar(num_chains: int, show: bool):
    """A progress bar over ``num_chains`` chain runs (None when not shown): what sequential
    chains run as one program can report."""
    if not show:
        return None
    from tqdm.auto import tqdm

    bar = tqdm(total=num_chains, desc="NUTS chains", unit="chain")

    def done():
        bar.update(1)
        if bar.n == num_chains:
            bar.close()

    return done
