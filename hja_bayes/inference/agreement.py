"""How far the judges agree: Krippendorff's alpha, Cohen's kappa, agreement with a reference.

A *unit* is one (prompt, item shown first, item shown second): the same two answers to the
same prompt, in the same presentation order.  The *coders* are the judges; a coder's *value*
on a unit is its verdict, one of C ordered categories (first wins < tie < second wins for
the three-outcome verdicts; the order matters only to the ordinal alpha).

* Krippendorff's alpha (nominal and ordinal) for the whole panel, from the coincidence
  matrix of the values within each unit;
* Cohen's kappa for every pair of judges, over the units both coded;
* with a reference (one of the judges, or other votes such as human ones), each judge's
  accuracy (share of units on which its verdict is the reference's) and kappa against it.

Intervals come from a prompt-level bootstrap: whole prompts are resampled, since the
verdicts on one prompt are dependent.  Each statistic is a ratio of sums over prompts, so a
replicate costs one weighted sum of per-prompt tables (no refit, no pass over the rows).

Everything past :func:`_verdict_table` works on a generic C-category coding, so verdicts
on a finer ordered scale (e.g. five levels) need no change in the arithmetic.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..threads import one_blas_thread
from ..checks import check_choice, check_integer, check_level, index_of
from ..errors import DataError, DataWarning, ParameterError, warn
from .reliability import (accuracy_from_confusion, alpha_from_coincidences, cluster_bootstrap,
                          coincidences, kappa_from_confusion, squared_distances, sum_by)

__all__ = ["Agreement", "REPEATED", "accuracy_from_confusion", "agreement",
           "alpha_from_coincidences", "coincidences", "kappa_from_confusion",
           "squared_distances"]

#: How several verdicts of one judge on one unit count (see :func:`agreement`).
REPEATED = ("majority", "share")
#: Columns read as the prompt of each row when the reference is given as rows.
PROMPT_COLUMNS = ("question_id", "prompt_id", "conversation_id")
#: The name the readers give the only judge of data read with ``judge=None``.
_UNNAMED_JUDGE = "judge"
_NO_CLUSTERS = (
    "agreement needs to know which prompt each verdict is about: build the data with "
    "cluster=... (e.g. Comparisons.from_frame(df, cluster='question_id')). Without prompts a "
    "unit would be a (first, second) pair pooled over every prompt, and two judges' verdicts "
    "in it need not be about the same answers, so their agreement would not be measured")


class Agreement(NamedTuple):
    """Agreement statistics of a panel of judges (:func:`agreement`).

    Every table carries ``attrs["meta"]``: the level, the bootstrap (replicates, seed,
    prompts), what a unit is, the categories and how repeated verdicts were counted.

    Attributes
    ----------
    alpha : DataFrame
        Krippendorff's alpha of the panel, one row per level of measurement
        (``nominal``, ``ordinal``): ``alpha``, ``alpha_lower``, ``alpha_upper``, ``units``
        (units coded by at least two judges), ``values`` (the verdicts in those units),
        ``judges``.
    kappa : DataFrame
        Cohen's kappa of every pair of judges: ``judge_a``, ``judge_b``, ``units`` (coded by
        both), ``kappa``, ``kappa_lower``, ``kappa_upper``.
    reference : DataFrame or None
        With a reference: one row per judge (the reference judge itself left out) with
        ``units`` coded by both, ``accuracy``, ``kappa`` and their interval bounds.
    """

    alpha: pd.DataFrame
    kappa: pd.DataFrame
    reference: pd.DataFrame | None

    def kappa_matrix(self) -> pd.DataFrame:
        """Cohen's kappa as a square judges x judges table (1 on the diagonal).

        Returns
        -------
        DataFrame
            Symmetric; NaN where two judges share no unit or kappa is undefined.
        """
        judges = list(self.kappa.attrs["meta"]["judges"])
        out = pd.DataFrame(np.eye(len(judges)), index=judges, columns=judges)
        for a, b, k in self.kappa[["judge_a", "judge_b", "kappa"]].itertuples(index=False):
            out.loc[a, b] = out.loc[b, a] = k
        out.attrs["meta"] = dict(self.kappa.attrs["meta"])
        return out


@one_blas_thread
def agreement(data, *, reference=None, level: float = 0.95, n_boot: int = 1000,
              seed: int | None = 0, repeated: str = "majority") -> Agreement:
    """Krippendorff's alpha, Cohen's kappa and agreement with a reference, with intervals.

    Units are (prompt, item shown first, item shown second), coders are judges and values
    are verdicts (first wins / tie / second wins).  Krippendorff's alpha is computed from
    the coincidence matrix of the panel's values within units coded by at least two judges
    (nominal: any two different verdicts disagree equally; ordinal: a tie sits between the
    two wins).  Cohen's kappa (unweighted) compares two judges over the units both coded.
    Intervals are percentile intervals of a bootstrap that resamples whole prompts.

    Parameters
    ----------
    data : Comparisons
        Verdicts with their prompts (read with ``cluster=...``).
    reference : str, Comparisons or DataFrame, optional
        What each judge is compared with: the name of a judge in ``data``; or other votes
        on the same prompts and models (e.g. human ones), as a :class:`Comparisons` with
        clusters labelled like ``data``'s, or as rows (``model_a``, ``model_b``, ``winner``
        and a prompt column, one of ``question_id``, ``prompt_id``, ``conversation_id``).
        All of the reference's verdicts count as one coder, whatever judge made them; it
        is named after its judge when it has one named judge, else "reference votes".
    level : float
        Level of the intervals.
    n_boot : int
        Bootstrap replicates (0: no intervals).
    seed : int or None
        Seed of the bootstrap; None draws fresh entropy, recorded as ``meta["seed"]`` (pass
        it as ``seed`` to repeat the run).
    repeated : {"majority", "share"}
        What several verdicts of one judge (or of the reference) on one unit count as.
        ``"majority"``: the most frequent verdict; where two verdicts tie for most frequent
        the unit is left out for that judge (counted in ``meta["split"]``).  ``"share"``:
        fractions of one value (two first-wins and one tie count 2/3 and 1/3), i.e. the
        expected agreement of one verdict drawn at random from each judge's.  Either way a
        judge is one coder of a unit: its verdicts are never paired with each other, so
        self-consistency does not pass for agreement.  With one verdict per judge and unit
        (the usual case) both give the textbook statistics.

    Returns
    -------
    Agreement
        ``alpha``, ``kappa`` and (with a reference) ``reference`` tables.

    Raises
    ------
    DataError
        No prompts in ``data`` or the reference (see the message), fewer than two judges
        and no reference, or a reference sharing no unit with ``data``.
    ParameterError
        An unknown reference judge, a bad level, ``n_boot``, ``seed`` or ``repeated``.

    Notes
    -----
    Without prompts (data read without ``cluster=``) this is an error, not a fallback:
    a unit would then be a (first, second) pair pooled over all prompts, whose verdicts
    by two judges need not concern the same answers, and no prompt-level bootstrap exists.

    With both presentation orders judged, (q, i, j) and (q, j, i) are two units: a judge
    that favours the first-shown answer disagrees with one that does not.  After
    :meth:`Comparisons.fold_order` a unit is (prompt, pair) and "first" is the pair's
    first item in index order.

    Examples
    --------
    >>> import hja_bayes as hb
    >>> data, _ = hb.simulate(n_judges=3, n_items=4, comparisons_per_judge=240, questions=20,
    ...                       seed=0)
    >>> result = hb.agreement(data, reference=data.judges[0], n_boot=200)
    >>> list(result.alpha["measure"])
    ['nominal', 'ordinal']
    """
    from ..comparisons import Comparisons

    if not isinstance(data, Comparisons):
        raise ParameterError(f"agreement needs a Comparisons, got {type(data).__name__}")
    level = check_level(level)
    check_integer(n_boot, "n_boot")
    if seed is not None:
        check_integer(seed, "seed")
    repeated = check_choice(repeated, "repeated", REPEATED)
    reference_judge = None
    if isinstance(reference, str):
        reference_judge = data.judges[index_of(reference, data.judges, "judge")]
    elif reference is not None and not isinstance(reference, Comparisons):
        reference = _reference_from_rows(reference)
    if data.n_judges < 2 and reference is None:
        raise DataError("agreement needs at least two judges, or a reference to compare the "
                        f"judge with; the data have one ({data.judges[0]!r})")

    table, categories = _verdict_table(data)
    external = None
    if isinstance(reference, Comparisons):
        if not (data.order_known and reference.order_known):
            raise DataError("a reference of other votes needs the presentation order kept in "
                            "both (not folded with fold_order): folded units are oriented by "
                            "each data set's own item order, which need not match")
        external, ref_categories = _verdict_table(reference)
        if ref_categories != categories:
            raise DataError(f"the reference's verdict categories {list(ref_categories)} are "
                            f"not the data's {list(categories)}")
    coding = _coding(table, external, data.judges, len(categories), repeated)
    if external is not None and not coding.shared_with_reference:
        raise DataError(
            "the reference shares no (prompt, first, second) unit with the data: check that "
            "both label prompts alike (cluster=...) and name the models alike")

    entropy = np.random.SeedSequence(seed).entropy
    coders = [*data.judges, "\0reference"]  # the external reference is coder K

    def rng(*key):  # a stream per table and pair of coders, keyed by their names: a pair's
        # kappa is alike in every table and whatever the rest of the panel
        names = sorted(zlib.crc32(str(coders[c]).encode()) for c in key[1:])
        return np.random.default_rng(np.random.SeedSequence(entropy,
                                                            spawn_key=(key[0], *names)))

    judges = tuple(data.judges)
    base = {
        "level": level, "n_boot": int(n_boot), "seed": int(entropy),
        "interval": "percentile, bootstrap of prompts" if n_boot else "none",
        "unit": "(prompt, item shown first, item shown second)",
        "order_known": bool(data.order_known),
        "categories": list(categories), "repeated": repeated,
        "n_prompts": int(coding.n_clusters),
        "repeated_verdicts": int(coding.repeated[:len(judges)].sum()),
        "split": int(coding.split[:len(judges)].sum()),
        "hja_bayes_version": _version(),
    }
    alpha = _alpha_table(coding, len(judges), n_boot, level, rng, base)
    kappa = _kappa_table(coding, judges, n_boot, level, rng, base)
    ref_table = None
    if reference is not None:
        if reference_judge is not None:
            name, kind, against = reference_judge, "judge", judges.index(reference_judge)
        else:
            name, kind, against = _external_name(reference), "external", len(judges)
        ref_table = _reference_table(coding, judges, against, name, kind, n_boot, level, rng,
                                     base)
    _warn_undefined(alpha, kappa, ref_table)
    return Agreement(alpha, kappa, ref_table)


def _warn_undefined(alpha, kappa, reference) -> None:
    """A DataWarning naming the statistics left undefined (NaN): no unit coded twice (or by
    both of a pair), or one value throughout, where chance agreement is all there is."""
    undefined = alpha["alpha"].isna() & (alpha["judges"] >= 2)  # one judge: no alpha to ask
    said = [f"alpha ({m})" for m in alpha.loc[undefined, "measure"]]
    said += [f"kappa of {a} and {b}" + (" (no shared unit)" if n == 0 else "")
             for a, b, n in kappa.loc[kappa["kappa"].isna(), ["judge_a", "judge_b", "units"]]
             .itertuples(index=False)]
    if reference is not None:
        said += [f"kappa of {j} against the reference" + (" (no shared unit)" if n == 0 else "")
                 for j, n in reference.loc[reference["kappa"].isna(), ["judge", "units"]]
                 .itertuples(index=False)]
    if said:
        warn(f"agreement undefined (NaN) for {len(said)} statistic(s): {'; '.join(said[:6])}"
             + (" and more" if len(said) > 6 else "") + ": no unit coded by both, or a "
             "single value throughout, where agreement is no more than chance can give",
             DataWarning)


# ------------------------------------------------------------------------ data access
def _verdict_table(data) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The verdicts of ``data`` as a long table, and the ordered category labels.

    Columns ``prompt``, ``first``, ``second``, ``judge`` (names), ``category`` (index into
    the labels) and ``count`` (> 0), one row per (cluster, cell) entry and category.  The
    only function here that reads a Comparisons' counts and indices (the rest uses its
    names and ``order_known``).
    """
    clusters = data.clusters
    if clusters is None:
        raise DataError(_NO_CLUSTERS)
    categories = tuple(data.categories)
    counts = np.where(np.abs(clusters.counts) < 1e-9, 0.0, clusters.counts)
    entry, category = np.nonzero(counts > 0)
    cell = clusters.cell[entry]
    items, judges = np.asarray(data.items, dtype=object), np.asarray(data.judges, dtype=object)
    table = pd.DataFrame({
        "prompt": np.asarray(clusters.names, dtype=object)[clusters.cluster[entry]],
        "first": items[data.first[cell]],
        "second": items[data.second[cell]],
        "judge": judges[data.judge[cell]],
        "category": category.astype(np.int64),
        "count": counts[entry, category],
    })
    return table, categories


