"""Which prompt each asked-for verdict goes on (``next_comparisons(..., prompts=...)``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ParameterError

__all__ = ["PromptUse", "assign_prompts", "check_prompts"]


def check_prompts(prompts) -> list:
    """The prompt ids as a list: at least one, each named once (else a ParameterError)."""
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__iter__"):
        raise ParameterError(f"prompts must be a sequence of prompt ids, got {prompts!r}")
    prompts = list(prompts)
    if not prompts:
        raise ParameterError("prompts must hold at least one prompt")
    missing = [i for i, p in enumerate(prompts) if p is None or (isinstance(p, float) and p != p)]
    if missing:
        raise ParameterError(f"prompts holds {len(missing)} missing id(s) (None or NaN), first "
                             f"at position {missing[0]}")
    names = pd.Series(list(map(str, prompts)))
    twice = list(dict.fromkeys(names[names.duplicated()]))
    if twice:
        raise ParameterError(f"prompts must name each prompt once; named again: "
                             f"{twice[:5]}{' ...' if len(twice) > 5 else ''}")
    return prompts


class PromptUse:
    """Which prompts the fit's data used, per answer (model), per (unordered pair), per
    prompt and per (judge, ordered cell), for prompts named like the fit's clusters."""

    def __init__(self, fit, prompts):
        names = [str(p) for p in prompts]
        index = {p: i for i, p in enumerate(names)}
        self.G = len(names)
        self.per_prompt = np.zeros(self.G)
        self.per_answer = np.zeros((len(fit.items), self.G))
        self.per_pair: dict[tuple[int, int], np.ndarray] = {}
        self.per_cell: dict[tuple[int, int, int], np.ndarray] = {}
        c = fit.data.clusters
        if c is None:
            return
        data = fit.data
        for g, cell, n in zip(c.cluster, c.cell, c.n):
            p = index.get(str(c.names[g]))
            if p is None:
                continue
            k, i, j = int(data.judge[cell]), int(data.first[cell]), int(data.second[cell])
            self.add(k, i, j, p, n)

    def add(self, k, i, j, p, n=1):
        """Record n verdicts of judge k on (i first, j second) on the prompts p."""
        self.pair(i, j)[p] += n
        self.cell(k, i, j)[p] = True
        self.per_answer[i, p] += n
        self.per_answer[j, p] += n
        self.per_prompt[p] += n

    def pair(self, i, j) -> np.ndarray:
        """Verdicts on the pair (i, j), either order, per prompt: the fit's and those
        chosen so far."""
        return self.per_pair.setdefault((min(i, j), max(i, j)), np.zeros(self.G))

    def cell(self, k, i, j) -> np.ndarray:
        """Per prompt, whether judge k has judged (i first, j second) on it, in the fit's
        data or among those chosen so far."""
        return self.per_cell.setdefault((k, i, j), np.zeros(self.G, dtype=bool))

    def free(self, k, i, j) -> int:
        """Prompts judge k has not yet seen (i first, j second) on."""
        used = self.per_cell.get((k, i, j))
        return self.G if used is None else int(self.G - used.sum())


def assign_prompts(use: PromptUse, prompts, judge, first, second, seed: int) -> list:
    """A prompt for every new verdict: one this judge has not seen the two answers on in this
    order (a verdict is not repeated), then the one whose two answers were shown least (in
    the fit's data and the rows before), the pair's least used, the least used overall, and
    last a seeded order.  Verdicts that share an answer share its prompt effect: spreading
    the answers keeps a design that follows the estimates from asking again and again about
    the answers whose effects moved them (it does not restore the intervals' full coverage
    under such a design: see :func:`next_comparisons`).
    Consecutive rows of one (judge, pair) (a greedy step's block) are given prompts
    together."""
    key = np.random.default_rng(seed + 1).permutation(use.G)
    rows = np.column_stack([judge, first, second]).astype(np.int64)
    out = np.empty(len(rows), dtype=np.int64)
    start = 0
    while start < len(rows):
        k, i, j = rows[start]
        stop = start + 1
        while stop < len(rows) and rows[stop, 0] == k and \
                {rows[stop, 1], rows[stop, 2]} == {i, j}:
            stop += 1
        for a, b in ((i, j), (j, i)):
            at = np.flatnonzero((rows[start:stop, 1] == a) & (rows[start:stop, 2] == b)) + start
            if not len(at):
                continue
            seen = use.cell(int(k), int(a), int(b))
            shown = use.per_answer[a] + use.per_answer[b]
            order = np.lexsort((key, use.per_prompt, use.pair(int(a), int(b)), shown,
                                seen))[: len(at)]
            out[at] = order
            use.add(int(k), int(a), int(b), order)
        start = stop
    return [prompts[p] for p in out]
