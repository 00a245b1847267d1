"""Save and load fitted models without pickle: atomic writes, checksums, clear errors.

A saved fit is a folder::

    FIT_DIR/
      fit.json        format name and version, scalars, names, the data's bookkeeping,
                      SHA-256 checksums of the other files and of itself
      arrays.npz      every array: the estimates and the comparison cells
      posterior.nc    optional: an ArviZ InferenceData (NetCDF, h5netcdf engine)

``fit.json`` holds ``"format": "hja_bayes.fit"`` and ``"version": 3``.  Its keys:

* ``rank``, ``position_bias``, ``nll``, ``bic``, ``n_iter``, ``converged``, ``tau``,
  ``ridge``, ``outcome`` -- the scalar fields of :class:`~hja_bayes.hja.HJAFit` (version 2
  files name the outcome model ``ties``, older ones not at all: then "half");
* ``terms``, ``coef_names``, ``theta_names`` -- the linear-predictor terms (as
  :func:`~hja_bayes.likelihood.terms.term_record` writes them) and the names of their
  coefficients;
* ``judges``, ``items`` -- names in index order;
* ``data`` -- ``categories``, ``feature_names``, ``feature_transform``, ``order_known``,
  ``rows_read``, ``rows_used``, ``rejected``,
  ``dropped_judges``, ``rejected_by_judge``, ``clusters`` (cluster names, or null) and
  ``cluster_column`` (the column they were read from, or null; absent from files written
  before it was recorded, which load with None) of the fitted
  :class:`~hja_bayes.comparisons.Comparisons`;
* ``clustering`` -- for the record, what a cluster-robust interval of this fit rests on
  (:attr:`~hja_bayes.hja.HJAFit.clustering`: column, number of clusters, effective number,
  small-sample correction), or null without clusters; not read back (it follows from the
  data);
* ``rank_table_columns`` -- column order of the rank-selection table (or null);
* ``package_version`` -- the hja_bayes version that wrote the file (information only);
* ``checksums`` -- ``{"arrays.npz": sha256, "posterior.nc": sha256 or null}``;
* ``sha256`` -- the checksum of the file's own content (the canonical JSON of every other
  key), so an edited number is caught.

``arrays.npz`` (read with ``allow_pickle=False``) holds ``gamma, mu, U, V, D, S, beta``,
``coef, coef_free, theta`` (the terms' coefficients),
``aux`` (the outcome model's per-judge parameters, e.g. Davidson's nu; only when it has any),
the cells ``cells.judge, cells.first, cells.second, cells.counts`` (cells x categories), the
cluster incidence ``clusters.cluster, clusters.cell, clusters.counts`` and, with style
features, ``clusters.features`` (when the data carry clusters; their names are in
``data.clusters``) and
one array ``rank_table.<column>`` per column of the rank table.  Floats in JSON are written
with Python's shortest round-trip representation and arrays keep their dtype, so loading
gives back exactly the saved values.

Writing is atomic and safe under concurrency: every file is first written under a unique
temporary name in the folder and then renamed over its final name, all while holding an
exclusive lock on ``FIT_DIR/.hja_bayes.lock`` (where the platform has ``fcntl``), so two
processes saving to one folder leave one complete fit, never one's JSON beside the other's
arrays.  Loading checks every checksum, name and shape: a truncated, edited or mixed folder
is a :class:`~hja_bayes.errors.DataError`, never a traceback or a silently different fit.
Folders written by versions 1 (no checksums) and 2 (counts as n, wins, ties) still load,
with the shape checks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .categories import THREE
from .comparisons import ClusterCounts, Comparisons
from .errors import DataError, DataWarning, ParameterError, warn
from .fit_folder import (
    ARRAYS,
    FIT_JSON,
    FORMAT,
    FORMAT_VERSION,
    POSTERIOR,
    check_file,
    json_float,
    locked,
    read_meta,
    sha256_file,
    sha256_meta,
    temporary,
)
from .hja.result import HJAFit
from .likelihood import outcome_model
from .likelihood.terms import term_from_record, term_record, terms_of
from .version import __version__

__all__ = ["FORMAT", "FORMAT_VERSION", "load_fit", "load_posterior", "save_fit"]

ESTIMATES = ("gamma", "mu", "U", "V", "D", "S", "beta")
CELLS = ("judge", "first", "second", "counts")
CLUSTER_ARRAYS = ("cluster", "cell", "counts")
#: Cells and clusters as versions 1 and 2 wrote them (counts as n, wins with ties 1/2, ties).
OLD_CELLS = ("judge", "first", "second", "n", "wins", "ties")
OLD_CLUSTER_ARRAYS = ("cluster", "cell", "n", "wins", "ties")


def save_fit(fit, path: str | os.PathLike, idata=None, *, overwrite: bool = True) -> Path:
    """Write a fitted model (and optionally its posterior) to the folder ``path``.

    Parameters
    ----------
    fit : HJAFit
        The fitted model; its comparison cells are saved too, so intervals can be
        recomputed after loading.
    path : str or PathLike
        Folder to write (created if needed).
    idata : arviz.InferenceData, optional
        Posterior draws to save beside the fit as ``posterior.nc``.
    overwrite : bool
        If false, refuse to write into a folder that already holds a saved fit.

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    FileExistsError
        When ``overwrite`` is false and ``path`` already holds ``fit.json``.
    NotADirectoryError
        When ``path`` exists and is a file.
    ParameterError
        When ``idata``, a posterior of :func:`~hja_bayes.sample_hja`, is not of this fit's
        model and data.
    """
    if not isinstance(fit, HJAFit):
        raise ParameterError(f"save_fit saves an HJAFit, got {type(fit).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"path is a folder's path, got {type(path).__name__}")
    if idata is not None and not hasattr(idata, "to_netcdf"):
        raise ParameterError(f"idata must be an arviz.InferenceData, got {type(idata).__name__}")
    if idata is not None and "rank" in getattr(getattr(idata, "posterior", None), "attrs", {}):
        from .bayes.compare import check_posterior

        check_posterior(idata, fit)  # sample_hja's draws: of this fit's model and data
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} exists and is not a folder")

    data: Comparisons = fit.data
    table = fit.rank_table
    meta: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "package_version": __version__,
        "rank": int(fit.rank),
        "position_bias": bool(fit.position_bias),
        "nll": json_float(fit.nll),
        "bic": json_float(fit.bic),
        "n_iter": int(fit.n_iter),
        "converged": bool(fit.converged),
        "tau": json_float(fit.tau),
        "ridge": json_float(fit.ridge),
        "outcome": str(fit.outcome),
        "terms": [term_record(t) for t in fit.terms],
        "coef_names": list(fit.coef_names),
        "theta_names": list(fit.theta_names),
        "excluded_judges": {str(k): str(v) for k, v in fit.excluded_judges.items()},
        "judges": list(fit.judges),
        "items": list(fit.items),
        "data": {
            "judges": list(data.judges),
            "items": list(data.items),
            "categories": list(data.categories),
            "feature_names": list(data.feature_names),
            "feature_transform": str(data.feature_transform),
            "order_known": bool(data.order_known),
            "rows_read": int(data.rows_read),
            "rows_used": int(data.rows_used),
            "rejected": {str(k): int(v) for k, v in data.rejected.items()},
            "dropped_judges": list(data.dropped_judges),
            "clusters": None if data.clusters is None else list(data.clusters.names),
            "cluster_column": data.cluster_column,
            "rejected_by_judge": {str(k): int(v) for k, v in data.rejected_by_judge.items()},
        },
        "rank_table_columns": None if table is None else [str(c) for c in table.columns],
        "clustering": fit.clustering,
    }
    arrays = {name: np.asarray(getattr(fit, name)) for name in ESTIMATES}
    arrays.update(coef=np.asarray(fit.coef, dtype=float), coef_free=np.asarray(fit.coef_free),
                  theta=np.asarray(fit.theta, dtype=float))
    if fit.aux is not None:
        arrays["aux"] = np.asarray(fit.aux)
    arrays.update({f"cells.{name}": np.asarray(getattr(data, name)) for name in CELLS})
    if data.clusters is not None:
        arrays.update({f"clusters.{name}": np.asarray(getattr(data.clusters, name))
                       for name in CLUSTER_ARRAYS})
        if data.clusters.features is not None:
            arrays["clusters.features"] = np.asarray(data.clusters.features)
    if table is not None:
        for column in table.columns:
            arrays[f"rank_table.{column}"] = table[column].to_numpy()

    folder.mkdir(parents=True, exist_ok=True)  # only once the fit is known to be savable
    written: list[Path] = []
    try:
        with locked(folder):
            if not overwrite and (folder / FIT_JSON).exists():
                raise FileExistsError(f"{folder} already holds a saved fit")
            tmp_npz = temporary(folder, ARRAYS)
            written.append(tmp_npz)
            with open(tmp_npz, "wb") as fh:
                np.savez_compressed(fh, **arrays)
            checksums = {ARRAYS: sha256_file(tmp_npz), POSTERIOR: None}
            tmp_nc = None
            if idata is not None:
                tmp_nc = temporary(folder, POSTERIOR)
                written.append(tmp_nc)
                idata.to_netcdf(str(tmp_nc))
                checksums[POSTERIOR] = sha256_file(tmp_nc)
            meta["checksums"] = checksums
            meta["sha256"] = sha256_meta(meta)
            tmp_json = temporary(folder, FIT_JSON)
            written.append(tmp_json)
            tmp_json.write_text(json.dumps(meta, indent=2, ensure_ascii=False, allow_nan=False)
                                + "\n", encoding="utf-8")
            # the JSON goes last: until it is replaced, the folder reads as the old fit (or
            # fails its checksum, never loads a mix)
            if tmp_nc is not None:
                os.replace(tmp_nc, folder / POSTERIOR)
            elif (folder / POSTERIOR).exists():
                (folder / POSTERIOR).unlink()  # a stale posterior would not belong to this fit
                warn(f"{folder} held a posterior of the fit this one replaces: removed with "
                     "it (save the new fit elsewhere to keep both)", DataWarning)
            os.replace(tmp_npz, folder / ARRAYS)
            os.replace(tmp_json, folder / FIT_JSON)
    finally:
        for tmp in written:
            if tmp.exists():
                tmp.unlink()
    return folder


def _checked_shapes(arrays: dict, meta: dict, file: Path) -> None:
    """Every array has the shape the names in fit.json imply."""
    K, N, r = len(meta["judges"]), len(meta["items"]), int(meta["rank"])
    expected = {"gamma": (K,), "mu": (N,), "U": (K, r), "V": (N, r), "D": (r,), "S": (K, N),
                "beta": (K,)}
    for name, shape in expected.items():
        if arrays[name].shape != shape:
            raise DataError(f"{file}: {name} has shape {arrays[name].shape}, but {FIT_JSON} "
                            f"names {K} judges, {N} items and rank {r}, so {shape}")
    m = len(arrays["cells.judge"])
    if any(len(arrays[f"cells.{c}"]) != m for c in _cell_names(meta)):
        raise DataError(f"{file}: the cell arrays differ in length")


def _cell_names(meta: dict) -> tuple:
    return CELLS if meta["version"] >= 3 else OLD_CELLS


def _three(n, wins, ties) -> np.ndarray:
    """Counts (first, tie, second) from version 2's n, wins (ties 1/2) and ties."""
    return np.column_stack([wins - ties / 2, ties, n - wins - ties / 2])


