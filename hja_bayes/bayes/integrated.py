"""Prompt effects integrated out of the posterior: one small integral per prompt.

With prompt effects (:mod:`~hja_bayes.bayes.prompts`) a unit u on prompt q shows the answers
``a = first[u]`` and ``b = second[u]`` and has the logit ``base_u + gamma_k (alpha_a -
alpha_b)``, with ``alpha_a ~ N(0, tau_i^2)`` independently for every answer a = (q, i).  Given
the global parameters (scores, terms, the outcome model's parameters, tau), the answer
effects of one prompt touch only that prompt's units, so the likelihood of the data with the
answer effects integrated out is a product of one integral per prompt,

    p(y_q | globals) = integral prod_{u in q} p(y_u | base_u + gamma_k c_u . delta) N(delta; 0, Sigma_q) d delta,

and NUTS runs over the global parameters alone.

Coordinates.  The logits see only differences of a prompt's effects: with its n answers
ordered and the last one as the reference, ``delta_j = alpha_j - alpha_ref`` (j < n) are the
d = n - 1 coordinates, ``c_u`` is +1 at the first-shown answer and -1 at the second-shown one
(0 at the reference), and ``Sigma = diag(tau_j^2) + tau_ref^2 11^T``.  The reference's own
effect is integrated exactly (it is Gaussian given delta).  A prompt always has at least two
answers; one whose verdicts all compare the same two models is one-dimensional, whatever the
number of verdicts.

The integral.  Newton's method finds the mode ``delta*`` of each prompt's integrand (the
log-likelihood is concave in eta for every outcome model on the seam, so with the Gaussian
prior the integrand is log-concave with one mode), vectorised over the prompts; ``H`` is
minus the Hessian of the log integrand there (observed information plus ``Sigma^-1``).
Then, with ``H = R R^T``,

    log p(y_q | globals) ~ log sum_m w_m exp(l(delta_m) - delta_m^T Sigma^-1 delta_m / 2 + |z_m|^2 / 2)
                           - log det Sigma / 2 - log det R,        delta_m = delta* + R^-T z_m,

over a product Gauss-Hermite rule (z_m, w_m) for the standard normal: adaptive
Gauss-Hermite quadrature (Liu and Pierce 1994), as in :mod:`~hja_bayes.bayes.loo`.  Prompts
of one to four free dimensions (two to five answers) get 21, 9^2, 5^3 and 4^4 nodes by
default (``quadrature``), larger ones a single node (z = 0, w = 1): the Laplace approximation,
whose error shrinks with the verdicts per answer but biases tau where they are few (1,000
five-answer prompts of five verdicts: tau per model 1.55-2.25, with the rules 0.94-1.38).

Where the iterations start.  At 0, or at ``Integrated.starts``: the sampler passes every
prompt's mode at the posterior mode of the globals (:func:`prompt_modes`).  The mode is
unique, so the start changes the number of iterations, not the integral.

Gradients.  The iterations run without derivatives; one Newton step after them, with them,
gives the mode's implicit derivative (``H^-1 d grad/d theta``), exact up to the mode's error
(1e-12 at :data:`TOLERANCE`, 1e-6 at :data:`SAMPLING_TOLERANCE`; integrals: its square).

Layout.  Prompts are grouped into blocks by dimension (each one up to the rules given, then
powers of two padded with coordinates no unit sees); NumPy (:func:`prompt_blocks`).  Prompts
whose units are alike (same judges, models, verdicts and design rows: most one-verdict
prompts of a large panel have a twin) have the same integral, computed once and counted as
often as it occurs.  The answer effects are drawn back, draw by draw, in
:mod:`~hja_bayes.bayes.recover`, every prompt on its own.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..likelihood import OutcomeModel, log_likelihood
from .tiny import UNROLL_LIMIT, cho_solve, cholesky, solve_lower

__all__ = ["Block", "Integrated", "QUADRATURE", "SAMPLING_TOLERANCE", "TOLERANCE",
           "log_integrals", "prompt_blocks", "prompt_log_likelihood", "prompt_modes"]

#: Default Gauss-Hermite nodes per dimension of the product rule, for blocks of one to four
#: dimensions (larger blocks: the Laplace approximation).
QUADRATURE = (21, 9, 5, 4)
NEWTON_STEPS = 30  #: Newton iterations at most (they stop earlier: :func:`_mode`).
#: The iterations stop once a full Newton step moves no coordinate by more than this.
TOLERANCE = 1e-6
#: The tolerance of NUTS's potential (:attr:`Integrated.tolerance`): modes off by ~1e-6,
#: integrals by 1e-12, gradients by 1e-6, for 4.0 instead of 5.0 iterations per block; NUTS
#: stays exact for it (a leapfrog step with a force of the position is reversible and keeps volume).
SAMPLING_TOLERANCE = 1e-3
#: A Newton step is refused when it lowers the log integrand by more than this times
#: ``1 + |value|`` (roundoff is allowed for).
TOLERANCE_VALUE = 1e-10


class Block(NamedTuple):
    """Prompts of one dimension D, laid out with fixed shapes (NumPy or JAX arrays).

    Attributes
    ----------
    unit : int (E,)
        The units (entries) of these prompts, in the order of ``prompt``.
    prompt : int (E,)
        Each unit's prompt within the block (0..P-1, sorted).
    contrast : float (E, D)
        ``c_u``: +1 at the first-shown answer's coordinate, -1 at the second-shown one's.
    answers : int (P, D + 1)
        Answer index of each coordinate, the reference last (a padding coordinate repeats
        the reference).
    real : float (P, D)
        1 for a coordinate that is an answer, 0 for padding.
    index : int (P,)
        The prompts' own indices (keys of their random numbers).
    z : float (M, D)
        Quadrature nodes of the standard normal (one node at 0: the Laplace approximation).
    log_weight : float (M,)
        ``log w_m + |z_m|^2 / 2``.
    copies : float (P,)
        How many prompts each one stands for: 1, or with ``unit_keys`` the number of prompts
        whose integrals are the same function of the globals (:func:`prompt_blocks`).
    """

    unit: np.ndarray
    prompt: np.ndarray
    contrast: np.ndarray
    answers: np.ndarray
    real: np.ndarray
    index: np.ndarray
    z: np.ndarray
    log_weight: np.ndarray
    copies: np.ndarray


class Integrated(NamedTuple):
    """How the model integrates the answer effects out (a static model argument).

    Attributes
    ----------
    blocks : tuple of Block
        The prompts' layout over the model's units (:func:`prompt_blocks`).
    second_order : bool
        Exact second derivatives of the potential (for the Laplace approximation of the
        starting point); NUTS needs only the gradient.
    starts : tuple of arrays, optional
        Where each block's Newton iterations start, (P, D) per block (default: at 0);
        e.g. :func:`prompt_modes` at a central value of the globals.
    record_modes : bool
        The model records each block's mode as the deterministic site ``prompt_mode_<b>``
        (b: the block's position), to be used as ``starts``; for one evaluation, not for
        sampling.
    tolerance : float
        Where the Newton iterations stop (:data:`TOLERANCE`, :data:`SAMPLING_TOLERANCE`).
    """

    blocks: tuple
    second_order: bool = False
    starts: tuple | None = None
    record_modes: bool = False
    tolerance: float = TOLERANCE


def _rule(dim: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Product Gauss-Hermite rule for N(0, I_dim): nodes (M, dim) and ``log w + |z|^2/2``."""
    if nodes <= 1:
        return np.zeros((1, dim)), np.zeros(1)
    x, w = np.polynomial.hermite.hermgauss(int(nodes))
    z1, w1 = np.sqrt(2.0) * x, w / np.sqrt(np.pi)
    z = np.stack([g.ravel() for g in np.meshgrid(*([z1] * dim), indexing="ij")], axis=-1)
    log_w = sum(np.log(g.ravel()) for g in np.meshgrid(*([w1] * dim), indexing="ij"))
    return z, log_w + 0.5 * np.sum(z**2, axis=1)


def _block_dim(d: int, max_dim: int) -> int:
    """A d-dimensional prompt's block: d up to max(2, max_dim), else the next power of 2."""
    if d <= max(2, max_dim):
        return d
    return 1 << (d - 1).bit_length()


def _copies(q_unit, unit_keys, n_q: int) -> np.ndarray:
    """How many prompts each prompt stands for (n_q,): the first of the prompts whose units'
    keys form the same multiset stands for all of them, the others for none."""
    keys = np.asarray(unit_keys, dtype=float).reshape(len(q_unit), -1)
    code = np.unique(keys, axis=0, return_inverse=True)[1].ravel()
    order = np.lexsort((code, q_unit))
    code = code[order]
    bounds = np.searchsorted(q_unit[order], np.arange(n_q + 1))
    first_of, copies = {}, np.zeros(n_q, dtype=np.int64)
    for q in range(n_q):
        copies[first_of.setdefault(code[bounds[q]:bounds[q + 1]].tobytes(), q)] += 1
    return copies


def prompt_blocks(first, second, question, n_questions: int | None = None, *,
                  quadrature=QUADRATURE, unit_keys=None) -> tuple[Block, ...]:
    """The block layout of the prompts (NumPy).

    Parameters
    ----------
    first, second : int arrays (units,)
        Answer index of each unit's first- and second-shown answer
        (:func:`~hja_bayes.bayes.prompts.entry_answers`).
    question : int array (answers,)
        The prompt of every answer.
    n_questions : int, optional
        Number of prompts (default: ``question.max() + 1``); a prompt without units is
        left out (it integrates to 1).
    quadrature : sequence of int
        Gauss-Hermite nodes per dimension of the product rule for blocks of 1, 2, ...
        dimensions (``quadrature[D - 1]`` for D dimensions); larger blocks, and blocks given
        1 node, use the Laplace approximation (``()``: the Laplace approximation everywhere).
    unit_keys : array (units, k), optional
        Everything a unit's likelihood depends on besides the globals and its answers'
        effects, e.g. its judge, models, counts and design row.  Prompts whose units have the
        same keys (as multisets) have the same integral; each such group is laid out once,
        with ``copies`` counting it (on Chatbot Arena 8,691 prompts, most with one verdict,
        become about 3,900).  The keys must cover everything the units' inputs depend on, or
        prompts with different integrals are merged; the layout then holds for the counts in
        the keys only.

    Returns
    -------
    tuple of Block
        Sorted by dimension.
    """
    quadrature = tuple(int(m) for m in quadrature)
    max_dim = len(quadrature)
    first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    question = np.asarray(question, dtype=np.int64)
    n_q = int(question.max()) + 1 if n_questions is None else int(n_questions)
    q_unit = question[first]
    if np.any(question[second] != q_unit):
        from ..errors import ParameterError

        raise ParameterError("a unit shows answers to two different prompts")
    copies = np.ones(n_q, dtype=np.int64)
    kept = slice(None)
    if unit_keys is not None:
        copies = _copies(q_unit, unit_keys, n_q)
        kept = copies[q_unit] > 0  # prompts others stand for show no answers: no block
    # the answers shown in each prompt, in answer order (the last is the reference)
    shown = np.unique(np.concatenate([first[kept], second[kept]]))
    order = np.argsort(question[shown], kind="stable")
    shown = shown[order]
    starts = np.searchsorted(question[shown], np.arange(n_q + 1))
    n_answers = np.diff(starts)
    # each answer's coordinate within its prompt
    local = np.full(len(question), -1, dtype=np.int64)
    local[shown] = np.arange(len(shown)) - starts[question[shown]]
    dims = np.maximum(n_answers - 1, 0)
    blocks = []
    for D in sorted({_block_dim(int(d), max_dim) for d in dims[dims > 0]}):
        prompts = np.flatnonzero((dims > 0) & (np.array([_block_dim(int(d), max_dim)
                                                        for d in dims]) == D))
        P = len(prompts)
        position = np.full(n_q, -1, dtype=np.int64)
        position[prompts] = np.arange(P)
        units = np.flatnonzero(position[q_unit] >= 0)
        units = units[np.argsort(position[q_unit[units]], kind="stable")]
        p_unit = position[q_unit[units]]
        ref = n_answers[prompts] - 1  # the reference's coordinate in each prompt
        contrast = np.zeros((len(units), D))
        for sign, side in ((1.0, first), (-1.0, second)):
            j = local[side[units]]
            keep = j != ref[p_unit]
            contrast[np.flatnonzero(keep), j[keep]] += sign
        answers = np.empty((P, D + 1), dtype=np.int64)
        real = np.zeros((P, D))
        ref_answer = shown[starts[prompts] + ref]
        answers[:] = ref_answer[:, None]
        for p, q in enumerate(prompts):
            d = int(dims[q])
            answers[p, :d] = shown[starts[q]:starts[q] + d]
            real[p, :d] = 1.0
        z, log_w = _rule(D, quadrature[D - 1] if D <= max_dim else 1)
        blocks.append(Block(units, p_unit, contrast, answers, real, prompts, z, log_w,
                            copies[prompts].astype(float)))
    return tuple(blocks)


def _prior(tau, real):
    """Prior precision ``Sigma^-1`` (P, D, D) and ``log det Sigma`` (P,) of the contrasts:
    ``tau`` (P, D + 1) holds each coordinate's sd, the reference's last, ``Sigma =
    diag(tau_j^2) + tau_ref^2 11^T`` on the real coordinates, the identity on the padding
    ones.  Up to ``tiny.UNROLL_LIMIT`` dimensions from Sigma's Cholesky factor, accurate
    where a tau nears 0; larger blocks by Sherman-Morrison through ``1 / tau_j^2`` (derivative
    lost below tau ~ 1e-4, tested; 80 blocks of 8: 0.30 ms against 1.44 ms from the factor)."""
    eye = jnp.eye(real.shape[-1], dtype=tau.dtype)
    if real.shape[-1] <= UNROLL_LIMIT:
        shared = (tau[:, -1] ** 2)[:, None, None] * real[:, :, None] * real[:, None, :]
        L = cholesky(eye * jnp.where(real > 0, tau[:, :-1] ** 2, 1.0)[:, None, :] + shared)
        W = solve_lower(L[:, None], jnp.broadcast_to(eye, L.shape))  # W = L^-T, row by row
        return (jnp.sum(W[:, :, None, :] * W[:, None, :, :], axis=-1),
                2.0 * jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2)), axis=-1))
    t, prec = tau[:, -1] ** 2, real / tau[:, :-1] ** 2
    s = prec.sum(axis=-1)
    Q = eye * (prec + 1.0 - real)[:, None, :] - prec[:, :, None] * prec[:, None, :] / (
        1.0 / t + s)[:, None, None]
    return Q, jnp.sum(real * jnp.log(jnp.where(real > 0, tau[:, :-1], 1.0) ** 2), -1) \
        + jnp.log1p(t * s)


