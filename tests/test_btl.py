import threading

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from hja_bayes import (
    Comparisons,
    DataWarning,
    DisconnectedGraphError,
    fit_pooled_btl,
    simulate,
)


def counts(pairs):
    """pairs: (a, b, wins of a, wins of b)"""
    rows = []
    for a, b, wa, wb in pairs:
        rows.append(dict(model_a=a, model_b=b, n=wa + wb, wins=wa))
    return Comparisons.from_counts(pd.DataFrame(rows), judge=None)


def test_wikipedia_worked_example():
    # A-B 2:3, A-D 1:4, B-C 5:3, C-D 1:3 -> strengths with geometric mean 1
    data = counts([("A", "B", 2, 3), ("A", "D", 1, 4), ("B", "C", 5, 3), ("C", "D", 1, 3)])
    fit = fit_pooled_btl(data, ridge=0.0)
    strength = dict(zip(fit.items, np.exp(fit.scores)))  # centred log scores: geometric mean 1
    np.testing.assert_allclose([strength[x] for x in "ABCD"], [0.640, 1.043, 0.660, 2.270], rtol=1e-3)


def test_choix_test_case():
    df = pd.DataFrame({"model_a": ["0", "0", "1", "2"], "model_b": ["1", "1", "2", "0"],
                       "winner": ["model_a"] * 4})
    fit = fit_pooled_btl(Comparisons.from_frame(df, judge=None), ridge=0.0)
    w = np.exp([fit.scores[fit.items.index(x)] for x in "012"])
    np.testing.assert_allclose(3 * w / w.sum(), [1.43586088, 0.62035049, 0.94378863], rtol=1e-6)


def test_matches_direct_optimiser_and_fisher_information():
    data, _ = simulate(n_judges=3, n_items=6, rank=1, comparisons_per_judge=400, seed=1, tie_prob=0.1)
    fit = fit_pooled_btl(data, ridge=0.0)

    def nll(free):
        s = np.append(free, -free.sum())
        eta = s[data.first] - s[data.second]
        return np.sum(data.n * np.logaddexp(0, eta) - data.wins * eta)

    res = minimize(nll, np.zeros(5), method="BFGS", options={"gtol": 1e-9})
    s_direct = np.append(res.x, -res.x.sum())
    np.testing.assert_allclose(fit.scores, s_direct, atol=1e-5)
    assert fit.nll == pytest.approx(res.fun, rel=1e-9)

    # covariance of a contrast = inverse Hessian of the NLL in free coordinates (finite differences)
    h = 1e-4
    H = np.zeros((5, 5))
    for a in range(5):
        for b in range(5):
            e_a, e_b = np.eye(5)[a] * h, np.eye(5)[b] * h
            H[a, b] = (nll(res.x + e_a + e_b) - nll(res.x + e_a - e_b) - nll(res.x - e_a + e_b)
                       + nll(res.x - e_a - e_b)) / (4 * h * h)
    cov_free = np.linalg.inv(H)
    # s_0 - s_1 in free coordinates: gradient (1, -1, 0, 0, 0)
    g = np.array([1.0, -1.0, 0, 0, 0])
    c = np.zeros(6)
    c[0], c[1] = 1, -1
    assert np.sqrt(c @ fit.cov @ c) == pytest.approx(np.sqrt(g @ cov_free @ g), rel=1e-4)


def test_agrees_with_evalica_on_ties():
    evalica = pytest.importorskip("evalica")
    data, _ = simulate(n_judges=1, n_items=8, rank=0, comparisons_per_judge=3000, seed=4, tie_prob=0.1)
    fit = fit_pooled_btl(data, ridge=0.0)
    rows = data.to_frame()
    xs, ys, ws = [], [], []
    for r in rows.itertuples():
        for outcome, count in ((evalica.Winner.X, r.wins - r.ties / 2), (evalica.Winner.Y, r.n - r.wins - r.ties / 2),
                               (evalica.Winner.Draw, r.ties)):
            xs += [r.model_a] * int(count)
            ys += [r.model_b] * int(count)
            ws += [outcome] * int(count)
    result = evalica.bradley_terry(xs, ys, ws, tolerance=1e-12, limit=100000)
    theirs = np.log(result.scores.reindex(list(fit.items)).to_numpy())
    np.testing.assert_allclose(fit.scores, theirs - theirs.mean(), atol=1e-4)


def test_disconnected_graph_is_an_error():
    data = counts([("a", "b", 1, 1), ("c", "d", 1, 1)])
    with pytest.raises(DisconnectedGraphError):
        fit_pooled_btl(data)


