"""Pure kernels of the anchored proximal alternating algorithm (HJA paper, Algorithm 1).

With one block fixed the linear predictors are linear in the other, so each block step is a
convex penalised regression with linear (centring) constraints:

    judge step   min_{B, a}  F(B, T, a, theta) + tau/2 (|B - B_t|^2 + |a - a_t|^2)
                             s.t. sum(gamma) = K, 1^T U = 0
    global step  min_theta   F(B, T, a, theta) + tau/2 |theta - theta_t|^2
    item step    min_T       F(B, T, a, theta) + tau/2 |T - T_t|^2   s.t. 1^T mu = 0, 1^T V = 0

with ``F = NLL + ridge/2 (|S|_F^2 + |a|^2) + 1/2 sum_q rho_q |Z_q|^2 + 1/2 sum_g rho_g theta_g^2``
(each term's ridge ``rho``, by default the fit's), ``B = [gamma | U | Z]`` with ``Z`` the
per-judge coefficients of the linear terms (position bias, self-preference, per-judge
style), ``a`` the outcome model's per-judge parameters (``log nu_k`` for Davidson ties) and
``theta`` the panel-wide coefficients (shared style; the global step runs only when there
are any).  Per-judge quantities belong to the judge block: the outcome models'
log-likelihood is jointly concave in (eta, a), so the judge step stays convex and its
Hessian block diagonal over judges.  An ``a`` held at its boundary (``-inf``) and a
coefficient a judge does not have (``cells.free`` 0) are not stepped.
The paper solves each block with L-BFGS; here each block step is one damped Newton step on
the exact block objective (the block Hessian is small and known in closed form from the
information of the linear predictor), which decreases the block objective monotonically;
the outer loop iterates to the joint optimum.  After each round of block steps, ReAnchor
maps (B, T) back to the canonical coordinates
(:func:`~hja_bayes.decomposition.canonical_decomposition`), which leaves S (and Z, a,
theta) unchanged.

The rank is data: the blocks carry a static *width* of disagreement columns
(:func:`~hja_bayes.hja.state.width`) and ``rank <= width`` of them are active; the others are
held at zero (not stepped, zeroed by ReAnchor).  So one compiled step serves every rank of
a search, and a fit at a fixed rank uses width = rank.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..decomposition import canonical_decomposition, check_score_matrix
from ..errors import ParameterError
from ..jitting import light_jit
from ..likelihood import (
    HALF,
    Cells,
    OutcomeModel,
    item_information,
    negative_log_likelihood,
    unit_information,
)
from .state import SolverState, StepInfo, scores, width

__all__ = ["objective", "init", "step", "judge_step", "global_step", "item_step",
           "judge_laplacians", "reanchor", "padded_decomposition", "small_panel", "start_values"]


def _no_aux(B):
    return jnp.zeros((B.shape[0], 0))


def _active(rank, w: int) -> jax.Array:
    """1.0 for the disagreement columns in use, 0.0 for those held at zero."""
    return (jnp.arange(w) < rank).astype(float)


def _penalties(cells: Cells, ridge):
    """The ridges of the per-judge and panel-wide term coefficients (NaN: the fit's)."""
    return (jnp.where(jnp.isnan(cells.penalty), ridge, cells.penalty),
            jnp.where(jnp.isnan(cells.global_penalty), ridge, cells.global_penalty))


def objective(B, T, cells: Cells, ridge, outcome: OutcomeModel = HALF, aux=None, theta=None):
    """Penalised negative log-likelihood (see the module documentation).

    ``aux`` (K x n_aux, log scale) is needed for outcome models with extra parameters;
    entries at ``-inf`` (held at the boundary) are not penalised.  ``theta``: the panel-wide
    coefficients (None without them).
    """
    S, Z = scores(B, T)
    rho, rho_g = _penalties(cells, ridge)
    penalty = ridge * jnp.sum(S**2) + jnp.sum(rho * Z**2)
    if outcome.n_aux:
        penalty = penalty + ridge * jnp.sum(jnp.where(jnp.isfinite(aux), aux, 0.0) ** 2)
    if cells.Xg.shape[-1]:
        penalty = penalty + jnp.sum(rho_g * theta**2)
    nll = negative_log_likelihood(S, Z, cells, outcome=outcome, aux=aux, theta=theta)
    return nll + 0.5 * penalty


def _damped_newton_step(fun, direction, x0, with_value: bool = False):
    """One backtracking Newton step on a convex ``fun``;
    ``direction(x) -> (d, decrement, fun(x))``.  With ``with_value``: ``(x, fun(x))``.

    Backtracking tries t = 1, 1/2, 1/4, ... inside one loop, so ``fun`` appears twice in the
    program (here and in ``direction``'s value and gradient), which keeps its tracing and
    compilation short."""
    d, dec, f = direction(x0)

    def ls_cond(s):
        t, fn = s
        return (fn > f - 1e-4 * t * dec) & (t > 1e-6)

    def ls_body(s):
        t = s[0] * 0.5
        return t, fun(x0 + t * d)

    t, fn = jax.lax.while_loop(ls_cond, ls_body, (2.0, jnp.inf))
    accept = fn <= f
    x = jnp.where(accept, x0 + t * d, x0)
    return (x, jnp.where(accept, fn, f)) if with_value else x


def judge_step(B, T, cells, rank, ridge, tau, outcome=HALF, aux=None, theta=None):
    """Proximal step on the judge block ``[gamma | U | Z | aux]`` under ``sum(gamma) = K,
    1^T U = 0``; returns ``(B, aux)``.

    ``aux`` (K x n_aux) holds the outcome model's per-judge parameters on the log scale;
    entries at ``-inf`` stay there.  Disagreement columns beyond ``rank`` and coefficients
    with ``cells.free`` 0 are not stepped.
    """
    p = width(T) + 1
    K, pq = B.shape
    aux = _no_aux(B) if aux is None else aux
    m = aux.shape[1]
    L = pq + m
    free = jnp.isfinite(aux)
    x_prox = jnp.concatenate([B, jnp.where(free, aux, 0.0)], axis=1)
    mask = jnp.concatenate([jnp.ones((K, 1)),
                            jnp.broadcast_to(_active(rank, p - 1), (K, p - 1)),
                            cells.free, free.astype(float)], axis=1)
    rho, _ = _penalties(cells, ridge)

    def split(x):
        return x[:, :pq], jnp.where(free, x[:, pq:], -jnp.inf)

    def fun(x):
        Bx, ax = split(x)
        return objective(Bx, T, cells, ridge, outcome, ax, theta) \
            + 0.5 * tau * jnp.sum((x - x_prox) ** 2)

    def direction(x):
        f, g = jax.value_and_grad(fun)(x)
        g = g * mask
        Bx, ax = split(x)
        S_, Z_ = scores(Bx, T)
        # judge k's information from its own units: eta moves by D_u . dx_k, with the local
        # design D_u = [T_i - T_j, X_u] and the outcome parameters on their own channel
        info = unit_information(S_, Z_, cells, outcome=outcome, aux=ax, theta=theta)
        D = jnp.concatenate([T[cells.first] - T[cells.second], cells.X], axis=1)
        w = info[:, 0, 0]
        # the upper triangle only: summing every unit's full pq x pq block took twice as long
        a, b = np.triu_indices(pq)
        upper = jax.ops.segment_sum(w[:, None] * D[:, a] * D[:, b], cells.judge, K)
        H = jnp.zeros((K, L, L)).at[:, a, b].set(upper).at[:, b, a].set(upper)
        if m:
            cross = jax.ops.segment_sum(D[:, :, None] * info[:, 0, None, 1:], cells.judge, K)
            H = H.at[:, :pq, pq:].set(cross).at[:, pq:, :pq].set(jnp.swapaxes(cross, 1, 2))
            H = H.at[:, pq:, pq:].set(jax.ops.segment_sum(info[:, 1:, 1:], cells.judge, K)
                                      + ridge * jnp.eye(m))
        H = H.at[:, :p, :p].add(ridge * (T.T @ T))
        H = H.at[:, p:pq, p:pq].add(jnp.diag(rho))
        # coordinates not stepped (inactive columns, coefficients a judge does not have,
        # aux at the boundary): identity
        H = H * mask[:, :, None] * mask[:, None, :] + jax.vmap(jnp.diag)(1.0 - mask)
        H = H + tau * jnp.eye(L)
        # equality constraints on the column sums of gamma and U (coordinates 0..p-1)
        Hinv = jnp.linalg.inv(H)
        E = jnp.eye(L)[:p]
        schur = jnp.einsum("pa,kab->pb", E, Hinv @ E.T)  # sum_k E H_k^-1 E^T
        rhs = jnp.einsum("pa,kab,kb->p", E, Hinv, g)
        lam = -jnp.linalg.solve(schur, rhs)
        d = -jnp.einsum("kab,kb->ka", Hinv, g + lam @ E) * mask
        return d, -jnp.sum(g * d), f

    x = _damped_newton_step(fun, direction, x_prox)
    return split(x)


def global_step(B, T, cells, ridge, tau, outcome=HALF, aux=None, theta=None):
    """Proximal step on the panel-wide coefficients ``theta`` (shared style)."""
    theta_prox = theta
    _, rho_g = _penalties(cells, ridge)

    def fun(th):
        return objective(B, T, cells, ridge, outcome, aux, th) \
            + 0.5 * tau * jnp.sum((th - theta_prox) ** 2)

    def direction(th):
        f, g = jax.value_and_grad(fun)(th)
        S_, Z_ = scores(B, T)
        w = unit_information(S_, Z_, cells, outcome=outcome, aux=aux, theta=th)[:, 0, 0]
        H = (cells.Xg * w[:, None]).T @ cells.Xg + jnp.diag(rho_g) + tau * jnp.eye(len(th))
        d = -jnp.linalg.solve(H, g)
        return d, -g @ d, f

    return _damped_newton_step(fun, direction, theta)


#: Item blocks with more coordinates than this (items x (width + 1)) take their Newton
#: direction by preconditioned conjugate gradients instead of a dense solve.
ITEM_DENSE_MAX = 768
#: Conjugate-gradient tolerance (relative residual) and iteration cap of large item steps.
#: An inexact step still descends (its line search checks), and the proximal steps bring the
#: gradient to zero, where the inexact step is zero too: on four panels of 300 to 1,000
#: models, 1e-3 took the iterations 1e-12 took and ended within 4e-7 of its scores, the
#: leaderboard panel's fit (K = 20, N = 1,000) in 2.8 s instead of 3.7 s.
ITEM_CG_TOL = 1e-3
ITEM_CG_MAXITER = 300


def _centre(X):
    """Project the columns of X onto sums of zero (the item constraints)."""
    return X - X.mean(axis=0, keepdims=True)


def judge_laplacians(w, cells: Cells, K: int, N: int):
    """Every judge's information Laplacian ``L_k = sum_u w_u (e_i - e_j)(e_i - e_j)^T`` over
    its units, as its diagonal (K, N) and the product ``Y (K, N) -> [L_k y_k]_k``, both
    computed from the units: no K x N x N array (160 MB at 20 judges and 1,000 models)."""
    first, second = cells.judge * N + cells.first, cells.judge * N + cells.second
    ends = jnp.concatenate([first, second])
    diagonal = jax.ops.segment_sum(jnp.concatenate([w, w]), ends, K * N).reshape(K, N)

    def times(Y):
        flat = Y.reshape(-1)
        z = w * (flat[first] - flat[second])
        # both ends in one scatter: two chained scatters took three times as long on the CPU
        return jax.ops.segment_sum(jnp.concatenate([z, -z]), ends, K * N).reshape(K, N)

    return diagonal, times


def item_step(B, T, cells, rank, ridge, tau, outcome=HALF, aux=None, theta=None,
              with_value: bool = False):
    """Proximal step on the item block ``[mu | V]`` under ``1^T mu = 0, 1^T V = 0``
    (V columns beyond ``rank`` are not stepped).  With ``with_value``: ``(T, f)``, ``f`` the
    proximal objective there (:func:`objective` plus ``tau/2 |T - T_start|^2``).

    The block Hessian is ``sum_k L_k (x) a_k a_k^T + I (x) (ridge A^T A + tau I)`` with
    ``L_k`` judge k's information Laplacian and ``a_k`` its row of ``[gamma | U]``; it is
    solved on centred columns, densely for small blocks and, above :data:`ITEM_DENSE_MAX`
    coordinates, by conjugate gradients with a block-Jacobi preconditioner and products
    computed from the units (:func:`judge_laplacians`: ``O(units + K N p)`` each, no
    ``K x N x N`` array, instead of ``O((N p)^3)`` for the solve).
    """
    N = T.shape[0]
    p = width(T) + 1
    keep = jnp.concatenate([jnp.ones(1), _active(rank, p - 1)])
    A = B[:, :p]
    T_prox = T
    own = ridge * (A.T @ A) + tau * jnp.eye(p)

    def fun(Tx):
        return objective(B, Tx, cells, ridge, outcome, aux, theta) \
            + 0.5 * tau * jnp.sum((Tx - T_prox) ** 2)

    def direction(Tx):
        f, g = jax.value_and_grad(fun)(Tx)
        g = _centre(g) * keep
        S_, Z_ = scores(B, Tx)
        w = unit_information(S_, Z_, cells, outcome=outcome, aux=aux, theta=theta)[:, 0, 0]
        if N * p <= ITEM_DENSE_MAX:
            SS = item_information(w, cells, B.shape[0], N)
            H = jnp.einsum("kij,kp,kq->ipjq", SS, A, A)
            H = H + jnp.einsum("ij,pq->ipjq", jnp.eye(N), own)
            # P H P + (I - P), with P the centring of the item index
            H = H - H.mean(axis=0, keepdims=True)
            H = H - H.mean(axis=2, keepdims=True)
            M = H.reshape(N * p, N * p) + jnp.kron(jnp.full((N, N), 1.0 / N), jnp.eye(p))
            d = -jnp.linalg.solve(M, g.reshape(-1)).reshape(N, p)
        else:
            degree, laplacian_times = judge_laplacians(w, cells, B.shape[0], N)

            def hessian_times(X):
                Xc = _centre(X)
                HX = laplacian_times(A @ Xc.T).T @ A + Xc @ own
                return _centre(HX) + (X - Xc)

            diagonal = jnp.einsum("ki,kp,kq->ipq", degree, A, A) + own
            inverse = jnp.linalg.inv(diagonal)
            d, _ = jax.scipy.sparse.linalg.cg(
                hessian_times, -g, M=lambda X: jnp.einsum("ipq,iq->ip", inverse, X),
                tol=ITEM_CG_TOL, maxiter=ITEM_CG_MAXITER)
        d = _centre(d) * keep
        return d, -jnp.sum(g * d), f

    return _damped_newton_step(fun, direction, T, with_value)


def padded_decomposition(S, rank, w: int):
    """Canonical coordinates of ``S`` at ``rank`` laid out in ``w >= rank`` columns (the
    columns beyond ``rank`` zero); ``rank`` may be traced."""
    d = canonical_decomposition(S, w)
    on = _active(rank, w)
    return d._replace(U=d.U * on, V=d.V * on, D=d.D * on)


def reanchor(B, T, rank):
    """ReAnchor: canonical coordinates of the same S; returns (B, T, |mu|, sigma_r)."""
    S, Z = scores(B, T)
    w = width(T)
    d = padded_decomposition(S, rank, w)
    B = jnp.column_stack([d.gamma, d.U, Z])
    T = jnp.column_stack([d.mu, d.V])
    if w == 0:
        sigma_r = jnp.inf
    else:
        D_r = d.D[jnp.clip(rank - 1, 0, w - 1)]
        sigma_r = jnp.where(rank > 0, jnp.sqrt(D_r * S.shape[0] * S.shape[1]), jnp.inf)
    return B, T, jnp.linalg.norm(d.mu), sigma_r


def _initial_blocks(S0, Z0, rank, w: int):
    d = padded_decomposition(S0, rank, w)
    return jnp.column_stack([d.gamma, d.U, Z0]), jnp.column_stack([d.mu, d.V])


_initial_blocks_jit = light_jit(_initial_blocks, static_argnames="w")


def init(S0, rank: int, Z0, tau: float, aux0=None, width: int | None = None,
         theta0=None) -> SolverState:
    """Solver state at the canonical rank-``rank`` truncation of a start ``S0``, in blocks of
    ``width >= rank`` disagreement columns (default ``rank``).

    ``Z0`` (K x q): the starting per-judge term coefficients (a (K,) vector is one column);
    ``aux0``: the outcome model's starting per-judge parameters (default none); ``theta0``:
    the starting panel-wide coefficients (default none)."""
    w = rank if width is None else width
    if not rank <= w:
        raise ParameterError(f"the blocks' width {w} must be at least the rank {rank}")
    S0 = check_score_matrix(S0, rank)
    K = S0.shape[0]
    Z0 = np.asarray(Z0, dtype=float).reshape(K, -1)
    B, T = _initial_blocks_jit(S0, Z0, rank, w)
    aux = np.zeros((K, 0)) if aux0 is None else np.asarray(aux0, dtype=float).reshape(K, -1)
    theta = np.zeros(0) if theta0 is None else np.asarray(theta0, dtype=float).ravel()
    return SolverState(B, T, float(tau), aux, theta)


def _outer_step(B, T, aux, theta, cells, tau, ridge, rank, reanchored, outcome):
    B, aux = judge_step(B, T, cells, rank, ridge, tau, outcome, aux, theta)
    if cells.Xg.shape[-1]:
        theta = global_step(B, T, cells, ridge, tau, outcome, aux, theta)
    T_start = T
    T, f = item_step(B, T, cells, rank, ridge, tau, outcome, aux, theta, with_value=True)
    # the objective at the new point: the item step's last value without its proximal term
    # (ReAnchor changes the coordinates, not S, Z, aux or theta): one pass over the units less
    f = f - 0.5 * tau * jnp.sum((T - T_start) ** 2)
    if reanchored:
        B, T, mu_norm, sigma_r = reanchor(B, T, rank)
        # a ReAnchor that failed (NaN coordinates) must fail the step as a NaN objective does
        f = jnp.where(jnp.all(jnp.isfinite(B)) & jnp.all(jnp.isfinite(T)), f, jnp.nan)
    else:
        mu_norm, sigma_r = jnp.linalg.norm(T[:, 0]), jnp.inf
    return B, T, aux, theta, f, mu_norm, sigma_r


_STATIC = ("reanchored", "outcome")
#: Panels with at most this many (padded units) x (items) compile their step (and their
#: chunks of steps) with :func:`~hja_bayes.jitting.light_jit`'s options: most of a first
#: small fit's time is compilation.
LIGHT_SIZE = 2**16
#: For a fit that compiles for one fit (``quick_compile``, the command line), panels up to
#: this size count as small: fresh processes fitting Chatbot Arena with four style features
#: (12,288 padded units x 20 models) or a simulated 20 x 20 panel of 400,000 verdicts took
#: 1.4 and 1.2 s for their first fit instead of 1.9 and 1.7 s; the steps run three times
#: slower, which a second fit would pay (0.49 s against 0.17 s on Arena).
QUICK_SIZE = 2**19
_outer_step_jit = light_jit(_outer_step, static_argnames=_STATIC)


def small_panel(cells: Cells, T, quick: bool = False) -> bool:
    """Whether a panel is small (:data:`LIGHT_SIZE`, or :data:`QUICK_SIZE` for a ``quick``
    fit): its programs compile with :func:`~hja_bayes.jitting.light_jit`'s options, and its
    steps are quick enough that the driver runs them in chunks on the device."""
    return cells.judge.shape[0] * T.shape[0] <= (QUICK_SIZE if quick else LIGHT_SIZE)


def start_values(state: SolverState, cells: Cells):
    """The state's outcome parameters and panel-wide coefficients (empty when None)."""
    aux = _no_aux(state.B) if state.aux is None else state.aux
    theta = jnp.zeros(cells.Xg.shape[-1]) if state.theta is None else state.theta
    return aux, theta


def step(state: SolverState, cells: Cells, *, rank: int, ridge: float,
         reanchored: bool = True, outcome: OutcomeModel = HALF) -> tuple[SolverState, StepInfo]:
    """One outer iteration: judge step (with the outcome parameters), global step (panel-wide
    coefficients, if any), item step, ReAnchor (tau is left to the driver).  ``rank`` is
    data: any rank up to the blocks' width runs the same compiled program."""
    aux, theta = start_values(state, cells)
    run = _outer_step_jit if small_panel(cells, state.T) else _outer_step_jit.plain
    B, T, aux, theta, f, mu_norm, sigma_r = run(state.B, state.T, aux, theta, cells, state.tau,
                                                ridge, rank, reanchored, outcome)
    return SolverState(B, T, state.tau, aux, theta), StepInfo(f, mu_norm, sigma_r)
