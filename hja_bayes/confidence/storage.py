"""Saving a trained confidence ranker (and its certificate) without pickle.

A saved ranker is a folder with ``ranker.json`` (format version, constructor settings,
fitted scalars, the certificate, anything the caller adds under ``extra``) and
``weights.npz`` (every array; read back with ``allow_pickle=False``).  Loading rebuilds the
estimator so that it predicts exactly what it predicted before saving.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import DataError
from .inputs import InputTransform
from .selective import Certificate

__all__ = ["FORMAT_VERSION", "read_ranker", "save_ranker"]

#: Version of the on-disk layout.
FORMAT_VERSION = 1
_JSON, _ARRAYS = "ranker.json", "weights.npz"


def _plain(value):
    """JSON-safe copy: tuples to lists, numpy scalars to Python numbers."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def save_ranker(ranker, path, *, extra: dict | None = None) -> Path:
    """Write a fitted :class:`~hja_bayes.confidence.ConfidenceRanker` to the folder ``path``.

    Parameters
    ----------
    ranker : ConfidenceRanker
        A fitted ranker (with ``certificate_`` if :meth:`certify` was called).
    path : path
        Folder (created if needed; files in it are overwritten).
    extra : dict, optional
        JSON-serialisable information stored alongside (e.g. how features were built).

    Returns
    -------
    Path
        The folder.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(ranker)
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {f"loc__{k}": np.asarray(v) for k, v in ranker.params_.items()}
    if ranker.posterior_scale_ is not None:
        arrays.update({f"scale__{k}": np.asarray(v) for k, v in ranker.posterior_scale_.items()})
    arrays.update(knots=ranker.transform_.knots, levels=ranker.transform_.levels,
                  history=ranker.history_, margin_history=ranker.margin_history_)
    classes = ranker.classes_
    cert = getattr(ranker, "certificate_", None)
    meta = {
        "format_version": FORMAT_VERSION,
        "kind": "hja_bayes.confidence.ConfidenceRanker",
        "params": _plain(ranker.get_params()),
        "classes": _plain(list(classes)),
        "classes_dtype": classes.dtype.str,
        "n_features_in": int(ranker.n_features_in_),
        "feature_names_in": _plain(list(getattr(ranker, "feature_names_in_", []))) or None,
        "transform": ranker.transform_.kind,
        "prior_scale": float(ranker.prior_scale_),
        "calibration": list(ranker.calibration_),
        "margin": float(ranker.margin_),
        "n_effective": int(ranker.n_effective_),
        "certificate": None if cert is None else _plain(cert._asdict()),
        "extra": _plain(extra or {}),
    }
    (folder / _JSON).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    with open(folder / _ARRAYS, "wb") as fh:
        np.savez(fh, **arrays)
    return folder


def read_ranker(path, make=None) -> tuple[dict, dict]:
    """Read what :func:`save_ranker` wrote: the ranker's constructor parameters and its
    fitted attributes (build the ranker with
    :func:`hja_bayes.confidence.load_ranker`, which calls this).

    Parameters
    ----------
    path : path
        The folder.
    make : callable, optional
        The ranker's constructor: called with the parameters read, so that an unknown or
        bad one is said as damage here rather than failing later.

    Returns
    -------
    params : dict
        Keyword arguments of the ranker's constructor.
    fitted : dict
        Attribute name -> value of the fitted ranker (``certificate_`` when one was saved,
        ``saved_extra_`` holding the ``extra`` dict).

    Raises
    ------
    DataError
        When the folder holds no saved ranker, one of an unknown format version, or a
        damaged one (a truncated or edited file).
    """
    folder = Path(path)
    if not (folder / _JSON).exists() or not (folder / _ARRAYS).exists():
        raise DataError(f"no saved confidence ranker in {folder} (expected {_JSON} and {_ARRAYS})")
    try:
        return _read(folder, make)
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - a truncated or edited file, said as such
        raise DataError(f"{folder} holds a damaged confidence ranker ({type(exc).__name__}: "
                        f"{exc}); train it again ('hja-bayes confidence train')") from None


def _read(folder: Path, make=None) -> tuple[dict, dict]:
    meta = json.loads((folder / _JSON).read_text(encoding="utf-8"))
    if meta.get("format_version") != FORMAT_VERSION:
        raise DataError(f"{folder}: unknown format version {meta.get('format_version')!r}")
    params = dict(meta["params"])
    params["hidden"] = tuple(params["hidden"])
    # opened here, so a damaged file is closed too (np.load leaves it open when it fails)
    with open(folder / _ARRAYS, "rb") as fh, np.load(fh, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    scales = {k[7:]: v for k, v in arrays.items() if k.startswith("scale__")}
    fitted = {
        "params_": {k[5:]: v for k, v in arrays.items() if k.startswith("loc__")},
        "posterior_scale_": scales or None,
        "transform_": InputTransform(meta["transform"], arrays["knots"], arrays["levels"]),
        "classes_": np.asarray(meta["classes"], dtype=np.dtype(meta["classes_dtype"])),
        "n_features_in_": int(meta["n_features_in"]),
        "prior_scale_": float(meta["prior_scale"]),
        "calibration_": tuple(meta["calibration"]),
        "margin_": float(meta["margin"]),
        "n_effective_": int(meta["n_effective"]),
        "history_": arrays["history"],
        "margin_history_": arrays["margin_history"],
        "saved_extra_": meta.get("extra", {}),
    }
    if meta.get("feature_names_in"):
        fitted["feature_names_in_"] = np.asarray(meta["feature_names_in"], dtype=object)
    if meta.get("certificate") is not None:
        fitted["certificate_"] = Certificate(**meta["certificate"])
    if make is not None:
        make(**params)  # unknown or bad settings: its own error
    _check_loaded(params, fitted)
    return params, fitted


def _check_loaded(params: dict, fitted: dict) -> None:
    """What a save writes, checked on what was read: an edited value that still parses
    would otherwise fail later, or not at all (an alpha of 2 printed as a guarantee).
    ValueError (said by :func:`read_ranker` as a damaged ranker) where it does not hold."""
    from .inputs import TRANSFORMS
    d, hidden = fitted["n_features_in_"], tuple(params["hidden"])
    widths = (d, *hidden, 1)
    weights = fitted["params_"]
    if set(weights) != {f"{k}{i}" for i in range(len(widths) - 1) for k in "Wb"}:
        raise ValueError(f"the weights {sorted(weights)} are not those of a network of layers "
                        f"{widths}")
    for i in range(len(widths) - 1):
        if (weights[f"W{i}"].shape != widths[i:i + 2]
                or weights[f"b{i}"].shape != (widths[i + 1],)):
            raise ValueError(f"layer {i}'s weights do not map {widths[i]} to {widths[i + 1]}")
    for name, scale in (fitted["posterior_scale_"] or {}).items():
        if name not in weights or np.shape(scale) != weights[name].shape or not np.all(scale > 0):
            raise ValueError(f"the posterior scale of {name} is not positive weights' shape")
    t = fitted["transform_"]
    if t.kind not in TRANSFORMS or (t.kind != "none" and (
            t.knots.ndim != 2 or t.knots.shape[1] != d
            or t.knots.shape[0] != (2 if t.kind == "standardize" else len(t.levels)))):
        raise ValueError(f"the input transform ({t.kind!r}, knots {t.knots.shape}) does not fit "
                        f"{d} features")
    if len(fitted["classes_"]) != 2:
        raise ValueError(f"a ranker has two classes, this one {len(fitted['classes_'])}")
    c = fitted.get("certificate_")
    if c is not None and not (
            (c.threshold is None or np.isfinite(float(c.threshold)))
            and 0 < float(c.alpha) < 1 and 0 < float(c.delta) < 1):
        raise ValueError(f"the certificate's threshold {c.threshold!r}, alpha {c.alpha!r} or "
                        f"delta {c.delta!r} is not a number, or alpha and delta not in (0, 1)")
