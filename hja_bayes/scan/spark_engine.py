"""The Spark engine: a Spark DataFrame (or files read into one), in its session.

The label mapping is Spark expressions: broadcast joins with the small verdict, judge and
model tables, and a ``when`` chain comparing each verdict with the row's model names.
Counts come back as one ``groupBy``.  For prompt scores the valid rows are repartitioned
by prompt and each partition is reduced to a (dim x dim) matrix (with per-judge and per-model prompt
counts) in the executors (``mapInPandas``); only those come back.

Spark needs a Java runtime (``java`` on the path, or ``JAVA_HOME``).  Without a session
given, the active one is used, else a local one is started (``local[2]``).
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from .engine import POISSON_CUTS, UNIFORM_BITS, long_table, text_columns
from .labels import AMBIGUOUS, MISSING, SELF, UNKNOWN
from .plan import Distinct, Example

__all__ = ["SparkEngine", "local_session"]


def local_session(cores: int = 2):
    """A small local Spark session (the UI off, few shuffle partitions), or the active one.

    Raises
    ------
    ParameterError
        Without pyspark, or without a Java runtime.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ParameterError("engine='spark' needs pyspark: pip install pyspark "
                             "(or hja_bayes[spark])") from None
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ParameterError("engine='spark' needs a Java runtime (java on the PATH or "
                             "JAVA_HOME), e.g. the openjdk-17-jre-headless package")
    # the executors' Python must import hja_bayes: this interpreter's, unless set already
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(f"local[{int(cores)}]").appName("hja_bayes")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(4 * int(cores)))
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.driver.memory", "1g"))
    with warnings.catch_warnings():
        # starting the JVM forks and at once executes java: JAX's warning about forking a
        # multithreaded process concerns children that go on running Python
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called",
                                category=RuntimeWarning)
        return builder.getOrCreate()


def _meat_partitions(table: pd.DataFrame, reduce):
    """mapInPandas body: one partition's rows -> its reduced vector, as bytes."""
    def run(batches):
        frames = [b for b in batches if len(b)]
        if not frames:
            return
        long = long_table(pd.concat(frames, ignore_index=True), table)
        yield pd.DataFrame({"m": [np.ascontiguousarray(reduce(long)).tobytes()]})
    return run


