"""Panel-aware features from a fitted HJA panel."""

from types import SimpleNamespace

import numpy as np
import pytest

from hja_bayes.confidence import auroc, load_prd_vicuna80_confidence
from hja_bayes.confidence.loaders import PRD_JUDGES
from hja_bayes.confidence.panel import PANEL_FEATURES, panel_features


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _fake_fit(judges, items, seed):
    rng = np.random.default_rng(seed)
    gamma = rng.uniform(0.2, 1.5, len(judges))
    mu = rng.normal(size=len(items))
    U, V = rng.normal(size=(len(judges), 1)), rng.normal(size=(len(items), 1))
    return SimpleNamespace(judges=tuple(judges), items=tuple(items), gamma=gamma, mu=mu,
                           S=np.outer(gamma, mu) + U @ V.T, beta=rng.normal(size=len(judges)))


def test_features_by_hand():
    fit = _fake_fit(["a", "b", "c"], ["x", "y", "z"], 0)
    first, second, verdict = ["x", "y", "z"], ["y", "z", "x"], [0, 1, 2]
    f = panel_features(fit, "b", first, second, verdict)
    assert tuple(f) == PANEL_FEATURES
    for n, (i, j, v) in enumerate(zip((0, 1, 2), (1, 2, 0), verdict)):
        cons = np.mean([_sigmoid(fit.S[m, i] - fit.S[m, j]) for m in (0, 2)])
        own = _sigmoid(fit.beta[1] + fit.S[1, i] - fit.S[1, j])
        dev = fit.S[1, i] - fit.S[1, j] - fit.gamma[1] * (fit.mu[i] - fit.mu[j])
        towards = {0: lambda p: p, 1: lambda p: 1 - p, 2: lambda p: 1 - abs(2 * p - 1)}[v]
        assert f["hja_consensus"][n] == pytest.approx(towards(cons))
        assert f["hja_own"][n] == pytest.approx(towards(own))
        assert f["hja_deviation"][n] == pytest.approx({0: dev, 1: -dev, 2: -abs(dev)}[v])
        assert f["hja_bias_for_verdict"][n] == pytest.approx({0: 1, 1: -1, 2: 0}[v] * fit.beta[1])


def test_prd_loader_adds_panel_features():
    from hja_bayes.datasets import load_prd_vicuna80

    items = sorted(set(load_prd_vicuna80().judgments["model_a"]))
    fit = _fake_fit(PRD_JUDGES, items, 1)
    plain = load_prd_vicuna80_confidence("gpt4")
    rich = load_prd_vicuna80_confidence("gpt4", panel=fit)
    names = list(rich.feature_names)
    assert names[: plain.n_features] == list(plain.feature_names)
    assert np.array_equal(rich.features[:, : plain.n_features], plain.features)
    assert names[plain.n_features:] == list(PANEL_FEATURES) + ["hja_weighted_agreement"]
    # the weighted agreement by hand: each other judge's two orders weighted by its gamma
    weights = {k: fit.gamma[PRD_JUDGES.index(k)] for k in PRD_JUDGES if k != "gpt4"}
    num = sum(w * rich.features[:, names.index(f"agrees__{k}__{o}")]
              for k, w in weights.items() for o in ("same", "swapped"))
    expect = num / (2 * sum(weights.values()))
    assert np.allclose(rich.features[:, names.index("hja_weighted_agreement")], expect)
    # the panel's own agreement signal stays informative (AUROC of the plain share: 0.80)
    assert auroc(rich.features[:, names.index("hja_weighted_agreement")], rich.agree) > 0.75
