"""Leaving one verdict out with prompt effects: its answer effects' part, integrated.

A verdict informs the effects of the answers it shows, so PSIS over draws of the effects can
strain when it is left out.  Two remedies, one per way the posterior treats the effects.

Sampled effects: integrated importance sampling (:func:`_integrated_points`), for the points
whose plain Pareto k is high: the verdict's two answer effects integrated out of the weights,
draw by draw, against their conditional given everything else.

Integrated effects: a ratio of the prompt's integrals.  With the answer effects integrated
out (:mod:`~hja_bayes.bayes.integrated`) the posterior is over the global parameters ``phi``
alone, and prompt q enters the likelihood as the integral ``Z_q(phi) = p(y_q | phi)``.
Leaving out verdict n of prompt q,

    p(y_n | y_-n, phi) = p(y_q | phi) / p(y_q without n | phi),

both integrals by the rules the sampler's potential uses (adaptive Gauss-Hermite product
rules up to four free dimensions, the Laplace approximation beyond).  PSIS then reweighs the
globals' draws by its inverse: no answer effect is drawn, and the effects' part of leaving a
verdict out is exact up to the rules' error, however strongly the verdict pins its answers'
effects.  A verdict alone on its prompt leaves the integral 1: its density is ``Z_q``.

Each integral is laid out once however often it occurs: prompts (whole, or less one
verdict) whose units are alike (:func:`~hja_bayes.bayes.blocks.unit_keys`) share one.
"""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from ..likelihood import OutcomeModel, information, linear_predictor, log_likelihood, score
from .blocks import QUADRATURE, prompt_blocks, unit_keys
from .convert import import_arviz, posterior_draws
from .integrated import SAMPLING_TOLERANCE, _block_pieces, _integrals_from, _mode
from .lanes import DrawProgram
from .predictive import posterior_aux, posterior_logits

__all__ = ["LeftOutLayout", "left_out_layout", "left_out_log_densities"]

#: Draws x values computed at once (here and in :func:`~hja_bayes.bayes.psis_loo`).
_BLOCK = 4_000_000


class LeftOutLayout(NamedTuple):
    """The integrals leave-one-out needs, laid out over units of their own.

    Attributes
    ----------
    blocks : tuple of Block
        The distinct integrals' prompts over the layout's units.
    source : int array (layout units,)
        The data's unit behind each of the layout's units.
    counts : float array (layout units, C)
        Their verdicts (the data's, less the one left out).
    item : int array (layout answers,)
        The model of each of the layout's answers (its tau).
    whole, without : int arrays (points,)
        For each point (unit, category), the integral of its prompt with every verdict and
        the one without the point's verdict (-1: no verdict left, the integral is 1).
    n_integrals : int
    """

    blocks: tuple
    source: np.ndarray
    counts: np.ndarray
    item: np.ndarray
    whole: np.ndarray
    without: np.ndarray
    n_integrals: int


