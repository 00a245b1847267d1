"""The Polars engine: lazy frames, collected by Polars' streaming engine.

Files are scanned lazily (``scan_parquet``, ``scan_csv`` with every column as text,
``scan_ndjson``); a polars or pandas table in memory is wrapped as a lazy frame.  The label
mapping is a join with the verdict table and a ``when/then`` chain on the row's model
names; each pass is one lazy query.  Prompt scores over many rows are summed one group of
prompts at a time (a hash of the prompt picks the group), each group a streaming query
over the source.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from .engine import POISSON_CUTS, UNIFORM_BITS, text_columns
from .labels import AMBIGUOUS, MISSING, SELF, UNKNOWN
from .plan import Distinct, Example

__all__ = ["PolarsEngine"]

_HASH_SEED = 20_240_601


class PolarsEngine:
    """Scan with Polars (``pip install polars``).

    Parameters
    ----------
    source : path, glob, folder, list of paths, or a polars / pandas table
    spec : Spec
    rows_per_group : int
        Valid rows summed per group of prompts for the prompt scores.
    """

    name = "polars"

    def __init__(self, source, spec, *, rows_per_group: int = 2_000_000):
        try:
            import polars as pl
        except ImportError:
            raise ParameterError("engine='polars' needs Polars: pip install polars "
                                 "(or hja_bayes[polars])") from None
        self.pl = pl
        self.spec = spec
        self.rows_per_group = int(rows_per_group)
        self.files = None
        self.format = None
        self.plan = None
        self.src = self._source(source)

    def _source(self, source):
        pl = self.pl
        if isinstance(source, (str, os.PathLike, list, tuple)):
            from .files import resolve

            self.files = resolve(source)
            self.format = self.files.format
            paths = list(self.files.paths)
            if self.files.hive:  # the folders' columns, as text (Polars reads judge=01 as 1)
                from .files import partition_values

                lf = pl.concat([self._scan([p]).with_columns(
                    pl.lit(v, dtype=pl.String).alias(k) for k, v in partition_values(p).items())
                    for p in paths], how="diagonal_relaxed")
            else:
                lf = self._scan(paths)
            return lf.with_columns(__row=pl.lit(None, dtype=pl.Int64))
        if isinstance(source, pd.DataFrame):
            source = pl.from_pandas(source.reset_index(drop=True))
        if isinstance(source, pl.DataFrame):
            source = source.lazy()
        if not isinstance(source, pl.LazyFrame):
            raise DataError("engine='polars' scans a path, a glob, a folder, a list of paths or "
                            f"a polars / pandas table, got {type(source).__name__}")
        return source.with_row_index("__row").with_columns(
            pl.col("__row").cast(pl.Int64), __file=pl.lit(None, dtype=pl.Utf8))

    def _scan(self, paths):
        """The files (of the source's format) as one lazy frame, with their paths."""
        pl, fmt = self.pl, self.format
        if fmt == "parquet":
            return pl.scan_parquet(paths, include_file_paths="__file", hive_partitioning=False)
        if fmt in ("csv", "tsv"):
            lf = pl.scan_csv(paths, infer_schema=False, include_file_paths="__file",
                             separator="\t" if fmt == "tsv" else ",")
            # a blank line is a row of nulls here (the other readers skip it)
            return lf.filter(~pl.all_horizontal(pl.exclude("__file").is_null()))
        if fmt == "jsonl":
            return pl.scan_ndjson(paths, include_file_paths="__file")
        return pl.concat([pl.read_json(p).with_columns(__file=pl.lit(p)) for p in paths],
                         how="diagonal_relaxed").lazy()

    def describe(self) -> str:
        """The source in a few words."""
        return "the table" if self.files is None else self.files.describe()

    def _collect(self, lf):
        try:
            return lf.collect(engine="streaming")
        except self.pl.exceptions.PolarsError as exc:
            raise DataError(self._failed(exc)) from None

    def _failed(self, exc) -> str:
        from .files import read_failure

        return read_failure(self.describe(), self.files, "Polars", exc,
                            ": parts with other columns, another column order, other types "
                            "or no rows stop it")

    def columns(self) -> list[str]:
        """The source's columns (its schema; no rows read)."""
        try:
            names = self.src.collect_schema().names()
        except self.pl.exceptions.PolarsError as exc:
            raise DataError(self._failed(exc)) from None
        return [n for n in names if n not in ("__file", "__row")]

    # ---------------------------------------------------------------- passes
    def _texts(self):
        pl = self.pl
        exprs = []
        for name, (column, missing) in text_columns(self.spec).items():
            if column is None:
                exprs.append(pl.lit("judge").alias(name))
            else:
                e = pl.col(column).cast(pl.Utf8)
                exprs.append((e if missing is None else e.fill_null(missing)).alias(name))
        if self.spec.cluster is None:
            exprs.append(pl.lit(None, dtype=pl.Utf8).alias("g"))
        return self.src.select(*exprs, "__file", "__row")

    def distinct(self) -> Distinct:
        """Pass 2: distinct verdicts, judges and models."""
        pl = self.pl
        texts = self._texts()
        verdict = [f"v{p}" for p in range(len(self.spec.verdicts))]
        no_prompt = pl.col("g").is_null() | (pl.col("g").str.strip_chars() == "")  # or ""
        queries = [texts.group_by(verdict).len("n"),
                   texts.select(pl.len().alias("n"), no_prompt.sum().alias("gnull"))]
        roles = [("judge", "jn"), ("model_a", "an"), ("model_b", "bn")]
        if self.spec.judge is None:
            roles = roles[1:]
        queries += [texts.group_by(c).len("n") for _, c in roles]
        try:
            frames = pl.collect_all(queries, engine="streaming")
        except pl.exceptions.PolarsError as exc:
            raise DataError(f"{self.describe()}: Polars could not read it ({exc})") from None
        verdicts, total, *names = [f.to_pandas() for f in frames]
        out = {}
        for (role, column), frame in zip(roles, names):
            values = frame[column].astype(object).where(frame[column].notna(), None)
            out[role] = pd.DataFrame({"value": values.to_numpy(), "n": frame["n"].to_numpy()})
        gnull = int(total["gnull"].iloc[0]) if self.spec.cluster is not None else 0
        return Distinct(int(total["n"].iloc[0]), verdicts, out, gnull)

    def prepare(self, plan) -> None:
        """The mapped rows ``(g, k, a, b, code)`` as a lazy frame."""
        pl = self.pl
        self.plan = plan
        C = plan.n_categories
        table = pl.from_pandas(plan.verdicts.table.astype({"kind": "int64", "code": "int64"}))
        verdict = [f"v{p}" for p in range(len(plan.spec.verdicts))]
        judges = pl.from_pandas(plan.judge_table()).with_columns(pl.col("k").cast(pl.Int64))
        items = pl.from_pandas(plan.item_table()).with_columns(pl.col("i").cast(pl.Int64))
        lf = (self._texts().join(table.lazy(), on=verdict, how="left")
              .join(judges.lazy(), left_on="jn", right_on="name", how="left")
              .join(items.lazy().rename({"i": "a"}), left_on="an", right_on="name", how="left")
              .join(items.lazy().rename({"i": "b"}), left_on="bn", right_on="name", how="left"))
        kind = pl.col("kind").fill_null(0)
        missing = pl.col("k").is_null() | pl.col("a").is_null() | pl.col("b").is_null()
        if plan.spec.cluster is not None:
            missing = missing | pl.col("g").is_null()
        rule = pl.when(missing).then(MISSING).when(pl.col("an") == pl.col("bn")).then(SELF)
        if plan.verdicts.by_name:
            by = (pl.when(pl.col("text") == pl.col("an")).then(1)
                  .when(pl.col("text") == pl.col("bn")).then(2).otherwise(0))
            rule = (rule.when((by > 0) & (kind > 0) & (kind != by)).then(AMBIGUOUS)
                    .when(by == 1).then(0).when(by == 2).then(C - 1))
        code = rule.when(kind == 0).then(UNKNOWN).otherwise(pl.col("code"))
        self.mapped = lf.with_columns(code.cast(pl.Int64).alias("code"))

    def aggregate(self, with_cluster: bool) -> pd.DataFrame:
        """Pass 3: rows per (k, a, b, code), and per prompt when ``with_cluster``."""
        pl = self.pl
        keys = (["g"] if with_cluster else []) + ["k", "a", "b", "code"]
        out = self._collect(self.mapped.with_columns(pl.col(c).fill_null(-1)
                                                     for c in ("k", "a", "b"))
                            .group_by(keys).len("n")).to_pandas()
        C = self.plan.n_categories
        code = out["code"].to_numpy()
        self.valid_rows = int(out["n"].to_numpy()[(code >= 0) & (code < C)].sum())
        return out

    def example(self, condition):
        """One row matching ``condition``, with its file and row."""
        pl = self.pl
        kind, what = condition
        names = text_columns(self.spec)
        by_column = {column: name for name, (column, _) in names.items() if column is not None}
        if kind == "code":
            lf, cond = self.mapped, pl.col("code") == int(what)
        else:
            lf = self._texts()
            if kind == "null":
                cond = pl.col(by_column[what]).is_null()
            else:
                cond = pl.lit(True)
                for c, v in what.items():
                    cond = cond & (pl.col(by_column[c]).is_null() if v is None
                                   else pl.col(by_column[c]) == v)
        cols = [n for n, (c, _) in names.items() if c is not None]
        matches = lf.filter(cond)
        first = self._collect(matches.select(pl.col("__file").min()))["__file"][0]
        here = matches.filter(pl.col("__file").is_null() if first is None
                              else pl.col("__file") == first)
        found = self._collect(here.sort("__row", nulls_last=True).select("__row", *cols).head(1))
        if found.height == 0:
            return None
        number, *values = found.row(0)
        candidates = ()
        if number is None and first is not None:
            rows = self._collect(here.select(cols).unique().head(1000)).rows()
            candidates = tuple({names[n][0]: v for n, v in zip(cols, r)} for r in rows)
        return Example(first, None if number is None else int(number),
                       {names[n][0]: v for n, v in zip(cols, values)}, candidates)

    def _valid(self):
        pl = self.pl
        plan = self.plan
        n, C = len(plan.items), plan.n_categories
        key = ((pl.col("k") * n + pl.col("a")) * n + pl.col("b")) * C + pl.col("code")
        return (self.mapped.filter((pl.col("code") >= 0) & (pl.col("code") < C))
                .select("g", "k", "a", "b", key.alias("key")))

    def _valid_of(self, judges):
        rows = self._valid()
        return rows if judges is None else rows.filter(self.pl.col("k").is_in(list(judges)))

    def cluster_totals(self, judges=None) -> np.ndarray:
        """Valid comparisons per prompt (of the judges coded ``judges``; None: all)."""
        out = self._collect(self._valid_of(judges).group_by("g").len("n"))
        return out["n"].to_numpy().astype(float)

    def cluster_names(self, judges=None) -> tuple:
        """The prompts with valid comparisons (of ``judges``), sorted."""
        out = self._collect(self._valid_of(judges).select(self.pl.col("g").unique().sort()))
        return tuple(str(x) for x in out["g"].to_list())

    def prompt_scores(self, table: pd.DataFrame, reduce, rows_per_group: int | None = None):
        """Sum of ``reduce(long)`` over groups of prompts (each group one streaming query)."""
        pl = self.pl
        per_group = self.rows_per_group if rows_per_group is None else rows_per_group
        groups = max(1, math.ceil(getattr(self, "valid_rows", 0) / max(1, per_group)))
        scores = pl.from_pandas(table).lazy()
        values = [c for c in table.columns if c != "key"]
        total = None
        for part in range(groups):
            rows = self._valid()
            if groups > 1:
                rows = rows.filter(pl.col("g").hash(_HASH_SEED) % groups == part)
            joined = rows.join(scores, on="key", how="inner")
            sets = [joined.group_by("g", col).agg(pl.col(values).sum())
                    .select("g", pl.lit(grp, dtype=pl.Int64).alias("grp"),
                            pl.col(col).cast(pl.Int64).alias("key"), *values)
                    for grp, col in enumerate(("k", "a", "b"))]
            long = self._collect(pl.concat(sets).with_columns(
                (pl.col("g").rank("dense") - 1).cast(pl.Int64).alias("gid")))
            part_sum = reduce({"gid": long["gid"].to_numpy(), "grp": long["grp"].to_numpy(),
                               "key": long["key"].to_numpy(),
                               "values": long.select(values).to_numpy().astype(float)})
            total = part_sum if total is None else total + part_sum
        return total

    def _draw(self, rep: int, seed: int):
        pl = self.pl
        h = pl.col("g").hash(seed * 1_000_003 + rep)
        u = (h // (1 << (64 - UNIFORM_BITS))).cast(pl.Float64) / float(2 ** UNIFORM_BITS)
        return pl.sum_horizontal([(u >= c).cast(pl.Int64) for c in POISSON_CUTS])

    def poisson(self, replicates: int, seed: int, start: int = 0) -> pd.DataFrame:
        """Poisson(1) weights per prompt and replicate, summed per replicate and row key."""
        pl = self.pl
        entries = self._valid().group_by("g", "key").len("n")
        parts = [entries.select(pl.lit(rep, dtype=pl.Int64).alias("rep"), "key",
                                (pl.col("n") * self._draw(rep, seed)).alias("w"))
                 .filter(pl.col("w") > 0).group_by("rep", "key").agg(pl.col("w").sum())
                 for rep in range(start, start + replicates)]
        return self._collect(pl.concat(parts)).to_pandas()

    def poisson_weights(self, replicates: int, seed: int) -> pd.DataFrame:
        """The weight of every prompt in every replicate (``g, rep, w``; for checks)."""
        pl = self.pl
        prompts = self._valid().select(pl.col("g").unique())
        parts = [prompts.select("g", pl.lit(rep, dtype=pl.Int64).alias("rep"),
                                self._draw(rep, seed).alias("w")) for rep in range(replicates)]
        return self._collect(pl.concat(parts)).to_pandas()

    def close(self) -> None:
        """Nothing to release."""
