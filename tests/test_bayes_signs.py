"""Posterior draws keep the MAP's U, V signs, also where item 0's loading is zero."""

import arviz as az
import numpy as np

from hja_bayes import wald_inference
from hja_bayes.decomposition import canonical_decomposition

from .bayes_support import zero_loading_panel


def test_a_zero_loading_does_not_flip_draws_or_shrink_u():
    """Before the sign rule was anchored on the largest loading, 40% of such draws came out
    flipped, the posterior mean of U shrank 5x and its sd was 25x the Wald se.

    Allowances: |mean - MAP| <= 4 MCSE + 0.2 sd (a posterior mean differs from the mode by a
    fraction of an sd at this size); posterior sd / Wald se within [0.75, 1.33] for every
    judge (an sd from ~500 effective draws is known to ~3%; the rest is the normal
    approximation's error at 60 comparisons per cell).
    """
    data, S, fit, idata = zero_loading_panel()
    assert abs(float(fit.V[0, 0])) < 0.2  # the MAP has item 0's loading near zero
    post = idata.posterior
    U = np.asarray(post["U"])[..., 0]
    mean, sd = U.mean(axis=(0, 1)), U.std(axis=(0, 1))
    mcse = np.asarray(az.mcse(post)["U"])[:, 0]
    assert np.all(np.abs(mean - np.asarray(fit.U)[:, 0]) <= 4 * mcse + 0.2 * sd)
    wald = wald_inference(data, fit.S, fit.beta, 1)
    se = wald.contrast(lambda S_, b_: canonical_decomposition(S_, 1).U[:, 0]).se
    assert np.all((sd / se > 0.75) & (sd / se < 1.33)), sd / se
    assert post.attrs["weak_match_share"] == 0.0 and post.attrs["permutation_share"] == 0.0
    assert 0.0 <= post.attrs["sign_flip_share"] <= 1.0
