"""Information in the chart: the expected Fisher information and the sandwich "meat".

With ``D_u`` the derivative of unit u's (linear predictor, outcome parameters) in the chart
coordinates and the outcome model's per-category derivatives
(:func:`~hja_bayes.likelihood.outcomes.base.category_derivatives`):

* ``fisher``     ``I = sum_u D_u^T W_u D_u``, ``W_u`` the expected information of (eta, aux)
* ``sandwich``   ``M = sum over single comparisons D^T g g^T D`` (each comparison its own unit)
* ``cluster``    CR1: ``M = G/(G-1) sum_g s_g s_g^T``, ``s_g = sum over cluster g's comparisons
  D^T g``; by default the bias-reduced CR2 instead (:mod:`~hja_bayes.inference.clusters`)

and the covariance of the chart coordinates is ``I^-1`` (fisher) or ``I^-1 M I^-1``.  The
names follow statsmodels' ``cov_type``.

The linear predictor's chart coordinates are judge k's ``A`` row (through ``Q_i - Q_j``), its
estimated term coefficients (through the unit's design ``X``), the panel-wide coefficients
(through ``Xg``) and the rows ``Y_i``, ``Y_j`` (through ``+-P_k``); an outcome model's extra
parameters (Davidson's ``log nu_k``) add one coordinate per estimated parameter (those held
at their boundary, ``-inf``, add none).  Everything is assembled in the factor coordinates
of :class:`~hja_bayes.inference.chart.FactorChart` from per-unit weights: the cost is
O(units) plus one dense (dim x dim) matrix; no (units x dim) or (K N x dim) array is formed.
The cluster scores are a sparse (clusters x dim) matrix.
"""

from __future__ import annotations

import numpy as np

from ..categories import row_totals
from ..comparisons import Comparisons
from ..errors import IdentifiabilityError, ParameterError
from ..likelihood import (
    counts_for,
    information,
    linear_predictor,
    sandwich_meat,
    score,
)
from ..likelihood.terms import Design, design_of, units_of
from .chart import FactorChart

__all__ = ["COV_TYPES", "Model", "chart_information", "default_cov_type", "free_aux",
           "check_clusters", "check_single_prompts", "normal_cov_type", "occupied_clusters", "score_covariance"]

#: The covariance estimators of the Wald intervals: statsmodels' names, and clubSandwich's
#: for the two small-sample corrections of the cluster-robust one ("cluster" is "CR2").
COV_TYPES = ("fisher", "sandwich", "cluster", "CR2", "CR1")

#: Cluster scores are multiplied densely when clusters x dim stays below this many numbers.
_DENSE_SCORES = 2 ** 25
_CHUNK = 1 << 18
#: The Laplacian blocks sum the weights per (judge, item pair) first while that array stays
#: below this many numbers per unit (plus a constant); beyond it, one pass per block.
_DENSE_PAIRS_PER_UNIT = 4
_DENSE_PAIRS = 1 << 22


def free_aux(log_aux) -> np.ndarray:
    """Flat indices ``k * n_aux + a`` of the estimated extra parameters (finite log values),
    in the order of their chart coordinates."""
    return np.flatnonzero(np.isfinite(np.asarray(log_aux, dtype=float)).ravel())


def default_cov_type(data: Comparisons) -> str:
    """``"cluster"`` when the data know their clusters (prompts), else ``"fisher"``."""
    return "fisher" if data.clusters is None else "cluster"


def normal_cov_type(cov_type: str | None, data: Comparisons) -> tuple[str, str | None]:
    """``(cov_type, small_sample)``: "fisher", "sandwich" or "cluster", and for "cluster" its
    small-sample correction "CR2" (the default, also spelled ``cov_type="CR2"``) or "CR1".

    Raises
    ------
    ParameterError
        For a name not in :data:`COV_TYPES` (the CR names in any case).
    """
    if cov_type is None:
        cov_type = default_cov_type(data)
    if isinstance(cov_type, str) and cov_type.upper() in ("CR1", "CR2"):
        return "cluster", cov_type.upper()
    if not isinstance(cov_type, str) or cov_type not in ("fisher", "sandwich", "cluster"):
        raise ParameterError(f"cov_type must be one of {list(COV_TYPES)}, got {cov_type!r}")
    return cov_type, "CR2" if cov_type == "cluster" else None