def test_separated_item_finite_with_warning():
    data = counts([("a", "b", 5, 0), ("b", "c", 2, 3)])
    with pytest.warns(DataWarning, match="every comparison"):
        fit = fit_pooled_btl(data)
    assert np.all(np.isfinite(fit.scores)) and np.all(np.isfinite(fit.se))


def test_wald_coverage_by_simulation():
    # 200 replicates, nominal 90%: coverage of s_0 - s_1 within 3 binomial sd of 0.90
    rng = np.random.default_rng(7)
    truth = np.array([0.5, 0.0, -0.3, -0.2])
    hits = 0
    reps = 200
    for _ in range(reps):
        rows = []
        for i in range(4):
            for j in range(i + 1, 4):
                n = 60
                w = rng.binomial(n, 1 / (1 + np.exp(-(truth[i] - truth[j]))))
                rows.append(dict(model_a=str(i), model_b=str(j), n=n, wins=w))
        fit = fit_pooled_btl(Comparisons.from_counts(pd.DataFrame(rows), judge=None), ridge=0.0)
        idx = [fit.items.index(str(k)) for k in range(4)]
        est = fit.scores[idx[0]] - fit.scores[idx[1]]
        c = np.zeros(4)
        c[idx[0]], c[idx[1]] = 1, -1
        se = np.sqrt(c @ fit.cov @ c)
        hits += abs(est - (truth[0] - truth[1])) <= 1.6449 * se
    sd = np.sqrt(0.9 * 0.1 / reps)
    assert abs(hits / reps - 0.90) <= 3 * sd


def test_large_panels_take_newton_steps_by_conjugate_gradients(monkeypatch):
    from hja_bayes import btl

    data, _ = simulate(n_judges=3, n_items=50, rank=1, comparisons_per_judge=600, seed=2)
    monkeypatch.setattr(btl, "BTL_DENSE_MAX", 10**6)
    dense = btl.fit_per_judge_btl(data, ridge=0.1)
    monkeypatch.setattr(btl, "BTL_DENSE_MAX", 0)
    iterative = btl.fit_per_judge_btl(data, ridge=0.1)
    np.testing.assert_allclose(iterative, dense, atol=1e-9)


def test_judges_fitted_in_threads_give_the_same_rows(monkeypatch):
    """Large panels fit the judges' starts in threads: the same numbers, each in its row."""
    from hja_bayes import btl

    data, _ = simulate(n_judges=5, n_items=30, rank=1, comparisons_per_judge=400, seed=4)
    monkeypatch.setattr(btl, "BTL_DENSE_MAX", 0)  # steps by conjugate gradients
    one_by_one = btl.fit_per_judge_btl(data)
    monkeypatch.setattr(btl, "THREADED_CELLS", 0)
    monkeypatch.setattr(btl, "usable_cores", lambda: 2)
    threads, newton = set(), btl.btl_newton

    def recorded(*args, **kwargs):
        threads.add(threading.current_thread().name)
        return newton(*args, **kwargs)

    monkeypatch.setattr(btl, "btl_newton", recorded)
    threaded = btl.fit_per_judge_btl(data)
    assert threading.main_thread().name not in threads  # the pool's threads did the work
    np.testing.assert_array_equal(threaded, one_by_one)
    assert len({tuple(np.round(row, 6)) for row in threaded}) == data.n_judges


def test_pooled_fit_of_clustered_data_warns_and_the_pooled_hja_fit_is_cluster_robust():
    """Pooled Bradley-Terry intervals are Fisher's: with prompts in the data it says so and
    names the pooled model with cluster-robust intervals, fit_hja at rank 0 on data read with
    one judge, whose scores are the same MLE (both with ridge 0)."""
    from hja_bayes import fit_hja

    data, _ = simulate(n_judges=1, n_items=5, rank=0, comparisons_per_judge=3000, seed=2,
                       questions=40, question_correlation=0.6)
    with pytest.warns(DataWarning, match="read the data with judge=None and fit fit_hja"):
        pooled = fit_pooled_btl(data, ridge=0.0)
    hja = fit_hja(data, rank=0, ridge=0.0)
    np.testing.assert_allclose(hja.mu - hja.mu.mean(), pooled.scores - pooled.scores.mean(),
                               atol=1e-6)
    robust = hja.intervals().query("quantity == 'mu'")["se"].to_numpy()
    fisher = hja.intervals(cov_type="fisher").query("quantity == 'mu'")["se"].to_numpy()
    assert np.all(robust > 1.2 * fisher)  # verdicts coupled within 40 prompts
