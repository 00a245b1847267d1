"""Posterior distribution of the items' ranks (hja_bayes.bayes.ranks)."""

import numpy as np
import pytest

from hja_bayes.bayes import rank_posterior

from .bayes_support import panel


def flat(idata, group, name):
    x = np.asarray(getattr(idata, group)[name], dtype=float)
    return x.reshape((-1,) + x.shape[2:])


def test_rank_posterior_matches_a_direct_computation():
    data, _, _, idata = panel()
    result = rank_posterior(idata)
    mu = flat(idata, "posterior", "mu")
    ranks = (-mu).argsort(1).argsort(1) + 1
    np.testing.assert_allclose(result.probabilities.sum(axis=1), 1.0)
    for item, row in result.table.set_index("item").iterrows():
        i = data.items.index(item)
        assert row.mean_rank == pytest.approx(ranks[:, i].mean())
        assert row.p_best == pytest.approx(np.mean(ranks[:, i] == 1))
        assert row.lower <= row.median_rank <= row.upper
    assert list(result.table.mean_rank) == sorted(result.table.mean_rank)
    by_judge = rank_posterior(idata, judge=data.judges[0])
    assert by_judge.table.shape == result.table.shape
