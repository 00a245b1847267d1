"""Logs beyond memory: aggregate judgments into cells inside a query engine.

:func:`scan` (``Comparisons.scan``) reads files far larger than memory, or a distributed
table, and returns the same :class:`~hja_bayes.comparisons.Comparisons` as
:meth:`~hja_bayes.comparisons.Comparisons.from_frame` would: same label rules, same
counts, same cluster incidence.  The rows never reach Python: the engine groups them into
cells (a few counts per (judge, first, second)), and the label mapping runs inside it (see
:mod:`hja_bayes.scan.plan`).

Engines: ``"duckdb"`` (embedded, the default; streams under ``memory_limit``),
``"polars"`` (lazy frames, streaming), ``"dask"`` and ``"spark"`` (a cluster's dataframe or
a path).  Each is an optional dependency: ``pip install hja_bayes[duckdb]`` (or
``[polars]``, ``[dask]``, ``[spark]``).

When the prompts are known (``cluster=``) and the rows are too many for their (prompt,
cell) incidence to come into memory, the incidence stays in the engine
(:class:`~hja_bayes.scan.handle.EngineClusters`): cluster-robust intervals then sum each
prompt's score contributions in the engine, and the prompt bootstrap draws Poisson
weights there.
"""

from __future__ import annotations

from typing import Iterable

from ..checks import check_choice
from ..errors import ParameterError
from ..verdicts import INVALID_LABELS
from .labels import check_columns, check_scale_argument, verdict_columns
from .plan import Spec, run_scan

__all__ = ["ENGINES", "INCIDENCE", "engine_for", "scan", "scan_columns"]

#: The engines :func:`scan` knows.
ENGINES = ("duckdb", "polars", "dask", "spark")
#: Where the (prompt, cell) incidence goes: chosen by size, in memory, or in the engine.
INCIDENCE = ("auto", "memory", "engine")
#: ``incidence="auto"`` brings the incidence into memory up to this many rows.
MAX_ENTRIES = 2_000_000


def _engine(engine: str, source, spec: Spec, options: dict):
    if engine == "duckdb":
        from .duckdb_engine import DuckDBEngine

        return DuckDBEngine(source, spec, **options)
    if engine == "polars":
        from .polars_engine import PolarsEngine

        return PolarsEngine(source, spec, **options)
    if engine == "dask":
        from .dask_engine import DaskEngine

        return DaskEngine(source, spec, **options)
    from .spark_engine import SparkEngine

    return SparkEngine(source, spec, **options)


#: The engine a table's own library implies (by the top-level package of its type).
_ENGINE_OF_LIBRARY = {"polars": "polars", "dask": "dask", "dask_expr": "dask", "pyspark": "spark"}


def engine_for(source) -> str:
    """The engine :func:`scan` uses without ``engine=``: a Polars, Dask or Spark table's
    own, DuckDB for paths and pandas or Arrow tables."""
    return _ENGINE_OF_LIBRARY.get(type(source).__module__.partition(".")[0], "duckdb")


_OPTIONS = {"duckdb": ("memory_limit", "temp_directory", "threads", "rows_per_group"),
            "polars": ("rows_per_group",), "dask": ("npartitions",),
            "spark": ("session", "partitions")}