def _unit_derivatives(outcome: OutcomeModel, x, aux, counts):
    """Every unit's log-likelihood in its logit ``x``, its score and its observed
    information (minus the second derivative), in one pass (the units are independent:
    forward derivatives along the ones vector are the elementwise ones)."""
    ones = jnp.ones_like(x)

    def first(v):
        return jax.jvp(lambda w: log_likelihood(outcome, w, aux, counts), (v,), (ones,))

    (value, g), (_, dg) = jax.jvp(first, (x,), (ones,))
    return value, g, -dg


def _segment(values, block):
    """Sum of per-unit values (E, ...) over each prompt's units (P, ...)."""
    return jax.ops.segment_sum(values, block.prompt, len(block.index), indices_are_sorted=True)


def _quadratic(points, Q):
    """``delta^T Q delta`` of every prompt's point (P, D) or points (P, M, D)."""
    if points.ndim == 3:
        Q = Q[:, None]
    # elementwise products, not einsum: batches of tiny matrix products are slow on the CPU
    return jnp.sum(points[..., :, None] * Q * points[..., None, :], axis=(-2, -1))


def _newton_parts(delta, base, gam, aux, counts, block, Q, outcome):
    """Every prompt's log integrand (P,), its gradient (P, D) and minus its Hessian
    (P, D, D) at ``delta`` (P, D)."""
    c = block.contrast
    x = base + gam * jnp.sum(c * delta[block.prompt], axis=-1)
    ll, g, h = _unit_derivatives(outcome, x, aux, counts)
    value = _segment(ll, block) - 0.5 * _quadratic(delta, Q)
    grad = _segment((g * gam)[:, None] * c, block) - jnp.sum(Q * delta[:, None, :], -1)
    info = _segment((h * gam**2)[:, None, None] * c[:, :, None] * c[:, None, :], block)
    return value, grad, info + Q


