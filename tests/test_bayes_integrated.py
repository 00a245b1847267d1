"""Prompt effects integrated out of the likelihood: the per-prompt integrals against
independent quadrature over every answer effect, their gradients against finite
differences, and the integrated sampler against the one that samples the effects."""

import functools
import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from hja_bayes import ConvergenceWarning, fit_hja, sample_hja, simulate
from hja_bayes.bayes.blocks import prompt_blocks
from hja_bayes.bayes.integrated import prompt_log_likelihood
from hja_bayes.likelihood import outcome_model

from .conftest import release_memory

HALF = outcome_model("half")


@pytest.fixture(autouse=True)
def _release_after_each_test():
    """Every test here compiles its own large programs (each prompt block's Newton loop,
    quadrature and derivatives): keeping them all held 3.8 GB by the module's end."""
    yield
    release_memory()


def half_log_likelihood(x, counts):
    """Ties count 1/2, written out: ``(a + t/2) log p + (b + t/2) log(1 - p)``."""
    log_p, log_q = -np.logaddexp(0.0, -x), -np.logaddexp(0.0, x)
    return (counts[..., 0] + counts[..., 1] / 2) * log_p + (counts[..., 2] + counts[..., 1] / 2) * log_q


def prompts_of(sizes, verdicts, seed):
    """Units of prompts with ``sizes`` answers each (answers numbered prompt by prompt):
    every pair of a prompt's answers shown once in a random order, with random counts."""
    rng = np.random.default_rng(seed)
    first, second, question, start = [], [], [], 0
    for q, n in enumerate(sizes):
        question += [q] * n
        for a, b in itertools.combinations(range(start, start + n), 2):
            first.append(a if rng.random() < 0.5 else b)
            second.append(a + b - first[-1])
        start += n
    first, second = np.array(first), np.array(second)
    units = len(first)
    counts = rng.multinomial(verdicts, [0.45, 0.1, 0.45], size=units).astype(float)
    eta = rng.normal(0.0, 0.7, units)
    gamma = rng.uniform(0.6, 1.4, units)
    tau = rng.uniform(0.4, 1.2, start)
    return first, second, np.array(question), counts, eta, gamma, tau


def exact_log_integral(q, first, second, question, counts, eta, gamma, tau, nodes=40):
    """``log p(y_q)`` by a product Gauss-Hermite rule over the prompt's answer effects under
    their prior (not adaptive, every answer its own dimension)."""
    answers = np.flatnonzero(question == q)
    units = np.flatnonzero(question[first] == q)
    x, w = np.polynomial.hermite.hermgauss(nodes)
    grid = np.stack(np.meshgrid(*([np.sqrt(2.0) * x] * len(answers)), indexing="ij"), -1)
    grid = grid.reshape(-1, len(answers))
    log_w = sum(np.log(g.ravel()) for g in np.meshgrid(*([w / np.sqrt(np.pi)] * len(answers)),
                                                        indexing="ij"))
    alpha = np.zeros((len(grid), len(question)))
    alpha[:, answers] = grid * tau[answers]
    logit = eta[units] + gamma[units] * (alpha[:, first[units]] - alpha[:, second[units]])
    total = half_log_likelihood(logit, counts[units]).sum(-1)
    return float(np.logaddexp.reduce(total + log_w))


def integrated(first, second, question, counts, eta, gamma, tau, quadrature=(21, 9)):
    blocks = prompt_blocks(first, second, question, quadrature=quadrature)
    # compiled as NUTS runs it (eagerly JAX would compile each operation on its own)
    return jax.jit(lambda e, g, c, t: prompt_log_likelihood(blocks, e, g, None, c, t, HALF))(
        jnp.asarray(eta), jnp.asarray(gamma), jnp.asarray(counts), jnp.asarray(tau))


def test_quadrature_equals_an_independent_integral_over_every_effect():
    """Two- and three-answer prompts (one and two free dimensions) get the adaptive rule,
    exact to the rule's error (the default nine nodes per dimension in two dimensions: a
    few millionths; more nodes, a few in 1e10); the reference answer is integrated
    analytically, which the independent rule does not do."""
    data = prompts_of([2, 3, 2, 3], verdicts=3, seed=0)
    exact = sum(exact_log_integral(q, *data) for q in range(4))
    assert float(integrated(*data)) == pytest.approx(exact, abs=1e-5)
    assert float(integrated(*data, quadrature=(41, 21))) == pytest.approx(exact, abs=1e-9)


def test_alike_prompts_are_integrated_once_and_counted_as_often_as_they_occur():
    """Prompts repeated with the same units (keys: models shown, counts, logit, gamma) are
    laid out once with their number of copies; one that differs only in its counts is not
    merged.  The total equals the independent rule summed over every prompt (finer rules
    than the default: a few in 1e9, the independent rule's own error)."""
    first, second, question, counts, eta, gamma, tau = prompts_of([2, 3, 2], verdicts=3,
                                                                  seed=5)
    item = np.array([0, 1, 0, 1, 2, 1, 2])  # each answer's model; tau is the model's
    # copies: prompt 0 twice more, prompt 1 once more, prompt 2 once more with other counts
    F, S, Qn, C, E, G, A = [first], [second], [question], [counts], [eta], [gamma], [item]
    for new, (q, changed) in enumerate(((0, False), (0, False), (1, False), (2, True)), 3):
        units, answers = np.flatnonzero(question[first] == q), np.flatnonzero(question == q)
        shift = sum(map(len, A)) - answers[0]  # the copy's answers are numbered after all
        F.append(first[units] + shift), S.append(second[units] + shift)
        Qn.append(np.full(len(answers), new))
        C.append(counts[units][:, ::-1] if changed else counts[units])
        E.append(eta[units]), G.append(gamma[units]), A.append(item[answers])
    first, second, question, counts, eta, gamma, item = map(np.concatenate, (F, S, Qn, C, E,
                                                                             G, A))
    tau = np.array([0.5, 0.9, 1.3])[item]
    assert not np.array_equal(counts[question[first] == 6], counts[question[first] == 2])
    keys = np.column_stack([item[first], item[second], counts, eta, gamma])
    blocks = prompt_blocks(first, second, question, quadrature=(41, 21), unit_keys=keys)
    assert [len(b.index) for b in blocks] == [3, 1]  # prompts 0, 2, 6; prompt 1
    assert sorted(np.concatenate([b.copies for b in blocks]).tolist()) == [1, 1, 2, 3]
    got = jax.jit(lambda e, g, c, t: prompt_log_likelihood(blocks, e, g, None, c, t, HALF))(
        jnp.asarray(eta), jnp.asarray(gamma), jnp.asarray(counts), jnp.asarray(tau))
    data = (first, second, question, counts, eta, gamma, tau)
    exact = sum(exact_log_integral(q, *data) for q in range(7))
    assert float(got) == pytest.approx(exact, abs=1e-8)
    assert float(integrated(*data, quadrature=(41, 21))) == pytest.approx(exact, abs=1e-8)


