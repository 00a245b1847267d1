"""Posterior samples shared by the Bayesian test modules (sampled once per session)."""

import functools
import warnings

from hja_bayes import ConvergenceWarning, fit_hja, sample_hja, simulate

SETTINGS = dict(num_warmup=300, num_samples=300, num_chains=2, progress_bar=False)


def quiet_sample(*args, **kwargs):
    """sample_hja with short test settings.  R-hat of 600 draws can exceed 1.01 by chance,
    so the ConvergenceWarning is silenced here (the warning has its own tests)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return sample_hja(*args, **{**SETTINGS, **kwargs})


@functools.lru_cache(maxsize=None)
def panel():
    """Well-conditioned panel: 3 judges, 5 items, rank 1, position bias, 1500 comparisons
    each; its MAP fit and a posterior sample.  Returns (data, truth, fit, idata)."""
    data, truth = simulate(3, 5, 1, 1500, seed=11, position_bias=0.4)
    fit = fit_hja(data, 1, position_bias=True)
    return data, truth, fit, quiet_sample(data, 1, init=fit, seed=1)


@functools.lru_cache(maxsize=None)
def panel_rank0():
    """The same data at rank 0 (short run), for rank comparisons."""
    data, _, _, _ = panel()
    fit = fit_hja(data, 0, position_bias=True)
    return fit, quiet_sample(data, 0, init=fit, seed=3, num_warmup=200, num_samples=200)


def panel_from_scores(S, beta, per_cell: int, seed: int):
    """Comparisons of every judge on every ordered pair, ``per_cell`` each, drawn from the
    model at scores S and position biases beta (ties never happen)."""
    import numpy as np
    import pandas as pd

    from hja_bayes import Comparisons
    from hja_bayes.likelihood import HALF, probabilities, sample_counts

    K, N = S.shape
    k, i, j = (a.ravel() for a in np.meshgrid(range(K), range(N), range(N), indexing="ij"))
    keep = i != j
    k, i, j = k[keep], i[keep], j[keep]
    eta = beta[k] + S[k, i] - S[k, j]
    first, ties, _ = sample_counts(np.random.default_rng(seed), np.full(len(k), per_cell),
                                   probabilities(HALF, eta)).T
    frame = pd.DataFrame({"judge": [f"judge{x}" for x in k], "model_a": [f"item{x}" for x in i],
                          "model_b": [f"item{x}" for x in j], "n": per_cell,
                          "wins": first + 0.5 * ties, "ties": ties})
    return Comparisons.from_counts(frame)


@functools.lru_cache(maxsize=None)
def zero_loading_panel():
    """K=4, N=6, rank 1 with item 0's loading exactly 0 in the truth, 60 comparisons per
    ordered pair and judge; its MAP and a posterior sample.  Returns (data, S, fit, idata)."""
    import numpy as np

    S = zero_loading_scores()
    data = panel_from_scores(S, np.zeros(4), 60, seed=5)
    fit = fit_hja(data, 1)
    return data, S, fit, quiet_sample(data, 1, init=fit, seed=2, num_warmup=150, num_samples=200)


def zero_loading_scores(eps: float = 0.0, seed: int = 0):
    """K=4, N=6, rank-1 scores whose V column has item 0's loading exactly 0 (plus noise)."""
    import numpy as np

    mu = np.array([1.2, 0.6, 0.1, -0.3, -0.6, -1.0])
    mu -= mu.mean()
    v = np.array([0.0, 1.0, -2.0, 0.5, 1.5, -1.0])
    # make v orthogonal to 1 and mu while keeping v[0] = 0: project inside the last 5 items
    basis = np.zeros((6, 2))
    basis[1:, 0] = 1.0
    basis[1:, 1] = mu[1:]
    q, _ = np.linalg.qr(basis)
    v = v - q @ (q.T @ v)
    assert abs(v[0]) < 1e-15
    gamma = np.array([0.8, 1.1, 0.9, 1.2])
    u = np.array([1.0, -0.5, 0.8, -1.3])
    S = np.outer(gamma, mu) + np.outer(u - u.mean(), v)
    return S + eps * np.random.default_rng(seed).normal(size=S.shape)


#: Log cut-point gaps of the ordinal panel's judges (t_1 = gap_1, t_2 = gap_1 + gap_2).
ORDINAL_GAPS = ((0.5, 1.0), (0.8, 0.7), (0.3, 1.5))


def ordinal_panel(per_cell: int = 25, seed: int = 0):
    """K=3, N=5, rank 1 with position bias, verdicts on the five-level scale drawn from the
    cumulative-logit model (``sample_counts`` from its probabilities): every judge sees every
    ordered pair ``per_cell`` times.  Returns (data, S, beta)."""
    import numpy as np

    from hja_bayes import simulate
    from hja_bayes.comparisons import aggregate_cells
    from hja_bayes.likelihood import ordinal, probabilities, sample_counts

    _, truth = simulate(3, 5, 1, 10, seed=seed)
    beta = np.array([0.3, -0.2, 0.5])
    K, N = truth.S.shape
    k, i, j = (a.ravel() for a in np.meshgrid(range(K), range(N), range(N), indexing="ij"))
    keep = i != j
    k, i, j = k[keep], i[keep], j[keep]
    model = ordinal(5)
    eta = beta[k] + truth.S[k, i] - truth.S[k, j]
    aux = np.log(np.asarray(ORDINAL_GAPS))[k]
    counts = sample_counts(np.random.default_rng(seed), np.full(len(k), per_cell),
                           probabilities(model, eta, aux))
    data = aggregate_cells([f"judge{x}" for x in range(K)], [f"item{x}" for x in range(N)],
                           k, i, j, counts, categories=model.categories)
    return data, truth.S, beta


def style_panel(n_prompts: int = 30, theta: float = 0.8, self_preference: float = 0.6,
                seed: int = 0):
    """K=3 judges, N=5 models, every judge sees every ordered pair once on each of
    ``n_prompts`` prompts; each answer has a standardised feature ``length``, and a verdict
    (ties counted 1/2, none drawn) follows ``eta = S_ki - S_kj + theta (x_qi - x_qj) +
    lambda_k (1[i = own(k)] - 1[j = own(k)])`` with judges 0 and 1 owning models 0 and 1.
    Returns (data, S, owners)."""
    import numpy as np

    from hja_bayes import simulate
    from hja_bayes.comparisons import aggregate_cells

    rng = np.random.default_rng(seed)
    _, truth = simulate(3, 5, 1, 10, seed=seed + 1)
    K, N = truth.S.shape
    x = rng.normal(size=(n_prompts, N))
    q, k, i, j = (a.ravel() for a in np.meshgrid(range(n_prompts), range(K), range(N), range(N),
                                                  indexing="ij"))
    keep = i != j
    q, k, i, j = q[keep], k[keep], i[keep], j[keep]
    own = np.array([0, 1, -1])[k]
    d = x[q, i] - x[q, j]
    eta = (truth.S[k, i] - truth.S[k, j] + theta * d
           + self_preference * ((i == own).astype(float) - (j == own)))
    first = rng.random(len(k)) < 1 / (1 + np.exp(-eta))
    counts = np.stack([first, np.zeros(len(k)), ~first], axis=1).astype(float)
    judges, items = [f"judge{x}" for x in range(K)], [f"item{x}" for x in range(N)]
    data = aggregate_cells(judges, items, k, i, j, counts, cluster=q,
                           cluster_names=[f"q{x}" for x in range(n_prompts)],
                           features=d[:, None], feature_names=["length"])
    return data, truth.S, {"judge0": "item0", "judge1": "item1"}
