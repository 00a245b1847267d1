"""What a scan reads: files (a path, a glob, a list, a partitioned folder) or a table.

:func:`resolve` turns a path-like source into the list of files an engine reads, all of
one format (CSV, TSV, JSON Lines, a JSON array, parquet; gzipped text too), and says
whether the folders are hive-partitioned (``.../judge=gpt4/part-0.parquet``), in which
case the partition values are columns.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import NamedTuple

from ..errors import DataError, DataWarning, warn
from ..sources import FORMATS, file_format

__all__ = ["Files", "read_failure", "resolve"]


class Files(NamedTuple):
    """Files of one format.

    Attributes
    ----------
    paths : tuple of str
        Sorted.
    format : str
        "csv", "tsv", "jsonl", "json" or "parquet".
    hive : bool
        Whether some folder on the way is named ``column=value``.
    """

    paths: tuple
    format: str
    hive: bool

    def describe(self) -> str:
        """The files in a few words, for messages."""
        if len(self.paths) == 1:
            return self.paths[0]
        return f"{len(self.paths)} {self.format} files ({self.paths[0]}, ...)"


def _known(path: str) -> bool:
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes[-1:] == [".gz"]:
        suffixes = suffixes[:-1]
    return bool(suffixes) and suffixes[-1] in FORMATS


def resolve(source) -> Files:
    """The files named by ``source``: a file, a glob (``logs/*.parquet``, ``**`` allowed),
    a folder (every file of a known type below it) or a list of any of these.

    Raises
    ------
    DataError
        Nothing found, an unknown file type, or files of different formats.
    """
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    paths: list[str] = []
    for item in items:
        text = os.fspath(item)
        if any(ch in text for ch in "*?["):
            found = sorted(p for p in glob.glob(text, recursive=True) if os.path.isfile(p))
            if not found:
                raise DataError(f"no file matches {text!r}")
            paths += found
        elif os.path.isdir(text):
            inside = sorted(str(p) for p in Path(text).rglob("*")
                            if p.is_file() and not any(part.startswith((".", "_")) for part in
                                                       p.relative_to(text).parts))
            found = [p for p in inside if _known(p)]
            if any(p.lower().endswith((".csv", ".csv.gz")) for p in found):
                found = [p for p in found if not p.lower().endswith((".txt", ".txt.gz"))]
            if not found:
                raise DataError(f"no CSV, JSON Lines, JSON or parquet file under {text!r}")
            kept = set(found)  # sets: a log may have thousands of parts
            _say_left_out(text, [p for p in inside if p not in kept],
                          "of no type read beside the parts (a README.txt beside .csv parts, "
                          "a .bz2 or a suffixless part): name the files, or give them a "
                          "suffix read (.csv, .tsv, .jsonl, .json, .parquet, optionally .gz)")
            paths += found
        elif os.path.isfile(text):
            paths.append(text)
        else:
            raise DataError(f"no such file or folder: {text}")
    empty = [p for p in paths if os.path.getsize(p) == 0]
    if empty and len(empty) < len(paths):  # all empty: the reader's error says so
        _say_left_out(", ".join(map(os.fspath, items)), empty, "empty (0 bytes)")
        paths = [p for p in paths if os.path.getsize(p) > 0]
    if not paths:
        raise DataError("no file to scan: the list of paths is empty")
    kinds = {p: file_format(p) for p in paths}
    formats = set(kinds.values())
    if len(formats) > 1:
        first = {kind: p for p, kind in reversed(list(kinds.items()))}  # the first of each
        raise DataError("a scan reads files of one format; these mix "
                        + ", ".join(f"{kind} ({first[kind]}, ...)" for kind in sorted(formats)))
    fmt = formats.pop()
    if fmt != "parquet":
        _check_text(paths, fmt)
    hive = any("=" in part for p in paths for part in Path(p).parent.parts)
    return Files(tuple(paths), fmt, hive)


def partition_values(path: str) -> dict[str, str]:
    """The ``column=value`` folders on a file's path (hive partitioning), as text: a folder
    ``judge=01`` gives ``{"judge": "01"}`` (Polars, Spark and Dask would read 01 and 1 as
    one number), with the escapes of the folder's name undone (``%2F`` is ``/``).

    >>> partition_values("logs/judge=01/day=2024-05-01/part-0.parquet")
    {'judge': '01', 'day': '2024-05-01'}
    """
    from urllib.parse import unquote

    out = {}
    for part in Path(path).parent.parts:
        key, sep, value = part.partition("=")
        if sep and key:
            out[unquote(key)] = unquote(value)
    return out


def _check_text(paths, fmt: str) -> None:
    """Refuse UTF-16 text (Windows PowerShell 5 writes redirected output so), which the
    engines read as garbage, naming the first such file; warn where a CSV or TSV header
    names a column twice, as reading it in memory does."""
    import codecs
    import csv
    import gzip

    repeated = []
    for path in paths:
        opener = gzip.open if path.lower().endswith(".gz") else open
        with opener(path, "rb") as handle:
            start = handle.read(2)
            if start in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
                raise DataError(f"{path} is UTF-16 text: a scan reads UTF-8; convert it (e.g. "
                                "iconv -f UTF-16 -t UTF-8), or read it alone with "
                                "Comparisons.from_file, which reads UTF-16")
            if fmt in ("csv", "tsv") and not repeated:
                line = (start + handle.readline()).decode("utf-8-sig", errors="replace")
                header = next(csv.reader([line], delimiter="\t" if fmt == "tsv" else ","), [])
                repeated = sorted({c for c in header if header.count(c) > 1})
                if repeated:
                    warn(f"{path} names column(s) {repeated} more than once: a scan reads the "
                         "first of each (Spark renames every copy); rename or drop the copies",
                         DataWarning)


def _say_left_out(where: str, paths: list, why: str) -> None:
    """A DataWarning naming files a scan of ``where`` leaves out (at most five, and how many)."""
    if paths:
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        warn(f"{len(paths)} file(s) under {where} left out, {why}: "
             f"{', '.join(paths[:5])}{more}", DataWarning)


def read_failure(where: str, files: Files | None, engine: str, exc, needs: str) -> str:
    """An engine's reading error as a message; for several files, what the engine needs of
    the parts (``needs``, following "reads the parts as one table") and which engine reads
    them all."""
    text = f"{where}: {engine} could not read it ({exc})"
    if files is not None and len(files.paths) > 1:
        text += (f"; {engine} reads the parts as one table{needs}, and engine='duckdb' "
                 "reads them")
    return text
