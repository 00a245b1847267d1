"""Information in the chart: the expected Fisher information and the sandwich "meat".

With ``g_c`` the derivative of cell c's linear predictor in the chart coordinates and ``u`` the
outcome model's score in ``eta``:

* ``fisher``     ``I = sum_c w_c g_c g_c^T``  (``w_c`` the outcome model's information weight)
* ``sandwich``   ``M = sum over single comparisons u^2 g g^T`` (each comparison its own unit)
* ``cluster``    ``M = G/(G-1) sum_g s_g s_g^T``, ``s_g = sum over cluster g's comparisons u g``

and the covariance of the chart coordinates is ``I^-1`` (fisher) or ``I^-1 M I^-1``.  The
names follow statsmodels' ``cov_type``.

An outcome model with per-judge extra parameters (Davidson's ``log nu_k``) adds one chart
coordinate per estimated parameter (those held at their boundary, ``-inf``, add none): its
information and cross information with ``eta`` come from the outcome model, and a
comparison's score gains the outcome model's ``aux_score`` along that coordinate.

Everything is assembled in the factor coordinates of :class:`~hja_bayes.inference.chart.FactorChart`
from per-cell weights: a cell touches its judge's few coordinates and two items' rows, so
the cost is O(cells) plus one dense (dim x dim) matrix, dim = N m + K (m + 1 + n_aux); no
(cells x dim) or (K N x dim) array is formed.  The cluster scores are a sparse
(clusters x dim) matrix.
"""

from __future__ import annotations

import numpy as np

from ..comparisons import Comparisons
from ..errors import ParameterError
from ..likelihood import HALF, Cells
from .chart import FactorChart

__all__ = ["COV_TYPES", "chart_information", "default_cov_type", "free_aux", "score_covariance"]

#: The covariance estimators of the Wald intervals.
COV_TYPES = ("fisher", "sandwich", "cluster")

#: Cluster scores are multiplied densely when clusters x dim stays below this many numbers.
_DENSE_SCORES = 2 ** 25
_CHUNK = 1 << 18


def free_aux(log_aux) -> np.ndarray:
    """Flat indices ``k * n_aux + a`` of the estimated extra parameters (finite log values),
    in the order of their chart coordinates."""
    return np.flatnonzero(np.isfinite(np.asarray(log_aux, dtype=float)).ravel())


def default_cov_type(data: Comparisons) -> str:
    """``"cluster"`` when the data know their clusters (prompts), else ``"fisher"``."""
    return "fisher" if data.clusters is None else "cluster"


def _counts(first_wins, ties, second_wins) -> Cells:
    """Cells of plain NumPy counts (indices unused by the outcome model)."""
    zeros = np.zeros(len(first_wins), dtype=np.int64)
    return Cells(zeros, zeros, zeros, np.asarray(first_wins, dtype=float),
                 np.asarray(ties, dtype=float), np.asarray(second_wins, dtype=float))


def _judge_columns(chart: FactorChart) -> np.ndarray:
    """(K, L) chart index of each judge-local coordinate (A row, beta, extra parameters);
    -1 for an extra parameter held at its boundary."""
    K, _, m = chart.shape
    cols = [np.arange(K)[:, None] * m + np.arange(m)]
    if chart.n_beta:
        cols.append(chart.beta_offset + np.arange(K)[:, None])
    if chart.n_aux:
        flat = np.full(K * chart.n_aux, -1)
        flat[chart.free] = chart.aux_offset + np.arange(chart.free.size)
        cols.append(flat.reshape(K, chart.n_aux))
    return np.concatenate(cols, axis=1)


def _local(chart: FactorChart, first, second):
    """Per cell, the judge-local design of eta: ``[Q_i - Q_j, 1 (beta)]`` (cells, L_eta)."""
    dq = chart.Q[first] - chart.Q[second]
    return np.column_stack([dq, np.ones(len(dq))]) if chart.n_beta else dq


