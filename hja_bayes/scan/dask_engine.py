"""The Dask engine: a Dask DataFrame (or files read into one), computed on its cluster.

The label mapping runs in the workers, partition by partition, as vectorised pandas: the
verdict table joined, each verdict compared with the row's model names
(:func:`~hja_bayes.scan.engine.code_of`).  Counts come back as one group-by.  For prompt
scores the valid rows are shuffled by prompt, so that each partition holds whole prompts;
each worker sums its prompts' scores and reduces them to a (dim x dim) matrix (with
per-judge and per-model prompt counts), and only those come back.  Whatever scheduler is active is used (a ``distributed.Client``
when one is running).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ..errors import DataError, ParameterError
from .engine import POISSON_CUTS, UNIFORM_BITS, code_of, long_table, text_columns
from .plan import Distinct, Example

__all__ = ["DaskEngine"]


def _texts(pdf: pd.DataFrame, spec) -> pd.DataFrame:
    out = {}
    for name, (column, missing) in text_columns(spec).items():
        if column is None:
            out[name] = np.full(len(pdf), "judge", dtype=object)
            continue
        values = pdf[column]
        na = values.isna().to_numpy()
        text = values.astype(str).to_numpy(dtype=object)
        out[name] = np.where(na, missing, text)
    frame = pd.DataFrame(out, index=pdf.index)
    if spec.cluster is None:
        frame["g"] = None
    frame["__file"] = pdf["__file"].astype(object) if "__file" in pdf else None
    frame["__row"] = pdf["__row"] if "__row" in pdf else None
    return frame


def _mapped(pdf: pd.DataFrame, spec, plan) -> pd.DataFrame:
    texts = _texts(pdf, spec)
    verdict = [f"v{p}" for p in range(len(spec.verdicts))]
    table = plan.verdicts.table.set_index(verdict)
    keys = pd.MultiIndex.from_frame(texts[verdict]) if len(verdict) > 1 else \
        pd.Index(texts["v0"])
    at = table.index.get_indexer(keys)
    found = at >= 0
    pick = np.where(found, at, 0)
    kind = np.where(found, table["kind"].to_numpy()[pick], 0)
    code = np.where(found, table["code"].to_numpy()[pick], -1)
    text = np.where(found, table["text"].to_numpy(dtype=object)[pick], None)
    judge_index = pd.Index(plan.judges)
    item_index = pd.Index(plan.items)
    k = judge_index.get_indexer(texts["jn"].to_numpy(dtype=object))
    a = item_index.get_indexer(texts["an"].to_numpy(dtype=object))
    b = item_index.get_indexer(texts["bn"].to_numpy(dtype=object))
    missing = (k < 0) | (a < 0) | (b < 0)
    if spec.cluster is not None:
        missing |= texts["g"].isna().to_numpy()
    texts["code"] = code_of(kind, code, text, texts["an"], texts["bn"], plan.verdicts.by_name,
                            plan.n_categories, missing)
    texts["k"], texts["a"], texts["b"] = k, a, b
    return texts


def _valid(pdf: pd.DataFrame, plan) -> pd.DataFrame:
    C = plan.n_categories
    code = pdf["code"].to_numpy()
    ok = (code >= 0) & (code < C)
    part = pdf.loc[ok, ["g", "k", "a", "b"]].copy()
    part["key"] = plan.key(part["k"].to_numpy(), part["a"].to_numpy(), part["b"].to_numpy(),
                           code[ok])
    return part


def _partition_meat(part: pd.DataFrame, table: pd.DataFrame, reduce):
    if not len(part):
        return None
    return reduce(long_table(part, table))


def _uniform(g: np.ndarray, seed: int, rep: int) -> np.ndarray:
    key = f"{seed % (1 << 32):08x}{rep % (1 << 32):08x}"
    h = pd.util.hash_array(np.asarray(g, dtype=object), hash_key=key, categorize=True)
    return (h >> np.uint64(64 - UNIFORM_BITS)).astype(float) / float(2 ** UNIFORM_BITS)


def _draw(u: np.ndarray) -> np.ndarray:
    return np.sum([u >= c for c in POISSON_CUTS], axis=0)


def _partition_poisson(part: pd.DataFrame, replicates: range, seed: int) -> pd.DataFrame:
    entries = part.groupby(["g", "key"], sort=False).size().reset_index(name="n")
    frames = []
    for rep in replicates:
        w = entries["n"].to_numpy() * _draw(_uniform(entries["g"].to_numpy(), seed, rep))
        frame = pd.DataFrame({"rep": rep, "key": entries["key"].to_numpy(), "w": w})
        frames.append(frame[frame["w"] > 0].groupby(["rep", "key"], as_index=False)["w"].sum())
    if not frames:
        return pd.DataFrame({"rep": [], "key": [], "w": []})
    return pd.concat(frames, ignore_index=True)


class DaskEngine:
    """Scan with Dask (``pip install "dask[dataframe,distributed]"``).

    Parameters
    ----------
    source : path, glob, folder, list of paths, or a Dask / pandas DataFrame
    spec : Spec
    npartitions : int, optional
        Partitions of the shuffle by prompt (default: the data's).
    """

    name = "dask"

    def __init__(self, source, spec, *, npartitions: int | None = None):
        try:
            import dask
            import dask.dataframe as dd
        except ImportError:
            raise ParameterError("engine='dask' needs Dask: pip install 'dask[dataframe]' "
                                 "(or hja_bayes[dask])") from None
        self.dask, self.dd = dask, dd
        self.spec = spec
        self.npartitions = npartitions
        self.files = None
        self.format = None
        self.plan = None
        self.src = self._source(source)

    def _source(self, source):
        dd = self.dd
        if isinstance(source, (str, os.PathLike, list, tuple)):
            from .files import resolve

            self.files = resolve(source)
            self.format = fmt = self.files.format
            paths = list(self.files.paths)
            try:
                if fmt == "parquet":
                    return (dd.from_map(_parquet_part, paths) if self.files.hive
                            else dd.read_parquet(paths))
                if fmt in ("csv", "tsv"):
                    frame = dd.read_csv(paths, dtype=str, keep_default_na=False,
                                        sep="\t" if fmt == "tsv" else ",",
                                        include_path_column="__file",
                                        blocksize=None if any(p.endswith(".gz") for p in paths)
                                        else "64MB")
                else:
                    frame = dd.read_json(paths, lines=fmt == "jsonl",
                                         include_path_column="__file", blocksize=None)
                if not self.files.hive:
                    return frame
                from .files import partition_values

                keys = list(dict.fromkeys(k for p in paths for k in partition_values(p)))
                meta = frame._meta.assign(**{k: pd.Series(dtype=object) for k in keys})
                return frame.map_partitions(_with_partitions, keys, meta=meta)
            except Exception as exc:  # noqa: BLE001 - the reader's own message is the point
                raise DataError(self._failed(exc)) from None
        if isinstance(source, pd.DataFrame):
            frame = source.reset_index(drop=True)
            frame["__row"] = np.arange(len(frame))
            return dd.from_pandas(frame, npartitions=max(1, min(8, len(frame) // 100_000 + 1)))
        if not isinstance(source, dd.DataFrame):
            raise DataError("engine='dask' scans a path, a glob, a folder, a list of paths or a "
                            f"Dask / pandas DataFrame, got {type(source).__name__}")
        return source

    def describe(self) -> str:
        """The source in a few words."""
        return "the table" if self.files is None else self.files.describe()

    def _compute(self, *things):
        try:
            return self.dask.compute(*things)
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - reading errors surface here, lazily
            raise DataError(self._failed(exc)) from None

    def _failed(self, exc) -> str:
        from .files import read_failure

        return read_failure(self.describe(), self.files, "Dask", exc,
                            ", its columns taken from the first: parts with other columns "
                            "or no rows can stop it")

    def columns(self) -> list[str]:
        """The source's columns (its metadata; no rows read)."""
        return [c for c in self.src.columns if c not in ("__file", "__row")]

    def distinct(self) -> Distinct:
        """Pass 2: distinct verdicts, judges and models (one computation)."""
        spec = self.spec
        texts = self.src.map_partitions(_texts, spec, meta=_texts(self.src._meta, spec))
        verdict = [f"v{p}" for p in range(len(spec.verdicts))]
        roles = [("judge", "jn"), ("model_a", "an"), ("model_b", "bn")]
        if spec.judge is None:
            roles = roles[1:]
        parts = [texts.groupby(verdict, dropna=False).size()]
        parts += [texts.groupby(c, dropna=False).size() for _, c in roles]
        no_prompt = texts["g"].fillna("").astype(str).str.strip() == ""  # missing, or ""
        parts += [no_prompt.sum(), texts.shape[0]]
        done = self._compute(*parts)
        verdicts = done[0].reset_index(name="n")
        names = {}
        for (role, column), counts in zip(roles, done[1:1 + len(roles)]):
            frame = counts.reset_index(name="n")
            values = frame[column].astype(object).where(frame[column].notna(), None)
            names[role] = pd.DataFrame({"value": values.to_numpy(), "n": frame["n"].to_numpy()})
        gnull = int(done[-2]) if spec.cluster is not None else 0
        return Distinct(int(done[-1]), verdicts, names, gnull)

    def prepare(self, plan) -> None:
        """The mapped rows, partition by partition in the workers."""
        self.plan = plan
        self.mapped = self.src.map_partitions(_mapped, self.spec, plan,
                                              meta=_mapped(self.src._meta, self.spec, plan))
        self.valid = self.mapped.map_partitions(_valid, plan, meta=_valid(
            _mapped(self.src._meta, self.spec, plan), plan))

    def aggregate(self, with_cluster: bool) -> pd.DataFrame:
        """Pass 3: rows per (k, a, b, code), and per prompt when ``with_cluster``."""
        keys = (["g"] if with_cluster else []) + ["k", "a", "b", "code"]
        (out,) = self._compute(self.mapped.groupby(keys, dropna=False).size())
        out = out.reset_index(name="n")
        C = self.plan.n_categories
        code = out["code"].to_numpy()
        self.valid_rows = int(out["n"].to_numpy()[(code >= 0) & (code < C)].sum())
        return out

    def example(self, condition):
        """One row matching ``condition`` (its file where Dask read one)."""
        kind, what = condition
        names = text_columns(self.spec)
        by_column = {column: name for name, (column, _) in names.items() if column is not None}

        def pick(pdf):
            if kind == "code":
                hit = pdf["code"].to_numpy() == int(what)
            elif kind == "null":
                hit = pdf[by_column[what]].isna().to_numpy()
            else:
                hit = np.ones(len(pdf), dtype=bool)
                for c, v in what.items():
                    col = pdf[by_column[c]]
                    hit &= col.isna().to_numpy() if v is None else (col == v).to_numpy()
            return pdf[hit].head(1)

        frame = self.mapped if self.plan is not None else self.src.map_partitions(
            _texts, self.spec, meta=_texts(self.src._meta, self.spec))
        cols = [n for n, (c, _) in names.items() if c is not None]
        matches = frame.map_partitions(pick, meta=frame._meta)[["__file", "__row", *cols]]
        (found,) = self._compute(matches.head(1000, npartitions=-1))
        if not len(found):
            return None
        files = found["__file"].dropna()
        first = str(files.astype(str).min()) if len(files) else None
        here = found[found["__file"].astype(str) == first] if first is not None else found
        rows = here["__row"].dropna()
        if len(rows):
            here = here[here["__row"] == rows.min()]
        row = here.iloc[0]
        candidates = ()
        if not len(rows) and first is not None:
            unique = here[cols].drop_duplicates()
            candidates = tuple({names[n][0]: r[n] for n in cols} for _, r in unique.iterrows())
        return Example(first, int(rows.min()) if len(rows) else None,
                       {names[n][0]: row[n] for n in cols}, candidates)

    def _valid_of(self, judges):
        rows = self.valid
        return rows if judges is None else rows[rows["k"].isin(list(judges))]

    def cluster_totals(self, judges=None) -> np.ndarray:
        """Valid comparisons per prompt (of the judges coded ``judges``; None: all)."""
        (out,) = self._compute(self._valid_of(judges).groupby("g").size())
        return out.to_numpy().astype(float)

    def cluster_names(self, judges=None) -> tuple:
        """The prompts with valid comparisons (of ``judges``), sorted."""
        (out,) = self._compute(self._valid_of(judges)["g"].unique())
        return tuple(sorted(str(x) for x in out))

    def prompt_scores(self, table: pd.DataFrame, reduce, rows_per_group=None):
        """The valid rows shuffled by prompt; each partition reduced in the workers."""
        delayed = self.dask.delayed
        shuffled = self.valid.shuffle(on="g", npartitions=self.npartitions,
                                      shuffle_method="tasks")
        table_ = delayed(table)
        reduce_ = delayed(reduce)
        parts = [delayed(_partition_meat)(p, table_, reduce_) for p in shuffled.to_delayed()]
        results = self._compute(*parts)
        results = [r for r in results if r is not None]
        return sum(results[1:], results[0]) if results else None

    def poisson(self, replicates: int, seed: int, start: int = 0) -> pd.DataFrame:
        """Poisson(1) weights per prompt and replicate, summed per replicate and row key."""
        reps = range(int(start), int(start) + int(replicates))
        meta = pd.DataFrame({"rep": pd.Series([], dtype="int64"),
                             "key": pd.Series([], dtype="int64"),
                             "w": pd.Series([], dtype="int64")})
        parts = self.valid.map_partitions(_partition_poisson, reps, int(seed), meta=meta)
        (out,) = self._compute(parts.groupby(["rep", "key"]).w.sum())
        return out.reset_index()

    def poisson_weights(self, replicates: int, seed: int) -> pd.DataFrame:
        """The weight of every prompt in every replicate (``g, rep, w``; for checks)."""
        (g,) = self._compute(self.valid["g"].unique())
        g = np.asarray(g, dtype=object)
        return pd.concat([pd.DataFrame({"g": g, "rep": rep,
                                        "w": _draw(_uniform(g, int(seed), rep))})
                          for rep in range(replicates)], ignore_index=True)

    def close(self) -> None:
        """Nothing to release (the cluster belongs to the caller)."""


def _parquet_part(path: str) -> pd.DataFrame:
    """One parquet file with its folders' ``column=value`` as text columns (Dask reads no
    partition column from a list of files, and would read judge=01 as 1)."""
    from .files import partition_values

    return pd.read_parquet(path).assign(**partition_values(path))


def _with_partitions(frame: pd.DataFrame, keys: list) -> pd.DataFrame:
    """Rows of text files with the ``column=value`` folders of their paths (``keys``) as
    text columns."""
    from .files import partition_values

    files = frame["__file"].astype(str)
    values = {f: partition_values(f) for f in files.unique()}
    return frame.assign(**{k: files.map(lambda f, k=k: values[f].get(k)).astype(object)
                           for k in keys})