class Model:
    """A fitted model as the information needs it: data, outcome model, terms and estimates.

    Parameters
    ----------
    data : Comparisons
    S : (K, N)
    coef : (K, q)
        Per-judge term coefficients (columns of ``design``).
    theta : (g,)
    outcome : OutcomeModel
    log_aux : (K, n_aux) or None
        The outcome model's extra parameters on the log scale (``-inf``: held).
    terms : tuple
        The term objects (their design is laid out per unit level on demand).

    The estimates are not changed after construction: the units' linear predictors are
    computed once per level and kept; :meth:`moved` makes the model at other estimates.
    """

    def __init__(self, data, S, coef, theta, outcome, log_aux, terms):
        self.data, self.outcome, self.terms = data, outcome, tuple(terms)
        self.S = np.asarray(S, dtype=float)
        self.coef = np.asarray(coef, dtype=float).reshape(data.n_judges, -1)
        self.theta = np.asarray(theta, dtype=float).ravel()
        self.log_aux = log_aux
        self._designs: dict[str, Design] = {}
        self._positions: dict[str, tuple] = {}
        self._units: dict[str, tuple] = {}

    def moved(self, S, coef, theta, log_aux) -> Model:
        """The same data, outcome model and terms at other estimates (the designs and unit
        positions shared)."""
        other = Model(self.data, S, coef, theta, self.outcome, log_aux, self.terms)
        other._designs, other._positions = self._designs, self._positions
        return other

    def design(self, level: str | None = None) -> Design:
        """The terms' design at ``level`` ("cells" or "entries"; default: the fit's)."""
        key = level or "fit"
        if key not in self._designs:
            self._designs[key] = design_of(self.data, self.terms, level)
        return self._designs[key]

    def positions(self, level: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The units' flat positions in a (K, N) array at ``level``: ``(k N + i, k N + j)``
        for the first- and second-shown items (kept: they do not depend on the estimates)."""
        key = level or "fit"
        if key not in self._positions:
            units = units_of(self.data, self.design(level).level)
            N = self.data.n_items
            self._positions[key] = (units.judge * N + units.first,
                                    units.judge * N + units.second)
        return self._positions[key]

    def units(self, level: str | None = None):
        """``(units, design, eta, aux)`` at ``level``: the data's units (counts as the
        outcome model reads them), their design, linear predictors and extra parameters."""
        key = level or "fit"
        if key not in self._units:
            design = self.design(level)
            units = units_of(self.data, design.level)
            units = units._replace(counts=counts_for(units.counts, self.outcome))
            eta = linear_predictor(self.S, self.coef, _design_view(units, design), self.theta,
                                   positions=self.positions(level))
            aux = (None if self.outcome.n_aux == 0
                   else np.asarray(self.log_aux, dtype=float)[units.judge])
            self._units[key] = (units, design, eta, aux)
        return self._units[key]


class _View:
    """Units with a design, read by :func:`~hja_bayes.likelihood.linear_predictor`."""

    def __init__(self, units, design):
        self.judge, self.first, self.second = units.judge, units.first, units.second
        self.X, self.Xg = design.X, design.Xg


def _design_view(units, design) -> _View:
    return _View(units, design)


def assemble(chart: FactorChart, units, design: Design, weights, positions=None) -> np.ndarray:
    """``sum_u D_u^T W_u D_u`` in the chart, ``D_u`` the derivative of unit u's (eta, aux) in
    the chart coordinates and ``W_u`` (units, L, L) a symmetric per-unit weight over
    (eta, aux).  The expected information gives the Fisher information; the summed squared
    single-comparison scores give the sandwich meat.  ``positions``: the units' ``(k N + i,
    k N + j)`` where the caller has them (:meth:`Model.positions`).

    Every block that touches a judge's ``A`` row or an item's ``Y`` row comes from
    ``R[k, i, l]``, judge k's weighted sum of local coordinate l's derivative over its units
    with item i first, minus those with i second: the ``A``-rows' derivative is
    ``Q_i - Q_j``, so their part of ``R`` is judge k's weighted graph Laplacian times ``Q``,
    and a judge's ``A``-row block against any local coordinate is ``Q^T R[k]``.  Only the
    terms' and the outcome parameters' blocks among themselves are summed unit by unit.

    Returns
    -------
    ndarray (dim, dim)
    """
    K, N, m = chart.shape
    W = np.asarray(weights, dtype=float)
    judge, first, second = units.judge, units.first, units.second
    eta_cols, aux_cols = chart.local_columns()
    cols = np.concatenate([eta_cols, aux_cols], axis=1)  # (K, L), the A row's m first
    # the other local coordinates, per unit: a coefficient and a channel of W
    other = [(c, 0) for c in np.column_stack([design.X, design.Xg]).T]
    other += [(1.0, 1 + a) for a in range(aux_cols.shape[1])]
    L = m + len(other)
    where_first, where_second = ((judge * N + first, judge * N + second) if positions is None
                                 else positions)

    def by_item(v):  # (K, N): v summed per (judge, item first) minus per (judge, item second)
        return (np.bincount(where_first, v, K * N)
                - np.bincount(where_second, v, K * N)).reshape(K, N)

    R = np.empty((K, N, L))
    pair = first * N + second
    w = np.ascontiguousarray(W[:, 0, 0])  # each unit's weight of eta, read by both layouts
    if K * N * N <= _DENSE_PAIRS_PER_UNIT * len(judge) + _DENSE_PAIRS:
        # the weights summed per (judge, pair) once (units in the readers' order write it in
        # sequence): the Laplacians and their products with Q and with P_k P_k^T come from
        # it, each judge's symmetric part never formed (A + A^T) Q = A Q + A^T Q
        per_pair = np.bincount(where_first * N + second, w, K * N * N)
        per_pair = per_pair.reshape(K, N, N)
        degree = per_pair.sum(axis=2) + per_pair.sum(axis=1)
        R[:, :, :m] = degree[:, :, None] * chart.Q - (
            per_pair @ chart.Q + per_pair.transpose(0, 2, 1) @ chart.Q)
    else:
        per_pair = None
        # per unit, laid out (m, units) so that each column is contiguous; take, not fancy
        # indexing: half the time (2M units: 33 against 61 ms)
        c = chart.Q.T.take(first, axis=1) - chart.Q.T.take(second, axis=1)
        for a in range(m):
            R[:, :, a] = by_item(w * c[a])
    for l, (c, ch) in enumerate(other, start=m):
        R[:, :, l] = by_item(W[:, 0, ch] * c)
    # judge-local blocks (K, L, L): the A rows' from R, the others' among themselves unit
    # by unit
    local = np.empty((K, L, L))
    local[:, :m, :] = np.einsum("ia,kil->kal", chart.Q, R)
    local[:, m:, :m] = local[:, :m, m:].transpose(0, 2, 1)
    for l1, (c1, ch1) in enumerate(other, start=m):
        for l2, (c2, ch2) in enumerate(other[l1 - m:], start=l1):
            local[:, l1, l2] = local[:, l2, l1] = np.bincount(judge, W[:, ch1, ch2] * c1 * c2, K)
    F = np.zeros((chart.dim, chart.dim))
    ok = (cols[:, :, None] >= 0) & (cols[:, None, :] >= 0)
    rows = np.broadcast_to(cols[:, :, None], ok.shape)
    np.add.at(F, (rows[ok], rows.transpose(0, 2, 1)[ok]), local[ok])  # judges may share one
    # judge x item: eta moves Y_i by +P_k and Y_j by -P_k
    y = chart.y_offset
    cross = np.einsum("kil,ka->klia", R, chart.P).reshape(K, L, N * m)
    ok = cols >= 0
    np.add.at(F[:, y:], cols[ok], cross[ok])
    F[y:, :y] = F[:y, y:].T
    # item x item: a weighted graph Laplacian per pair of factor columns
    if per_pair is not None:
        blocks = (per_pair.reshape(K, N * N).T
                  @ np.einsum("ka,kb->kab", chart.P, chart.P).reshape(K, m * m))
        blocks = blocks.reshape(N, N, m, m)
    else:
        Pk = chart.P.T.take(judge, axis=1)  # (m, units), as c above
        weighted = w * Pk
    for a in range(m):
        for b in range(a, m):
            if per_pair is not None:
                M = blocks[:, :, a, b].copy()
            else:
                M = np.bincount(pair, weighted[a] * Pk[b], N * N).reshape(N, N)
            M += M.T
            lap = np.diag(M.sum(axis=1)) - M
            F[y + a::m, y + b::m] = lap
            if b != a:
                F[y + b::m, y + a::m] = lap
    return F


def chart_information(model: Model, chart: FactorChart) -> np.ndarray:
    """Expected Fisher information in the factor coordinates of ``chart``.

    Returns
    -------
    ndarray (chart.dim, chart.dim)
        Singular along the directions that the constraints of ``chart`` remove; restricted
        to the chart it is the information of the model's free parameters.
    """
    units, design, eta, aux = model.units()
    W = information(model.outcome, eta, aux, row_totals(units.counts))
    return assemble(chart, units, design, W, model.positions())


def _cluster_scores(model: Model, chart: FactorChart):
    """Each cluster's summed score in the chart, a sparse (clusters x dim) matrix."""
    from scipy import sparse

    m = chart.shape[2]
    units, design, eta, aux = model.units("entries")
    c = model.data.clusters
    eta_cols, aux_cols = chart.local_columns()
    cols = np.concatenate([eta_cols, aux_cols], axis=1)
    total = sparse.csr_matrix((c.n_clusters, chart.dim))
    for start in range(0, len(units.judge), _CHUNK):
        e = slice(start, start + _CHUNK)
        k, i, j, g = units.judge[e], units.first[e], units.second[e], units.cluster[e]
        s = score(model.outcome, eta[e], None if aux is None else aux[e], units.counts[e])
        local = np.column_stack([chart.Q[i] - chart.Q[j], design.X[e], design.Xg[e]])
        values = [local * s[:, :1], s[:, 1:], chart.P[k] * s[:, :1], -chart.P[k] * s[:, :1]]
        where = [cols[k], chart.y_offset + i[:, None] * m + np.arange(m),
                 chart.y_offset + j[:, None] * m + np.arange(m)]
        values = np.concatenate(values, axis=1)
        where = np.concatenate(where, axis=1)
        rows = np.broadcast_to(g[:, None], where.shape)
        keep = where >= 0
        total = total + sparse.csr_matrix((values[keep], (rows[keep], where[keep])),
                                          shape=total.shape)
    return total


