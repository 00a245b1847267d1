"""Checks of the data before a fit, shared by the MAP solver and the Bayesian sampler."""

from __future__ import annotations

import numpy as np

from ..categories import collapse_counts
from ..checks import check_comparisons, check_flag
from ..comparisons import Comparisons
from ..errors import DataWarning, IdentifiabilityError, warn
from ..graphs import item_graph, unbounded_items
from ..likelihood import judge_totals
from ..likelihood.outcomes import deprecated_ties
from ..likelihood.terms import Position
from ..summary import listed

__all__ = ["LEFT_OUT_ON_REQUEST", "MIN_JUDGE_COMPARISONS", "check_fit_inputs", "deprecated_ties",
           "judges_to_leave_out", "separated_items", "separated_judges", "tie_only_judges",
           "warn_tie_only_judges", "without_interval"]

#: The reason ``fit.excluded_judges`` gives for a judge left out with ``leave_out=``.
LEFT_OUT_ON_REQUEST = "was left out on request"

#: Judges with fewer comparisons are left out of a fit by default: with so few verdicts their
#: score row is barely estimable, yet the consensus (the mean of the rows) weighs it like any
#: other judge's.  A single comparison moved PRD scores by up to 3.9 logits.
MIN_JUDGE_COMPARISONS = 10


def tie_only_judges(data: Comparisons) -> list[str]:
    """Judges whose every verdict is a tie (on an ordered scale: read as a tie when collapsed
    to three outcomes)."""
    three = collapse_counts(data.counts)
    decided = np.bincount(data.judge, three[:, 0] + three[:, 2], data.n_judges)
    return [data.judges[k] for k in np.flatnonzero(decided == 0)]


def warn_tie_only_judges(data: Comparisons, outcome: str) -> None:
    """A DataWarning naming the judges that tied every verdict, and what that does to the
    fit under ``outcome`` (the outcome model's name)."""
    judges = tie_only_judges(data)
    if not judges:
        return
    why = ("ties count half a win to each side, so their sensitivity gamma is 0 and its "
           "interval means nothing (a sandwich or cluster-robust one, made of residuals of 0, "
           "comes out of width about 0: the tables leave it blank)" if outcome == "half" else
           "their tie parameters have no finite maximum-likelihood value (the ridge sets "
           "them) and their sensitivity gamma is not identified, which widens every score's "
           "interval (the consensus is the mean of the judges' scores)")
    warn(f"judge(s) {judges} tied every verdict, which says nothing about which model is "
         f"better: {why}. Leave them out (leave_out=[...]; hja-bayes fit --leave-out JUDGE)",
         DataWarning)


def separated_judges(data: Comparisons) -> list[str]:
    """Judges whose verdicts all agree with one ordering of the items (MLE at infinity).

    A judge without ties is separated when the directed graph "a beat b at least once" has
    no cycle through all of its items, i.e. every strongly connected component is a single
    item.  A judge with a split cell (the same pair, shown alike, won by each side) has a
    cycle of two, so only the others' graphs are built.
    """
    from scipy.sparse.csgraph import connected_components

    out = []
    three = collapse_counts(data.counts)
    K = data.n_judges
    tied = np.bincount(data.judge, three[:, 1], K) > 0
    split = np.bincount(data.judge, (three[:, 0] > 0) & (three[:, 2] > 0), K) > 0
    for k, m in enumerate(data.cells_by_judge()):
        if tied[k] or split[k]:
            continue
        a = np.concatenate([data.first[m], data.second[m]])
        b = np.concatenate([data.second[m], data.first[m]])
        won = np.concatenate([three[m, 0], three[m, 2]]) > 0
        graph = item_graph(a[won], b[won], data.n_items)
        n_strong, _ = connected_components(graph, directed=True, connection="strong")
        if n_strong == data.n_items:
            out.append(data.judges[k])
    return out


