"""The answer effects of integrated prompt effects, drawn back draw by draw.

NUTS with integrated prompt effects (:mod:`~hja_bayes.bayes.integrated`) samples the global
parameters only.  Wherever the answer effects are needed (the posterior's ``alpha``, the
replicated data, the log-likelihood of single verdicts, PSIS-LOO), every draw of the globals
gets one draw of the effects from their conditional posterior given it
(:func:`~hja_bayes.bayes.integrated.conditional_effects`): together they are draws from the
joint posterior.  The random numbers are keyed by (seed, draw, prompt), so the effects drawn
when the posterior is assembled and those drawn again later from the ``InferenceData``
(:func:`posterior_effects`, when they were not stored) are the same numbers.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..likelihood import OutcomeModel
from .integrated import conditional_effects, prompt_blocks
from .predictive import draw_logits, unit_aux

__all__ = ["EffectDrawer", "posterior_effects"]

#: Offset mixed into the seed of the effects' random numbers.
_STREAM = 0xA1FA


class EffectDrawer:
    """Draws the answer effects of a posterior's draws (one compiled program per drawer).

    Parameters
    ----------
    cells : Cells
        The likelihood's units (the data's (question, cell) entries, NumPy).
    prompt : (first, second)
        Answer index of each unit's first- and second-shown answer.
    question : int array (answers,)
        The prompt of every answer.
    item : int array (answers,)
        The model of every answer.
    outcome : OutcomeModel
    seed : int
        The posterior's seed.
    chunk : int
        Draws per call (a shorter call is padded to it: one compilation).
    """

    def __init__(self, cells, prompt, question, item, outcome: OutcomeModel, seed: int,
                 chunk: int = 256):
        self.cells = cells
        self.item = np.asarray(item)
        self.judge = np.asarray(cells.judge)
        self.chunk = int(chunk)
        blocks = prompt_blocks(prompt[0], prompt[1], question)
        counts = jnp.asarray(np.asarray(cells.counts, dtype=float))
        n_answers = len(self.item)
        root = jax.random.fold_in(jax.random.PRNGKey(int(seed)), _STREAM)

        def one(starts, args):
            index, eta, gam, aux, tau = args
            key = jax.random.fold_in(root, index)
            alpha, modes = conditional_effects(key, blocks, eta, gam, aux, counts, tau,
                                               outcome, n_answers, starts=starts)
            return modes, alpha

        def draw(*args):
            # the first draw's Newton iterations start at 0, every later one's at the modes
            # of the draw before it (neighbouring draws of a chain are close)
            zeros = tuple(jnp.zeros((len(b.index), b.contrast.shape[1]), args[1].dtype)
                          for b in blocks)
            return jax.lax.scan(one, zeros, args)[1]

        # one draw after another: a vectorised map over draws batches the Newton loops, a
        # shape XLA's CPU runtime was seen never to return from (laplace_at)
        self._draw = jax.jit(draw)

    def __call__(self, index, S, Z, theta, gamma, aux, tau) -> np.ndarray:
        """Effects (draws, answers) of the draws ``index`` (their global positions).

        ``S`` (d, K, N), ``Z`` (d, K, q), ``theta`` (d, g) or None, ``gamma`` (d, K),
        ``aux`` (d, K, n_aux) unconstrained or None, ``tau`` (d, N).
        """
        index = np.asarray(index)
        d = len(index)
        out = np.empty((d, len(self.item)))
        for start in range(0, d, self.chunk):
            stop = min(start + self.chunk, d)
            take = np.arange(start, start + self.chunk).clip(max=stop - 1)
            eta = draw_logits(np.asarray(S)[take], np.asarray(Z)[take], self.cells,
                              None if theta is None else np.asarray(theta)[take])
            gam = np.asarray(gamma, dtype=float)[take][:, self.judge]
            aux_u = unit_aux(None if aux is None else np.asarray(aux)[take], self.judge)
            tau_a = np.asarray(tau, dtype=float)[take][:, self.item]
            values = self._draw(jnp.asarray(index[take]), jnp.asarray(eta), jnp.asarray(gam),
                                None if aux_u is None else jnp.asarray(aux_u),
                                jnp.asarray(tau_a))
            out[start:stop] = np.asarray(values)[: stop - start]
        return out


def answer_items(prompt, cells, n_answers: int) -> np.ndarray:
    """The model of every answer, from the units that show it."""
    item = np.zeros(n_answers, dtype=int)
    item[np.asarray(prompt[0])] = np.asarray(cells.first)
    item[np.asarray(prompt[1])] = np.asarray(cells.second)
    return item


def posterior_effects(idata) -> np.ndarray:
    """The answer effects of every draw of a posterior (draws, answers).

    ``alpha`` when the posterior stores it; else, for integrated prompt effects, drawn again
    from their conditional posteriors with the posterior's seed, the same numbers as when
    it was assembled.
    """
    from .convert import posterior_draws, posterior_outcome, posterior_units
    from .outcomes import log_scale_aux
    from .predictive import posterior_coefficients

    if "alpha" in idata.posterior:
        return posterior_draws(idata, "alpha")
    units = posterior_units(idata)
    c = idata.constant_data
    if units.prompt is None or "entry_cluster" not in c:
        from ..errors import ParameterError

        raise ParameterError("the posterior has no prompt effects")
    first, second = units.prompt
    n_answers = int(max(first.max(), second.max())) + 1  # every answer is shown
    question = np.zeros(n_answers, dtype=int)
    cluster = np.asarray(c["entry_cluster"])
    question[first], question[second] = cluster, cluster
    outcome = posterior_outcome(idata)
    item = answer_items(units.prompt, units.cells, n_answers)
    drawer = EffectDrawer(units.cells, units.prompt, question, item, outcome,
                          int(idata.posterior.attrs["seed"]))
    S = posterior_draws(idata, "S")
    Z, theta = posterior_coefficients(idata)
    aux = None
    if outcome.n_aux:
        aux = log_scale_aux(outcome, np.stack([posterior_draws(idata, name)
                                               for name in outcome.aux_names], axis=-1))
    return drawer(np.arange(S.shape[0]), S, Z, theta, posterior_draws(idata, "gamma"), aux,
                  posterior_draws(idata, "tau"))