def load_fit(path: str | os.PathLike):
    """Read a fit written by :func:`save_fit` (or ``HJAFit.save``).

    Parameters
    ----------
    path : str or PathLike
        The folder.

    Returns
    -------
    HJAFit
        Equal, field by field and bit for bit, to the saved fit.

    Raises
    ------
    DataError
        When the folder holds no fit, another format or an unknown format version, or
        when a file is missing, truncated, edited (checksums) or inconsistent with the
        others (names, shapes, cells).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"path is a saved fit's folder, got {type(path).__name__}")
    folder = Path(path)
    meta = read_meta(folder)
    npz_file = check_file(folder, ARRAYS, meta)
    try:
        with open(npz_file, "rb") as fh, np.load(fh, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except Exception as exc:  # BadZipFile, OSError, ValueError, EOFError ...
        raise DataError(f"cannot read {npz_file}: {type(exc).__name__}: {exc}") from None
    missing = [n for n in (*ESTIMATES, *(f"cells.{c}" for c in _cell_names(meta)))
               if n not in arrays]
    if missing:
        raise DataError(f"{npz_file} lacks the arrays {missing}")
    try:
        _checked_shapes(arrays, meta, npz_file)
        d = meta["data"]
        new = meta["version"] >= 3
        clusters = None
        if d.get("clusters") is not None:
            names = CLUSTER_ARRAYS if new else OLD_CLUSTER_ARRAYS
            lacking = [f"clusters.{c}" for c in names if f"clusters.{c}" not in arrays]
            if lacking:
                raise DataError(f"{npz_file} lacks the cluster arrays {lacking}")
            c = {name: arrays[f"clusters.{name}"] for name in names}
            counts = c["counts"] if new else _three(c["n"], c["wins"], c["ties"])
            clusters = ClusterCounts(tuple(d["clusters"]), c["cluster"], c["cell"], counts,
                                     arrays.get("clusters.features"))
        cells = {name: arrays[f"cells.{name}"] for name in _cell_names(meta)}
        counts = cells["counts"] if new else _three(cells["n"], cells["wins"], cells["ties"])
        data = Comparisons(
            judges=tuple(d["judges"]), items=tuple(d["items"]),
            judge=cells["judge"], first=cells["first"], second=cells["second"], counts=counts,
            categories=tuple(d.get("categories", THREE)),
            feature_names=tuple(d.get("feature_names", ())),
            feature_transform=str(d.get("feature_transform", "")),
            order_known=bool(d["order_known"]), rows_read=int(d["rows_read"]),
            rows_used=int(d["rows_used"]), rejected=dict(d["rejected"]),
            dropped_judges=tuple(d["dropped_judges"]), clusters=clusters,
            rejected_by_judge=dict(d.get("rejected_by_judge", {})),
            cluster_column=d.get("cluster_column"),
        )
        if tuple(meta["judges"]) != data.judges or tuple(meta["items"]) != data.items:
            raise DataError("the fit's judge or item names differ from its data's")
        columns = meta.get("rank_table_columns")
        table = None
        if columns is not None:
            table = pd.DataFrame({c: arrays[f"rank_table.{c}"] for c in columns})
        position_bias = bool(meta["position_bias"])
        # version 3 always writes it: a missing one is damage, not "half"; an unknown one too
        outcome = str(meta["outcome"] if new else meta.get("ties", "half"))
        outcome_model(outcome, data.categories)
        if new:
            terms = tuple(term_from_record(t) for t in meta["terms"])
            coef = dict(coef=arrays["coef"], coef_free=arrays["coef_free"].astype(bool),
                        coef_names=tuple(meta["coef_names"]), theta=arrays["theta"],
                        theta_names=tuple(meta["theta_names"]))
        else:
            terms, coef = terms_of(position_bias), {}
        return HJAFit(
            **{name: arrays[name] for name in ESTIMATES},
            rank=int(meta["rank"]), position_bias=position_bias,
            nll=float(meta["nll"]), bic=float(meta["bic"]), n_iter=int(meta["n_iter"]),
            converged=bool(meta["converged"]), judges=tuple(meta["judges"]),
            items=tuple(meta["items"]), data=data, tau=float(meta["tau"]),
            ridge=float(meta["ridge"]), rank_table=table,
            outcome=outcome,
            aux=arrays.get("aux"), excluded_judges=dict(meta.get("excluded_judges", {})),
            terms=terms, **coef,
        )
    except DataError as exc:
        raise DataError(f"{folder} holds a damaged fit: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ParameterError) as exc:
        raise DataError(f"{folder} holds a damaged fit ({type(exc).__name__}: {exc})") from None


def load_posterior(path: str | os.PathLike):
    """The InferenceData saved beside a fit, or None when there is none.

    Parameters
    ----------
    path : str or PathLike
        A folder written by :func:`save_fit`.

    Returns
    -------
    arviz.InferenceData or None

    Raises
    ------
    DataError
        When ``posterior.nc`` is missing though fit.json lists it, or fails its checksum,
        or cannot be read.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"path is a saved fit's folder, got {type(path).__name__}")
    folder = Path(path)
    meta = read_meta(folder)
    listed = (meta.get("checksums") or {}).get(POSTERIOR)
    file = folder / POSTERIOR
    if meta["version"] >= 2:
        if listed is None:
            if file.exists():
                warn(f"{file} is not one of the files {folder / 'fit.json'} lists (saved "
                     "beside the fit by another route?): not read; save a posterior with "
                     "save_fit(fit, folder, idata=...) or hja-bayes fit --bayes",
                     DataWarning)
            return None
    elif not file.exists():
        return None
    check_file(folder, POSTERIOR, meta)
    from .bayes.convert import import_arviz

    az = import_arviz()
    try:
        return az.from_netcdf(str(file))
    except Exception as exc:  # OSError, ValueError from h5netcdf/xarray
        raise DataError(f"cannot read {file}: {type(exc).__name__}: {exc}") from None