def _reference_from_rows(rows):
    """Reference votes given as rows: read with the first prompt column found."""
    from ..comparisons import Comparisons
    from ..sources import as_frame

    frame = as_frame(rows, "agreement(reference=...)")
    column = next((c for c in PROMPT_COLUMNS if c in frame.columns), None)
    if column is None:
        raise DataError(
            f"the reference rows have no prompt column (one of {list(PROMPT_COLUMNS)}); the "
            f"columns there are {list(frame.columns)}. Read them with "
            "Comparisons.from_frame(rows, judge=None, cluster=...) and pass that instead")
    return Comparisons.from_frame(frame, judge=None, cluster=column)


def _external_name(reference) -> str:
    if reference.n_judges == 1 and reference.judges[0] != _UNNAMED_JUDGE:
        return reference.judges[0]
    return "reference votes"


def _version() -> str:
    from ..version import __version__

    return __version__


# ---------------------------------------------------------------------------- coding
class _Coding(NamedTuple):
    """Values of every (unit, coder): coders 0..K-1 are the judges, K the external reference.

    ``weights`` (rows, C) sum to 1 in every row: one-hot for a single (or majority)
    verdict, fractions under ``repeated="share"``.  ``row_of[u, k]`` is the row of coder k
    on unit u (-1: none).  ``repeated[k]`` / ``split[k]``: units where coder k gave several
    verdicts / tied between verdicts (then left out).
    """

    unit: np.ndarray
    coder: np.ndarray
    weights: np.ndarray
    row_of: np.ndarray
    unit_cluster: np.ndarray
    n_units: int
    n_clusters: int
    repeated: np.ndarray
    split: np.ndarray
    shared_with_reference: bool


