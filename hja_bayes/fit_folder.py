"""A saved fit's folder on disk: atomic writes under a lock, checksums, and the checks a
folder passes before :mod:`~hja_bayes.persistence` reads it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

from .errors import DataError

__all__ = ["ARRAYS", "FIT_JSON", "FORMAT", "FORMAT_VERSION", "LOCK", "POSTERIOR",
           "READABLE_VERSIONS", "check_file", "json_float", "locked", "read_meta",
           "sha256_file", "sha256_meta", "temporary"]

#: Value of the ``"format"`` key of ``fit.json``.
FORMAT = "hja_bayes.fit"
#: Version of the on-disk format written by :func:`~hja_bayes.persistence.save_fit`.
FORMAT_VERSION = 3
#: Versions :func:`~hja_bayes.persistence.load_fit` reads.
READABLE_VERSIONS = (1, 2, 3)

FIT_JSON = "fit.json"
ARRAYS = "arrays.npz"
POSTERIOR = "posterior.nc"
LOCK = ".hja_bayes.lock"


def json_float(x: float) -> float | str:
    """JSON has no inf/nan: store them as strings, everything else as a float."""
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex (read a MiB at a time)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_meta(meta: dict) -> str:
    """Checksum of fit.json's content: canonical JSON of every key but ``sha256``."""
    body = {k: v for k, v in meta.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, allow_nan=False,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@contextlib.contextmanager
def locked(folder: Path):
    """Hold an exclusive advisory lock on the folder's lock file (no-op without fcntl)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: renames are still atomic
        yield
        return
    with open(folder / LOCK, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def temporary(folder: Path, name: str) -> Path:
    """A fresh, unique file name in ``folder`` for writing ``name`` (the file is created,
    with the permissions any new file gets under the process's umask: ``mkstemp`` makes it
    readable by its owner only, and the saved fit would keep that after the rename)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return Path(tmp)


def read_meta(folder: Path) -> dict:
    """The saved fit's description (its JSON file) in ``folder``; a clear error where
    there is none or it cannot be read."""
    file = folder / FIT_JSON
    if not Path(folder).is_dir():
        what = "is a file, not a folder" if Path(folder).exists() else "no such folder"
        raise DataError(f"{folder}: {what} (a fit is saved in a folder by 'hja-bayes fit --out "
                        "DIR' or fit.save(DIR))")
    if not file.is_file():
        raise DataError(f"{folder} holds no saved fit (no {FIT_JSON})")
    try:  # NaN and Infinity are not JSON: a save never writes them
        meta = json.loads(file.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{file} is damaged: not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DataError(f"{file} is not a saved hja_bayes fit (format {meta.get('format')!r})"
                        if isinstance(meta, dict) else f"{file} is not a saved hja_bayes fit")
    version = meta.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:  # true == 1
        raise DataError(
            f"{file} has format version {version!r}; this hja_bayes reads versions "
            f"{list(READABLE_VERSIONS)}"
        )
    if version >= 2:
        if meta.get("sha256") != sha256_meta(meta):
            raise DataError(f"{file} was edited or damaged: its content does not match its "
                            "checksum (save the fit again)")
    return meta


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def check_file(folder: Path, name: str, meta: dict) -> Path:
    """The file ``name`` of the folder, checked against its checksum in fit.json."""
    file = folder / name
    if not file.is_file():
        raise DataError(f"{folder} is incomplete: {name} is missing")
    expected = (meta.get("checksums") or {}).get(name)
    if meta["version"] >= 2 and sha256_file(file) != expected:
        raise DataError(f"{file} does not match the checksum in {FIT_JSON}: it was truncated, "
                        "edited or written by another save (save the fit again)")
    return file
