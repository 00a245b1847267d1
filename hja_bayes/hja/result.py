"""The fitted HJA model as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..checks import index_of, indices_of
from ..comparisons import Comparisons
from ..decomposition import free_parameters
from ..errors import DataError, ParameterError, warn
from ..likelihood import outcome_model, probabilities
from ..likelihood.terms import terms_of
from ..summary import count_of

__all__ = ["HJAFit", "DEFAULT_RIDGE"]

#: Default ridge of the MAP fit, ``ridge/2 (|S|^2 + |beta|^2)``: a N(0, 10^2) prior on every
#: score and bias.  It moves well-identified estimates by far less than their standard errors
#: and keeps a (nearly) separated judge finite: with ridge 1e-6 one such judge on MT-Bench put
#: bootstrap replicates of the consensus 1.5 logits away and made its bootstrap heavy-tailed.
DEFAULT_RIDGE = 0.01


def _term_words(term, fit) -> str:
    """A bias term in words (for summaries)."""
    if term.name == "style":
        features = [n.split(":", 1)[1] for n in fit.coef_names + fit.theta_names
                    if n.startswith("style:")]
        scope = "one coefficient per judge" if term.scope == "per_judge" else "shared"
        return f"style ({', '.join(features)}; {scope})"
    if term.name == "self":
        owners = [j for j, free in zip(fit.judges, fit.coef_free[:, fit.coef_names.index("self")])
                  if free]
        return f"self-preference ({', '.join(owners)})"
    return term.name


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
        Negative log-likelihood at the estimate under the fit's outcome model (without the
        ridge); the "half" and "davidson" values are likelihoods of different things and
        are not comparable.
    bic : float
        ``2 nll + r (K + N - r - 3) log n`` (SPEC §3): the parameters a rank adds to rank 0
        are counted, those common to every rank of one model are not (the base scores,
        the terms, the outcome model's), so it compares ranks of one model only.  Fits with
        other terms or outcome models compare by ``2 nll + n_params log n``
        (:attr:`n_params`; n = ``data.n_comparisons``).
    n_iter : int
    converged : bool
    judges, items : tuple of str
    data : Comparisons
        The data the model was fitted to (used for intervals).
    tau, ridge : float
        Final proximal weight and ridge.
    rank_table : DataFrame or None
        Criteria for every candidate rank when the rank was selected: rank, nll, n_params
        (counted as :attr:`n_params` counts them), bic (``2 NLL`` plus the parameters the
        rank adds to rank 0 times ``log n``: SPEC §3), cv_nll, n_iter, converged,
        stopped_early, skipped.
    outcome : str
        The outcome model: "half" (ties count 1/2 to each side), "davidson" (three outcomes,
        per-judge tie propensity nu_k) or "ordinal" (the data's ordered scale, per-judge cut
        points).
    aux : ndarray (K, n_aux) or None
        The outcome model's per-judge parameters on their natural scale (Davidson: nu_k in
        column 0, exactly 0 for a judge that never tied, where it is held; ordinal: the cut
        points' gaps); None for "half".
    terms : tuple
        The linear-predictor terms fitted (:mod:`hja_bayes.likelihood.terms`): position bias,
        style, self-preference.
    coef : ndarray (K, q)
        The per-judge term coefficients, columns named by ``coef_names`` (``"position"`` is
        ``beta``; ``"style:<feature>"`` per-judge style; ``"self"`` self-preference), 0 where
        ``coef_free`` is False.
    coef_free : ndarray of bool (K, q)
        Which judges' coefficients were estimated.
    theta : ndarray (g,)
        Panel-wide coefficients (shared style), named by ``theta_names``.
    excluded_judges : dict
        Judges of the input left out of the fit, with the reason (see ``fit_hja``'s
        ``min_judge_comparisons``); ``data`` holds the judges that were fitted.
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
    outcome: str = "half"
    aux: np.ndarray | None = field(default=None, repr=False)
    excluded_judges: dict = field(default_factory=dict, repr=False)
    terms: tuple = ()
    coef: np.ndarray | None = field(default=None, repr=False)
    coef_names: tuple = ()
    coef_free: np.ndarray | None = field(default=None, repr=False)
    theta: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    theta_names: tuple = ()
    _wald_cache: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        K = len(self.judges)
        if self.position_bias and not self.terms:
            object.__setattr__(self, "terms", terms_of(True))
        if self.coef is None:  # a fit without terms beyond the position bias
            names = ("position",) if self.position_bias else ()
            coef = np.asarray(self.beta, dtype=float).reshape(K, 1)[:, : len(names)]
            object.__setattr__(self, "coef", coef)
            object.__setattr__(self, "coef_names", names)
        if self.coef_free is None:
            object.__setattr__(self, "coef_free", np.ones(np.shape(self.coef), dtype=bool))

    @property
    def outcome_model(self):
        """The :class:`~hja_bayes.likelihood.OutcomeModel` of the fit."""
        return outcome_model(self.outcome, self.data.categories)

    @property
    def ties(self) -> str:
        """Deprecated name of :attr:`outcome`."""
        warn("HJAFit.ties is deprecated: use HJAFit.outcome", DeprecationWarning)
        return self.outcome

    @property
    def nu(self) -> np.ndarray | None:
        """Davidson tie propensities nu_k (0 for a judge that never tied), or None."""
        names = self.outcome_model.aux_names
        if self.aux is None or "nu" not in names:
            return None
        return np.asarray(self.aux)[:, names.index("nu")]

    def coefficient(self, name: str) -> np.ndarray:
        """A per-judge term coefficient by column name (``"position"``, ``"self"``,
        ``"style:length"``), shape (K,); for a shared style feature, its one value
        broadcast to every judge."""
        if name in self.coef_names:
            return np.asarray(self.coef)[:, self.coef_names.index(name)].copy()
        if name in self.theta_names:
            return np.full(len(self.judges), float(self.theta[self.theta_names.index(name)]))
        raise ParameterError(f"the fit has no term coefficient {name!r}; it has "
                        f"{list(self.coef_names) + list(self.theta_names)}")

    def logits(self, k, i, j) -> np.ndarray:
        """Linear predictor of judge ``k`` seeing item ``i`` first and ``j`` second (index
        arrays), for answers of equal style: scores, position bias and self-preference."""
        k, i, j = (_indices(x, n, what) for x, n, what in (
            (k, len(self.judges), "judge"), (i, len(self.items), "item"),
            (j, len(self.items), "item")))
        eta = self.S[k, i] - self.S[k, j]
        if "position" in self.coef_names:
            eta = eta + self.coefficient("position")[k]
        if "self" in self.coef_names:
            own = self._own_items()[k]
            eta = eta + self.coefficient("self")[k] * ((i == own).astype(float)
                                                        - (j == own).astype(float))
        return eta

    def _own_items(self) -> np.ndarray:
        term = next(t for t in self.terms if getattr(t, "name", "") == "self")
        return term.own_items(self.data)

    def predict_proba(self, judge, first, second) -> float:
        """Probability that ``judge`` prefers ``first`` (shown first) over ``second``.

        ``expit(eta)`` with eta the :meth:`logits` (answers of equal style): with ties
        counted 1/2 the probability of a win (a tie being half of one); under Davidson the
        probability that ``first`` wins a decisive verdict; under the ordered model that the
        judge's latent preference favours ``first`` (a verdict for it is less likely where
        there is a neutral one).  :meth:`outcome_proba` gives every outcome.
        """
        k = index_of(judge, self.judges, "judge")
        i = index_of(first, self.items, "item")
        j = index_of(second, self.items, "item")
        from scipy.special import expit

        return float(expit(self.logits(k, i, j)))

    def cell_probabilities(self, data: Comparisons | None = None) -> np.ndarray:
        """``expit(eta)`` for every cell of ``data`` (answers of equal style): the fitted
        probability that the first-shown item wins, read as :meth:`predict_proba` says per
        outcome model (a decisive verdict under Davidson, the latent preference under the
        ordered model; :meth:`outcome_proba` gives every outcome)."""
        from scipy.special import expit

        if data is None or data is self.data:
            return expit(self.logits(self.data.judge, self.data.first, self.data.second))
        if not isinstance(data, Comparisons):
            raise ParameterError(f"data must be Comparisons, got {type(data).__name__}")
        # by name: the data's own indices may number other judges or models
        judge = indices_of(list(data.judges), self.judges, "judge")[data.judge]
        item = indices_of(list(data.items), self.items, "item")
        return expit(self.logits(judge, item[data.first], item[data.second]))

    def outcome_proba(self, frame) -> pd.DataFrame:
        """Probability of each outcome for every row of ``frame``.

        Parameters
        ----------
        frame : DataFrame
            With columns ``judge``, ``model_a`` (shown first) and ``model_b``, names as in
            the fit.

        Returns
        -------
        DataFrame
            Columns ``p_first``, ``p_tie``, ``p_second`` (rows sum to 1), on ``frame``'s
            index.  Under Davidson they are the model's three probabilities; with ties
            counted 1/2 the model has no tie probability, so ``p_tie`` is the judge's tie
            rate in the training data and the rest is split by the logistic probability.
            Ordered verdicts: one column per level, ``p_<level>`` (``p_A>>B`` ... ``p_B>>A``,
            or ``p_2`` ... ``p_-2``), strongest for the first-shown model first.

        Raises
        ------
        DataError
            When a column is missing or a judge or model is not in the fit.
        """
        if isinstance(frame, dict):
            frame = pd.DataFrame(frame)
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError(f"frame must be a DataFrame, got {type(frame).__name__}")
        missing = [c for c in ("judge", "model_a", "model_b") if c not in frame]
        if missing:
            raise DataError(f"outcome_proba needs the columns judge, model_a, model_b; missing {missing}")
        index = []
        for column, names, what in (("judge", self.judges, "judge"), ("model_a", self.items, "model"),
                                    ("model_b", self.items, "model")):
            codes = pd.Series(frame[column]).map({name: i for i, name in enumerate(names)})
            if codes.isna().any():
                unknown = sorted(set(pd.Series(frame[column])[codes.isna()].astype(str)))[:5]
                raise DataError(f"unknown {what}(s) in column {column!r}: {unknown}")
            index.append(codes.to_numpy(dtype=np.int64))
        k, i, j = index
        eta = self.logits(k, i, j)
        model = self.outcome_model
        if model.n_aux:
            with np.errstate(divide="ignore"):
                aux = np.log(np.asarray(self.aux, dtype=float))[k]
            p = probabilities(model, eta, aux)
            if model.n_categories != 3:
                return pd.DataFrame(p, columns=[f"p_{c}" for c in model.categories],
                                    index=getattr(frame, "index", None))
            p_first, p_tie, p_second = p[:, 0], p[:, 1], p[:, 2]
        else:
            data = self.data
            n = np.bincount(data.judge, data.n, len(self.judges))
            tie_rate = np.bincount(data.judge, data.ties, len(self.judges)) / np.maximum(n, 1e-300)
            p_tie = tie_rate[k]
            p_first = (1 - p_tie) * probabilities(model, eta)[:, 0]
            p_second = (1 - p_tie) - p_first
        return pd.DataFrame({"p_first": p_first, "p_tie": p_tie, "p_second": p_second},
                            index=getattr(frame, "index", None))

    @property
    def n_params(self) -> int:
        """Free parameters: ``(r+1)(K+N-r-2)``, plus the estimated term coefficients (K for
        position bias), plus the outcome model's estimated per-judge parameters (Davidson:
        one nu_k per judge that tied)."""
        extra = 0 if self.aux is None else int(np.count_nonzero(np.asarray(self.aux) > 0))
        terms = int(np.sum(self.coef_free)) + len(self.theta_names)
        return free_parameters(len(self.judges), len(self.items), self.rank, False) + terms + extra

    @property
    def cov_type(self) -> str:
        """The default covariance of the intervals: "cluster" (CR2) when the data carry
        clusters (prompts), else "fisher"."""
        return "fisher" if self.data.clusters is None else "cluster"

    @property
    def clustering(self) -> dict | None:
        """What the default cluster-robust intervals rest on, or None without clusters:
        ``cluster_column`` (the input column, when the reader knew it), ``n_clusters`` (G,
        clusters holding comparisons), ``effective_clusters`` (``(sum n_g)^2 / sum n_g^2``
        over their comparison counts), ``small_sample`` ("CR2") and ``df``
        ("Satterthwaite")."""
        from ..inference.clusters import cluster_record

        return cluster_record(self.data, "CR2") or None

    @property
    def wald(self):
        """Wald inference at this fit with the default ``cov_type`` (computed once)."""
        return self.wald_inference()

    def wald_inference(self, cov_type: str | None = None):
        """Wald inference at this fit (:class:`~hja_bayes.inference.WaldInference`).

        Parameters
        ----------
        cov_type : {"fisher", "sandwich", "cluster", "CR2", "CR1"}, optional
            See :func:`hja_bayes.inference.wald_inference` ("cluster" is CR2); default
            :attr:`cov_type`.

        Raises a clear error when the information is singular or the comparison graph is
        disconnected.  Each covariance type is computed once and kept.
        """
        from ..inference import wald_inference
        from ..inference.information import normal_cov_type

        kind, small = normal_cov_type(self.cov_type if cov_type is None else cov_type, self.data)
        key = kind if small in (None, "CR2") else small
        if key not in self._wald_cache:
            self._wald_cache[key] = wald_inference(
                self.data, self.S, self.beta, self.rank, position_bias=self.position_bias,
                cov_type=key, ridge=self.ridge, outcome=self.outcome, aux=self.aux,
                terms=self.terms, coef=self.coef, theta=self.theta)
        return self._wald_cache[key]

    @one_blas_thread
    def intervals(self, level: float = 0.95, cov_type: str | None = None,
                  pairs=None) -> pd.DataFrame:
        """Wald intervals for mu, gamma, beta (with position bias), nu (Davidson ties) and
        differences mu_a - mu_b.

        Columns: quantity, label, estimate, se, lower, upper.  ``cov_type`` as in
        :meth:`wald_inference` (default: cluster-robust when clusters are known).
        ``pairs`` names the differences (see
        :meth:`~hja_bayes.inference.WaldInference.pairs`): by default every pair up to 100
        models, above that each model and its neighbour in the ranking; ``"all"``,
        ``"adjacent"``, ``"none"`` or a list of (model, model).  A cut gap beside levels a
        judge never used, and the gamma of a judge that tied every verdict, have NaN bounds
        (the ridge's values: see the fit's warnings).
        """
        from .inputs import without_interval

        table = self.wald_inference(cov_type).intervals(level, pairs)
        judges = np.asarray(self.judges, dtype=object)
        for name, blank in without_interval(self.data, self.outcome_model).items():
            rows = (table["quantity"] == name) & table["label"].isin(judges[blank])
            table.loc[rows, ["lower", "upper"]] = np.nan
        return table

    def contrast(self, q: Callable, level: float = 0.95, cov_type: str | None = None):
        """Wald interval of any differentiable ``q(S, beta)`` (delta method); see
        :meth:`~hja_bayes.inference.WaldInference.contrast`."""
        return self.wald_inference(cov_type).contrast(q, level)

    def leverage(self):
        """Judge leverage diagnostics (:func:`~hja_bayes.diagnostics.judge_leverage`)."""
        from ..diagnostics import judge_leverage

        return judge_leverage(self.gamma, self.mu, self.U, self.V)

    def _ties_line(self) -> str:
        if self.outcome == "ordinal":
            return (f"verdicts: ordered scale {list(self.data.categories)}, cumulative logit "
                    "with symmetric per-judge cut points (\"ordinal\")")
        if self.nu is None:
            line = "ties: counted 1/2 to each side (\"half\")"
        else:
            line = ("ties: Davidson model (\"davidson\"), tie propensity nu per judge "
                    f"{np.min(self.nu):.3g}..{np.max(self.nu):.3g}")
            fixed = [self.judges[k] for k in np.flatnonzero(self.nu == 0)]
            if fixed:
                line += f"; nu held at 0 (no ties in the data) for {fixed}"
        if len(self.data.categories) > 3:  # a three-outcome model of a finer scale
            line += (f"; the verdicts' scale {list(self.data.categories)} read as first / tie "
                     "/ second (outcome=\"ordinal\" keeps their strength)")
        return line

    def __repr__(self) -> str:
        """One line: what was fitted, to what, and whether it converged (no arrays)."""
        K, N = len(self.judges), len(self.items)
        return (f"HJAFit(rank={self.rank}, {K} judge{'s' * (K != 1)}, {N} models, "
                f"{count_of(self.data.n_comparisons, 'comparison')}, "
                f"position_bias={self.position_bias}, "
                + "".join(f"{name}, " for name in (*self.coef_names, *self.theta_names)
                          if name != "position")
                + f"outcome={self.outcome!r}, "
                f"nll={self.nll:.6g}, {'converged' if self.converged else 'NOT converged'} "
                f"in {self.n_iter} iterations)")

    def summary(self) -> str:
        """A short text summary of the fit."""
        K, N = len(self.judges), len(self.items)
        lines = [
            f"HJA fit: rank {self.rank}, {K} judge{'s' * (K != 1)}, {N} model{'s' * (N != 1)}, "
            f"position bias {'on' if self.position_bias else 'off'}",
            f"NLL {self.nll:.3f}, BIC {self.bic:.3f}, {self.n_iter} iterations, "
            f"{'converged' if self.converged else 'NOT converged'}",
            self._ties_line(),
        ]
        terms = [t for t in self.terms if t.name != "position"]
        if terms:
            lines.append("controlled for: " + "; ".join(_term_words(t, self) for t in terms))
        if self.data.one_orientation_only:
            lines.append(
                "note: every pair is shown in one orientation only, so position bias and "
                "structured disagreement cannot be told apart"
            )
        for name, why in self.excluded_judges.items():
            lines.append(f"left out: judge {name!r} {why}")
        order = np.argsort(-self.mu)
        lines.append("consensus: " + " > ".join(self.items[i] for i in order))
        return "\n".join(lines)


def _indices(x, size: int, what: str) -> np.ndarray:
    """Integer positions in ``range(size)`` (a negative one had counted from the end)."""
    x = np.asarray(x)
    if x.size == 0:
        return x.astype(np.int64)
    if x.dtype.kind not in "iu" or np.any(x < 0) or np.any(x >= size):
        raise ParameterError(f"{what} indices must be integers in 0..{size - 1}, got {x!r:.60}")
    return x
