"""Maximum-likelihood (MAP) fit of the HJA model by anchored proximal alternation.

The parameters are kept as two blocks,

    judge block  B = [gamma | U | beta]    (K x (r + 2))
    item block   T = [mu | V]              (N x (r + 1))

so that ``S = B[:, :r+1] @ T.T`` and ``beta = B[:, r+1]``.  With one block fixed the cell
logits are linear in the other, so each block step is a convex penalised logistic
regression with linear (centring) constraints:

    judge step   min_B  F(B, T) + tau/2 |B - B_t|^2     s.t. sum(gamma) = K, 1^T U = 0
    item step    min_T  F(B, T) + tau/2 |T - T_t|^2     s.t. 1^T mu = 0, 1^T V = 0

with ``F = NLL + ridge/2 (|S|_F^2 + |beta|^2)``.  The HJA paper solves the blocks with
L-BFGS; here they are solved to convergence by damped Newton steps on the exact block
Hessian (it is small and known in closed form from the Fisher blocks), which reaches the
same block minimiser.  After each pair of block steps, ReAnchor maps (B, T) back to the
canonical coordinates (:func:`~hja_bayes.decomposition.canonicalize`), which leaves S and
the likelihood unchanged.  Fail-safe: if the consensus norm or the r-th singular value
collapses after ReAnchor, the step is undone and tau enlarged.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Callable, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .btl import fit_per_judge_btl
from .data import Comparisons
from .decomposition import _canonicalize, canonicalize, check_rank
from .decomposition import max_rank as _max_rank
from .errors import ConvergenceWarning, DataWarning, IdentifiabilityError
from .inference import free_parameters
from .model import Cells, cells_of, fisher_blocks, negative_log_likelihood

__all__ = ["HJAFit", "fit_hja", "fit_btl_svd", "rank_criteria", "split_comparisons"]

DEFAULT_RIDGE = 1e-6
MU_FLOOR = 1e-8
SIGMA_FLOOR = 1e-10
TAU_SHRINK = 0.5
TAU_MIN = 0.03
# per-judge BTL start: a judge whose verdicts are (nearly) separated gets huge unpenalised
# scores that would dominate the starting consensus; a mild ridge keeps the start tame
INIT_RIDGE = 0.1


# --------------------------------------------------------------------------- core math
def _unpack(B, T, r):
    S = B[:, : r + 1] @ T.T
    return S, B[:, r + 1]


def _objective(B, T, cells, r, ridge):
    S, beta = _unpack(B, T, r)
    return negative_log_likelihood(S, beta, cells) + 0.5 * ridge * (jnp.sum(S**2) + beta @ beta)


def _damped_newton(fun, direction, x0, max_steps=1, rel_tol=1e-13):
    """Minimise a convex ``fun`` from ``x0``; ``direction(x) -> (d, decrement)``."""

    def cond(state):
        _, f, it, dec = state
        return (it < max_steps) & (dec > rel_tol * (1.0 + jnp.abs(f)))

    def body(state):
        x, f, it, _ = state
        d, dec = direction(x)

        def ls_cond(s):
            t, fn = s
            return (fn > f - 1e-4 * t * dec) & (t > 1e-6)

        def ls_body(s):
            t = s[0] * 0.5
            return t, fun(x + t * d)

        t, fn = jax.lax.while_loop(ls_cond, ls_body, (1.0, fun(x + d)))
        accept = fn <= f
        return (jnp.where(accept, x + t * d, x), jnp.where(accept, fn, f), it + 1,
                jnp.where(accept, dec, 0.0))

    f0 = fun(x0)
    x, f, it, _ = jax.lax.while_loop(cond, body, (x0, f0, 0, jnp.inf))
    return x


def _judge_step(B, T, cells, r, ridge, tau, position_bias):
    K = B.shape[0]
    S, beta = _unpack(B, T, r)
    B_prox = B
    mask = jnp.ones(r + 2).at[r + 1].set(1.0 if position_bias else 0.0)

    def fun(Bx):
        return _objective(Bx, T, cells, r, ridge) + 0.5 * tau * jnp.sum((Bx - B_prox) ** 2)

    def direction(Bx):
        g = jax.grad(fun)(Bx) * mask
        S_, beta_ = _unpack(Bx, T, r)
        SS, Sb, bb = fisher_blocks(S_, beta_, cells)
        H = jnp.zeros((K, r + 2, r + 2))
        H = H.at[:, : r + 1, : r + 1].set(jnp.einsum("ip,kij,jq->kpq", T, SS, T) + ridge * (T.T @ T))
        cross = (Sb @ T) * mask[r + 1]
        H = H.at[:, : r + 1, r + 1].set(cross).at[:, r + 1, : r + 1].set(cross)
        H = H.at[:, r + 1, r + 1].set(jnp.where(position_bias, bb + ridge, 1.0))
        H = H + tau * jnp.eye(r + 2)
        # equality constraints on the column sums of gamma and U (coordinates 0..r)
        Hinv = jnp.linalg.inv(H)
        E = jnp.eye(r + 2)[: r + 1]
        HinvE = Hinv @ E.T  # (K, r+2, r+1)
        schur = jnp.einsum("pa,kab->pb", E, HinvE)  # sum_k E H_k^-1 E^T
        rhs = jnp.einsum("pa,kab,kb->p", E, Hinv, g)
        lam = -jnp.linalg.solve(schur, rhs)
        d = -jnp.einsum("kab,kb->ka", Hinv, g + lam @ E)
        d = d * mask
        return d, -jnp.sum(g * d)

    return _damped_newton(fun, direction, B)


def _item_step(B, T, cells, r, ridge, tau):
    N = T.shape[0]
    p = r + 1
    A = B[:, :p]
    T_prox = T
    C = jnp.eye(N) - 1.0 / N  # centring projector

    def fun(Tx):
        return _objective(B, Tx, cells, r, ridge) + 0.5 * tau * jnp.sum((Tx - T_prox) ** 2)

    def direction(Tx):
        g = C @ jax.grad(fun)(Tx)
        S_, beta_ = _unpack(B, Tx, r)
        SS, _, _ = fisher_blocks(S_, beta_, cells)
        H = jnp.einsum("kij,kp,kq->ipjq", SS, A, A)
        H = H + jnp.einsum("ij,pq->ipjq", jnp.eye(N), ridge * (A.T @ A) + tau * jnp.eye(p))
        P = jnp.einsum("ij,pq->ipjq", C, jnp.eye(p)).reshape(N * p, N * p)
        Hf = H.reshape(N * p, N * p)
        M = P @ Hf @ P + (jnp.eye(N * p) - P)
        d = -jnp.linalg.solve(M, g.reshape(-1)).reshape(N, p)
        d = C @ d
        return d, -jnp.sum(g * d)

    return _damped_newton(fun, direction, T)


def _reanchor(B, T, r):
    S, beta = _unpack(B, T, r)
    d = _canonicalize(S, r)
    B = jnp.column_stack([d.gamma, d.U, beta])
    T = jnp.column_stack([d.mu, d.V])
    sigma_r = jnp.sqrt(d.D[-1] * S.shape[0] * S.shape[1]) if r > 0 else jnp.inf
    return B, T, jnp.linalg.norm(d.mu), sigma_r


@partial(jax.jit, static_argnames=("r", "position_bias", "reanchor"))
def _outer_step(B, T, cells, tau, ridge, r, position_bias, reanchor):
    B = _judge_step(B, T, cells, r, ridge, tau, position_bias)
    T = _item_step(B, T, cells, r, ridge, tau)
    if reanchor:
        B, T, mu_norm, sigma_r = _reanchor(B, T, r)
    else:
        mu_norm, sigma_r = jnp.linalg.norm(T[:, 0]), jnp.inf
    return B, T, _objective(B, T, cells, r, ridge), mu_norm, sigma_r


_objective_jit = jax.jit(_objective, static_argnames=("r",))


def _solve(B, T, cells, r, *, position_bias, tau, ridge, tol, max_iter, reanchor,
           progress: Callable[[int, float], None] | None = None):
    """Run the proximal alternation from (B, T); returns (B, T, n_iter, converged, tau)."""
    f = float(_objective_jit(B, T, cells, r, ridge))
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        B_new, T_new, f_new, mu_norm, sigma_r = _outer_step(
            B, T, cells, tau, ridge, r, position_bias, reanchor
        )
        f_new = float(f_new)
        if float(mu_norm) < MU_FLOOR or float(sigma_r) < SIGMA_FLOOR or not math.isfinite(f_new):
            tau *= 10.0  # fail-safe: undo the step, move more cautiously
            if tau > 1e12:
                raise IdentifiabilityError(
                    "the consensus or the disagreement rank collapsed during fitting "
                    "(|mu| or the r-th singular value went to zero); try a smaller rank"
                )
            continue
        B, T = B_new, T_new
        tau = max(tau * TAU_SHRINK, TAU_MIN)
        if progress is not None:
            progress(it, f_new)
        if abs(f - f_new) <= tol * max(1.0, abs(f_new)):
            f = f_new
            converged = True
            break
        f = f_new
    return B, T, it, converged, tau


# ------------------------------------------------------------------------ result type
@dataclass(frozen=True, eq=False)
class HJAFit:
    """A fitted HJA model ``S = gamma mu^T + U V^T`` (plus position bias ``beta``).

    Attributes
    ----------
    gamma (K,), mu (N,), U (K, r), V (N, r), D (r,), S (K, N), beta (K,)
        Canonical estimates (``beta`` is zeros without position bias).
    rank : int
    position_bias : bool
    nll : float
        Negative log-likelihood at the estimate (ties 1/2; without the ridge).
    bic : float
        ``2 nll + r (K + N - r - 3) log n`` (SPEC §3; constant terms dropped).
    n_iter : int
    converged : bool
    judges, items : tuple of str
    data : Comparisons
        The data the model was fitted to (used for intervals).
    tau, ridge : float
        Final proximal weight and ridge.
    rank_table : DataFrame or None
        Criteria for every candidate rank when the rank was selected.
    """

    gamma: np.ndarray
    mu: np.ndarray
    U: np.ndarray
    V: np.ndarray
    D: np.ndarray
    S: np.ndarray
    beta: np.ndarray
    rank: int
    position_bias: bool
    nll: float
    bic: float
    n_iter: int
    converged: bool
    judges: tuple[str, ...]
    items: tuple[str, ...]
    data: Comparisons = field(repr=False)
    tau: float = 30.0
    ridge: float = DEFAULT_RIDGE
    rank_table: pd.DataFrame | None = field(default=None, repr=False)

    def _index(self, names, x, what):
        if isinstance(x, str):
            if x not in names:
                raise IdentifiabilityError(f"unknown {what} {x!r}; {what}s are {list(names)}")
            return names.index(x)
        return int(x)

    def predict_proba(self, judge, first, second) -> float:
        """Probability that ``judge`` prefers ``first`` (shown first) over ``second``."""
        k = self._index(self.judges, judge, "judge")
        i = self._index(self.items, first, "item")
        j = self._index(self.items, second, "item")
        eta = self.beta[k] + self.S[k, i] - self.S[k, j]
        return float(1.0 / (1.0 + np.exp(-eta)))

    def cell_probabilities(self, data: Comparisons | None = None) -> np.ndarray:
        """Fitted probability that the first-shown item wins, for every cell of ``data``."""
        data = self.data if data is None else data
        eta = self.beta[data.judge] + self.S[data.judge, data.first] - self.S[data.judge, data.second]
        return 1.0 / (1.0 + np.exp(-eta))

    @property
    def n_params(self) -> int:
        """Free parameters: ``(r+1)(K+N-r-2)`` plus K with position bias."""
        return free_parameters(len(self.judges), len(self.items), self.rank, self.position_bias)

    @cached_property
    def wald(self):
        """Wald inference at this fit (:class:`~hja_bayes.inference.WaldInference`, computed once).

        Raises a clear error when the Fisher information is singular or the comparison graph
        is disconnected.
        """
        from .inference import wald_inference

        return wald_inference(self.data, self.S, self.beta, self.rank,
                              position_bias=self.position_bias)

    def intervals(self, level: float = 0.95) -> pd.DataFrame:
        """Wald intervals for mu, gamma, beta (with position bias) and every mu_i - mu_j.

        Columns: quantity, label, estimate, se, lower, upper.
        """
        return self.wald.intervals(level)

    def contrast(self, q: Callable, level: float = 0.95):
        """Wald interval of any differentiable ``q(S, beta)`` (delta method); see
        :meth:`~hja_bayes.inference.WaldInference.contrast`."""
        return self.wald.contrast(q, level)

    def leverage(self):
        """Judge leverage diagnostics (:func:`~hja_bayes.diagnostics.judge_leverage`)."""
        from .diagnostics import judge_leverage

        return judge_leverage(self.gamma, self.mu, self.U, self.V)

    def save(self, path, idata=None):
        """Write the fit (and optionally its posterior) to the folder ``path``.

        See :func:`hja_bayes.io.save_fit` for the format (JSON + .npz, no pickle); read it
        back with :func:`hja_bayes.load_fit`.

        Returns
        -------
        pathlib.Path
            The folder.
        """
        from .io import save_fit

        return save_fit(self, path, idata=idata)

    def summary(self) -> str:
        """A short text summary of the fit."""
        lines = [
            f"HJA fit: rank {self.rank}, {len(self.judges)} judges, {len(self.items)} items, "
            f"position bias {'on' if self.position_bias else 'off'}",
            f"NLL {self.nll:.3f}, BIC {self.bic:.3f}, {self.n_iter} iterations, "
            f"{'converged' if self.converged else 'NOT converged'}",
        ]
        if self.data.one_orientation_only:
            lines.append(
                "note: every pair is shown in one orientation only, so position bias and "
                "structured disagreement cannot be told apart"
            )
        order = np.argsort(-self.mu)
        lines.append("consensus: " + " > ".join(self.items[i] for i in order))
        return "\n".join(lines)


# --------------------------------------------------------------------------- helpers
def _initial_blocks(data, r, position_bias, S0=None):
    K = data.n_judges
    if S0 is None:
        S0 = fit_per_judge_btl(data, ridge=INIT_RIDGE)
    d = canonicalize(S0, r)
    if position_bias:
        first = np.bincount(data.judge, data.first_wins + 0.5 * data.ties, K)
        beta = np.log((first + 0.5) / (data.comparisons_per_judge() - first + 0.5))
    else:
        beta = np.zeros(K)
    B = jnp.column_stack([d.gamma, d.U, jnp.asarray(beta)])
    T = jnp.column_stack([d.mu, d.V])
    return B, T


def _bic(nll, r, K, N, n):
    return 2.0 * nll + r * (K + N - r - 3) * math.log(n)


def _separated_judges(data: Comparisons) -> list[str]:
    """Judges whose verdicts all agree with one ordering (MLE at infinity)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    out = []
    for k in range(data.n_judges):
        m = data.judge == k
        if data.ties[m].sum() > 0:
            continue
        a = np.concatenate([data.first[m], data.second[m]])
        b = np.concatenate([data.second[m], data.first[m]])
        won = np.concatenate([data.first_wins[m], data.second_wins[m]]) > 0
        # a beat b at least once: edge a -> b; separated iff this digraph is acyclic
        g = coo_matrix((np.ones(won.sum()), (a[won], b[won])), shape=(data.n_items,) * 2)
        n_strong, _ = connected_components(g, directed=True, connection="strong")
        if n_strong == data.n_items:
            out.append(data.judges[k])
    return out