def _newton_step(delta, *args):
    _, grad, H = _newton_parts(delta, *args)
    return delta + cho_solve(cholesky(H), grad)


def _mode(*args, **kwargs):  # each prompt's mode (_newton_iterations, its arguments)
    return _newton_iterations(*args, **kwargs)[0]


def _newton_iterations(base, gam, aux, counts, block, Q, outcome, start=None,
                       tolerance=TOLERANCE):
    """Each prompt's mode by damped Newton iterations from ``start`` (default 0), without
    derivatives, and the number of iterations taken.

    Every prompt keeps its own step length: a Newton step times it is taken when it does
    not lower the log integrand (the length then doubles, up to 1), else refused (it
    halves): a full step can overshoot a logistic curve far from the mode.  One pass over
    the units per iteration (a taken candidate's value, gradient and Hessian are kept).
    They stop when every prompt took a full step and none moved by more than ``tolerance``
    (the Newton step :func:`log_integrals` takes after them squares the error left).
    """
    base, gam, aux, counts, Q = jax.lax.stop_gradient((base, gam, aux, counts, Q))
    pieces = (base, gam, aux, counts, block, Q, outcome)
    P, D = Q.shape[:2]

    def body(state):
        i, delta, parts, length, _ = state
        value, grad, H = parts
        candidate = delta + length[:, None] * cho_solve(cholesky(H), grad)
        new_parts = _newton_parts(candidate, *pieces)
        # a roundoff allowance relative to the value, with a floor: near-certain verdicts
        # give a log integrand near 0 as a difference of terms the size of the logits, and
        # an allowance below their roundoff refused converged steps until the end
        ok = new_parts[0] >= value - TOLERANCE_VALUE * (1.0 + jnp.abs(value))
        new = jnp.where(ok[:, None], candidate, delta)
        kept = tuple(jnp.where(ok.reshape((P,) + (1,) * (a.ndim - 1)), a, b)
                     for a, b in zip(new_parts, parts))
        moved = jnp.max(jnp.abs(new - delta), initial=0.0)
        # done once full Newton steps, all taken, move no coordinate by more than tolerance
        going = jnp.where(jnp.all(ok & (length >= 1.0)), moved, jnp.inf)
        length = jnp.where(ok, jnp.minimum(2.0 * length, 1.0), 0.5 * length)
        return i + 1, new, kept, length, going

    def cond(state):
        i, _, _, _, change = state
        return (i < NEWTON_STEPS) & (change > tolerance)

    start = (jnp.zeros((P, D), dtype=base.dtype) if start is None
             else jnp.asarray(start, dtype=base.dtype))
    state = (0, start, _newton_parts(start, *pieces), jnp.ones(P, dtype=base.dtype),
             jnp.asarray(jnp.inf, base.dtype))
    taken, delta = jax.lax.while_loop(cond, body, state)[:2]
    return delta, taken


