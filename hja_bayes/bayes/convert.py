"""The layout of a Bayesian HJA posterior as an ArviZ ``InferenceData``: writing and reading.

:func:`to_inference_data` is the one place that decides the groups, variables, dimensions
and coordinates; the readers below (:func:`posterior_draws`, :func:`coordinate_names`,
:func:`posterior_cells`, :func:`posterior_units`, :func:`posterior_outcome`) are what the
checks use, so they need neither the data nor the sampler.  ArviZ is imported only when an
``InferenceData`` is built.

Groups
------
``posterior``
    Identified quantities: ``gamma (judge)``, ``mu (item)``, ``S (judge, item)``, and at
    rank r > 0 ``U (judge, component)``, ``V (item, component)``, ``D (component)`` (left
    out at rank 0, where they would be empty), ``beta (judge)`` with position bias.  With
    other linear terms also ``coef (judge, term)``, every per-judge coefficient column
    (``term`` labelled by the fit's ``coef_names``: "position", "self", "style:<feature>";
    0 where the design holds an entry), and ``theta (shared_term)``, the panel-wide ones.
    The outcome model's extra parameters on their natural scale, one variable per name,
    ``(judge)``: ``nu`` (Davidson ties; 0 for a judge held there), ``gap_1``, ``gap_2``
    (the five-level ordinal scale).
``log_likelihood``
    ``verdicts (comparison)``: the log-probability of every single comparison (one
    verdict), so that PSIS-LOO leaves out one verdict, not a whole cell.  The
    ``comparison`` dimension carries the coordinates ``comparison_judge``,
    ``comparison_first``, ``comparison_second``, ``comparison_outcome`` (the verdict's
    category: "first", "tie", "second", or the scale's label) and ``comparison_question``
    when the units are (question, cell) entries.  Left out when it would hold more than
    the pointwise limit of values (see :func:`~hja_bayes.bayes.sample_hja`);
    :func:`~hja_bayes.bayes.psis_loo` does not need it.
``posterior_predictive`` / ``observed_data``
    ``wins (cell)``: wins of the first-shown item per cell (every category on its side,
    the middle one counted 1/2); ``ties (cell)``, the middle category per cell, for an
    outcome model that predicts ties (Davidson, an odd ordinal scale); for a scale other
    than (first, tie, second), ``category_counts (judge, category)``, each judge's
    verdicts per category.
``constant_data``
    The cells: integer codes ``judge_of_cell``, ``first``, ``second`` and the counts ``n``,
    ``first_wins``, ``ties``, ``second_wins`` (the three-outcome view), ``counts (cell,
    category)`` for another scale; the ``cell`` dimension carries the labels
    ``cell_judge``, ``cell_first``, ``cell_second`` in every group.  With terms beyond the
    position bias, their design ``X (cell, term)`` and ``Xg (cell, shared_term)``.
    ``expected_wins (cell)``: the posterior mean of each cell's expected wins of the
    first-shown item (:func:`~hja_bayes.bayes.ppc.expected_wins`, averaged over the draws
    when the posterior was assembled; with integrated prompt effects computing it again
    means drawing every answer effect again), kept here because it has no chain or draw
    dimension, which ArviZ expects of every predictive variable (posteriors written before
    kept it in ``posterior_predictive``).
    When the likelihood's units are (question, cell) entries (prompt effects, or a term
    that varies by prompt: ``posterior.attrs["units"] == "entries"``), ``entry_cluster``,
    ``entry_cell``, ``entry_first_wins``, ``entry_ties``, ``entry_second_wins``,
    ``entry_counts``, ``entry_X``, ``entry_Xg`` likewise (dimension ``entry``), and with
    prompt effects ``entry_answer_first``, ``entry_answer_second``.
With prompt effects the posterior also holds ``alpha (answer)`` (one effect per (question,
model), labelled ``"question / model"``), ``tau (item)``, and the population-averaged
quantities ``mu_marginal (item)``, ``S_marginal (judge, item)`` and ``gamma_marginal
(judge)`` (the marginal scores' loadings on ``mu_marginal``): ``mu``, ``S`` and ``gamma``
are then conditional on answers of typical quality, see :mod:`hja_bayes.bayes.prompts`.
``sample_stats``
    ``diverging``, ``acceptance_rate``, ``n_steps``, ``tree_depth``, ``energy``, ``lp``,
    ``step_size``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..categories import THREE, collapse_counts
from ..errors import ParameterError
from ..likelihood import Cells, outcome_model

if TYPE_CHECKING:  # pragma: no cover
    import arviz as az

__all__ = ["IDENTIFIED", "Units", "coordinate_names", "import_arviz", "posterior_cells",
           "posterior_draws", "posterior_outcome", "posterior_units", "to_inference_data"]

def import_arviz():
    """ArviZ, without its notice about the 1.0 refactor (a FutureWarning on its first import,
    which every module here imports it through)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ 0.x announces its 1.0 refactor
        import arviz

    return arviz


