"""Where an offending row is: its file and line (CSV, JSON Lines) or row and row group (parquet).

The engine finds one offending row and returns its file (and, where the engine knows it,
its row number in that file) with its values.  Only then, and only in that one file, this
module finds the rest: a CSV or JSON Lines file is read line by line until a row with those
values; a parquet file's row groups come from its footer.  Nothing here runs unless a scan
has already failed.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

__all__ = ["describe", "locate"]


def _open_text(path: Path):
    if path.suffix.lower() == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _same(found, wanted) -> bool:
    if wanted is None:
        return found is None or found == ""
    return found is not None and str(found) == str(wanted)


def _matches(get, candidates) -> dict | None:
    """The first candidate whose every value ``get(column)`` equals."""
    for values in candidates:
        if all(_same(get(c), v) for c, v in values.items()):
            return values
    return None


def _csv_line(path: Path, candidates, delimiter: str):
    with _open_text(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        header = next(reader, None)
        if header is None:
            return None, None
        where = {c: i for i, c in enumerate(header)}
        for record in reader:
            hit = _matches(lambda c: record[where[c]] if c in where and where[c] < len(record)
                           else None, candidates)
            if hit is not None:
                return reader.line_num, hit
    return None, None


def _json_text(value):
    return str(value).lower() if isinstance(value, bool) else value


def _jsonl_line(path: Path, candidates):
    with _open_text(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                hit = _matches(lambda c: _json_text(record.get(c)), candidates)
                if hit is not None:
                    return number, hit
    return None, None


def _parquet_place(path: Path, row: int | None, candidates):
    """(row in the file, row group, values) of the first row matching a candidate, or of
    ``row`` when it is known."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow comes with every engine here
        return row, None
    meta = pq.ParquetFile(path).metadata
    starts, total = [], 0
    for g in range(meta.num_row_groups):
        starts.append(total)
        total += meta.row_group(g).num_rows
    hit = None
    if row is None:
        reader = pq.ParquetFile(path)
        names = set(reader.schema_arrow.names)
        columns = sorted({c for values in candidates for c in values if c in names})
        for g in range(meta.num_row_groups):
            table = reader.read_row_group(g, columns=columns).to_pydict()
            for r in range(len(next(iter(table.values()), []))):
                hit = _matches(lambda c: _json_text(table[c][r]) if c in table else None,
                               candidates)
                if hit is not None:
                    row = starts[g] + r
                    break
            if row is not None:
                break
    if row is None:
        return None, None, None
    group = max(g for g, s in enumerate(starts) if s <= row) if starts else None
    return row, group, hit


def describe(example, fmt: str | None) -> str:
    """``example`` (:class:`~hja_bayes.scan.plan.Example`) in words (:func:`locate`'s
    place)."""
    return locate(example, fmt)[0]


def locate(example, fmt: str | None) -> tuple[str, dict]:
    """Where ``example`` (:class:`~hja_bayes.scan.plan.Example`) is, in words, and the
    values of the row named there: the first of the file's offending rows, which need not
    be the one the engine returned (a message about the row takes its values from here).

    Parameters
    ----------
    example : Example
        Its ``file`` (None for a table in memory), ``row`` (0-based in the file or table,
        None when the engine does not know it), ``values`` (column -> text) and
        ``candidates`` (the file's offending rows, to find the first of them).
    fmt : {"csv", "tsv", "jsonl", "json", "parquet"} or None
    """
    def shown(values):
        return ", ".join(f"{c}={v!r}" for c, v in values.items())

    if example.file is None:
        return ((f"row {example.row}" if example.row is not None else "a row")
                + f" ({shown(example.values)})"), example.values
    path = Path(example.file)
    candidates = example.candidates or (example.values,)
    try:
        if fmt == "parquet":
            row, group, hit = _parquet_place(path, example.row, candidates)
            if row is not None:
                values = example.values if hit is None else hit
                return (f"{path}, row {row} (0-based, in row group {group})" if group is not None
                        else f"{path}, row {row} (0-based)") + f" ({shown(values)})", values
        elif fmt in ("csv", "tsv") and example.row is None:
            line, hit = _csv_line(path, candidates, "\t" if fmt == "tsv" else ",")
            if line is not None:
                return f"{path}, line {line} ({shown(hit)})", hit
        elif fmt in ("jsonl", "json") and example.row is None:
            line, hit = _jsonl_line(path, candidates)
            if line is not None:
                return f"{path}, line {line} ({shown(hit)})", hit
    except (OSError, UnicodeDecodeError, csv.Error, ValueError):
        pass
    if example.row is not None:
        return f"{path}, row {example.row} (0-based) ({shown(example.values)})", example.values
    return f"{path} ({shown(example.values)})", example.values