def _validate(data: Comparisons, position_bias: bool):
    if not isinstance(data, Comparisons):
        raise TypeError(f"expected Comparisons, got {type(data).__name__}")
    data.check_connected()
    if position_bias and not data.order_known:
        raise IdentifiabilityError(
            "position bias needs the presentation order, but these comparisons were folded"
        )
    sep = _separated_judges(data)
    if sep:
        warnings.warn(
            f"judge(s) {sep}: every verdict agrees with one ordering (perfect separation), so "
            "their maximum-likelihood scores are infinite; the ridge keeps them finite, "
            "so read their sensitivity as 'very large'",
            DataWarning,
            stacklevel=3,
        )


def _fit_rank(data, cells, r, *, position_bias, tau, ridge, tol, max_iter, reanchor, S0=None,
              warn=True, progress=None):
    B, T = _initial_blocks(data, r, position_bias, S0)
    B, T, n_iter, converged, tau_final = _solve(
        B, T, cells, r, position_bias=position_bias, tau=tau, ridge=ridge, tol=tol,
        max_iter=max_iter, reanchor=reanchor, progress=progress,
    )
    if warn and not converged:
        warnings.warn(
            f"HJA rank {r}: no convergence after {n_iter} iterations (relative change of the "
            f"objective still above tol={tol:g}); estimates may be inaccurate",
            ConvergenceWarning,
            stacklevel=3,
        )
    return B, T, n_iter, converged, tau_final