def left_out_layout(cells, prompt, question, item, unit, category, *,
                    quadrature=QUADRATURE) -> LeftOutLayout:
    """The layout of :class:`LeftOutLayout` (NumPy).

    Parameters
    ----------
    cells : Cells
        The likelihood's units (with prompt effects: the data's (question, cell) entries).
    prompt : (first, second)
        Answer index of each unit's first- and second-shown answer.
    question, item : int arrays (answers,)
        The prompt and the model of every answer.
    unit, category : int arrays (points,)
        The points: a verdict of ``category`` in ``unit`` (it must hold one).
    quadrature : sequence of int
        The rules, as the sampler's (:func:`~hja_bayes.bayes.blocks.prompt_blocks`).
    """
    first, second = (np.asarray(a, dtype=np.int64) for a in prompt)
    counts = np.asarray(cells.counts, dtype=float)
    unit, category = np.asarray(unit, dtype=np.int64), np.asarray(category, dtype=np.int64)
    if np.any(counts[unit, category] < 1):
        from ..errors import ParameterError

        raise ParameterError("a point's unit holds no verdict of its category")
    q_unit = np.asarray(question)[first]
    order = np.argsort(q_unit, kind="stable")
    bounds = np.searchsorted(q_unit[order], np.arange(int(q_unit.max(initial=-1)) + 2))
    # everything a unit's integral depends on but its counts, as one code per distinct row
    keys = unit_keys(cells)
    n_c = counts.shape[1]
    rest = np.delete(keys, np.s_[3:3 + n_c], axis=1)  # judge, models | counts | design rows

    # one candidate integral per prompt (every verdict) and per point (less its verdict)
    prompts = np.unique(q_unit)
    members = [order[bounds[q]:bounds[q + 1]] for q in prompts]
    point_prompt = np.searchsorted(prompts, q_unit[unit])  # each point's prompt in members
    sources, tallies, owners = [], [], []
    for i, m in enumerate(members):
        sources.append(m)
        tallies.append(counts[m])
        owners.append(np.full(len(m), i))
    for p, (u, o) in enumerate(zip(unit, category)):
        m = members[point_prompt[p]]
        c = counts[m].copy()
        c[np.flatnonzero(m == u)[0], o] -= 1.0
        sources.append(m)
        tallies.append(c)
        owners.append(np.full(len(m), len(members) + p))
    source, tally, owner = (np.concatenate(x) for x in (sources, tallies, owners))
    keep = tally.sum(axis=1) > 0  # a unit without verdicts integrates to 1: left out
    source, tally, owner = source[keep], tally[keep], owner[keep]
    n_candidates = len(members) + len(unit)

    # candidates whose units are alike (as multisets) share one integral
    code = np.unique(np.column_stack([rest[source], tally]), axis=0, return_inverse=True)[1]
    code = code.ravel()
    by_owner = np.lexsort((code, owner))
    owner_bounds = np.searchsorted(owner[by_owner], np.arange(n_candidates + 1))
    integral = np.full(n_candidates, -1, dtype=np.int64)
    first_of: dict = {}
    for j in range(n_candidates):
        lo, hi = owner_bounds[j], owner_bounds[j + 1]
        if hi > lo:
            integral[j] = first_of.setdefault(code[by_owner[lo:hi]].tobytes(), len(first_of))
    # the layout: each distinct integral's units, once (from its first candidate)
    rep = np.full(len(first_of), -1, dtype=np.int64)
    for j in range(n_candidates - 1, -1, -1):
        if integral[j] >= 0:
            rep[integral[j]] = j
    laid = np.isin(owner, rep)
    source, tally, owner = source[laid], tally[laid], owner[laid]
    prompt_of = integral[owner]
    # the layout's answers: one per (integral, answer shown)
    n_answers = len(np.asarray(question))
    shown, renumbered = np.unique(np.concatenate([prompt_of * n_answers + first[source],
                                                  prompt_of * n_answers + second[source]]),
                                  return_inverse=True)
    m = len(source)
    blocks = prompt_blocks(renumbered[:m], renumbered[m:], shown // n_answers,
                           n_questions=len(first_of), quadrature=quadrature)
    return LeftOutLayout(blocks, source, tally, np.asarray(item)[shown % n_answers],
                         integral[point_prompt], integral[len(members) + np.arange(len(unit))],
                         len(first_of))


def _integrals(layout: LeftOutLayout, cells, outcome: OutcomeModel):
    """A program for a run of draws of the globals: every distinct integral of the layout
    per draw (draws, n_integrals), each draw's Newton iterations started at the draw
    before's modes (neighbouring draws of a chain are close)."""
    blocks = layout.blocks
    rows = layout.source
    units = cells._replace(judge=cells.judge[rows], first=cells.first[rows],
                           second=cells.second[rows], counts=layout.counts,
                           X=cells.X[rows], Xg=cells.Xg[rows])
    units = type(cells)(*(jnp.asarray(a) for a in units))
    item = jnp.asarray(layout.item)

    def one(starts, draw):
        S, Z, theta, gamma, aux, tau = draw
        eta = linear_predictor(S, Z, units, theta)
        gam = gamma[units.judge]
        aux = None if aux is None else aux[units.judge]
        tau = tau[item]
        out = jnp.zeros(layout.n_integrals, eta.dtype)
        modes = []
        for block, start in zip(blocks, starts):
            base, g, a, c, Q, log_det = _block_pieces(block, eta, gam, aux, units.counts,
                                                      tau, outcome)
            pieces = (base, g, a, c, block, Q, outcome)
            mode = _mode(*pieces, start, tolerance=SAMPLING_TOLERANCE, single=True)
            out = out.at[block.index].set(_integrals_from(mode, pieces, log_det, True))
            modes.append(mode)
        return tuple(modes), out

    def run(*draws):
        zeros = tuple(jnp.zeros((len(b.index), b.contrast.shape[1]), draws[0].dtype)
                      for b in blocks)
        return jax.lax.scan(one, zeros, draws)[1]

    return run