def _block_pieces(block: Block, eta, gamma_u, aux_u, counts, tau_answer, outcome):
    """The block's units' inputs and its prior."""
    base, gam, cnt = eta[block.unit], gamma_u[block.unit], counts[block.unit]
    aux = None if aux_u is None else aux_u[block.unit]
    Q, log_det = _prior(tau_answer[block.answers], block.real)
    return base, gam, aux, cnt, Q, log_det


def _node_log_integrand(delta, R, z, base, gam, aux, counts, block, Q, outcome):
    """``l(delta_m) - delta_m^T Q delta_m / 2`` at the nodes ``delta_m = delta + R^-T z_m``
    (P, M), for z (M, D) shared by the prompts or (P, M, D).  In z, a unit's logit is its
    logit at delta plus ``gam (R^-1 c) . z_m`` and the quadratic form ``delta^T Q delta + 2
    (R^-1 Q delta) . z_m + z_m^T (R^-1 Q R^-T) z_m``: products with a shared rule's nodes,
    not every prompt's nodes gathered for each of its units (5x faster with 4^4 nodes)."""
    def along(v, rows):  # v (B, D) . z_m for the nodes of each row's prompt: (B, M)
        return v @ z.T if z.ndim == 2 else jnp.sum(v[:, None, :] * z[rows], -1)

    c, Q_delta = block.contrast, jnp.sum(Q * delta[:, None, :], -1)
    x = (base + gam * jnp.sum(c * delta[block.prompt], -1))[:, None] \
        + gam[:, None] * along(solve_lower(R[block.prompt], c), block.prompt)
    a = None if aux is None else jnp.broadcast_to(aux[:, None, :], x.shape + aux.shape[-1:])
    K = solve_lower(R[:, None], jnp.swapaxes(solve_lower(R[:, None], Q), -1, -2))
    quad_z = (K.reshape(len(K), -1) @ (z[:, :, None] * z[:, None, :]).reshape(len(z), -1).T
              if z.ndim == 2 else _quadratic(z, K))
    quadratic = (jnp.sum(delta * Q_delta, -1)[:, None]
                 + 2 * along(solve_lower(R, Q_delta), slice(None)) + quad_z)
    return _segment(log_likelihood(outcome, x, a, counts[:, None, :]), block) - 0.5 * quadratic


