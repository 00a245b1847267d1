"""The DuckDB engine: embedded, no server, streaming under a memory cap.

Files are read by DuckDB's own readers (``read_parquet``, ``read_csv`` with every column
as text, ``read_json``), globs and hive-partitioned folders included; a pandas or Arrow
table in memory is scanned in place.  Each pass is one SQL statement; the label mapping is
a join with the small verdict table and a ``CASE`` on the row's model names.  DuckDB runs
under ``SET memory_limit`` and spills to ``temp_directory`` beyond it.

For prompt scores over more rows than fit one group, the valid rows are written once, as
compact parquet files partitioned by a hash of the prompt (``COPY ... PARTITION_BY``), and
each partition is then summed on its own, so memory stays bounded whatever the number of
prompts.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from .engine import POISSON_CUTS, UNIFORM_BITS, text_columns
from .labels import AMBIGUOUS, MISSING, SELF, UNKNOWN
from .plan import Distinct, Example

__all__ = ["DuckDBEngine"]

_INTERNAL = ("__file", "__row", "file_row_number")


def _q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as Python objects, which every DuckDB release scans (pandas 3's string
    dtype is newer than some)."""
    text = [c for c in frame.columns if pd.api.types.is_string_dtype(frame[c].dtype)
            and frame[c].dtype != object]
    return frame.astype({c: object for c in text}) if text else frame