class SparkEngine:
    """Scan with Spark (``pip install pyspark``, and a Java runtime).

    Parameters
    ----------
    source : path, glob, folder, list of paths, or a Spark / pandas DataFrame
    spec : Spec
    session : SparkSession, optional
    partitions : int, optional
        Partitions of the repartition by prompt (default: Spark's shuffle partitions).
    """

    name = "spark"

    def __init__(self, source, spec, *, session=None, partitions: int | None = None):
        self.spark = session if session is not None else local_session()
        from pyspark.sql import functions as F

        self.F = F
        self.spec = spec
        self.partitions = partitions
        self.files = None
        self.format = None
        self.plan = None
        self.src = self._source(source)

    def _source(self, source):
        F = self.F
        from pyspark.sql import DataFrame

        if isinstance(source, (str, os.PathLike, list, tuple)):
            from .files import resolve

            self.files = resolve(source)
            self.format = fmt = self.files.format
            paths = list(self.files.paths)
            read = self.spark.read
            inference = "spark.sql.sources.partitionColumnTypeInference.enabled"
            before = self.spark.conf.get(inference, None)
            try:
                if self.files.hive:  # partition columns from the folders under the root,
                    read = read.option("basePath", _hive_root(paths))  # as text (not 01 as 1)
                    self.spark.conf.set(inference, "false")
                if fmt == "parquet":
                    self._every_part_has_its_columns(paths)
                    frame = read.parquet(*paths)
                elif fmt in ("csv", "tsv"):
                    _same_headers(paths, "\t" if fmt == "tsv" else ",")
                    # a quoted field may span lines, and "" is a quote inside one (as the
                    # other engines read CSV)
                    frame = read.csv(paths, header=True, sep="\t" if fmt == "tsv" else ",",
                                     multiLine=True, escape='"')
                else:
                    frame = read.json(paths, multiLine=fmt == "json")
            except DataError:
                raise
            except Exception as exc:  # noqa: BLE001 - Spark's own message is the point
                raise DataError(f"{self.files.describe()}: Spark could not read it "
                                f"({_without_stack(exc)})") from None
            finally:
                if self.files.hive:
                    self.spark.conf.set(inference, "true" if before is None else before)
            return frame.withColumn("__file", F.input_file_name()).withColumn(
                "__row", F.lit(None).cast("long"))
        if isinstance(source, pd.DataFrame):
            frame = source.reset_index(drop=True).copy()
            frame["__row"] = np.arange(len(frame))
            return self.spark.createDataFrame(frame).withColumn("__file", F.lit(None).cast("string"))
        if not isinstance(source, DataFrame):
            raise DataError("engine='spark' scans a path, a glob, a folder, a list of paths or a "
                            f"Spark / pandas DataFrame, got {type(source).__name__}")
        return source.withColumn("__file", F.lit(None).cast("string")).withColumn(
            "__row", F.lit(None).cast("long"))

    def _every_part_has_its_columns(self, paths) -> None:
        """Refuse a Parquet part that lacks a column the scan reads: Spark takes its schema
        from the parts together and reads a part without the column as nulls, so a part
        without ``winner`` had its rows counted as having no verdict, silently."""
        from .files import partition_values

        needed = [c for c, _ in text_columns(self.spec).values() if c is not None]
        try:
            import pyarrow.parquet as pq

            names_of = lambda path: pq.read_schema(path).names  # noqa: E731 (the footer)
        except ImportError:  # Spark reads the footer of one part
            names_of = lambda path: self.spark.read.parquet(path).columns  # noqa: E731
        for path in paths:
            have = set(names_of(path)) | set(partition_values(path))
            lacking = [c for c in needed if c not in have]
            if lacking:
                raise DataError(f"{path} lacks the column(s) {lacking} that the scan reads "
                                f"(its columns: {sorted(have)})")

    def describe(self) -> str:
        """The source in a few words."""
        return "the table" if self.files is None else self.files.describe()

    def _collect(self, frame) -> pd.DataFrame:
        try:
            return frame.toPandas()
        except Exception as exc:  # noqa: BLE001 - reading errors surface here, lazily
            raise DataError(f"{self.describe()}: Spark could not read it ({exc})") from None

    def columns(self) -> list[str]:
        """The source's columns (its schema; no rows read)."""
        return [c for c in self.src.columns if c not in ("__file", "__row")]

    # ---------------------------------------------------------------- passes
    def _texts(self):
        F = self.F
        cols = []
        for name, (column, missing) in text_columns(self.spec).items():
            if column is None:
                cols.append(F.lit("judge").alias(name))
            else:
                e = F.col(f"`{column}`").cast("string")
                cols.append((e if missing is None else F.coalesce(e, F.lit(missing))).alias(name))
        if self.spec.cluster is None:
            cols.append(F.lit(None).cast("string").alias("g"))
        return self.src.select(*cols, "__file", "__row")

    def distinct(self) -> Distinct:
        """Pass 2: distinct verdicts, judges and models."""
        F = self.F
        texts = self._texts()
        verdict = [f"v{p}" for p in range(len(self.spec.verdicts))]
        roles = [("judge", "jn"), ("model_a", "an"), ("model_b", "bn")]
        if self.spec.judge is None:
            roles = roles[1:]
        verdicts = self._collect(texts.groupBy(*verdict).agg(F.count(F.lit(1)).alias("n")))
        total = self._collect(texts.agg(F.count(F.lit(1)).alias("n"),
                                        F.sum((F.col("g").isNull() | (F.trim(F.col("g")) == ""))
                                              .cast("long")).alias("gnull")))
        names = {}
        for role, column in roles:
            frame = self._collect(texts.groupBy(column).agg(F.count(F.lit(1)).alias("n")))
            values = frame[column].astype(object).where(frame[column].notna(), None)
            names[role] = pd.DataFrame({"value": values.to_numpy(), "n": frame["n"].to_numpy()})
        gnull = int(total["gnull"].fillna(0).iloc[0]) if self.spec.cluster is not None else 0
        return Distinct(int(total["n"].iloc[0]), verdicts, names, gnull)

    def prepare(self, plan) -> None:
        """The mapped rows ``(g, k, a, b, code)`` as a DataFrame."""
        F = self.F
        self.plan = plan
        C = plan.n_categories
        table = plan.verdicts.table.astype({"kind": "int64", "code": "int64"})
        verdict = [f"v{p}" for p in range(len(plan.spec.verdicts))]
        vt = F.broadcast(self.spark.createDataFrame(table))
        judges = F.broadcast(self.spark.createDataFrame(plan.judge_table()))
        items = self.spark.createDataFrame(plan.item_table())
        t = self._texts()
        frame = (t.join(vt, on=verdict, how="left")
                 .join(judges.withColumnRenamed("name", "jn"), on="jn", how="left")
                 .join(F.broadcast(items.withColumnRenamed("name", "an").withColumnRenamed("i", "a")),
                       on="an", how="left")
                 .join(F.broadcast(items.withColumnRenamed("name", "bn").withColumnRenamed("i", "b")),
                       on="bn", how="left"))
        kind = F.coalesce(F.col("kind"), F.lit(0))
        missing = F.col("k").isNull() | F.col("a").isNull() | F.col("b").isNull()
        if plan.spec.cluster is not None:
            missing = missing | F.col("g").isNull()
        rule = F.when(missing, MISSING).when(F.col("an") == F.col("bn"), SELF)
        if plan.verdicts.by_name:
            by = (F.when(F.col("text") == F.col("an"), 1)
                  .when(F.col("text") == F.col("bn"), 2).otherwise(0))
            rule = (rule.when((by > 0) & (kind > 0) & (kind != by), AMBIGUOUS)
                    .when(by == 1, 0).when(by == 2, C - 1))
        code = rule.when(kind == 0, UNKNOWN).otherwise(F.col("code"))
        self.mapped = frame.withColumn("code", code.cast("long"))

    def aggregate(self, with_cluster: bool) -> pd.DataFrame:
        """Pass 3: rows per (k, a, b, code), and per prompt when ``with_cluster``."""
        F = self.F
        keys = (["g"] if with_cluster else []) + ["k", "a", "b", "code"]
        frame = self.mapped.select("g", *(F.coalesce(F.col(c), F.lit(-1)).cast("long").alias(c)
                                          for c in ("k", "a", "b")), "code")
        out = self._collect(frame.groupBy(*keys).agg(F.count(F.lit(1)).alias("n")))
        C = self.plan.n_categories
        code = out["code"].to_numpy()
        self.valid_rows = int(out["n"].to_numpy()[(code >= 0) & (code < C)].sum())
        return out

    def example(self, condition):
        """One row matching ``condition``, with its file."""
        F = self.F
        kind, what = condition
        names = text_columns(self.spec)
        by_column = {column: name for name, (column, _) in names.items() if column is not None}
        if kind == "code":
            frame, cond = self.mapped, F.col("code") == int(what)
        else:
            frame = self._texts()
            if kind == "null":
                cond = F.col(by_column[what]).isNull()
            else:
                cond = F.lit(True)
                for c, v in what.items():
                    cond = cond & (F.col(by_column[c]).isNull() if v is None
                                   else F.col(by_column[c]) == v)
        cols = [n for n, (c, _) in names.items() if c is not None]
        matches = frame.filter(cond)
        first = matches.agg(F.min("__file").alias("f")).collect()[0]["f"]
        here = matches.filter(F.col("__file").isNull() if first is None
                              else F.col("__file") == first)
        rows = here.orderBy(F.col("__row").asc_nulls_last()).select("__row", *cols).limit(1).collect()
        if not rows:
            return None
        row = rows[0]
        candidates = ()
        if row["__row"] is None and first is not None:
            found = here.select(*cols).distinct().limit(1000).collect()
            candidates = tuple({names[n][0]: r[n] for n in cols} for r in found)
        file = first
        if file and file.startswith("file:"):
            from urllib.parse import unquote, urlparse

            file = unquote(urlparse(file).path)
        return Example(file, None if row["__row"] is None else int(row["__row"]),
                       {names[n][0]: row[n] for n in cols}, candidates)

    def _valid(self):
        F = self.F
        plan = self.plan
        n, C = len(plan.items), plan.n_categories
        key = ((F.col("k") * n + F.col("a")) * n + F.col("b")) * C + F.col("code")
        return (self.mapped.filter((F.col("code") >= 0) & (F.col("code") < C))
                .select("g", F.col("k").cast("long"), F.col("a").cast("long"),
                        F.col("b").cast("long"), key.cast("long").alias("key")))

    def _valid_of(self, judges):
        rows = self._valid()
        return rows if judges is None else rows.filter(self.F.col("k").isin(list(judges)))

    def cluster_totals(self, judges=None) -> np.ndarray:
        """Valid comparisons per prompt (of the judges coded ``judges``; None: all)."""
        F = self.F
        out = self._collect(self._valid_of(judges).groupBy("g")
                            .agg(F.count(F.lit(1)).alias("n")))
        return out["n"].to_numpy().astype(float)

    def cluster_names(self, judges=None) -> tuple:
        """The prompts with valid comparisons (of ``judges``), sorted."""
        out = self._collect(self._valid_of(judges).select("g").distinct())
        return tuple(sorted(str(x) for x in out["g"]))

    def prompt_scores(self, table: pd.DataFrame, reduce, rows_per_group=None):
        """Rows repartitioned by prompt; each partition reduced in the executors."""
        valid = self._valid()
        parts = valid.repartition(self.partitions, "g") if self.partitions else \
            valid.repartition("g")
        out = parts.mapInPandas(_meat_partitions(table, reduce), schema="m binary").collect()
        if not out:
            return None
        return sum(np.frombuffer(r["m"], dtype=np.float64) for r in out)

    def _uniform(self, seed: int):
        F = self.F
        h = F.xxhash64(F.col("g"), F.lit(int(seed)), F.col("rep"))
        return F.shiftrightunsigned(h, 64 - UNIFORM_BITS).cast("double") / float(2 ** UNIFORM_BITS)

    def _draw(self, seed: int):
        F = self.F
        u = self._uniform(seed)
        out = F.lit(0)
        for c in POISSON_CUTS:
            out = out + (u >= F.lit(c)).cast("long")
        return out

    def poisson(self, replicates: int, seed: int, start: int = 0) -> pd.DataFrame:
        """Poisson(1) weights per prompt and replicate, summed per replicate and row key."""
        F = self.F
        entries = self._valid().groupBy("g", "key").agg(F.count(F.lit(1)).alias("n"))
        reps = self.spark.range(int(start), int(start) + int(replicates)).withColumnRenamed("id", "rep")
        frame = entries.crossJoin(F.broadcast(reps)).withColumn("w", F.col("n") * self._draw(seed))
        return self._collect(frame.filter(F.col("w") > 0).groupBy("rep", "key")
                             .agg(F.sum("w").alias("w")))

    def poisson_weights(self, replicates: int, seed: int) -> pd.DataFrame:
        """The weight of every prompt in every replicate (``g, rep, w``; for checks)."""
        prompts = self._valid().select("g").distinct()
        reps = self.spark.range(int(replicates)).withColumnRenamed("id", "rep")
        return self._collect(prompts.crossJoin(reps).withColumn("w", self._draw(seed)))

    def close(self) -> None:
        """Nothing to release (the session belongs to the caller, or is reused)."""


