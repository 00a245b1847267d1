"""Wild cluster bootstrap of the scores: intervals for few clusters without refitting.

A score (wild) bootstrap in the sense of Kline and Santos (2012): every replicate multiplies
each cluster's residuals by a random weight ``w_g`` (Rademacher: +-1; Webb's six-point
distribution: +-sqrt(1/2), +-1, +-sqrt(3/2)) and takes one Newton step from the fit, which
is the linearisation the Wald intervals already rest on, so a replicate costs a few
multiply-adds instead of a refit.  A refit with prompts reweighted by ``w_g`` is not possible
(the weights are negative half of the time), and refitting with positive weights would be a
weighted pairs bootstrap, not a wild one.

In the whitened chart coordinates of :mod:`~hja_bayes.inference.clusters` (cluster g's
design ``Y_g``, CR2 adjustment ``A_g``, standardised residuals ``e_g``):

* replicate change ``Delta*_b = sum_g w_gb Y_g A_g e_g = sum_g w_gb t_g`` (the CR2-adjusted
  residuals drive the replicates, so their variance is the CR2 one);
* replicate residuals ``e*_g = w_gb A_g e_g - Y_g^T Delta*_b`` and their CR2 scores
  ``t*_gb = w_gb U_g (sigma f^2 omega) - U_g diag(sigma^2 f) U_g^T Delta*_b``;
* studentised statistic of a quantity with whitened gradient z:
  ``T*_b = z^T Delta*_b / sqrt(sum_g (z^T t*_gb)^2)``;
* interval ``estimate +- c se``, ``se`` the CR2 standard error and ``c`` the ``level``
  quantile of ``|T*|`` (symmetric percentile-t, unrestricted: imposing each null value and
  inverting the test would need a constrained fit per quantity and per candidate value).

With Rademacher weights and ``2^G <= n`` every sign pattern is used once (the exact
bootstrap distribution); with few clusters Webb's weights give more distinct replicates
(``6^G``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..checks import check_choice, check_integer, check_level
from ..errors import IdentifiabilityError, ParameterError
from .pairs import item_pairs

__all__ = ["WEIGHTS", "WildBootstrap", "wild_bootstrap", "wild_weights"]

#: The weight distributions of the wild bootstrap.
WEIGHTS = ("rademacher", "webb")

_WEBB = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])


def wild_weights(G: int, n: int, kind: str = "rademacher", seed: int = 0) -> np.ndarray:
    """Cluster weights (n, G): Rademacher (every sign pattern once when ``2^G <= n``) or
    Webb's six-point distribution (mean 0, variance 1).

    Raises
    ------
    ParameterError
        For fewer than two clusters or replicates, or a seed that is not an integer >= 0.
    """
    G, n = check_integer(G, "G", 2), check_integer(n, "n", 2)
    seed = check_integer(seed, "seed", 0)
    kind = check_choice(kind, "weights", WEIGHTS)
    rng = np.random.default_rng(seed)
    if kind == "rademacher":
        if G < 30 and 2 ** G <= n:
            codes = np.arange(2 ** G)[:, None] >> np.arange(G) & 1
            return 2.0 * codes - 1.0
        return rng.choice([-1.0, 1.0], size=(n, G))
    return rng.choice(_WEBB, size=(n, G))


class WildBootstrap(NamedTuple):
    """Replicates of a wild cluster bootstrap of the scores (see the module notes).

    Attributes
    ----------
    mu : ndarray (n, N)
    gamma : ndarray (n, K)
    beta : ndarray (n, K)
        Linearised replicates (one Newton step from the fit): their spread is the CR2 one.
    weights : ndarray (n, G)
        The cluster weights of every replicate.
    kind : str
        "rademacher" or "webb".
    judges, items : tuple of str
    inference : WaldInference
        The CR2 inference it perturbs (its estimates and standard errors).
    seed : int or None
        The seed of the weights.

    Clusters without comparisons (all their judges left out) carry no weight: their column
    of ``weights`` is 0, and the sign patterns are enumerated over the others.
    """

    mu: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    weights: np.ndarray
    kind: str
    judges: tuple[str, ...]
    items: tuple[str, ...]
    inference: object
    seed: int | None = None

    def __repr__(self) -> str:
        """One line: the replicates, their weights and clusters (no arrays)."""
        weighted = int(np.count_nonzero(np.any(self.weights != 0, axis=0)))
        return (f"WildBootstrap({self.n:,} replicates, {self.kind} weights on "
                f"{weighted:,} clusters, {len(self.judges)} judges, "
                f"{len(self.items)} models; .table(level) for intervals)")

    @property
    def cluster(self) -> bool:
        """Always True: clusters are the unit."""
        return True

    @property
    def n(self) -> int:
        """Replicates."""
        return len(self.weights)

    def _delta(self) -> np.ndarray:
        return self.inference.cluster_design.adjusted @ self.weights.T  # (dim, n)

    def critical_values(self, Z: np.ndarray, level: float = 0.95) -> np.ndarray:
        """The ``level`` quantile of ``|T*|`` for whitened gradients ``Z`` (dim, m).

        Raises
        ------
        IdentifiabilityError
            For a quantity whose cluster-robust variance is 0 (no cluster's score moves
            it: its every replicate and standard error are 0, and so would its interval's
            width be).
        ParameterError
            When the replicates give too few distinct ``|T*|`` for the quantile.
        """
        level = check_level(level)
        d = self.inference.cluster_design
        Z = np.asarray(Z, dtype=float).reshape(d.adjusted.shape[0], -1)
        fisher = np.sum(Z * Z, axis=0)
        robust = np.sum((d.adjusted.T @ Z) ** 2, axis=0)
        still = (fisher > 0) & (robust <= 1e-10 * fisher)
        if still.any():
            raise IdentifiabilityError(
                f"the cluster scores do not move {int(still.sum())} of the quantities asked "
                "for: their cluster-robust variance is 0 (a cluster alone determines them, or "
                "there are too few clusters), so is every wild replicate, and an interval "
                "would have width 0. Use more prompts, or cov_type='fisher' if the verdicts "
                "are independent")
        # prompts that carry weight (with comparisons, CR2 weight above 0), and how many
        # distinct |T*| their signs can give, on the log scale (6^G overflows at G = 397)
        G = int(d.weighted_clusters().size)
        log_distinct = {k: G * np.log(2.0 if k == "rademacher" else 6.0) - np.log(2.0)
                        for k in WEIGHTS}
        tail = -np.log1p(-level)  # distinct values needed: 1 / (1 - level)
        if min(log_distinct[self.kind], np.log(self.n)) < tail:
            webb = self.kind == "rademacher" and log_distinct["webb"] >= tail
            raise ParameterError(
                f"{self.n} replicates of {self.kind} weights over {G} prompts that carry weight "
                f"give at most {min(np.exp(log_distinct[self.kind]), self.n):.0f} distinct "
                f"|T*|: too few for a {level:g} quantile" + ("; use weights='webb'" if webb
                                                              else "")
                + "; the CR2 intervals (fit.intervals()) need no draws")
        f = d.adjust
        delta = self._delta()
        U_delta = d.U.T @ delta  # (R, n)
        UZ = d.U.T @ Z  # (R, m)
        ind = d.indicator()
        own = np.asarray(ind @ (UZ * (d.sigma * f ** 2 * d.omega)[:, None]))  # (G, m)
        out = np.empty(Z.shape[1])
        for c in range(Z.shape[1]):
            shift = np.asarray(ind @ ((UZ[:, c] * d.sigma ** 2 * f)[:, None] * U_delta))
            scores = self.weights.T * own[:, c][:, None] - shift  # (G, n)
            se = np.sqrt(np.sum(scores ** 2, axis=0))
            t = np.abs(Z[:, c] @ delta) / np.where(se > 0, se, np.inf)
            out[c] = np.quantile(t, level, method="higher")
        return out

    def table(self, level: float = 0.95, pairs=None) -> pd.DataFrame:
        """Symmetric percentile-t intervals of mu, gamma (beta with position bias) and the
        differences ``mu_a - mu_b`` (``pairs`` as in
        :meth:`~hja_bayes.inference.WaldInference.intervals`).

        Columns: ``quantity``, ``label``, ``estimate``, ``se`` (CR2), ``lower``, ``upper``,
        ``critical`` (the bootstrap critical value that replaces the t quantile).
        """
        inf = self.inference
        N, K = len(self.items), len(self.judges)
        value, cov = inf._core_covariance
        X = inf._core_whitened
        se = np.sqrt(np.clip(np.diagonal(cov), 0.0, None))
        blocks = [("mu", list(self.items), np.arange(N)), ("gamma", list(self.judges),
                                                         np.arange(N, N + K))]
        if "position" in inf.coef_names:
            q = len(inf.coef_names)
            c = inf.coef_names.index("position")
            blocks.append(("beta", list(self.judges), N + K + np.arange(K) * q + c))
        frames = []
        for quantity, labels, index in blocks:
            crit = self.critical_values(X[:, index], level)
            frames.append(pd.DataFrame({
                "quantity": quantity, "label": labels, "estimate": value[index],
                "se": se[index], "lower": value[index] - crit * se[index],
                "upper": value[index] + crit * se[index], "critical": crit}))
        index = item_pairs(pairs, self.items, value[:N])
        if len(index):
            a, b = index[:, 0], index[:, 1]
            est = value[a] - value[b]
            d_se = np.sqrt(np.clip(cov[a, a] + cov[b, b] - 2 * cov[a, b], 0.0, None))
            crit = self.critical_values(X[:, a] - X[:, b], level)
            frames.append(pd.DataFrame({
                "quantity": "mu_diff", "label": [f"{self.items[x]} - {self.items[y]}"
                                                 for x, y in zip(a, b)],
                "estimate": est, "se": d_se, "lower": est - crit * d_se,
                "upper": est + crit * d_se, "critical": crit}))
        table = pd.concat(frames, ignore_index=True)
        clustering = {k: v for k, v in inf.clustering.items() if k not in ("df", "small_sample")}
        table.attrs.update({"level": float(level), "interval": "wild bootstrap (percentile-t)",
                            "se": "cluster-robust (CR2)", "critical": "wild bootstrap quantile "
                            "of |T*| (no t degrees of freedom)", "weights": self.kind,
                            "replicates": self.n, "seed": self.seed, **clustering})
        return table


def wild_bootstrap(inference, n: int = 999, *, weights: str = "rademacher",
                   seed: int = 0) -> WildBootstrap:
    """Wild cluster bootstrap of the scores at a CR2 Wald inference (no refits).

    Parameters
    ----------
    inference : WaldInference
        With ``cov_type="cluster"`` and the CR2 correction (the default when the data carry
        clusters).
    n : int
        Replicates (with Rademacher weights and ``2^G <= n``, all ``2^G`` sign patterns).
    weights : {"rademacher", "webb"}
    seed : int
        Seed of the weights (with every sign pattern enumerated, not needed).

    Returns
    -------
    WildBootstrap

    Raises
    ------
    ParameterError
        Without a CR2 cluster-robust inference, for ``n < 2``, or fewer than two clusters
        that carry weight.
    """
    check_integer(n, "n", 2)
    seed = check_integer(seed, "seed", 0)
    if getattr(inference, "small_sample", None) != "CR2":
        raise ParameterError("the wild bootstrap perturbs the clusters' scores: it needs "
                             "clusters (read the data with cluster=<column>) and "
                             "cov_type='cluster' (CR2)")
    d = inference.cluster_design
    carry = d.weighted_clusters()
    if carry.size < 2:
        raise ParameterError(f"{carry.size} cluster(s) carry weight: the wild bootstrap needs "
                             "two or more")
    drawn = wild_weights(carry.size, int(n), weights, seed)
    w = np.zeros((len(drawn), d.n_clusters))
    w[:, carry] = drawn
    value, G = inference._core_gradient
    X = inference._core_whitened
    delta = d.adjusted @ w.T  # (dim, n)
    draws = value[:, None] + X.T @ delta
    N, K = len(inference.items), len(inference.judges)
    beta = np.zeros((len(w), K))
    if "position" in inference.coef_names:
        q = len(inference.coef_names)
        c = inference.coef_names.index("position")
        beta = draws[N + K + np.arange(K) * q + c].T
    return WildBootstrap(draws[:N].T, draws[N:N + K].T, beta, w,
                         check_choice(weights, "weights", WEIGHTS), inference.judges,
                         inference.items, inference, seed)