def _lit(text: str) -> str:
    """A quoted SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _essentials(exc) -> str:
    """DuckDB's message without its advice on read options this package does not pass on
    and without the package's own SQL; a CSV whose layout it could not work out gets a
    hint of ours."""
    text = str(exc)
    for tail in ("\nThe search space used was:", "\nPossible fixes:", "\nLINE 1:"):
        text = text.split(tail)[0]
    text = text.strip()
    if "sniffing file" in text:
        text += ("; most often a row with more or fewer fields than the header: "
                 "Comparisons.from_csv names the line")
    return text


class DuckDBEngine:
    """Scan with DuckDB (``pip install duckdb``).

    Parameters
    ----------
    source : path, glob, folder, list of paths, or a pandas / Arrow table
    spec : Spec
    memory_limit : str
        DuckDB's ``memory_limit`` (e.g. ``"1GB"``).
    temp_directory : str, optional
        Where DuckDB spills and the prompt partitions go (default: a new temporary folder,
        removed by :meth:`close`).
    threads : int, optional
    rows_per_group : int
        Valid rows summed per group of prompts for the prompt scores; beyond it the rows are
        partitioned by prompt on disk first.
    """

    name = "duckdb"

    def __init__(self, source, spec, *, memory_limit: str = "1GB", temp_directory=None,
                 threads: int | None = None, rows_per_group: int = 2_000_000):
        try:
            import duckdb
        except ImportError:
            raise ParameterError("engine='duckdb' needs DuckDB: pip install duckdb "
                                 "(or hja_bayes[duckdb])") from None
        self._duckdb = duckdb
        self.spec = spec
        self.rows_per_group = int(rows_per_group)
        self._own_temp = temp_directory is None
        self.temp = tempfile.mkdtemp(prefix="hja_scan_") if temp_directory is None \
            else os.fspath(temp_directory)
        os.makedirs(self.temp, exist_ok=True)
        self.con = duckdb.connect()
        self.files = None
        self.format = None
        self.plan = None
        self._partitions = None
        try:
            self.con.execute(f"SET memory_limit = {_lit(memory_limit)}")
            self.con.execute(f"SET temp_directory = {_lit(os.path.join(self.temp, 'spill'))}")
            self.con.execute("SET preserve_insertion_order = false")
            if threads is not None:
                self.con.execute(f"SET threads = {int(threads)}")
            self._source(source)
        except BaseException:  # a source refused: no connection or folder left behind
            self.close()
            raise

    # ----------------------------------------------------------------- source
    def _source(self, source) -> None:
        from .files import resolve

        if isinstance(source, (str, os.PathLike, list, tuple)):
            self.files = resolve(source)
            self.format = self.files.format
            paths = "[" + ", ".join(_lit(p) for p in self.files.paths) + "]"
            hive = "true" if self.files.hive else "false"
            if self.format == "parquet":
                reader = (f"read_parquet({paths}, filename = '__file', file_row_number = true, "
                          f"hive_partitioning = {hive})")
                row = "file_row_number"
            elif self.format in ("csv", "tsv"):
                delim = "'\\t'" if self.format == "tsv" else "','"
                reader = (f"read_csv({paths}, all_varchar = true, header = true, "
                          f"delim = {delim}, filename = '__file', hive_partitioning = {hive})")
                row = "NULL::BIGINT"
            else:
                form = "newline_delimited" if self.format == "jsonl" else "auto"
                reader = (f"read_json({paths}, format = {_lit(form)}, filename = '__file', "
                          f"hive_partitioning = {hive})")
                row = "NULL::BIGINT"
            self._run(f"CREATE OR REPLACE TEMP VIEW src AS SELECT *, {row} AS __row FROM {reader}")
            return
        frame = source
        if type(source).__name__ == "DuckDBPyRelation":  # tied to its own connection
            raise DataError("engine='duckdb' does not take a DuckDB relation: pass the path, "
                            "glob or folder it reads (scanned here under memory_limit), or "
                            "its rows as a table in memory (relation.df())")
        if not isinstance(frame, pd.DataFrame):
            to_pandas = getattr(frame, "to_pandas", None)
            if not callable(to_pandas):
                raise DataError("engine='duckdb' scans a path, a glob, a folder, a list of "
                                f"paths or a table in memory, got {type(source).__name__}")
            frame = to_pandas()
        frame = frame.reset_index(drop=True)
        frame["__row"] = np.arange(len(frame), dtype=np.int64)
        self.con.register("__frame", _plain(frame))
        self._run("CREATE OR REPLACE TEMP VIEW src AS SELECT *, NULL::VARCHAR AS __file "
                  "FROM __frame")

    def describe(self) -> str:
        """The source in a few words."""
        return "the table" if self.files is None else self.files.describe()

    def _run(self, sql: str, params=None):
        try:
            return self.con.execute(sql, params) if params else self.con.execute(sql)
        except self._duckdb.Error as exc:
            raise DataError(f"{self.describe()}: DuckDB could not read it "
                            f"({_essentials(exc)})") from None

    def columns(self) -> list[str]:
        """The source's columns (its schema; no rows read)."""
        names = [r[0] for r in self._run("DESCRIBE SELECT * FROM src").fetchall()]
        return [n for n in names if n not in _INTERNAL]

    # ---------------------------------------------------------------- passes
    def _texts(self) -> str:
        # a JSON-typed column (JSON Lines whose values mix strings and numbers, "1" and 1) is
        # taken by its value, as the other readers take it, not by its JSON spelling ('"1"',
        # which had made two prompts of one)
        json = {r[0] for r in self._run("DESCRIBE SELECT * FROM src").fetchall()
                if str(r[1]) == "JSON"}

        def text(column):
            return (f"({_q(column)} ->> '$')" if column in json
                    else f"CAST({_q(column)} AS VARCHAR)")

        parts = []
        for name, (column, missing) in text_columns(self.spec).items():
            if column is None:
                parts.append(f"'judge' AS {name}")
            elif missing is None:
                parts.append(f"{text(column)} AS {name}")
            else:
                parts.append(f"COALESCE({text(column)}, {_lit(missing)}) AS {name}")
        if self.spec.cluster is None:
            parts.append("NULL::VARCHAR AS g")
        return ", ".join(parts)

    def distinct(self) -> Distinct:
        """Pass 2: distinct verdicts, judges and models (one scan, grouping sets)."""
        self._run(f"CREATE OR REPLACE TEMP VIEW texts AS SELECT {self._texts()}, __file, __row "
                  "FROM src")
        verdict = [f"v{p}" for p in range(len(self.spec.verdicts))]
        args = verdict + ["jn", "an", "bn"]
        sets = [verdict, ["jn"], ["an"], ["bn"], []]
        gnull = ("count(*) FILTER (WHERE g IS NULL OR trim(g) = '')"  # no prompt, or ""
                 if self.spec.cluster is not None else "0")
        sql = (f"SELECT GROUPING({', '.join(args)}) AS gs, {', '.join(args)}, count(*) AS n, "
               f"{gnull} AS gnull FROM texts GROUP BY GROUPING SETS ("
               + ", ".join("(" + ", ".join(s) + ")" for s in sets) + ")")
        out = self._run(sql).df()
        masks = {tuple(s): sum(1 << (len(args) - 1 - p) for p, a in enumerate(args)
                               if a not in s) for s in sets}
        gs = out["gs"].to_numpy()
        total = out[gs == masks[()]]
        rows = int(total["n"].sum()) if len(total) else 0
        names = {}
        for role, column in (("judge", "jn"), ("model_a", "an"), ("model_b", "bn")):
            if role == "judge" and self.spec.judge is None:
                continue
            part = out[gs == masks[(column,)]]
            names[role] = pd.DataFrame({"value": part[column].astype(object).where(
                part[column].notna(), None).to_numpy(), "n": part["n"].to_numpy()})
        verdicts = out[gs == masks[tuple(verdict)]][verdict + ["n"]].reset_index(drop=True)
        return Distinct(rows, verdicts, names, int(total["gnull"].sum()) if len(total) else 0)

    def prepare(self, plan) -> None:
        """The mapped rows ``(g, k, a, b, code)`` as a view."""
        self.plan = plan
        table = plan.verdicts.table
        self.con.register("__verdicts", _plain(table))
        self.con.register("__judges", _plain(plan.judge_table()))
        self.con.register("__items", _plain(plan.item_table()))
        C = plan.n_categories
        on = " AND ".join(f"t.v{p} = vt.v{p}" for p in range(len(plan.spec.verdicts)))
        by_name = ""
        if plan.verdicts.by_name:
            by = "(CASE WHEN vt.text = t.an THEN 1 WHEN vt.text = t.bn THEN 2 ELSE 0 END)"
            by_name = (f"WHEN {by} > 0 AND vt.kind > 0 AND vt.kind <> {by} THEN {AMBIGUOUS} "
                       f"WHEN vt.text = t.an THEN 0 WHEN vt.text = t.bn THEN {C - 1} ")
        missing_g = " OR t.g IS NULL" if plan.spec.cluster is not None else ""
        self._run(
            f"CREATE OR REPLACE TEMP VIEW mapped AS SELECT t.g AS g, jd.k AS k, ia.i AS a, "
            f"ib.i AS b, CASE WHEN jd.k IS NULL OR ia.i IS NULL OR ib.i IS NULL{missing_g} "
            f"THEN {MISSING} WHEN t.an = t.bn THEN {SELF} {by_name}"
            f"WHEN coalesce(vt.kind, 0) = 0 THEN {UNKNOWN} ELSE vt.code END AS code, "
            f"t.* EXCLUDE (g) FROM texts t LEFT JOIN __verdicts vt ON {on} "
            "LEFT JOIN __judges jd ON t.jn = jd.name LEFT JOIN __items ia ON t.an = ia.name "
            "LEFT JOIN __items ib ON t.bn = ib.name")

    def aggregate(self, with_cluster: bool) -> pd.DataFrame:
        """Pass 3: rows per (k, a, b, code), and per prompt when ``with_cluster``."""
        g = "g, " if with_cluster else ""
        out = self._run(f"SELECT {g}coalesce(k, -1) AS k, coalesce(a, -1) AS a, "
                        f"coalesce(b, -1) AS b, code, count(*) AS n FROM mapped "
                        f"GROUP BY ALL").df()
        C = self.plan.n_categories
        code = out["code"].to_numpy()
        self.valid_rows = int(out["n"].to_numpy()[(code >= 0) & (code < C)].sum())
        return out

    def example(self, condition):
        """One row matching ``condition``, with its file and row."""
        kind, what = condition
        view = "mapped" if kind == "code" else "texts"
        names = text_columns(self.spec)
        by_column = {column: name for name, (column, _) in names.items() if column is not None}
        if kind == "code":
            where = f"code = {int(what)}"
        elif kind == "null":
            where = f"{by_column[what]} IS NULL"
        else:
            where = " AND ".join(f"{by_column[c]} = {_lit(v)}" if v is not None else
                                 f"{by_column[c]} IS NULL" for c, v in what.items())
        cols = [n for n, (c, _) in names.items() if c is not None]
        first = self._run(f"SELECT min(__file) FROM {view} WHERE {where}").fetchone()[0]
        where += " AND __file IS NULL" if first is None else f" AND __file = {_lit(first)}"
        rows = self._run(f"SELECT __row, {', '.join(cols)} FROM {view} WHERE {where} "
                         "ORDER BY __row NULLS LAST LIMIT 1").fetchall()
        if not rows:
            return None
        row, *values = rows[0]
        candidates = ()
        if row is None and first is not None:
            found = self._run(f"SELECT DISTINCT {', '.join(cols)} FROM {view} WHERE {where} "
                              "LIMIT 1000").fetchall()
            candidates = tuple({names[n][0]: v for n, v in zip(cols, r)} for r in found)
        return Example(first, None if row is None else int(row),
                       {names[n][0]: v for n, v in zip(cols, values)}, candidates)

    def _valid_where(self, judges) -> str:
        C = self.plan.n_categories
        among = "" if judges is None else \
            f" AND k IN ({', '.join(str(int(k)) for k in judges) or 'NULL'})"
        return f"WHERE code >= 0 AND code < {C}{among}"

    def cluster_totals(self, judges=None) -> np.ndarray:
        """Valid comparisons per prompt (of the judges coded ``judges``; None: all)."""
        out = self._run(f"SELECT count(*) AS n FROM mapped {self._valid_where(judges)} "
                        "GROUP BY g").fetchnumpy()
        return np.asarray(out["n"], dtype=float)

    def cluster_names(self, judges=None) -> tuple:
        """The prompts with valid comparisons (of ``judges``), sorted."""
        out = self._run(f"SELECT DISTINCT g FROM mapped {self._valid_where(judges)} "
                        "ORDER BY g").fetchall()
        return tuple(str(r[0]) for r in out)

    # ------------------------------------------------------- prompt scores
    def _valid_sql(self) -> str:
        plan = self.plan
        n, C = len(plan.items), plan.n_categories
        return (f"SELECT g, k, a, b, ((k * {n} + a) * {n} + b) * {C} + code AS key FROM mapped "
                f"WHERE code >= 0 AND code < {C}")

    def _groups(self, rows_per_group: int) -> list[str]:
        """SQL sources of the valid rows, one per group of prompts."""
        groups = max(1, math.ceil(getattr(self, "valid_rows", 0) / max(1, rows_per_group)))
        if groups == 1:
            return [self._valid_sql()]
        if self._partitions is None or self._partitions[0] != groups:
            folder = os.path.join(self.temp, f"rows_{groups}")
            shutil.rmtree(folder, ignore_errors=True)
            self._run(f"COPY (SELECT *, hash(g) % {groups} AS part FROM ({self._valid_sql()})) "
                      f"TO {_lit(folder)} (FORMAT parquet, PARTITION_BY (part))")
            self._partitions = (groups, folder)
        folder = self._partitions[1]
        out = []
        for part in range(groups):
            where = os.path.join(folder, f"part={part}")
            if os.path.isdir(where):
                out.append(f"SELECT g, k, a, b, key FROM read_parquet("
                           f"{_lit(os.path.join(where, '*.parquet'))}, hive_partitioning = false)")
        return out

    def prompt_scores(self, table: pd.DataFrame, reduce, rows_per_group: int | None = None):
        """Sum of ``reduce(long)`` over groups of prompts; see :mod:`~hja_bayes.scan.engine`."""
        if rows_per_group is None:
            rows_per_group = self.rows_per_group
        self.con.register("__scores", table)
        values = [c for c in table.columns if c != "key"]
        sums = ", ".join(f"sum(t.{_q(c)}) AS {_q(c)}" for c in values)
        total = None
        for rows in self._groups(rows_per_group):
            sql = (f"SELECT dense_rank() OVER (ORDER BY r.g) - 1 AS gid, GROUPING(r.k, r.a, r.b) "
                   f"AS grp, coalesce(r.k, r.a, r.b) AS key, {sums} FROM ({rows}) r JOIN __scores t "
                   "ON r.key = t.key GROUP BY GROUPING SETS ((r.g, r.k), (r.g, r.a), (r.g, r.b))")
            out = self._run(sql).fetchnumpy()
            grp = np.asarray(out["grp"])
            long = {"gid": np.asarray(out["gid"], dtype=np.int64),
                    "grp": np.select([grp == 3, grp == 5], [0, 1], 2),
                    "key": np.asarray(out["key"], dtype=np.int64),
                    "values": np.column_stack([np.asarray(out[c], dtype=float) for c in values])}
            part = reduce(long)
            total = part if total is None else total + part
        self.con.unregister("__scores")
        return total

    def poisson(self, replicates: int, seed: int, start: int = 0) -> pd.DataFrame:
        """Poisson(1) weights per prompt and replicate, summed per replicate and row key."""
        u = f"((hash(e.g, {int(seed)}, r.rep) >> {64 - UNIFORM_BITS}) / {float(2 ** UNIFORM_BITS)!r})"
        draw = " + ".join(f"({u} >= {c!r})::INTEGER" for c in POISSON_CUTS)
        sql = (f"SELECT rep, key, sum(w) AS w FROM (SELECT r.rep AS rep, e.key AS key, "
               f"e.n * ({draw}) AS w FROM (SELECT g, key, count(*) AS n FROM "
               f"({self._valid_sql()}) GROUP BY g, key) e CROSS JOIN range({int(start)}, "
               f"{int(start) + int(replicates)}) "
               "r(rep)) WHERE w > 0 GROUP BY rep, key")
        return self._run(sql).df()

    def poisson_weights(self, replicates: int, seed: int) -> pd.DataFrame:
        """The weight of every prompt in every replicate (``g, rep, w``; for checks)."""
        u = f"((hash(p.g, {int(seed)}, r.rep) >> {64 - UNIFORM_BITS}) / {float(2 ** UNIFORM_BITS)!r})"
        draw = " + ".join(f"({u} >= {c!r})::INTEGER" for c in POISSON_CUTS)
        C = self.plan.n_categories
        return self._run(f"SELECT p.g AS g, r.rep AS rep, {draw} AS w FROM (SELECT DISTINCT g "
                         f"FROM mapped WHERE code >= 0 AND code < {C}) p CROSS JOIN "
                         f"range({int(replicates)}) r(rep)").df()

    def close(self) -> None:
        """Close the connection and remove the temporary folder (if made here)."""
        try:
            self.con.close()
        finally:
            if self._own_temp:
                shutil.rmtree(self.temp, ignore_errors=True)
