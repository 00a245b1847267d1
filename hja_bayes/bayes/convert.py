"""The layout of a Bayesian HJA posterior as an ArviZ ``InferenceData``: writing and reading.

:func:`to_inference_data` is the one place that decides the groups, variables, dimensions
and coordinates; the readers below (:func:`posterior_draws`, :func:`coordinate_names`,
:func:`posterior_cells`) are what the checks use, so they need neither the data nor the
sampler.  ArviZ is imported only when an ``InferenceData`` is built.

Groups
------
``posterior``
    Identified quantities: ``gamma (judge)``, ``mu (item)``, ``S (judge, item)``, and at
    rank r > 0 ``U (judge, component)``, ``V (item, component)``, ``D (component)`` (left
    out at rank 0, where they would be empty), ``beta (judge)`` with position bias,
    ``nu (judge)`` with Davidson ties (0 for a judge held there).
``log_likelihood``
    ``verdicts (comparison)``: the log-probability of every single comparison (one
    verdict), so that PSIS-LOO leaves out one verdict, not a whole cell.  The
    ``comparison`` dimension carries the coordinates ``comparison_judge``,
    ``comparison_first``, ``comparison_second``, ``comparison_outcome`` (and
    ``comparison_question`` with prompt effects).  Left out when
    it would hold more than the pointwise limit of values (see
    :func:`~hja_bayes.bayes.sample_hja`); :func:`~hja_bayes.bayes.psis_loo` does not need it.
``posterior_predictive`` / ``observed_data``
    ``wins (cell)``: wins of the first-shown item per cell, ties counted 1/2; with Davidson
    ties also ``ties (cell)``, the number of ties per cell.
``constant_data``
    The cells: integer codes ``judge_of_cell``, ``first``, ``second`` and the counts ``n``,
    ``first_wins``, ``ties``, ``second_wins``; the ``cell`` dimension carries the labels
    ``cell_judge``, ``cell_first``, ``cell_second`` in every group.
With prompt effects the posterior also holds ``alpha (answer)`` (one effect per (question,
model), labelled ``"question / model"``), ``tau (item)`` and ``mu_marginal (item)`` (the
population-averaged consensus; ``mu`` is then conditional on answers of typical quality,
see :mod:`hja_bayes.bayes.prompts`), and ``constant_data`` holds the
(question, cell) entries: ``entry_cluster``, ``entry_cell``, ``entry_first_wins``,
``entry_ties``, ``entry_second_wins``, ``entry_answer_first``, ``entry_answer_second``
(dimension ``entry``).
``sample_stats``
    ``diverging``, ``acceptance_rate``, ``n_steps``, ``tree_depth``, ``energy``, ``lp``,
    ``step_size``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..likelihood import Cells

if TYPE_CHECKING:  # pragma: no cover
    import arviz as az

__all__ = ["IDENTIFIED", "Units", "coordinate_names", "posterior_cells", "posterior_draws",
           "posterior_units", "to_inference_data"]

#: Posterior variables holding identified quantities (U, V, D only at rank > 0, beta only
#: with position bias).
IDENTIFIED = ("gamma", "mu", "U", "V", "D", "S", "beta", "nu")


def to_inference_data(
    *,
    posterior: dict[str, np.ndarray],
    data,
    replicated_wins: np.ndarray,
    replicated_ties: np.ndarray | None = None,
    pointwise: np.ndarray | None,
    comparison_labels: dict | None,
    sample_stats: dict[str, np.ndarray],
    attrs: dict,
    answers=None,
) -> "az.InferenceData":
    """Assemble the ``InferenceData`` of a posterior (see the module docstring for the layout).

    Parameters
    ----------
    posterior : dict name -> array (chain, draw, ...)
        Identified draws; empty U, V, D (rank 0) are dropped here.
    data : Comparisons
    replicated_wins : array (chain, draw, cells)
    replicated_ties : array (chain, draw, cells), optional
        Replicated ties (Davidson): stored, with the observed ties, as ``ties``.
    pointwise : array (chain, draw, comparisons) or None
        Log-likelihood of every comparison.
    comparison_labels : dict or None
        ``unit`` (cell or entry), ``cell`` and ``outcome`` (a name of
        :data:`~hja_bayes.bayes.predictive.OUTCOMES`) of every comparison.
    sample_stats : dict
    attrs : dict
        Stored as ``posterior.attrs``.
    answers : Answers, optional
        With prompt effects (:func:`~hja_bayes.bayes.prompts.entry_units` of ``data``).
    """
    import arviz as az

    judges, items = list(data.judges), list(data.items)
    posterior = {k: np.asarray(v) for k, v in posterior.items() if np.asarray(v).size}
    dims = {"gamma": ["judge"], "mu": ["item"], "U": ["judge", "component"],
            "V": ["item", "component"], "D": ["component"], "S": ["judge", "item"],
            "beta": ["judge"], "nu": ["judge"], "wins": ["cell"], "judge_of_cell": ["cell"], "first": ["cell"],
            "second": ["cell"], "n": ["cell"], "first_wins": ["cell"], "ties": ["cell"],
            "second_wins": ["cell"], "verdicts": ["comparison"], "alpha": ["answer"], "tau": ["item"],
            "mu_marginal": ["item"],
            **{f"entry_{x}": ["entry"] for x in ("cluster", "cell", "first_wins", "ties",
                                                 "second_wins", "answer_first", "answer_second")}}
    rank = int(attrs["rank"])
    coords = {"judge": judges, "item": items, "cell": np.arange(data.n_cells)}
    if rank:
        coords["component"] = list(range(rank))
    constant = {"judge_of_cell": np.asarray(data.judge), "first": np.asarray(data.first),
                "second": np.asarray(data.second), "n": np.asarray(data.n),
                "first_wins": np.asarray(data.first_wins), "ties": np.asarray(data.ties),
                "second_wins": np.asarray(data.second_wins)}
    if answers is not None:
        c = data.clusters
        coords["answer"] = list(answers.labels)
        coords["entry"] = np.arange(len(c.cell))
        constant.update(entry_cluster=np.asarray(c.cluster), entry_cell=np.asarray(c.cell),
                        entry_first_wins=np.asarray(c.first_wins),
                        entry_ties=np.asarray(c.ties),
                        entry_second_wins=np.asarray(c.second_wins),
                        entry_answer_first=answers.first, entry_answer_second=answers.second)
    groups = {}
    if pointwise is not None:
        groups["log_likelihood"] = {"verdicts": np.asarray(pointwise)}
        coords["comparison"] = np.arange(pointwise.shape[-1])
    predictive, observed = {"wins": np.asarray(replicated_wins)}, {"wins": np.asarray(data.wins)}
    if replicated_ties is not None:
        predictive["ties"], observed["ties"] = np.asarray(replicated_ties), np.asarray(data.ties)
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
    cell_labels = {"cell_judge": ("cell", np.asarray(judges, dtype=object)[data.judge]),
                   "cell_first": ("cell", np.asarray(items, dtype=object)[data.first]),
                   "cell_second": ("cell", np.asarray(items, dtype=object)[data.second])}
    cell_labels = {k: (d, v.astype(str)) for k, (d, v) in cell_labels.items()}
    for name in ("posterior_predictive", "observed_data", "constant_data"):
        setattr(idata, name, getattr(idata, name).assign_coords(cell_labels))
    if pointwise is not None:
        c = np.asarray(comparison_labels["cell"])
        labels = {"comparison_judge": ("comparison", cell_labels["cell_judge"][1][c]),
                  "comparison_first": ("comparison", cell_labels["cell_first"][1][c]),
                  "comparison_second": ("comparison", cell_labels["cell_second"][1][c]),
                  "comparison_outcome": ("comparison",
                                         np.asarray(comparison_labels["outcome"], str))}
        if answers is not None:
            names = np.asarray(data.clusters.names, dtype=object).astype(str)
            entry_cluster = np.asarray(data.clusters.cluster)[comparison_labels["unit"]]
            labels["comparison_question"] = ("comparison", names[entry_cluster])
        idata.log_likelihood = idata.log_likelihood.assign_coords(labels)
    return idata


# --------------------------------------------------------------------------- readers
def posterior_draws(idata, name: str, group: str = "posterior") -> np.ndarray:
    """Draws of ``name`` flattened over (chain, draw): shape (draws, ...)."""
    x = np.asarray(getattr(idata, group)[name])
    return x.reshape((-1,) + x.shape[2:])


def coordinate_names(idata, dim: str) -> list[str]:
    """Labels of a posterior dimension (``judge``, ``item``) as strings."""
    return [str(v) for v in idata.posterior[dim].values]


def posterior_cells(idata) -> Cells:
    """The cells stored in ``constant_data`` (NumPy arrays).

    Posteriors written before strict wins were stored (``first_wins`` missing) get them
    from the observed wins: ``first_wins = wins - ties / 2``.
    """
    c = idata.constant_data
    judge, first, second = (np.asarray(c[v]) for v in ("judge_of_cell", "first", "second"))
    n, ties = np.asarray(c["n"], dtype=float), np.asarray(c["ties"], dtype=float)
    if "first_wins" in c:
        first_wins = np.asarray(c["first_wins"], dtype=float)
    else:
        first_wins = np.asarray(idata.observed_data["wins"], dtype=float) - ties / 2
    return Cells(judge, first, second, first_wins, ties, n - first_wins - ties)


class Units(NamedTuple):
    """The likelihood units of a posterior: cells, or (question, cell) entries.

    Attributes
    ----------
    cells : Cells
        One row per unit (judge, items, counts).
    cell : ndarray of int
        The cell of each unit.
    prompt : (first, second) answer indices per unit, or None without prompt effects.
    """

    cells: Cells
    cell: np.ndarray
    prompt: tuple | None


def posterior_units(idata) -> Units:
    """The units the posterior's likelihood is evaluated on (see :class:`Units`)."""
    cells = posterior_cells(idata)
    c = idata.constant_data
    if "alpha" not in idata.posterior or "entry_cell" not in c:
        return Units(cells, np.arange(len(cells.judge)), None)
    cell = np.asarray(c["entry_cell"])
    units = Cells(cells.judge[cell], cells.first[cell], cells.second[cell],
                  *(np.asarray(c[f"entry_{x}"], dtype=float)
                    for x in ("first_wins", "ties", "second_wins")))
    return Units(units, cell, (np.asarray(c["entry_answer_first"]),
                               np.asarray(c["entry_answer_second"])))