def _same_headers(paths, sep: str) -> None:
    """Refuse CSV parts whose headers differ: Spark names every part's columns by position
    from one part's header, so a part with the columns in another order had been read with
    model_a and model_b swapped (verdicts flipped, silently)."""
    import csv
    import gzip

    first = None
    for path in paths:
        opener = gzip.open if str(path).lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            header = next(csv.reader(handle, delimiter=sep), None)
        if header is None:
            continue
        if first is None:
            first = (path, header)
        elif header != first[1]:
            raise DataError(f"{path}: its header {header} differs from that of {first[0]} "
                            f"{first[1]}; Spark reads every CSV part's columns by position: "
                            "write the parts with one header, or scan with engine='duckdb'")


def _without_stack(exc) -> str:
    """Spark's message without the Java stack trace (the lines ``at ...``) and the Py4J
    wrapper's line: what went wrong, not where in the JVM."""
    lines = [line.strip() for line in str(exc).splitlines()]
    kept = [line for line in lines if line and not line.startswith(("at ", "... "))
            and not line.startswith("An error occurred while calling")]
    return " ".join(dict.fromkeys(kept))[:1000] or str(exc)[:1000]


def _hive_root(paths) -> str:
    """The folder above the first ``column=value`` folder of the files (Spark's basePath)."""
    root = Path(os.path.commonpath([str(Path(p).parent) for p in paths]))
    while "=" in root.name:
        root = root.parent
    return str(root)
