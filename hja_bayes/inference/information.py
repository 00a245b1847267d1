"""Information in the chart: the expected Fisher information and the sandwich "meat".

With ``G_c`` the derivative of cell c's linear predictor in the chart coordinates and ``u`` the
outcome model's score in ``eta``:

* ``fisher``     ``I = sum_c w_c G_c G_c^T``  (``w_c`` the outcome model's information weight)
* ``sandwich``   ``M = sum over single comparisons u^2 G G^T`` (each comparison its own unit)
* ``cluster``    ``M = G/(G-1) sum_g s_g s_g^T``, ``s_g = sum over cluster g's comparisons u G``

and the covariance of the chart coordinates is ``I^-1`` (fisher) or ``I^-1 M I^-1``.  The
names follow statsmodels' ``cov_type``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..comparisons import Comparisons
from ..errors import ParameterError
from ..likelihood import Cells, fisher_blocks
from ..likelihood.half import HALF

__all__ = ["COV_TYPES", "chart_information", "default_cov_type", "score_covariance"]

#: The covariance estimators of the Wald intervals.
COV_TYPES = ("fisher", "sandwich", "cluster")

_fisher_blocks = jax.jit(fisher_blocks)
_CHUNK = 16_384


def default_cov_type(data: Comparisons) -> str:
    """``"cluster"`` when the data know their clusters (prompts), else ``"fisher"``."""
    return "fisher" if data.clusters is None else "cluster"


def chart_information(S, beta, cells, basis: np.ndarray, position_bias: bool) -> np.ndarray:
    """Expected Fisher information in the chart spanned by ``basis`` (plus beta).

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

    Returns
    -------
    ndarray (d, d) or (d + K, d + K)
        Chart coordinates first, then beta_1..beta_K.
    """
    S = jnp.asarray(S)
    K, N = S.shape
    SS, Sb, bb = (np.asarray(x) for x in _fisher_blocks(S, jnp.asarray(beta), cells))
    basis = np.asarray(basis)
    Bk = basis.reshape(K, N, -1)
    FB = np.matmul(SS, Bk)  # judge by judge: F is block diagonal in S
    info = basis.T @ FB.reshape(K * N, -1)
    info = (info + info.T) / 2
    if not position_bias:
        return info
    cross = np.einsum("kia,ki->ak", Bk, Sb)
    return np.block([[info, cross], [cross.T, np.diag(bb)]])


def _cell_gradients(data: Comparisons, basis: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Derivative of the linear predictor of ``cells`` in the chart: rows of (len, d).

    ``basis`` is the full chart basis in (vec S, beta) coordinates, (K N + K, d).
    """
    K, N = data.n_judges, data.n_items
    k, i, j = data.judge[cells], data.first[cells], data.second[cells]
    return basis[k * N + i] - basis[k * N + j] + basis[K * N + k]


def _counts(first_wins, ties, second_wins, like) -> Cells:
    """Cells of plain NumPy counts (indices unused by the outcome model)."""
    zeros = np.zeros(len(like), dtype=np.int64)
    return Cells(zeros, zeros, zeros, first_wins, ties, second_wins)


def score_covariance(data: Comparisons, S, beta, basis: np.ndarray, cov_type: str,
                     outcome=HALF) -> np.ndarray:
    """The "meat" ``M`` of the sandwich covariance ``I^-1 M I^-1`` in the chart.

    Parameters
    ----------
    data : Comparisons
        The fitted data; ``cov_type="cluster"`` needs ``data.clusters``.
    S, beta : arrays (K, N), (K,)
        The fitted scores and position biases.
    basis : ndarray (K N + K, d)
        Full chart basis in (vec S, beta) coordinates.
    cov_type : {"sandwich", "cluster"}
    outcome : OutcomeModel

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
    d = basis.shape[1]
    meat = np.zeros((d, d))
    if cov_type == "sandwich":
        # each comparison its own unit: sum over outcomes of count x (single-comparison score)^2
        one, zero = np.ones(data.n_cells), np.zeros(data.n_cells)
        unit_scores = [outcome.score(eta, None, _counts(*c, eta))
                       for c in ((one, zero, zero), (zero, one, zero), (zero, zero, one))]
        v = sum(count * u**2 for count, u in zip(
            (data.first_wins, data.ties, data.second_wins), unit_scores))
        for start in range(0, data.n_cells, _CHUNK):
            rows = np.arange(start, min(start + _CHUNK, data.n_cells))
            Gc = _cell_gradients(data, basis, rows)
            meat += Gc.T @ (v[rows, None] * Gc)
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

    u = outcome.score(eta[c.cell], None, _counts(c.first_wins, c.ties, c.second_wins, c.cell))
    s = np.zeros((G, d))
    for start in range(0, len(c.cell), _CHUNK):
        rows = np.arange(start, min(start + _CHUNK, len(c.cell)))
        A = sparse.csr_matrix((u[rows], (c.cluster[rows], np.arange(len(rows)))),
                              shape=(G, len(rows)))
        s += A @ _cell_gradients(data, basis, c.cell[rows])
    meat = s.T @ s * (G / (G - 1))
    return (meat + meat.T) / 2