def _make_fit(data, B, T, r, position_bias, n_iter, converged, tau, ridge, rank_table=None):
    S, beta = _unpack(B, T, r)
    d = canonicalize(S, r)
    S = np.asarray(jnp.outer(d.gamma, d.mu) + d.U @ d.V.T)
    beta = np.asarray(beta)
    nll = float(negative_log_likelihood(jnp.asarray(S), jnp.asarray(beta), cells_of(data)))
    return HJAFit(
        gamma=np.asarray(d.gamma), mu=np.asarray(d.mu), U=np.asarray(d.U), V=np.asarray(d.V),
        D=np.asarray(d.D), S=S, beta=beta, rank=r, position_bias=position_bias, nll=nll,
        bic=_bic(nll, r, data.n_judges, data.n_items, data.n_comparisons), n_iter=n_iter,
        converged=converged, judges=data.judges, items=data.items, data=data, tau=tau,
        ridge=ridge, rank_table=rank_table,
    )


def split_comparisons(data: Comparisons, n_folds: int, seed: int | np.random.Generator = 0,
                      pad: bool = False):
    """Randomly assign every single comparison to one of ``n_folds`` folds.

    Works on the aggregated cells: each cell's first-wins, second-wins and ties are split by
    multinomial draws, which is the same as assigning each comparison to a fold uniformly
    at random.

    Returns
    -------
    list of Cells
        ``n_folds`` cell sets laid out like ``cells_of(data, pad)`` (a cell may hold 0).
    """
    rng = np.random.default_rng(seed)
    probs = np.full(n_folds, 1.0 / n_folds)
    parts = [rng.multinomial(np.rint(x).astype(np.int64), probs)
             for x in (data.first_wins, data.second_wins, data.ties)]
    layout = cells_of(data, pad=pad)
    extra = len(layout.n) - data.n_cells
    folds = []
    for f in range(n_folds):
        fw, sw, t = (np.concatenate([p[:, f], np.zeros(extra, np.int64)]).astype(float) for p in parts)
        folds.append(layout._replace(n=jnp.asarray(fw + sw + t), wins=jnp.asarray(fw + t / 2)))
    return folds


