"""Bootstrap of a fitted panel: resampling is right, and its spread matches the Wald se."""

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.categories import collapse_counts
from hja_bayes.hja.bootstrap import bootstrap_fit


def test_row_bootstrap_spread_matches_fisher_se_on_independent_comparisons():
    # independent comparisons: the Fisher se is right, so the bootstrap sd must agree with it.
    # With 150 replicates an sd is estimated to about 1/sqrt(2 * 149) = 6%; 0.75..1.33 is
    # more than 4 standard errors wide.
    data, _ = hb.simulate(n_judges=4, n_items=5, rank=0, comparisons_per_judge=1500, seed=3)
    fit = hb.fit_hja(data, rank=0)
    boot = fit.bootstrap(150, seed=0, cluster=False)
    se = fit.intervals().query("quantity == 'mu'")["se"].to_numpy()
    ratio = boot.mu.std(0, ddof=1) / se
    assert np.all((ratio > 0.75) & (ratio < 1.33)), ratio
    assert boot.converged.all() and boot.mu.shape == (150, 5)
    table = boot.table(0.9)  # 7.5 replicates beyond each limit
    assert set(table.quantity) == {"mu", "gamma"} and (table.lower <= table.upper).all()
    with pytest.warns(hb.HJAWarning, match="150 bootstrap replicates leave 3.8 beyond each "
                                           "limit of a 95% percentile interval.*200 or more"):
        boot.table()  # too few for 95% limits: said


def test_comparison_bootstrap_keeps_the_weight_of_half_counts():
    """Counts read with ties as half wins (2.5 of 5) had been rounded before resampling
    (2.5 to 2, 0.5 to 0): each replicate now holds the data's number of comparisons, drawn
    in proportion to the counts as they are."""
    from hja_bayes.hja.bootstrap import _resampled_counts

    rng = np.random.default_rng(0)
    frame = pd.DataFrame([dict(judge=j, model_a=a, model_b=b, n=5, wins=rng.integers(0, 11) / 2)
                          for j in ("j1", "j2") for a in "abc" for b in "abc" if a != b])
    with pytest.warns(hb.DataWarning):
        data = hb.Comparisons.from_counts(frame, ties=None)
    counts = np.asarray(data.counts)
    draws = np.stack([_resampled_counts(data, counts, "cells", rng, cluster=False)[0]
                      for _ in range(4000)])
    assert np.all(draws.sum(axis=(1, 2)) == counts.sum())
    # the mean replicate is the data: within 4 standard errors of a multinomial mean
    p = counts / counts.sum()
    se = np.sqrt(counts.sum() * p * (1 - p) / len(draws))
    assert np.all(np.abs(draws.mean(0) - counts) <= 4 * se + 1e-12)


def test_cluster_bootstrap_resamples_whole_questions():
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=5,
                          questions=10)
    fit = hb.fit_hja(data, rank=0)
    boot = bootstrap_fit(fit, 3, seed=1)
    assert boot.cluster and boot.S.shape == (3, 3, 4)
    plain, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=5)
    with pytest.raises(hb.ParameterError, match="cluster=False"):
        hb.fit_hja(plain, rank=0).bootstrap(3)
    with pytest.raises(hb.ParameterError, match="n must be"):
        fit.bootstrap(1)


