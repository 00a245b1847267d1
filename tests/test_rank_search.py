"""The rank search: one compiled solver step for every candidate, and early stopping of
candidates that cannot win the BIC."""

import warnings

import numpy as np
import pytest

import hja_bayes as hb
from hja_bayes.hja import selection
from hja_bayes.hja.solve import fit_rank, make_fit
from hja_bayes.likelihood import cells_of
from hja_bayes.likelihood.terms import design_of


@pytest.mark.parametrize("rank, width", [(0, 2), (1, 3), (2, 2)])
def test_a_rank_fitted_in_wider_blocks_is_the_same_fit(rank, width):
    data, _ = hb.simulate(n_judges=5, n_items=7, rank=1, comparisons_per_judge=300, seed=3)
    design = design_of(data)
    cells = cells_of(data, pad=True, design=design)
    kw = dict(tau=30.0, ridge=0.01, tol=1e-12, max_iter=500)
    narrow = fit_rank(data, cells, design, rank, **kw)
    wide = fit_rank(data, cells, design, rank, width=width, **kw)
    assert narrow.converged and wide.converged
    a = make_fit(data, narrow, rank, (), design, cells, 0.01)
    b = make_fit(data, wide, rank, (), design, cells, 0.01)
    np.testing.assert_allclose(b.S, a.S, atol=1e-8)
    assert b.nll == pytest.approx(a.nll, rel=1e-12, abs=1e-9)
    # the unused columns of the wide blocks stay exactly zero
    assert np.all(np.asarray(wide.state.B[:, 1 + rank:1 + width]) == 0.0)
    assert np.all(np.asarray(wide.state.T[:, 1 + rank:]) == 0.0)


def _search(data, ridge, stop_after):
    old = selection.STOP_AFTER
    selection.STOP_AFTER = stop_after
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return hb.fit_hja(data, rank="bic", ridge=ridge)
    finally:
        selection.STOP_AFTER = old


def test_crawling_candidates_are_stopped_without_changing_the_choice():
    # a sparse rank-0 panel under a tiny ridge: candidates above rank 0 crawl for
    # thousands of iterations (their scores drift towards separation)
    data, _ = hb.simulate(n_judges=5, n_items=6, rank=0, comparisons_per_judge=40, seed=2,
                          heterogeneity=0.5)
    early = _search(data, 1e-6, selection.STOP_AFTER)
    full = _search(data, 1e-6, 10**9)
    stopped = early.rank_table["stopped_early"].to_numpy()
    assert stopped.any() and not full.rank_table["stopped_early"].any()
    assert early.rank == full.rank
    assert not early.rank_table["converged"][stopped].any()
    # never stopped before STOP_AFTER iterations, and long before the full runs ended
    n_iter = early.rank_table["n_iter"][stopped]
    assert (n_iter >= selection.STOP_AFTER).all()
    assert (n_iter < full.rank_table["n_iter"][stopped] / 5).all()
    # run to the end, the stopped candidates indeed lose the BIC
    assert (full.rank_table["bic"][stopped] > full.rank_table["bic"].min()).all()
    # what the table reports for them is where they stopped: no better than the full run
    assert (early.rank_table["bic"][stopped] >= full.rank_table["bic"][stopped] - 1e-6).all()
    assert early.rank_table["bic"].idxmin() == early.rank


def test_cross_validation_runs_every_candidate_to_the_end():
    data, _ = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=200, seed=1)
    table = hb.rank_criteria(data, ranks=[0, 1, 2], cv_folds=2)
    assert not table["stopped_early"].any()
    # arguments fit_hja refuses, rank_criteria had taken: one fold (nothing trained on: a
    # held-out NLL of n log 2 at every rank), no fold (ZeroDivisionError), no rank, a rank
    # twice, seed None, more folds than comparisons
    from hja_bayes.hja.selection import split_comparisons

    for options in (dict(cv_folds=1), dict(cv_folds=0), dict(ranks=[]), dict(ranks=[1, 1]),
                    dict(seed=None), dict(cv_folds=5_000)):
        with pytest.raises(hb.ParameterError):
            hb.rank_criteria(data, **({"ranks": [0, 1]} | options))
    with pytest.raises(hb.ParameterError, match="n_folds"):
        split_comparisons(data, 0)



def test_the_search_stops_once_the_bic_stops_improving():
    data, _ = hb.simulate(n_judges=5, n_items=7, rank=1, comparisons_per_judge=300, seed=3)
    full = hb.fit_hja(data, rank="bic", max_rank=3, patience=None)
    one = hb.fit_hja(data, rank="bic", max_rank=3)  # patience 1, the default
    two = hb.fit_hja(data, rank="bic", max_rank=3, patience=2)
    assert full.rank == one.rank == two.rank == 1
    assert list(one.rank_table["rank"]) == [0, 1, 2, 3]
    assert list(one.rank_table["skipped"]) == [False, False, False, True]
    assert not full.rank_table["skipped"].any() and not two.rank_table["skipped"].any()
    skipped = one.rank_table.iloc[3]
    assert np.isnan(skipped["nll"]) and np.isnan(skipped["bic"]) and skipped["n_iter"] == 0
    assert not skipped["converged"]
    np.testing.assert_allclose(one.rank_table["nll"][:3], full.rank_table["nll"][:3], rtol=1e-12)
    np.testing.assert_allclose(one.S, full.S, atol=1e-12)


@pytest.mark.parametrize("patience", [0, -1, 1.5, True, "1"])
def test_patience_is_a_positive_integer_or_none(patience):
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=50, seed=0)
    with pytest.raises(hb.ParameterError, match="patience"):
        hb.fit_hja(data, rank="bic", patience=patience)
