"""The driver: chunks of solver steps on the device, the fail-safe, progress and stop."""

import math

import jax
import numpy as np
import pytest

import hja_bayes as hb
from hja_bayes.hja import kernels, loop, solve as solve_module
from hja_bayes.hja.solve import STEPS_PER_CHECK, initial_state, solve
from hja_bayes.likelihood import cells_of
from hja_bayes.likelihood.terms import design_of

KW = dict(ridge=0.01)


@pytest.fixture(scope="module")
def panel():
    # the size class of test_rank_search's panel, so its programs are compiled once
    data, _ = hb.simulate(n_judges=5, n_items=7, rank=1, comparisons_per_judge=300, seed=3)
    return data, cells_of(data, pad=True, design=design_of(data))


def initial(data, rank, tau):
    return initial_state(data, rank, design_of(data), tau)


def host_loop(state, cells, rank, tol, max_iter):
    """The driver's rules written out step by step with the single-step kernel."""
    f = float(loop.objective_jit(state.B, state.T, cells, KW["ridge"], kernels.HALF, state.aux))
    for it in range(1, max_iter + 1):
        new, info = kernels.step(state, cells, rank=rank, **KW)
        f_new = float(info.objective)
        if (float(info.mu_norm) < loop.MU_FLOOR or float(info.sigma_r) < loop.SIGMA_FLOOR
                or not math.isfinite(f_new)):
            state = state._replace(tau=state.tau * loop.TAU_GROW)
            continue
        state = new._replace(tau=max(new.tau * loop.TAU_SHRINK, loop.TAU_MIN))
        done = abs(f - f_new) <= tol * max(1.0, abs(f_new))
        f = f_new
        if done:
            return state, it, True
    return state, max_iter, False


def test_chunks_on_the_device_follow_the_single_steps(panel):
    data, cells = panel
    start = initial(data, 1, 1e4)  # a cautious start: more than one chunk
    start = start._replace(aux=np.zeros((data.n_judges, 0)))
    ref, n_ref, converged_ref = host_loop(start, cells, 1, 1e-12, 500)
    out = solve(start, cells, 1, tol=1e-12, max_iter=500, **KW)
    assert out.converged and converged_ref
    assert abs(out.n_iter - n_ref) <= 1  # two compilations of one step may differ in the last bit
    assert out.n_iter > STEPS_PER_CHECK  # more than one chunk
    S, _ = kernels.scores(out.state.B, out.state.T)
    S_ref, _ = kernels.scores(ref.B, ref.T)
    np.testing.assert_allclose(np.asarray(S), np.asarray(S_ref), atol=1e-8)
    assert isinstance(out.state.tau, float)


def test_a_step_whose_objective_is_not_finite_is_undone_and_tau_grows(panel):
    data, cells = panel
    broken = cells._replace(counts=cells.counts.at[0, 0].set(np.nan))
    start = initial(data, 1, 30.0)
    out = solve(start, broken, 1, tol=1e-10, max_iter=4, **KW)
    assert out.n_iter == 4 and not out.converged
    np.testing.assert_array_equal(np.asarray(out.state.B), np.asarray(start.B))
    np.testing.assert_array_equal(np.asarray(out.state.T), np.asarray(start.T))
    assert out.state.tau == pytest.approx(30.0 * loop.TAU_GROW**4)
    # tau passes TAU_FAIL = 1e12 at the 11th undone step: the fail-safe gives up
    with pytest.raises(hb.IdentifiabilityError, match="collapsed"):
        solve(start, broken, 1, tol=1e-10, max_iter=100, **KW)


def test_a_step_reports_the_objective_at_its_point_and_nan_when_reanchor_fails(panel,
                                                                              monkeypatch):
    """The step's objective (its item step's last value less the proximal term) equals the
    objective evaluated afresh at the returned blocks; a ReAnchor that returns NaN blocks
    makes it NaN, so the fail-safe undoes the step (the step traced here, not compiled)."""
    data, cells = panel
    state = initial(data, 1, 30.0)
    aux, theta = kernels.start_values(state, cells)
    args = (state.B, state.T, aux, theta, cells, 30.0, KW["ridge"], 1, True, kernels.HALF)
    B, T, _, _, f, _, _ = kernels._outer_step(*args)
    fresh = kernels.objective(B, T, cells, KW["ridge"], kernels.HALF, aux, theta)
    assert float(f) == pytest.approx(float(fresh), rel=1e-12)
    monkeypatch.setattr(kernels, "reanchor", lambda B, T, rank: (B * np.nan, T, 1.0, 1.0))
    assert math.isnan(float(kernels._outer_step(*args)[4]))


