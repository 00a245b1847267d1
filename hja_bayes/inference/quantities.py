"""The standard quantities of a Wald inference: the consensus, the sensitivities, the terms'
coefficients, the outcome model's parameters, differences and win probabilities, and the
tidy table of them all (mixed into :class:`~hja_bayes.inference.WaldInference`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..checks import indices_of
from ..errors import IdentifiabilityError, ParameterError
from .intervals import Interval, interval, quantile
from .pairs import item_pairs

__all__ = ["Quantities"]


class Quantities:
    """Intervals of the quantities every table reports, from the covariance machinery of
    :class:`~hja_bayes.inference.WaldInference` (``_core_covariance``, ``_core_interval``,
    ``contrast``, ...)."""

    def _item_index(self, item) -> np.ndarray:
        return indices_of(item, self.items, "item")

    def _judge_index(self, judge) -> np.ndarray:
        return indices_of(judge, self.judges, "judge")

    def mu_covariance(self, joint: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Consensus scores mu and their covariance matrix (N x N, singular: sum(mu) = 0).

        The joint statements made from it (rank intervals, tiers) need the N - 1 free
        scores' covariance to be of full rank: a cluster-robust one from G clusters has rank
        at most G - 1, so with G < N it is refused (IdentifiabilityError, see
        :meth:`check_joint`) unless ``joint=False``, for statements about one score or one
        difference at a time, which that rank does not limit.
        """
        value, cov = self._core_covariance
        N = len(self.items)
        if joint:
            self.check_joint(N - 1, f"the scores of {N} models")
        return value[:N].copy(), cov[:N, :N].copy()

    def mu_degrees_of_freedom(self) -> tuple[np.ndarray, np.ndarray]:
        """Degrees of freedom of every mu_i and of every difference mu_a - mu_b (N x N, inf
        on the diagonal): Satterthwaite's under CR2, inf (normal quantiles) otherwise."""
        N = len(self.items)
        if self.small_sample != "CR2":
            return np.full(N, np.inf), np.full((N, N), np.inf)
        a, b = np.triu_indices(N, 1)
        out = np.full((N, N), np.inf)
        out[a, b] = out[b, a] = self.difference_degrees_of_freedom(np.column_stack([a, b]))
        self._check_variance(self._core_whitened[:, :N], self._core_df[:N])
        return self._core_df[:N].copy(), out

    def difference_degrees_of_freedom(self, pairs) -> np.ndarray:
        """Degrees of freedom of ``mu_a - mu_b`` for each row ``(a, b)`` of ``pairs`` (item
        indices): Satterthwaite's under CR2, inf otherwise (for a few pairs of many models,
        without every pair's)."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if self.small_sample != "CR2":
            return np.full(len(pairs), np.inf)
        if not len(pairs):
            return np.zeros(0)
        X = self._core_whitened[:, :len(self.items)]
        return self._df_whitened(X[:, pairs[:, 0]] - X[:, pairs[:, 1]])

    def mu(self, level: float = 0.95) -> Interval:
        """Consensus scores mu_i (the mean of the judges' centred score rows)."""
        return self._core_interval(np.arange(len(self.items)), level)

    def gamma(self, level: float = 0.95) -> Interval:
        """Judge sensitivities gamma_k (``sum(gamma) = K``); a judge that tied every verdict
        gets NaN for its se and bounds.  Under the half model its gamma is 0 (half a win each
        way is no preference at all) and no interval describes it: the Fisher one reads its
        verdicts as coin flips (an se of about 0.3 on a small panel, whatever the ridge), a
        sandwich or cluster-robust one is made of its residuals of 0 (width about 0).  Under
        Davidson or an ordinal model the ridge alone sets its tie parameter and its gamma is
        not identified."""
        N, K = len(self.items), len(self.judges)
        index = np.arange(N, N + K)
        tied = np.zeros(K, bool) if self.tied_judges is None else np.asarray(self.tied_judges)
        if not tied.any():
            return self._core_interval(index, level)
        kept = self._core_interval(index[~tied], level)

        def spread(x):
            out = np.full(K, np.nan)
            out[~tied] = x
            return out

        return Interval(self._core_covariance[0][index].copy(), spread(kept.se),
                        spread(kept.lower), spread(kept.upper),
                        None if kept.df is None else spread(kept.df))

    def position_biases(self, level: float = 0.95) -> Interval:
        """Per-judge position biases beta_k (only when they were estimated)."""
        if not self.position_bias:
            raise IdentifiabilityError("position bias was not estimated in this fit")
        return self.coefficients("position", level)

    def coefficients(self, name: str, level: float = 0.95) -> Interval:
        """A linear term's coefficient by column name: per judge (shape (K,); all NaN for a
        judge without one, e.g. self-preference without its own model) for ``"position"``,
        ``"self"`` and per-judge ``"style:<feature>"``; one panel-wide value (shape ())
        for a shared style feature.

        Raises
        ------
        ParameterError
            When the fit has no such coefficient (the message lists those it has).
        """
        N, K = len(self.items), len(self.judges)
        q = len(self.coef_names)
        if name in self.coef_names:
            c = self.coef_names.index(name)
            free = np.asarray(self.coef_free)[:, c]
            index = N + K + np.arange(K) * q + c
            iv = self._core_interval(index[free], level)
            out = [np.full(K, np.nan) for _ in range(5)]
            out[0][free] = self._core_covariance[0][index[free]]  # 0 had read as estimated
            for x, y in zip(out[1:], iv[1:]):
                if y is not None:
                    x[free] = y
            return Interval(*out[:4], None if iv.df is None else out[4])
        if name in self.theta_names:
            index = N + K + K * q + self.theta_names.index(name)
            iv = self._core_interval(np.array([index]), level)
            return Interval(*(None if x is None else x[0] for x in iv))  # df: CR2's only
        raise ParameterError(f"the fit has no term coefficient {name!r}; it has "
                                   f"{list(self.coef_names) + list(self.theta_names)}")

    def panel_coefficient(self, name: str, level: float = 0.95) -> Interval:
        """The panel's value of a term coefficient: the mean over the judges that have it of a
        per-judge coefficient (per-judge style ``theta = mean_k theta_k``), or the shared one.
        A name the fit does not have raises ParameterError, as in :meth:`coefficients`."""
        if name in self.theta_names:
            return self.coefficients(name, level)
        return self._judge_contrast(name, level, excess=False)

    def coefficient_excess(self, name: str, level: float = 0.95) -> Interval:
        """Each judge's excess over the panel value, ``delta_k = theta_k - theta`` (sums to 0
        over the judges that have the coefficient; NaN for the others)."""
        return self._judge_contrast(name, level, excess=True)

    def _judge_contrast(self, name: str, level: float, excess: bool) -> Interval:
        if name not in self.coef_names:
            raise ParameterError(f"the fit has no per-judge coefficient {name!r}; it has "
                                 f"{list(self.coef_names)}")
        c = self.coef_names.index(name)
        have = np.asarray(self.coef_free)[:, c]
        weights = have / have.sum()
        if not excess:
            return self._linear(lambda Z: Z[:, c] @ weights, level)
        iv = self._linear(lambda Z: Z[:, c] - Z[:, c] @ weights, level)
        nan = np.where(have, 1.0, np.nan)
        return Interval(iv.estimate * nan, iv.se * nan, iv.lower * nan, iv.upper * nan,
                        None if iv.df is None else iv.df * nan)

    def _linear(self, f, level: float) -> Interval:
        return self._interval_of_terms(lambda S, Z, theta: f(Z), level)

    def outcome_parameters(self, name: str = "nu", level: float = 0.95) -> Interval:
        """The outcome model's per-judge parameter ``name`` (Davidson: the tie propensity nu_k).

        The interval is a Wald interval for ``log nu_k`` mapped back, ``nu_k exp(+- z se)``,
        so it stays positive; ``se`` is the delta-method standard error on the natural
        scale.  A judge whose parameter is held at 0 (it never tied) has estimate 0 and NaN
        for se, lower and upper: the data give no interval there, only the boundary.

        Raises
        ------
        IdentifiabilityError
            When the fit's outcome model has no parameter of that name.
        """
        if name not in self.aux_names:
            raise IdentifiabilityError(
                f"the {self.outcome!r} outcome model has no per-judge parameter {name!r}"
                + (f" (it has {list(self.aux_names)})" if self.aux_names else "")
            )
        K = len(self.judges)
        m = len(self.aux_names)
        a = self.aux_names.index(name)
        value = np.asarray(self.aux, dtype=float)[:, a]
        G = np.zeros((K, self.chart.dim))
        position = np.searchsorted(self.chart.free, np.arange(K) * m + a)
        estimated = np.isin(np.arange(K) * m + a, self.chart.free)
        G[estimated, self.chart.aux_offset + position[estimated]] = 1.0
        var = np.diagonal(self._chart_covariance(G))
        df = self._df(G[estimated]) if estimated.any() else None
        if df is not None:
            full = np.full(K, np.inf)
            full[estimated] = df
            df = full
        z = quantile(level, df)
        se_log = np.sqrt(np.clip(var, 0.0, None))
        held = value <= 0
        se_log = np.where(held, np.nan, se_log)
        return Interval(value, value * se_log, value * np.exp(-z * se_log),
                        value * np.exp(z * se_log), df)

    def pairs(self, pairs="all") -> np.ndarray:
        """Item index pairs ``(a, b)`` named by ``pairs``: see :func:`~hja_bayes.inference.pairs.item_pairs`
        ("adjacent" follows the estimated mu, best first)."""
        return item_pairs(pairs, self.items, self._core_covariance[0][: len(self.items)])

    def mu_differences(self, level: float = 0.95, pairs="all") -> tuple[list[tuple[int, int]], Interval]:
        """``mu_a - mu_b`` for the pairs of items named by ``pairs`` (see
        :func:`~hja_bayes.inference.pairs.item_pairs`; default every pair ``a < b`` in the
        data's item order).

        Returns
        -------
        pairs : list of (a, b)
            Item indices of each difference.
        Interval
            One entry per pair.
        """
        value, cov = self._core_covariance
        N = len(self.items)
        index = self.pairs(pairs)
        a, b = index[:, 0], index[:, 1]
        C = cov[:N, :N]
        est = value[a] - value[b]
        var = C[a, a] + C[b, b] - 2 * C[a, b]
        df = None
        if self.small_sample == "CR2" and a.size:
            X = self._core_whitened
            df = self._df_whitened(X[:, a] - X[:, b])
        return list(zip(a.tolist(), b.tolist())), interval(est, var, level, df)

    def score_difference(self, judge, first, second, level: float = 0.95) -> Interval:
        """Judge-specific contrast ``S[k, i] - S[k, j]``.

        Parameters
        ----------
        judge, first, second : str, int or array-like of them
            Judge and the two items, by name or index; arrays are broadcast together.
        level : float
            Confidence level.

        Returns
        -------
        Interval
            Of the broadcast shape.

        Raises
        ------
        ParameterError
            For an unknown name or an index out of range.
        """
        k, i, j = np.broadcast_arrays(
            self._judge_index(judge), self._item_index(first), self._item_index(second)
        )
        return self.contrast(lambda S, beta: S[k, i] - S[k, j], level)

    def win_probability(self, judge, first, second, level: float = 0.95) -> Interval:
        """Probability that ``judge`` prefers ``first`` (shown first) over ``second``.

        ``p = expit(beta_k + S[k, i] - S[k, j])``: with ties counted 1/2 the probability of a
        win; under Davidson of a win in a decisive verdict; under the ordered model that the
        judge's latent preference favours ``first``.  The interval is computed on the logit
        scale and mapped through the logistic function (so it stays inside (0, 1)); ``se``
        is the delta-method standard error on the probability scale.

        Parameters
        ----------
        judge, first, second : str, int or array-like of them
            Judge, the item shown first and the item shown second, by name or index; arrays
            are broadcast together.
        level : float
            Confidence level.

        Returns
        -------
        Interval
            Of the broadcast shape, on the probability scale.
        """
        k, i, j = np.broadcast_arrays(
            self._judge_index(judge), self._item_index(first), self._item_index(second)
        )
        logit = self.contrast(lambda S, beta: beta[k] + S[k, i] - S[k, j], level)
        from scipy.special import expit

        p = expit(logit.estimate)
        return Interval(p, p * (1 - p) * logit.se, expit(logit.lower), expit(logit.upper),
                        logit.df)

    def intervals(self, level: float = 0.95, pairs=None) -> pd.DataFrame:
        """Tidy table of Wald intervals for mu, gamma, beta and differences of mu.

        Parameters
        ----------
        level : float
            Confidence level.
        pairs : "all", "adjacent", "none", None or sequence of (item, item)
            Which differences ``mu_a - mu_b`` get rows (see
            :func:`~hja_bayes.inference.pairs.item_pairs`).  Default
            (None): every pair up to :data:`ALL_PAIRS_MAX_ITEMS` models (N (N - 1) / 2
            rows), above that the N - 1 neighbours in the ranking ("adjacent"); ask for
            ``pairs="all"`` to get every pair of a large panel.  The full covariance of mu
            is :meth:`mu_covariance`.

        Returns
        -------
        DataFrame
            Columns ``quantity`` ("mu", "gamma", "beta" (only with position bias), the other
            term coefficients ("self", "style:<feature>": per judge that has one, and for
            style also the panel value labelled "(panel)"), the outcome model's parameters
            (e.g. "nu", see :meth:`outcome_parameters`), "mu_diff"), ``label`` (item, judge,
            "(panel)" or "a - b"), ``estimate``, ``se``, ``lower``, ``upper``; under the CR2
            cluster-robust covariance also ``df``, the Satterthwaite degrees of freedom of
            each row's t quantile.  ``attrs`` records ``level``, ``cov_type``,
            ``small_sample`` and, for a cluster-robust covariance, ``cluster_column``,
            ``n_clusters``, ``effective_clusters`` and ``df`` (how the degrees of freedom
            were found).
        """
        frames = []
        cr2 = self.small_sample == "CR2"

        def add(quantity, labels, iv):
            frame = pd.DataFrame({
                "quantity": quantity, "label": list(labels), "estimate": iv.estimate,
                "se": iv.se, "lower": iv.lower, "upper": iv.upper,
            })
            if cr2:
                frame["df"] = np.inf if iv.df is None else iv.df
            frames.append(frame)

        add("mu", self.items, self.mu(level))
        add("gamma", self.judges, self.gamma(level))
        for c, name in enumerate(self.coef_names):
            free = np.asarray(self.coef_free)[:, c]  # a judge without the coefficient: no row
            iv = self.coefficients(name, level)
            add("beta" if name == "position" else name, np.asarray(self.judges)[free],
                Interval(*(None if x is None else np.asarray(x)[free] for x in iv)))
            if name.startswith("style:"):
                iv = self.panel_coefficient(name, level)
                add(name, ["(panel)"], Interval(*(None if x is None else np.atleast_1d(x)
                                                  for x in iv)))
        for name in self.theta_names:
            iv = self.coefficients(name, level)
            add(name, ["(panel)"], Interval(*(None if x is None else np.atleast_1d(x)
                                                  for x in iv)))
        for name in self.aux_names:
            add(name, self.judges, self.outcome_parameters(name, level))
        index, differences = self.mu_differences(level, pairs)
        add("mu_diff", [f"{self.items[a]} - {self.items[b]}" for a, b in index], differences)
        table = pd.concat(frames, ignore_index=True)
        table.attrs.update({"level": float(level), "cov_type": self.cov_type,
                            "small_sample": self.small_sample, **self.clustering})
        return table
