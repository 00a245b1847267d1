"""Cluster-robust covariance when the clusters are few: CR2 and Satterthwaite degrees of freedom.

The Wald estimates solve ``sum_u s_u(theta) = 0`` over units u (the (prompt, cell) entries,
each with its counts).  Linearised at the fit, unit u is a small weighted regression: with
``W_u`` its expected information about ``(eta, aux)`` (L x L) and ``J_u`` the derivative of
``(eta, aux)`` in the chart, the *standardised design* ``Xt_u = W_u^{1/2} J_u`` and the
*standardised residual* ``e_u = W_u^{-1/2} g_u`` (``g_u`` the score in ``(eta, aux)``) give
back its score ``s_u = Xt_u^T e_u`` and its information ``Xt_u^T Xt_u``, and under the model
``e_u`` has covariance I.  In these terms (Bell and McCaffrey 2002; Pustejovsky and Tipton
2018, with the working covariance the model's own, so that the weights are its inverse):

* ``H = Xt M Xt^T`` is the hat matrix, ``M`` the inverse information on the chart (the
  bread, with the fit's ridge);
* CR1: ``meat = G/(G-1) sum_g s_g s_g^T`` with ``s_g = Xt_g^T e_g``;
* CR2 (bias-reduced linearisation): ``meat = sum_g Xt_g^T A_g e_g e_g^T A_g Xt_g`` with
  ``A_g = (I - H_gg)^{-1/2}`` (symmetric; a direction with leverage 1 gets weight 0, as a
  Moore-Penrose power, the convention of R's clubSandwich), which makes the meat unbiased
  when the working model holds;
* Satterthwaite degrees of freedom of a contrast ``c``: its CR2 variance is the quadratic
  form ``sum_g (p_g^T e_g)^2`` with ``p_g = A_g Xt_g M c``; with ``e = (I - H) eps``,
  ``eps ~ N(0, I)``, its mean is ``tr Gram`` and its variance ``2 |Gram|_F^2`` where
  ``Gram_gh = p_g^T [(I - H)(I - H)^T]_gh p_h``, so ``df = (tr Gram)^2 / |Gram|_F^2``.
  The t quantile of that df replaces the normal one, contrast by contrast.

Everything is computed in *whitened* chart coordinates: with ``L`` the Cholesky factor of the
(constrained) information and ``Pi`` the projection onto the chart, a contrast ``c`` becomes
``z = L^-1 Pi c`` (its Fisher variance is ``|z|^2``) and cluster g's design becomes
``Y_g = L^-1 Pi Xt_g^T`` (dim x rows_g), so that ``H_gg = Y_g^T Y_g``.  With the thin SVD
``Y_g = U_g diag(sigma_g) V_g^T`` (leverages ``sigma^2``) and ``omega_g = V_g^T e_g``:

* whitened cluster score ``r_g = U_g (sigma * omega)``, CR2-adjusted ``t_g = U_g (sigma f
  omega)`` with ``f = (1 - sigma^2)^{-1/2}``; the CR2 variance of ``z`` is
  ``sum_g (z^T t_g)^2``;
* ``pi_g = |p_g|^2 = |sigma f * U_g^T z|^2`` and ``b_g = L^-1 Pi Xt_g^T p_g =
  U_g (sigma^2 f * U_g^T z)``, and ``Gram = diag(pi) + B (Fw - 2 I) B^T`` with ``Fw`` the
  whitened information without the ridge (the identity on the chart when the ridge is 0).

So only the per-cluster singular triplets are kept (at most min(rows_g, dim) per cluster):
no (units x units) matrix is formed, and the cost is O(rows x dim^2) once plus
O(G dim^2) per contrast.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..categories import row_totals
from ..clusters import effective_clusters
from ..errors import DataWarning, warn
from ..likelihood import information, score

__all__ = ["CR2_MAX_NUMBERS", "ClusterDesign", "EXACT_BELOW_DF", "EXACT_BUDGET", "FEW_CLUSTERS",
           "cr2_numbers", "SMALL_SAMPLE", "cluster_design", "cluster_record", "satterthwaite",
           "models_on_few_prompts", "warn_few_clusters",
           "warn_models_on_few_prompts"]

#: Small-sample corrections of the cluster-robust covariance (``cov_type="cluster"`` is CR2).
SMALL_SAMPLE = ("CR2", "CR1")

#: Below this effective number of clusters a DataWarning names G and the effective G.
#: Cameron and Miller (2015) put the point below which CR1 misleads at 20-50 clusters, more
#: when their sizes differ; with 15 prompts sized 1:50 (7 effective) CR1 covered 86%.
FEW_CLUSTERS = 30

#: A leverage this close to 1 is treated as 1: that cluster alone fixes the direction.
_SATURATED = 1e-10
#: Leverages below this are zero (a cluster's rows do not reach that direction).
_NEGLIGIBLE = 1e-14
#: Multiply-adds above which :func:`satterthwaite` keeps to the leading term (many clusters).
EXACT_BUDGET = 2 ** 30
#: Leading-term degrees of freedom from which :func:`satterthwaite` keeps to that term: the
#: contrast spreads over so many clusters that the exact value moves the t quantile by less
#: than 0.003 (t at 100 and 88 degrees of freedom).
EXACT_BELOW_DF = 100
#: Largest number of floats the CR2 design may keep (dim x kept singular vectors, 1 GiB);
#: beyond it (many large clusters in a large chart, where CR2 and CR1 agree to O(1/G)) the
#: cluster-robust covariance falls back to CR1 with a DataWarning.
CR2_MAX_NUMBERS = 1 << 27
#: Rows x dim numbers of whitened design built at once.
_CHUNK = 1 << 22


class ClusterDesign(NamedTuple):
    """What the CR2 meat, its degrees of freedom and the wild bootstrap need, whitened.

    Attributes
    ----------
    U : ndarray (dim, R)
        Left singular vectors of every cluster's whitened design ``Y_g`` (columns of one
        cluster are consecutive).
    sigma : ndarray (R,)
        Their singular values (``sigma^2`` are the cluster's leverages).
    omega : ndarray (R,)
        ``V_g^T e_g``, the standardised residuals along the right singular vectors.
    cluster : ndarray of int (R,)
        The cluster of each column.
    n_clusters : int
    information : ndarray (dim, dim)
        ``Fw``, the whitened information without the ridge.
    raw : ndarray (dim, G)
        Whitened cluster scores ``r_g = L^-1 Pi s_g``.
    adjusted : ndarray (dim, G)
        CR2-adjusted whitened cluster scores ``t_g``.
    saturated : int
        Clusters with a direction of leverage 1 (their own data fix it; CR2 gives it weight 0).
    """

    U: np.ndarray
    sigma: np.ndarray
    omega: np.ndarray
    cluster: np.ndarray
    n_clusters: int
    information: np.ndarray
    raw: np.ndarray
    adjusted: np.ndarray
    saturated: int = 0

    @property
    def adjust(self) -> np.ndarray:
        """``f = (1 - sigma^2)^{-1/2}`` per column, 0 where the leverage is 1."""
        lev = self.sigma ** 2
        ok = lev < 1 - _SATURATED
        return np.where(ok, 1 / np.sqrt(np.where(ok, 1 - lev, 1.0)), 0.0)

    def weighted_clusters(self) -> np.ndarray:
        """Clusters carrying CR2 weight (comparisons, a leverage below 1 somewhere), sorted."""
        return np.unique(self.cluster[self.sigma ** 2 < 1 - _SATURATED])

    def indicator(self):
        """Sparse (G x R) matrix summing columns by cluster."""
        from scipy import sparse

        R = len(self.cluster)
        return sparse.csr_matrix((np.ones(R), (self.cluster, np.arange(R))),
                                 shape=(self.n_clusters, R))

    def leverage_range(self) -> tuple[float, float]:
        """Smallest and largest total leverage ``tr H_gg`` of a cluster holding comparisons."""
        total = np.bincount(self.cluster, self.sigma ** 2, self.n_clusters)[np.unique(self.cluster)]
        return (float(total.min()), float(total.max())) if total.size else (0.0, 0.0)


def _rows(chart, units, design, index, eta_cols, aux_cols) -> np.ndarray:
    """Dense derivative of ``(eta, aux)`` of the units ``index`` in the factor coordinates:
    (len(index), L, chart.dim)."""
    K, N, m = chart.shape
    n = len(index)
    L = 1 + chart.n_aux
    k, i, j = units.judge[index], units.first[index], units.second[index]
    J = np.zeros((n, L, chart.dim))
    local = np.column_stack([chart.Q[i] - chart.Q[j], design.X[index], design.Xg[index]])
    cols = eta_cols[k]
    ok = cols >= 0
    rows = np.broadcast_to(np.arange(n)[:, None], cols.shape)
    J[rows[ok], 0, cols[ok]] = local[ok]
    r = np.arange(n)[:, None]
    J[r, 0, chart.y_offset + i[:, None] * m + np.arange(m)] += chart.P[k]
    J[r, 0, chart.y_offset + j[:, None] * m + np.arange(m)] -= chart.P[k]
    for a in range(chart.n_aux):
        c = aux_cols[k, a]
        ok = c >= 0
        J[np.flatnonzero(ok), 1 + a, c[ok]] = 1.0
    return J


def _standardised(W: np.ndarray, g: np.ndarray, J: np.ndarray):
    """``(Xt, e)``: ``W^{1/2} J`` (n, L, dim) and ``W^{-1/2} g`` (n, L) per unit, with the
    symmetric-eigenvalue root (directions without information get 0)."""
    if W.shape[1] == 1:
        w = W[:, 0, 0]
        root = np.sqrt(np.clip(w, 0.0, None))
        inv = np.where(root > 0, 1 / np.where(root > 0, root, 1.0), 0.0)
        return J * root[:, None, None], g * inv[:, None]
    lam, vec = np.linalg.eigh((W + np.swapaxes(W, 1, 2)) / 2)
    top = np.max(lam, axis=1, keepdims=True)
    ok = lam > 1e-12 * np.maximum(top, 1e-300)
    root = np.sqrt(np.where(ok, lam, 0.0))
    inv = np.where(ok, 1 / np.where(ok, root, 1.0), 0.0)
    R = root[:, :, None] * np.swapaxes(vec, 1, 2)  # diag(sqrt lam) V^T
    e = inv * np.einsum("nlk,nl->nk", vec, g)
    return np.einsum("nab,nbd->nad", R, J), e


def _sum_by(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Rows of ``values`` (R, q) summed by ``index`` (R,) into (n, q), by one sparse product."""
    from scipy import sparse

    R = len(index)
    return np.asarray(sparse.csr_matrix((np.ones(R), (index, np.arange(R))), shape=(n, R))
                      @ values)


def cluster_design(model, chart, factor, constraints) -> ClusterDesign:
    """The per-cluster singular triplets of the whitened, standardised design (see the
    module notes).

    Parameters
    ----------
    model : :class:`~hja_bayes.inference.information.Model`
        The fitted model (its data carry the clusters).
    chart : FactorChart
    factor : ndarray (dim, dim)
        Lower Cholesky factor of the constrained information (ridge included).
    constraints : ndarray (dim, c)
        Orthonormal constraint directions of the chart.

    Returns
    -------
    ClusterDesign
    """
    from scipy.linalg import solve_triangular


    units, design, eta, aux = model.units("entries")
    cluster = np.asarray(units.cluster)
    G = model.data.clusters.n_clusters
    dim = chart.dim
    L = 1 + chart.n_aux
    W = information(model.outcome, eta, aux, row_totals(units.counts))
    g = score(model.outcome, eta, aux, units.counts)
    eta_cols, aux_cols = chart.local_columns()
    C = constraints

    order = np.argsort(cluster, kind="stable")
    sizes = np.bincount(cluster, minlength=G)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    per_chunk = max(1, _CHUNK // (L * dim))

    def whitened(index):
        """``(Y, e)`` for the units ``index``: (dim, len * L) and (len * L,)."""
        Xt, e = _standardised(W[index], g[index],
                              _rows(chart, units, design, index, eta_cols, aux_cols))
        X = Xt.reshape(-1, dim)
        X = X - (X @ C) @ C.T
        return solve_triangular(factor, X.T, lower=True, check_finite=False), e.reshape(-1)

    U_parts, s_parts, w_parts, c_parts = [], [], [], []
    Fw = np.zeros((dim, dim))
    raw = np.zeros((dim, G))

    def keep(U, s, w, clusters):
        """The singular triplets (columns of U, s, w) of ``clusters`` that carry weight."""
        ok = s ** 2 > _NEGLIGIBLE
        U_parts.append(U[:, ok]), s_parts.append(s[ok]), w_parts.append(w[ok])
        c_parts.append(clusters[ok])

    g0 = 0
    while g0 < G:
        if sizes[g0] > per_chunk or sizes[g0] * L > dim:  # one large cluster, streamed
            gram = np.zeros((dim, dim))
            r = np.zeros(dim)
            idx = order[starts[g0]:starts[g0 + 1]]
            for s0 in range(0, len(idx), per_chunk):
                Y, e = whitened(idx[s0:s0 + per_chunk])
                gram += Y @ Y.T
                r += Y @ e
            Fw += gram
            raw[:, g0] = r
            lam, vec = np.linalg.eigh((gram + gram.T) / 2)
            lam = np.clip(lam, 0.0, None)
            s = np.sqrt(lam)
            w = np.where(s > 0, (vec.T @ r) / np.where(s > 0, s, 1.0), 0.0)
            keep(vec, s, w, np.full(len(s), g0))
            g0 += 1
            continue
        g1 = g0  # small clusters, as many as fit in one chunk, by explicit SVD
        while g1 < G and starts[g1 + 1] - starts[g0] <= per_chunk and sizes[g1] * L <= dim:
            g1 += 1
        idx = order[starts[g0]:starts[g1]]
        Y, e = whitened(idx)
        Fw += Y @ Y.T
        local = np.repeat(cluster[idx] - g0, L)
        width = sizes[g0:g1] * L
        first = np.concatenate([[0], np.cumsum(width)])
        for size in np.unique(width):
            which = np.flatnonzero(width == size)
            if size == 0:
                continue
            cols = first[which][:, None] + np.arange(size)
            stack = np.transpose(Y[:, cols], (1, 0, 2))  # (count, dim, size)
            Us, ss, Vt = np.linalg.svd(stack, full_matrices=False)
            ws = np.einsum("gks,gs->gk", Vt, e[cols])
            keep(np.transpose(Us, (1, 0, 2)).reshape(dim, -1), ss.ravel(), ws.ravel(),
                 np.repeat(g0 + which, size))  # cluster by cluster
        raw[:, g0:g1] += _sum_by(local, (Y * e).T, g1 - g0).T
        g0 = g1
    U = np.concatenate(U_parts, axis=1) if U_parts else np.zeros((dim, 0))
    sigma = np.concatenate(s_parts) if s_parts else np.zeros(0)
    omega = np.concatenate(w_parts) if w_parts else np.zeros(0)
    col_cluster = np.concatenate(c_parts).astype(np.int64) if c_parts else np.zeros(0, np.int64)
    out = ClusterDesign(U, sigma, omega, col_cluster, G, (Fw + Fw.T) / 2, raw,
                        np.zeros((dim, G)))
    f = out.adjust
    adjusted = _sum_by(col_cluster, (U * (sigma * f * omega)).T, G).T
    saturated = int(np.unique(col_cluster[sigma ** 2 >= 1 - _SATURATED]).size)
    return out._replace(adjusted=adjusted, saturated=saturated)


def cr2_numbers(data, chart) -> int:
    """Floats the CR2 design of ``data`` keeps in ``chart``: dim x sum_g min(rows_g, dim)."""
    c = data.clusters
    rows = np.bincount(c.cluster, minlength=c.n_clusters) * (1 + chart.n_aux)
    return int(chart.dim * np.minimum(rows, chart.dim).sum())


def satterthwaite(d: ClusterDesign, Z: np.ndarray, exact: bool | None = None) -> np.ndarray:
    """Satterthwaite degrees of freedom of the CR2 variance of whitened contrasts.

    Parameters
    ----------
    d : ClusterDesign
    Z : ndarray (dim, q)
        Whitened contrasts ``z = L^-1 Pi c`` (one per column).
    exact : bool, optional
        The exact ``(tr Gram)^2 / |Gram|_F^2`` costs O(G dim min(G, dim)) per contrast; its
        leading term ``(sum_g pi_g)^2 / sum_g pi_g^2`` (the contrast's own effective number
        of clusters: the terms it leaves out are O(1/G) of the others) costs O(rows).
        Default: the leading term where it is :data:`EXACT_BELOW_DF` or more, the exact
        value for the other contrasts unless they together would cost more than
        :data:`EXACT_BUDGET` multiply-adds.  Where the leading term is that large the two
        hardly differ: on Chatbot Arena's 8,691 prompts it was 0.88 to 1.01 of the exact df
        for the 190 score differences and the 30 scores and sensitivities, whose t
        quantiles then differ by less than 0.003; the exact value took 0.26 s there.

    Returns
    -------
    ndarray (q,)
        Degrees of freedom per contrast (see the module notes); NaN for a contrast whose
        CR2 variance has mean 0 (the clusters carry no information about it).
    """
    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1:
        Z = Z[:, None]
    dim, q = Z.shape
    G, f = d.n_clusters, d.adjust
    out = np.empty(q)
    # a block of contrasts at a time ((R, q) at once: 24 GB for 200 models, 200 prompts)
    step = max(1, _CHUNK // max(1, len(d.sigma), G))
    for start in range(0, q, step):
        block = slice(start, start + step)
        pi = _sum_by(d.cluster, ((d.sigma * f)[:, None] * (d.U.T @ Z[:, block])) ** 2, G)
        total, squares = pi.sum(axis=0), np.sum(pi ** 2, axis=0)
        ok = (total > 0) & (squares > 0)
        out[block] = np.where(ok, total ** 2 / np.where(ok, squares, 1.0), np.nan)
    if exact is None:
        todo = np.flatnonzero(~(out >= EXACT_BELOW_DF))  # below it, or undefined (NaN)
        if todo.size * G * dim * min(G, dim) > EXACT_BUDGET:
            todo = todo[:0]
    else:
        todo = np.arange(q if exact else 0)
    if todo.size == 0:
        return out
    N = d.information - 2 * np.eye(dim)
    S_ind = d.indicator()
    for c in todo:
        UZ = d.U.T @ Z[:, c]  # (R,)
        p = _sum_by(d.cluster, ((d.sigma * f * UZ) ** 2)[:, None], G)[:, 0]
        bw = d.sigma ** 2 * f * UZ  # b_g = sum over its columns of U_col * bw_col
        B = np.asarray(S_ind @ (d.U.T * bw[:, None]))  # (G, dim)
        BN = B @ N
        quad = np.einsum("gd,gd->g", BN, B)
        if G <= dim:
            gram = BN @ B.T
            gram[np.diag_indices(G)] += p
            mean, square = np.trace(gram), float(np.sum(gram * gram))
        else:
            S = B.T @ B
            NS = N @ S
            mean = p.sum() + np.trace(NS)
            square = float(np.sum(p ** 2) + 2 * np.sum(p * quad) + np.sum(NS * NS.T))
        out[c] = mean ** 2 / square if mean > 0 and square > 0 else np.nan
    return out


def cluster_record(data, small_sample: str | None) -> dict:
    """What a cluster-robust interval rests on, for tables, reports and saved fits:
    ``cluster_column``, ``n_clusters`` (clusters holding comparisons), ``effective_clusters``,
    ``small_sample`` and ``df`` (how the t quantiles' degrees of freedom were found)."""
    from .information import occupied_clusters

    c = data.clusters
    if c is None:
        return {}
    return {"cluster_column": data.cluster_column, "n_clusters": occupied_clusters(c),
            "effective_clusters": round(effective_clusters(c.comparisons_per_cluster()), 3),
            "small_sample": small_sample,
            "df": "Satterthwaite" if small_sample == "CR2" else None}


def warn_few_clusters(data, small_sample: str) -> None:
    """A DataWarning naming G and the effective G when the latter is below
    :data:`FEW_CLUSTERS`."""
    c = data.clusters
    per = c.comparisons_per_cluster()
    per = per[per > 0]
    G, effective = per.size, effective_clusters(per)
    if effective >= FEW_CLUSTERS:
        return
    column = f" of column {data.cluster_column!r}" if data.cluster_column else ""
    if small_sample == "CR2":
        how = ("these use the bias-reduced CR2 covariance with Satterthwaite degrees of "
               "freedom (t quantiles), which covered 93-95% in simulations down to 4 "
               "effective clusters (the wild bootstrap, fit.bootstrap(wild=True), less)")
    else:
        how = ("CR1 intervals are then too narrow: use cov_type='cluster' (CR2 with "
               "Satterthwaite degrees of freedom)")
    warn(
        f"cluster-robust intervals rest on few clusters: G = {G} clusters{column}, "
        f"{effective:.1f} effective ((sum n_g)^2 / sum n_g^2; {per.min():g} to {per.max():g} "
        f"comparisons per cluster; below {FEW_CLUSTERS} effective counts as few): {how}. "
        "If these are not the prompts, name the prompt column instead.",
        DataWarning)


def models_on_few_prompts(data) -> str | None:
    """What to say of the models seen on far fewer prompts than the rest (under
    :data:`FEW_CLUSTERS`, and under a quarter of the median model's): a new model with a
    handful of verdicts, say.  Its own intervals rest on those prompts, and every centred
    score shares its uncertainty through the mean of the scores.  None when there is none,
    without prompts, or for a scan whose (prompt, cell) incidence stays in its engine."""
    c = data.clusters
    if c is None or getattr(c, "in_engine", False):
        return None
    seen = c.counts.sum(axis=1) > 0
    cell, cluster = c.cell[seen], c.cluster[seen].astype(np.int64)
    item = np.concatenate([data.first[cell], data.second[cell]]).astype(np.int64)
    G = len(c.names)  # (item, prompt) pairs, each once
    prompts = np.bincount(np.unique(item * G + np.tile(cluster, 2)) // G, minlength=data.n_items)
    typical = float(np.median(prompts))
    few = np.flatnonzero((prompts < FEW_CLUSTERS) & (4 * prompts < typical))
    if not few.size:
        return None
    names = ", ".join(f"{data.items[i]!r} ({prompts[i]} prompt{'' if prompts[i] == 1 else 's'})"
                      for i in few)
    return (f"model(s) {names} appear on far fewer prompts than the others (median "
            f"{typical:g}): their cluster-robust intervals rest on those prompts, and every "
            "centred score shares their uncertainty through the mean of the scores, so the "
            "score intervals and Rank(UB) of every model widen; the joint rank intervals, tiers "
            "and p_better_next are about differences and are not affected. Pin a well-measured "
            "model (leaderboard(..., baseline=(model, score)); --baseline MODEL=SCORE) for "
            "intervals of differences to it, or fit without them until they have more verdicts")


def warn_models_on_few_prompts(data) -> None:
    """:func:`models_on_few_prompts` as a DataWarning, where it says anything."""
    said = models_on_few_prompts(data)
    if said:
        warn(said, DataWarning)