def _coding(table: pd.DataFrame, external: pd.DataFrame | None, judges, n_categories: int,
            repeated: str) -> _Coding:
    """Units, coders and values from the long verdict tables (data, and a reference);
    coder k is ``judges[k]``, coder ``len(judges)`` the external reference."""
    frames = [table.assign(coder=table["judge"].map({j: k for k, j in enumerate(judges)}))]
    shared = False
    if external is not None:
        keys = ["prompt", "first", "second"]
        in_data = pd.MultiIndex.from_frame(external[keys]).isin(
            pd.MultiIndex.from_frame(table[keys]))
        frames.append(external[in_data].assign(coder=len(judges)))
        shared = bool(in_data.any())
    rows = pd.concat(frames, ignore_index=True)
    cluster, _ = pd.factorize(rows["prompt"])
    unit, units = pd.factorize(pd.MultiIndex.from_frame(rows[["prompt", "first", "second"]]))
    pair, pairs = pd.factorize(unit.astype(np.int64) * (len(judges) + 1)
                               + rows["coder"].to_numpy(dtype=np.int64))
    counts = np.zeros((len(pairs), n_categories))
    np.add.at(counts, (pair, rows["category"].to_numpy()), rows["count"].to_numpy(dtype=float))
    pair_unit, pair_coder = pairs // (len(judges) + 1), pairs % (len(judges) + 1)
    unit_cluster = np.zeros(len(units), dtype=np.int64)
    unit_cluster[unit] = cluster

    totals = counts.sum(axis=1)
    if repeated == "share":
        weights, keep = counts / totals[:, None], np.ones(len(pairs), dtype=bool)
    else:
        at_top = np.isclose(counts, counts.max(axis=1, keepdims=True), rtol=1e-12, atol=1e-12)
        keep = at_top.sum(axis=1) == 1
        weights = at_top[keep].astype(float)
    n_coders = len(judges) + 1
    unit_of, coder_of = pair_unit[keep].astype(np.int64), pair_coder[keep].astype(np.int64)
    row_of = np.full((len(units), n_coders), -1, dtype=np.int64)
    row_of[unit_of, coder_of] = np.arange(len(unit_of))
    return _Coding(unit_of, coder_of, weights, row_of, unit_cluster, len(units),
                   int(cluster.max()) + 1,
                   np.bincount(pair_coder[totals > 1 + 1e-9], minlength=n_coders),
                   np.bincount(pair_coder[~keep], minlength=n_coders), shared)