def scan(source, *, engine: str | None = None, judge: str | None = "judge",
         model_a: str = "model_a", model_b: str = "model_b", winner: str = "winner",
         cluster: str | None = None, scale=None,
         invalid_labels: Iterable[str] = INVALID_LABELS, incidence: str = "auto",
         max_entries: int = MAX_ENTRIES, **options):
    """Aggregate judgments into cells inside a query engine.

    Parameters
    ----------
    source : path, glob, folder, list of paths, or a table
        Files of one format, read by the engine: parquet, CSV (every column read as text),
        TSV, JSON Lines, a JSON array; gzipped text too.  A glob (``logs/*.parquet``,
        ``logs/**/*.csv``), a folder (every such file below it; hive-partitioned folders
        ``judge=gpt4/`` add their columns) or a list of these.  Or a table the engine
        holds: a pandas / Arrow / polars table (DuckDB, polars), a Dask DataFrame, a Spark
        DataFrame.
    engine : {"duckdb", "polars", "dask", "spark"}, optional
        Default: the table's own library's for a Polars (lazy or not), Dask or Spark table,
        DuckDB for paths and for pandas or Arrow tables (:func:`engine_for`).
    judge, model_a, model_b, winner, cluster, scale, invalid_labels
        As in :func:`hja_bayes.readers.read_frame`, with the same label rules (the
        one-hot columns when ``winner`` is absent, Arena-Hard's ordered labels, a numeric
        ``scale``).
    incidence : {"auto", "memory", "engine"}
        With ``cluster``: bring the (prompt, cell) incidence into memory (as ``from_frame``
        does), or keep it in the engine (see :class:`~hja_bayes.scan.handle.EngineClusters`).
        "auto": in memory up to ``max_entries`` rows read.
    max_entries : int
    **options
        Engine options.  DuckDB: ``memory_limit`` (default ``"1GB"``), ``temp_directory``,
        ``threads``, ``rows_per_group`` (valid rows whose prompt scores are summed at once:
        beyond it the valid rows are first written to disk partitioned by prompt).  Polars:
        ``rows_per_group`` (each group of prompts is one query).  Dask: ``npartitions`` (of the prompt
        shuffle).  Spark: ``session`` (default: the active one, else a local one),
        ``partitions``.

    Returns
    -------
    Comparisons
        Judges and models in sorted order (``from_frame`` keeps their first appearance);
        the same cells, counts, rejected rows and warnings.

    Raises
    ------
    DataError
        Before any row is read: a missing column (the message lists the columns there).
        After the scan: a missing or empty name, a self-comparison, a verdict that no rule
        reads or that reads two ways; the message names the first such row (file and
        line for CSV and JSON Lines, row and row group for parquet) and counts all of them.
        Anything the engine cannot read, with the engine's own message.
    ParameterError
        An unknown engine, an engine that is not installed, an unknown option.

    Examples
    --------
    >>> import pandas as pd
    >>> from hja_bayes.scan import scan
    >>> df = pd.DataFrame({"judge": ["j1", "j1", "j2"], "model_a": ["x", "y", "x"],
    ...                    "model_b": ["y", "x", "y"], "winner": ["model_a", "tie", "y"]})
    >>> scan(df)
    Comparisons(2 judges, 2 models, 3 cells, 3 comparisons)
    """
    if "features" in options:
        raise ParameterError("scan does not read style features yet: read the rows with "
                             "Comparisons.from_frame(..., features=) (in memory)")
    engine = check_choice(engine_for(source) if engine is None else engine, "engine", ENGINES)
    incidence = check_choice(incidence, "incidence", INCIDENCE)
    unknown = sorted(set(options) - set(_OPTIONS[engine]))
    if unknown:
        raise ParameterError(f"unknown option(s) {unknown} for engine={engine!r}; it takes "
                             f"{list(_OPTIONS[engine])}")
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0:
        raise ParameterError(f"max_entries must be an integer >= 0, got {max_entries!r}")
    check_scale_argument(scale)
    eng = _engine(engine, source, Spec(judge, model_a, model_b, (winner,), cluster), options)
    keep = False
    try:
        columns = eng.columns()
        spec = Spec(judge, model_a, model_b, verdict_columns(columns, winner), cluster)
        check_columns(columns, {"judge": judge, "model_a": model_a, "model_b": model_b,
                                "cluster": cluster, **{c: c for c in spec.verdicts}})
        eng.spec = spec
        data = run_scan(eng, spec, scale=scale, invalid_labels=invalid_labels,
                        incidence=incidence, max_entries=max_entries)
        keep = getattr(data.clusters, "in_engine", False)
        return data
    finally:
        if not keep:
            eng.close()


def scan_columns(source, *, engine: str | None = None) -> list[str]:
    """The columns a :func:`scan` of ``source`` would see (the engine reads the schema, no
    rows); the same ``source`` and ``engine`` as :func:`scan`."""
    engine = check_choice(engine_for(source) if engine is None else engine, "engine", ENGINES)
    eng = _engine(engine, source, None, {})
    try:
        return eng.columns()
    finally:
        eng.close()
