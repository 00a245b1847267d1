"""Save / load: the round trip is exact and the format is checked."""

import dataclasses
import hashlib
import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

import hja_bayes as hb
from hja_bayes.bayes.convert import import_arviz
from hja_bayes.persistence import FORMAT_VERSION

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


def _meta_checksum(meta):
    """fit.json's self-checksum, recomputed here from its documented definition."""
    import hashlib

    body = {k: v for k, v in meta.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


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
                 "dropped_judges", "categories", "feature_names"):
        assert getattr(a.data, name) == getattr(b.data, name), name
    for name in ("coef", "coef_free", "theta"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.outcome, a.terms, a.coef_names, a.theta_names) == \
        (b.outcome, b.terms, b.coef_names, b.theta_names)
    if a.rank_table is None:
        assert b.rank_table is None
    else:
        pd.testing.assert_frame_equal(a.rank_table, b.rank_table)


def test_round_trip_is_exact(fit, tmp_path):
    assert fit.rank_table is not None
    folder = fit.save(tmp_path / "fit")
    # no temporary file is left behind (the lock file is hidden and empty)
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "arrays.npz", "fit.json"]
    assert [p.name for p in folder.iterdir() if p.name.startswith(".")] == [".hja_bayes.lock"]
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
    meta["sha256"] = _meta_checksum(meta)
    (tmp_path / "fit.json").write_text(json.dumps(meta))
    with pytest.raises(hb.DataError, match="format version"):
        hb.load_fit(tmp_path)
    meta["format"] = "something else"
    (tmp_path / "fit.json").write_text(json.dumps(meta))
    with pytest.raises(hb.DataError, match="not a saved hja_bayes fit"):
        hb.load_fit(tmp_path)
    with pytest.raises(FileExistsError):
        hb.save_fit(fit, tmp_path, overwrite=False)
    # a version-3 file without its outcome model had loaded as "half", whatever it was
    fit.save(tmp_path / "no_outcome")
    meta = json.loads((tmp_path / "no_outcome" / "fit.json").read_text())
    del meta["outcome"]
    meta["sha256"] = _meta_checksum(meta)
    (tmp_path / "no_outcome" / "fit.json").write_text(json.dumps(meta))
    with pytest.raises(hb.DataError, match="damaged fit.*outcome"):
        hb.load_fit(tmp_path / "no_outcome")


def test_posterior_round_trip(fit, tmp_path):
    az = import_arviz()
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
    with pytest.warns(hb.DataWarning, match="held a posterior of the fit this one replaces"):
        fit.save(tmp_path)  # saving without a posterior removes the stale one, and says so
    assert hb.load_posterior(tmp_path) is None
    # one copied in by hand is not read, and said so (it had been None, silently)
    idata.to_netcdf(str(tmp_path / "posterior.nc"))
    with pytest.warns(hb.DataWarning, match=r"posterior.nc is not one of the files"):
        assert hb.load_posterior(tmp_path) is None


# ------------------------------------------------------------------ damaged and concurrent
def _edit_json(folder, change, *, rehash=False):
    meta = json.loads((folder / "fit.json").read_text(encoding="utf-8"))
    change(meta)
    if rehash:
        meta["sha256"] = _meta_checksum(meta)
    (folder / "fit.json").write_text(json.dumps(meta), encoding="utf-8")