def left_out_log_densities(layout: LeftOutLayout, S, Z, theta, gamma, aux, tau, cells,
                           outcome: OutcomeModel, chunk: int = 256) -> np.ndarray:
    """``log p(y_n | y_-n, phi)`` of every point of the layout, for every draw of the
    globals (points, draws).

    ``S`` (d, K, N), ``Z`` (d, K, q), ``theta`` (d, g) or None, ``gamma`` (d, K), ``aux``
    (d, K, n_aux) unconstrained or None, ``tau`` (d, N); ``cells`` the likelihood's units
    (NumPy).  Draws run ``chunk`` at a time, one after another on each device JAX sees
    (several devices take a run of draws each).
    """
    d = np.shape(S)[0]
    theta = np.zeros((d, 0)) if theta is None else theta
    draws = [None if a is None else np.asarray(a, dtype=float)
             for a in (S, Z, theta, gamma, aux, tau)]
    program = DrawProgram(_integrals(layout, cells, outcome), chunk)
    # one row per integral and a last row of zeros, which ``without == -1`` reads
    values = np.zeros((layout.n_integrals + 1, d))
    for start in range(0, d, chunk):
        stop = min(start + chunk, d)
        take = np.arange(start, start + chunk).clip(max=stop - 1)
        out = program(*(None if a is None else a[take] for a in draws))
        values[:-1, start:stop] = out[: stop - start].T
    return values[layout.whole] - values[layout.without]