# ---------------------------------------------------------------------------- tables
def _alpha_table(coding: _Coding, n_judges: int, n_boot, level, rng, base) -> pd.DataFrame:
    panel = coding.coder < n_judges
    unit, weights = coding.unit[panel], coding.weights[panel]
    per_unit = coincidences(unit, weights, coding.n_units)
    per_cluster = sum_by(coding.unit_cluster, per_unit, coding.n_clusters)

    def both(o):
        return np.stack([alpha_from_coincidences(o), alpha_from_coincidences(o, True)], -1)

    estimate, lower, upper = cluster_bootstrap(per_cluster, both, n_boot, level, rng(0),
                                               ("alpha (nominal)", "alpha (ordinal)"))
    m = np.bincount(unit, minlength=coding.n_units)
    out = pd.DataFrame({
        "measure": ["nominal", "ordinal"], "alpha": estimate, "alpha_lower": lower,
        "alpha_upper": upper, "units": int((m >= 2).sum()), "values": int(m[m >= 2].sum()),
        "judges": int(n_judges)})
    out.attrs["meta"] = {**base, "table": "agreement_alpha", "statistic": "Krippendorff's alpha",
                         "coders": "judges"}
    return out


def _confusion_by_cluster(coding: _Coding, a: int, b: int) -> tuple[np.ndarray, int]:
    """Per-cluster confusion tables (G, C, C) of coder ``a`` (rows) against coder ``b``,
    and the number of units both coded."""
    both = (coding.row_of[:, a] >= 0) & (coding.row_of[:, b] >= 0)
    wa, wb = coding.weights[coding.row_of[both, a]], coding.weights[coding.row_of[both, b]]
    per_cluster = sum_by(coding.unit_cluster[both], wa[:, :, None] * wb[:, None, :],
                          coding.n_clusters)
    return per_cluster, int(both.sum())