#: Posterior variables holding identified quantities (U, V, D only at rank > 0, beta only
#: with position bias, coef and theta only with terms), besides the outcome model's
#: parameters (by their names).
IDENTIFIED = ("gamma", "mu", "U", "V", "D", "S", "beta", "coef", "theta")

_ENTRY = ("cluster", "cell", "first_wins", "ties", "second_wins", "answer_first",
          "answer_second")


class Units(NamedTuple):
    """The likelihood units of a posterior: cells, or (question, cell) entries.

    Attributes
    ----------
    cells : Cells
        One row per unit (judge, items, counts in the outcome model's categories, design).
    cell : ndarray of int
        The cell of each unit.
    prompt : (first, second) answer indices per unit, or None without prompt effects.
    """

    cells: Cells
    cell: np.ndarray
    prompt: tuple | None


def to_inference_data(
    *,
    posterior: dict[str, np.ndarray],
    data,
    replicated_wins: np.ndarray,
    replicated_ties: np.ndarray | None = None,
    replicated_categories: np.ndarray | None = None,
    expected_wins: np.ndarray | None = None,
    pointwise: np.ndarray | None,
    comparison_labels: dict | None,
    sample_stats: dict[str, np.ndarray],
    attrs: dict,
    answers=None,
    units: Units | None = None,
    outcome=None,
    term_names: tuple = ((), ()),
) -> "az.InferenceData":
    """Assemble the ``InferenceData`` of a posterior (see the module docstring for the layout).

    Parameters
    ----------
    posterior : dict name -> array (chain, draw, ...)
        Identified draws; empty U, V, D (rank 0) are dropped here.
    data : Comparisons
    replicated_wins : array (chain, draw, cells)
    replicated_ties : array (chain, draw, cells), optional
        Replicated middle-category counts: stored, with the observed ones, as ``ties``.
    replicated_categories : array (chain, draw, judges, C), optional
        Replicated per-judge category totals (a scale other than three outcomes).
    expected_wins : array (cells), optional
        Posterior mean of each cell's expected wins of the first-shown item.
    pointwise : array (chain, draw, comparisons) or None
        Log-likelihood of every comparison.
    comparison_labels : dict or None
        ``unit`` (cell or entry), ``cell`` and ``outcome`` (a category label) of every
        comparison.
    sample_stats : dict
    attrs : dict
        Stored as ``posterior.attrs``; ``attrs["units"]`` ("cells" or "entries") says which
        units ``units`` are.
    answers : Answers, optional
        With prompt effects (:func:`~hja_bayes.bayes.prompts.entry_answers` of ``data``).
    units : Units, optional
        The likelihood's units with their design and counts as the outcome model reads
        them (default: the data's cells, no terms).
    outcome : OutcomeModel, optional
        Default: "half".
    term_names : (names, global_names)
        The design's per-judge and panel-wide coefficient names.
    """
    az = import_arviz()

    outcome = outcome_model("half") if outcome is None else outcome
    judges, items = list(data.judges), list(data.items)
    names, global_names = (tuple(x) for x in term_names)
    posterior = {k: np.asarray(v) for k, v in posterior.items() if np.asarray(v).size}
    other_scale = tuple(outcome.categories) != THREE
    store_design = "coef" in posterior or bool(global_names)
    dims = {"gamma": ["judge"], "mu": ["item"], "U": ["judge", "component"],
            "V": ["item", "component"], "D": ["component"], "S": ["judge", "item"],
            "beta": ["judge"], "coef": ["judge", "term"], "theta": ["shared_term"],
            "wins": ["cell"], "judge_of_cell": ["cell"], "first": ["cell"], "second": ["cell"],
            "n": ["cell"], "first_wins": ["cell"], "ties": ["cell"], "second_wins": ["cell"],
            "counts": ["cell", "category"], "X": ["cell", "term"], "Xg": ["cell", "shared_term"],
            "category_counts": ["judge", "category"], "verdicts": ["comparison"],
            "alpha": ["answer"], "tau": ["item"], "mu_marginal": ["item"],
            "gamma_marginal": ["judge"], "S_marginal": ["judge", "item"],
            "entry_counts": ["entry", "category"], "entry_X": ["entry", "term"],
            "entry_Xg": ["entry", "shared_term"],
            **{f"entry_{x}": ["entry"] for x in _ENTRY},
            **{name: ["judge"] for name in outcome.aux_names}}
    rank = int(attrs["rank"])
    coords = {"judge": judges, "item": items, "cell": np.arange(data.n_cells),
              "term": list(names), "shared_term": list(global_names),
              "category": list(outcome.categories)}
    if rank:
        coords["component"] = list(range(rank))
    three = collapse_counts(data.counts)
    constant = {"judge_of_cell": np.asarray(data.judge), "first": np.asarray(data.first),
                "second": np.asarray(data.second), "n": np.asarray(data.n),
                "first_wins": three[:, 0], "ties": three[:, 1], "second_wins": three[:, 2]}
    if other_scale:
        constant["counts"] = np.asarray(data.counts, dtype=float)
    entries = attrs.get("units") == "entries"
    if units is not None and store_design:
        prefix = "entry_" if entries else ""
        constant[f"{prefix}X"] = np.asarray(units.cells.X, dtype=float)
        if global_names:
            constant[f"{prefix}Xg"] = np.asarray(units.cells.Xg, dtype=float)
    if entries:
        c = data.clusters
        coords["entry"] = np.arange(len(c.cell))
        ec = collapse_counts(c.counts)
        constant.update(entry_cluster=np.asarray(c.cluster), entry_cell=np.asarray(c.cell),
                        entry_first_wins=ec[:, 0], entry_ties=ec[:, 1],
                        entry_second_wins=ec[:, 2])
        if other_scale:
            constant["entry_counts"] = np.asarray(c.counts, dtype=float)
    if answers is not None:
        coords["answer"] = list(answers.labels)
        constant.update(entry_answer_first=answers.first, entry_answer_second=answers.second)
    groups = {}
    if pointwise is not None:
        groups["log_likelihood"] = {"verdicts": np.asarray(pointwise)}
        coords["comparison"] = np.arange(pointwise.shape[-1])
    predictive, observed = {"wins": np.asarray(replicated_wins)}, {"wins": np.asarray(data.wins)}
    if replicated_ties is not None:
        predictive["ties"], observed["ties"] = np.asarray(replicated_ties), three[:, 1]
    if replicated_categories is not None:
        predictive["category_counts"] = np.asarray(replicated_categories)
        observed["category_counts"] = np.stack(
            [np.bincount(data.judge, np.asarray(data.counts)[:, c], data.n_judges)
             for c in range(data.counts.shape[1])], axis=1)
    used = set(dims) & (set(posterior) | set(predictive) | set(constant))
    used_dims = {d for v in used for d in dims[v]} | {"cell"}
    coords = {k: v for k, v in coords.items() if k in used_dims or k in ("judge", "item")}
    idata = az.from_dict(
        posterior=posterior,
        posterior_predictive=predictive,
        observed_data=observed,
        constant_data=constant,
        sample_stats=sample_stats,
        coords=coords,
        dims=dims,
        posterior_attrs=attrs,
        **groups,
    )
    if expected_wins is not None:  # a posterior mean: no chain or draw dimension
        idata.constant_data["expected_wins"] = ("cell", np.asarray(expected_wins))
    _label(idata, data, pointwise, comparison_labels, entries)
    return idata


