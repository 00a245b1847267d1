"""Information in the chart: the expected Fisher information and the sandwich "meat".

With ``G_c`` the derivative of cell c's linear predictor in the chart coordinates and ``u`` the
outcome model's score in ``eta``:

* ``fisher``     ``I = sum_c w_c G_c G_c^T``  (``w_c`` the outcome model's information weight)
* ``sandwich``   ``M = sum over single comparisons u^2 G G^T`` (each comparison its own unit)
* ``cluster``    ``M = G/(G-1) sum_g s_g s_g^T``, ``s_g = sum over cluster g's comparisons u G``

and the covariance of the chart coordinates is ``I^-1`` (fisher) or ``I^-1 M I^-1``.  The
names follow statsmodels' ``cov_type``.

An outcome model with per-judge extra parameters (Davidson's ``log nu_k``) adds one chart
coordinate per estimated parameter (those held at their boundary, ``-inf``, add none): its
information and cross information with ``eta`` come from the outcome model, and a
comparison's score gains the outcome model's ``aux_score`` along that coordinate.  The full
chart basis is then in (vec S, beta, aux) coordinates, ``K N + K + K n_aux`` rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..comparisons import Comparisons
from ..errors import ParameterError
from ..likelihood import HALF, Cells, aux_blocks, fisher_blocks

__all__ = ["COV_TYPES", "chart_information", "default_cov_type", "free_aux", "score_covariance"]

#: The covariance estimators of the Wald intervals.
COV_TYPES = ("fisher", "sandwich", "cluster")

_fisher_blocks = jax.jit(fisher_blocks, static_argnames=("outcome",))
_aux_blocks = jax.jit(aux_blocks, static_argnames=("outcome",))
_CHUNK = 16_384


def free_aux(log_aux) -> np.ndarray:
    """Flat indices ``k * n_aux + a`` of the estimated extra parameters (finite log values),
    in the order of their chart coordinates."""
    return np.flatnonzero(np.isfinite(np.asarray(log_aux, dtype=float)).ravel())


def default_cov_type(data: Comparisons) -> str:
    """``"cluster"`` when the data know their clusters (prompts), else ``"fisher"``."""
    return "fisher" if data.clusters is None else "cluster"


def chart_information(S, beta, cells, basis: np.ndarray, position_bias: bool, *,
                      outcome=HALF, log_aux=None) -> np.ndarray:
    """Expected Fisher information in the chart spanned by ``basis`` (plus beta and the
    outcome model's estimated extra parameters).

    ``I = B^T F B`` where F is the information of (vec S, beta) over the cells (a judge-block
    matrix, see :func:`hja_bayes.likelihood.fisher_blocks`) and B is ``basis`` (K N x d),
    extended by the K beta coordinates when ``position_bias`` is true.  The block structure is
    used: nothing of size (K N)^2 is formed.

    Parameters
    ----------
    S : array (K, N)
    beta : array (K,)
    cells : hja_bayes.likelihood.Cells
    basis : ndarray (K * N, d)
        From :func:`~hja_bayes.inference.tangent_basis`.
    position_bias : bool
        Whether beta is a free parameter.
    outcome : OutcomeModel
    log_aux : array (K, n_aux), optional
        The outcome model's per-judge parameters on the log scale (``-inf``: held at the
        boundary, no coordinate).

    Returns
    -------
    ndarray
        Chart coordinates first, then beta_1..beta_K (with position bias), then the
        estimated extra parameters in the order of :func:`free_aux`.
    """
    S = jnp.asarray(S)
    K, N = S.shape
    aux = None if not outcome.n_aux else jnp.asarray(log_aux, dtype=float)
    SS, Sb, bb = (np.asarray(x) for x in _fisher_blocks(S, jnp.asarray(beta), cells,
                                                       outcome=outcome, aux=aux))
    basis = np.asarray(basis)
    Bk = basis.reshape(K, N, -1)
    FB = np.matmul(SS, Bk)  # judge by judge: F is block diagonal in S
    info = basis.T @ FB.reshape(K * N, -1)
    info = (info + info.T) / 2
    if position_bias:
        cross = np.einsum("kia,ki->ak", Bk, Sb)
        info = np.block([[info, cross], [cross.T, np.diag(bb)]])
    if not outcome.n_aux:
        return info
    free = free_aux(log_aux)
    if free.size == 0:
        return info
    m = outcome.n_aux
    Sa, ba, aa = (np.asarray(x) for x in _aux_blocks(S, jnp.asarray(beta), cells,
                                                    outcome=outcome, aux=aux))
    k, a = free // m, free % m
    cross = [np.einsum("kid,ki->dk", Bk[k], Sa[k, :, a])]  # chart S x aux
    if position_bias:
        cb = np.zeros((K, free.size))
        cb[k, np.arange(free.size)] = ba[k, a]
        cross.append(cb)
    cross = np.vstack(cross)
    same_judge = k[:, None] == k[None, :]
    block = np.where(same_judge, aa[k[:, None], a[:, None], a[None, :]], 0.0)
    return np.block([[info, cross], [cross.T, (block + block.T) / 2]])


def _cell_gradients(data: Comparisons, basis: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Derivative of the linear predictor of ``cells`` in the chart: rows of (len, d).

    ``basis`` is the full chart basis in (vec S, beta[, aux]) coordinates, (K N + K [+ K m], d).
    """
    K, N = data.n_judges, data.n_items
    k, i, j = data.judge[cells], data.first[cells], data.second[cells]
    return basis[k * N + i] - basis[k * N + j] + basis[K * N + k]