def assemble(chart: FactorChart, judge, first, second, weights) -> np.ndarray:
    """``sum_c D_c^T W_c D_c`` in the chart, ``D_c`` the derivative of cell c's (eta, aux)
    in the chart coordinates and ``W_c`` a symmetric per-cell weight.

    Parameters
    ----------
    chart : FactorChart
    judge, first, second : int arrays (cells,)
    weights : (w_ee, w_ea, w_aa)
        ``w_ee`` (cells,), ``w_ea`` (cells, n_aux), ``w_aa`` (cells, n_aux, n_aux): the
        blocks of ``W_c`` for (eta, aux).  The information weights give the Fisher
        information; the summed squared single-comparison scores give the sandwich meat.

    Returns
    -------
    ndarray (dim, dim)
    """
    K, N, m = chart.shape
    w_ee, w_ea, w_aa = weights
    u = _local(chart, first, second)
    n_eta, n_aux = u.shape[1], chart.n_aux
    cols = _judge_columns(chart)

    def coef_channel(l):
        return (u[:, l], 0) if l < n_eta else (1.0, 1 + l - n_eta)

    F = np.zeros((chart.dim, chart.dim))
    L = n_eta + n_aux
    # judge x judge: sum over a judge's cells of D^T W D restricted to its local coordinates
    for l1 in range(L):
        for l2 in range(l1, L):
            c1, ch1 = coef_channel(l1)
            c2, ch2 = coef_channel(l2)
            w = (w_ee if ch1 == ch2 == 0 else w_ea[:, max(ch1, ch2) - 1] if min(ch1, ch2) == 0
                 else w_aa[:, ch1 - 1, ch2 - 1])
            total = np.bincount(judge, w * c1 * c2, K)
            ok = (cols[:, l1] >= 0) & (cols[:, l2] >= 0)
            F[cols[ok, l1], cols[ok, l2]] = total[ok]
            F[cols[ok, l2], cols[ok, l1]] = total[ok]
    # judge x item: eta moves Y_i by +P_k and Y_j by -P_k
    y = chart.y_offset
    where_first, where_second = judge * N + first, judge * N + second
    for l in range(L):
        c, ch = coef_channel(l)
        v = (w_ee if ch == 0 else w_ea[:, ch - 1]) * c
        R = (np.bincount(where_first, v, K * N) - np.bincount(where_second, v, K * N)).reshape(K, N)
        ok = cols[:, l] >= 0
        block = (R[:, :, None] * chart.P[:, None, :]).reshape(K, N * m)[ok]
        F[cols[ok, l], y:] = block
        F[y:, cols[ok, l]] = block.T
    # item x item: a weighted graph Laplacian per pair of factor columns
    pair = first * N + second
    weighted = w_ee[:, None] * chart.P[judge]
    Pk = chart.P[judge]
    for a in range(m):
        for b in range(a, m):
            W = np.bincount(pair, weighted[:, a] * Pk[:, b], N * N).reshape(N, N)
            W += W.T
            lap = np.diag(W.sum(axis=1)) - W
            F[y + a::m, y + b::m] = lap
            if b != a:
                F[y + b::m, y + a::m] = lap
    return F


def _eta(data: Comparisons, S, beta) -> np.ndarray:
    S, beta = np.asarray(S, dtype=float), np.asarray(beta, dtype=float)
    return beta[data.judge] + S[data.judge, data.first] - S[data.judge, data.second]


def _aux_of(data: Comparisons, outcome, log_aux):
    return np.asarray(log_aux, dtype=float)[data.judge] if outcome.n_aux else None


def chart_information(data: Comparisons, S, beta, chart: FactorChart, *, outcome=HALF,
                      log_aux=None) -> np.ndarray:
    """Expected Fisher information in the factor coordinates of ``chart``.

    Parameters
    ----------
    data : Comparisons
    S : array (K, N)
    beta : array (K,)
    chart : FactorChart
        From :func:`~hja_bayes.inference.chart.factor_chart` (with the estimated extra
        parameters of ``outcome`` as ``free``).
    outcome : OutcomeModel
    log_aux : array (K, n_aux), optional
        The outcome model's per-judge parameters on the log scale (``-inf``: held at the
        boundary, no coordinate).

    Returns
    -------
    ndarray (chart.dim, chart.dim)
        Singular along the directions that the constraints of ``chart`` remove; restricted
        to the chart it is the information of the model's free parameters.
    """
    eta = _eta(data, S, beta)
    aux = _aux_of(data, outcome, log_aux)
    counts = _counts(data.first_wins, data.ties, data.second_wins)
    weights = (np.asarray(outcome.information_weight(eta, aux, counts), dtype=float),
               np.asarray(outcome.cross_information(eta, aux, counts), dtype=float),
               np.asarray(outcome.aux_information(eta, aux, counts), dtype=float))
    return assemble(chart, data.judge, data.first, data.second, weights)