def _damage_cases():
    def truncate_npz(folder):
        data = (folder / "arrays.npz").read_bytes()
        (folder / "arrays.npz").write_bytes(data[: len(data) // 2])

    def rehashed_truncated_npz(folder):  # a checksum that matches the damaged file
        import hashlib

        truncate_npz(folder)
        digest = hashlib.sha256((folder / "arrays.npz").read_bytes()).hexdigest()
        _edit_json(folder, lambda m: m["checksums"].update({"arrays.npz": digest}), rehash=True)

    def flip_a_byte(folder):
        data = bytearray((folder / "arrays.npz").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (folder / "arrays.npz").write_bytes(bytes(data))

    def edit_a_number(folder):
        _edit_json(folder, lambda m: m.update(nll=m["nll"] + 1.0))

    def delete_an_item(folder):  # edited, checksum recomputed: the shapes no longer fit
        def drop(m):
            m["items"].pop()
            m["data"]["items"].pop()
        _edit_json(folder, drop, rehash=True)

    def delete_a_key(folder):
        _edit_json(folder, lambda m: m.pop("converged"), rehash=True)

    def not_json(folder):
        (folder / "fit.json").write_text('{"format": "hja_bayes.fit", "vers', encoding="utf-8")

    def arrays_missing(folder):
        (folder / "arrays.npz").unlink()

    def arrays_from_another_fit(folder):
        other, _ = hb.simulate(n_judges=3, n_items=5, rank=1, comparisons_per_judge=200, seed=9)
        fit = hb.fit_hja(other, rank=1, position_bias=True)
        fit.save(folder / "other")
        (folder / "other" / "arrays.npz").replace(folder / "arrays.npz")

    def infinite_number(folder):  # not JSON: had been a ValueError from the checksum
        text = (folder / "fit.json").read_text(encoding="utf-8")
        (folder / "fit.json").write_text(text.replace('"tau": ', '"tau": Infinity, "t": ', 1),
                                         encoding="utf-8")

    def data_not_a_record(folder):  # had been an AttributeError
        _edit_json(folder, lambda m: m.update(data=5), rehash=True)

    def unknown_outcome(folder):  # had loaded, to fail at the first interval
        _edit_json(folder, lambda m: m.update(outcome="bogus"), rehash=True)

    return {f.__name__: f for f in (truncate_npz, rehashed_truncated_npz, flip_a_byte,
                                     edit_a_number, delete_an_item, delete_a_key, not_json,
                                     arrays_missing, arrays_from_another_fit, infinite_number,
                                     data_not_a_record, unknown_outcome)}


@pytest.mark.parametrize("case", list(_damage_cases()))
def test_every_damaged_folder_is_a_data_error(fit, tmp_path, case):
    folder = fit.save(tmp_path / "fit")
    _damage_cases()[case](folder)
    with pytest.raises(hb.DataError):
        hb.load_fit(folder)


def test_a_version_written_as_true_is_no_version(fit, tmp_path):
    """JSON's true equals 1 in Python: it had read as version 1, every checksum skipped."""
    folder = fit.save(tmp_path / "fit")
    _edit_json(folder, lambda m: m.update(version=True), rehash=True)
    with pytest.raises(hb.DataError, match="has format version True"):
        hb.load_fit(folder)


def test_damaged_fit_in_the_cli_is_one_line_exit_2(fit, tmp_path, capsys):
    from hja_bayes.cli import main

    folder = fit.save(tmp_path / "fit")
    data = (folder / "arrays.npz").read_bytes()
    (folder / "arrays.npz").write_bytes(data[:100])
    assert main(["report", str(folder), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checksum" in err[0] and "Traceback" not in err[0]


def test_damaged_posterior_is_a_data_error(fit, tmp_path):
    az = import_arviz()
    idata = az.from_dict(posterior={"mu": np.zeros((1, 3, len(fit.items)))})
    folder = hb.save_fit(fit, tmp_path, idata=idata)
    (folder / "posterior.nc").write_bytes(b"not netcdf")
    with pytest.raises(hb.DataError, match="checksum"):
        hb.load_posterior(folder)
    (folder / "posterior.nc").unlink()
    with pytest.raises(hb.DataError, match="missing"):
        hb.load_posterior(folder)
    with pytest.raises(hb.ParameterError, match="path is a saved fit's folder, got int"):
        hb.load_posterior(123)  # had been a bare TypeError


def _as_version_2(folder):
    """Rewrite a saved folder in the version 2 layout: counts as n, wins (ties 1/2), ties;
    the outcome model as ``ties``; no terms (position bias from the flag)."""
    with np.load(folder / "arrays.npz", allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    for prefix in ("cells", "clusters"):
        counts = arrays.pop(f"{prefix}.counts", None)
        if counts is not None:
            arrays[f"{prefix}.n"] = counts.sum(1)
            arrays[f"{prefix}.wins"] = counts[:, 0] + counts[:, 1] / 2
            arrays[f"{prefix}.ties"] = counts[:, 1]
    for name in ("coef", "coef_free", "theta"):
        arrays.pop(name)
    with open(folder / "arrays.npz", "wb") as fh:
        np.savez(fh, **arrays)

    def change(m):
        m.update(version=2, ties=m.pop("outcome"))
        for key in ("terms", "coef_names", "theta_names"):
            m.pop(key)
        for key in ("categories", "feature_names", "feature_transform"):
            m["data"].pop(key)
        m["checksums"]["arrays.npz"] = hashlib.sha256(
            (folder / "arrays.npz").read_bytes()).hexdigest()

    _edit_json(folder, change, rehash=True)


def test_a_fit_with_style_self_preference_and_ordinal_verdicts_round_trips(tmp_path):
    data, truth = hb.simulate(n_judges=3, n_items=4, rank=1, comparisons_per_judge=300,
                              questions=20, outcome="ordinal", style=[0.5, -0.3], n_features=2,
                              self_preference=0.4, position_bias=0.2, seed=1)
    fit = hb.fit_hja(data, rank=0, position_bias=True, outcome="ordinal", style="shared",
                     self_preference=truth.owners)
    loaded = hb.load_fit(fit.save(tmp_path))
    assert_same_fit(fit, loaded)
    assert np.array_equal(loaded.data.clusters.features, data.clusters.features)
    pd.testing.assert_frame_equal(loaded.intervals(), fit.intervals())


def test_version_2_folders_still_load(fit, tmp_path):
    folder = fit.save(tmp_path)
    _as_version_2(folder)
    assert_same_fit(fit, hb.load_fit(folder))


def test_version_1_folders_still_load(fit, tmp_path):
    folder = fit.save(tmp_path)
    _as_version_2(folder)
    _edit_json(folder, lambda m: (m.update(version=1), m.pop("checksums"), m.pop("sha256")))
    assert_same_fit(fit, hb.load_fit(folder))
    _edit_json(folder, lambda m: m["items"].pop())  # no checksums there: the shapes catch it
    with pytest.raises(hb.DataError, match="shape"):
        hb.load_fit(folder)


def test_concurrent_saves_to_one_folder_leave_one_whole_fit(fit, tmp_path):
    """Threads saving two different fits to one folder at once: no error, no temporary file
    left, and the folder loads as one of the two fits, whole (checksums would catch a mix)."""
    from concurrent.futures import ThreadPoolExecutor

    other = dataclasses.replace(fit, mu=fit.mu + 1.0, nll=fit.nll + 1.0, rank_table=None)
    folder = tmp_path / "shared"

    def save_often(f):
        for _ in range(15):
            f.save(folder)

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(save_often, f) for f in (fit, other, fit, other)]:
            future.result()
    loaded = hb.load_fit(folder)
    assert_same_fit(fit if loaded.rank_table is not None else other, loaded)
    assert sorted(p.name for p in folder.iterdir()) == [".hja_bayes.lock", "arrays.npz",
                                                         "fit.json"]

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


def test_saved_files_take_the_umask_like_any_new_file(fit, tmp_path):
    # the files are written under temporary names and renamed; mkstemp had left them
    # readable by their owner only (0600), whatever the umask
    previous = os.umask(0o022)
    try:
        fit.save(tmp_path / "shared")
    finally:
        os.umask(previous)
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in (tmp_path / "shared").iterdir()
             if not f.name.startswith(".")}
    assert modes and set(modes.values()) == {0o644}, modes
