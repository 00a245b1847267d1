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

__all__ = ["describe"]


def _open_text(path: Path):
    if path.suffix.lower() == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _same(found, wanted) -> bool:
    if wanted is None:
        return found is None or found == ""
    return found is not None and str(found) == str(wanted)


def _csv_line(path: Path, values: dict, delimiter: str) -> int | None:
    with _open_text(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        header = next(reader, None)
        if header is None:
            return None
        where = {c: header.index(c) for c in values if c in header}
        for record in reader:
            if all(_same(record[i] if i < len(record) else None, values[c])
                   for c, i in where.items()):
                return reader.line_num
    return None


def _jsonl_line(path: Path, values: dict) -> int | None:
    with _open_text(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and all(
                    _same(record.get(c), v) or (isinstance(record.get(c), bool)
                                                 and str(record.get(c)).lower() == str(v))
                    for c, v in values.items()):
                return number
    return None


def _parquet_place(path: Path, row: int | None, values: dict) -> tuple[int | None, int | None]:
    """(row in the file, row group) of a row, found by its values if ``row`` is None."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow comes with every engine here
        return row, None
    meta = pq.ParquetFile(path).metadata
    starts, total = [], 0
    for g in range(meta.num_row_groups):
        starts.append(total)
        total += meta.row_group(g).num_rows
    if row is None:
        reader = pq.ParquetFile(path)
        columns = [c for c in values if c in reader.schema_arrow.names]
        for g in range(meta.num_row_groups):
            table = reader.read_row_group(g, columns=columns).to_pydict()
            for r in range(len(next(iter(table.values()), []))):
                if all(_same(table[c][r], values[c]) for c in columns):
                    row = starts[g] + r
                    break
            if row is not None:
                break
    if row is None:
        return None, None
    group = max(g for g, s in enumerate(starts) if s <= row) if starts else None
    return row, group


def describe(example, fmt: str | None) -> str:
    """``example`` (:class:`~hja_bayes.scan.plan.Example`) in words.

    Parameters
    ----------
    example : Example
        Its ``file`` (None for a table in memory), ``row`` (0-based in the file or table,
        None when the engine does not know it) and ``values`` (column -> text).
    fmt : {"csv", "tsv", "jsonl", "json", "parquet"} or None
    """
    shown = ", ".join(f"{c}={v!r}" for c, v in example.values.items())
    if example.file is None:
        return (f"row {example.row}" if example.row is not None else "a row") + f" ({shown})"
    path = Path(example.file)
    try:
        if fmt == "parquet":
            row, group = _parquet_place(path, example.row, example.values)
            if row is not None:
                return (f"{path}, row {row} (0-based, in row group {group})" if group is not None
                        else f"{path}, row {row} (0-based)") + f" ({shown})"
        elif fmt in ("csv", "tsv"):
            line = _csv_line(path, example.values, "\t" if fmt == "tsv" else ",")
            if line is not None:
                return f"{path}, line {line} ({shown})"
        elif fmt in ("jsonl", "json"):
            line = _jsonl_line(path, example.values)
            if line is not None:
                return f"{path}, line {line} ({shown})"
    except (OSError, UnicodeDecodeError, csv.Error, ValueError):
        pass
    if example.row is not None:
        return f"{path}, row {example.row} (0-based) ({shown})"
    return f"{path} ({shown})"
