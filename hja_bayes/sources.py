"""Where rows of verdicts come from: files and streams read into a DataFrame of text.

:func:`read_table` reads CSV / TSV, JSON Lines, a JSON array of objects (FastChat's
``clean_battle`` files), parquet, any of them gzipped, or ``"-"`` (standard input, CSV or
JSON recognised by its first character).  Text stays text: a CSV cell ``N/A`` reaches the
readers as ``"N/A"`` (an invalid-verdict marker), not as a missing value, and a count
column as written, so :mod:`hja_bayes.readers` can say exactly which value is wrong.
A malformed JSON line is a :class:`~hja_bayes.errors.DataError` naming its line number.
Rows of CSV, TSV and JSON Lines text are indexed by their line in the file (the index named
``"line"``), so every message about a row names the line to look at (:func:`row_label`).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import os
import re
import sys
import warnings
from collections import Counter
from pathlib import Path

import pandas as pd

from .errors import DataError, DataWarning, ParameterError, warn

__all__ = ["FORMATS", "as_frame", "file_format", "line_index", "read_table", "row_label"]

#: File suffix (after an optional ``.gz``) -> format.
FORMATS = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
           ".json": "json", ".parquet": "parquet", ".pq": "parquet"}


def as_frame(table, what: str = "from_frame") -> pd.DataFrame:
    """A pandas DataFrame from a DataFrame or anything with ``.to_pandas()`` (polars,
    pyarrow, Hugging Face datasets).

    Raises
    ------
    DataError
        For a path (with the function to call instead) or anything else.
    """
    if isinstance(table, pd.DataFrame):
        if _warn_repeated(list(table.columns), "the table"):
            table = table.loc[:, ~table.columns.duplicated()]
        return table
    if isinstance(table, (str, os.PathLike)):
        raise DataError(
            f"{what} reads a table in memory, got the path {str(table)!r}: for a file use "
            "Comparisons.from_file(path) (or from_csv / from_jsonl)")
    to_pandas = getattr(table, "to_pandas", None)
    if callable(to_pandas):
        frame = to_pandas()
        if isinstance(frame, pd.DataFrame):
            return frame
    raise DataError(f"expected a pandas DataFrame or a table with .to_pandas() (polars, "
                    f"pyarrow, datasets), got {type(table).__name__}")


def _warn_repeated(columns: list, name: str) -> bool:
    """Warn where a header names a column twice (the first is read); True if one does."""
    repeated = sorted(str(c) for c, n in Counter(columns).items() if n > 1)
    if repeated:
        warn(f"{name} names column(s) {repeated} more than once: the first of each is read, "
             "the others are not; rename or drop the copies", DataWarning)
    return bool(repeated)


def row_label(index: pd.Index, position) -> str:
    """How a message names the row at ``position`` of a frame with ``index``: ``line 7``
    where the rows were read from text (their index holds line numbers), ``object 7`` from
    a JSON array (counted from 1), else ``row`` and the index label."""
    label = index[position]
    label = label.item() if hasattr(label, "item") else label  # np.int64(7) as 7
    return f"{index.name if index.name in ('line', 'object') else 'row'} {label!r}"


#: A line of nothing but spaces or tabs, which pandas skips.
_BLANK_LINE = re.compile(r"\n[ \t]*\r?\n")


def line_index(text: str, sep: str, rows: int) -> pd.Index | None:
    """The line each of ``rows`` CSV records starts on, after the header (None where the
    count differs from pandas'): ``pos + 2`` without quotes or blank lines, else counted by
    the csv module (a quoted field may span lines; pandas skips blank lines)."""
    if '"' not in text and not text[:1].isspace() and not _BLANK_LINE.search(text.rstrip()):
        starts = range(2, rows + 2)
    else:
        reader, starts, previous = csv.reader(io.StringIO(text), delimiter=sep), [], 0
        for record in reader:
            if len(record) > 1 or (record and record[0].strip()):
                starts.append(previous + 1)
            previous = reader.line_num
        starts = starts[1:]
    return pd.Index(starts, name="line") if len(starts) == rows else None


def file_format(path: str | os.PathLike) -> str:
    """The format of a file from its suffix (``.gz`` allowed): csv, tsv, jsonl, json, parquet."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes[-1:] == [".gz"]:
        suffixes = suffixes[:-1]
    kind = suffixes[-1] if suffixes else ""
    if kind not in FORMATS:
        raise DataError(f"{path}: unknown file type {kind or '(none)'!r}; use one of "
                        f"{sorted(FORMATS)} (optionally .gz), or '-' for standard input")
    return FORMATS[kind]


def read_table(source: str | os.PathLike, fmt: str | None = None) -> pd.DataFrame:
    """Read a file (or ``"-"``, standard input) of rows into a DataFrame, text kept as text.

    Parameters
    ----------
    source : str or PathLike
        A path, or ``"-"`` for standard input.
    fmt : {"csv", "tsv", "jsonl", "json", "parquet"}, optional
        Default: from the suffix; for standard input and pipes (a named pipe, a shell's
        ``<(...)``), from the content: parquet by its magic bytes, JSON when the first
        character is ``[`` or ``{``, TSV when the first line has tabs and no comma, else
        CSV.  Gzip is recognised by its magic bytes everywhere, with or without ``.gz``.

    Returns
    -------
    DataFrame
        CSV and TSV cells as strings (empty cells as ``""``); JSON values as parsed.  Text
        is read as UTF-8 (a leading byte-order mark dropped), or as UTF-16 where it starts
        with UTF-16's byte-order mark.  Rows of CSV, TSV and JSON Lines are indexed by the
        line each starts on (the index named ``"line"``).

    Raises
    ------
    DataError
        Missing file, unknown type, malformed JSON (with the line number), a JSON value
        that is not an object, parquet without pyarrow.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise ParameterError(f"the data are a file's path (or '-' for standard input), got "
                        f"{type(source).__name__}")
    if str(source) == "-":
        name = "standard input"
        raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    else:  # a file by its suffix; a pipe (<(...), a named pipe) by its content, as stdin
        path, name = Path(source), str(source)
        if not path.exists() or path.is_dir():
            raise DataError(f"no such file: {source}")
        fmt = fmt or (file_format(path) if path.is_file() else None)
        if fmt == "parquet":
            try:
                return pd.read_parquet(path)
            except ImportError:
                raise DataError("reading parquet needs pyarrow: pip install pyarrow") from None
            except Exception as exc:  # ArrowInvalid, OSError ...
                raise DataError(f"{path}: not a readable parquet file ({exc})") from None
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise DataError(f"cannot read {path}: {exc}") from None
    if isinstance(raw, bytes) and raw[:2] == b"\x1f\x8b":  # gzip by its magic number, with
        try:                                                # or without a .gz suffix
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise DataError(f"cannot read {name}: {exc}") from None
    if isinstance(raw, bytes) and raw[:4] == b"PAR1" and fmt in (None, "parquet"):
        try:
            return pd.read_parquet(io.BytesIO(raw))
        except ImportError:
            raise DataError("reading parquet needs pyarrow: pip install pyarrow") from None
    text = _decoded(raw, name) if isinstance(raw, bytes) else raw.removeprefix("\ufeff")
    if fmt is None:
        first, header = text.lstrip()[:1], text.lstrip().partition("\n")[0]
        fmt = ("json" if first == "[" else "jsonl" if first == "{" else
               "tsv" if "\t" in header and "," not in header else "csv")
    return _parse_text(text, fmt, name)


def _decoded(raw: bytes, name: str) -> str:
    """UTF-8 text, its byte-order mark dropped; UTF-16 where a byte-order mark says so
    (Windows PowerShell 5 writes redirected output that way)."""
    try:
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return raw.decode("utf-16")
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot read {name}: not UTF-8 text ({exc}); save it as UTF-8") \
            from None


def _trailing_field_dropped(text: str, fmt: str, name: str, frame: pd.DataFrame):
    """The rows read again without their last field where it is empty in every row (a
    trailing comma the header lacks: pandas had made the first column the index and shifted
    every other one); a non-empty extra field is an error."""
    if frame.iloc[:, -1].astype(str).str.strip().ne("").any():
        raise DataError(f"{name}: its rows have one more field than its header; fix the header "
                        "or the rows")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.ParserWarning)  # the empty field dropped
        return pd.read_csv(io.StringIO(text), sep="\t" if fmt == "tsv" else ",", dtype=str,
                           keep_default_na=False, index_col=False)


def _parse_text(text: str, fmt: str, name: str) -> pd.DataFrame:
    if fmt in ("csv", "tsv"):
        if not text.strip():
            raise DataError(f"{name} is empty")
        try:
            frame = pd.read_csv(io.StringIO(text), sep="\t" if fmt == "tsv" else ",",
                                dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, ValueError) as exc:
            raise DataError(f"{name}: not a readable {fmt.upper()} file ({exc})") from None
        if not isinstance(frame.index, pd.RangeIndex):  # rows one field longer than the header
            frame = _trailing_field_dropped(text, fmt, name, frame)
        header = pd.read_csv(io.StringIO(text), sep="\t" if fmt == "tsv" else ",", header=None,
                             nrows=1, dtype=str, keep_default_na=False).iloc[0]
        _warn_repeated(header.tolist(), name)  # pandas reads 'winner' twice as 'winner.1'
        if frame.empty:
            raise DataError(f"{name} has a header but no rows")
        lines = line_index(text, "\t" if fmt == "tsv" else ",", len(frame))
        if lines is not None:
            frame.index = lines
        return frame
    if fmt == "jsonl":
        return _records(*_json_lines(text, name), name)
    if fmt == "json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            if text.lstrip()[:1] == "{":  # JSON Lines under a .json name
                return _records(*_json_lines(text, name), name)
            raise DataError(f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno} "
                            f"({exc.msg})") from None
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list):
            raise DataError(f"{name}: expected a JSON array of objects, got a "
                            f"{type(value).__name__}")
        for i, record in enumerate(value):
            if not isinstance(record, dict):
                raise DataError(f"{name}: element {i} of the array is a "
                                f"{type(record).__name__}, not an object with named fields")
        return _records(value, range(1, len(value) + 1), name, "object")
    raise DataError(f"unknown format {fmt!r}")


def _json_lines(text: str, name: str) -> tuple[list[dict], list[int]]:
    """The objects of JSON Lines text and the line of each."""
    records, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{name} line {number}: not valid JSON ({exc.msg}, column "
                            f"{exc.colno})") from None
        if not isinstance(record, dict):
            raise DataError(f"{name} line {number}: expected one JSON object per line, got a "
                            f"{type(record).__name__}")
        records.append(record)
        lines.append(number)
    return records, lines


def _records(records: list[dict], lines, name: str, unit: str = "line") -> pd.DataFrame:
    if not records:
        raise DataError(f"{name} holds no rows")
    frame = pd.DataFrame.from_records(records)
    frame.index = pd.Index(lines, name=unit)
    return frame