def occupied_clusters(clusters) -> int:
    """Clusters holding at least one comparison (a cluster whose judges were all left out
    holds none)."""
    return int(np.count_nonzero(clusters.comparisons_per_cluster() > 0))


def check_clusters(data: Comparisons) -> int:
    """The number of clusters with comparisons, checked to be at least two.

    Raises
    ------
    ParameterError
        Without clusters, or with fewer than two that hold comparisons.
    """
    if data.clusters is None:
        raise ParameterError(
            "cov_type='cluster' needs clusters: read the data with cluster=<column> (e.g. "
            "'question_id'), or use cov_type='sandwich' or 'fisher'")
    G = occupied_clusters(data.clusters)
    if G < 2:
        raise ParameterError("cluster-robust intervals need at least two clusters with "
                             f"comparisons, got {G}: read the data without the cluster column "
                             "(CLI: --cluster-col -), or use cov_type='sandwich' or 'fisher'")
    return G


def check_single_prompts(data: Comparisons, bootstrap: bool = False,
                         count_in_engine: bool = False) -> None:
    """Every model and judge of the data (the judges the fit kept) checked to appear in at
    least two clusters.  Prompts kept in a scan's query engine are counted there with
    ``count_in_engine`` (a pass over the rows), else as the cluster-robust meat is summed
    (:func:`score_covariance` raises the same error).  ``bootstrap``: said of a bootstrap of
    prompts (every replicate draws that prompt, one estimate, or none, the ridge's).

    Raises
    ------
    IdentifiabilityError
        When a model or a judge appears in one cluster only: that cluster alone fixes its
        score (or sensitivity), so its cluster score along that direction is zero at the
        fit and no cluster-robust covariance can say how uncertain it is (CR2 had given
        such a model's differences variances 30-55 times below the Fisher ones).
    """
    if count_in_engine and getattr(data.clusters, "in_engine", False):
        from .engine_scores import engine_prompt_counts

        judges, items = engine_prompt_counts(data, data.clusters)
        alone = _named(data, items == 1, judges == 1)
    else:
        alone = _in_one_cluster(data)
    _refuse_single_prompts(data, alone, bootstrap)