def log_integrals(block: Block, eta, gamma_u, aux_u, counts, tau_answer,
                  outcome: OutcomeModel, second_order: bool = False, start=None,
                  tolerance: float = TOLERANCE):
    """``log p(y_q | globals)`` of every prompt in ``block`` (P,), differentiable.

    Parameters
    ----------
    block : Block
    eta : array (units,)
        Every unit's logit without the answer effects.
    gamma_u : array (units,)
        The sensitivity gamma_k of each unit's judge.
    aux_u : array (units, n_aux) or None
        The outcome model's extra parameters of each unit's judge (unconstrained).
    counts : array (units, C)
    tau_answer : array (answers,)
        The sd of every answer's effect (``tau[item]``).
    outcome : OutcomeModel
    second_order : bool
        Exact second derivatives too (one more differentiated Newton step), for a Hessian
        of the potential; the gradient is exact either way.
    start : array (P, D), optional
        Where the Newton iterations start (default: 0).
    tolerance : float
        Where they stop; the result depends on neither beyond the tolerance.
    """
    base, gam, aux, cnt, Q, log_det = _block_pieces(block, eta, gamma_u, aux_u, counts,
                                                    tau_answer, outcome)
    args = (base, gam, aux, cnt, block, Q, outcome)
    delta = _mode(*args, start, tolerance=tolerance)
    # differentiated steps from the converged point: the first gives the implicit derivative
    # of the mode (exact gradients), a second one exact second derivatives as well
    for _ in range(2 if second_order else 1):
        delta = _newton_step(delta, *args)
    value, _, H = _newton_parts(delta, *args)
    R = cholesky(H)
    if block.z.shape[0] == 1 and not np.any(block.z):  # the Laplace approximation
        values = value[:, None]
    else:
        values = _node_log_integrand(delta, R, jnp.asarray(block.z, eta.dtype), *args)
    log_det_R = jnp.sum(jnp.log(jnp.diagonal(R, axis1=1, axis2=2)), axis=-1)
    return (jax.nn.logsumexp(values + jnp.asarray(block.log_weight, eta.dtype), axis=-1)
            - 0.5 * log_det - log_det_R)


