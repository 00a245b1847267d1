"""Synthetic judge panels with a known HJA truth (the HJA paper's simulation design)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .checks import check_integer, check_positive, check_probability
from .comparisons import Comparisons, aggregate_cells
from .decomposition import canonicalize, check_rank
from .errors import ParameterError
from .likelihood import HALF, outcome_model, probabilities, sample_counts
from .likelihood.outcomes import deprecated_ties

__all__ = ["SimulationTruth", "simulate"]


class SimulationTruth(NamedTuple):
    """The parameters a panel was simulated from, in canonical HJA form.

    ``S = gamma mu^T + U V^T``; ``beta`` is the per-judge position bias (logit of the
    first-shown item winning, on top of ``S``); ``nu`` the per-judge Davidson tie
    propensities (None unless simulated with ``outcome="davidson"``); ``gaps`` the ordinal
    model's per-judge cut-point gaps (``outcome="ordinal"``); ``theta`` (K, F) the per-judge
    style coefficients and ``lam`` (K,) the self-preferences, with ``owners`` the map judge
    -> own model (None when not simulated).
    """

    gamma: np.ndarray
    mu: np.ndarray
    U: np.ndarray
    V: np.ndarray
    D: np.ndarray
    S: np.ndarray
    beta: np.ndarray
    nu: np.ndarray | None = None
    gaps: np.ndarray | None = None
    theta: np.ndarray | None = None
    lam: np.ndarray | None = None
    owners: dict | None = None


def _check_outcome(outcome, nu, gaps, tie_prob, K, categories):
    """The outcome model and its per-judge parameters on the log scale (None for "half")."""
    outcome = outcome_model(outcome, categories)
    if outcome.name == "ordinal":
        if nu is not None or tie_prob:
            raise ParameterError('nu= and tie_prob are for three-outcome verdicts, not "ordinal"')
        m = outcome.n_aux
        gaps = np.linspace(0.6, 1.2, m) if gaps is None else gaps
        try:
            gaps = np.broadcast_to(np.asarray(gaps, dtype=float), (K, m)).copy()
        except (TypeError, ValueError):
            raise ParameterError(f"gaps must broadcast to ({K}, {m}), got {gaps!r}") from None
        if not np.all(np.isfinite(gaps)) or np.any(gaps <= 0):
            raise ParameterError(f"gaps must be finite and > 0, got {gaps}")
        return outcome, np.log(gaps)
    if gaps is not None:
        raise ParameterError('gaps= are the ordinal cut points: pass outcome="ordinal" with them')
    if outcome.n_aux == 0:
        if nu is not None:
            raise ParameterError('nu= is the Davidson tie propensity: pass outcome="davidson" with it')
        return outcome, None
    if nu is None:
        raise ParameterError(f'outcome="{outcome.name}" needs the tie propensity nu= (a number or one per judge)')
    if tie_prob:
        raise ParameterError(f'tie_prob is for outcome="half"; under outcome="{outcome.name}" ties come from nu')
    try:
        nu = np.broadcast_to(np.asarray(nu, dtype=float), (K,)).copy()
    except (TypeError, ValueError):
        raise ParameterError(f"nu must be a number or {K} numbers (one per judge), got {nu!r}") from None
    if not np.all(np.isfinite(nu)) or np.any(nu < 0):
        raise ParameterError(f"nu must be finite and >= 0, got {nu}")
    with np.errstate(divide="ignore"):
        return outcome, np.log(nu)[:, None]


def _per_judge(value, K: int, name: str, width: int | None = None) -> np.ndarray:
    """A number, one per judge, or (with ``width``) a (K, width) or (width,) array."""
    shape = (K,) if width is None else (K, width)
    try:
        out = np.asarray(value, dtype=float)
        if width is not None and out.ndim == 1 and out.shape[0] == width and width != K:
            out = out[None, :]
        out = np.broadcast_to(out, shape).copy()
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must broadcast to {shape}, got {value!r}") from None
    if not np.all(np.isfinite(out)):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return out


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
    question_sizes=None,
    outcome: str = "half",
    nu=None,
    gaps=None,
    categories=None,
    style=None,
    n_features: int = 1,
    style_confounding: float = 0.5,
    self_preference=None,
    ties: str | None = None,
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
    bias is ``beta_k = position_bias * (1 + 0.5 z_k)``.  With ``outcome="davidson"`` the three
    outcomes follow Davidson's model instead, with judge k's tie propensity ``nu_k``
    (``P(tie) = nu_k / (e^{eta/2} + e^{-eta/2} + nu_k)``).

    Prompts (``questions > 0``): every comparison is about one of ``questions`` prompts,
    drawn uniformly (or in proportion to ``question_sizes``), and the data carry them as
    clusters (``data.cluster_column == "question"``).  Verdicts on one prompt are
    coupled while every marginal probability stays exact: each prompt gives each item an
    answer quality ``b_qi ~ N(0, 1)``, and the first-shown item wins when
    ``Phi(sqrt(rho) (b_qj - b_qi) / sqrt(2) + sqrt(1 - rho) e) < expit(eta)`` with
    ``e ~ N(0, 1)`` and ``rho = question_correlation`` (a Gaussian copula): all judges
    reading one prompt lean the same way.  This is the dependence that Fisher intervals
    ignore and cluster-robust ones account for.  (Under Davidson and the ordinal model the
    same uniform ``Phi(.)`` picks the category by the cumulative outcome probabilities.)

    Ordered verdicts (``outcome="ordinal"``): ``categories`` levels (default the five
    ``A>>B .. B>>A``) from the cumulative-logit model with judge k's cut-point gaps
    ``gaps[k]`` (:mod:`~hja_bayes.likelihood.outcomes.ordinal`).

    Style (``style``, needs prompts): every answer (prompt q, model i) has ``n_features``
    features ``x_qi = style_confounding * m_i + z_qi`` (``m_i, z_qi ~ N(0, 1)``: some models
    write longer answers than others), and judge k's logit gains ``theta_k^T (x_qi - x_qj)``
    with ``theta = style`` (a number, one per feature, or K x n_features).  The data carry the
    differences as features ``f1, f2, ...`` (already on their final scale).

    Self-preference (``self_preference``, a number or one per judge): judge k (k < N) is
    model k's own judge and its logit gains ``lambda_k`` for its own model (minus when its
    own model is shown second); ``truth.owners`` maps the judges to their models.

    Parameters
    ----------
    n_judges, n_items : int
        K and N.
    rank : int
        Disagreement rank r (0 gives the JA-Ranking model ``S = gamma mu^T``).
    comparisons_per_judge : int
        T.
    heterogeneity : float
        h, the size of the disagreement relative to the consensus (Frobenius norms); > 0 at
        ``rank >= 1``.
    seed : int, Generator or None
        Randomness source; the same seed gives the same panel.
    position_bias : float
        Typical per-judge position bias (0: none).
    tie_prob : float
        Probability that a comparison ends in a tie (``outcome="half"`` only).
    questions : int
        Number of prompts the comparisons are spread over (0: no prompts, independent
        comparisons).
    question_correlation : float
        rho in [0, 1): how strongly verdicts on one prompt are coupled.
    question_sizes : array-like of float, optional
        Relative sizes of the ``questions`` prompts (positive): a comparison is about prompt
        q with probability ``question_sizes[q] / sum(question_sizes)``.  Default: equal.
        E.g. ``50 ** np.linspace(0, 1, 15)`` spreads 15 prompts 1:50.
    outcome : {"half", "davidson", "ordinal"}
        How verdicts arise: ties at rate ``tie_prob`` independently of the scores ("half",
        the default), Davidson's model with tie propensities ``nu``, or ordered categories.
    nu : float or array (K,), optional
        Davidson tie propensities (>= 0; one for all judges or one per judge); required with
        ``outcome="davidson"`` and returned in ``truth.nu``.
    gaps : float or array, optional
        Ordinal cut-point gaps (> 0; broadcast to (K, (C - 1) // 2); default evenly from 0.6
        to 1.2).
    categories : int or tuple of str, optional
        The ordinal scale (default 5 levels); only with ``outcome="ordinal"``.
    style : float or array, optional
        Style coefficients (see above); None: no style.
    n_features : int
        Style features per answer.
    style_confounding : float
        How much the models' typical style differs (see above).
    self_preference : float or array (K,), optional
        Self-preference of judge k for model k.
    ties : str, optional
        Deprecated alias of ``outcome``.

    Returns
    -------
    (Comparisons, SimulationTruth)

    Examples
    --------
    >>> data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=100)
    >>> data.n_comparisons, truth.S.shape
    (300.0, (3, 5))
    """
    check_integer(n_judges, "n_judges", 1)
    check_integer(n_items, "n_items", 2)
    check_rank(rank, n_judges, n_items)
    check_integer(comparisons_per_judge, "comparisons_per_judge", 1)
    if check_positive(heterogeneity, "heterogeneity", allow_zero=True) == 0 and rank > 0:
        raise ParameterError("heterogeneity=0 is a panel without disagreement: simulate it at "
                             "rank=0 (at a higher rank its factors U, V would be arbitrary)")
    check_integer(questions, "questions", 0)
    check_integer(n_features, "n_features", 1)  # checked where unused too (style=None)
    check_probability(question_correlation, "question_correlation", open_high=True)
    for name, value in (("style_confounding", style_confounding),
                        ("position_bias", position_bias)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
                or not np.isfinite(value):
            raise ParameterError(f"{name} must be finite, one number, got {value!r}")
    if question_correlation and not questions:
        raise ParameterError("question_correlation couples verdicts within prompts: pass "
                             "questions > 0")
    if seed is not None and not isinstance(seed, np.random.Generator):
        check_integer(seed, "seed")
    check_probability(tie_prob, "tie_prob", open_high=True)
    outcome = deprecated_ties(ties, outcome)
    if categories is not None and outcome != "ordinal":
        raise ParameterError(f'categories= is the ordinal scale: pass outcome="ordinal" with it '
                             f"(outcome={outcome!r})")
    outcome, log_aux = _check_outcome(outcome, nu, gaps, tie_prob, n_judges,
                                      5 if categories is None else categories)
    rng = np.random.default_rng(seed)
    K, N = n_judges, n_items
    sizes = None
    if question_sizes is not None:
        if not questions:
            raise ParameterError("question_sizes needs prompts: pass questions > 0")
        try:
            sizes = np.asarray(question_sizes, dtype=float).ravel()
        except (TypeError, ValueError):
            sizes = np.array([np.nan])
        if sizes.shape != (int(questions),) or not np.all(np.isfinite(sizes)) or np.any(sizes <= 0):
            raise ParameterError(f"question_sizes must hold {int(questions)} positive numbers "
                                 f"(one per prompt), got {question_sizes!r}")
    if style is not None and not questions:
        raise ParameterError("style needs prompts: pass questions > 0 (features vary by prompt)")
    lam = None if self_preference is None else _per_judge(self_preference, K, "self_preference")
    if lam is not None and K > N:
        lam[N:] = 0.0  # judges beyond the models own none

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

    theta = None if style is None else _per_judge(style, K, "style",
                                                  check_integer(n_features, "n_features", 1))
    truth = SimulationTruth(
        gamma=np.asarray(d.gamma), mu=np.asarray(d.mu), U=np.asarray(d.U), V=np.asarray(d.V),
        D=np.asarray(d.D), S=truth_S, beta=beta,
        nu=None if log_aux is None or outcome.name != "davidson" else np.exp(log_aux[:, 0]),
        gaps=np.exp(log_aux) if outcome.name == "ordinal" else None,
        theta=theta, lam=lam,
        owners=None if lam is None else {f"judge{k}": f"item{k}" for k in range(min(K, N))},
    )
    own = np.full(K, -1) if lam is None else np.where(np.arange(K) < N, np.arange(K), -1)

    def logits(k, i, j):
        eta = beta[k] + truth_S[k, i] - truth_S[k, j]
        if lam is not None:
            eta = eta + lam[k] * ((i == own[k]).astype(float) - (j == own[k]).astype(float))
        return eta

    if questions:
        data = _simulate_prompts(rng, logits, K, N, comparisons_per_judge, tie_prob,
                                 int(questions), check_probability(
                                     question_correlation, "question_correlation", open_high=True),
                                 outcome, log_aux, theta, style_confounding, sizes)
        return data, truth

    # ordered cells: uniform unordered pair + random order == uniform ordered pair
    ii, jj = np.where(~np.eye(N, dtype=bool))
    cells_k, cells_i, cells_j, cells_counts = [], [], [], []
    for k in range(K):
        n = rng.multinomial(comparisons_per_judge, np.full(len(ii), 1.0 / len(ii)))
        m = n > 0
        i, j, n = ii[m], jj[m], n[m]
        eta = logits(np.full(len(i), k), i, j)
        if log_aux is not None:
            counts = sample_counts(rng, n, probabilities(
                outcome, eta, np.broadcast_to(log_aux[k], (len(i), outcome.n_aux))))
        else:
            ties = rng.binomial(n, tie_prob) if tie_prob else np.zeros_like(n)
            counts = sample_counts(rng, n - ties, probabilities(HALF, eta))
            counts[:, 1] = ties
        cells_k.append(np.full(len(i), k)), cells_i.append(i), cells_j.append(j)
        cells_counts.append(counts)
    data = Comparisons(
        judges=tuple(f"judge{k}" for k in range(K)),
        items=tuple(f"item{i}" for i in range(N)),
        judge=np.concatenate(cells_k),
        first=np.concatenate(cells_i),
        second=np.concatenate(cells_j),
        counts=np.concatenate(cells_counts).astype(float),
        categories=outcome.categories,
        rows_read=K * comparisons_per_judge,
        rows_used=K * comparisons_per_judge,
    )
    return data, truth


def _simulate_prompts(rng, logits, K, N, per_judge, tie_prob, questions, rho, outcome=HALF,
                      log_aux=None, theta=None, confounding=0.5, sizes=None) -> Comparisons:
    """Single comparisons spread over prompts, coupled within a prompt by a Gaussian copula."""
    k = np.repeat(np.arange(K), per_judge)
    if sizes is None:
        q = rng.integers(questions, size=len(k))
    else:
        q = rng.choice(questions, size=len(k), p=sizes / sizes.sum())
    i = rng.integers(N, size=len(k))
    j = (i + rng.integers(1, N, size=len(k))) % N  # uniform over the other items
    quality = rng.standard_normal((questions, N))
    latent = np.sqrt(rho) * (quality[q, i] - quality[q, j]) / np.sqrt(2) \
        + np.sqrt(1 - rho) * rng.standard_normal(len(k))
    from scipy.special import ndtr  # imported on use: the package imports light

    eta = logits(k, i, j)
    features = None
    if theta is not None:
        F = theta.shape[1]
        answers = confounding * rng.standard_normal((1, N, F)) \
            + rng.standard_normal((questions, N, F))
        features = answers[q, i] - answers[q, j]
        eta = eta + np.einsum("rf,rf->r", theta[k], features)
    u = ndtr(-latent)  # a better answer of the first-shown item makes it win more often
    if log_aux is not None:
        p = probabilities(outcome, eta, log_aux[k])
        category = np.minimum((u[:, None] > np.cumsum(p, axis=1)).sum(axis=1), p.shape[1] - 1)
        counts = np.eye(p.shape[1])[category]
    else:
        p_first = probabilities(HALF, eta)[:, 0]
        tie = rng.random(len(k)) < tie_prob
        first_wins = (u < p_first) & ~tie
        counts = np.column_stack([first_wins, tie, ~first_wins & ~tie]).astype(float)
    return aggregate_cells(
        tuple(f"judge{x}" for x in range(K)), tuple(f"item{x}" for x in range(N)), k, i, j,
        counts, categories=outcome.categories, rows_read=len(k), rows_used=len(k), cluster=q,
        cluster_names=tuple(f"q{x}" for x in range(questions)), features=features,
        feature_names=() if theta is None else tuple(f"f{x + 1}" for x in range(theta.shape[1])),
        feature_transform="" if theta is None else "simulated differences (final scale)",
        cluster_column="question")