def test_progress_sees_every_step_and_stop_is_asked_between_chunks(panel):
    data, cells = panel
    start = initial(data, 1, 30.0)
    seen, asked = [], []
    # tol < 0: the run never converges, so it takes every step it is allowed
    out = solve(start, cells, 1, tol=-1.0, max_iter=60, progress=lambda it, f: seen.append(it),
                stop=lambda it, f, state: asked.append(it) or False, **KW)
    assert out.n_iter == 60 and not out.converged
    assert seen == list(range(1, 61))
    assert asked == [25, 50, 60]
    out = solve(start, cells, 1, tol=-1.0, max_iter=60, stop=lambda it, f, state: True, **KW)
    assert out.stopped_early and out.n_iter == STEPS_PER_CHECK and not out.converged


def test_the_driver_reads_the_device_once_per_chunk(panel, monkeypatch):
    data, cells = panel
    start = initial(data, 1, 30.0)
    reads = []
    device_get = jax.device_get
    monkeypatch.setattr(solve_module.jax, "device_get", lambda x: reads.append(1) or device_get(x))
    with jax.transfer_guard_device_to_host("disallow"):  # no implicit read (float(), np.asarray)
        out = solve(start, cells, 1, tol=1e-12, max_iter=500, **KW)
    assert len(reads) == -(-out.n_iter // STEPS_PER_CHECK)


def test_a_large_panel_takes_one_step_per_look_and_the_same_path(panel, monkeypatch):
    data, cells = panel
    start = initial(data, 1, 30.0)
    small = solve(start, cells, 1, tol=1e-12, max_iter=500, **KW)
    monkeypatch.setattr(kernels, "LIGHT_SIZE", 0)  # every panel is large now
    asked = []
    large = solve(start, cells, 1, tol=1e-12, max_iter=500,
                  stop=lambda it, f, state: asked.append(it) or False, **KW)
    assert large.converged and abs(large.n_iter - small.n_iter) <= 1
    assert asked == list(range(1, large.n_iter))  # after every step but the converged one
    S, _ = kernels.scores(large.state.B, large.state.T)
    S_small, _ = kernels.scores(small.state.B, small.state.T)
    np.testing.assert_allclose(np.asarray(S), np.asarray(S_small), atol=1e-8)


def test_the_quickly_compiled_solver_finds_the_same_fit(panel):
    data, _ = panel
    fast = hb.fit_hja(data, rank="bic", max_rank=2)
    quick = hb.fit_hja(data, rank="bic", max_rank=2, quick_compile=True)
    assert quick.rank == fast.rank and abs(quick.n_iter - fast.n_iter) <= 1
    np.testing.assert_allclose(quick.S, fast.S, atol=1e-8)
    assert quick.nll == pytest.approx(fast.nll, rel=1e-10)


def test_a_quick_fit_takes_mid_sized_panels_as_small(panel, monkeypatch):
    """A fit compiled for one fit counts panels up to QUICK_SIZE as small (light options,
    steps in chunks on the device): the same fit as the large panel's path."""
    data, _ = panel
    monkeypatch.setattr(kernels, "LIGHT_SIZE", 0)  # the panel is mid-sized now
    cells = cells_of(data, pad=True)
    T = np.zeros((data.n_items, 2))
    assert kernels.small_panel(cells, T, quick=True) and not kernels.small_panel(cells, T)
    chunks = []
    real = loop.run_steps
    monkeypatch.setattr(loop, "run_steps", lambda *a, **k: chunks.append(k["chunk"]) or real(
        *a, **k))
    large = hb.fit_hja(data, rank=1)
    assert set(chunks) == {1}
    chunks.clear()
    quick = hb.fit_hja(data, rank=1, quick_compile=True)
    assert set(chunks) == {STEPS_PER_CHECK}
    assert abs(quick.n_iter - large.n_iter) <= 1
    np.testing.assert_allclose(quick.S, large.S, atol=1e-8)
