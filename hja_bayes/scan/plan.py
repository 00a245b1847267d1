"""The engine-independent part of a scan: what to ask the engine, and what its answers mean.

A scan runs three passes in the engine, each a group-by whose answer is small:

1. the schema (no rows read): every named column must be there before any work;
2. the distinct verdicts, judges and models with their counts (:class:`Distinct`): the
   verdicts are read here by the readers' rules (:func:`~hja_bayes.scan.labels.classify`),
   names are checked, and the judges and models get their codes (sorted names);
3. the rows mapped to ``(judge, first, second, code)`` codes inside the engine (the verdict
   table joined, each verdict compared with the row's two model names) and counted per
   (cell, code), or per (prompt, cell, code) when the prompts are brought into memory.

Every row is counted in pass 3, so an error names its first row (file and line, or row
and row group) and says how many rows share it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..comparisons import Comparisons, aggregate_cells
from ..errors import DataError
from ..names import warn_near_duplicates
from ..readers import _warn_crowd, _warn_dropped
from ..row_keys import SINGLE_JUDGE
from ..verdicts import name_hint, numeric_hint
from .labels import (AMBIGUOUS, MISSING, SELF, UNKNOWN, BadVerdict, Verdicts, classify,
                     kind_meaning)

__all__ = ["Distinct", "Example", "Plan", "Spec", "run_scan"]


class Spec(NamedTuple):
    """The columns a scan reads.

    Attributes
    ----------
    judge : str or None
        None: one judge made every verdict (named ``"judge"``).
    model_a, model_b : str
    verdicts : tuple of str
        The verdict column, or the three one-hot columns.
    cluster : str or None
    """

    judge: str | None
    model_a: str
    model_b: str
    verdicts: tuple
    cluster: str | None

    def named(self) -> dict:
        """Role -> column, for messages."""
        out = {"judge": self.judge, "model_a": self.model_a, "model_b": self.model_b,
               "cluster": self.cluster}
        return {k: v for k, v in out.items() if v is not None}


class Plan(NamedTuple):
    """What the engine needs to map rows to codes.

    Attributes
    ----------
    spec : Spec
    verdicts : Verdicts
    judges, items : tuple of str
        The scan's judge and model names in code order (sorted).
    """

    spec: Spec
    verdicts: Verdicts
    judges: tuple
    items: tuple

    @property
    def n_categories(self) -> int:
        """C."""
        return self.verdicts.n_categories

    def judge_table(self) -> pd.DataFrame:
        """name -> k."""
        return pd.DataFrame({"name": list(self.judges), "k": np.arange(len(self.judges))})

    def item_table(self) -> pd.DataFrame:
        """name -> i."""
        return pd.DataFrame({"name": list(self.items), "i": np.arange(len(self.items))})

    def key(self, k, a, b, code):
        """The integer key of (judge, first, second, category) that score tables use."""
        n, C = len(self.items), self.n_categories
        return ((np.asarray(k, np.int64) * n + a) * n + b) * C + code


class Distinct(NamedTuple):
    """The answer of pass 2.

    Attributes
    ----------
    rows : int
    verdicts : DataFrame
        Distinct verdict keys ``v0`` (``v1``, ``v2``) as text, with their row counts ``n``.
    names : dict
        Role ("judge", "model_a", "model_b") -> DataFrame of distinct ``value`` (text or
        None for missing) and ``n``.
    cluster_missing : int
        Rows whose prompt is missing.
    """

    rows: int
    verdicts: pd.DataFrame
    names: dict
    cluster_missing: int


class Example(NamedTuple):
    """The first offending row, as the engine found it: where it is and what it holds.

    Attributes
    ----------
    file : str or None
        The first file (in sorted order) holding an offending row; None for a table.
    row : int or None
        Its row in that file (or table), 0-based, where the engine knows it.
    values : dict
        Column -> text of that row (of some offending row of the file when ``row`` is None).
    candidates : tuple of dict
        Where ``row`` is None: the distinct offending rows of the file, so that the file
        can be read from its start to the first of them.
    """

    file: str | None
    row: int | None
    values: dict
    candidates: tuple = ()


def where(example: Example, fmt: str | None) -> str:
    """The location of an example row in words: file and line, or row and row group."""
    from .locate import describe

    return describe(example, fmt)


def _such_rows(count: int) -> str:
    return "1 such row" if count == 1 else f"{count:,} such rows"


def _located(engine, condition, what: str, count: int | None = None) -> DataError:
    example = engine.example(condition)
    place = where(example, engine.format) if example is not None else "a row"
    tail = "" if count is None else f" ({_such_rows(count)} in all)"
    return DataError(f"{place}: {what}{tail}")


def _check_names(engine, spec: Spec, distinct: Distinct) -> None:
    for role, table in distinct.names.items():
        column = getattr(spec, role)
        missing = table["value"].isna().to_numpy()
        if missing.any():
            count = int(table["n"].to_numpy()[missing].sum())
            raise _located(engine, ("null", column),
                           f"column {column!r} has a missing value", count)
        empty = np.array([not str(v).strip() for v in table["value"]], dtype=bool)
        if empty.any():
            count = int(table["n"].to_numpy()[empty].sum())
            value = table["value"].to_numpy()[empty][0]
            raise _located(engine, ("equals", {column: value}),
                           f"empty name in column {column!r}", count)
    if distinct.cluster_missing:
        null = ("null", spec.cluster)  # else an empty text: the row shown is one of those
        raise _located(engine, null if engine.example(null) is not None
                       else ("equals", {spec.cluster: ""}),
                       f"column {spec.cluster!r} has a missing or empty value (every verdict "
                       "needs its prompt for cluster-robust intervals)", distinct.cluster_missing)


def make_plan(engine, spec: Spec, *, scale, invalid_labels) -> tuple[Plan, int]:
    """Pass 2: the distinct values, checked and read; returns the plan and the rows read."""
    distinct = engine.distinct()
    if distinct.rows == 0:
        raise DataError(f"{engine.describe()} holds no rows: no comparisons to read")
    _check_names(engine, spec, distinct)
    keys = distinct.verdicts
    try:
        verdicts = classify(keys.drop(columns="n"), keys["n"].to_numpy(), spec.verdicts,
                            scale=scale, invalid_labels=invalid_labels)
    except BadVerdict as bad:
        raise _located(engine, ("equals", bad.values), bad.message,
                       _rows_with(keys, bad.values, spec.verdicts)) from None
    judges = (SINGLE_JUDGE,) if spec.judge is None else \
        tuple(sorted(str(v) for v in distinct.names["judge"]["value"]))
    items = tuple(sorted({str(v) for role in ("model_a", "model_b")
                          for v in distinct.names[role]["value"]}))
    return Plan(spec, verdicts, judges, items), distinct.rows


def _rows_with(keys: pd.DataFrame, values: dict, columns: tuple) -> int:
    hit = np.ones(len(keys), dtype=bool)
    for p, c in enumerate(columns):
        hit &= keys[f"v{p}"].to_numpy(dtype=object) == values[c]
    return int(keys["n"].to_numpy()[hit].sum())


def _check_codes(engine, plan: Plan, grouped: pd.DataFrame) -> None:
    code, n = grouped["code"].to_numpy(), grouped["n"].to_numpy()
    spec = plan.spec
    for bad in (MISSING, SELF, AMBIGUOUS, UNKNOWN):
        hit = code == bad
        if not hit.any():
            continue
        count = int(n[hit].sum())
        example = engine.example(("code", bad))
        from .locate import locate

        # the values of the row the place names (the engine's example may be another)
        place, values = ("a row", {}) if example is None else locate(example, engine.format)
        a, b = values.get(spec.model_a), values.get(spec.model_b)
        verdict = values.get(spec.verdicts[0]) if len(spec.verdicts) == 1 else None
        if bad == MISSING:
            what = "a judge, model or prompt is missing"
        elif bad == SELF:
            what = (f"compares {a!r} with itself (a model against itself says nothing about "
                    "the ranking; drop the rows whose two models are the same)")
        elif bad == AMBIGUOUS:
            table = plan.verdicts.table
            kind = dict(zip(table["text"], table["kind"]))
            label = kind.get(verdict, 0)
            side = "first" if verdict == a else "second"
            names = sorted(t for t, k in kind.items() if k > 0 and t in set(plan.items))
            what = (f"the verdict {verdict!r} reads two ways: as the label for "
                    f"'{kind_meaning(label) if label else '?'}', and as the name of the model "
                    f"{verdict!r} shown {side} (so that it won). Models named like verdict "
                    f"labels ({names}): rename them, or give the verdicts as model_a / "
                    "model_b / tie")
        else:
            what = (f"winner {verdict!r} is neither 'model_a', 'model_b', a tie label, an "
                    f"invalid marker, nor one of the row's items ({a!r}, {b!r})"
                    + name_hint(verdict, (a, b)) + numeric_hint(verdict))
        raise DataError(f"{place}: {what}; {_such_rows(count)} in all (every row was read and "
                        "counted; nothing was fitted)")


def build(plan: Plan, grouped: pd.DataFrame, rows_read: int, *, clusters=None) -> Comparisons:
    """Comparisons from pass 3's counts per (cell, code) or (prompt, cell, code).

    ``clusters``: a handle for prompts kept in the engine (else the prompts, if any, are in
    ``grouped["g"]``).
    """
    C = plan.n_categories
    code = grouped["code"].to_numpy(dtype=np.int64)
    n = grouped["n"].to_numpy(dtype=np.int64)
    k_all = grouped["k"].to_numpy(dtype=np.int64)
    valid = (code >= 0) & (code < C)
    invalid = code >= C

    rejected, by_judge = {}, {}
    labels = plan.verdicts.invalid_labels
    for label_id, count in zip(*_sum_by(code[invalid] - C, n[invalid])):
        lab = labels[label_id]
        reason = "no verdict (empty or missing)" if not lab.strip() else \
            f"no usable verdict ({lab.strip().lower()!r})"
        rejected[reason] = rejected.get(reason, 0) + int(count)
    for k, count in zip(*_sum_by(k_all[invalid], n[invalid])):
        by_judge[plan.judges[k]] = int(count)

    used = np.unique(k_all[valid])
    if not valid.any():
        raise DataError(f"no valid rows: every verdict was rejected ({rejected})")
    a, b = grouped["a"].to_numpy(dtype=np.int64)[valid], grouped["b"].to_numpy(dtype=np.int64)[valid]
    item_used = np.unique(np.concatenate([a, b]))
    dropped = _warn_dropped(plan.judges, [plan.judges[k] for k in used], plan.items,
                            [plan.items[i] for i in item_used])
    item_index = np.full(len(plan.items), -1)
    item_index[item_used] = np.arange(len(item_used))
    judge_index = np.full(len(plan.judges), -1)
    judge_index[used] = np.arange(len(used))
    items = [plan.items[i] for i in item_used]
    judges = [plan.judges[k] for k in used]
    warn_near_duplicates(np.asarray(plan.items, dtype=object), "item")
    warn_near_duplicates(np.asarray(plan.judges, dtype=object), "judge")
    k = judge_index[k_all[valid]]
    weight = n[valid].astype(float)
    _warn_crowd(np.bincount(k, weights=weight, minlength=len(judges)), plan.spec.judge)
    counts = np.zeros((len(weight), C))
    counts[np.arange(len(weight)), code[valid]] = weight
    cluster = names = None
    if clusters is None and "g" in grouped:
        cluster, names = pd.factorize(grouped["g"].to_numpy(dtype=object)[valid], sort=True)
        names = tuple(str(x) for x in names)
    data = aggregate_cells(judges, items, k, item_index[a], item_index[b], counts,
                           categories=plan.verdicts.categories, rows_read=int(rows_read),
                           rows_used=int(weight.sum()), rejected=rejected,
                           dropped_judges=dropped, cluster=cluster, cluster_names=names,
                           rejected_by_judge=by_judge, cluster_column=plan.spec.cluster)
    if clusters is not None:
        from dataclasses import replace

        data = replace(data, clusters=clusters, cluster_column=plan.spec.cluster)
    return data


def _sum_by(keys: np.ndarray, weights: np.ndarray):
    if not len(keys):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse, weights=weights).astype(np.int64)


def run_scan(engine, spec: Spec, *, scale, invalid_labels, incidence: str,
             max_entries: int) -> Comparisons:
    """The three passes on ``engine``; see the module documentation."""
    plan, rows = make_plan(engine, spec, scale=scale, invalid_labels=invalid_labels)
    engine.prepare(plan)
    in_memory = spec.cluster is not None and (
        incidence == "memory" or (incidence == "auto" and rows <= max_entries))
    grouped = engine.aggregate(with_cluster=in_memory)
    _check_codes(engine, plan, grouped)
    handle = None
    if spec.cluster is not None and not in_memory:
        from .handle import EngineClusters

        handle = EngineClusters(engine, plan)
    return build(plan, grouped, rows, clusters=handle)