@functools.partial(jax.jit, static_argnames=("outcome", "newton_steps"))
def _left_out_log_density(base, g, aux, prec_a, prec_b, xa, xb, ca, cb, kept, here, one,
                          z1, z2, log_weight, *, outcome, newton_steps: int):
    """``log p(y_n | phi, y_-n)`` per draw (D,) for one left-out verdict, its two answer
    effects integrated over their conditional given the other verdicts: Newton steps from
    the draws' own effects ``xa``, ``xb`` to the conditional's mode, then the adaptive
    Gauss-Hermite rule ``z1``, ``z2``, ``log_weight`` placed by its Laplace approximation,
    each node weighted by the exact conditional density over the Gaussian's.

    ``base`` (D, E): each neighbouring unit's logit without the two effects; ``g`` (D, E)
    its judge's gamma; ``ca``, ``cb`` (E,) its signs on the two effects; ``kept`` (E, C)
    its verdicts less the one left out (units of no verdicts add nothing); ``here`` that
    unit's position; ``one`` (C,) the left-out verdict.
    """
    n_kept = kept.sum(axis=1)

    def log_density(xa, xb):  # the conditional's, up to a constant, per draw (D,)
        eta = base + g * (ca * xa[:, None] + cb * xb[:, None])
        return (log_likelihood(outcome, eta, aux, kept).sum(1)
                - 0.5 * (prec_a * xa**2 + prec_b * xb**2))

    def curvature(xa, xb):
        eta = base + g * (ca * xa[:, None] + cb * xb[:, None])
        grad = score(outcome, eta, aux, kept)[..., 0] * g
        info = information(outcome, eta, aux, n_kept)[..., 0, 0] * g**2
        ga = (grad * ca).sum(1) - prec_a * xa
        gb = (grad * cb).sum(1) - prec_b * xb
        haa = (info * ca**2).sum(1) + prec_a
        hbb = (info * cb**2).sum(1) + prec_b
        hab = (info * ca * cb).sum(1)
        return ga, gb, haa, hbb, hab, haa * hbb - hab**2

    def step(_, state):
        # a Newton (Fisher scoring) step, halved up to five times where the full one would
        # lower the log density: full steps can overshoot far from the mode (a verdict the
        # draw's effects make near-certain), and a rule placed there integrates nothing.
        # The halvings are computed only when some draw of the chunk needs them.
        xa, xb, now = state
        ga, gb, haa, hbb, hab, det = curvature(xa, xb)
        da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
        full = log_density(xa + da, xb + db)

        def halved(_):
            scale = 0.5 ** jnp.arange(1.0, 6.0)
            values = jax.vmap(log_density, in_axes=1, out_axes=1)(
                xa[:, None] + scale * da[:, None], xb[:, None] + scale * db[:, None])
            better = values >= now[:, None]
            found = better.any(1)
            pick = jnp.argmax(better, axis=1)
            return (jnp.where(found, scale[pick], 0.0),
                    jnp.where(found, jnp.take_along_axis(values, pick[:, None], 1)[:, 0], now))

        ok = full >= now
        scale, value = jax.lax.cond(jnp.all(ok), lambda _: (jnp.ones_like(now), full),
                                    halved, None)
        scale, value = jnp.where(ok, 1.0, scale), jnp.where(ok, full, value)
        return xa + scale * da, xb + scale * db, value

    start = log_density(xa, xb)
    xa, xb, _ = jax.lax.fori_loop(0, newton_steps, step, (xa, xb, start))
    _, _, haa, hbb, hab, det = curvature(xa, xb)
    # Laplace covariance H^-1 at the mode and its Cholesky factor
    vaa, vbb, vab = hbb / det, haa / det, -hab / det
    l11 = jnp.sqrt(vaa)
    l21 = vab / l11
    l22 = jnp.sqrt(jnp.maximum(vbb - l21**2, 0.0))
    qa = xa[:, None] + l11[:, None] * z1
    qb = xb[:, None] + l21[:, None] * z1 + l22[:, None] * z2
    eta = base[:, :, None] + g[:, :, None] * (ca[:, None] * qa[:, None, :]
                                              + cb[:, None] * qb[:, None, :])
    aux_m = None if aux is None else jnp.broadcast_to(aux[:, :, None, :],
                                                      eta.shape + aux.shape[-1:])
    log_w = (log_weight + log_likelihood(outcome, eta, aux_m, kept[:, None, :]).sum(1)
             - 0.5 * (qa**2 * prec_a[:, None] + qb**2 * prec_b[:, None]))
    log_p = log_likelihood(outcome, eta[:, here], None if aux_m is None else aux_m[:, here],
                           one)
    return (jax.nn.logsumexp(log_w + log_p, axis=1) - jax.nn.logsumexp(log_w, axis=1))


