import jax
import jax.numpy as jnp
import numpy as np

from hja_bayes import simulate
from hja_bayes.likelihood import cells_of, fisher_blocks, negative_log_likelihood


def test_nll_matches_direct_binomial_sum_and_fisher_matches_hessian():
    data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=300, seed=5,
                           position_bias=0.3, tie_prob=0.1)
    cells = cells_of(data)
    S, beta = jnp.asarray(truth.S), jnp.asarray(truth.beta)
    eta = truth.beta[data.judge] + truth.S[data.judge, data.first] - truth.S[data.judge, data.second]
    p = 1 / (1 + np.exp(-eta))
    direct = -np.sum(data.wins * np.log(p) + (data.n - data.wins) * np.log(1 - p))
    assert np.isclose(float(negative_log_likelihood(S, beta, cells)), direct, rtol=1e-12)

    # the expected information equals the Hessian of the NLL (logistic link: canonical)
    def f(flat):
        return negative_log_likelihood(flat[:15].reshape(3, 5), flat[15:], cells)

    H = jax.hessian(f)(jnp.concatenate([S.ravel(), beta]))
    SS, Sb, bb = fisher_blocks(S, beta, cells)
    for k in range(3):
        blk = slice(5 * k, 5 * k + 5)
        np.testing.assert_allclose(H[blk, blk], SS[k], atol=1e-9)
        np.testing.assert_allclose(H[blk, 15 + k], Sb[k], atol=1e-9)
        np.testing.assert_allclose(H[15 + k, 15 + k], bb[k], atol=1e-9)
    np.testing.assert_allclose(H[0:5, 5:10], 0.0, atol=1e-12)


def test_padding_adds_nothing():
    from hja_bayes.likelihood import padded_size
    data, truth = simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=50, seed=1, position_bias=0.2)
    S, beta = jnp.asarray(truth.S), jnp.asarray(truth.beta)
    plain, padded = cells_of(data), cells_of(data, pad=True)
    assert len(padded.n) == padded_size(data.n_cells) >= data.n_cells
    assert float(negative_log_likelihood(S, beta, plain)) == float(negative_log_likelihood(S, beta, padded))
    for a, b in zip(fisher_blocks(S, beta, plain), fisher_blocks(S, beta, padded)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    assert [padded_size(m) for m in (1, 64, 65, 70_000)] == [64, 64, 128, 131_072]


def test_outcome_models_by_keyword_and_the_half_model_has_no_extra_parameters():
    import pytest

    from hja_bayes import ParameterError
    from hja_bayes.likelihood import DAVIDSON, HALF, OUTCOME_MODELS, aux_blocks, outcome_model

    assert outcome_model("half") is HALF and outcome_model("Davidson") is DAVIDSON
    assert set(OUTCOME_MODELS) == {"half", "davidson"}
    with pytest.raises(ParameterError, match="davidson"):
        outcome_model("bradley-terry")
    data, truth = simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=60, seed=3, tie_prob=0.2)
    cells = cells_of(data)
    eta = jnp.asarray(truth.S[data.judge, data.first] - truth.S[data.judge, data.second])
    assert HALF.aux_score(eta, None, cells).shape == (data.n_cells, 0)
    assert HALF.aux_information(np.asarray(eta), None, cells).shape == (data.n_cells, 0, 0)
    assert HALF.initial_aux(*(np.ones(2),) * 3).shape == (2, 0)
    Sa, ba, aa = aux_blocks(jnp.asarray(truth.S), jnp.zeros(2), cells)
    assert Sa.shape == (2, 4, 0) and ba.shape == (2, 0) and aa.shape == (2, 0, 0)
    # Davidson's start solves the tie rate at eta = 0; a judge without ties is held at 0
    lam = DAVIDSON.initial_aux(np.array([30.0, 50.0]), np.array([20.0, 0.0]), np.array([50.0, 50.0]))
    p_tie = np.exp(lam[0, 0]) / (2 + np.exp(lam[0, 0]))
    assert p_tie == pytest.approx(20 / 100) and lam[1, 0] == -np.inf