def prompt_log_likelihood(blocks, eta, gamma_u, aux_u, counts, tau_answer,
                          outcome: OutcomeModel, second_order: bool = False, starts=None,
                          tolerance: float = TOLERANCE):
    """Sum over every prompt of ``log p(y_q | globals)`` (the answer effects integrated out).

    Parameters as :func:`log_integrals`; ``blocks`` from :func:`prompt_blocks`, ``starts``
    one start per block or None.  Each prompt counts ``copies`` times; units in no block
    (in the data's own layout: those of prompts another one stands for) count 0.
    """
    starts = (None,) * len(blocks) if starts is None else starts
    return sum(jnp.sum(jnp.asarray(b.copies, eta.dtype)
                       * log_integrals(b, eta, gamma_u, aux_u, counts, tau_answer, outcome,
                                       second_order, start, tolerance))
               for b, start in zip(blocks, starts))


def prompt_modes(blocks, eta, gamma_u, aux_u, counts, tau_answer, outcome: OutcomeModel,
                 starts=None) -> tuple:
    """Every prompt's mode of its answer-effect contrasts, one (P, D) array per block.

    Parameters as :func:`prompt_log_likelihood`; without derivatives.  Used as
    ``Integrated.starts``: Newton iterations started from the modes at a central value of
    the globals need fewer steps at nearby values.
    """
    starts = (None,) * len(blocks) if starts is None else starts
    modes = []
    for block, start in zip(blocks, starts):
        base, gam, aux, cnt, Q, _ = _block_pieces(block, eta, gamma_u, aux_u, counts,
                                                  tau_answer, outcome)
        modes.append(_mode(base, gam, aux, cnt, block, Q, outcome, start))
    return tuple(modes)
