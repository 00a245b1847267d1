"""Chain diagnostics over whole arrays against ArviZ's, computed one entry at a time."""

import warnings

import numpy as np
import pytest

from hja_bayes.bayes.mixing import mixing, rank_rhat, rhat_by_chance

az = pytest.importorskip("arviz")
xr = pytest.importorskip("xarray")


def ar1(rng, rho, chains=4, draws=301, entries=40, df=None, shift=0.0):
    """AR(1) chains (t-distributed innovations when ``df``), chain c shifted by c * shift."""
    e = rng.standard_t(df, (chains, draws, entries)) if df else rng.normal(size=(chains, draws,
                                                                                 entries))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0]
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return x + shift * np.arange(chains)[:, None, None]


@pytest.fixture(scope="module")
def draws():
    """Independent, heavy-tailed, sticky and disagreeing chains; an odd draw count; a
    constant entry, one with a NaN draw, one with tied draws."""
    rng = np.random.default_rng(11)
    x = np.concatenate([ar1(rng, 0.0), ar1(rng, 0.5, df=3), ar1(rng, 0.9),
                        ar1(rng, 0.3, shift=0.3)], axis=2)
    x[..., 0] = 1.0
    x[1, 5, 1] = np.nan
    x[..., 2] = np.round(x[..., 2], 1)
    return x


def arviz(x, f, **kw):
    ds = xr.Dataset({"x": (("chain", "draw", "entry"), x)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(f(ds, **kw)["x"])


def test_rank_rhat_is_arviz_rank_rhat(draws):
    expected = arviz(draws, az.rhat)
    got = rank_rhat(draws)
    np.testing.assert_array_equal(mixing(draws).rhat, got)
    assert np.array_equal(np.isnan(got), np.isnan(expected))  # constant and NaN entries
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert np.nanmax(got[120:]) > 1.05 > np.nanmax(got[2:40])  # the shifted chains are caught


@pytest.mark.parametrize("method", ["bulk", "tail"])
def test_ess_agrees_with_arviz(draws, method):
    """Same inputs and autocorrelations; the estimators differ only in ArviZ's treatment of
    the lag where Geyer's sequence is cut: one autocorrelation there, of standard error
    1/sqrt(1,200 split draws) = 0.029, shifts the integrated time by 2.5 se = 0.07 at most
    (at chi-square odds) against at least 1, so ESS differ by under 8%."""
    expected = arviz(draws, az.ess, method=method)
    got = getattr(mixing(draws), f"ess_{method}")
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    chains, n = draws.shape[:2]
    assert got[0] == expected[0] == chains * 2 * (n // 2)  # constant: every split draw
    np.testing.assert_allclose(got[2:], expected[2:], rtol=0.08)


@pytest.mark.parametrize("chains, n", [(1, 100), (2, 50), (4, 1000)])
def test_antithetic_draws_get_arviz_bound_not_a_negative_ess(chains, n):
    """Draws with lag-1 autocorrelation -0.9 (NUTS's antithetic regime, pushed): Geyer's sum
    falls below 1/2 and the plain estimate n / tau is negative or huge (one chain of 100
    answer effects had shown -4,376); ArviZ bounds it at n log10(n)."""
    x = ar1(np.random.default_rng(3), -0.9, chains=chains, draws=n, entries=20)
    got = mixing(x)
    bound = chains * n * np.log10(chains * n)
    for method in ("bulk", "tail"):
        values = getattr(got, f"ess_{method}")
        assert np.all(values > 0) and np.all(values <= bound * (1 + 1e-12))
    np.testing.assert_allclose(got.ess_bulk, arviz(x, az.ess, method="bulk"), rtol=1e-10)


def test_shapes_and_degenerate_input():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 50, 3, 4))
    assert rank_rhat(x).shape == (3, 4)
    assert all(v.shape == (3, 4) for v in mixing(x))
    assert rank_rhat(x[:, :, :0]).shape == (0, 4)
    assert np.isnan(rank_rhat(x[:1])).all()  # one chain: no R-hat, but ESS
    one = mixing(x[:1])
    assert np.isnan(one.rhat).all() and np.isfinite(one.ess_bulk).all()
    assert all(np.isnan(v).all() for v in mixing(x[:, :3]))  # too few draws
    with pytest.raises(ValueError, match="chain, draw"):
        rank_rhat(np.zeros(10))


def test_entries_in_chunks_give_the_same_values(draws, monkeypatch):
    from hja_bayes.bayes import mixing as module

    whole = mixing(draws)
    monkeypatch.setattr(module, "CHUNK", 7)  # 160 entries: 23 chunks, the last of 6
    for a, b in zip(mixing(draws), whole):  # the FFTs' rounding depends on the batch
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(rank_rhat(draws), whole.rhat, rtol=1e-12)


@pytest.mark.parametrize("chains, draws_, rho", [(4, 200, 0.0), (4, 400, 0.5), (2, 1000, 0.7)])
def test_rhat_by_chance_predicts_how_many_agreeing_chains_put_above_the_limit(chains, draws_,
                                                                             rho):
    """Stationary AR(1) chains from one distribution: the count of entries whose rank R-hat
    exceeds 1.01 is the sum of the predicted probabilities, within a fifth of it (the
    approximation: W taken as exact, bulk and folded independent) plus three Poisson sds;
    chains that disagree (each shifted by 0.3 sd) go far beyond it."""
    rng = np.random.default_rng(3)
    x = ar1(rng, rho, chains=chains, draws=draws_, entries=2000) * np.sqrt(1 - rho ** 2)
    observed = int((rank_rhat(x) > 1.01).sum())
    predicted = float(rhat_by_chance(x, 1.01).sum())
    assert predicted > 5
    assert abs(observed - predicted) <= 0.2 * predicted + 3 * np.sqrt(predicted)
    shifted = x + 0.3 * np.arange(chains)[:, None, None]
    assert (rank_rhat(shifted) > 1.01).sum() > 2 * float(rhat_by_chance(shifted, 1.01).sum())