def _refuse_single_prompts(data: Comparisons, alone: str, bootstrap: bool = False) -> None:
    if not alone:
        return
    column = f" of column {data.cluster_column!r}" if data.cluster_column else ""
    method, fisher = (("a bootstrap of prompts", "resample single comparisons (cluster=False)")
                      if bootstrap else ("a cluster-robust covariance", "use cov_type='fisher' "
                                         "(hja-bayes fit --cluster-col -)"))
    pool = "; raters who each judged one prompt can be pooled into one judge (judge=None; " \
        "hja-bayes fit --judge-col -) when the consensus is what is wanted" * ("judge(s)" in alone)
    raise IdentifiabilityError(
        f"{alone} appear(s) on a single prompt (cluster{column}): that prompt alone fixes "
        f"their estimates, and {method} cannot tell how uncertain they are (it would call "
        "them precise). Leave them out (their rows) until they have verdicts on two prompts "
        "or more, sample the Bayesian model with prompt effects (sample_hja; --bayes), or "
        f"{fisher} if their verdicts are independent{pool}")


def _in_one_cluster(data: Comparisons) -> str:
    """The models and judges whose comparisons all lie in one cluster, named ("" when
    none; also for a scan whose (prompt, cell) incidence stays in its engine)."""
    c = data.clusters
    if getattr(c, "in_engine", False):
        return ""
    seen = row_totals(c.counts) > 0
    cell, cluster = c.cell[seen], np.asarray(c.cluster, dtype=np.int64)[seen]
    single = []
    for names, owners in ((data.items, (data.first[cell], data.second[cell])),
                          (data.judges, (data.judge[cell],))):
        low, high = np.full(len(names), np.iinfo(np.int64).max), np.full(len(names), -1)
        for owner in owners:  # single iff its smallest and largest cluster are one
            np.minimum.at(low, owner, cluster)
            np.maximum.at(high, owner, cluster)
        single.append(low == high)
    return _named(data, *single)


