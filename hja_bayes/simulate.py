"""Synthetic judge panels with a known HJA truth (the HJA paper's simulation design)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .checks import check_positive, check_probability
from .comparisons import Comparisons, aggregate_cells
from .decomposition import canonicalize, check_rank
from .errors import ParameterError
from .likelihood import sample_outcomes
from .likelihood.half import HALF

__all__ = ["SimulationTruth", "simulate"]


class SimulationTruth(NamedTuple):
    """The parameters a panel was simulated from, in canonical HJA form.

    ``S = gamma mu^T + U V^T``; ``beta`` is the per-judge position bias (logit of the
    first-shown item winning, on top of ``S``).
    """

    gamma: np.ndarray
    mu: np.ndarray
    U: np.ndarray
    V: np.ndarray
    D: np.ndarray
    S: np.ndarray
    beta: np.ndarray


def simulate(
    n_judges: int = 4,
    n_items: int = 8,
    rank: int = 1,
    comparisons_per_judge: int = 800,
    heterogeneity: float = 1.0,
    seed: int | np.random.Generator | None = 0,
    position_bias: float = 0.0,
    tie_prob: float = 0.0,
    questions: int = 0,
    question_correlation: float = 0.0,
) -> tuple[Comparisons, SimulationTruth]:
    """Simulate a panel of judges comparing items under the HJA model.

    Truth: ``mu ~ N(0, I)`` centred; ``gamma = 1 + 0.3 z`` (redrawn until positive, then
    scaled to sum K); ``V`` an orthonormal basis of a random ``rank``-dimensional subspace
    of ``{1, mu}``-perp scaled by sqrt(N); ``U`` a centred Gaussian K x r matrix (distinct
    singular values almost surely) scaled so that ``|U V^T|_F = heterogeneity * |gamma mu^T|_F``.
    The truth is returned in canonical form (the same ``S``).

    Comparisons: each judge makes ``comparisons_per_judge`` comparisons, the pair drawn
    uniformly among all unordered pairs and the presentation order at random.  Each
    comparison is a tie with probability ``tie_prob``; otherwise the first-shown item i
    beats j with probability ``expit(beta_k + S[k, i] - S[k, j])``.  Judge k's position
    bias is ``beta_k = position_bias * (1 + 0.5 z_k)``.

    Prompts (``questions > 0``): every comparison is about one of ``questions`` prompts,
    drawn uniformly, and the data carry them as clusters.  Verdicts on one prompt are
    coupled while every marginal probability stays exact: each prompt gives each item an
    answer quality ``b_qi ~ N(0, 1)``, and the first-shown item wins when
    ``Phi(sqrt(rho) (b_qi - b_qj) / sqrt(2) + sqrt(1 - rho) e) < expit(eta)`` with
    ``e ~ N(0, 1)`` and ``rho = question_correlation`` (a Gaussian copula): all judges
    reading one prompt lean the same way.  This is the dependence that Fisher intervals
    ignore and cluster-robust ones account for.

    Parameters
    ----------
    n_judges, n_items : int
        K and N.
    rank : int
        Disagreement rank r (0 gives the JA-Ranking model ``S = gamma mu^T``).
    comparisons_per_judge : int
        T.
    heterogeneity : float
        h, the size of the disagreement relative to the consensus (Frobenius norms).
    seed : int, Generator or None
        Randomness source; the same seed gives the same panel.
    position_bias : float
        Typical per-judge position bias (0: none).
    tie_prob : float
        Probability that a comparison ends in a tie.
    questions : int
        Number of prompts the comparisons are spread over (0: no prompts, independent
        comparisons).
    question_correlation : float
        rho in [0, 1): how strongly verdicts on one prompt are coupled.

    Returns
    -------
    (Comparisons, SimulationTruth)

    Examples
    --------
    >>> data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=100)
    >>> data.n_comparisons, truth.S.shape
    (300.0, (3, 5))
    """
    check_rank(rank, n_judges, n_items)
    if isinstance(comparisons_per_judge, bool) or not isinstance(comparisons_per_judge, (int, np.integer)) \
            or comparisons_per_judge < 1:
        raise ParameterError(f"comparisons_per_judge must be an integer >= 1, got {comparisons_per_judge!r}")
    check_positive(heterogeneity, "heterogeneity", allow_zero=True)
    check_probability(tie_prob, "tie_prob", open_high=True)
    rng = np.random.default_rng(seed)
    K, N = n_judges, n_items

    mu = rng.standard_normal(N)
    mu -= mu.mean()
    gamma = 1 + 0.3 * rng.standard_normal(K)
    while np.any(gamma <= 0):
        bad = gamma <= 0
        gamma[bad] = 1 + 0.3 * rng.standard_normal(bad.sum())
    gamma *= K / gamma.sum()
    S = np.outer(gamma, mu)
    if rank > 0:
        basis = np.column_stack([np.ones(N), mu, rng.standard_normal((N, rank))])
        Q, _ = np.linalg.qr(basis)
        V = np.sqrt(N) * Q[:, 2 : 2 + rank]
        U = rng.standard_normal((K, rank))
        U -= U.mean(axis=0)
        R = U @ V.T
        R *= heterogeneity * np.linalg.norm(S) / np.linalg.norm(R)
        S = S + R
    d = canonicalize(S, rank)
    truth_S = np.outer(d.gamma, d.mu) + np.asarray(d.U) @ np.asarray(d.V).T
    beta = position_bias * (1 + 0.5 * rng.standard_normal(K)) if position_bias else np.zeros(K)

    if questions:
        data = _simulate_prompts(rng, truth_S, beta, comparisons_per_judge, tie_prob,
                                 int(questions), check_probability(
                                     question_correlation, "question_correlation", open_high=True))
        return data, SimulationTruth(
            gamma=np.asarray(d.gamma), mu=np.asarray(d.mu), U=np.asarray(d.U),
            V=np.asarray(d.V), D=np.asarray(d.D), S=truth_S, beta=beta)

    # ordered cells: uniform unordered pair + random order == uniform ordered pair
    ii, jj = np.where(~np.eye(N, dtype=bool))
    cells_k, cells_i, cells_j, cells_n, cells_w, cells_t = [], [], [], [], [], []
    for k in range(K):
        n = rng.multinomial(comparisons_per_judge, np.full(len(ii), 1.0 / len(ii)))
        m = n > 0
        i, j, n = ii[m], jj[m], n[m]
        ties = rng.binomial(n, tie_prob) if tie_prob else np.zeros_like(n)
        eta = beta[k] + truth_S[k, i] - truth_S[k, j]
        wins, _, _ = sample_outcomes(rng, eta, n - ties, outcome=HALF)
        cells_k.append(np.full(len(i), k)), cells_i.append(i), cells_j.append(j)
        cells_n.append(n), cells_w.append(wins + ties / 2), cells_t.append(ties)
    data = Comparisons(
        judges=tuple(f"judge{k}" for k in range(K)),
        items=tuple(f"item{i}" for i in range(N)),
        judge=np.concatenate(cells_k),
        first=np.concatenate(cells_i),
        second=np.concatenate(cells_j),
        n=np.concatenate(cells_n).astype(float),
        wins=np.concatenate(cells_w).astype(float),
        ties=np.concatenate(cells_t).astype(float),
        rows_read=K * comparisons_per_judge,
        rows_used=K * comparisons_per_judge,
    )
    truth = SimulationTruth(
        gamma=np.asarray(d.gamma), mu=np.asarray(d.mu), U=np.asarray(d.U), V=np.asarray(d.V),
        D=np.asarray(d.D), S=truth_S, beta=beta,
    )
    return data, truth


def _simulate_prompts(rng, S, beta, per_judge, tie_prob, questions, rho) -> Comparisons:
    """Single comparisons spread over prompts, coupled within a prompt by a Gaussian copula."""
    K, N = S.shape
    k = np.repeat(np.arange(K), per_judge)
    q = rng.integers(questions, size=len(k))
    i = rng.integers(N, size=len(k))
    j = (i + rng.integers(1, N, size=len(k))) % N  # uniform over the other items
    quality = rng.standard_normal((questions, N))
    latent = np.sqrt(rho) * (quality[q, i] - quality[q, j]) / np.sqrt(2) \
        + np.sqrt(1 - rho) * rng.standard_normal(len(k))
    p_first, _, _ = HALF.probabilities(beta[k] + S[k, i] - S[k, j], None)
    tie = rng.random(len(k)) < tie_prob
    from scipy.special import ndtr

    first_wins = (ndtr(latent) < p_first) & ~tie
    return aggregate_cells(
        tuple(f"judge{x}" for x in range(K)), tuple(f"item{x}" for x in range(N)), k, i, j,
        np.ones(len(k)), first_wins + 0.5 * tie, tie.astype(float), rows_read=len(k),
        rows_used=len(k), cluster=q, cluster_names=tuple(f"q{x}" for x in range(questions)))
