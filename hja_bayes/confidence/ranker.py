"""A learned confidence: a network trained to rank agreeing verdicts above disagreeing ones.

:class:`ConfidenceRanker` is a scikit-learn classifier of agreement (``fit(X, y)`` with ``y``
= 1 where the judge agreed with the human).  Its score, :meth:`~ConfidenceRanker.predict_confidence`,
is what the selective-evaluation functions threshold.  Pieces: the input transform
(:mod:`.inputs`), the network (:mod:`.network`), the trainers (:mod:`.train`), the bounds
(:mod:`.pac_bayes`), saving (:mod:`.storage`).

Variants (SPEC section 7):

* **Gaussian posterior** (default, ``posterior=True``): a mean-field Gaussian ``Q`` over the
  weights against the prior ``P = N(0, diag sigma_0^2)`` (sigma_0 = ``prior_scale`` /
  sqrt(fan_in) per weight), trained by SVI on ``(m / kl_weight) E_Q[surrogate] + KL(Q || P)``;
  it predicts with the posterior mean of the confidence.
* **margin-adaptive** (``margin="adaptive"``): the margin is re-optimised every epoch against
  the complexity term ``beta sqrt(sum_l |W_l|_F^2) / gamma``.
* **deterministic** (``posterior=False``): plain weights; with a fixed margin this is the
  paper's "vanilla" ranker.

Effective sample size.  Pairs share examples, so they are not independent.  Given the class
counts ``n_a`` and ``n_d``, pairing agreeing and disagreeing examples without reuse gives
``m = min(n_a, n_d)`` i.i.d. pairs: that ``m`` is the sample size of the bound and of the data
term.  ``kl_weight < 1`` (default 0.1) lets the data pull the posterior further from the prior
than the bound's own trade-off would; the bound stays valid (it holds for every ``Q``), only
looser.
"""

from __future__ import annotations

import jax
import numpy as np
from scipy.special import expit, logit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ..checks import check_choice, check_positive
from .train import TrainSettings
from ..errors import DataError, HJAError, ParameterError
from .examples import agreement_of, warn_label_order
from .inputs import apply_transform, fit_transform
from .metrics import auroc
from .fitting import network_scores, padded_width, platt_calibration, posterior_draws, train_networks
from .network import layer_shapes, prior_scales, unflatten
from .pac_bayes import PACBayesBound, gaussian_kl, gibbs_pair_bound, one_per_group
from .storage import read_ranker, save_ranker

__all__ = ["ConfidenceRanker", "PRIOR_GRID", "RankerNotFittedError", "load_ranker"]

#: Candidate prior scales of ``prior_scale="auto"`` (chosen on an internal 3-fold split).
PRIOR_GRID = (0.5, 1.0, 2.0)
_INNER_FOLDS = 3


class RankerNotFittedError(NotFittedError, HJAError):
    """The ranker was used before :meth:`ConfidenceRanker.fit` (scikit-learn's NotFittedError)."""


