"""What every scan engine shares: the text of each column as the readers see it, the
mapping of rows to codes written once as data, and the Poisson weights.

An engine (:mod:`~hja_bayes.scan.duckdb_engine`, :mod:`~hja_bayes.scan.polars_engine`,
:mod:`~hja_bayes.scan.dask_engine`, :mod:`~hja_bayes.scan.spark_engine`) answers these
calls, each a pass over the rows whose answer is small:

``columns()``
    The source's columns, from its schema (no rows read).
``distinct()``
    :class:`~hja_bayes.scan.plan.Distinct`: the distinct verdicts, judges and models.
``prepare(plan)``
    Set up the mapped rows ``(g, k, a, b, code)``: the verdict table of the plan joined on
    the raw verdict, judges and models joined to their codes, and the code worked out by
    :data:`CODE_RULES` (the comparison of the verdict with the row's two models).
``aggregate(with_cluster)``
    Rows counted per ``(k, a, b, code)`` (and prompt ``g``).
``example(condition)``
    One row matching ``("null", column)``, ``("equals", {column: text})`` or
    ``("code", code)``, with its file and row where the engine knows them.
``cluster_totals(judges)``, ``cluster_names(judges)``
    Valid comparisons per prompt (an array of G numbers), and the prompts' names, of the
    judges coded ``judges`` (None: every judge).
``prompt_scores(table, reduce, rows_per_group)``
    The score tables joined to the valid rows, summed per (prompt, judge) and per (prompt,
    model) inside the engine; ``reduce`` turns each group of prompts' sums into a
    small vector (their (dim x dim) cross-product, and the prompts each judge and model
    appears on), and the engine returns their sum.
``poisson(replicates, seed)``
    Per replicate and row key, the rows weighted by Poisson(1) draws, one per prompt and
    replicate (a frame ``rep, key, w``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .labels import AMBIGUOUS, MISSING, SELF, UNKNOWN

__all__ = ["POISSON_CUTS", "long_table", "poisson_cuts", "text_columns"]


def poisson_cuts(tail: float = 1e-17) -> tuple[float, ...]:
    """Cumulative Poisson(1) probabilities F(0), F(1), ...: a uniform u gives the draw
    ``sum_k [u >= F(k)]`` (the inverse of the distribution function), to below ``tail``."""
    cuts, total, term, k = [], 0.0, math.exp(-1.0), 0
    while 1.0 - total > tail and k < 40:
        total += term
        cuts.append(total)
        k += 1
        term /= k
    return tuple(cuts)


#: The cumulative probabilities of Poisson(1) used by every engine's bootstrap weights.
POISSON_CUTS = poisson_cuts()
#: A uniform on [0, 1) from a 64-bit hash: its top 53 bits over 2**53.
UNIFORM_BITS = 53


def text_columns(spec) -> dict:
    """Mapped name -> (source column or None, how a missing value reads).

    ``jn``, ``an``, ``bn``: judge, first and second model names (None: missing);
    ``v0`` ..: the verdict(s) (a missing verdict reads ``""``, a missing one-hot flag
    ``"nan"``); ``g``: the prompt.  ``jn`` is the constant ``"judge"`` without a judge
    column.
    """
    out = {"jn": (spec.judge, None), "an": (spec.model_a, None), "bn": (spec.model_b, None)}
    missing = "" if len(spec.verdicts) == 1 else "nan"
    for p, column in enumerate(spec.verdicts):
        out[f"v{p}"] = (column, missing)
    if spec.cluster is not None:
        out["g"] = (spec.cluster, None)
    return out


def code_of(kind, code, text, an, bn, by_name: bool, C: int, missing_name):
    """The rules of :data:`CODE_RULES` on arrays (the pandas engines use it per partition).

    ``kind``, ``code``: the verdict table's columns joined to the rows (NaN where no row
    matched); ``text``: the verdict as read; ``an``, ``bn``: the model names;
    ``missing_name``: rows with a missing judge, model or prompt (or no code for them).
    """
    kind = np.nan_to_num(np.asarray(kind, dtype=float), nan=0).astype(np.int64)
    code = np.nan_to_num(np.asarray(code, dtype=float), nan=UNKNOWN).astype(np.int64)
    an, bn, text = (np.asarray(x, dtype=object) for x in (an, bn, text))
    if by_name:
        by = np.where(text == an, 1, np.where(text == bn, 2, 0))
    else:
        by = np.zeros(len(kind), dtype=np.int64)
    out = np.where(kind == 0, UNKNOWN, code)
    out = np.where(by == 2, C - 1, out)
    out = np.where(by == 1, 0, out)
    out = np.where((by > 0) & (kind > 0) & (kind != by), AMBIGUOUS, out)
    out = np.where(an == bn, SELF, out)
    return np.where(missing_name, MISSING, out)


#: The rules, in the order they apply (the first that holds gives the code); every engine
#: writes them in its own expressions, and :func:`code_of` on arrays.
CODE_RULES = (
    ("a judge, model or prompt is missing", MISSING),
    ("the row compares a model with itself", SELF),
    ("the verdict names one of the row's models and is a label of another meaning",
     AMBIGUOUS),
    ("the verdict names the first model: category 0", 0),
    ("the verdict names the second model: category C - 1", "C - 1"),
    ("the verdict is no known label", UNKNOWN),
    ("else the label's code", "code"),
)


def long_table(rows: pd.DataFrame, table: pd.DataFrame) -> dict:
    """Per-prompt score sums of some rows, computed with pandas (the Dask and Spark
    engines run this in their workers, on partitions that hold whole prompts).

    Parameters
    ----------
    rows : DataFrame
        ``g, k, a, b, key`` of valid rows.
    table : DataFrame
        ``key`` (sorted) and value columns ``v0 ..``.

    Returns
    -------
    dict
        ``gid`` (prompt, 0..), ``grp`` (0: per judge ``key = k``, 1: per first model
        ``key = a``, 2: per second model ``key = b``), ``key`` and ``values`` (n, w): the
        sums of the joined value columns, as the SQL engines return them.
    """
    keys = table["key"].to_numpy()
    values = table.drop(columns="key").to_numpy(dtype=float)
    w = values.shape[1]
    at = np.searchsorted(keys, rows["key"].to_numpy())
    at = np.minimum(at, len(keys) - 1)
    hit = keys[at] == rows["key"].to_numpy()
    gid, _ = pd.factorize(rows["g"].to_numpy()[hit], sort=True)
    per_row = values[at[hit]]
    out = {"gid": [], "grp": [], "key": [], "values": []}
    for grp, column in enumerate(("k", "a", "b")):
        key = rows[column].to_numpy()[hit].astype(np.int64)
        pair = gid.astype(np.int64) * (int(key.max(initial=0)) + 1) + key
        unique, inverse = np.unique(pair, return_inverse=True)
        sums = np.stack([np.bincount(inverse, per_row[:, c], len(unique)) for c in range(w)],
                        axis=1) if len(unique) else np.zeros((0, w))
        width = int(key.max(initial=0)) + 1
        out["gid"].append(unique // width)
        out["grp"].append(np.full(len(unique), grp))
        out["key"].append(unique % width)
        out["values"].append(sums)
    return {name: np.concatenate(parts) for name, parts in out.items()}
