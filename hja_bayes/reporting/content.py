"""What a report says: its tables, figures, notes, sentences, captions and glossary.

:func:`build_report` gathers everything into a :class:`Report` without writing anything;
the renderers (:mod:`~hja_bayes.reporting.html`, :mod:`~hja_bayes.reporting.markdown`)
and the writer (:mod:`~hja_bayes.reporting.files`) only lay it out.  Nothing here is
estimated: the numbers come from the tables, the sentences read them.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from ..checks import check_flag, check_level
from ..hja.inputs import unused_levels
from ..inference import WaldInference
from ..inference.clusters import FEW_CLUSTERS, models_on_few_prompts
from ..inference.few_verdicts import few_verdicts_note
from ..position_locked import locked_judges, locked_note
from .biases import bias_plot, bias_table
from .convergence import convergence_table
from .judge_plots import judge_map
from .judges import judge_table
from .fitted import check_fit, is_hja, wald
from .leaderboard import leaderboard
from .observed import battle_counts, observed_win_fraction
from .pairwise import pairwise_table
from .plots import (
    forest_plot,
    observed_heatmap,
    residual_heatmap,
    win_probability_heatmap,
)
from .posterior_plots import posterior_predictive_plot, rank_posterior_plot
from .notes import report_notes
from .scales import Scale, check_scale
from .sentences import (
    agreement_sentence,
    biases_sentence,
    captions,
    clusters_note,
    convergence_sentence,
    default_title,
    disagreement_sentence,
    glance_sentence,
    judges_sentence,
    prompt_method_sentence,
)

__all__ = ["PAIRWISE_FILE_MODELS", "Report", "build_report"]

#: Above this many models a report leaves the pairwise table (every ordered pair, N(N - 1)
#: rows) out of its folder unless asked for: at 1,000 models its CSV and JSON held 378 MB
#: and two thirds of a 43 s report; ``pairwise_table(fit)`` gives it in a process.
PAIRWISE_FILE_MODELS = 300


class Report(NamedTuple):
    """Everything a report shows, before it is written anywhere.

    Attributes
    ----------
    title : str
    leaderboard, judges, pairwise : DataFrame
        The tables (see :func:`~hja_bayes.reporting.leaderboard`,
        :func:`~hja_bayes.reporting.judge_table`, :func:`~hja_bayes.reporting.pairwise_table`).
    rank_table : DataFrame or None
        Rank-selection criteria, when the rank was selected.
    intervals : DataFrame or None
        Wald against credible intervals (:func:`hja_bayes.compare_intervals`), with a
        posterior.
    convergence : DataFrame or None
        R-hat, ESS and divergences of the posterior draws
        (:func:`~hja_bayes.reporting.convergence.convergence_table`).
    matrices : dict
        ``observed_win_fraction`` and ``battle_counts``: square tables of the observed
        data, models in leaderboard order.
    figures : dict
        Name -> matplotlib Figure.
    captions : dict
        Figure name -> caption.
    sentences : dict
        ``glance`` (who ranks first, the tiers), ``judges``, ``disagreement``,
        ``convergence`` (with a posterior), ``fragility`` (with a fragility audit: one
        sentence per audit, joined): one-paragraph readings of the tables.
    fragility : tuple
        The fragility audits shown (:class:`~hja_bayes.inference.fragility.Fragility`).
    notes : tuple of str
        Warnings for the reader (e.g. one orientation only, no convergence).
    data_summary, fit_summary : str
        Plain-text summaries of the data and the fit.
    level : float
    scale : str
    agreement : Agreement or None
        Agreement statistics of the judges (:func:`hja_bayes.agreement`), shown as given.
    biases : DataFrame or None
        The judge-bias table (:func:`~hja_bayes.reporting.biases.bias_table`) of a fit with
        bias terms beyond the position bias (style, self-preference).
    pairwise_file : bool
        Whether the pairwise table goes beside the report (``pairwise.csv`` and ``.json``).
    """

    title: str
    leaderboard: pd.DataFrame
    judges: pd.DataFrame
    pairwise: pd.DataFrame
    rank_table: pd.DataFrame | None
    intervals: pd.DataFrame | None
    convergence: pd.DataFrame | None
    matrices: dict
    figures: dict
    captions: dict
    sentences: dict
    notes: tuple[str, ...]
    data_summary: str
    fit_summary: str
    level: float
    scale: str
    agreement: object | None = None
    biases: pd.DataFrame | None = None
    fragility: tuple = ()
    pairwise_file: bool = True

    @property
    def bayes(self) -> bool:
        """Whether the report shows posterior draws."""
        return self.convergence is not None

    def __repr__(self) -> str:
        """One line: the title and what the report holds (no tables)."""
        return (f"Report({self.title!r}: {len(self.leaderboard)} models, "
                f"{len(self.judges)} judges, {len(self.figures)} figures, "
                f"{len(self.notes)} notes{', posterior' if self.bayes else ''})")


def build_report(
    fit,
    idata=None,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    title: str | None = None,
    inference: WaldInference | None = None,
    agreement=None,
    uncontrolled=None,
    fragility=(),
    baseline: tuple[str, float] | None = None,
    pairwise: bool | None = None,
) -> Report:
    """Collect the tables, figures and notes of a report (nothing is written).

    Parameters
    ----------
    fit : HJAFit
    idata : arviz.InferenceData, optional
        Posterior draws of the same model (:func:`hja_bayes.sample_hja`): adds credible
        columns, the posterior rank, posterior predictive figures and the sampler's
        convergence diagnostics.
    level : float
        Level of every interval.
    scale : {"logit", "elo"}
        Scale of the score columns.
    title : str, optional
        Report title (default: from the data, e.g. "5 models ranked by 5 judges").
    inference : WaldInference, optional
        Reused instead of recomputing the Wald inference.
    agreement : Agreement, optional
        From :func:`hja_bayes.agreement` on the fit's judges: adds an "Agreement" section
        with its tables (and their sentence), as computed there.
    uncontrolled : HJAFit, optional
        The fit without its bias terms (``fit.uncontrolled()``): the leaderboard gains the
        ``rank_change`` column.
    fragility : sequence of Fragility, optional
        Audits of how few verdicts or prompts would change the ranking
        (:meth:`hja_bayes.hja.HJAFit.fragility`), said in the report.
    baseline : (str, float), optional
        Pin one model's score on ``scale`` (:func:`~hja_bayes.reporting.leaderboard`).
    pairwise : bool, optional
        Whether the pairwise table is to be written beside the report (``Report.pairwise_file``,
        said in the captions and the footer; :func:`~hja_bayes.reporting.report` follows it).
        Default: up to :data:`PAIRWISE_FILE_MODELS` models.

    Returns
    -------
    Report

    Raises
    ------
    ParameterError
        For a bad level or scale (checked before any work), data instead of an HJA fit, or
        an ``agreement`` that is not an Agreement of the fit's judges.
    """
    check_fit(fit, "report")
    if not is_hja(fit):
        from ..errors import ParameterError

        raise ParameterError("a report needs an HJA fit (fit_hja); for a pooled BTL fit use "
                             "leaderboard(fit)")
    level = check_level(level)
    scale = check_scale(scale)
    if pairwise is None:
        pairwise = len(fit.items) <= PAIRWISE_FILE_MODELS
    check_flag(pairwise, "pairwise")
    _check_agreement(agreement, fit)
    inference = wald(fit, inference)
    board = leaderboard(fit, idata, level=level, scale=scale, inference=inference,
                        uncontrolled=uncontrolled, baseline=baseline)
    judges = judge_table(fit, idata, level=level, inference=inference)
    biases = None  # position alone is in the judge table
    if set(fit.coef_names) - {"position"} or fit.theta_names:
        biases = bias_table(fit, level, inference=inference)
    pairs = pairwise_table(fit, level, scale, inference=inference)
    order = list(board["model"])
    matrices = {"observed_win_fraction": observed_win_fraction(fit.data, order),
                "battle_counts": battle_counts(fit.data, order)}
    figures = {
        "forest": forest_plot(fit, level=level, scale=scale, table=board),
        # p_win and significance are the same on either scale
        "win_probability": win_probability_heatmap(fit, level, table=pairs),
    }
    if len(fit.judges) > 1:  # one judge's sensitivity is 1 by definition: nothing to plot
        figures["judge_map"] = judge_map(fit, level, table=judges)
    if fit.rank > 0:
        figures["residual"] = residual_heatmap(fit)
    if biases is not None:
        figures["biases"] = bias_plot(biases, level)
    figures["observed_win_fraction"] = observed_heatmap(fit.data, "win_fraction", order)
    figures["battle_counts"] = observed_heatmap(fit.data, "battles", order)
    intervals = convergence = None
    if idata is not None:
        from ..bayes import compare_intervals

        figures["rank_posterior"] = rank_posterior_plot(idata, level)
        figures["ppc"] = posterior_predictive_plot(idata, level)
        intervals = compare_intervals(fit, idata, level)
        convergence = convergence_table(idata)
    sentences = {
        "glance": glance_sentence(board, level, scale),
        "judges": judges_sentence(judges, () if fit.position_bias else
                                  [j.judge for j in locked_judges(fit.data)]),
        "disagreement": disagreement_sentence(fit),
    }
    if convergence is not None:
        sentences["convergence"] = " ".join(filter(None, (
            convergence_sentence(convergence),
            prompt_method_sentence(convergence, inference.cov_type == "cluster"))))
    if agreement is not None:
        sentences["agreement"] = agreement_sentence(agreement)
    if biases is not None:
        sentences["biases"] = biases_sentence(biases)
    fragility = tuple(fragility or ())
    if fragility:
        sentences["fragility"] = " ".join(f.sentence for f in fragility)
    notes = report_notes(fit, judges, convergence)
    few = clusters_note(board.attrs.get("meta", {}), FEW_CLUSTERS)
    if few:
        notes.insert(0, few)
    rare = models_on_few_prompts(fit.data) if inference.cov_type == "cluster" else None
    if rare:
        notes.insert(0, rare[0].upper() + rare[1:] + ".")
    locked = None if fit.position_bias else locked_note(fit.data)
    if locked:
        notes.insert(0, locked)
    thin = few_verdicts_note(inference.few_verdicts_se(), fit.rank, idata is not None,
                             *inference.mu_covariance(joint=False))
    if thin:
        notes.insert(0, thin)
    unused = unused_levels(fit.data) if fit.outcome == "ordinal" else None
    if unused:  # their gaps' intervals in the judge table mean nothing
        notes.insert(0, unused[0].upper() + unused[1:] + ".")
    rank_table = fit.rank_table
    if rank_table is not None:  # the criterion that was not computed is all NaN
        rank_table = rank_table.dropna(axis=1, how="all")
        if "skipped" in rank_table and rank_table["skipped"].any():  # ranks never fitted:
            rank_table = rank_table.astype({"n_iter": "Int64", "converged": "boolean",
                                            "stopped_early": "boolean"})
            rank_table.loc[rank_table["skipped"], ["n_iter", "converged", "stopped_early"]] = pd.NA
    return Report(
        title=title or default_title(fit.data),
        leaderboard=board, judges=judges, pairwise=pairs, rank_table=rank_table,
        intervals=intervals, convergence=convergence, matrices=matrices, figures=figures,
        captions=captions(fit, level, idata is not None, board.attrs.get("meta"),
                          pairwise_file=pairwise), sentences=sentences,
        notes=tuple(notes),
        data_summary=str(fit.data.summary()), fit_summary=fit.summary(), level=level,
        scale=scale, agreement=agreement, biases=biases, fragility=fragility,
        pairwise_file=pairwise,
    )


def _check_agreement(agreement, fit) -> None:
    """An Agreement whose judges are all judges of the fit, or None."""
    if agreement is None:
        return
    from ..errors import ParameterError
    from ..inference.agreement import Agreement

    if not isinstance(agreement, Agreement):
        raise ParameterError("agreement= takes the result of hja_bayes.agreement(data), got "
                             f"{type(agreement).__name__}")
    strangers = set(agreement.kappa.attrs["meta"]["judges"]) - set(fit.judges)
    if strangers:
        raise ParameterError(f"the agreement statistics are of judges the fit does not have: "
                             f"{sorted(strangers)}")