class ConfidenceRanker(ClassifierMixin, BaseEstimator):
    """Learn a judge's confidence from features by pairwise margin ranking.

    Parameters
    ----------
    posterior : bool
        Gaussian weight posterior trained by SVI (default) or deterministic weights.
    margin : float or "adaptive"
        Fixed margin ``gamma`` (default 0.1), or re-optimised after every epoch.
    hidden : tuple of int
        Hidden layer widths (default (32, 16)).
    preprocess : {"quantile", "standardize", "none"}
        Input transform fitted on the training features (default: normal scores through the
        training quantiles, see :mod:`hja_bayes.confidence.inputs`).
    prior_scale : float or "auto"
        ``s`` in the prior sd ``s / sqrt(fan_in)`` of every weight (``s / 2`` for biases);
        default 1 (the LeCun initialisation scale, fixed before seeing data).  ``"auto"``
        picks s from :data:`PRIOR_GRID` by AUROC on an internal 3-fold split of the training
        data; the PAC-Bayes bound then pays ``ln 3`` for the choice (posterior only).
    kl_weight : float
        Divides the data term ``m * E_Q[surrogate]`` of the SVI objective (default 0.1).
    temperature, beta : float
        Softplus temperature (0.1) and weight of the complexity term (1e-4, adaptive margin).
    n_pairs, n_epochs, batch_size : int
        Pool of (agree, disagree) training pairs drawn at random, passes over it, pairs per
        step (defaults 5000, 25, 128: about 1,000 steps).
    learning_rate : float, optional
        Adam step size; default 1e-2 (posterior) or 3e-3 (deterministic).
    weight_decay : float
        L2 penalty of the deterministic weights.
    init_scale : float
        Initial posterior standard deviation.
    initial_margin : float
        Starting margin of the adaptive variant.
    n_draws : int
        Posterior draws for the predictive mean.
    seed : int
        Seed of the pairs, the initialisation, SVI and the predictive draws.

    Attributes
    ----------
    classes_ : ndarray, shape (2,)
        The labels of ``y``; the second is "agree".
    params_, posterior_scale_ : dict
        Posterior means (or the weights) and standard deviations (None if deterministic).
    transform_ : InputTransform
        The fitted input transform.
    calibration_ : (float, float)
        Slope and intercept of the monotone logistic map from the network's logit to the
        reported confidence, fitted on the training data.
    prior_scale_ : float
        The prior scale used.
    margin_, history_, margin_history_ : float, ndarray, ndarray
        Final margin, mean objective per epoch, margin per epoch.
    n_effective_ : int
        ``min(n_agree, n_disagree)``.
    certificate_ : Certificate
        Set by :meth:`certify`; saved with the ranker.

    Examples
    --------
    >>> from hja_bayes.confidence import simulate_confidence_data
    >>> d = simulate_confidence_data(300, seed=0).data
    >>> r = ConfidenceRanker(n_pairs=512, n_epochs=2).fit(d.features, d.agree)
    >>> c = r.predict_confidence(d.features)
    >>> c.shape, bool(((c >= 0) & (c <= 1)).all()), r.predict_proba(d.features).shape
    ((300,), True, (300, 2))
    """

    def __init__(self, *, posterior=True, margin=0.1, hidden=(32, 16), preprocess="quantile",
                 prior_scale=1.0, kl_weight=0.1, temperature=0.1, beta=1e-4, n_pairs=5000,
                 n_epochs=25, batch_size=128, learning_rate=None, weight_decay=1e-4,
                 init_scale=0.05, initial_margin=0.1, n_draws=200, seed=0):
        self.posterior = posterior
        self.margin = margin
        self.hidden = hidden
        self.preprocess = preprocess
        self.prior_scale = prior_scale
        self.kl_weight = kl_weight
        self.temperature = temperature
        self.beta = beta
        self.n_pairs = n_pairs
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.init_scale = init_scale
        self.initial_margin = initial_margin
        self.n_draws = n_draws
        self.seed = seed

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    # ------------------------------------------------------------------ fitting
    def _settings(self, n_features: int):
        if isinstance(self.margin, str):
            check_choice(self.margin, "margin", ("adaptive",))
        elif not 0.0 < float(self.margin) <= 1.0:
            raise ParameterError(f"a fixed margin must lie in (0, 1], got {self.margin!r}")
        if not isinstance(self.prior_scale, str):
            check_positive(self.prior_scale, "prior_scale")
        elif self.prior_scale != "auto":
            raise ParameterError(f"prior_scale must be a positive number or 'auto', got {self.prior_scale!r}")
        elif not self.posterior:
            raise ParameterError("prior_scale='auto' chooses the prior of the weight posterior: it needs posterior=True")
        for name in ("temperature", "kl_weight", "init_scale", "initial_margin"):
            check_positive(getattr(self, name), name)
        for name in ("beta", "weight_decay"):
            check_positive(getattr(self, name), name, allow_zero=True)
        hidden = tuple(self.hidden)
        sizes = (self.n_pairs, self.n_epochs, self.batch_size, self.n_draws) + hidden
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in sizes):
            raise ParameterError("n_pairs, n_epochs, batch_size, n_draws and the hidden widths must be positive integers")
        batch = min(int(self.batch_size), int(self.n_pairs))
        default_lr = 1e-2 if self.posterior else 3e-3
        return TrainSettings(
            shapes=layer_shapes(n_features, hidden), posterior=bool(self.posterior),
            adaptive=isinstance(self.margin, str), temperature=float(self.temperature),
            beta=float(self.beta), weight_decay=float(self.weight_decay),
            learning_rate=default_lr if self.learning_rate is None else float(self.learning_rate),
            init_scale=float(self.init_scale), n_batches=int(self.n_pairs) // batch, batch_size=batch)

    def _train(self, settings, x, agree_sets, scales, key):
        margin = float(self.initial_margin if settings.adaptive else self.margin)
        return train_networks(settings, x, agree_sets, scales, key, n_pairs=int(self.n_pairs),
                              kl_weight=float(self.kl_weight), margin=margin, n_epochs=int(self.n_epochs))

    def fit(self, X, y) -> "ConfidenceRanker":
        """Train the ranker.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Finite real features.
        y : array_like, shape (n,)
            Agreement with the human label: two classes (0/1, booleans, or any two labels,
            the second in sorted order meaning "agree": warned where it means "disagree").

        Returns
        -------
        self

        Raises
        ------
        DataError
            On NaN or infinite features, or a ``y`` with one class only.
        ParameterError
            On invalid settings.
        """
        try:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        check_classification_targets(y)
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        classes = np.unique(y)
        if kind not in ("binary", "unknown") and len(classes) > 2:
            raise DataError(f"Only binary classification is supported (agree / disagree); the type of "
                            f"the target is {kind}.")
        if len(classes) != 2:
            raise DataError("ConfidenceRanker needs two classes in y (agreeing and disagreeing "
                            "examples); y holds only one class")
        settings, self.classes_ = self._settings(padded_width(X.shape[1])), classes
        warn_label_order(classes)
        agree = y == classes[1]
        self.transform_ = fit_transform(X, self.preprocess)
        x = apply_transform(self.transform_, X)
        key = jax.random.PRNGKey(int(self.seed))
        self.prior_scale_ = (self._choose_prior(settings, x, agree, key) if self.prior_scale == "auto"
                             else float(self.prior_scale))
        locs, scales, history = self._train(settings, x, [agree.astype(int)], [self.prior_scale_], key)
        take = jax.tree_util.tree_map(lambda v: np.asarray(v[0]), (locs, scales, history))
        self.params_, self.posterior_scale_, history = take
        self.margin_ = float(history.margin[-1])
        self.history_ = history.objective
        self.margin_history_ = history.margin
        self.n_effective_ = int(min(agree.sum(), (~agree).sum()))
        self._train_x, self._train_agree = x, agree
        self.calibration_ = platt_calibration(self._score(x), agree)
        return self

    def _choose_prior(self, settings, x, agree, key) -> float:
        rng = np.random.default_rng(int(self.seed))
        fold = np.empty(len(agree), dtype=int)
        for cls in (True, False):
            idx = rng.permutation(np.flatnonzero(agree == cls))
            fold[idx] = np.arange(len(idx)) % _INNER_FOLDS
        jobs = [(f, s) for f in range(_INNER_FOLDS) for s in PRIOR_GRID]
        # held-out examples get -1: they are in neither class, so in no training pair
        masks = [np.where(fold == f, -1, agree.astype(int)) for f, _ in jobs]
        locs, scales, _ = self._train(settings, x, masks, [s for _, s in jobs], jax.random.fold_in(key, 2))
        score = np.zeros(len(PRIOR_GRID))
        for j, (f, s) in enumerate(jobs):
            net = jax.tree_util.tree_map(lambda v: np.asarray(v[j]), (locs, scales))
            held = fold == f
            c = self._score(x[held], weights=net)
            score[PRIOR_GRID.index(s)] += auroc(c, agree[held]) if 0 < agree[held].sum() < held.sum() else 0.5
        return float(PRIOR_GRID[int(np.argmax(score))])

    # ------------------------------------------------------------------ prediction
    def _features(self, X) -> np.ndarray:
        if not hasattr(self, "params_"):
            raise RankerNotFittedError("this ConfidenceRanker is not fitted yet: call fit() first")
        check_is_fitted(self)
        try:
            X = validate_data(self, X, dtype=np.float64, reset=False)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        return apply_transform(self.transform_, X)

    def _score(self, x: np.ndarray, *, weights=None) -> np.ndarray:
        """Posterior-mean network confidence of transformed features (uncalibrated)."""
        locs, scales = weights if weights is not None else (self.params_, self.posterior_scale_)
        return network_scores(locs, scales, x, int(self.n_draws), int(self.seed) + 7919)

    def _draws(self, x: np.ndarray, n_draws: int, seed: int, *, weights=None) -> np.ndarray:
        locs, scales = weights if weights is not None else (self.params_, self.posterior_scale_)
        if scales is None:
            raise HJAError("this ranker has no weight posterior (posterior=False)")
        return posterior_draws(locs, scales, x, n_draws, seed)

    def predict_confidence(self, X) -> np.ndarray:
        """The confidence: estimated probability that the judge's verdict agrees with humans.

        The posterior mean of the network's confidence (``n_draws`` seeded weight draws, so
        repeated calls agree), passed through the increasing logistic map ``calibration_``.
        Only its order matters to :func:`fixed_sequence_threshold` and the metrics.

        Parameters
        ----------
        X : array_like, shape (n, d)

        Returns
        -------
        ndarray, shape (n,)
        """
        z = logit(np.clip(self._score(self._features(X)), 1e-12, 1 - 1e-12))
        slope, intercept = self.calibration_
        return expit(slope * z + intercept)

    def decision_function(self, X) -> np.ndarray:
        """Log-odds of agreement, ``logit(predict_confidence(X))``; positive means "agree"."""
        return logit(np.clip(self.predict_confidence(X), 1e-300, 1 - 1e-16))

    def predict_proba(self, X) -> np.ndarray:
        """Columns: P(disagree), P(agree) = :meth:`predict_confidence` (order of ``classes_``)."""
        c = self.predict_confidence(X)
        return np.column_stack([1.0 - c, c])

    def predict(self, X) -> np.ndarray:
        """The predicted class: ``classes_[1]`` ("agree") where the confidence is at least 1/2."""
        agree = self.predict_confidence(X) >= 0.5
        return self.classes_[agree.astype(int)]

    def predict_draws(self, X, n_draws: int = 200, *, seed: int = 0) -> np.ndarray:
        """Network confidences under weights drawn from the posterior (the Gibbs ranker's
        scores, before calibration), shape (n_draws, n)."""
        return self._draws(self._features(X), n_draws, seed)

    def predict_spread(self, X, n_draws: int = 200, *, seed: int = 0) -> np.ndarray:
        """Posterior standard deviation of each example's network confidence, shape (n,)."""
        return self.predict_draws(X, n_draws, seed=seed).std(axis=0)

    # ------------------------------------------------------------------ certificates
    def certify(self, X, y, alpha: float, delta: float, *, groups=None, min_selected: int = 30):
        """Certify a confidence threshold on calibration data (not used in training).

        Runs :func:`~hja_bayes.confidence.certify_threshold` on
        ``predict_confidence(X)``, stores the result as ``certificate_`` (it is saved with
        the ranker) and returns it.

        Parameters
        ----------
        X, y : array_like
            Calibration features and agreement.
        alpha, delta : float
            Target disagreement rate and failure probability.
        groups : array_like, optional
            Group labels of the calibration examples (group-level test when given).
        min_selected : int
            See :func:`~hja_bayes.confidence.fixed_sequence_threshold`.

        Returns
        -------
        Certificate
        """
        from .selective import certify_threshold

        check_is_fitted(self)
        agree = agreement_of(y, self.classes_)
        self.certificate_ = certify_threshold(self.predict_confidence(X), agree, alpha, delta,
                                              groups=groups, min_selected=min_selected, seed=int(self.seed))
        return self.certificate_

    def trusted(self, X) -> np.ndarray:
        """Boolean mask: verdicts whose confidence reaches the certified threshold."""
        cert = getattr(self, "certificate_", None)
        if cert is None:
            raise HJAError("no certificate: call certify() on calibration data first")
        c = self.predict_confidence(X)
        return np.zeros(len(c), dtype=bool) if cert.threshold is None else c >= cert.threshold

    def kl_divergence(self) -> float:
        """``KL(Q || P)`` between the fitted posterior and the prior, in nats."""
        check_is_fitted(self)
        if self.posterior_scale_ is None:
            raise HJAError("this ranker has no weight posterior (posterior=False)")
        shapes = layer_shapes(self.n_features_in_, tuple(self.hidden))
        prior = {k: np.asarray(v) for k, v in unflatten(prior_scales(shapes, self.prior_scale_), shapes).items()}
        return gaussian_kl(self.params_, self.posterior_scale_, prior)

    def pac_bayes_bound(self, X=None, y=None, *, groups=None, delta: float = 0.05,
                        delta_mc: float = 0.01, n_draws: int = 1000, seed: int = 0) -> PACBayesBound:
        """Bound the misranking probability of the *Gibbs* ranker (PAC-Bayes-kl).

        The bound covers the randomised ranker that draws fresh weights ``theta ~ Q`` for
        every comparison, not the posterior-mean confidence that :meth:`predict_confidence`
        reports and that thresholds are certified on (for the deployed score, use
        :func:`~hja_bayes.confidence.holdout_misranking_bound` on held-out data).

        Notes
        -----
        Assumptions: the examples (or, with ``groups``, the groups) are i.i.d.; the prior was
        fixed before seeing the sample, except for the choice among the ``len(PRIOR_GRID)``
        scales of ``prior_scale="auto"``, which the bound pays for by a union bound (``ln 3``
        added to the KL); the loss is the 0-1 misranking loss (ties count as errors).  On the
        training sample (the default) the input transform was fitted on the same examples:
        the prior over networks is fixed, but the inputs it sees are re-coded with the
        sample's own quantiles.  Pass held-out ``X, y`` for a bound free of that caveat.

        Construction: agreeing and disagreeing examples (one per group, at random, when
        ``groups`` is given) are matched at random without reuse into ``m`` disjoint pairs;
        the Gibbs risk on them is estimated with ``n_draws`` posterior draws and bounded by
        Chernoff-kl at level ``delta_mc``; that goes into the PAC-Bayes-kl bound at ``delta``.

        Returns
        -------
        PACBayesBound
        """
        if X is None:
            check_is_fitted(self)
            if not hasattr(self, "_train_x"):
                raise HJAError("this ranker was loaded from disk: pass the examples to bound on")
            x, a = self._train_x, self._train_agree
        else:
            x = self._features(X)
            a = agreement_of(y, self.classes_, x.shape[0], need_both=True)
        rng = np.random.default_rng(seed)
        keep = one_per_group(groups, len(a), rng) if groups is not None else np.arange(len(a))
        pos = rng.permutation(keep[a[keep]])
        neg = rng.permutation(keep[~a[keep]])
        m = int(min(len(pos), len(neg)))
        if m < 1:
            raise DataError("need both agreeing and disagreeing examples (in different groups)")
        conf = self._draws(np.concatenate([x[pos[:m]], x[neg[:m]]]), n_draws, seed)
        n_priors = len(PRIOR_GRID) if self.prior_scale == "auto" else 1
        return gibbs_pair_bound(conf[:, :m], conf[:, m:], self.kl_divergence(), delta, delta_mc,
                                n_priors=n_priors)

    def save(self, path) -> None:
        """Save to a folder (JSON and ``.npz``, no pickle); see :func:`load_ranker`."""
        save_ranker(self, path)

    @classmethod
    def load(cls, path) -> "ConfidenceRanker":
        """A ranker saved by :meth:`save` (see :func:`load_ranker`)."""
        params, fitted = read_ranker(path, cls)
        ranker = cls(**params)
        for name, value in fitted.items():
            setattr(ranker, name, value)
        return ranker


def load_ranker(path) -> ConfidenceRanker:
    """Read a ranker written by :meth:`ConfidenceRanker.save` (or ``storage.save_ranker``).

    Returns
    -------
    ConfidenceRanker
        Fitted, with ``certificate_`` when one was saved and ``saved_extra_`` holding the
        ``extra`` dict.

    Raises
    ------
    DataError
        When the folder holds no saved ranker or one of an unknown format version.
    """
    return ConfidenceRanker.load(path)
