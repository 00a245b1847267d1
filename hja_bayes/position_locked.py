"""Judges locked on one presentation slot: verdicts that follow where an answer was shown.

Some LLM judges pick the first-shown answer (or the second) almost whatever the answers say.
Without a position-bias term such a judge's verdicts read as preferences; where every pair
of models is shown in one order only (both JA-Ranking files: the alphabetical order), they
rank the models in that order, and the consensus, in which every judge weighs the same, is
pulled toward it.  On MT-Bench one judge of 20 (``zai-org/GLM-4.5-Air-FP8``, the first-shown
answer in 99.8% of its decided verdicts) puts claude-v1 above gpt-4 at the top (rank 1
chosen by BIC) and alpaca-13b above vicuna-13b-v1.2, which 15 of the other 19 judges prefer
head to head; left out, or with ``position_bias=True`` (its slot preference then a term of
its own, beta_k = 5.1, and its gamma_k -0.08), both orders turn.  On Chatbot Arena the
same judge (99.2% first) puts RWKV-4-Raven-14B, which an ASCII sort shows first in all its
pairs, 5th of 20 instead of 15th.  On a pair it was shown in both orders, such a judge's
verdicts say next to nothing about the models; what the warning says follows the orders each
locked judge was shown, not the panel's.

A judge counts as locked when at least :data:`LOCKED_SHARE` of its decided verdicts (ties
aside, at least :data:`LOCKED_MIN_VERDICTS` of them) went to one slot.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .categories import collapse_counts
from .checks import check_comparisons
from .errors import DataWarning, warn

__all__ = ["LOCKED_MIN_VERDICTS", "LOCKED_SHARE", "LockedJudge", "first_shown_shares",
           "locked_judges", "locked_note", "slot_counts", "warn_locked_judges"]

#: Share of a judge's decided verdicts in one slot from which it counts as locked there.
LOCKED_SHARE = 0.95

#: Fewest decided verdicts on which a judge is called locked.
LOCKED_MIN_VERDICTS = 20


class LockedJudge(NamedTuple):
    """A judge whose decided verdicts went to one slot.

    Attributes
    ----------
    judge : str
    slot : {"first", "second"}
        The presentation slot its verdicts went to.
    share : float
        Share of its decided verdicts (ties aside) won by that slot.
    decided : float
        Its decided verdicts.
    one_order : float
        Share of its decided verdicts not offset by verdicts on the same pair shown the
        other way round (summed over pairs, ``|d_ab - d_ba| / decided``; 1 where it saw each
        pair in one order only): those rank the models in the order shown, while verdicts
        offset by the reverse order say next to nothing about the models.
    """

    judge: str
    slot: str
    share: float
    decided: float
    one_order: float = 1.0

    def __str__(self) -> str:
        return (f"{self.judge!r} (the {self.slot}-shown answer in {self.share:.1%} of "
                f"{self.decided:,.0f})")


def slot_counts(data) -> tuple[np.ndarray, np.ndarray]:
    """Each judge's decided verdicts won by the first-shown and by the second-shown answer
    (ties aside), shape (K,) each; ``data`` must keep the presentation order."""
    check_comparisons(data)
    three = collapse_counts(data.counts)
    K = data.n_judges
    return np.bincount(data.judge, three[:, 0], K), np.bincount(data.judge, three[:, 2], K)


def first_shown_shares(data) -> np.ndarray:
    """Each judge's share of decided verdicts won by the first-shown answer, over the judges
    with at least :data:`LOCKED_MIN_VERDICTS` decided verdicts (empty for folded data)."""
    check_comparisons(data)
    if not data.order_known:
        return np.zeros(0)
    first, second = slot_counts(data)
    enough = first + second >= LOCKED_MIN_VERDICTS
    return first[enough] / (first + second)[enough]


def locked_judges(data) -> list[LockedJudge]:
    """The judges of ``data`` whose decided verdicts went to one presentation slot.

    Parameters
    ----------
    data : Comparisons
        With the presentation order kept (folded data have no slots: none is returned).

    Returns
    -------
    list of LockedJudge
        In the data's judge order.

    Examples
    --------
    >>> import pandas as pd, hja_bayes as hb
    >>> rows = [("j", "a", "b", "model_a")] * 30 + [("j", "b", "c", "model_a")] * 30
    >>> data = hb.Comparisons.from_frame(pd.DataFrame(
    ...     rows, columns=["judge", "model_a", "model_b", "winner"]))
    >>> [str(j) for j in locked_judges(data)]
    ["'j' (the first-shown answer in 100.0% of 60)"]
    """
    check_comparisons(data)
    if not data.order_known:
        return []
    first, second = slot_counts(data)
    decided = first + second
    enough = np.flatnonzero(decided >= LOCKED_MIN_VERDICTS)
    locked = enough[np.maximum(first, second)[enough] / decided[enough] >= LOCKED_SHARE]
    if not len(locked):
        return []
    one_order = _one_order_decided(data) / np.maximum(decided, 1)
    out = []
    for k in locked:
        slot = "first" if first[k] >= second[k] else "second"
        out.append(LockedJudge(data.judges[k], slot, float(max(first[k], second[k]) / decided[k]),
                               float(decided[k]), float(one_order[k])))
    return out


def _one_order_decided(data) -> np.ndarray:
    """Each judge's decided verdicts not offset by the reverse order: over its pairs of
    models, ``|d_ab - d_ba|`` (decided verdicts with a shown first, with b shown first),
    summed, shape (K,)."""
    three = collapse_counts(data.counts)
    decided = three[:, 0] + three[:, 2]
    n = data.n_items
    low, high = np.minimum(data.first, data.second), np.maximum(data.first, data.second)
    pair = (np.asarray(data.judge, dtype=np.int64) * n + low) * n + high
    keys, at = np.unique(pair, return_inverse=True)
    net = np.bincount(at, np.where(data.first < data.second, decided, -decided), len(keys))
    return np.bincount(keys // (n * n), np.abs(net), data.n_judges)


def _consequence(data, locked) -> str:
    if data.one_orientation_only:
        return ("every pair of models is shown in one order only in these data, so their "
                "verdicts rank the models in the order they were shown, and the consensus, in "
                "which every judge weighs the same, is pulled toward that order")
    pulling = [j for j in locked if j.one_order > 0]
    if not pulling:
        return ("each of them was shown both orders of its pairs equally often, so their "
                "verdicts say next to nothing about the models")
    shares = ", ".join(f"{j.judge!r} {j.one_order:.0%}" if j.one_order >= 0.01
                       else f"{j.judge!r} under 1%" for j in pulling)
    return ("verdicts on pairs of models a judge was shown more often in one order than in "
            "the other rank the models in that order, and pull the consensus, in which every "
            "judge weighs the same, toward it (share of decided verdicts not offset by the "
            f"reverse order: {shares}); those offset by it say next to nothing about the models")


def warn_locked_judges(data) -> None:
    """A DataWarning naming the locked judges (:func:`locked_judges`) of a fit without
    position bias, what they do to it, and the two remedies."""
    locked = locked_judges(data)
    if not locked:
        return
    warn(f"{len(locked)} judge(s) chose one presentation slot in nearly every decided verdict "
         f"(at least {LOCKED_SHARE:.0%}): {', '.join(map(str, locked))}; "
         f"{_consequence(data, locked)}. Fit with position bias "
         "(position_bias=True; hja-bayes fit --position-bias), which gives each judge's slot "
         "preference a term of its own, or leave them out (leave_out=[...]; hja-bayes fit "
         "--leave-out JUDGE)",
         DataWarning)


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def locked_note(data) -> str | None:
    """The report's note of :func:`warn_locked_judges` (None where no judge is locked)."""
    locked = locked_judges(data)
    if not locked:
        return None
    return (f"Judges that chose one presentation slot in nearly every decided verdict (at least "
            f"{LOCKED_SHARE:.0%}): {', '.join(map(str, locked))}. "
            f"{_capitalized(_consequence(data, locked))}. This fit has no position "
            "bias term: fit with one ('hja-bayes fit --position-bias') or leave these judges "
            "out ('--leave-out JUDGE').")