def _minus(cells: Cells, other: Cells) -> Cells:
    return cells._replace(n=cells.n - other.n, wins=cells.wins - other.wins)


def _rank_search(data, ranks, *, position_bias, cv_folds, seed, tau, ridge, tol, max_iter, cv):
    """Criteria table and the full-data solution ``(B, T, n_iter, converged, tau)`` per rank."""
    top = _max_rank(data.n_judges, data.n_items)
    ranks = list(range(0, min(top, 4) + 1)) if ranks is None else [check_rank(r, data.n_judges, data.n_items) for r in ranks]
    cells = cells_of(data, pad=True)
    S0 = fit_per_judge_btl(data, ridge=INIT_RIDGE)
    folds = split_comparisons(data, cv_folds, seed, pad=True) if cv else []
    rows, solutions = [], {}
    for r in ranks:
        B, T, n_iter, ok, tau_r = _fit_rank(data, cells, r, position_bias=position_bias, tau=tau,
                                        ridge=ridge, tol=tol, max_iter=max_iter, reanchor=True,
                                        S0=S0, warn=False)
        solutions[r] = (B, T, n_iter, ok, tau_r)
        S, beta = _unpack(B, T, r)
        nll = float(negative_log_likelihood(S, beta, cells))
        cv_nll = np.nan
        if cv:
            cv_nll = 0.0
            for test in folds:
                train = _minus(cells, test)
                Bf, Tf, *_ = _solve(B, T, train, r, position_bias=position_bias, tau=tau,
                                    ridge=ridge, tol=tol, max_iter=max_iter, reanchor=True)
                Sf, bf = _unpack(Bf, Tf, r)
                cv_nll += float(negative_log_likelihood(Sf, bf, test))
        K, N = data.n_judges, data.n_items
        rows.append(dict(rank=r, nll=nll, n_params=free_parameters(K, N, r, position_bias),
                         bic=_bic(nll, r, K, N, data.n_comparisons), cv_nll=cv_nll,
                         n_iter=n_iter, converged=ok))
    return pd.DataFrame(rows), solutions


