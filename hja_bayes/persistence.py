"""Save and load fitted models without pickle.

A saved fit is a folder::

    FIT_DIR/
      fit.json        format name and version, scalars, names, the data's bookkeeping
      arrays.npz      every array: the estimates and the comparison cells
      posterior.nc    optional: an ArviZ InferenceData (NetCDF, h5netcdf engine)

``fit.json`` holds ``"format": "hja_bayes.fit"`` and ``"version": 1``.  Its keys:

* ``rank``, ``position_bias``, ``nll``, ``bic``, ``n_iter``, ``converged``, ``tau``,
  ``ridge``, ``ties`` -- the scalar fields of :class:`~hja_bayes.hja.HJAFit` (``ties``, the
  outcome model, may be absent in older files: then "half");
* ``judges``, ``items`` -- names in index order;
* ``data`` -- ``order_known``, ``rows_read``, ``rows_used``, ``rejected``,
  ``dropped_judges`` of the fitted :class:`~hja_bayes.comparisons.Comparisons`;
* ``rank_table_columns`` -- column order of the rank-selection table (or null);
* ``package_version`` -- the hja_bayes version that wrote the file (information only).

``arrays.npz`` (read with ``allow_pickle=False``) holds ``gamma, mu, U, V, D, S, beta``,
``aux`` (the outcome model's per-judge parameters, e.g. Davidson's nu; only when it has any),
the cells ``cells.judge, cells.first, cells.second, cells.n, cells.wins, cells.ties``, the
cluster incidence ``clusters.cluster, clusters.cell, clusters.n, clusters.wins, clusters.ties``
(when the data carry clusters; their names are in ``data.clusters``) and
one array ``rank_table.<column>`` per column of the rank table.  Floats in JSON are written
with Python's shortest round-trip representation and arrays keep their dtype, so loading
gives back exactly the saved values.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .comparisons import ClusterCounts, Comparisons
from .errors import DataError
from .hja.result import HJAFit
from .version import __version__

__all__ = ["FORMAT", "FORMAT_VERSION", "load_fit", "load_posterior", "save_fit"]

#: Value of the ``"format"`` key of ``fit.json``.
FORMAT = "hja_bayes.fit"
#: Version of the on-disk format written by :func:`save_fit`.
FORMAT_VERSION = 1

_FIT_JSON = "fit.json"
_ARRAYS = "arrays.npz"
_POSTERIOR = "posterior.nc"
_ESTIMATES = ("gamma", "mu", "U", "V", "D", "S", "beta")
_CELLS = ("judge", "first", "second", "n", "wins", "ties")
_CLUSTER_ARRAYS = ("cluster", "cell", "n", "wins", "ties")


def _import_arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ 0.x announces its 1.0 refactor
        import arviz

    return arviz


def _float(x: float) -> float | str:
    """JSON has no inf/nan: store them as strings, everything else as a float."""
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def _unfloat(x: float | str) -> float:
    return float(x)


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
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} exists and is not a folder")
    if not overwrite and (folder / _FIT_JSON).exists():
        raise FileExistsError(f"{folder} already holds a saved fit")
    folder.mkdir(parents=True, exist_ok=True)

    data: Comparisons = fit.data
    table = fit.rank_table
    meta: dict[str, Any] = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "package_version": __version__,
        "rank": int(fit.rank),
        "position_bias": bool(fit.position_bias),
        "nll": _float(fit.nll),
        "bic": _float(fit.bic),
        "n_iter": int(fit.n_iter),
        "converged": bool(fit.converged),
        "tau": _float(fit.tau),
        "ridge": _float(fit.ridge),
        "ties": str(fit.ties),
        "judges": list(fit.judges),
        "items": list(fit.items),
        "data": {
            "judges": list(data.judges),
            "items": list(data.items),
            "order_known": bool(data.order_known),
            "rows_read": int(data.rows_read),
            "rows_used": int(data.rows_used),
            "rejected": {str(k): int(v) for k, v in data.rejected.items()},
            "dropped_judges": list(data.dropped_judges),
            "clusters": None if data.clusters is None else list(data.clusters.names),
        },
        "rank_table_columns": None if table is None else [str(c) for c in table.columns],
    }
    arrays = {name: np.asarray(getattr(fit, name)) for name in _ESTIMATES}
    if fit.aux is not None:
        arrays["aux"] = np.asarray(fit.aux)
    arrays.update({f"cells.{name}": np.asarray(getattr(data, name)) for name in _CELLS})
    if data.clusters is not None:
        arrays.update({f"clusters.{name}": np.asarray(getattr(data.clusters, name))
                       for name in _CLUSTER_ARRAYS})
    if table is not None:
        for column in table.columns:
            arrays[f"rank_table.{column}"] = table[column].to_numpy()
    # write to temporary names, then rename, so a crash never leaves half a fit behind
    tmp_json, tmp_npz = folder / (_FIT_JSON + ".tmp"), folder / ("tmp." + _ARRAYS)
    tmp_json.write_text(json.dumps(meta, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                        encoding="utf-8")
    np.savez_compressed(tmp_npz, **arrays)
    os.replace(tmp_npz, folder / _ARRAYS)
    os.replace(tmp_json, folder / _FIT_JSON)
    posterior = folder / _POSTERIOR
    if idata is not None:
        idata.to_netcdf(str(posterior))
    elif posterior.exists():
        posterior.unlink()  # a stale posterior would not belong to this fit
    return folder


def _read_meta(folder: Path) -> dict:
    file = folder / _FIT_JSON
    if not file.exists():
        raise DataError(f"{folder} holds no saved fit (no {_FIT_JSON})")
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{file} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DataError(f"{file} is not a saved hja_bayes fit (format {meta.get('format')!r})"
                        if isinstance(meta, dict) else f"{file} is not a saved hja_bayes fit")
    version = meta.get("version")
    if version != FORMAT_VERSION:
        raise DataError(
            f"{file} has format version {version!r}; this hja_bayes reads version {FORMAT_VERSION}"
        )
    return meta


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
        When the folder holds no fit, another format, or an unknown format version.
    """

    folder = Path(path)
    meta = _read_meta(folder)
    try:
        with np.load(folder / _ARRAYS, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {folder / _ARRAYS}: {exc}") from None
    missing = [n for n in (*_ESTIMATES, *(f"cells.{c}" for c in _CELLS)) if n not in arrays]
    if missing:
        raise DataError(f"{folder / _ARRAYS} lacks the arrays {missing}")
    d = meta["data"]
    clusters = None
    if d.get("clusters") is not None:
        try:
            clusters = ClusterCounts(tuple(d["clusters"]),
                                     *(arrays[f"clusters.{name}"] for name in _CLUSTER_ARRAYS))
        except KeyError as exc:
            raise DataError(f"{folder / _ARRAYS} lacks the cluster array {exc}") from None
    data = Comparisons(
        judges=tuple(d["judges"]), items=tuple(d["items"]),
        **{name: arrays[f"cells.{name}"] for name in _CELLS},
        order_known=bool(d["order_known"]), rows_read=int(d["rows_read"]),
        rows_used=int(d["rows_used"]), rejected=dict(d["rejected"]),
        dropped_judges=tuple(d["dropped_judges"]), clusters=clusters,
    )
    columns = meta.get("rank_table_columns")
    table = None
    if columns is not None:
        table = pd.DataFrame({c: arrays[f"rank_table.{c}"] for c in columns})
    return HJAFit(
        **{name: arrays[name] for name in _ESTIMATES},
        rank=int(meta["rank"]), position_bias=bool(meta["position_bias"]),
        nll=_unfloat(meta["nll"]), bic=_unfloat(meta["bic"]), n_iter=int(meta["n_iter"]),
        converged=bool(meta["converged"]), judges=tuple(meta["judges"]),
        items=tuple(meta["items"]), data=data, tau=_unfloat(meta["tau"]),
        ridge=_unfloat(meta["ridge"]), rank_table=table, ties=str(meta.get("ties", "half")),
        aux=arrays.get("aux"),
    )


def load_posterior(path: str | os.PathLike):
    """The InferenceData saved beside a fit, or None when there is none.

    Parameters
    ----------
    path : str or PathLike
        A folder written by :func:`save_fit`.

    Returns
    -------
    arviz.InferenceData or None
    """
    folder = Path(path)
    _read_meta(folder)
    file = folder / _POSTERIOR
    if not file.exists():
        return None
    az = _import_arviz()
    return az.from_netcdf(str(file))