def _named(data: Comparisons, single_items: np.ndarray, single_judges: np.ndarray) -> str:
    """The models and judges flagged, named ("" when none)."""
    said = [f"{what}(s) " + ", ".join(repr(names[i]) for i in np.flatnonzero(flags))
            for what, names, flags in (("model", data.items, single_items),
                                       ("judge", data.judges, single_judges)) if flags.any()]
    return " and ".join(said)


def score_covariance(model: Model, chart: FactorChart, cov_type: str) -> np.ndarray:
    """The "meat" ``M`` of the sandwich covariance ``I^-1 M I^-1`` in the factor coordinates.

    Parameters
    ----------
    model : Model
        The fitted model; ``cov_type="cluster"`` needs ``model.data.clusters``.
    chart : FactorChart
    cov_type : {"sandwich", "cluster"}
        "cluster" is CR1 here (the CR2 meat is built from
        :func:`~hja_bayes.inference.clusters.cluster_design`).

    Returns
    -------
    ndarray (chart.dim, chart.dim)
        With the small-sample factor G/(G-1) for clusters (G: clusters with comparisons).

    Raises
    ------
    ParameterError
        For ``"cluster"`` on data without clusters, or fewer than two clusters.
    IdentifiabilityError
        For ``"cluster"`` on prompts kept in a query engine where a model or judge appears on
        one prompt only (see :func:`check_single_prompts`).
    """
    if cov_type == "sandwich":
        units, design, eta, aux = model.units()
        return assemble(chart, units, design, sandwich_meat(model.outcome, eta, aux, units.counts),
                        model.positions())
    if cov_type != "cluster":
        raise ParameterError(f"cov_type must be one of {list(COV_TYPES)}, got {cov_type!r}")
    G = check_clusters(model.data)
    c = model.data.clusters
    if getattr(c, "in_engine", False):  # prompts kept in a query engine: summed there
        from .engine_scores import engine_meat

        meat, judge_prompts, item_prompts = engine_meat(model, chart, c)
        _refuse_single_prompts(model.data, _named(model.data, item_prompts == 1,
                                                  judge_prompts == 1))
        meat *= G / (G - 1)
        return (meat + meat.T) / 2
    s = _cluster_scores(model, chart)
    if G * chart.dim <= _DENSE_SCORES:
        s = s.toarray()
        meat = s.T @ s
    else:
        meat = (s.T @ s).toarray()
    meat *= G / (G - 1)
    return (meat + meat.T) / 2
