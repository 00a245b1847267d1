"""The linear-predictor terms, one file each, and the design they make together.

A new term is one file here: a frozen object with ``name``, ``needs_entries`` (True when
its columns vary by prompt) and ``columns(data, units) -> TermColumns``.  :func:`design_of`
lays the terms of a fit out over the data's units (cells, or (prompt, cell) entries when a
term needs them); :func:`terms_of` reads a fit's keyword arguments.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ...errors import ParameterError
from .base import Design, TermColumns, Units
from .position import Position
from .self_preference import SelfPreference
from .style import STYLE_SCOPES, Style

__all__ = ["Design", "Position", "STYLE_SCOPES", "SelfPreference", "Style", "TermColumns",
           "Units", "design_of", "term_from_record", "term_record", "terms_of", "units_of"]


def terms_of(position_bias: bool = False, style=None, self_preference=None) -> tuple:
    """The term objects named by a fit's arguments (in a fixed order).

    ``style``: None (or False), "shared", "per_judge" or a :class:`Style`;
    ``self_preference``: None, False, True, a map judge -> model, or a
    :class:`SelfPreference`.
    """
    terms = []
    if position_bias:
        terms.append(position_bias if isinstance(position_bias, Position) else Position())
    if style is not None and style is not False:  # False as self_preference takes it
        if isinstance(style, str):
            style = Style(style)
        if not isinstance(style, Style):
            raise ParameterError(f"style must be None (or False), one of {list(STYLE_SCOPES)} "
                                 f"or a Style, got {style!r}")
        terms.append(style)
    if self_preference is not None and self_preference is not False:
        allowed = (SelfPreference, Mapping, list, tuple)  # a name had failed in an unpacking
        if self_preference is not True and not isinstance(self_preference, allowed):
            raise ParameterError("self_preference must be True (judges named like models), a "
                                 f"map {{judge: model}} or a SelfPreference, got "
                                 f"{self_preference!r}")
        terms.append(self_preference if isinstance(self_preference, SelfPreference)
                     else SelfPreference(self_preference))
    return tuple(terms)


def units_of(data, level: str = "cells") -> Units:
    """The data's cells, or their (prompt, cell) entries, as :class:`Units`."""
    if level == "cells":
        return Units(data.judge, data.first, data.second, data.counts,
                     np.arange(data.n_cells))
    c = data.clusters
    if c is None:
        raise ParameterError("entries need the data's prompts (read with cluster=...)")
    return Units(data.judge[c.cell], data.first[c.cell], data.second[c.cell], c.counts, c.cell,
                 c.cluster, c.features)


def design_of(data, terms=(), level: str | None = None) -> Design:
    """Lay ``terms`` out over the data's units.

    Parameters
    ----------
    data : Comparisons
    terms : sequence of term objects
    level : {"cells", "entries"}, optional
        Default: "entries" when a term needs them (its columns vary by prompt), else "cells",
        so a fit without such terms costs what it did without them.
    """
    if level is None:
        level = "entries" if any(t.needs_entries for t in terms) else "cells"
    for term in terms:  # what style control lacks (features, prompts) said in its words
        if isinstance(term, Style):
            term.selected(data)
    units = units_of(data, level)
    K, u = data.n_judges, units.size
    judge_cols, global_cols = [], []
    for term in terms:
        cols = term.columns(data, units)
        (global_cols if cols.free is None else judge_cols).append(cols)

    def stack(cols, with_free):
        names = tuple(n for c in cols for n in c.names)
        X = np.concatenate([c.values for c in cols], axis=1) if cols else np.zeros((u, 0))
        penalty = np.array([np.nan if c.penalty is None else c.penalty
                            for c in cols for _ in c.names], dtype=float)
        free = (np.concatenate([c.free for c in cols], axis=1) if cols
                else np.zeros((K, 0), dtype=bool)) if with_free else None
        return names, np.asarray(X, dtype=float), free, penalty

    names, X, free, penalty = stack(judge_cols, True)
    gnames, Xg, _, gpenalty = stack(global_cols, False)
    if len(set(names + gnames)) != len(names + gnames):
        raise ParameterError(f"two terms make columns of one name: {list(names + gnames)}")
    return Design(names, X, free, penalty, gnames, Xg, gpenalty, level)


def term_record(term) -> dict:
    """A term as plain JSON-able data (for saved fits and reports' metadata)."""
    if isinstance(term, Position):
        return {"term": "position", "ridge": term.ridge}
    if isinstance(term, Style):
        return {"term": "style", "scope": term.scope, "ridge": term.ridge,
                "features": None if term.features is None else list(term.features)}
    if isinstance(term, SelfPreference):
        owners = True if term.owners is True else [list(p) for p in term.owners]
        return {"term": "self", "owners": owners, "ridge": term.ridge}
    raise ParameterError(f"unknown term {term!r}")


def term_from_record(record: dict):
    """The term written by :func:`term_record`."""
    kind = record.get("term")
    if kind == "position":
        return Position(record.get("ridge"))
    if kind == "style":
        features = record.get("features")
        return Style(record["scope"], None if features is None else tuple(features),
                     record.get("ridge"))
    if kind == "self":
        owners = record["owners"]
        return SelfPreference(True if owners is True else {j: m for j, m in owners},
                              record.get("ridge"))
    raise ParameterError(f"unknown term record {record!r}")