def test_an_outcome_with_its_own_parameter_integrates_exactly():
    """Davidson's ties (log nu per unit's judge; every third unit's judge never tied: nu =
    0), two- and three-answer prompts: the integral equals an independent rule over every
    effect with Davidson's probabilities written out."""
    first, second, question, counts, eta, gamma, tau = prompts_of([2, 3, 3], verdicts=3,
                                                                  seed=8)
    lam = np.where(np.arange(len(first)) % 3 == 0, -np.inf, np.log(0.6))
    counts[lam == -np.inf, 1] = 0.0

    def davidson(x, c, lam):
        log_z = np.logaddexp(np.logaddexp(x / 2, -x / 2), lam)
        tie = np.where(c[..., 1] > 0, lam - log_z, 0.0)
        return c[..., 0] * (x / 2 - log_z) + c[..., 1] * tie + c[..., 2] * (-x / 2 - log_z)

    x, w = np.polynomial.hermite.hermgauss(30)
    expected = 0.0
    for q in range(3):
        answers = np.flatnonzero(question == q)
        units = np.flatnonzero(question[first] == q)
        grid = np.stack(np.meshgrid(*([np.sqrt(2.0) * x] * len(answers)), indexing="ij"), -1)
        log_w = sum(np.log(g.ravel()) for g in np.meshgrid(
            *([w / np.sqrt(np.pi)] * len(answers)), indexing="ij"))
        alpha = np.zeros((grid[..., 0].size, len(question)))
        alpha[:, answers] = grid.reshape(-1, len(answers)) * tau[answers]
        logit = eta[units] + gamma[units] * (alpha[:, first[units]] - alpha[:, second[units]])
        total = davidson(logit, counts[units], lam[units]).sum(-1)
        expected += np.logaddexp.reduce(total + log_w)
    blocks = prompt_blocks(first, second, question, quadrature=(41, 21))
    got = jax.jit(lambda e, g, a, c, t: prompt_log_likelihood(
        blocks, e, g, a, c, t, outcome_model("davidson")))(
        jnp.asarray(eta), jnp.asarray(gamma), jnp.asarray(lam[:, None]), jnp.asarray(counts),
        jnp.asarray(tau))
    assert np.isfinite(expected)
    assert float(got) == pytest.approx(expected, abs=1e-8)


def test_a_two_answer_prompt_equals_scipy_dblquad():
    first, second, question, counts, eta, gamma, tau = prompts_of([2], verdicts=4, seed=3)

    def density(b, a):
        logit = eta + gamma * np.where(first == 0, a - b, b - a)
        prior = -0.5 * (a / tau[0]) ** 2 - 0.5 * (b / tau[1]) ** 2
        return np.exp(half_log_likelihood(logit, counts).sum() + prior) / (2 * np.pi * tau[0] * tau[1])

    value, _ = integrate.dblquad(density, -9 * tau[0], 9 * tau[0], -9 * tau[1], 9 * tau[1],
                                 epsabs=1e-13, epsrel=1e-10)
    got = float(integrated(first, second, question, counts, eta, gamma, tau))
    assert got == pytest.approx(np.log(value), abs=1e-7)


@pytest.mark.parametrize("verdicts", [1, 6, 40])
def test_verdicts_improbable_at_zero_still_integrate_exactly(verdicts):
    """Verdicts far from what the globals predict (logit -6 or +5, all won by the other
    side, sensitivity 3, tau 2): full Newton steps from 0 overshoot, the damped ones find
    the mode, and an adaptive rule centred there matches one-dimensional quadrature over the
    difference of the two answer effects, N(0, tau_a^2 + tau_b^2).  The integrand is far
    from Gaussian here (the default 24 nodes are off by up to 7e-4), so 161 nodes isolate
    the mode from the rule's own error."""
    first, second, question = np.array([0, 1, 2]), np.array([1, 0, 3]), np.array([0, 0, 1, 1])
    eta, gamma, tau = np.array([-6.0, -6.0, 5.0]), np.full(3, 3.0), np.full(4, 2.0)
    counts = np.array([[verdicts, 0, 0], [0, 0, verdicts], [0, 0, verdicts]], dtype=float)
    expected = 0.0
    for q, units in ((0, [0, 1]), (1, [2])):
        def density(d):
            logit = eta[units] + gamma[units] * np.where(first[units] == 2 * q, d, -d)
            return np.exp(half_log_likelihood(logit, counts[units]).sum()
                          - d**2 / 16) / np.sqrt(16 * np.pi)
        value, _ = integrate.quad(density, -40, 40, points=[0.0], epsabs=1e-300, epsrel=1e-12,
                                  limit=500)
        expected += np.log(value)
    got = float(integrated(first, second, question, counts, eta, gamma, tau, quadrature=(161,)))
    assert got == pytest.approx(expected, abs=1e-8)


def test_larger_prompts_get_the_laplace_approximation_or_a_rule_when_asked():
    """A four-answer prompt (three free dimensions): by default the Laplace approximation,
    whose log error shrinks with the verdicts per answer (here 4 on each of its six pairs:
    0.05; on real prompts the error that matters is its variation with the parameters);
    with three-dimensional nodes asked for, the rule is exact again."""
    data = prompts_of([4], verdicts=4, seed=5)
    exact = exact_log_integral(0, *data, nodes=32)
    laplace = float(integrated(*data))
    assert 1e-3 < abs(laplace - exact) < 0.1  # an approximation, not the rule below
    assert float(integrated(*data, quadrature=(21, 9, 9))) == pytest.approx(exact, abs=1e-6)


def test_large_prompts_run_without_lapack():
    """Six-answer prompts (blocks of 8 dimensions): the potential's value and gradient and the
    draw-back of the effects compile to XLA's own operations, no LAPACK call.  jaxlib's
    batched LAPACK kernels wait on the thread pool that runs them; with every thread of the
    pool in one, the process hung at 0% CPU (MT-Bench's draw-back on four host devices)."""
    from hja_bayes.bayes.recover import conditional_effects

    first, second, question, counts, eta, gamma, tau = (
        jnp.asarray(a) if i > 2 else a
        for i, a in enumerate(prompts_of([6, 6, 3], verdicts=2, seed=0)))
    blocks = prompt_blocks(first, second, question)
    assert max(b.z.shape[1] for b in blocks) == 8

    def value(e, t):
        return prompt_log_likelihood(blocks, e, gamma, None, counts, t, HALF)

    def draw(key, e):
        return conditional_effects(key, blocks, e, gamma, None, counts, tau, HALF, len(tau))

    programs = [jax.jit(jax.value_and_grad(value, argnums=(0, 1))).lower(eta, tau),
                jax.jit(draw).lower(jax.random.PRNGKey(0), eta)]
    for program in programs:
        assert "custom_call" not in program.as_text()


@pytest.mark.parametrize("seed", [0, 1])
def test_the_default_rule_integrates_four_and_five_answer_prompts_with_few_verdicts(seed):
    """Prompts of four and five answers (three and four free dimensions) with one verdict
    per pair, tau 0.6-1.8: the default rule (5^3 and 4^4 nodes) is within 0.015 of an
    independent rule over every effect (itself within 2e-4), where the Laplace
    approximation, the default before, is off by more than 0.1 for the two prompts."""
    from hja_bayes.bayes.blocks import QUADRATURE

    first, second, question, counts, eta, gamma, tau = prompts_of([4, 5], verdicts=1, seed=seed)
    data = (first, second, question, counts, eta, gamma, 1.5 * tau)
    exact = exact_log_integral(0, *data, nodes=24) + exact_log_integral(1, *data, nodes=14)
    assert float(integrated(*data, quadrature=QUADRATURE)) == pytest.approx(exact, abs=0.015)
    assert abs(float(integrated(*data, quadrature=(21, 9))) - exact) > 0.1


