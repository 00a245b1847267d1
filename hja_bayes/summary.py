"""What went into a :class:`~hja_bayes.comparisons.Comparisons`, what was left out and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .graphs import unbounded_items
from .position_locked import LOCKED_SHARE, first_shown_shares, locked_judges

__all__ = ["ComparisonSummary", "about", "count_of", "listed", "number", "summarise"]


def number(n: float) -> str:
    """A count as people write it: "2,000,000"; a weighted count keeps its fraction, "2.5"."""
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.2f}".rstrip("0").rstrip(".")


def about(x: float) -> str:
    """An expected count as people say it: "0.0031", "1.4", "160" (two significant digits,
    whole numbers from 10 on)."""
    return f"{x:.2g}" if abs(x) < 10 else f"{round(x, -len(str(int(abs(x)))) + 2):,.0f}"


def listed(names, most: int = 20) -> str:
    """The first ``most`` names joined by commas and a count of the rest: "a, b and 58 more"
    (a warning about 1,000 models should not name them all)."""
    names = [str(n) for n in names]
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def count_of(n: float, word: str) -> str:
    """"1 judge", "3 judges", "2,000,000 comparisons": a count with its noun."""
    return f"{number(n)} {word}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class ComparisonSummary:
    """What went into a :class:`Comparisons`, and what was left out and why.

    Attributes
    ----------
    n_judges, n_items, n_cells : int
        Sizes of the aggregated data.
    n_comparisons : float
        Total comparisons used (sum of cell counts).
    n_ties : float
        Ties among them (how a fit counts them is its outcome model's: half a win to each
        side by default, an outcome of their own under Davidson's model).
    rows_read, rows_used : int
        Rows in the input and rows that became comparisons (from counts: rows with n > 0).
    rejected : dict
        Reason -> number of rows not used.
    dropped_judges : tuple
        Judges whose every row was rejected.
    order_known : bool
        Whether cells keep the presentation order.
    one_orientation_only : bool
        True when every unordered pair appears in one presentation order only: position bias
        and order-specific disagreement cannot then be told apart.
    connected : bool
        Whether the pooled comparison graph over items is connected.
    disconnected_judges : tuple
        Judges whose own comparison graph does not connect all items.
    n_clusters : int
        Clusters (prompts, questions) the comparisons come from; 0 when none were given.
    comparisons_per_cluster : tuple of float
        Median and largest number of comparisons in one cluster (empty without clusters).
    categories : tuple of str
        The ordered verdict categories (three: first, tie, second; more for a strength scale).
    features : tuple of str
        Style features carried per (prompt, cell) entry.
    feature_transform : str
        How their differences were made (the unit of a style coefficient).
    cluster_column : str or None
        The column the clusters were read from, when known.
    effective_clusters : float
        ``(sum n_g)^2 / sum n_g^2`` over the clusters' comparison counts
        (:func:`~hja_bayes.clusters.effective_clusters`); 0 without clusters.
    comparisons_per_judge : tuple of float
        The fewest, median and most comparisons of a judge, where there are several judges
        (each judge's sensitivity rests on its own: see
        :mod:`~hja_bayes.inference.few_verdicts`); empty for one.
    first_shown_share : tuple of float
        The lowest, median and highest share of a judge's decided verdicts won by the
        first-shown answer (judges with enough of them; empty without presentation order).
    locked_judges : tuple of str
        Judges that chose one presentation slot in nearly every decided verdict, each with
        its slot and share (:func:`~hja_bayes.position_locked.locked_judges`).
    unbounded : tuple of str
        Models without a finite maximum-likelihood score: alone or as a group they won, or
        lost, every comparison with the rest (:func:`~hja_bayes.graphs.unbounded_items`).
    """

    n_judges: int
    n_items: int
    n_cells: int
    n_comparisons: float
    n_ties: float
    rows_read: int
    rows_used: int
    rejected: Mapping[str, int]
    dropped_judges: tuple[str, ...]
    order_known: bool
    one_orientation_only: bool
    connected: bool
    disconnected_judges: tuple[str, ...]
    n_clusters: int = 0
    comparisons_per_cluster: tuple[float, ...] = ()
    categories: tuple[str, ...] = ("first", "tie", "second")
    features: tuple[str, ...] = ()
    cluster_column: str | None = None
    effective_clusters: float = 0.0
    comparisons_per_judge: tuple[float, ...] = ()
    first_shown_share: tuple[float, ...] = ()
    locked_judges: tuple[str, ...] = ()
    feature_transform: str = ""
    unbounded: tuple[str, ...] = ()

    def __str__(self) -> str:
        three = tuple(self.categories) == ("first", "tie", "second")
        verdicts = (f"({count_of(self.n_ties, 'tie')})" if three else
                    f"(ordered verdicts on {len(self.categories)} levels: "
                    f"{' / '.join(self.categories)})")
        lines = [
            f"{count_of(self.n_judges, 'judge')}, {count_of(self.n_items, 'model')}, "
            f"{count_of(self.n_cells, 'cell')}, {count_of(self.n_comparisons, 'comparison')} "
            + verdicts,
            f"rows: {number(self.rows_read)} read, {number(self.rows_used)} used",
        ]
        for reason, count in self.rejected.items():
            lines.append(f"  rejected {count_of(count, 'row')}: {reason}")
        if self.dropped_judges:
            lines.append(f"judges with no valid rows (dropped): {', '.join(self.dropped_judges)}")
        if not self.order_known:
            lines.append("presentation order: not kept (folded)")
        elif self.one_orientation_only:
            lines.append(
                "presentation order: every pair is shown in one orientation only, so position "
                "bias and structured disagreement cannot be told apart"
            )
        if self.comparisons_per_judge:
            least, median, most = self.comparisons_per_judge
            lines.append(f"comparisons per judge: median {number(median)} ({number(least)} to "
                         f"{number(most)})")
        if self.first_shown_share:
            low, median, high = self.first_shown_share
            lines.append(f"first-shown answer's share of a judge's decided verdicts: median "
                         f"{median:.1%} ({low:.1%} to {high:.1%})")
        if self.locked_judges:
            lines.append(f"judges locked on one presentation slot (at least {LOCKED_SHARE:.0%} "
                         f"of decided verdicts): {', '.join(self.locked_judges)}")
        if self.n_clusters:
            median, largest = self.comparisons_per_cluster
            source = f" from column {self.cluster_column!r}" if self.cluster_column else ""
            lines.append(f"clusters{source}: {number(self.n_clusters)}, effective "
                         f"{self.effective_clusters:,.1f} (comparisons per cluster: median "
                         f"{number(median)}, largest {number(largest)}); intervals are "
                         "cluster-robust")
        if self.features:
            lines.append(f"style features per (prompt, cell): {', '.join(self.features)}"
                         + (f" ({self.feature_transform})" if self.feature_transform else ""))
        lines.append(f"pooled comparison graph: {'connected' if self.connected else 'DISCONNECTED'}")
        if self.unbounded and self.connected:
            lines.append(f"models that won or lost every comparison, alone or as a group (no "
                         f"finite maximum-likelihood score; the fit's ridge sets it): "
                         f"{listed(self.unbounded)}")
        if self.disconnected_judges:
            lines.append(
                "judges whose own graph is disconnected: " + ", ".join(self.disconnected_judges)
            )
        return "\n".join(lines)


def summarise(data) -> ComparisonSummary:
    """The :class:`ComparisonSummary` of a :class:`~hja_bayes.comparisons.Comparisons`."""
    from .clusters import effective_clusters

    c = data.clusters
    per_cluster = None if c is None else c.comparisons_per_cluster()
    if per_cluster is not None:  # prompts a selection of judges left empty hold none
        per_cluster = per_cluster[per_cluster > 0]
    per_judge = data.comparisons_per_judge()
    return ComparisonSummary(
        n_judges=data.n_judges,
        n_items=data.n_items,
        n_cells=data.n_cells,
        n_comparisons=data.n_comparisons,
        n_ties=float(data.ties.sum()),
        rows_read=data.rows_read,
        rows_used=data.rows_used,
        rejected=dict(data.rejected),
        dropped_judges=data.dropped_judges,
        order_known=data.order_known,
        one_orientation_only=data.one_orientation_only,
        connected=data.is_connected(),
        disconnected_judges=tuple(data.judges[k] for k in range(data.n_judges)
                                  if not data.is_connected(k)),
        n_clusters=0 if c is None else len(per_cluster),
        cluster_column=data.cluster_column,
        effective_clusters=0.0 if c is None else effective_clusters(per_cluster),
        comparisons_per_cluster=() if c is None else (float(np.median(per_cluster)),
                                                      float(per_cluster.max())),
        categories=data.categories, features=data.feature_names,
        feature_transform=data.feature_transform,
        comparisons_per_judge=() if data.n_judges < 2 else tuple(
            float(f(per_judge)) for f in (np.min, np.median, np.max)),
        first_shown_share=() if not len(shares := first_shown_shares(data)) else tuple(
            float(f(shares)) for f in (np.min, np.median, np.max)),
        locked_judges=tuple(map(str, locked_judges(data))),
        unbounded=tuple(data.items[i] for i in np.flatnonzero(unbounded_items(data))),
    )
