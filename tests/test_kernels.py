"""Solver kernels at leaderboard size: the conjugate-gradient item step equals the dense one,
its Laplacian products from the units equal the dense Laplacians."""

import jax
import jax.numpy as jnp
import numpy as np

import hja_bayes as hb
from hja_bayes.hja import kernels
from hja_bayes.hja.solve import initial_state
from hja_bayes.likelihood import cells_of, item_information
from hja_bayes.likelihood.terms import design_of


def compiled(step, B, T, cells, aux):
    """A solver step at rank 2 (ridge 0.01, tau 30), compiled anew on every call: the step
    reads ITEM_DENSE_MAX when traced.  (Called outside a compiled program, JAX would compile
    each of its operations on its own, which costs more than the whole step compiled.)"""
    def at_rank_2(B, T, cells, aux):
        return step(B, T, cells, 2, 0.01, 30.0, kernels.HALF, aux)

    return jax.jit(at_rank_2)(B, T, cells, aux)


def test_large_item_blocks_take_the_same_newton_step_by_conjugate_gradients(monkeypatch):
    data, _ = hb.simulate(n_judges=6, n_items=60, rank=2, comparisons_per_judge=1500, seed=1)
    design = design_of(data)
    cells = cells_of(data, pad=True, design=design)
    state = initial_state(data, 2, design, 30.0, width=3)
    B, aux = compiled(kernels.judge_step, state.B, state.T, cells, state.aux)
    monkeypatch.setattr(kernels, "ITEM_DENSE_MAX", 10**9)
    dense = compiled(kernels.item_step, B, state.T, cells, aux)
    monkeypatch.setattr(kernels, "ITEM_DENSE_MAX", 0)
    monkeypatch.setattr(kernels, "ITEM_CG_TOL", 1e-12)  # solved to the end: the same step
    iterative = compiled(kernels.item_step, B, state.T, cells, aux)
    assert np.abs(np.asarray(dense - state.T)).max() > 1e-3  # the step moves
    np.testing.assert_allclose(np.asarray(iterative), np.asarray(dense), atol=1e-10)
    np.testing.assert_allclose(np.asarray(iterative).sum(axis=0), 0.0, atol=1e-10)
    assert np.all(np.asarray(iterative)[:, 3] == 0.0)  # the column beyond the rank


def test_laplacian_products_from_the_units_equal_the_dense_laplacians():
    """The conjugate-gradient item step's products with each judge's information Laplacian,
    computed from the units, against the dense K x N x N Laplacians."""
    data, _ = hb.simulate(n_judges=3, n_items=7, rank=1, comparisons_per_judge=40, seed=2)
    cells = cells_of(data, pad=True)
    rng = np.random.default_rng(0)
    # padding units carry no comparisons, hence no weight, as in a fit
    w = jnp.asarray(rng.uniform(0.1, 2.0, cells.judge.shape[0]) * (np.asarray(cells.n) > 0))
    diagonal, times = kernels.judge_laplacians(w, cells, 3, 7)
    dense = np.asarray(item_information(w, cells, 3, 7))
    Y = rng.normal(size=(3, 7))
    np.testing.assert_allclose(times(jnp.asarray(Y)), np.einsum("kij,kj->ki", dense, Y),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(diagonal, np.einsum("kii->ki", dense), rtol=1e-12)


def test_a_fit_with_inexact_item_steps_ends_where_exact_steps_end(monkeypatch):
    """Item steps by conjugate gradients to the default relative residual (not to the end)
    against dense item steps, in whole fits: the same optimum to within the solver's
    accuracy (its stopping rule is a relative change of 1e-10 in the objective)."""
    data, _ = hb.simulate(n_judges=6, n_items=60, rank=2, comparisons_per_judge=1500, seed=1)
    exact = hb.fit_hja(data, rank=2)  # 60 x 3 item coordinates: dense steps
    monkeypatch.setattr(kernels, "ITEM_DENSE_MAX", 0)
    jax.clear_caches()  # the solver reads the constants when traced
    inexact = hb.fit_hja(data, rank=2)
    jax.clear_caches()
    assert exact.converged and inexact.converged
    assert abs(inexact.nll - exact.nll) <= 1e-9 * exact.nll
    np.testing.assert_allclose(inexact.S, exact.S, atol=1e-5)