def test_padding_a_prompt_into_a_larger_block_changes_nothing():
    """Four answers (three free dimensions) go to a block of four, padded with a
    coordinate no unit sees, beside a five-answer prompt; a prompt's integral does not
    depend on the company it keeps."""
    together = prompts_of([5, 4, 3], verdicts=5, seed=7)
    total = float(integrated(*together))
    first, second, question, counts, eta, gamma, tau = together
    parts = 0.0
    for q in range(3):
        units = np.flatnonzero(question[first] == q)
        answers = np.flatnonzero(question == q)
        shift = answers[0]
        parts += float(integrated(first[units] - shift, second[units] - shift,
                                  np.zeros(len(answers), int), counts[units], eta[units],
                                  gamma[units], tau[answers]))
    assert total == pytest.approx(parts, abs=1e-9)


def test_gradients_equal_finite_differences():
    """NUTS differentiates through the Newton mode: one differentiated step from the
    converged point gives the implicit derivative, for the rule and for Laplace alike."""
    first, second, question, counts, eta, gamma, tau = prompts_of([2, 3, 4], verdicts=3, seed=2)
    # every coordinate of eta and tau, and of gamma: 10 + 10 + 9 partial derivatives
    blocks = prompt_blocks(first, second, question)

    def f(params):
        e, g, t = params
        return prompt_log_likelihood(blocks, e, g, None, jnp.asarray(counts), t, HALF)

    point = (jnp.asarray(eta), jnp.asarray(gamma), jnp.asarray(tau))
    grads = jax.jit(jax.grad(f))(point)  # compiled: eagerly JAX compiles each operation alone
    f = jax.jit(f)
    h = 1e-6
    for which, (value, grad) in enumerate(zip(point, grads)):
        for i in range(len(value)):
            up = list(point)
            up[which] = value.at[i].add(h)
            down = list(point)
            down[which] = value.at[i].add(-h)
            numeric = (float(f(tuple(up))) - float(f(tuple(down)))) / (2 * h)
            assert float(grad[i]) == pytest.approx(numeric, abs=1e-6, rel=1e-5)


def test_newton_iterations_stop_when_the_verdicts_are_near_certain():
    """200 one-verdict-set prompts whose verdicts are all won by the side the globals
    favour at logits 6-14: each log integrand is within 1e-3 of 0 and is computed as a
    difference of terms the size of the logits.  The iterations must still stop in a few
    steps (an allowance relative to the value alone refused every converged step here and
    ran all 30), at each prompt's mode, found here by a root finder on the one-dimensional
    score."""
    from scipy.optimize import brentq

    from hja_bayes.bayes.integrated import _block_pieces, _newton_iterations

    rng = np.random.default_rng(1)
    P = 200
    first, second = 2 * np.arange(P), 2 * np.arange(P) + 1
    (block,) = prompt_blocks(first, second, np.repeat(np.arange(P), 2))
    eta, gamma = rng.uniform(6, 14, P), rng.uniform(0.2, 2.0, P)
    wins, tau = rng.integers(1, 6, P).astype(float), rng.uniform(0.5, 2.5, 2 * P)
    counts = np.stack([wins, np.zeros(P), np.zeros(P)], 1)
    pieces = _block_pieces(block, jnp.asarray(eta), jnp.asarray(gamma), None,
                           jnp.asarray(counts), jnp.asarray(tau), HALF)
    base, gam, aux, cnt, Q, _ = pieces
    mode, taken = jax.jit(lambda: _newton_iterations(base, gam, aux, cnt, block, Q, HALF))()
    assert int(taken) <= 5
    # d = alpha_first - alpha_second ~ N(0, tau_1^2 + tau_2^2)
    variance = tau[0::2] ** 2 + tau[1::2] ** 2
    for q in range(P):
        def score(d):
            return wins[q] * gamma[q] / (1 + np.exp(eta[q] + gamma[q] * d)) - d / variance[q]
        assert float(mode[q, 0]) == pytest.approx(brentq(score, -1.0, 10.0, xtol=1e-14),
                                                  abs=1e-9)


def test_a_start_at_the_modes_changes_the_iterations_not_the_integrals():
    """``Integrated.starts``: the log integrals and their gradients are the same from 0 and
    from the modes (or a point near them), and from the modes the iterations stop after
    the first step."""
    from hja_bayes.bayes.integrated import (
        _block_pieces,
        _newton_iterations,
        log_integrals,
        prompt_modes,
    )

    first, second, question, counts, eta, gamma, tau = prompts_of([3, 5, 5], verdicts=4,
                                                                  seed=5)
    blocks = prompt_blocks(first, second, question)
    data = tuple(jnp.asarray(a) for a in (eta, gamma, counts, tau))
    modes = jax.jit(lambda e, g, c, t: prompt_modes(blocks, e, g, None, c, t, HALF))(*data)
    rng = np.random.default_rng(0)
    nearby = tuple(m + 0.1 * rng.normal(size=m.shape) for m in modes)
    for block, mode, near in zip(blocks, modes, nearby):
        def value(e, g, t, start):
            return jnp.sum(log_integrals(block, e, g, None, data[2], t, HALF, start=start))

        grad = jax.jit(jax.value_and_grad(value, argnums=(0, 1, 2)))
        reference = grad(data[0], data[1], data[3], jnp.zeros_like(mode))  # the default
        for start in (mode, near):
            got = grad(data[0], data[1], data[3], start)
            np.testing.assert_allclose(got[0], reference[0], rtol=0, atol=1e-10)
            for a, b in zip(got[1], reference[1]):
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
        base, gam, aux, cnt, Q, _ = _block_pieces(block, data[0], data[1], None, data[2],
                                                  data[3], HALF)
        _, taken = jax.jit(lambda s: _newton_iterations(base, gam, aux, cnt, block, Q, HALF,
                                                        s))(mode)
        assert int(taken) == 1