def separated_items(data: Comparisons) -> list[str]:
    """Names of the items :func:`~hja_bayes.graphs.unbounded_items` marks."""
    return [data.items[i] for i in np.flatnonzero(unbounded_items(data))]


def judges_to_leave_out(data: Comparisons, position_bias: bool,
                        min_comparisons: int = MIN_JUDGE_COMPARISONS,
                        outcome: str = "half") -> dict[str, str]:
    """Judges a fit should leave out, with the reason.

    * fewer than ``min_comparisons`` comparisons while the median judge has at least ten
      times as many: too little to estimate the judge's row, which would still count fully
      in the consensus (a panel of uniformly small judges is left as it is);
    * with ``position_bias``: every verdict went to the same slot (no ties): beta_k is then
      infinite and the judge's verdicts carry no information about the models at all;
    * with ``position_bias`` and an outcome with a tie parameter of its own (``outcome``
      "davidson" or "ordinal"): every decided verdict went to the same slot, ties or middle
      grades aside: beta_k and the judge's tie parameter (nu_k, or its innermost cut gap)
      then grow without bound together, so the fit has no finite optimum (with ties that
      count half, as "half" does, it has one).
    """
    out = {}
    first, ties, second = judge_totals(data.judge, collapse_counts(data.counts), data.n_judges).T
    per_judge = first + ties + second
    typical = float(np.median(per_judge))
    for k, name in enumerate(data.judges):
        if per_judge[k] < min_comparisons and 10 * per_judge[k] <= typical:
            out[name] = (f"made only {per_judge[k]:g} comparison(s) (minimum {min_comparisons}; "
                         f"the median judge made {typical:g})")
        elif position_bias and ties[k] == 0 and (first[k] == 0 or second[k] == 0):
            slot = "first" if second[k] == 0 else "second"
            out[name] = (f"chose the {slot}-shown answer in all {per_judge[k]:g} comparisons: "
                         "its position bias is infinite and its verdicts say nothing about "
                         "the models")
        elif (position_bias and outcome in ("davidson", "ordinal") and first[k] + second[k] > 0
              and (first[k] == 0 or second[k] == 0)):
            slot = "first" if second[k] == 0 else "second"
            tie, middle = (("tie parameter nu", "ties") if outcome == "davidson" else
                           ("innermost cut gap", "middle grades"))
            out[name] = (f"chose the {slot}-shown answer in all {first[k] + second[k]:g} "
                         f"decided comparisons ({ties[k]:g} {middle} aside): with "
                         f"outcome={outcome!r} its position bias and its {tie} "
                         "grow without bound together (no finite fit; the ridge alone would set "
                         "them)")
    return out


def _unused(data: Comparisons) -> np.ndarray:
    """(judges, levels): the level and its mirror both unused by the judge."""
    used = np.zeros((data.n_judges, data.counts.shape[1]))
    np.add.at(used, data.judge, data.counts)
    return (used == 0) & (used[:, ::-1] == 0)