def _integrated_points(idata, units, outcome, entry, which, reff, nodes: int = 8,
                       newton_steps: int = 8, alpha=None):
    """PSIS with the left-out comparison's two answer effects integrated out.

    With prompt effects a single verdict informs the answer effects ``alpha_a``,
    ``alpha_b`` of the two answers it shows (about 40 verdicts each on MT-Bench), so plain
    PSIS over the joint draws can have a heavy-tailed weight (Pareto k above 0.7).
    Integrated importance sampling (Vehtari et al. 2016, for latent Gaussian models) moves
    those two effects out of the importance weights: with ``phi`` every other parameter,
    the weights are ``1 / p(y_n | phi, y_-n)`` and the LOO density is their PSIS mean of
    ``p(y_n | phi, y_-n) = integral p(y_n | phi, alpha_ab) p(alpha_ab | phi, y_-n)``.  Per
    draw, the integral over ``p(alpha_ab | phi, y_-n)`` (the N(0, tau^2) priors times the
    likelihood of every other verdict on either answer) is taken by adaptive Gauss-Hermite
    quadrature: a ``nodes x nodes`` rule placed by the conditional's Laplace approximation
    (Newton steps with the outcome model's information weight, from the draw's own alpha,
    halved where a full step would lower the conditional density), each node weighted by
    the exact conditional density over the Gaussian's, so a skewed conditional (few
    verdicts per answer) is integrated correctly.  Works for every outcome model on the
    likelihood seam (checked for "half" and Davidson ties).  Each point is one compiled
    program (:func:`_left_out_log_density`) over chunks of draws.

    Parameters
    ----------
    entry, which : int arrays (points,)
        Unit and category (0 first wins, 1 tie, 2 second wins for three outcomes) of each
        point.
    alpha : array (draws, answers), optional
        The draws' answer effects (default: :func:`~hja_bayes.bayes.recover.posterior_effects`).

    Returns
    -------
    k, elpd_i : ndarrays (points,)
    """
    az = import_arviz()

    first, second = (np.asarray(a) for a in units.prompt)
    c = units.cells
    counts = np.asarray(c.counts, dtype=float)
    one_verdict = np.eye(counts.shape[1])
    gamma = posterior_draws(idata, "gamma")
    if alpha is None:
        from .recover import posterior_effects

        alpha = posterior_effects(idata)
    tau = posterior_draws(idata, "tau")
    n_answers = alpha.shape[1]
    item = np.zeros(n_answers, dtype=int)
    item[first], item[second] = c.first, c.second
    x, w = np.polynomial.hermite.hermgauss(int(nodes))
    z1, z2 = np.meshgrid(np.sqrt(2.0) * x, np.sqrt(2.0) * x, indexing="ij")
    z1, z2 = z1.ravel(), z2.ravel()
    log_weight = np.log(np.outer(w, w).ravel()) + 0.5 * (z1**2 + z2**2)
    rule = tuple(jnp.asarray(v) for v in (z1, z2, log_weight))
    draws = gamma.shape[0]
    ks, elpds = [], []
    for e, o in zip(np.asarray(entry), np.asarray(which)):
        a, b = first[e], second[e]
        near = np.flatnonzero(np.isin(first, (a, b)) | np.isin(second, (a, b)))
        # padded to a power of two with units that hold no verdicts (they add nothing): a
        # few shapes, so a few compilations, not one per neighbourhood size
        size = 1 << max(4, int(len(near) - 1).bit_length())
        padded = np.resize(near, size)
        real = np.arange(size) < len(near)
        ca = np.where(real, (first[padded] == a).astype(float) - (second[padded] == a), 0.0)
        cb = np.where(real, (first[padded] == b).astype(float) - (second[padded] == b), 0.0)
        kept = np.where(real[:, None], counts[padded], 0.0)
        here = int(np.flatnonzero(near == e)[0])
        kept[here, o] -= 1.0  # leave the one verdict out
        aux = posterior_aux(idata, units, padded)
        g = gamma[:, c.judge[padded]]
        base = posterior_logits(idata, units, padded, alpha) - g * (
            ca * alpha[:, [a]] + cb * alpha[:, [b]])
        per_draw = (base, g, aux, 1.0 / tau[:, item[a]] ** 2, 1.0 / tau[:, item[b]] ** 2,
                    alpha[:, a], alpha[:, b])
        # draws in equal chunks (the last padded by repeating a draw): one shape per size
        chunk = min(draws, max(1, _BLOCK // (size * len(z1))))
        log_int = np.empty(draws)
        for lo in range(0, draws, chunk):
            take = np.minimum(np.arange(lo, lo + chunk), draws - 1)
            part = tuple(None if v is None else jnp.asarray(v[take]) for v in per_draw)
            value = _left_out_log_density(*part, jnp.asarray(ca), jnp.asarray(cb),
                                          jnp.asarray(kept), here, jnp.asarray(one_verdict[o]),
                                          *rule, outcome=outcome, newton_steps=newton_steps)
            log_int[lo:lo + chunk] = np.asarray(value)[: min(chunk, draws - lo)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lw, k = az.psislw(-log_int[None], reff)
        ks.append(float(np.asarray(k).ravel()[0]))
        elpds.append(float(logsumexp(lw[0] + log_int)))
    return np.asarray(ks), np.asarray(elpds)