def test_the_samplers_looser_tolerance_keeps_the_integrals():
    """Newton iterations stopped at a move below ``SAMPLING_TOLERANCE`` (1e-3) leave a mode
    error of order 1e-6, squared by the differentiated step after them: the log integrals
    agree with the default tolerance's to 1e-10, their gradients (first order in that
    error) to 1e-5, from 0 and from a start 0.1 away from the modes."""
    from hja_bayes.bayes.integrated import (
        SAMPLING_TOLERANCE,
        log_integrals,
        prompt_modes,
    )

    first, second, question, counts, eta, gamma, tau = prompts_of([2, 3, 5, 5], verdicts=4,
                                                                  seed=6)
    blocks = prompt_blocks(first, second, question)
    data = tuple(jnp.asarray(a) for a in (eta, gamma, counts, tau))
    modes = jax.jit(lambda e, g, c, t: prompt_modes(blocks, e, g, None, c, t, HALF))(*data)
    rng = np.random.default_rng(1)
    for block, mode in zip(blocks, modes):
        def value(e, g, t, start, tolerance):
            return jnp.sum(log_integrals(block, e, g, None, data[2], t, HALF, start=start,
                                         tolerance=tolerance))

        grad = jax.jit(jax.value_and_grad(value, argnums=(0, 1, 2)), static_argnums=4)
        reference = grad(data[0], data[1], data[3], jnp.zeros_like(mode), 1e-12)
        for start in (jnp.zeros_like(mode), mode + 0.1 * rng.normal(size=mode.shape)):
            got = grad(data[0], data[1], data[3], start, SAMPLING_TOLERANCE)
            np.testing.assert_allclose(got[0], reference[0], rtol=0, atol=1e-10)
            for a, b in zip(got[1], reference[1]):
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def test_single_precision_rules_keep_the_integrals_to_their_roundoff():
    """The sampler searches the modes and sums the quadrature rules in single precision
    (``single=True``, at the sampler's tolerance): every prompt's log integral and the
    gradients agree with double precision's to a few units of single precision's roundoff
    (eps = 1.2e-7) times their size, for prompts of two and five answers (one and four free
    dimensions, 24 and 4^4 nodes) with 1, 4 and 20 verdicts per pair (log integrals from
    -0.4 to -320)."""
    from hja_bayes.bayes.integrated import SAMPLING_TOLERANCE, TOLERANCE, log_integrals

    parts = [prompts_of([2, 5] * 2, verdicts, seed=7) for verdicts in (1, 4, 20)]
    answers = np.cumsum([0] + [len(p[6]) for p in parts])[:-1]
    prompts = np.cumsum([0] + [p[2].max() + 1 for p in parts])[:-1]
    first, second, question = (np.concatenate([p[k] + shift for p, shift in zip(parts, shifts)])
                               for k, shifts in ((0, answers), (1, answers), (2, prompts)))
    counts, eta, gamma, tau = (np.concatenate([p[k] for p in parts]) for k in (3, 4, 5, 6))
    eta = eta * np.concatenate([np.full(len(p[4]), s) for p, s in zip(parts, (1, 4, 4))])
    blocks = prompt_blocks(first, second, question)
    data = tuple(jnp.asarray(a) for a in (eta, gamma, tau))

    def total(e, g, t, single):  # the sum, and every prompt's log integral
        values = [log_integrals(b, e, g, None, jnp.asarray(counts), t, HALF, single=single,
                                tolerance=SAMPLING_TOLERANCE if single else TOLERANCE)
                  for b in blocks]
        return sum(jnp.sum(v) for v in values), values

    run = jax.jit(jax.value_and_grad(total, argnums=(0, 1, 2), has_aux=True),
                  static_argnums=3)
    (_, singles), grads_single = run(*data, True)
    (_, doubles), grads_double = run(*data, False)
    eps = float(np.finfo(np.float32).eps)
    for single, double in zip(singles, doubles):
        assert single.dtype == double.dtype == jnp.float64
        np.testing.assert_array_less(np.abs(single - double), 8 * eps * (1 + np.abs(double)))
    assert any(np.any(a != b) for a, b in zip(singles, doubles))  # single precision ran
    assert min(float(jnp.min(v)) for v in doubles) < -100
    for single, double in zip(grads_single, grads_double):
        np.testing.assert_array_less(np.abs(single - double),
                                     16 * eps * (1 + np.max(np.abs(double))))


@functools.lru_cache(maxsize=None)
def both_samplers():
    # three models, so two-dimensional prompt integrals: prompts of four and five answers
    # are checked against independent quadrature above, and cost the integrated sampler
    # twice the time
    data, _ = simulate(3, 3, 1, 150, seed=4, questions=8, question_correlation=0.5)
    fit = fit_hja(data, 1)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for method in ("integrated", "sampled"):
            out[method] = sample_hja(data, 1, init=fit, prompt_effects=method, num_warmup=100,
                                     num_samples=200, num_chains=2, seed=0, progress_bar=False)
    return out


def test_integrated_sampler_matches_the_one_that_samples_the_effects():
    """Same posterior of the global quantities: the difference of posterior means within
    four Monte Carlo standard errors of the difference (each side's MCSE from ArviZ)."""
    import arviz as az

    runs = both_samplers()
    assert runs["integrated"].posterior.attrs["prompt_method"] == "integrated"
    assert runs["sampled"].posterior.attrs["prompt_method"] == "sampled"
    for name in ("mu_marginal", "gamma", "tau"):
        means = [runs[m].posterior[name].mean(("chain", "draw")).values for m in runs]
        mcse = [az.mcse(runs[m], var_names=[name])[name].values for m in runs]
        z = (means[0] - means[1]) / np.sqrt(mcse[0] ** 2 + mcse[1] ** 2)
        assert np.all(np.abs(z) < 4), (name, z)


def test_recovered_effects_follow_their_conditional_and_are_reproducible():
    """The answer effects drawn back per draw are stored, and drawing them again from the
    InferenceData gives the same numbers; their spread matches the sampled effects'."""
    from hja_bayes.bayes.recover import posterior_effects

    runs = both_samplers()
    post = runs["integrated"]
    stored = post.posterior["alpha"].values.reshape(-1, post.posterior["alpha"].shape[-1])
    without = post.copy()
    del without.posterior["alpha"]
    np.testing.assert_allclose(posterior_effects(without), stored, atol=1e-10)
    sampled = runs["sampled"].posterior["alpha"].values
    sampled = sampled.reshape(-1, sampled.shape[-1])
    # per answer, posterior sd of the effects: ratios near one (300 x 2 draws each)
    ratio = stored.std(0) / sampled.std(0)
    assert 0.85 < np.median(ratio) < 1.15


def test_drawn_effects_follow_the_exact_conditional_of_two_answer_prompts():
    """The answer effects drawn back (sampling importance resampling from the Laplace
    approximation mixed with the prior) against the exact conditional posterior of four
    two-answer prompts: a typical single verdict, two improbable ones (the globals give the
    winner logit -3 with gamma tau 3 per answer, and -5 with gamma tau 6: conditionals far
    from Gaussian, the second with a long tail a narrower proposal missed), and six
    verdicts.  20,000 draws each: the contrast's Kolmogorov-Smirnov distance to the CDF by
    quadrature below its 1% critical value (1.63 / sqrt(n)), and the reference answer's
    effect given the contrast Gaussian as it should be (residual sd within 4 of its
    standard errors, uncorrelated with the contrast)."""
    from hja_bayes.bayes.recover import conditional_effects

    first, second = np.array([0, 2, 4, 6]), np.array([1, 3, 5, 7])
    question = np.repeat([0, 1, 2, 3], 2)
    eta, gamma = np.array([0.3, -3.0, 0.0, -5.0]), np.array([1.0, 2.0, 1.0, 3.0])
    tau = np.array([0.8, 1.0, 1.5, 1.5, 1.0, 1.0, 2.0, 2.0])
    counts = np.array([[1.0, 0, 0], [1, 0, 0], [3, 1, 2], [1, 0, 0]])
    blocks = prompt_blocks(first, second, question)
    args = tuple(jnp.asarray(a) for a in (eta, gamma, counts, tau))
    n = 20_000
    draw = jax.jit(lambda keys: jax.lax.map(lambda k: conditional_effects(
        k, blocks, args[0], args[1], None, args[2], args[3], HALF, 8)[0], keys))
    alpha = np.asarray(draw(jax.random.split(jax.random.PRNGKey(0), n)))
    for q in range(4):
        a, b = 2 * q, 2 * q + 1
        spread = tau[a] ** 2 + tau[b] ** 2
        delta = alpha[:, a] - alpha[:, b]
        grid = np.linspace(-12, 12, 40_001) * np.sqrt(spread)
        density = np.exp(half_log_likelihood(eta[q] + gamma[q] * grid, counts[q])
                         - grid**2 / (2 * spread))
        cdf = integrate.cumulative_trapezoid(density, grid, initial=0.0)
        distance = stats.kstest(delta, lambda x: np.interp(x, grid, cdf / cdf[-1])).statistic
        assert distance < 1.63 / np.sqrt(n), (q, distance)
        residual = alpha[:, b] + tau[b] ** 2 / spread * delta
        sd = tau[a] * tau[b] / np.sqrt(spread)
        assert abs(residual.std() / sd - 1) < 4 / np.sqrt(2 * n), q
        assert abs(np.corrcoef(residual, delta)[0, 1]) < 4 / np.sqrt(n), q


