"""The likelihood seam: the NLL against a direct binomial sum, the information against the
Hessian, the outcome models' hand-written derivatives against JAX's, the ordinal model
against the cumulative logit written out here, and the one multinomial sampler."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit

from hja_bayes import ParameterError, simulate
from hja_bayes.categories import collapse_counts
from hja_bayes.likelihood import (
    DAVIDSON,
    HALF,
    OUTCOME_MODELS,
    category_derivatives,
    cells_of,
    information,
    item_information,
    log_likelihood,
    negative_log_likelihood,
    ordinal,
    outcome_model,
    padded_size,
    probabilities,
    sample_counts,
    sandwich_meat,
    score,
    unit_information,
)
from hja_bayes.likelihood.terms import design_of, terms_of


def position_cells(data, pad=False):
    return cells_of(data, pad=pad, design=design_of(data, terms_of(True)))


def test_nll_matches_direct_binomial_sum_and_information_matches_hessian():
    data, truth = simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=300, seed=5,
                           position_bias=0.3, tie_prob=0.1)
    cells = position_cells(data)
    S, beta = jnp.asarray(truth.S), jnp.asarray(truth.beta)[:, None]
    eta = truth.beta[data.judge] + truth.S[data.judge, data.first] - truth.S[data.judge, data.second]
    p = 1 / (1 + np.exp(-eta))
    direct = -np.sum(data.wins * np.log(p) + (data.n - data.wins) * np.log(1 - p))
    assert np.isclose(float(negative_log_likelihood(S, beta, cells)), direct, rtol=1e-12)

    # the expected information equals the Hessian of the NLL (logistic link: canonical)
    def f(flat):
        return negative_log_likelihood(flat[:15].reshape(3, 5), flat[15:].reshape(3, 1), cells)

    H = jax.jit(jax.hessian(f))(jnp.concatenate([S.ravel(), beta.ravel()]))
    w = unit_information(S, beta, cells)[:, 0, 0]
    SS = item_information(w, cells, 3, 5)
    for k in range(3):
        blk = slice(5 * k, 5 * k + 5)
        np.testing.assert_allclose(H[blk, blk], SS[k], atol=1e-9)
        own = np.asarray(data.judge) == k
        np.testing.assert_allclose(H[15 + k, 15 + k], np.sum(np.asarray(w)[own]), atol=1e-9)
    np.testing.assert_allclose(H[0:5, 5:10], 0.0, atol=1e-12)


def test_padding_adds_nothing():
    data, truth = simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=50, seed=1,
                           position_bias=0.2)
    S, beta = jnp.asarray(truth.S), jnp.asarray(truth.beta)[:, None]
    plain, padded = position_cells(data), position_cells(data, pad=True)
    assert len(padded.n) == padded_size(data.n_cells) >= data.n_cells
    assert float(negative_log_likelihood(S, beta, plain)) == float(negative_log_likelihood(S, beta, padded))
    w_plain = unit_information(S, beta, plain)[:, 0, 0]
    w_padded = unit_information(S, beta, padded)[:, 0, 0]
    np.testing.assert_allclose(item_information(w_plain, plain, 2, 4),
                               item_information(w_padded, padded, 2, 4), atol=1e-12)
    assert [padded_size(m) for m in (1, 64, 65, 70_000)] == [64, 64, 128, 131_072]


def test_outcome_models_by_keyword():
    assert outcome_model("half") is HALF and outcome_model("Davidson") is DAVIDSON
    assert set(OUTCOME_MODELS) == {"half", "davidson", "ordinal"}
    assert outcome_model("ordinal") is ordinal(5) and outcome_model("ordinal", 3) is ordinal(3)
    assert ordinal(5).aux_names == ("gap_1", "gap_2") and ordinal(4).aux_names == ("gap_1",)
    with pytest.raises(ParameterError, match="davidson"):
        outcome_model("bradley-terry")
    assert HALF.n_aux == 0 and HALF.initial_aux(np.ones((2, 3))).shape == (2, 0)
    # Davidson's start solves the tie rate at eta = 0; a judge without ties is held at 0
    lam = DAVIDSON.initial_aux(np.array([[30.0, 20.0, 50.0], [50.0, 0.0, 50.0]]))
    p_tie = np.exp(lam[0, 0]) / (2 + np.exp(lam[0, 0]))
    assert p_tie == pytest.approx(20 / 100) and lam[1, 0] == -np.inf


@pytest.mark.parametrize("model", [HALF, DAVIDSON, ordinal(4), ordinal(5)],
                         ids=["half", "davidson", "ordinal4", "ordinal5"])
def test_hand_written_derivatives_equal_the_derived_ones(model):
    """The faster hand-written log-likelihood and derivatives against JAX's, from the
    log-probabilities alone (NumPy and JAX paths)."""
    rng = np.random.default_rng(0)
    eta = rng.normal(scale=2.0, size=30)
    aux = rng.normal(size=(30, model.n_aux)) if model.n_aux else None
    counts = rng.integers(0, 7, size=(30, model.n_categories)).astype(float)
    derived = model._replace(log_likelihood=None, derivatives=None, probabilities=None,
                             score=None)
    for x, a, y in ((eta, aux, counts),
                    (jnp.asarray(eta), None if aux is None else jnp.asarray(aux), jnp.asarray(counts))):
        np.testing.assert_allclose(log_likelihood(model, x, a, y), log_likelihood(derived, x, a, y),
                                   rtol=1e-12)
        for fast, slow in zip(category_derivatives(model, x, a), category_derivatives(derived, x, a)):
            np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(score(model, x, a, y), score(derived, x, a, y), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(sandwich_meat(model, x, a, y), sandwich_meat(derived, x, a, y),
                                   rtol=1e-10, atol=1e-12)
    if model is not HALF:  # a proper model: exp(log p) is what it samples from
        np.testing.assert_allclose(information(model, eta, aux, counts.sum(1)),
                                   information(derived, eta, aux, counts.sum(1)), rtol=1e-10)


def test_half_information_and_log_likelihood_gradient_written_out():
    """HALF's own information against the general formula from its probabilities and
    derivatives, and the gradient of its JAX log-likelihood (a hand-written softplus with
    its own derivative) against the score ``w - n p``, at large |eta| too."""
    rng = np.random.default_rng(1)
    eta = np.concatenate([rng.normal(scale=3.0, size=20), [0.0, -800.0, 800.0, 40.0, -40.0]])
    counts = rng.integers(0, 5, size=(eta.size, 3)).astype(float)
    n = counts.sum(axis=1)
    general = HALF._replace(information=None)
    for x in (eta, jnp.asarray(eta)):
        np.testing.assert_allclose(information(HALF, x, None, n), information(general, x, None, n),
                                   rtol=1e-12, atol=0)
    total = lambda e: jnp.sum(log_likelihood(HALF, e, None, jnp.asarray(counts)))  # noqa: E731
    value, grad = jax.value_and_grad(total)(jnp.asarray(eta))
    np.testing.assert_allclose(grad, counts[:, 0] + counts[:, 1] / 2 - n * expit(eta),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(value, np.sum(log_likelihood(HALF, eta, None, counts)), rtol=1e-13)
    # the second derivative (used by Laplace approximations) is minus the information
    curvature = jax.vmap(jax.grad(jax.grad(lambda e, c: log_likelihood(HALF, e, None, c))))(
        jnp.asarray(eta), jnp.asarray(counts))
    # (at |eta| = 40, 1 - p rounds to 0 where p (1 - p) is 4e-18: an absolute tolerance)
    np.testing.assert_allclose(-curvature, n * expit(eta) * expit(-eta), rtol=1e-12, atol=1e-15)


def test_half_numpy_score_matches_scipys_expit_in_both_tails():
    """HALF's NumPy score computes its probabilities without SciPy: ``-p`` for a verdict for
    the second-shown model, against ``expit`` from -700 to 700 (relative 1e-14: the tails
    too, where p is 1e-304)."""
    eta = np.linspace(-700.0, 700.0, 200_001)
    second_wins = np.tile([0.0, 0.0, 1.0], (eta.size, 1))
    p = -np.asarray(score(HALF, eta, None, second_wins))[:, 0]  # w - n p with w = 0, n = 1
    np.testing.assert_allclose(p, expit(eta), rtol=1e-14, atol=0)


def test_cells_count_their_comparisons():
    counts = np.random.default_rng(2).integers(0, 6, size=(9, 5)).astype(float)
    cells = cells_of(simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=20, seed=0)[0])
    for c in (counts, jnp.asarray(counts)):
        np.testing.assert_array_equal(cells._replace(counts=c).n, counts.sum(axis=1))


def cumulative_logit(eta, kappa):
    """Category probabilities of P(Y <= c) = expit(eta + kappa_c), written out."""
    upper = np.concatenate([expit(eta[:, None] + kappa[None, :]), np.ones((len(eta), 1))], axis=1)
    lower = np.concatenate([np.zeros((len(eta), 1)), upper[:, :-1]], axis=1)
    return upper - lower


@pytest.mark.parametrize("C", [2, 3, 4, 5, 7])
def test_ordinal_model_is_the_symmetric_cumulative_logit(C):
    model = ordinal(C)
    m = (C - 1) // 2
    rng = np.random.default_rng(C)
    eta = rng.normal(scale=2.0, size=25)
    aux = rng.normal(scale=0.5, size=(25, m))
    gaps = np.exp(aux)
    t = np.cumsum(gaps, axis=1)
    middle = np.zeros((25, 0)) if C % 2 else np.zeros((25, 1))
    kappa = np.concatenate([-t[:, ::-1], middle, t], axis=1)
    expected = np.stack([cumulative_logit(eta[r:r + 1], kappa[r])[0] for r in range(25)])
    p = probabilities(model, eta, aux)
    np.testing.assert_allclose(p, expected, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-12)
    # symmetric at eta = 0, and the first item's side grows with eta
    p0 = probabilities(model, np.zeros(1), aux[:1])[0]
    np.testing.assert_allclose(p0, p0[::-1], atol=1e-14)
    side = probabilities(model, np.array([-1.0, 0.0, 1.0]), np.repeat(aux[:1], 3, 0))[:, : C // 2].sum(1)
    assert np.all(np.diff(side) > 0)
    if C == 2:  # Bradley-Terry
        np.testing.assert_allclose(p[:, 0], expit(eta), rtol=1e-12)
    # the derived information is the expected outer product of the single-comparison scores
    grad, _ = category_derivatives(model, eta, aux)
    outer = np.einsum("uc,ucl,ucm->ulm", p, grad, grad)
    np.testing.assert_allclose(information(model, eta, aux, np.ones(25)), outer, rtol=1e-8, atol=1e-12)


def test_collapse_to_three_outcomes():
    counts = np.array([[3.0, 1.0, 0.0, 2.0, 5.0], [0.0, 0.0, 4.0, 0.0, 1.0]])
    np.testing.assert_array_equal(collapse_counts(counts), [[4.0, 0.0, 7.0], [0.0, 4.0, 1.0]])
    np.testing.assert_array_equal(collapse_counts([[2.0, 3.0]]), [[2.0, 0.0, 3.0]])


def test_one_multinomial_sampler_for_numpy_and_jax():
    p = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.0, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]])
    n = np.array([20_000.0, 20_000.0, 7.0])
    for draw in (sample_counts(np.random.default_rng(0), n, p),
                 np.asarray(sample_counts(jax.random.PRNGKey(0), jnp.asarray(n), jnp.asarray(p)))):
        np.testing.assert_array_equal(draw.sum(1), n)
        assert draw[1, 1] == draw[1, 3] == 0 and draw[2, 0] == 7
        sd = np.sqrt(n[:2, None] * p[:2] * (1 - p[:2]))
        assert np.all(np.abs(draw[:2] - n[:2, None] * p[:2]) <= 4.5 * sd + 1e-9)


def test_judge_totals_sum_each_judges_units_in_order_or_not():
    """Units sorted by judge (summed run by run) and shuffled (a bincount per category) give
    the per-judge totals of a loop over units: exactly for whole counts, to rounding for
    fractional ones; a judge without units gets zeros."""
    from hja_bayes.likelihood import judge_totals

    rng = np.random.default_rng(0)
    judge = np.sort(rng.choice([0, 1, 3, 4], 500))  # judge 2 has no units
    whole = rng.integers(0, 4, (500, 5)).astype(float)
    for counts, rtol in ((whole, 0.0), (rng.random((500, 5)) * whole, 1e-13)):
        expected = np.zeros((5, 5))
        for k, c in zip(judge, counts):
            expected[k] += c
        order = rng.permutation(500)
        for j, c in ((judge, counts), (judge[order], counts[order])):
            np.testing.assert_allclose(judge_totals(j, c, 5), expected, rtol=rtol, atol=0)
    np.testing.assert_array_equal(judge_totals(judge[:0], counts[:0], 2), np.zeros((2, 5)))
    # judges without units at the end: the last judge with units keeps all of its run
    np.testing.assert_array_equal(judge_totals(np.array([0, 0, 1, 1]), whole[:4], 4),
                                  [whole[:2].sum(0), whole[2:4].sum(0), np.zeros(5), np.zeros(5)])
    np.testing.assert_array_equal(judge_totals(np.array([4]), counts[:1], 6)[4], counts[0])