def _label(idata, data, pointwise, comparison_labels, entries: bool) -> None:
    """Name the cells in every group, and the comparisons of the log-likelihood."""
    judges, items = list(data.judges), list(data.items)
    cell_labels = {"cell_judge": ("cell", np.asarray(judges, dtype=object)[data.judge]),
                   "cell_first": ("cell", np.asarray(items, dtype=object)[data.first]),
                   "cell_second": ("cell", np.asarray(items, dtype=object)[data.second])}
    cell_labels = {k: (d, v.astype(str)) for k, (d, v) in cell_labels.items()}
    for name in ("posterior_predictive", "observed_data", "constant_data"):
        group = getattr(idata, name)
        here = {k: v for k, v in cell_labels.items() if "cell" in group.dims}
        setattr(idata, name, group.assign_coords(here))
    if pointwise is None:
        return
    c = np.asarray(comparison_labels["cell"])
    labels = {"comparison_judge": ("comparison", cell_labels["cell_judge"][1][c]),
              "comparison_first": ("comparison", cell_labels["cell_first"][1][c]),
              "comparison_second": ("comparison", cell_labels["cell_second"][1][c]),
              "comparison_outcome": ("comparison",
                                     np.asarray(comparison_labels["outcome"], str))}
    if entries:
        names = np.asarray(data.clusters.names, dtype=object).astype(str)
        entry_cluster = np.asarray(data.clusters.cluster)[comparison_labels["unit"]]
        labels["comparison_question"] = ("comparison", names[entry_cluster])
    idata.log_likelihood = idata.log_likelihood.assign_coords(labels)