def test_a_single_verdicts_replicate_probabilities_match_direct_quadrature():
    """A single verdict alone on its prompt is replicated from its outcome probabilities
    averaged over the answer effects' conditional given the verdict, ``E[p(x) | y]``: the
    ratio of two one-dimensional integrals, here by SciPy's adaptive quadrature.  Ties count
    1/2 (a tie observed weighs sqrt(p (1 - p)); ties are never replicated): a typical win, a
    tie, an improbable win (logit -3, gamma tau 3 per answer); Davidson's ties (nu 0.6): a
    win and a tie.  The 24-node rule's error on such integrals is about 1e-8 for typical
    verdicts and at most 7e-4 for improbable ones (``blocks.QUADRATURE``), the weights' single
    precision 1e-6."""
    from hja_bayes.bayes.integrated import conditional_probabilities

    def expected(eta, gamma, spread, observed, log_p, p):
        def mean(c):
            def f(d):
                density = np.exp(log_p(eta + gamma * d) @ observed - d**2 / (2 * spread))
                return density * (p(eta + gamma * d)[c] if c is not None else 1.0)
            return integrate.quad(f, -40 * np.sqrt(spread), 40 * np.sqrt(spread),
                                  epsabs=0, epsrel=1e-11, limit=500)[0]
        return np.array([mean(c) for c in range(3)]) / mean(None)

    def half_log_p(x):
        lp, lq = -np.logaddexp(0.0, -x), -np.logaddexp(0.0, x)
        return np.array([lp, (lp + lq) / 2, lq])

    def half_p(x):
        return np.array([1 / (1 + np.exp(-x)), 0.0, 1 / (1 + np.exp(x))])

    nu = 0.6

    def davidson_log_p(x):
        log_z = np.logaddexp(np.logaddexp(x / 2, -x / 2), np.log(nu))
        return np.array([x / 2, np.log(nu), -x / 2]) - log_z

    def davidson_p(x):
        return np.exp(davidson_log_p(x))

    cases = [  # outcome, eta, gamma, tau of the two answers, the verdict, tolerance
        ("half", 0.3, 1.0, (0.8, 1.0), [1.0, 0, 0], 1e-5),
        ("half", -0.5, 1.2, (1.0, 0.7), [0, 1.0, 0], 1e-5),
        ("half", -3.0, 2.0, (1.5, 1.5), [1.0, 0, 0], 1e-3),
        ("davidson", 0.4, 1.0, (0.9, 1.1), [1.0, 0, 0], 1e-5),
        ("davidson", -0.2, 1.3, (1.0, 0.6), [0, 1.0, 0], 1e-5)]
    block = prompt_blocks(np.array([0]), np.array([1]), np.array([0, 0]))[0]
    programs = {name: jax.jit(functools.partial(conditional_probabilities, block,
                                                outcome=outcome_model(name)))
                for name in ("half", "davidson")}
    for outcome, eta, gamma, tau, verdict, tol in cases:
        log_p, p = (half_log_p, half_p) if outcome == "half" else (davidson_log_p, davidson_p)
        truth = expected(eta, gamma, tau[0] ** 2 + tau[1] ** 2, np.array(verdict), log_p, p)
        aux = None if outcome == "half" else jnp.full((1, 1), np.log(nu))
        got, _ = programs[outcome](jnp.array([eta]), jnp.array([gamma]), aux,
                                   jnp.array([verdict]), jnp.array(tau))
        np.testing.assert_allclose(np.asarray(got)[0], truth, atol=tol, err_msg=outcome)