def test_bootstrap_arguments_are_checked_and_progress_shown(capsys):
    """progress=True had stopped with "'bool' object is not callable" after the first
    refit (fit_hja takes a bool); weights= without wild=True, and cluster=False with it, had
    been ignored; a seed of -1 or 1.5 had met NumPy's errors."""
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=5,
                          questions=10)
    fit = hb.fit_hja(data, rank=0)
    boot = fit.bootstrap(10, seed=2, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == "  bootstrap: 10 of 10 replicates" and len(lines) == 10
    np.testing.assert_array_equal(boot.S, fit.bootstrap(10, seed=2, progress=False).S)
    for options, said in ((dict(weights="webb"), "pass wild=True"),
                          (dict(wild=True, cluster=False), "cluster=False"),
                          (dict(seed=-1), "seed"), (dict(seed=1.5), "seed")):
        with pytest.raises(hb.ParameterError, match=said):
            fit.bootstrap(5, **options)


def _rare_model_panel(prompts: int):
    """3 judges, 5 models on 20 prompts; the last model kept on the first ``prompts``."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=400, seed=8,
                          questions=20)
    c = data.clusters
    rare = (data.first == 4) | (data.second == 4)
    return data.without(np.where((rare[c.cell] & (c.cluster >= prompts))[:, None],
                                 c.counts, 0.0))


def test_replicates_that_draw_none_of_a_models_prompts_are_left_out_and_said():
    """A model on 2 of 20 prompts: about (18/20)**20 = 12% of the prompt resamples draw
    neither, and that replicate's score for it had been the ridge's (near 0), not data's;
    the percentile interval mixed the two.  Which replicates those are is recomputed here
    from the seed's own draws; the table is the kept replicates' percentiles."""
    data = _rare_model_panel(2)
    fit = hb.fit_hja(data, rank=0)
    boot = fit.bootstrap(60, seed=3)
    c = data.clusters
    rare = (data.first == 4) | (data.second == 4)
    its_prompts = np.unique(c.cluster[rare[c.cell]])
    assert its_prompts.size == 2
    rng = np.random.default_rng(3)
    drawn = np.stack([rng.multinomial(c.n_clusters, np.full(c.n_clusters, 1 / c.n_clusters))
                      for _ in range(60)])
    unseen = drawn[:, its_prompts].sum(1) == 0
    assert 0 < unseen.sum() < 60
    np.testing.assert_array_equal(boot.unidentified, unseen)
    assert boot.lacking == (f"model 'item4' had no verdicts in {unseen.sum()}",)
    assert f"{unseen.sum()} unidentified" in repr(boot)
    # those replicates' scores for the model are the ridge's: far from every other one
    assert np.abs(boot.mu[unseen, 4]).max() < 0.05 < np.abs(boot.mu[~unseen, 4]).min()
    with pytest.warns(hb.DataWarning, match=rf"{unseen.sum()} of 60 bootstrap replicates are "
                                            r"left out \(model 'item4' had no verdicts"):
        table = boot.table(0.5)
    kept = boot.mu[~unseen]
    mu = table.query("quantity == 'mu'")
    np.testing.assert_allclose(mu["lower"], np.quantile(kept, 0.25, axis=0))
    np.testing.assert_allclose(mu["sd"], kept.std(0, ddof=1))


def test_a_model_on_one_prompt_has_no_prompt_bootstrap():
    """Every replicate draws its prompt (one estimate, as if certain) or none (the ridge's):
    refused, as the cluster-robust intervals are; resampling comparisons is not."""
    fit = hb.fit_hja(_rare_model_panel(1), rank=0)
    with pytest.raises(hb.IdentifiabilityError, match=r"model\(s\) 'item4' appear\(s\) on a "
                                                      r"single prompt.*bootstrap of prompts.*"
                                                      r"cluster=False"):
        fit.bootstrap(20)
    assert fit.bootstrap(20, cluster=False).unidentified.sum() == 0


def test_a_prompt_resample_draws_among_the_prompts_that_hold_comparisons():
    """After a selection of judges some prompts hold none of the data's comparisons: each
    replicate had drawn G times among all the prompts (4-9 draws on the 8 occupied ones)
    instead of exactly once per occupied prompt on average and in total."""
    from hja_bayes.hja.bootstrap import _resampled_counts

    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300, seed=5,
                          questions=12)
    c = data.clusters
    only_third = (c.cluster >= 8) & (data.judge[c.cell] != 2)  # prompts 8-11: judge 2's
    data = data.without(np.where(only_third[:, None], c.counts, 0.0)).select_judges([0, 1])
    c = data.clusters
    assert c.n_clusters == 12 and np.unique(c.cluster).size == 8
    rng = np.random.default_rng(0)
    for _ in range(50):
        _, weight = _resampled_counts(data, np.asarray(data.counts), "cells", rng, True)
        per_prompt = np.zeros(c.n_clusters)
        per_prompt[c.cluster] = weight
        assert per_prompt.sum() == 8 and not per_prompt[8:].any()


def test_a_replicate_whose_comparison_graph_falls_apart_is_unidentified():
    from hja_bayes.hja.bootstrap import _unseen

    owners = [np.array([0, 0, 1]), np.array([0, 2, 0]), np.array([1, 3, 1])]
    both = np.array([[1.0, 0, 0], [0, 0, 2], [0, 1, 0]])
    missing, unidentified = _unseen(both, owners, 2, 4)  # {0, 1} and {2, 3} apart
    assert not missing.any() and unidentified
    linked = np.array([[1, 0, 0], [0, 0, 2], [0, 1, 0], [1, 0, 0]])
    assert not _unseen(linked, [np.append(o, x) for o, x in zip(owners, (1, 1, 2))], 2, 4)[1]
    missing, unidentified = _unseen(both * [[1], [1], [0]], owners, 2, 4)  # judge 1: none
    np.testing.assert_array_equal(missing, [False, True, False, False, False, False])
    assert unidentified


def _tiny_panel():
    """Three judges, three models, 12 verdicts each: refits from the fit wander off."""
    data, _ = hb.simulate(n_judges=3, n_items=3, rank=0, comparisons_per_judge=12, seed=14,
                          tie_prob=0.15)
    return data, hb.fit_hja(data, rank=0)


def test_a_refit_that_wanders_from_the_warm_start_starts_afresh():
    """Without one verdict the warm-started refit drifted for 2,000 steps towards judges
    that cancel out (no consensus), and fragility took it as the answer; the refit now
    starts afresh there and lands where a fresh fit of the reduced data does."""
    from hja_bayes.hja.bootstrap import _start, refit_without
    from hja_bayes.hja.solve import solve
    from hja_bayes.likelihood import cells_of
    from hja_bayes.likelihood.terms import design_of

    data, fit = _tiny_panel()
    removed = np.zeros_like(np.asarray(data.counts))
    removed[3, 0] = 1
    reduced = data.without(removed)
    cells = cells_of(reduced, pad=True, outcome=fit.outcome_model,
                     design=design_of(reduced, fit.terms))
    warm = solve(_start(fit), cells, 0, ridge=fit.ridge, tol=1e-10, max_iter=2000,
                 outcome=fit.outcome_model)
    assert not warm.converged
    refit = refit_without(fit, removed)
    fresh = hb.fit_hja(reduced, rank=0)
    assert refit.converged and fresh.converged
    np.testing.assert_allclose(refit.mu, fresh.mu, atol=1e-6)
    assert refit.nll == pytest.approx(fresh.nll, rel=1e-9)


def test_a_table_of_unconverged_replicates_says_so():
    _, fit = _tiny_panel()
    boot = fit.bootstrap(40, seed=0, cluster=False)
    stuck = int(np.sum(~boot.converged))
    assert stuck > 0
    with pytest.warns(hb.HJAWarning, match=f"{stuck} of 40 bootstrap replicates did not "
                                           "converge"):
        boot.table(0.5)


def test_replicates_of_a_self_preference_fit_reach_their_own_optimum():
    """Warm-started replicates of a fit with self-preference stopped where the alternation
    slows (2e-3 from a fit of the replicate's data); they are finished as fit_hja finishes."""
    data, truth = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=400, seed=1,
                              self_preference=0.6, questions=40, question_correlation=0.2)
    options = dict(rank=1, self_preference=truth.owners)
    boot = hb.fit_hja(data, **options).bootstrap(2, seed=5, cluster=True)
    c = data.clusters  # the first replicate's prompts, drawn as the bootstrap draws them
    rng = np.random.default_rng(5)
    drawn = rng.multinomial(c.n_clusters, np.full(c.n_clusters, 1 / c.n_clusters))
    counts = np.zeros_like(data.counts)
    np.add.at(counts, c.cell, c.counts * drawn[c.cluster][:, None])
    kept = counts.sum(axis=1) > 0
    replicate = hb.Comparisons(data.judges, data.items, data.judge[kept], data.first[kept],
                               data.second[kept], counts[kept])
    fresh = hb.fit_hja(replicate, **options).S
    assert boot.converged.all()
    np.testing.assert_allclose(boot.S[0], fresh - fresh.mean(axis=1, keepdims=True), atol=2e-5)


@pytest.mark.parametrize("graded", [False, True])
def test_comparison_replicates_of_a_self_preference_fit_reach_their_own_optimum(graded):
    """cluster=False resamples single comparisons: its replicates are finished too, also
    where five graded verdicts are read as three outcomes (those had been left unfinished)."""
    data, truth = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=400, seed=1,
                              self_preference=0.6, **(dict(outcome="ordinal") if graded
                                                      else dict(tie_prob=0.1)))
    options = dict(rank=1, self_preference=truth.owners, outcome="half")
    boot = hb.fit_hja(data, **options).bootstrap(2, seed=3, cluster=False)
    counts = collapse_counts(data.counts)  # drawn as the bootstrap draws them
    rng = np.random.default_rng(3)
    drawn = rng.multinomial(int(counts.sum()), (counts / counts.sum()).ravel()).reshape(
        counts.shape).astype(float)
    kept = drawn.sum(axis=1) > 0
    replicate = hb.Comparisons(data.judges, data.items, data.judge[kept], data.first[kept],
                               data.second[kept], drawn[kept])
    fresh = hb.fit_hja(replicate, **options).S
    assert boot.converged.all()  # 2e-5 apart at the solvers' tolerance; 4.9e-3 unfinished
    np.testing.assert_allclose(boot.S[0], fresh - fresh.mean(axis=1, keepdims=True), atol=1e-4)
