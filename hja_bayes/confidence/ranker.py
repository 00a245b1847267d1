"""A learned confidence: an MLP trained to rank agreeing examples above disagreeing ones.

``C(s) = sigmoid(MLP(s))`` with layers d -> 64 -> 32 -> 16 -> 1 (ReLU); the network is in
:mod:`.network`, the trainers in :mod:`.train`, the PAC-Bayes bound in :mod:`.pac_bayes`.
Three variants (SPEC section 7):

* **Gaussian posterior** (default, ``posterior=True``): a mean-field Gaussian weight posterior
  trained by SVI on ``m * E_Q[surrogate] + KL(Q || P)``; it predicts with the posterior mean
  of the confidence and reports the posterior spread and a PAC-Bayes bound.
* **margin-adaptive MLP** (``posterior=False``): deterministic weights with the complexity
  term ``beta * sqrt(sum_l |W_l|_F^2) / gamma`` and the margin re-optimised every epoch.
* **vanilla** (``posterior=False, margin=<float>``): deterministic weights, fixed margin.

Effective sample size.  The training pairs share examples, so they are not independent.
Conditionally on the numbers of agreeing and disagreeing examples ``n_a`` and ``n_d``, the
agreeing examples are i.i.d. draws from ``D(s | a = 1)`` and the disagreeing ones from
``D(s | a = 0)``; pairing them without reuse gives ``m = min(n_a, n_d)`` i.i.d. pairs from
``D(s | a = 1) x D(s | a = 0)``.  That ``m`` (not the 5,000 training pairs) is the sample size
of the bound and the weight of the data term in the SVI objective.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import DataError, HJAError
from .examples import check_agree, check_features
from .network import draw_confidences, layer_shapes, network_confidence
from .pac_bayes import PACBayesBound, gaussian_kl, gibbs_pair_bound
from .train import TrainSettings, make_trainer

__all__ = ["ConfidenceRanker"]

_PAD = 256  # feature matrices are padded to a multiple of this many rows (fewer recompiles)


def _pad_rows(x: np.ndarray) -> jnp.ndarray:
    n = x.shape[0]
    target = -(-n // _PAD) * _PAD
    return jnp.asarray(np.vstack([x, np.zeros((target - n, x.shape[1]))]))


class ConfidenceRanker:
    """Learn a judge's confidence from features by pairwise margin ranking.

    Parameters
    ----------
    posterior : bool
        True (default): Gaussian weight posterior trained by SVI; False: deterministic MLP.
    margin : "adaptive" or float
        ``"adaptive"`` (default): the margin is re-optimised after every epoch; a float:
        fixed margin (with ``posterior=False`` this is the "vanilla" ranker: no complexity
        term).
    hidden : tuple of int
        Hidden layer widths (default 64, 32, 16).
    temperature : float
        Softplus temperature ``tau`` (0.1).
    beta : float
        Weight of the complexity term ``sqrt(sum |W|_F^2) / gamma`` (1e-4); used with the
        adaptive margin.
    n_pairs : int
        Training pairs drawn at random (with replacement) among all (agree, disagree) pairs.
    n_epochs : int
        Passes over the training pairs.
    batch_size : int
        Pairs per optimisation step.
    learning_rate : float, optional
        Adam step size; default 1e-3 for the deterministic MLP, 1e-2 for SVI.
    weight_decay : float
        L2 penalty ``weight_decay / 2 * sum |W|^2`` on the deterministic weights (1e-4).
    prior_scale : float
        Standard deviation ``sigma_0`` of the Gaussian prior on every weight and bias (0.2).
        With few examples a wide prior lets the KL term pull the posterior back to the prior
        and the posterior mean becomes an arbitrary network (0.5 did so on Trust-or-Escalate
        at 400 items); 0.2 did not.
    init_scale : float
        Initial posterior standard deviation.
    kl_weight : float
        Multiplies ``KL(Q || P)`` in the SVI objective relative to the PAC-Bayes choice
        ``m * E_Q[loss] + KL`` (default 1).
    initial_margin : float
        Starting margin (and the margin when ``margin`` is a float).
    seed : int
        Seed of the pair draws, the initialisation and the SVI noise.

    Attributes
    ----------
    params_ : dict
        Fitted weights (the posterior means with ``posterior=True``).
    posterior_scale_ : dict or None
        Posterior standard deviations.
    margin_ : float
        Final margin ``gamma``.
    history_ : ndarray
        Mean training objective per epoch.
    margin_history_ : ndarray
        Margin after each epoch.
    n_effective_ : int
        ``min(n_agree, n_disagree)``.

    Examples
    --------
    >>> from hja_bayes.confidence import simulate_confidence_data
    >>> d = simulate_confidence_data(300, seed=0).data
    >>> r = ConfidenceRanker(n_pairs=512, n_epochs=2, seed=0).fit(d.features, d.agree)
    >>> c = r.predict(d.features)
    >>> c.shape, bool(((c >= 0) & (c <= 1)).all())
    ((300,), True)
    """

    def __init__(
        self,
        *,
        posterior: bool = True,
        margin="adaptive",
        hidden: tuple[int, ...] = (64, 32, 16),
        temperature: float = 0.1,
        beta: float = 1e-4,
        n_pairs: int = 5000,
        n_epochs: int = 30,
        batch_size: int = 256,
        learning_rate: float | None = None,
        weight_decay: float = 1e-4,
        prior_scale: float = 0.2,
        init_scale: float = 0.05,
        kl_weight: float = 1.0,
        initial_margin: float = 0.1,
        seed: int = 0,
    ):
        self.posterior = posterior
        self.margin = margin
        self.hidden = tuple(int(h) for h in hidden)
        self.temperature = temperature
        self.beta = beta
        self.n_pairs = n_pairs
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.prior_scale = prior_scale
        self.init_scale = init_scale
        self.kl_weight = kl_weight
        self.initial_margin = initial_margin
        self.seed = seed

    # ------------------------------------------------------------------ fitting
    def _check_settings(self) -> bool:
        if isinstance(self.margin, str):
            if self.margin != "adaptive":
                raise HJAError(f"margin must be 'adaptive' or a number, got {self.margin!r}")
            adaptive = True
        else:
            if not 0.0 < float(self.margin) <= 1.0:
                raise HJAError("a fixed margin must lie in (0, 1]")
            adaptive = False
        for name in ("temperature", "prior_scale", "init_scale", "kl_weight", "initial_margin"):
            if not float(getattr(self, name)) > 0:
                raise HJAError(f"{name} must be positive")
        if self.beta < 0 or self.weight_decay < 0:
            raise HJAError("beta and weight_decay must be non-negative")
        if min(self.n_pairs, self.n_epochs, self.batch_size) < 1 or any(h < 1 for h in self.hidden):
            raise HJAError("n_pairs, n_epochs, batch_size and the hidden widths must be positive")
        return adaptive

    def fit(self, features, agree) -> "ConfidenceRanker":
        """Train the ranker.

        Parameters
        ----------
        features : array_like, shape (n, d)
            Features in ``[0, 1]``.
        agree : array_like of bool / 0-1, shape (n,)
            Agreement with the human label; both classes must occur.

        Returns
        -------
        self

        Raises
        ------
        DataError
            On features outside ``[0, 1]`` or NaN, or a single agreement class.
        """
        adaptive = self._check_settings()
        x = check_features(features)
        a = check_agree(agree, x.shape[0], need_both=True)
        pos, neg = np.flatnonzero(a), np.flatnonzero(~a)
        key = jax.random.PRNGKey(self.seed)
        k_pairs, k_train = jax.random.split(key)
        kh, kl = jax.random.split(k_pairs)
        hi = jnp.asarray(pos)[jax.random.randint(kh, (self.n_pairs,), 0, len(pos))]
        lo = jnp.asarray(neg)[jax.random.randint(kl, (self.n_pairs,), 0, len(neg))]
        batch = min(self.batch_size, self.n_pairs)
        n_batches = self.n_pairs // batch
        xp = _pad_rows(x)
        gamma0 = float(self.initial_margin if adaptive else self.margin)
        shapes = layer_shapes(x.shape[1], self.hidden)
        self.n_effective_ = int(min(len(pos), len(neg)))
        default_lr = 1e-2 if self.posterior else 1e-3
        settings = TrainSettings(
            shapes=shapes, posterior=bool(self.posterior), adaptive=adaptive,
            temperature=float(self.temperature), beta=float(self.beta),
            weight_decay=float(self.weight_decay),
            learning_rate=default_lr if self.learning_rate is None else float(self.learning_rate),
            init_scale=float(self.init_scale), n_batches=n_batches, batch_size=batch,
        )
        train = make_trainer(settings, int(self.n_epochs))
        data_weight = jnp.asarray(self.n_effective_ / float(self.kl_weight))
        prior_sd = jnp.full(sum(a * b + b for a, b in shapes), float(self.prior_scale))
        locs, scales, history = train(k_train, xp, hi, lo, gamma0, data_weight, prior_sd)
        self.params_ = locs
        self.posterior_scale_ = scales
        gamma, gammas = history.margin[-1], history.margin
        history = history.objective
        self.n_features_in_ = x.shape[1]
        self.margin_ = float(gamma)
        self.history_ = np.asarray(history)
        self.margin_history_ = np.asarray(gammas)
        self._train_features = x
        self._train_agree = a
        return self

    # ------------------------------------------------------------------ prediction
    def _checked(self, features) -> np.ndarray:
        if not hasattr(self, "params_"):
            raise HJAError("call fit() before predicting")
        x = check_features(features)
        if x.shape[1] != self.n_features_in_:
            raise DataError(f"expected {self.n_features_in_} features, got {x.shape[1]}")
        return x

    def predict(self, features, *, n_draws: int = 200, use: str = "predictive") -> np.ndarray:
        """Confidence in ``[0, 1]``.

        For a posterior ranker this is the posterior mean of the confidence,
        ``E_Q[C_theta(s)]``, averaged over ``n_draws`` weight draws (seeded by the ranker's
        ``seed``, so repeated calls agree).  It is the score the SVI objective trains (the
        Gibbs ranker's average); the network at the mean weights (``use="weights"``) can be a
        different function, and with few examples it sometimes ranks the opposite way.

        Parameters
        ----------
        features : array_like, shape (n, d)
        n_draws : int
            Posterior draws for the predictive mean.
        use : {"predictive", "weights"}
            Posterior mean of the confidence (default) or the network at the posterior-mean
            weights.  Deterministic rankers ignore it.

        Returns
        -------
        ndarray, shape (n,)
        """
        x = self._checked(features)
        if self.posterior_scale_ is None or use == "weights":
            return np.asarray(network_confidence(self.params_, jnp.asarray(x)))
        if use != "predictive":
            raise HJAError(f"use must be 'predictive' or 'weights', got {use!r}")
        return self._draws_blocked(x, n_draws, self.seed + 7919).mean(axis=0)

    def _draws_blocked(self, x: np.ndarray, n_draws: int, seed: int) -> np.ndarray:
        """Confidences under ``n_draws`` posterior draws, shape (n_draws, n), computed in blocks
        of rows so memory stays near n_draws x block x width (every block sees the same draws)."""
        if self.posterior_scale_ is None:
            raise HJAError("this ranker has no weight posterior (posterior=False)")
        if int(n_draws) < 1:
            raise HJAError("n_draws must be positive")
        width = max(self.hidden + (1,))
        block = max(_PAD, (2**25 // (int(n_draws) * width)) // _PAD * _PAD)
        key = jax.random.PRNGKey(seed)
        if x.shape[0] <= block:
            return np.asarray(draw_confidences(self.params_, self.posterior_scale_, key, jnp.asarray(x), int(n_draws)))
        out = np.empty((int(n_draws), x.shape[0]))
        for start in range(0, x.shape[0], block):
            rows = x[start : start + block]
            padded = np.vstack([rows, np.zeros((block - len(rows), x.shape[1]))])
            conf = draw_confidences(self.params_, self.posterior_scale_, key, jnp.asarray(padded), int(n_draws))
            out[:, start : start + len(rows)] = np.asarray(conf)[:, : len(rows)]
        return out

    def predict_draws(self, features, n_draws: int = 200, *, seed: int = 0) -> np.ndarray:
        """Confidences under weights drawn from the posterior.

        Parameters
        ----------
        features : array_like, shape (n, d)
        n_draws : int
            Number of posterior draws.
        seed : int
            Seed of the draws.

        Returns
        -------
        ndarray, shape (n_draws, n)
        """
        return self._draws_blocked(self._checked(features), n_draws, seed)

    def predict_spread(self, features, n_draws: int = 200, *, seed: int = 0) -> np.ndarray:
        """Posterior standard deviation of the confidence of each example.

        Parameters
        ----------
        features : array_like, shape (n, d)
        n_draws : int
            Number of posterior draws.
        seed : int
            Seed of the draws.

        Returns
        -------
        ndarray, shape (n,)
        """
        return self.predict_draws(features, n_draws, seed=seed).std(axis=0)

    # ------------------------------------------------------------------ PAC-Bayes
    def kl_divergence(self) -> float:
        """``KL(Q || P)`` between the fitted Gaussian posterior and the prior, in nats.

        Returns
        -------
        float
        """
        if self.posterior_scale_ is None:
            raise HJAError("this ranker has no weight posterior (posterior=False)")
        return gaussian_kl(self.params_, self.posterior_scale_, float(self.prior_scale))

    def pac_bayes_bound(
        self,
        features=None,
        agree=None,
        *,
        delta: float = 0.05,
        delta_mc: float = 0.01,
        n_draws: int = 1000,
        seed: int = 0,
    ) -> PACBayesBound:
        """Bound the misranking probability of the Gibbs ranker (PAC-Bayes-kl).

        The Gibbs ranker draws ``theta ~ Q`` and ranks by ``C_theta``.  Its risk is
        ``R(Q) = E_{theta~Q} P(C_theta(s) <= C_theta(s'))`` with ``s ~ D(. | agree)`` and
        ``s' ~ D(. | disagree)`` independent: one minus its AUROC, ties counted as errors.

        Notes
        -----
        Assumptions:

        * The examples are i.i.d. (the human labels and features of different examples are
          independent); then, given the class counts, the agreeing and the disagreeing
          examples are i.i.d. from their class-conditional distributions.
        * The prior ``N(0, prior_scale^2 I)`` was fixed before seeing the data (the default
          is; a prior scale tuned on these data voids the bound unless a union bound is paid).
        * The loss is the 0-1 misranking loss (ties count as errors), in [0, 1].

        Construction.  The agreeing and disagreeing examples are matched at random without
        reuse into ``m = min(n_agree, n_disagree)`` disjoint pairs: these are i.i.d., so ``m`` is
        the honest sample size (the thousands of overlapping training pairs are not).  The
        Gibbs risk on them is estimated with ``n_draws`` posterior draws and bounded above by
        the Chernoff-kl inequality ``kl(R_hat_S || R_hat) <= ln(1/delta_mc) / n_draws``
        (Langford and Caruana 2002); that upper value goes into the PAC-Bayes-kl bound
        ``kl(R_hat || R) <= (KL(Q||P) + ln(2 sqrt(m)/delta)) / m`` (Maurer 2004).  The result
        holds with probability at least ``1 - delta - delta_mc``.

        Parameters
        ----------
        features, agree : array_like, optional
            The sample (default: the training data; Q may depend on it, P may not).
        delta : float
            Error level of the PAC-Bayes step.
        delta_mc : float
            Error level of the Monte Carlo step.
        n_draws : int
            Posterior draws.
        seed : int
            Seed of the matching and of the draws.

        Returns
        -------
        PACBayesBound
        """
        if features is None:
            if not hasattr(self, "_train_features"):
                raise HJAError("call fit() first")
            x, a = self._train_features, self._train_agree
        else:
            x = self._checked(features)
            a = check_agree(agree, x.shape[0], need_both=True)
        if not (0 < delta < 1 and 0 < delta_mc < 1):
            raise DataError("delta and delta_mc must lie in (0, 1)")
        rng = np.random.default_rng(seed)
        pos, neg = rng.permutation(np.flatnonzero(a)), rng.permutation(np.flatnonzero(~a))
        m = int(min(len(pos), len(neg)))
        if m < 1:
            raise DataError("need both agreeing and disagreeing examples")
        conf = self._draws_blocked(np.concatenate([x[pos[:m]], x[neg[:m]]]), n_draws, seed)
        return gibbs_pair_bound(conf[:, :m], conf[:, m:], self.kl_divergence(), delta, delta_mc)

    def __repr__(self) -> str:
        kind = "posterior" if self.posterior else ("margin-adaptive" if self.margin == "adaptive" else "vanilla")
        return f"ConfidenceRanker({kind}, hidden={self.hidden}, seed={self.seed})"
