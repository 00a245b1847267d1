"""Prompt effects: the quality of each answer a judge read, as a random effect.

Verdicts on one question (prompt) share the answers shown, so they are not independent
(SPEC §9).  With clusters known, the linear predictor of a comparison of items i and j on
question q by judge k is

    eta = beta_k + S[k, i] - S[k, j] + gamma_k (alpha[q, i] - alpha[q, j])

with one effect ``alpha[q, i] ~ N(0, tau_i^2)`` per answer (question, model) that appears
in the data, sampled non-centred (``alpha = tau_i z``, ``z ~ N(0, 1)``), and tau learned for
every model: how much a model's answers vary in quality from question to question differs
between models (on MT-Bench the question-bootstrap sd of mu ranges over 3x between models,
which one shared tau cannot reproduce).  The likelihood is then evaluated per (question,
cell) *entry* of the data's :class:`~hja_bayes.clusters.ClusterCounts` instead of per cell.

Where the chains start.  The joint mode of the non-centred coordinates (z, log tau) is a
poor centre for a Laplace approximation: the z's gain prior density as tau grows, so the
mode's tau is several times the posterior's (7.5 against 1.5 on MT-Bench with one tau), and
the centred coordinates' joint mode is at tau = 0.  :func:`prompt_start` estimates tau by EM
instead (the marginal-likelihood estimate under the Laplace approximation) and takes the
mode of everything else given it; the Laplace approximation and the chains' starts are
built there.

Two scales of the consensus.  With answer effects inside the logit, ``mu`` (and S) are
*conditional* (question-specific) scores: the log-odds for answers of typical quality
(alpha = 0).  Averaging the win probability over answers flattens it, so a model without
answer effects (``fit_hja``, its Wald and bootstrap intervals, ``sample_hja`` without prompt
effects) estimates a *marginal* (population-averaged) score, smaller by a factor that
grows with tau (about 1.7 on MT-Bench).  :func:`marginal_consensus` puts every draw on the
marginal scale: for each judge k and ordered pair (i, j) the win probability averaged over
the answers, ``E[expit(S_ki - S_kj + gamma_k d)]`` with ``d ~ N(0, tau_i^2 + tau_j^2)``
(Gauss-Hermite quadrature, no position bias), back to a logit, projected onto scores
(``S_bar_ki`` = mean over j of the marginal logit of (i, j), the least-squares scores on
the complete graph) and averaged over judges (``mu_bar = S_bar^T 1 / K``, SPEC §2).
``sample_hja`` stores it as ``mu_marginal``; compare it, not ``mu``, with a fixed-effects
fit.  (A Kullback-Leibler projection onto per-judge scores over the data's own cells, with
the MAP's ridge, agreed with this least-squares projection within 0.03 logits on MT-Bench.)

Measured on MT-Bench (rank 1, ``benchmarks/results/bayes_prompts.md``).  Like for like,
the posterior sd of ``mu_marginal`` is 0.89-1.21 times the question-bootstrap sd of the
same model's point estimate (:func:`~hja_bayes.bayes.prompt_effects_mode` refitted on 100
resamples of the 80 questions), and that of the conditional ``mu`` 1.09-1.28 times: the
posterior carries the between-question uncertainty of what it estimates.  Against the
question bootstrap of the fixed-effects fit the ratio is 0.48-0.98.  That estimator moves
1.1-2.0x more between resamples, and the posterior mean of ``mu_marginal`` differs from its
mu by up to 0.4 logits.  The two are not one estimand.  Because ``gamma_k`` also loads the
answer effects, the mixed model re-weighs the judges: posterior gamma of judges 14-17 is
about 2.3 against 1.25 at the MAP, and that of judge 18 is 0.06 against 2.2.  Judge 18
(``zai-org/GLM-4.5-Air-FP8``) chose the first-shown answer in 493 of its 494 decided verdicts
(:mod:`~hja_bayes.position_locked`): with MT-Bench's one order per pair its verdicts follow
the alphabetical order, which the fixed-effects fit reads as a large, unstable gamma (in some
question resamples they follow it perfectly, and the fit warns of separation).  Much of the
gap is that judge's pull on the fixed-effects mu: fitted without it, mu is within 0.12 logits
of the posterior mean of ``mu_marginal`` (llama-13b 0.25), against 0.40 with it (``hja-bayes
fit --bayes``, 2 chains of 1,000 draws); with position bias in both, within 0.13.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..likelihood import Cells, cells_of
from ..likelihood.terms import design_of

__all__ = ["Answers", "entry_answers", "entry_units", "marginal_consensus", "prompt_offsets", "prompt_start"]


class Answers(NamedTuple):
    """Which answer (question, model) each entry shows first and second.

    Attributes
    ----------
    first, second : ndarray of int (entries,)
        Answer index of the first- and second-shown item's answer.
    question, item : ndarray of int (answers,)
        The question (cluster) and model of every answer.
    labels : tuple of str
        ``"question / model"`` per answer.
    """

    first: np.ndarray
    second: np.ndarray
    question: np.ndarray
    item: np.ndarray
    labels: tuple


def entry_answers(data) -> tuple[Answers, np.ndarray]:
    """Which answers every (question, cell) entry of ``data`` shows.

    Parameters
    ----------
    data : Comparisons
        With clusters (``data.clusters`` not None).

    Returns
    -------
    answers : Answers
        Answer indices; the set of answers depends only on which (question, model) pairs
        appear, so folded and unfolded data index them alike.
    cell : ndarray of int (entries,)
        The cell of each entry.
    """
    c = data.clusters
    cell = np.asarray(c.cell)
    first, second = (np.asarray(a)[cell] for a in (data.first, data.second))
    N = data.n_items
    keys = np.concatenate([c.cluster * N + first, c.cluster * N + second])
    present, inverse = np.unique(keys, return_inverse=True)
    m = len(cell)
    question, item = np.divmod(present, N)
    labels = tuple(f"{c.names[q]} / {data.items[i]}" for q, i in zip(question, item))
    return Answers(inverse[:m], inverse[m:], question, item, labels), cell


def entry_units(data, outcome=None, terms=()) -> tuple[Cells, Answers, np.ndarray]:
    """The (question, cell) entries of ``data`` as likelihood units, with their answers.

    Parameters
    ----------
    data : Comparisons
        With clusters (``data.clusters`` not None).
    outcome : OutcomeModel, optional
        The counts are read as it reads them (default: as stored).
    terms : sequence of term objects
        The linear terms laid out over the entries
        (:func:`~hja_bayes.likelihood.terms.design_of`).

    Returns
    -------
    units : Cells
        One unit per entry (NumPy arrays), in the order of ``data.clusters``.
    answers : Answers
        See :func:`entry_answers`.
    cell : ndarray of int (entries,)
        The cell of each entry.
    """
    design = design_of(data, tuple(terms), level="entries")
    units = Cells(*(np.asarray(a) for a in cells_of(data, outcome=outcome, design=design)))
    answers, cell = entry_answers(data)
    return units, answers, cell


def prompt_offsets(gamma, alpha, judge, first, second):
    """``gamma_k (alpha[first] - alpha[second])`` per unit; leading draw dimensions allowed.

    Parameters
    ----------
    gamma : array (..., K)
    alpha : array (..., answers)
    judge, first, second : int arrays (units,)
    """
    if isinstance(gamma, np.ndarray) and isinstance(alpha, np.ndarray):
        return gamma[..., judge] * (alpha[..., first] - alpha[..., second])
    gamma, alpha = jnp.asarray(gamma), jnp.asarray(alpha)
    return gamma[..., judge] * (alpha[..., first] - alpha[..., second])


def prompt_start(potential, params: dict, answers: Answers, iterations: int = 10,
                 tol: float = 0.02) -> dict:
    """A starting point for the prompt-effects model: tau by EM, the rest at its mode.

    Each step fixes tau, finds the mode of every other raw site (L-BFGS) and the Laplace
    variances of the answer effects there, and computes the update
    ``tau_i^2 = mean_q (alpha_qi^2 + var alpha_qi)`` (the EM update of a variance
    component).  Stops when the update would move no tau_i by more than ``tol``
    (relative), or after ``iterations`` steps, and returns the last tau with the mode
    given it (the sampler's warm-up does the rest).

    Parameters
    ----------
    potential : callable dict -> scalar
        Potential energy of the raw sites (``tau`` holds log tau, one per model).
    params : dict
        Raw sites to start from (``z_alpha`` and ``tau`` included).
    answers : Answers
        The model and question of every answer (``z_alpha``'s order).
    iterations : int
    tol : float

    Returns
    -------
    dict
        Raw sites: the conditional mode given the final tau, and log tau.
    """
    import jax
    from jax.flatten_util import ravel_pytree
    from scipy.optimize import minimize

    from .arrow import arrow_from_columns, arrow_layout, hessian_products

    item = np.asarray(answers.item)
    # a strongly typed array, as the later updates are: one compilation of each program
    log_tau = jnp.asarray(np.asarray(params["tau"], dtype=float))
    others = {k: jnp.asarray(v) for k, v in params.items() if k != "tau"}
    sites = tuple(sorted(others))
    flat, unravel = ravel_pytree({k: others[k] for k in sites})
    start = sum(int(np.size(others[k])) for k in sites[: sites.index("z_alpha")])
    z_slice = slice(start, start + int(np.size(others["z_alpha"])))

    def conditional(x, lt):
        return potential({**unravel(x), "tau": lt})

    value_and_grad = jax.jit(jax.value_and_grad(conditional))
    grad = jax.grad(conditional)
    layout = arrow_layout(others, answers.question)
    directions = jnp.asarray(layout.directions)

    @jax.jit
    def hessian_columns(x, lt):  # the arrow's products (hja_bayes.bayes.arrow)
        return hessian_products(lambda y: grad(y, lt), x, directions)

    n_items = log_tau.shape[0]
    per_item = np.bincount(item, minlength=n_items)
    x = np.asarray(flat)
    for step in range(iterations):
        def fun(y, lt=log_tau):
            v, g = value_and_grad(jnp.asarray(y), lt)
            return float(v), np.asarray(g, dtype=float)

        x = minimize(fun, x, jac=True, method="L-BFGS-B",
                     options={"maxiter": 5000, "ftol": 1e-13, "gtol": 1e-8}).x
        # the answer effects' Laplace variances given tau
        var_z = arrow_from_columns(layout, sites, x, hessian_columns(jnp.asarray(x), log_tau)
                                   ).effect_variances
        tau = np.exp(np.asarray(log_tau))
        alpha = tau[item] * x[z_slice]
        second_moment = np.bincount(item, alpha**2 + tau[item] ** 2 * var_z, n_items)
        new = np.sqrt(np.divide(second_moment, per_item, out=tau**2, where=per_item > 0))
        if np.max(np.abs(new / tau - 1)) < tol or step == iterations - 1:
            break  # x is the mode given tau, and tau is (near) the EM fixed point
        x = x.copy()
        x[z_slice] = alpha / new[item]  # keep alpha = tau z
        log_tau = jnp.log(jnp.asarray(new))
    others = dict(unravel(jnp.asarray(x)))
    return {**others, "tau": log_tau}


#: Numbers per array in :func:`marginal_consensus`'s chunks of draws (8 MB): arrays that stay
#: in the caches (Chatbot Arena's 4,000 draws of 10 judges: 2.3 s, against 6.5 s in chunks
#: of 128 draws, 80 MB each).
_CONSENSUS_CHUNK = 1 << 20


def marginal_consensus(S, gamma, tau, nodes: int = 32, chunk: int | None = None):
    """Population-averaged (marginal) consensus of prompt-effect draws (module docstring).

    Parameters
    ----------
    S : array (draws, K, N)
        Conditional score matrices.
    gamma : array (draws, K)
    tau : array (draws, N)
        Sd of each model's answer effects.
    nodes : int
        Gauss-Hermite nodes (32 integrate ``expit`` of a Gaussian to ~1e-10 for the spreads
        met in practice).
    chunk : int, optional
        Draws computed at once (default: about a million numbers per array).

    Returns
    -------
    mu_bar : ndarray (draws, N)
        Marginal consensus (centred), the counterpart of a fixed-effects fit's mu.
    S_bar : ndarray (draws, K, N)
        Marginal scores (rows centred).
    """
    S, gamma, tau = (np.asarray(x, dtype=float) for x in (S, gamma, tau))
    x, w = np.polynomial.hermite.hermgauss(int(nodes))
    z, w = np.sqrt(2.0) * x, w / np.sqrt(np.pi)
    N = S.shape[-1]
    i, j = np.triu_indices(N, 1)
    if chunk is None:
        chunk = max(1, _CONSENSUS_CHUNK // max(1, S.shape[1] * len(i) * len(z)))
    S_bar = np.empty_like(S)
    for start in range(0, S.shape[0], chunk):
        s, g, t = (a[start:start + chunk] for a in (S, gamma, tau))
        eta = s[:, :, i] - s[:, :, j]  # (d, K, pairs): the pairs i < j
        spread = np.abs(g)[:, :, None] * np.sqrt(t[:, None, i] ** 2 + t[:, None, j] ** 2)
        # P(i beats j) and P(j beats i) averaged over the answers, both from one exponential
        # per node: with e = exp(-|x|), expit(x) and expit(-x) are 1 / (1 + e) and
        # e / (1 + e), one way round or the other (not 1 - p, which loses the digits of a
        # lopsided pair)
        x = eta[..., None] + spread[..., None] * z
        e = np.exp(-np.abs(x))
        big = 1.0 / (1.0 + e)
        small = e * big
        ahead = x >= 0
        log_odds = (np.log(np.where(ahead, big, small) @ w)
                    - np.log(np.where(ahead, small, big) @ w))
        pairwise = np.zeros(s.shape + (N,))  # (d, K, N, N), log odds of i over j
        pairwise[..., i, j] = log_odds
        pairwise[..., j, i] = -log_odds
        S_bar[start:start + chunk] = pairwise.mean(axis=-1)
    return S_bar.mean(axis=1), S_bar
