"""The layout of integrated prompt effects: prompts grouped into blocks of one dimension.

:mod:`~hja_bayes.bayes.integrated` integrates each prompt's answer effects out of the
likelihood, vectorised over the prompts of one block.  A prompt with n answers has d = n - 1
free coordinates (the differences to its reference answer, the last).  Blocks hold the
prompts of one dimension each, up to the product rules given, then powers of two padded
with coordinates no unit sees; NumPy.

Prompts whose units are alike (same judges, models, verdicts and design rows: most
one-verdict prompts of a large panel have a twin) have the same integral: with
``unit_keys`` it is laid out once and counted as often as it occurs (``Block.copies``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Block", "QUADRATURE", "prompt_blocks", "unit_keys"]

#: Default Gauss-Hermite nodes per dimension of the product rule, for blocks of one to four
#: dimensions (larger blocks: the Laplace approximation).  One dimension takes 24 nodes, not
#: 21: XLA's CPU loops run a row of nodes in whole vector registers (8 or 16 numbers), so 24
#: cost less than 21 (Chatbot Arena's gradient of the integrated potential 3.0-3.4 -> 2.6-2.7
#: ms), with errors as small (two-answer prompts against adaptive quadrature: 1e-8 for
#: typical single verdicts, at most 7e-4 for verdicts the globals make improbable; 21 nodes
#: 3e-8 and 9e-4).
QUADRATURE = (24, 9, 5, 4)


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


def unit_keys(cells) -> np.ndarray:
    """Everything a unit's likelihood depends on besides the globals and its answers'
    effects: its judge, models, counts and design rows, one row per unit (``unit_keys`` of
    :func:`prompt_blocks`)."""
    m = len(np.asarray(cells.judge))
    return np.column_stack([np.asarray(a, dtype=float).reshape(m, -1)
                            for a in (cells.judge, cells.first, cells.second, cells.counts,
                                      cells.X, cells.Xg)])


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