def _scores(outcome, eta, aux, first_wins, ties, second_wins):
    counts = _counts(first_wins, ties, second_wins)
    return (np.asarray(outcome.score(eta, aux, counts), dtype=float),
            np.asarray(outcome.aux_score(eta, aux, counts), dtype=float))


def _cluster_scores(data: Comparisons, chart: FactorChart, eta, aux, outcome):
    """Each cluster's summed score in the chart, a sparse (clusters x dim) matrix."""
    from scipy import sparse

    m = chart.shape[2]
    c = data.clusters
    cols = _judge_columns(chart)
    total = sparse.csr_matrix((c.n_clusters, chart.dim))
    for start in range(0, len(c.cell), _CHUNK):
        e = slice(start, start + _CHUNK)
        cell, g = c.cell[e], c.cluster[e]
        k, i, j = data.judge[cell], data.first[cell], data.second[cell]
        u, ua = _scores(outcome, eta[cell], None if aux is None else aux[cell],
                        c.first_wins[e], c.ties[e], c.second_wins[e])
        local = _local(chart, i, j)
        parts = [local * u[:, None]]
        if chart.n_aux:
            parts.append(ua)
        values = [np.column_stack(parts), chart.P[k] * u[:, None], -chart.P[k] * u[:, None]]
        where = [cols[k], chart.y_offset + i[:, None] * m + np.arange(m),
                 chart.y_offset + j[:, None] * m + np.arange(m)]
        values, where = np.concatenate(values, axis=1), np.concatenate(where, axis=1)
        rows = np.broadcast_to(g[:, None], where.shape)
        keep = where >= 0
        total = total + sparse.csr_matrix((values[keep], (rows[keep], where[keep])),
                                          shape=total.shape)
    return total


def score_covariance(data: Comparisons, S, beta, chart: FactorChart, cov_type: str,
                     outcome=HALF, log_aux=None) -> np.ndarray:
    """The "meat" ``M`` of the sandwich covariance ``I^-1 M I^-1`` in the factor coordinates.

    Parameters
    ----------
    data : Comparisons
        The fitted data; ``cov_type="cluster"`` needs ``data.clusters``.
    S, beta : arrays (K, N), (K,)
        The fitted scores and position biases.
    chart : FactorChart
    cov_type : {"sandwich", "cluster"}
    outcome : OutcomeModel
    log_aux : array (K, n_aux), optional
        The outcome model's per-judge parameters on the log scale.

    Returns
    -------
    ndarray (chart.dim, chart.dim)
        With the small-sample factor G/(G-1) for clusters.

    Raises
    ------
    ParameterError
        For ``"cluster"`` on data without clusters, or fewer than two clusters.
    """
    eta = _eta(data, S, beta)
    aux = _aux_of(data, outcome, log_aux)
    if cov_type == "sandwich":
        # each comparison its own unit: sum over outcomes of count x (single-comparison score)^2
        n_aux = outcome.n_aux
        w_ee, w_ea = np.zeros(data.n_cells), np.zeros((data.n_cells, n_aux))
        w_aa = np.zeros((data.n_cells, n_aux, n_aux))
        one, zero = np.ones(data.n_cells), np.zeros(data.n_cells)
        for count, unit in zip((data.first_wins, data.ties, data.second_wins),
                               ((one, zero, zero), (zero, one, zero), (zero, zero, one))):
            u, ua = _scores(outcome, eta, aux, *unit)
            count = np.asarray(count, dtype=float)
            w_ee += count * u * u
            w_ea += (count * u)[:, None] * ua
            w_aa += count[:, None, None] * ua[:, :, None] * ua[:, None, :]
        return assemble(chart, data.judge, data.first, data.second, (w_ee, w_ea, w_aa))
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
    s = _cluster_scores(data, chart, eta, aux, outcome)
    if G * chart.dim <= _DENSE_SCORES:
        s = s.toarray()
        meat = s.T @ s
    else:
        meat = (s.T @ s).toarray()
    meat *= G / (G - 1)
    return (meat + meat.T) / 2