def unsupported_gaps(data: Comparisons) -> np.ndarray:
    """(judges, gaps) bool: the cut-point gaps of an ordered scale with no finite
    maximum-likelihood value for that judge (see :func:`unused_levels`).  The levels ``d``
    bands out from the middle lie beyond ``gap_{d+1}`` (the outermost ones beyond the last
    gap, which then runs to infinity)."""
    C = data.counts.shape[1]
    m = (C - 1) // 2
    out = np.zeros((data.n_judges, m), dtype=bool)
    if m == 0:  # two levels: no gap
        return out
    unused = _unused(data)[:, : C // 2 + C % 2]  # the first side and the middle
    band = np.minimum(np.arange(unused.shape[1])[::-1], m - 1)  # its gap index
    for level, gap in enumerate(band):
        out[:, gap] |= unused[:, level]
    return out


def without_interval(data: Comparisons, outcome) -> dict[str, np.ndarray]:
    """Per-judge quantity -> the judges (bool, (K,)) whose value the ridge alone sets, so
    that no interval is shown: ``gamma`` of a judge that tied every verdict, and an ordered
    scale's cut gaps beside unused levels (``outcome``: the fit's outcome model)."""
    out = {"gamma": np.isin(np.asarray(data.judges, dtype=object), tie_only_judges(data))}
    if outcome.name == "ordinal":
        out.update(zip(outcome.aux_names, unsupported_gaps(data).T))
    return out


def unused_levels(data: Comparisons) -> str | None:
    """What of an ordered scale the judges never used (a level and its mirror both: the
    symmetric cut points then have a gap with no finite maximum-likelihood value, infinite
    beside unused outer levels, 0 for unused inner ones, which the ridge alone sets, its
    interval meaning nothing), in words; None where every level or its mirror was used."""
    unused = _unused(data)
    if not unused.any():
        return None
    levels = np.asarray(data.categories, dtype=object)
    if unused.all(axis=0).any():
        said = (f"no judge used the level(s) {list(levels[unused.all(axis=0)])} (a scale "
                "declared wider than the data?)")
    else:
        said = "; ".join(f"{data.judges[k]!r} never used {list(levels[unused[k]])}"
                         for k in np.flatnonzero(unused.any(axis=1)))
    return (f"ordered verdicts: {said}: the cut-point gaps beside unused levels have no "
            "finite maximum-likelihood value, so the ridge alone sets them and their "
            "intervals mean nothing (the scores are little affected); numbers: declare the "
            "scale the data use (scale=, --verdict-scale); labels: fit the three outcomes "
            "(outcome='davidson', --outcome davidson)")


def warn_unused_levels(data: Comparisons) -> None:
    """A DataWarning saying :func:`unused_levels`, where it says anything."""
    said = unused_levels(data)
    if said:
        warn(said, DataWarning)


def check_fit_inputs(data, position_bias: bool) -> None:
    """Validate what every fitter needs: Comparisons, a connected graph, order for beta.

    Raises
    ------
    DataError
        When ``data`` is not a :class:`~hja_bayes.comparisons.Comparisons`.
    ParameterError
        When ``position_bias`` is not True, False or a
        :class:`~hja_bayes.likelihood.terms.Position` term (``"no"`` would read as true).
    DisconnectedGraphError
        When the pooled comparison graph is disconnected.
    IdentifiabilityError
        When position bias is asked for on folded data.

    Warns
    -----
    DataWarning
        For judges whose verdicts are perfectly separated, and for items that won or lost
        every comparison.
    """
    check_comparisons(data)
    if not isinstance(position_bias, Position):  # a Position term carries its own ridge
        check_flag(position_bias, "position_bias")
    data.check_connected()
    if position_bias and not data.order_known:
        raise IdentifiabilityError(
            "position bias needs the presentation order, but these comparisons were folded"
        )
    sep = separated_judges(data)
    if sep:
        warn(
            f"judge(s) {listed(sep)}: every verdict agrees with one ordering of the models (perfect "
            "separation), so their own maximum-likelihood scores are infinite; the ridge "
            "keeps them finite, and sets their scores as much as their verdicts do: where "
            "that ordering is the consensus's, read their sensitivity as 'at least this "
            "large'; where it is not, their sensitivity can come out anywhere, small included",
            DataWarning,
        )
    items = separated_items(data)
    if items:
        warn(
            f"item(s) {listed(items)} won or lost every comparison (alone, or as a group, against "
            "every other group: the verdicts do not join them to the rest by wins both "
            "ways): they have no finite maximum-likelihood score, so the ridge, not the "
            "data, sets their scores, and "
            "their intervals (rank intervals, Rank(UB) and p_better_next included) say "
            "nothing: Fisher's are set by the ridge, and sandwich or cluster-robust ones, made "
            "of their residuals near 0, come out too narrow (a few wins can look decisive); "
            "the other items' differences rest on their comparisons among themselves and can "
            "still be read",
            DataWarning,
        )
