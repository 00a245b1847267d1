"""The fitted HJA model as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..checks import index_of
from ..comparisons import Comparisons
from ..decomposition import free_parameters

__all__ = ["HJAFit", "DEFAULT_RIDGE"]

#: Default ridge of the MAP fit, ``ridge/2 (|S|^2 + |beta|^2)``: a N(0, 10^2) prior on every
#: score and bias.  It moves well-identified estimates by far less than their standard errors
#: and keeps a (nearly) separated judge finite: with ridge 1e-6 one such judge on MT-Bench put
#: bootstrap replicates of the consensus 1.5 logits away and made its bootstrap heavy-tailed.
DEFAULT_RIDGE = 0.01


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
    _wald_cache: dict = field(default_factory=dict, init=False, repr=False)

    def predict_proba(self, judge, first, second) -> float:
        """Probability that ``judge`` prefers ``first`` (shown first) over ``second``."""
        k = index_of(judge, self.judges, "judge")
        i = index_of(first, self.items, "item")
        j = index_of(second, self.items, "item")
        from scipy.special import expit

        return float(expit(self.beta[k] + self.S[k, i] - self.S[k, j]))

    def cell_probabilities(self, data: Comparisons | None = None) -> np.ndarray:
        """Fitted probability that the first-shown item wins, for every cell of ``data``."""
        data = self.data if data is None else data
        from scipy.special import expit

        return expit(self.beta[data.judge] + self.S[data.judge, data.first]
                     - self.S[data.judge, data.second])

    @property
    def n_params(self) -> int:
        """Free parameters: ``(r+1)(K+N-r-2)`` plus K with position bias."""
        return free_parameters(len(self.judges), len(self.items), self.rank, self.position_bias)

    @property
    def cov_type(self) -> str:
        """The default covariance of the intervals: "cluster" when the data carry clusters
        (prompts), else "fisher"."""
        return "fisher" if self.data.clusters is None else "cluster"

    @property
    def wald(self):
        """Wald inference at this fit with the default ``cov_type`` (computed once)."""
        return self.wald_inference()

    def wald_inference(self, cov_type: str | None = None):
        """Wald inference at this fit (:class:`~hja_bayes.inference.WaldInference`).

        Parameters
        ----------
        cov_type : {"fisher", "sandwich", "cluster"}, optional
            See :func:`hja_bayes.inference.wald_inference`; default :attr:`cov_type`.

        Raises a clear error when the information is singular or the comparison graph is
        disconnected.  Each covariance type is computed once and kept.
        """
        from ..inference import wald_inference

        key = self.cov_type if cov_type is None else cov_type
        if key not in self._wald_cache:
            self._wald_cache[key] = wald_inference(
                self.data, self.S, self.beta, self.rank, position_bias=self.position_bias,
                cov_type=key, ridge=self.ridge)
        return self._wald_cache[key]

    def intervals(self, level: float = 0.95, cov_type: str | None = None) -> pd.DataFrame:
        """Wald intervals for mu, gamma, beta (with position bias) and every mu_i - mu_j.

        Columns: quantity, label, estimate, se, lower, upper.  ``cov_type`` as in
        :meth:`wald_inference` (default: cluster-robust when clusters are known).
        """
        return self.wald_inference(cov_type).intervals(level)

    def contrast(self, q: Callable, level: float = 0.95, cov_type: str | None = None):
        """Wald interval of any differentiable ``q(S, beta)`` (delta method); see
        :meth:`~hja_bayes.inference.WaldInference.contrast`."""
        return self.wald_inference(cov_type).contrast(q, level)

    def bootstrap(self, n: int = 200, seed: int = 0, cluster: bool = True, progress=None):
        """Bootstrap replicates of this fit, each warm-started here.

        See :func:`hja_bayes.hja.bootstrap.bootstrap_fit`.  Cost: ``n`` refits (each a
        fraction of the original fit, as it starts at the optimum).
        """
        from .bootstrap import bootstrap_fit

        return bootstrap_fit(self, n, seed=seed, cluster=cluster, progress=progress)

    def leverage(self):
        """Judge leverage diagnostics (:func:`~hja_bayes.diagnostics.judge_leverage`)."""
        from ..diagnostics import judge_leverage

        return judge_leverage(self.gamma, self.mu, self.U, self.V)

    def save(self, path, idata=None):
        """Write the fit (and optionally its posterior) to the folder ``path``.

        See :func:`hja_bayes.persistence.save_fit` for the format (JSON + .npz, no pickle);
        read it back with :func:`hja_bayes.load_fit`.

        Returns
        -------
        pathlib.Path
            The folder.
        """
        from ..persistence import save_fit

        return save_fit(self, path, idata=idata)

    def __repr__(self) -> str:
        """One line: what was fitted, to what, and whether it converged (no arrays)."""
        K, N = len(self.judges), len(self.items)
        return (f"HJAFit(rank={self.rank}, {K} judge{'s' * (K != 1)}, {N} models, "
                f"{self.data.n_comparisons:g} comparisons, position_bias={self.position_bias}, "
                f"nll={self.nll:.6g}, {'converged' if self.converged else 'NOT converged'} "
                f"in {self.n_iter} iterations)")

    def summary(self) -> str:
        """A short text summary of the fit."""
        K, N = len(self.judges), len(self.items)
        lines = [
            f"HJA fit: rank {self.rank}, {K} judge{'s' * (K != 1)}, {N} item{'s' * (N != 1)}, "
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