def _aux_gradients(data: Comparisons, basis: np.ndarray, cells: np.ndarray, m: int) -> list:
    """Derivative of the judge's extra parameter ``a`` in the chart, for each a < m."""
    K, N = data.n_judges, data.n_items
    k = data.judge[cells]
    return [basis[K * N + K + k * m + a] for a in range(m)]


def _comparison_scores(data, basis, rows, u_eta, u_aux, m):
    """Score vectors in the chart of comparisons in ``rows`` (cells), given their eta and
    aux scores ``u_eta`` (len,) and ``u_aux`` (len, m)."""
    out = u_eta[:, None] * _cell_gradients(data, basis, rows)
    for a, Ga in enumerate(_aux_gradients(data, basis, rows, m)):
        out = out + u_aux[:, a, None] * Ga
    return out


def _counts(first_wins, ties, second_wins, like) -> Cells:
    """Cells of plain NumPy counts (indices unused by the outcome model)."""
    zeros = np.zeros(len(like), dtype=np.int64)
    return Cells(zeros, zeros, zeros, first_wins, ties, second_wins)


def score_covariance(data: Comparisons, S, beta, basis: np.ndarray, cov_type: str,
                     outcome=HALF, log_aux=None) -> np.ndarray:
    """The "meat" ``M`` of the sandwich covariance ``I^-1 M I^-1`` in the chart.

    Parameters
    ----------
    data : Comparisons
        The fitted data; ``cov_type="cluster"`` needs ``data.clusters``.
    S, beta : arrays (K, N), (K,)
        The fitted scores and position biases.
    basis : ndarray (K N + K + K n_aux, d)
        Full chart basis in (vec S, beta, aux) coordinates.
    cov_type : {"sandwich", "cluster"}
    outcome : OutcomeModel
    log_aux : array (K, n_aux), optional
        The outcome model's per-judge parameters on the log scale.

    Returns
    -------
    ndarray (d, d)
        With the small-sample factor G/(G-1) for clusters.

    Raises
    ------
    ParameterError
        For ``"cluster"`` on data without clusters, or fewer than two clusters.
    """
    S, beta = np.asarray(S, dtype=float), np.asarray(beta, dtype=float)
    eta = beta[data.judge] + S[data.judge, data.first] - S[data.judge, data.second]
    m = outcome.n_aux
    aux = np.asarray(log_aux, dtype=float)[data.judge] if m else None
    d = basis.shape[1]
    meat = np.zeros((d, d))
    if cov_type == "sandwich":
        # each comparison its own unit: sum over outcomes of count x (single-comparison score)^2
        one, zero = np.ones(data.n_cells), np.zeros(data.n_cells)
        for count, unit in zip((data.first_wins, data.ties, data.second_wins),
                               ((one, zero, zero), (zero, one, zero), (zero, zero, one))):
            u_eta = outcome.score(eta, aux, _counts(*unit, eta))
            u_aux = outcome.aux_score(eta, aux, _counts(*unit, eta))
            for start in range(0, data.n_cells, _CHUNK):
                rows = np.arange(start, min(start + _CHUNK, data.n_cells))
                sc = _comparison_scores(data, basis, rows, u_eta[rows], u_aux[rows], m)
                meat += sc.T @ (count[rows, None] * sc)
        return (meat + meat.T) / 2
    if cov_type != "cluster":
        raise ParameterError(f"cov_type must be one of {list(COV_TYPES)}, got {cov_type!r}")
    c = data.clusters
    if c is None:
        raise ParameterError(
            "cov_type='cluster' needs clusters: read the data with cluster=<column> (e.g. "
            "'question_id'), or use cov_type='sandwich' or 'fisher'")
    G = c.n_clusters
    if G < 2:
        raise ParameterError("cluster-robust intervals need at least two clusters")
    from scipy import sparse

    counts = _counts(c.first_wins, c.ties, c.second_wins, c.cell)
    aux_c = None if aux is None else aux[c.cell]
    u = outcome.score(eta[c.cell], aux_c, counts)
    u_aux = outcome.aux_score(eta[c.cell], aux_c, counts)
    s = np.zeros((G, d))
    for start in range(0, len(c.cell), _CHUNK):
        rows = np.arange(start, min(start + _CHUNK, len(c.cell)))
        A = sparse.csr_matrix((np.ones(len(rows)), (c.cluster[rows], np.arange(len(rows)))),
                              shape=(G, len(rows)))
        s += A @ _comparison_scores(data, basis, c.cell[rows], u[rows], u_aux[rows], m)
    meat = s.T @ s * (G / (G - 1))
    return (meat + meat.T) / 2