def test_averaged_single_verdicts_replicate_as_drawn_effects_do():
    """The effect drawer with single verdicts averaged: their probabilities equal the mean
    over drawn effects of the probabilities at them (4,000 draws of the same globals, within
    4.5 Monte Carlo standard errors), alike single verdicts share one integral and get the
    same values, and the effects of the other prompts are drawn as before (the same random
    numbers, to rounding).  The posterior predictive averages them only where neither the
    effects nor the log-likelihood are stored, and its expected wins and replicated wins
    follow the averaged probabilities."""
    from hja_bayes.bayes.assemble import averaged_units, predictive
    from hja_bayes.bayes.convert import Units
    from hja_bayes.bayes.recover import EffectDrawer, single_verdict_units
    from hja_bayes.likelihood import Cells, probabilities

    # prompts 0-3: one verdict each (prompts 1 and 3 alike: same judge, models and verdict);
    # prompt 4: two verdicts on one pair; prompt 5: three answers
    first = np.array([0, 2, 4, 6, 8, 8, 10, 11])
    second = np.array([1, 3, 5, 7, 9, 9, 12, 12])
    question = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5])
    item = np.array([0, 1, 2, 0, 1, 2, 2, 0, 0, 1, 0, 1, 2])
    judge = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    counts = np.array([[1.0, 0, 0], [0, 0, 1], [1, 0, 0], [0, 0, 1], [1, 0, 0], [0, 0, 1],
                       [1, 0, 1], [2, 1, 0]])
    cells = Cells(judge, item[first], item[second], counts, np.zeros((8, 0)), np.zeros((8, 0)),
                  np.zeros(0), np.zeros((8, 0)), np.zeros(0))
    single = single_verdict_units(cells, (first, second), question)
    assert list(single) == [True, True, True, True, False, False, False, False]
    n = 4000
    S = np.broadcast_to(np.array([[0.5, -0.2, -0.3], [0.8, 0.1, -0.9]]), (n, 2, 3))
    Z, gamma = np.zeros((n, 2, 0)), np.broadcast_to([1.1, 0.8], (n, 2))
    tau = np.broadcast_to([0.9, 1.2, 0.6], (n, 3))
    args = (np.arange(n), S, Z, None, gamma, None, tau)
    averaged = EffectDrawer(cells, (first, second), question, item, HALF, 3, chunk=500,
                            averaged=single)
    drawn = EffectDrawer(cells, (first, second), question, item, HALF, 3, chunk=500)
    alpha, p_bar = averaged.with_probabilities(*args)
    alpha_all = drawn(*args)
    multi = np.unique(np.concatenate([first[~single], second[~single]]))
    # to rounding: a block of other prompts is another vectorised program
    np.testing.assert_allclose(alpha[:, multi], alpha_all[:, multi], rtol=0, atol=1e-12)
    eta = (S[:, judge, item[first]] - S[:, judge, item[second]]
           + gamma[:, judge] * (alpha_all[:, first] - alpha_all[:, second]))
    p = np.asarray(probabilities(HALF, eta, None))[:, single]
    mcse = p.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(p_bar.mean(axis=0) - p.mean(axis=0)) < 4.5 * mcse + 1e-12)
    np.testing.assert_allclose(p_bar[:, 1], p_bar[:, 3], rtol=1e-12)
    assert np.ptp(p_bar, axis=0).max() < 1e-12  # the same globals in every draw

    # the posterior predictive: which units are averaged, and the cells' expected wins from
    # their averaged probabilities against those from drawn effects (2 chains x 2,000 draws)
    units = Units(cells, np.arange(8), (first, second))
    assert averaged_units(units, question, n, 10 * n * 9, keep_alpha=False) is None
    assert averaged_units(units, question, n, 0, keep_alpha=True) is None
    np.testing.assert_array_equal(averaged_units(units, question, n, 0, keep_alpha=False),
                                  single)
    draws = {"S": S.reshape(2, n // 2, 2, 3), "Z": Z.reshape(2, n // 2, 2, 0), "theta": None,
             "gamma": gamma.reshape(2, n // 2, 2), "alpha": None, "aux": None,
             "tau": tau.reshape(2, n // 2, 3)}
    with_average = predictive(draws, units, HALF, 8, 5, 0, averaged)
    with_draws = predictive(draws, units, HALF, 8, 5, 0, drawn)
    assert with_average[1] is None and with_draws[1] is None  # no log-likelihood stored
    expected = [r[0]["expected_wins"] for r in (with_average, with_draws)]
    np.testing.assert_allclose(expected[0][~single], expected[1][~single], atol=1e-12)
    win = p[..., 0] + 0.5 * p[..., 1]  # a single verdict's expected wins, draw by draw
    assert np.all(np.abs(expected[0][single] - expected[1][single])
                  < 4.5 * win.std(axis=0) / np.sqrt(n))
    assert np.abs(expected[0][single] - (p_bar[0, :, 0] + 0.5 * p_bar[0, :, 1])).max() < 1e-12
    # replicated wins of the single verdicts: Bernoulli draws with the averaged probabilities
    wins = with_average[0]["wins"].reshape(n, 8)[:, single]
    assert np.all(np.abs(wins.mean(axis=0) - p_bar[0, :, 0]) < 4.5 * np.sqrt(
        p_bar[0, :, 0] * (1 - p_bar[0, :, 0]) / n))


def test_every_verdict_is_left_out_exactly_with_integrated_effects(monkeypatch):
    """With integrated prompt effects PSIS-LOO leaves every verdict out of its prompt's
    integral: for verdicts alone on their prompt and verdicts sharing it, the density given
    the globals and the other verdicts draw by draw against an independent product rule
    over every answer effect of the prompt (with the verdict, less it), through ArviZ's
    PSIS.  The posterior records finer rules than the default it was sampled with, and
    psis_loo reads them from it (the rules' error, the default nine nodes per dimension for
    three answers off by up to 2e-5, would hide a slip in what is integrated).  The rules are
    summed in single precision: node values of up to about 20 (the quadratic form at the
    outer nodes) round to about 1e-6 each, and a point is a difference of two integrals
    (up to 4e-6 seen with the suite's XLA options, 1e-6 with JAX's defaults); the
    independent rule's 24 nodes per answer are within 1e-6 of 50 here.  And every
    point stays near plain PSIS over drawn effects, an estimate of the same quantity.
    Points of prompts of more units than ``EXACT_UNITS`` are left out as with sampled
    effects."""
    import arviz as az
    from scipy.special import logsumexp

    from hja_bayes.bayes import psis_loo
    from hja_bayes.bayes.convert import posterior_draws, posterior_units
    from hja_bayes.bayes import loo as loo_module
    from hja_bayes.bayes.loo import _relative_efficiency

    # 70 prompts for 120 verdicts: many prompts hold a single verdict, others several
    data, _ = simulate(2, 3, 1, 60, seed=3, questions=70, question_correlation=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        idata = sample_hja(data, 1, init=fit_hja(data, 1), prompt_effects="integrated",
                           keep_alpha=False, num_warmup=60, num_samples=100, num_chains=2,
                           seed=0, progress_bar=False)
    assert idata.posterior.attrs["quadrature"] == "24,9,5,4"
    idata.posterior.attrs["quadrature"] = "41,21"
    loo, plain = psis_loo(idata), psis_loo(idata, integrate=False)
    np.testing.assert_array_equal(loo.cell, plain.cell)
    assert loo.integrated.all() and not plain.integrated.any()
    # plain PSIS's Monte Carlo sd over these 200 draws is about 0.01-0.06 per verdict (the
    # mean gap 0.009 here)
    assert np.mean(np.abs(loo.elpd_i - plain.elpd_i)) < 0.1
    units = posterior_units(idata)
    c = units.cells
    counts = np.asarray(c.counts)
    first, second = units.prompt
    prompt = np.asarray(idata.constant_data["entry_cluster"])
    n = counts.sum(axis=1)
    per_prompt = np.bincount(prompt, weights=n)[prompt[loo.cell]]
    alone, shared = np.flatnonzero(per_prompt == 1), np.flatnonzero(per_prompt >= 3)
    assert len(alone) >= 10 and len(shared) >= 10
    S, gamma, tau = (posterior_draws(idata, name) for name in ("S", "gamma", "tau"))
    reff = _relative_efficiency(idata)
    x, w = np.polynomial.hermite.hermgauss(24)

    def log_integral(units_q, tally):  # log p(y of these units), per draw (draws,)
        answers = np.unique(np.concatenate([first[units_q], second[units_q]]))
        models = np.zeros(answers.max() + 1, dtype=int)
        models[first[units_q]], models[second[units_q]] = c.first[units_q], c.second[units_q]
        grid = np.stack(np.meshgrid(*([np.sqrt(2.0) * x] * len(answers)), indexing="ij"), -1)
        grid = grid.reshape(-1, len(answers))
        log_w = sum(np.log(g.ravel()) for g in np.meshgrid(
            *([w / np.sqrt(np.pi)] * len(answers)), indexing="ij"))
        total = 0.0
        effect = grid[None] * tau[:, models[answers]][:, None, :]  # (draws, nodes, answers)
        for u, verdicts in zip(units_q, tally):
            k, i, j = c.judge[u], c.first[u], c.second[u]
            ca, cb = (answers == first[u]).astype(float), (answers == second[u]).astype(float)
            eta = (S[:, k, i] - S[:, k, j])[:, None] + gamma[:, k, None] * (effect @ (ca - cb))
            total = total + half_log_likelihood(eta, verdicts)
        return logsumexp(total + log_w, axis=1)

    for point in np.concatenate([alone[:3], shared[:3]]):
        u, o = loo.cell[point], loo.outcome[point]
        units_q = np.flatnonzero(prompt == prompt[u])
        less = counts[units_q].astype(float)
        less[units_q == u, o] -= 1
        log_p = log_integral(units_q, counts[units_q]) - log_integral(units_q, less)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lw, pareto_k = az.psislw(-log_p[None], reff)
        assert loo.elpd_i[point] == pytest.approx(logsumexp(lw[0] + log_p), abs=1e-5)
        assert loo.pareto_k[point] == pytest.approx(float(np.ravel(pareto_k)[0]), abs=1e-3)
    # prompts of more units than EXACT_UNITS (here 1): their points as with sampled effects,
    # plain PSIS over the drawn effects (integrated importance sampling where k is above the
    # draws' limit)
    monkeypatch.setattr(loo_module, "EXACT_UNITS", 1)
    mixed = psis_loo(idata)
    units_per_prompt = np.bincount(prompt)[prompt][loo.cell]
    small = units_per_prompt == 1
    assert 0 < small.sum() < len(small)
    limit = loo_module.pareto_k_limit(idata.posterior.sizes["chain"]
                                      * idata.posterior.sizes["draw"])
    assert plain.k_limit == mixed.k_limit == limit
    np.testing.assert_array_equal(mixed.integrated, small | (~small & (plain.pareto_k > limit)))
    np.testing.assert_allclose(mixed.elpd_i[small], loo.elpd_i[small], rtol=0, atol=1e-12)
    easy = ~small & (plain.pareto_k <= limit)
    np.testing.assert_allclose(mixed.elpd_i[easy], plain.elpd_i[easy], rtol=0, atol=1e-12)


def test_expected_wins_stored_with_integrated_effects_are_those_drawn_again():
    """With integrated prompt effects the stored posterior mean of the cells' expected wins
    (computed with the effects drawn while assembling) equals the one computed again, the
    effects drawn again from the posterior's seed."""
    from hja_bayes.bayes.ppc import expected_wins

    post = both_samplers()["integrated"].copy()
    del post.posterior["alpha"]  # drawn again, as for a posterior too large to store them
    np.testing.assert_allclose(post.constant_data["expected_wins"].values,
                               expected_wins(post).mean(axis=0), rtol=1e-9)


def test_loo_is_the_same_whether_the_recovered_effects_are_stored_or_not():
    """The default relative efficiency of PSIS-LOO leaves out the answer effects drawn
    after sampling: it had averaged their ESS in where they were stored (elpd -98.473
    against -98.472 on a small panel, Pareto k up to 0.08 apart)."""
    from hja_bayes.bayes import psis_loo

    stored = both_samplers()["integrated"]
    assert "alpha" in stored.posterior
    bare = stored.copy()
    del bare.posterior["alpha"]
    ours, again = psis_loo(stored, integrate=False), psis_loo(bare, integrate=False)
    np.testing.assert_array_equal(ours.pareto_k, again.pareto_k)
    assert ours.elpd_loo == again.elpd_loo and ours.p_loo == again.p_loo


def test_effects_drawn_on_several_devices_are_the_ones_drawn_on_one(tmp_path):
    """A process with two host devices draws each call's runs of draws side by side
    (each device starts its Newton iterations afresh): the same effects as this process,
    which draws them one after another on one device, to single precision: a subprocess
    with one device draws exactly these, one with two devices (another compiled program)
    differs by up to 4e-7, as the proposals' normals are drawn in single precision.  So do
    PSIS-LOO's left-out densities, computed the same way (:mod:`~hja_bayes.bayes.prompt_loo`)."""
    import os
    import subprocess
    import sys

    if jax.local_device_count() != 1:
        pytest.skip("this process already has several devices")
    post = both_samplers()["integrated"]
    stored = post.posterior["alpha"].values.reshape(-1, post.posterior["alpha"].shape[-1])
    without = post.copy()
    del without.posterior["alpha"]
    without.to_netcdf(str(tmp_path / "posterior.nc"))
    code = ("import sys, arviz, jax, numpy; "
            "from hja_bayes.bayes import psis_loo; "
            "from hja_bayes.bayes.recover import posterior_effects; "
            "assert jax.local_device_count() == 2; "
            "idata = arviz.from_netcdf(sys.argv[1]); "
            "numpy.save(sys.argv[2], posterior_effects(idata)); "
            "numpy.save(sys.argv[3], psis_loo(idata).elpd_i)")
    env = dict(os.environ)
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "posterior.nc"),
                    str(tmp_path / "alpha.npy"), str(tmp_path / "elpd.npy")], env=env,
                   check=True)
    np.testing.assert_allclose(np.load(tmp_path / "alpha.npy"), stored, rtol=1e-6, atol=1e-6)
    from hja_bayes.bayes import psis_loo

    # (the same posterior: PSIS's relative efficiency is the mean ESS of what it stores)
    np.testing.assert_allclose(np.load(tmp_path / "elpd.npy"), psis_loo(without).elpd_i,
                               rtol=1e-6, atol=1e-6)


def test_the_folded_tau_enters_through_its_size_only():
    """Integrated effects sample tau as ``tau_folded ~ N(0, s_tau^2)``, ``tau = |tau_folded|``
    (the half-normal prior exactly): flipping signs leaves the potential and every other
    gradient as they are and flips tau_folded's gradient, which central differences agree
    with on both sides of 0."""
    from hja_bayes.bayes.model import FOLDED_TAU, HJAPriors
    from hja_bayes.bayes.problem import build_problem

    data, _ = simulate(3, 3, 1, 60, seed=4, questions=6, question_correlation=0.5)
    fit = fit_hja(data, 1)
    problem = build_problem(data, fit, 1, False, "integrated", HJAPriors(), fit.outcome_model,
                            None)
    assert FOLDED_TAU in problem.params0 and "tau" not in problem.params0
    value_and_grad = jax.jit(jax.value_and_grad(problem.potential))
    x, signs = jnp.asarray([0.4, 1.3, 0.05]), jnp.asarray([1.0, -1.0, -1.0])
    v1, g1 = value_and_grad({**problem.params0, FOLDED_TAU: x})
    v2, g2 = value_and_grad({**problem.params0, FOLDED_TAU: signs * x})
    assert np.isfinite(float(v1)) and abs(float(v1 - v2)) <= 1e-10 * abs(float(v1))
    np.testing.assert_allclose(g2[FOLDED_TAU], signs * g1[FOLDED_TAU], rtol=1e-8, atol=1e-12)
    for name in g1:
        if name != FOLDED_TAU:
            np.testing.assert_allclose(g2[name], g1[name], rtol=1e-8, atol=1e-12)
    h = 1e-5
    for point, grad in ((x, g1), (signs * x, g2)):
        for i in range(3):
            step = jnp.zeros(3).at[i].set(h)
            up = value_and_grad({**problem.params0, FOLDED_TAU: point + step})[0]
            down = value_and_grad({**problem.params0, FOLDED_TAU: point - step})[0]
            assert float((up - down) / (2 * h)) == pytest.approx(float(grad[FOLDED_TAU][i]),
                                                                 rel=1e-5, abs=1e-7)
    # the potential is smooth and even in each tau_folded, so its derivative over
    # tau_folded tends to the curvature at 0: it did not before the prior's precision came
    # from Sigma's Cholesky factor (on a larger panel: the wrong sign at 1e-4 and 1e-5, and
    # 1.4e6 instead of 2e-7 at 1e-7)
    slopes = [float(value_and_grad({**problem.params0, FOLDED_TAU: x.at[0].set(small)})[1]
                    [FOLDED_TAU][0]) / small for small in (1e-3, 1e-5, 1e-7)]
    assert slopes[1] == pytest.approx(slopes[0], rel=1e-4)
    assert slopes[2] == pytest.approx(slopes[0], rel=1e-4)


def test_an_unknown_prompt_method_is_an_error():
    from hja_bayes import ParameterError

    data, _ = simulate(3, 4, 1, 20, seed=4, questions=4)
    with pytest.raises(ParameterError, match="prompt_effects"):
        sample_hja(data, 1, prompt_effects="laplace", num_warmup=5, num_samples=5,
                   progress_bar=False)


def _panel(prompts, per_prompt, n_items=5, seed=3):
    """``prompts`` prompts with ``per_prompt`` verdicts each (every judge's comparisons
    spread over the prompts by the simulator)."""
    data, _ = simulate(5, n_items, 1, prompts * per_prompt // 5, seed=seed, questions=prompts)
    return data


def test_the_default_integrates_where_many_effects_meet_few_verdicts():
    """The default method follows the layout: many answer effects on small prompts with few
    verdicts each are integrated out; few effects, many verdicts per prompt or prompts too
    large for a product rule keep them sampled; a named method is used as asked."""
    from hja_bayes.bayes.problem import (
        INTEGRATE_FROM_EFFECTS,
        prompt_layout,
        prompt_setting,
    )

    many = _panel(1500, 2)
    layout = prompt_layout(many)
    assert layout.effects >= INTEGRATE_FROM_EFFECTS and layout.median_verdicts == 2
    assert layout.effects == len(np.unique(np.concatenate([
        many.clusters.cluster * 5 + many.first[many.clusters.cell],
        many.clusters.cluster * 5 + many.second[many.clusters.cell]])))
    for asked in (None, True, "auto"):
        method, why = prompt_setting(many, asked)
        assert method == "integrated" and "a median of 2 verdicts per prompt" in why
    assert prompt_setting(many, "sampled") == ("sampled", "asked for")
    assert prompt_setting(many, False)[0] is False
    few = _panel(100, 4)
    assert prompt_setting(few, None)[0] == "sampled"
    assert f"fewer than {INTEGRATE_FROM_EFFECTS:,}" in prompt_setting(few, None)[1]
    for crowded in (_panel(1500, 3), _panel(1000, 20)):  # as many effects, more verdicts
        assert prompt_layout(crowded).effects >= INTEGRATE_FROM_EFFECTS
        method, why = prompt_setting(crowded, None)
        assert method == "sampled" and "verdicts per prompt" in why
    # six-model prompts would need the Laplace approximation: sampled
    six = _panel(1500, 2, n_items=7)
    assert prompt_layout(six).most_answers > 5
    method, why = prompt_setting(six, None)
    assert method == "sampled" and "answers" in why
    # the same layout with a rule for every size is integrated
    assert prompt_setting(six, None, quadrature=(21, 9, 5, 4, 3, 3))[0] == "integrated"
    unclustered, _ = simulate(3, 4, 1, 50, seed=0)
    assert prompt_setting(unclustered, None)[0] is False


def test_a_warning_names_prompts_left_to_the_laplace_approximation_with_few_verdicts():
    """Integrated effects on prompts larger than the rules: warned where their verdicts per
    answer are few, silent where they are many."""
    from hja_bayes import DataWarning
    from hja_bayes.bayes.problem import warn_laplace_prompts

    sparse = _panel(100, 4)  # up to four answers: three or more exceed a one-rule quadrature
    with pytest.warns(DataWarning, match="Laplace approximation"):
        warn_laplace_prompts(sparse, quadrature=(21,))
    dense = _panel(20, 200)  # 200 verdicts on five answers each
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        warn_laplace_prompts(dense, quadrature=(21,))
        warn_laplace_prompts(sparse)  # every prompt has its rule


@pytest.mark.parametrize("outcome", ["half", "davidson"])
def test_a_verdict_left_out_of_its_prompt_is_the_ratio_of_independent_integrals(outcome):
    """``prompt_loo``: each verdict's log density given the globals and the other verdicts
    of its prompt, against an independent rule over every answer effect (with the verdict,
    less it).  Prompts of two and three answers (ties count 1/2, or Davidson's with their
    own nu per judge); a verdict alone on its prompt (its integral less it is 1), a unit
    emptied by leaving its only verdict out, and a prompt repeated with alike units, whose
    integrals are laid out once.  Three draws of the globals, each its own Newton start.
    Finer rules than the default, summed in single precision: its roundoff, a few 1e-7
    (the default nine nodes per dimension for three answers are off by up to 2.2e-5 here,
    on the prompt with four verdicts on one pair)."""
    from hja_bayes.bayes.prompt_loo import left_out_layout, left_out_log_densities
    from hja_bayes.likelihood import Cells

    # (prompt, judge, model shown first, model shown second, counts first / tie / second)
    rows = [(0, 0, 0, 1, (1, 0, 0)),                                      # alone
            (1, 1, 2, 0, (2, 1, 0)),                                      # one unit
            (2, 0, 0, 1, (1, 0, 0)), (2, 1, 1, 2, (0, 1, 2)), (2, 0, 2, 0, (1, 0, 1)),
            (3, 0, 0, 1, (1, 0, 0)), (3, 1, 1, 2, (0, 1, 2)), (3, 0, 2, 0, (1, 0, 1)),
            (4, 1, 0, 2, (0, 0, 1)), (4, 0, 2, 1, (3, 0, 1))]
    prompt, judge, a, b = (np.array([r[i] for r in rows]) for i in range(4))
    counts = np.array([r[4] for r in rows], dtype=float)
    # answers: one per (prompt, model shown), numbered in that order
    shown = np.unique(np.concatenate([prompt * 3 + a, prompt * 3 + b]))
    question, item = shown // 3, shown % 3
    first = np.searchsorted(shown, prompt * 3 + a)
    second = np.searchsorted(shown, prompt * 3 + b)
    m = len(rows)
    cells = Cells(judge, a, b, counts, np.zeros((m, 0)), np.zeros((2, 0)), np.zeros(0),
                  np.zeros((m, 0)), np.zeros(0))
    unit, category = np.nonzero(counts > 0)
    layout = left_out_layout(cells, (first, second), question, item, unit, category,
                             quadrature=(41, 21))
    # one integral per prompt and per point, less prompt 0's without its only verdict (1),
    # and prompt 3's whole and without each verdict: prompt 2's (alike units)
    points_3 = int(np.sum(counts[prompt == 3] > 0))
    assert layout.n_integrals == 5 + len(unit) - 1 - (1 + points_3)
    assert np.sum(layout.without == -1) == 1

    rng = np.random.default_rng(4)
    d = 3
    S = rng.normal(0.0, 0.8, (d, 2, 3))
    gamma = rng.uniform(0.6, 1.5, (d, 2))
    tau = rng.uniform(0.5, 1.2, (d, 3))
    nu = np.array([0.5, 0.8])
    aux = None if outcome == "half" else np.broadcast_to(np.log(nu)[:, None], (d, 2, 1))
    got = left_out_log_densities(layout, S, np.zeros((d, 2, 0)), None, gamma, aux, tau, cells,
                                 outcome_model(outcome))

    def log_lik(x, c):
        if outcome == "half":
            return half_log_likelihood(x, c)
        lam = np.log(nu)[judge]
        log_z = np.logaddexp(np.logaddexp(x / 2, -x / 2), lam)
        return (c[..., 0] * (x / 2 - log_z) + c[..., 1] * (lam - log_z)
                + c[..., 2] * (-x / 2 - log_z))

    x, w = np.polynomial.hermite.hermgauss(40)

    def log_integral(q, c, s):  # over every answer effect of prompt q, under its prior
        answers = np.flatnonzero(question == q)
        grid = np.stack(np.meshgrid(*([np.sqrt(2.0) * x] * len(answers)), indexing="ij"), -1)
        log_w = sum(np.log(g.ravel()) for g in np.meshgrid(
            *([w / np.sqrt(np.pi)] * len(answers)), indexing="ij"))
        alpha = np.zeros((grid[..., 0].size, len(question)))
        alpha[:, answers] = grid.reshape(-1, len(answers)) * tau[s, item[answers]]
        eta = (S[s, judge, a] - S[s, judge, b]
               + gamma[s, judge] * (alpha[:, first] - alpha[:, second]))
        total = (log_lik(eta, c) * (prompt == q)).sum(-1)
        return np.logaddexp.reduce(total + log_w)

    for p, (u, o) in enumerate(zip(unit, category)):
        less = counts.copy()
        less[u, o] -= 1
        for s in range(d):
            exact = log_integral(prompt[u], counts, s) - log_integral(prompt[u], less, s)
            assert got[p, s] == pytest.approx(exact, abs=1e-6), (p, s)