# --------------------------------------------------------------------------- readers
def posterior_draws(idata, name: str, group: str = "posterior") -> np.ndarray:
    """Draws of ``name`` flattened over (chain, draw): shape (draws, ...)."""
    x = np.asarray(getattr(idata, group)[name])
    return x.reshape((-1,) + x.shape[2:])


def coordinate_names(idata, dim: str) -> list[str]:
    """Labels of a posterior dimension (``judge``, ``item``) as strings."""
    return [str(v) for v in idata.posterior[dim].values]


def posterior_outcome(idata):
    """The :class:`~hja_bayes.likelihood.OutcomeModel` a posterior was sampled with."""
    name = str(idata.posterior.attrs.get("outcome", "half"))
    c = idata.constant_data
    categories = ([str(x) for x in c["category"].values] if "category" in c.coords
                  else list(THREE))
    return outcome_model(name, tuple(categories))


def _counts(c, prefix: str, observed=None) -> np.ndarray:
    """Counts per category of the cells (``prefix`` "") or entries ("entry_")."""
    if f"{prefix}counts" in c:
        return np.asarray(c[f"{prefix}counts"], dtype=float)
    ties = np.asarray(c[f"{prefix}ties"], dtype=float)
    if f"{prefix}first_wins" in c:
        first = np.asarray(c[f"{prefix}first_wins"], dtype=float)
        second = np.asarray(c[f"{prefix}second_wins"], dtype=float)
    else:  # written before strict wins were stored: from the observed wins
        first = np.asarray(observed["wins"], dtype=float) - ties / 2
        second = np.asarray(c["n"], dtype=float) - first - ties
    return np.stack([first, ties, second], axis=-1)


def _units(idata, prefix: str, judge, first, second) -> Cells:
    """Units with their counts and design as stored (see the module docstring)."""
    c, post = idata.constant_data, idata.posterior
    counts = _counts(c, prefix, getattr(idata, "observed_data", None))
    m, K = len(judge), len(coordinate_names(idata, "judge"))
    if f"{prefix}X" in c:
        X = np.asarray(c[f"{prefix}X"], dtype=float)
    elif "beta" in post and "coef" not in post:
        X = np.ones((m, 1))  # the position bias alone
    else:
        X = np.zeros((m, 0))
    Xg = np.asarray(c[f"{prefix}Xg"], dtype=float) if f"{prefix}Xg" in c else np.zeros((m, 0))
    q, g = X.shape[1], Xg.shape[1]
    return Cells(np.asarray(judge), np.asarray(first), np.asarray(second), counts, X,
                 np.ones((K, q)), np.full(q, np.nan), Xg, np.full(g, np.nan))


def posterior_cells(idata) -> Cells:
    """The cells stored in ``constant_data`` (NumPy arrays), counts in the outcome model's
    categories; with the design when the cells are the likelihood's units.

    Posteriors written before strict wins were stored (``first_wins`` missing) get them
    from the observed wins: ``first_wins = wins - ties / 2``.
    """
    if not hasattr(idata, "posterior") or not hasattr(idata, "constant_data"):
        raise ParameterError(f"expected the InferenceData of sample_hja (posterior and "
                             f"constant_data groups), got {type(idata).__name__}")
    c = idata.constant_data
    judge, first, second = (np.asarray(c[v]) for v in ("judge_of_cell", "first", "second"))
    return _units(idata, "", judge, first, second)


def _entries(idata) -> bool:
    units = idata.posterior.attrs.get("units")
    if units is not None:
        return units == "entries"
    return "alpha" in idata.posterior and "entry_cell" in idata.constant_data


def posterior_units(idata) -> Units:
    """The units the posterior's likelihood is evaluated on (see :class:`Units`)."""
    cells = posterior_cells(idata)
    c = idata.constant_data
    if not _entries(idata):
        return Units(cells, np.arange(len(cells.judge)), None)
    cell = np.asarray(c["entry_cell"])
    units = _units(idata, "entry_", cells.judge[cell], cells.first[cell], cells.second[cell])
    prompt = None
    if "entry_answer_first" in c:
        prompt = (np.asarray(c["entry_answer_first"]), np.asarray(c["entry_answer_second"]))
    return Units(units, cell, prompt)