def _kappa_table(coding: _Coding, judges, n_boot, level, rng, base) -> pd.DataFrame:
    rows = []
    for a in range(len(judges)):
        for b in range(a + 1, len(judges)):
            per_cluster, units = _confusion_by_cluster(coding, a, b)
            estimate, lower, upper = cluster_bootstrap(
                per_cluster, lambda m: kappa_from_confusion(m)[..., None], n_boot, level,
                rng(1, a, b), (f"kappa of {judges[a]} and {judges[b]}",))
            rows.append((judges[a], judges[b], units, estimate[0], lower[0], upper[0]))
    out = pd.DataFrame(rows, columns=["judge_a", "judge_b", "units", "kappa", "kappa_lower",
                                      "kappa_upper"])
    out = out.astype({"units": np.int64, "kappa": float, "kappa_lower": float,
                      "kappa_upper": float})
    out.attrs["meta"] = {**base, "table": "agreement_kappa", "statistic": "Cohen's kappa",
                         "judges": list(judges)}
    return out


def _reference_table(coding: _Coding, judges, against: int, name: str, kind: str, n_boot,
                     level, rng, base) -> pd.DataFrame:
    def both(m):
        return np.stack([accuracy_from_confusion(m), kappa_from_confusion(m)], -1)

    rows = []
    for k, judge in enumerate(judges):
        if k == against:
            continue
        per_cluster, units = _confusion_by_cluster(coding, k, against)
        estimate, lower, upper = cluster_bootstrap(
            per_cluster, both, n_boot, level, rng(1, *sorted((k, against))),
            [f"{s} of {judge} against the reference" for s in ("accuracy", "kappa")])
        rows.append((judge, units, estimate[0], lower[0], upper[0],
                     estimate[1], lower[1], upper[1]))
    out = pd.DataFrame(rows, columns=["judge", "units", "accuracy", "accuracy_lower",
                                      "accuracy_upper", "kappa", "kappa_lower", "kappa_upper"])
    external = {} if kind == "judge" else {
        "reference_repeated_verdicts": int(coding.repeated[against]),
        "reference_split": int(coding.split[against])}
    out.attrs["meta"] = {**base, "table": "agreement_reference", "reference": name,
                         "reference_kind": kind, **external,
                         "statistic": "accuracy and Cohen's kappa against the reference"}
    return out
