"""The saved fits in models/ still match a refit of the bundled data."""

from pathlib import Path

import numpy as np
import pytest

import hja_bayes as hb

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.mark.skipif(not (MODELS / "prd_vicuna80" / "fit.json").exists(),
                    reason="models/ is not part of this checkout")
def test_saved_prd_fit_matches_a_refit():
    saved = hb.load_fit(MODELS / "prd_vicuna80")
    data = hb.Comparisons.from_frame(hb.datasets.load_prd_vicuna80().judgments)
    for name in ("judge", "first", "second", "n", "wins", "ties"):
        assert np.array_equal(getattr(saved.data, name), getattr(data, name)), name
    assert saved.position_bias and saved.rank_table is not None
    # the saved rank is the one BIC chose among the saved candidates
    table = saved.rank_table
    assert saved.rank == int(table["rank"][table["bic"].idxmin()])
    refit = hb.fit_hja(data, rank=saved.rank, position_bias=True)
    assert refit.items == saved.items and refit.judges == saved.judges
    # the solver stops on a relative change of the objective of 1e-10, which pins the
    # estimates to about 1e-5 (the Wald standard errors are about 0.03)
    np.testing.assert_allclose(refit.S, saved.S, atol=1e-4)
    np.testing.assert_allclose(refit.beta, saved.beta, atol=1e-4)
    np.testing.assert_allclose(refit.gamma, saved.gamma, atol=1e-4)
    assert refit.nll == pytest.approx(saved.nll, rel=1e-9)
    # the saved candidate fits agree with a fresh computation at the chosen rank
    row = table[table["rank"] == saved.rank].iloc[0]
    assert row["nll"] == pytest.approx(refit.nll, rel=1e-9)