def rank_criteria(data: Comparisons, ranks=None, *, position_bias=False, cv_folds=5, seed=0,
                  tau=30.0, ridge=DEFAULT_RIDGE, tol=1e-10, max_iter=2000, cv=True) -> pd.DataFrame:
    """BIC and K-fold cross-validated held-out NLL for every candidate rank.

    Cross-validation is over single comparisons (see :func:`split_comparisons`); the
    held-out NLL is summed over folds.

    Returns
    -------
    DataFrame with columns rank, nll, n_params, bic, cv_nll (NaN when ``cv=False``),
    n_iter, converged.
    """
    _validate(data, position_bias)
    table, _ = _rank_search(data, ranks, position_bias=position_bias, cv_folds=cv_folds,
                            seed=seed, tau=tau, ridge=ridge, tol=tol, max_iter=max_iter, cv=cv)
    return table


def fit_hja(
    data: Comparisons,
    rank: int | Literal["bic", "cv"] = 1,
    *,
    position_bias: bool = False,
    tau: float = 30.0,
    ridge: float = DEFAULT_RIDGE,
    tol: float = 1e-10,
    max_iter: int = 2000,
    max_rank: int | None = None,
    cv_folds: int = 5,
    seed: int = 0,
    reanchor: bool = True,
    progress: bool = False,
) -> HJAFit:
    """Fit the HJA model by the anchored proximal alternating algorithm with ReAnchor.

    Parameters
    ----------
    data : Comparisons
    rank : int, "bic" or "cv"
        Disagreement rank r (0 is JA-Ranking, ``S = gamma mu^T``), or a rule to choose it
        among 0..``max_rank``: BIC, or ``cv_folds``-fold cross-validation over single
        comparisons (held-out NLL).
    position_bias : bool
        Add a per-judge logit bonus ``beta_k`` for the first-shown item (needs order).
    tau : float
        Proximal weight of the block steps (default 30, the paper's).
    ridge : float
        Penalty ``ridge/2 (|S|_F^2 + |beta|^2)`` keeping estimates finite under perfect
        separation (default 1e-6: negligible otherwise).
    tol : float
        Stop when the relative change of the objective falls below ``tol``.
    max_iter : int
        Most outer iterations; if reached, a ConvergenceWarning and ``converged=False``.
    max_rank : int, optional
        Largest candidate rank for "bic"/"cv" (default min(identifiable maximum, 4)).
    cv_folds, seed : int
        Cross-validation folds and their random seed.
    reanchor : bool
        Apply ReAnchor after every iteration (turn off only for ablations).
    progress : bool
        Print the objective every 25 iterations.

    Returns
    -------
    HJAFit

    Raises
    ------
    IdentifiabilityError
        Rank not identifiable (r + 1 > min(K, N - 1): the message states the maximum); no
        consensus (|mu| = 0); position bias requested on folded data.
    DisconnectedGraphError
        The pooled comparison graph is disconnected.
    """
    _validate(data, position_bias)
    K, N = data.n_judges, data.n_items
    printer = (lambda it, f: print(f"  iteration {it}: objective {f:.6f}", flush=True)
               if it % 25 == 0 else None) if progress else None
    table = None
    if isinstance(rank, str):
        if rank not in ("bic", "cv"):
            raise IdentifiabilityError(f"rank must be an integer, 'bic' or 'cv', got {rank!r}")
        top = min(_max_rank(K, N), 4) if max_rank is None else check_rank(max_rank, K, N)
        table, solutions = _rank_search(
            data, range(top + 1), position_bias=position_bias, cv_folds=cv_folds, seed=seed,
            tau=tau, ridge=ridge, tol=tol, max_iter=max_iter, cv=rank == "cv")
        column = "bic" if rank == "bic" else "cv_nll"
        r = int(table["rank"][table[column].idxmin()])
    else:
        r = check_rank(rank, K, N)
    if table is not None and reanchor:  # the search already fitted the chosen rank
        B, T, n_iter, converged, tau_final = solutions[r]
        if not converged:
            warnings.warn(f"HJA rank {r}: no convergence after {n_iter} iterations",
                          ConvergenceWarning, stacklevel=2)
    else:
        B, T, n_iter, converged, tau_final = _fit_rank(
            data, cells_of(data, pad=True), r, position_bias=position_bias, tau=tau,
            ridge=ridge, tol=tol, max_iter=max_iter, reanchor=reanchor, progress=printer,
        )
    return _make_fit(data, B, T, r, position_bias, n_iter, converged, tau_final, ridge, table)



def fit_btl_svd(data: Comparisons, rank: int = 1, *, ridge: float = 1e-3) -> HJAFit:
    """Baseline "BTL+SVD": per-judge Bradley–Terry, then the canonical rank-r truncation.

    Returns an :class:`HJAFit` (``n_iter = 0``) so it can be compared like for like.
    """
    data.check_connected()
    r = check_rank(rank, data.n_judges, data.n_items)
    S0 = fit_per_judge_btl(data, ridge=ridge)
    d = canonicalize(S0, r)
    B = jnp.column_stack([d.gamma, d.U, jnp.zeros(data.n_judges)])
    T = jnp.column_stack([d.mu, d.V])
    return _make_fit(data, B, T, r, False, 0, True, 0.0, ridge)
