"""Save / load: the round trip is exact and the format is checked."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.persistence import FORMAT_VERSION, _import_arviz

FIELDS = ("gamma", "mu", "U", "V", "D", "S", "beta")
SCALARS = ("rank", "position_bias", "nll", "bic", "n_iter", "converged", "judges", "items",
           "tau", "ridge")
CELLS = ("judge", "first", "second", "n", "wins", "ties")


@pytest.fixture(scope="module")
def fit():
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=500,
                          position_bias=0.3, tie_prob=0.1, seed=4)
    frame = data.to_frame()  # names with quotes, markup and non-ASCII letters
    frame["judge"] = frame["judge"].replace({data.judges[0]: 'jüdge "1"'})
    for column in ("model_a", "model_b"):
        frame[column] = frame[column].replace({data.items[0]: "a<b>", data.items[1]: "ß, c"})
    fit = hb.fit_hja(hb.Comparisons.from_counts(frame), rank=1, position_bias=True)
    # a rank table of every column type, NaN included (its values are not checked here)
    table = pd.DataFrame({"rank": np.arange(2), "nll": [10.5, 9.25], "cv_nll": [np.nan, 1.0],
                          "converged": [True, False]})
    return dataclasses.replace(fit, rank_table=table)


def assert_same_fit(a, b):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x, y), name  # bit for bit
    for name in SCALARS:
        assert getattr(a, name) == getattr(b, name), name
        assert type(getattr(a, name)) is type(getattr(b, name)), name
    for name in CELLS:
        assert np.array_equal(getattr(a.data, name), getattr(b.data, name)), name
    for name in ("judges", "items", "order_known", "rows_read", "rows_used", "rejected",
                 "dropped_judges"):
        assert getattr(a.data, name) == getattr(b.data, name), name
    if a.rank_table is None:
        assert b.rank_table is None
    else:
        pd.testing.assert_frame_equal(a.rank_table, b.rank_table)


def test_round_trip_is_exact(fit, tmp_path):
    assert fit.rank_table is not None
    folder = fit.save(tmp_path / "fit")
    assert sorted(p.name for p in folder.iterdir()) == ["arrays.npz", "fit.json"]
    loaded = hb.load_fit(folder)
    assert_same_fit(fit, loaded)
    meta = json.loads((folder / "fit.json").read_text())
    assert meta["format"] == "hja_bayes.fit" and meta["version"] == FORMAT_VERSION
    # intervals can be recomputed from the loaded fit, and agree
    a, b = hb.leaderboard(fit), hb.leaderboard(loaded)
    pd.testing.assert_frame_equal(a, b)


def test_round_trip_without_rank_table(fit, tmp_path):
    bare = dataclasses.replace(fit, rank_table=None)
    hb.save_fit(bare, tmp_path)
    assert_same_fit(bare, hb.load_fit(tmp_path))


def test_bad_folders_are_clear_errors(fit, tmp_path):
    with pytest.raises(hb.DataError, match="no saved fit"):
        hb.load_fit(tmp_path)
    fit.save(tmp_path)
    meta = json.loads((tmp_path / "fit.json").read_text())
    meta["version"] = FORMAT_VERSION + 1
    (tmp_path / "fit.json").write_text(json.dumps(meta))
    with pytest.raises(hb.DataError, match="format version"):
        hb.load_fit(tmp_path)
    meta["format"] = "something else"
    (tmp_path / "fit.json").write_text(json.dumps(meta))
    with pytest.raises(hb.DataError, match="not a saved hja_bayes fit"):
        hb.load_fit(tmp_path)
    with pytest.raises(FileExistsError):
        hb.save_fit(fit, tmp_path, overwrite=False)


def test_posterior_round_trip(fit, tmp_path):
    az = _import_arviz()
    rng = np.random.default_rng(0)
    idata = az.from_dict(
        posterior={"mu": rng.standard_normal((2, 7, len(fit.items))),
                   "gamma": rng.standard_normal((2, 7, len(fit.judges)))},
        coords={"item": list(fit.items), "judge": list(fit.judges)},
        dims={"mu": ["item"], "gamma": ["judge"]},
    )
    hb.save_fit(fit, tmp_path, idata=idata)
    back = hb.load_posterior(tmp_path)
    for name in ("mu", "gamma"):
        assert np.array_equal(back.posterior[name].values, idata.posterior[name].values)
    assert list(back.posterior["item"].values) == list(fit.items)
    fit.save(tmp_path)  # saving without a posterior removes the stale one
    assert hb.load_posterior(tmp_path) is None


def test_clusters_survive_a_round_trip(tmp_path):
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=200, seed=2,
                          questions=8)
    fit = hb.fit_hja(data, rank=0)
    loaded = hb.load_fit(fit.save(tmp_path / "fit"))
    c, d = fit.data.clusters, loaded.data.clusters
    assert d.names == c.names
    for name in ("cluster", "cell", "n", "wins", "ties"):
        assert np.array_equal(getattr(d, name), getattr(c, name))
    assert loaded.cov_type == "cluster"
    np.testing.assert_array_equal(loaded.intervals()["se"], fit.intervals()["se"])
