"""Wald against credible intervals (hja_bayes.bayes.compare)."""

import numpy as np
import pytest

from hja_bayes import compare_intervals, wald_inference

from .bayes_support import panel


def flat(idata, group, name):
    x = np.asarray(getattr(idata, group)[name], dtype=float)
    return x.reshape((-1,) + x.shape[2:])


def test_compare_intervals_puts_wald_beside_the_posterior():
    data, _, fit, idata = panel()
    table = compare_intervals(fit, idata)
    N, K = data.n_items, data.n_judges
    counts = table.quantity.value_counts()
    assert counts["mu_diff"] == N * (N - 1) // 2 and counts["gamma"] == K
    assert counts["beta"] == K and counts["S_diff"] == K * N * (N - 1) // 2
    wald = wald_inference(data, fit.S, fit.beta, 1, position_bias=True)
    np.testing.assert_allclose(table[table.quantity == "gamma"].wald_se, wald.gamma().se)
    mu = flat(idata, "posterior", "mu")
    row = table[table.label == f"{data.items[0]} - {data.items[3]}"].iloc[0]
    diff = mu[:, 0] - mu[:, 3]
    assert row.post_mean == pytest.approx(diff.mean())
    assert row.eti_lower == pytest.approx(np.quantile(diff, 0.025))
    assert row.hdi_lower <= row.post_mean <= row.hdi_upper
    # 1500 comparisons per judge: the posterior is close to the Wald normal.  With ~500
    # effective draws an sd is estimated to ~3%; allow 15% for that and for curvature.
    assert 0.85 < table.sd_ratio.median() < 1.15
