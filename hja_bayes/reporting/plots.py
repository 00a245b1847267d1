"""Figures of a fitted HJA model (matplotlib; every function returns a Figure).

Figures are built with :class:`matplotlib.figure.Figure` directly, not through pyplot, so
making one touches no global state and needs no display: save it with
``fig.savefig(...)``, or let Jupyter show it.  Everything drawn comes from the tables of
:mod:`hja_bayes.reporting.leaderboard` or from the fit's own estimates.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..checks import check_integer
from ..diagnostics import bicluster_residual
from ..errors import HJAError, ParameterError
from ..inference import WaldInference
from .fitted import interval_name, is_hja
from .leaderboard import leaderboard
from .observed import battle_counts, observed_win_fraction
from .pairwise import pairwise_table
from .scales import Scale

__all__ = [
    "forest_plot",
    "observed_heatmap",
    "residual_heatmap",
    "win_probability_heatmap",
]

#: Most models a heat map shows (the leaderboard's top ones; the residual map: those the
#: judges disagree about most) and most a forest plot shows: beyond, the cells cannot be
#: read and the image grows past what a browser or the memory holds (1,000 models made a
#: 500-inch-wide figure).  The report's CSV files hold every model and pair.
HEATMAP_MODELS = 30
FOREST_MODELS = 60

WALD_COLOR = "#1f5fa8"
FLAG_COLOR = "#c0392b"
CREDIBLE_COLOR = "#e67e22"
MUTED_COLOR = "#555555"


#: The longest name a figure writes in full; longer ones lose their middle there (the tables
#: keep them whole): a name of 120 characters had squeezed a heat map's cells to nothing.
LABEL_CHARS = 50


def tick_labels(names) -> list[str]:
    """Names as a figure's tick labels, each at most :data:`LABEL_CHARS` characters: a longer
    one keeps its start and end (an organisation, a version) around "…", unless that would
    make two labels alike."""
    full = [str(n) for n in names]
    head = (LABEL_CHARS - 1) // 2
    short = [s if len(s) <= LABEL_CHARS else s[:head] + "…" + s[head + 1 - LABEL_CHARS:]
             for s in full]
    return short if len(set(short)) == len(set(full)) else full


def _label_inches(labels, fontsize: float = 8) -> float:
    """Width taken by the longest tick label (about 0.6 em per character)."""
    longest = max((len(x) for x in tick_labels(labels)), default=0)
    return 0.6 * fontsize / 72 * longest


def _short(name, width: int = 22) -> str:
    """A judge or model name shortened for a point label: the part after the last '/', cut."""
    text = str(name).rsplit("/", 1)[-1]
    return text if len(text) <= width else text[: width - 1] + "…"


def _of(shown: int, total: int, what: str = "models", which: str = "top") -> str:
    """The title's note when a figure shows only some of the models or judges."""
    return "" if shown >= total else f" ({which} {shown} of {total:,} {what})"


def _scale_label(scale: str) -> str:
    return "Elo points (400/ln10 · μ + 1000)" if scale == "elo" else "consensus score μ (logit scale)"


def forest_plot(
    fit,
    idata=None,
    level: float = 0.95,
    scale: Scale = "logit",
    *,
    inference: WaldInference | None = None,
    table=None,
) -> Figure:
    """Consensus scores with their intervals, best model on top.

    Parameters
    ----------
    fit : HJAFit
    idata : arviz.InferenceData, optional
        Posterior draws: their credible intervals are drawn beside the Wald intervals.
    level : float
        Interval level.
    scale : {"logit", "elo"}
    inference : WaldInference, optional
        Reused instead of recomputing the Wald inference.
    table : DataFrame, optional
        A :func:`~hja_bayes.reporting.leaderboard` table to draw (else it is computed).

    Returns
    -------
    matplotlib.figure.Figure
        Point estimate and Wald interval per model (with ``idata``, the posterior mean and
        credible interval just below it); tier boundaries as dotted lines; models
        without a finite maximum-likelihood score (the leaderboard's ``unbounded``)
        hollow and grey, their interval the ridge's.  At most the
        top :data:`FOREST_MODELS` models (the title says so).
    """
    if table is None:
        table = leaderboard(fit, idata, level=level, scale=scale, inference=inference)
    board = table.head(FOREST_MODELS)
    n = len(board)
    fig = Figure(figsize=(4.6 + _label_inches(board["model"], 10), 1.2 + 0.4 * n),
                 layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    # models without a finite optimum: hollow and muted, their intervals the ridge's
    ridge = (board["unbounded"].fillna(False).to_numpy(bool) if "unbounded" in board
             else np.zeros(n, bool))
    label = f"{interval_name(table.attrs.get('meta', {}))} {level:.0%} (MAP)"
    for rows, style in ((~ridge, dict(color=WALD_COLOR, label=label)),
                        (ridge, dict(color=MUTED_COLOR, mfc="none",
                                     label="unbounded MLE: the ridge's score and interval"))):
        if rows.any():
            part = board[rows]
            ax.errorbar(part["score"], y[rows], xerr=[part["score"] - part["score_lower"],
                                                      part["score_upper"] - part["score"]],
                        fmt="o", capsize=3, **style)
    if "cred_lower" in board.columns:
        ax.errorbar(
            board["post_mean"], y - 0.22,
            xerr=[board["post_mean"] - board["cred_lower"], board["cred_upper"] - board["post_mean"]],
            fmt="s", markersize=4, color=CREDIBLE_COLOR, capsize=3,
            label=f"credible {level:.0%} (posterior mean)",
        )
    tiers = board["tier"].fillna(0).to_numpy()  # no tiers (too few prompts): no lines
    for pos in range(1, n):
        if tiers[pos] != tiers[pos - 1]:
            ax.axhline(y[pos] + 0.5, color=MUTED_COLOR, linestyle=":", linewidth=0.8)
    ax.set_yticks(y, tick_labels(board["model"]))
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel(_scale_label(scale))
    ax.set_title(f"Consensus scores, {level:.0%} intervals{_of(n, len(table))}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return fig


#: The width of one character of an 8-point tick label, in inches (about).
LABEL_INCH = 0.065


def _grid_size(rows, cols) -> tuple[float, float]:
    """Inches for a heat map of cells about 0.5 inch wide, beside its longest row label and
    above its longest column label (written at 45 degrees: as far left as down)."""
    row, col = (max((len(x) for x in tick_labels(names)), default=0) * LABEL_INCH
                for names in (rows, cols))
    return 1.6 + max(row, 0.71 * col) + 0.5 * len(cols), 1.2 + 0.42 * len(rows) + 0.71 * col


def _heatmap(M, rows, cols, *, cmap, vmin, vmax, text, colorbar, title, xlabel, ylabel,
             hatch=None, light=None) -> Figure:
    """A labelled heat map sized to its cells (about 0.5 inch each, numbers readable) and
    to its row labels (long judge names would otherwise squeeze the cells)."""
    n_rows, n_cols = M.shape
    fig = Figure(figsize=_grid_size(rows, cols), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(M), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    light = light or (lambda v: False)
    for a in range(n_rows):
        for b in range(n_cols):
            if np.isfinite(M[a, b]):
                ax.text(b, a, text(M[a, b]), ha="center", va="center", fontsize=7,
                        color="white" if light(M[a, b]) else "black")
            if hatch is not None and hatch[a, b]:
                ax.add_patch(_hatch(a, b))
    ax.set_xticks(range(n_cols), tick_labels(cols), rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(n_rows), tick_labels(rows), fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    fig.colorbar(image, ax=ax, label=colorbar, shrink=min(1.0, 0.4 + 0.06 * n_rows))
    ax.set_title(title, fontsize=10, loc="left")
    return fig


def residual_heatmap(fit, *, n_blocks: int = 2, seed: int = 0) -> Figure:
    """The structured disagreement U Vᵀ (judges x models), ordered by its biclustering.

    Parameters
    ----------
    fit : HJAFit
    n_blocks : int
        Judge blocks and model blocks asked of
        :func:`hja_bayes.diagnostics.bicluster_residual` (reduced when there are fewer
        distinct residual profiles).
    seed : int
        Seed of the biclustering.

    Returns
    -------
    matplotlib.figure.Figure
        Red: the judge rates the model above what its consensus part ``gamma_k mu`` says;
        blue: below.  Lines separate the blocks.  At most the :data:`HEATMAP_MODELS` models
        and judges with the largest disagreement (the title says so).
    """
    if not is_hja(fit):
        raise ParameterError(f"residual_heatmap needs an HJAFit, got {type(fit).__name__}")
    n_blocks, seed = check_integer(n_blocks, "n_blocks", 1), check_integer(seed, "seed")
    U, V = np.asarray(fit.U), np.asarray(fit.V)
    R = U @ V.T if fit.rank > 0 else np.zeros((len(fit.judges), len(fit.items)))
    # the models (and judges) the disagreement is largest for, when there are too many
    models = np.sort(np.argsort(-np.linalg.norm(R, axis=0), kind="stable")[:HEATMAP_MODELS])
    judges = np.sort(np.argsort(-np.linalg.norm(R, axis=1), kind="stable")[:HEATMAP_MODELS])
    note = _of(len(models), R.shape[1], which="the most disagreed-about") + _of(
        len(judges), R.shape[0], "judges", "the most departing")
    names, judge_names = np.asarray(fit.items, dtype=object)[models], \
        np.asarray(fit.judges, dtype=object)[judges]
    U, V, R = U[judges], V[models], R[np.ix_(judges, models)]
    K, N = R.shape
    fig = Figure(figsize=_grid_size(judge_names, names), layout="constrained")
    ax = fig.add_subplot()
    blocks = None
    if fit.rank > 0 and np.any(R):
        for nb in range(min(n_blocks, K, N), 0, -1):
            try:
                blocks = bicluster_residual(U, V, min(nb, K), min(nb, N), seed=seed)
                break
            except HJAError:
                continue
    if blocks is None:
        jo, io = np.arange(K), np.argsort(-np.asarray(fit.mu)[models], kind="stable")
    else:
        jo, io = blocks.judge_order, blocks.item_order
    M = R[np.ix_(jo, io)]
    vmax = float(np.abs(M).max()) or 1.0
    image = ax.imshow(M, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
    if fit.rank > 0 and K * N <= 600:
        for a in range(K):
            for b in range(N):
                ax.text(b, a, f"{M[a, b]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(M[a, b]) > 0.6 * vmax else "black")
    if blocks is not None:
        jl, il = blocks.judge_labels[jo], blocks.item_labels[io]
        for a in np.flatnonzero(np.diff(jl)):
            ax.axhline(a + 0.5, color="black", linewidth=1.2)
        for b in np.flatnonzero(np.diff(il)):
            ax.axvline(b + 0.5, color="black", linewidth=1.2)
    ax.set_xticks(range(N), tick_labels(names[io]), rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(K), tick_labels(judge_names[jo]), fontsize=8)
    ax.set_xlabel("model")
    ax.set_ylabel("judge")
    fig.colorbar(image, ax=ax, label="(UVᵀ)_ki, logit", shrink=min(1.0, 0.4 + 0.06 * K))
    if fit.rank == 0:
        ax.set_title("Structured disagreement: none at rank 0", fontsize=10, loc="left")
    else:
        ax.set_title(f"Structured disagreement UVᵀ (rank {fit.rank}){note}", fontsize=10,
                     loc="left")
    return fig


def win_probability_heatmap(
    fit, level: float = 0.95, *, inference: WaldInference | None = None, table=None
) -> Figure:
    """Probability that the row model beats the column model, for a consensus judge.

    ``expit(mu_row - mu_col)``: a judge of average sensitivity (gamma = 1) without
    position bias.  Pairs whose score difference is not significant at ``level`` are
    hatched.

    Parameters
    ----------
    fit : HJAFit
    level : float
    inference : WaldInference, optional
    table : DataFrame, optional
        A :func:`~hja_bayes.reporting.pairwise_table` table to draw.

    Returns
    -------
    matplotlib.figure.Figure
        At most the table's first :data:`HEATMAP_MODELS` models, the leaderboard's top
        ones (the title says so).
    """
    pairs = pairwise_table(fit, level, inference=inference) if table is None else table
    every = list(dict.fromkeys(pairs["model_a"]))
    if not every:
        raise HJAError("no pairs to draw")
    order = every[:HEATMAP_MODELS]
    N = len(order)
    index = {m: i for i, m in enumerate(order)}
    shown = pairs[pairs["model_a"].isin(index) & pairs["model_b"].isin(index)]
    P = np.full((N, N), np.nan)
    sig = np.zeros((N, N), dtype=bool)
    for a, b, p, s in zip(shown["model_a"], shown["model_b"], shown["p_win"],
                          shown["significant"]):
        P[index[a], index[b]], sig[index[a], index[b]] = p, s
    not_sig = ~sig
    np.fill_diagonal(not_sig, False)
    return _heatmap(P, order, order, cmap="RdBu_r", vmin=0.0, vmax=1.0,
                    text=lambda v: f"{v:.2f}", light=lambda v: abs(v - 0.5) > 0.3,
                    colorbar="P(row beats column)", hatch=not_sig,
                    title=f"Consensus win probability{_of(N, len(every))}",
                    xlabel="opponent", ylabel="model")


def observed_heatmap(data, kind: str = "win_fraction", order=None) -> Figure:
    """The observed data between every pair of models, as a heat map.

    Parameters
    ----------
    data : Comparisons
    kind : {"win_fraction", "battles"}
        ``"win_fraction"``: share of their comparisons the row model won (ties 1/2;
        :func:`~hja_bayes.reporting.observed.observed_win_fraction`); ``"battles"``: number
        of comparisons between them (:func:`~hja_bayes.reporting.observed.battle_counts`).
    order : sequence of str, optional
        Model order (e.g. the leaderboard's; default the data's).

    Returns
    -------
    matplotlib.figure.Figure
        Blank cells: the two models never met.  At most the first :data:`HEATMAP_MODELS`
        models of ``order`` (the title says so).
    """
    from ..checks import check_choice, check_comparisons

    kind = check_choice(kind, "kind", ("win_fraction", "battles"))
    check_comparisons(data)
    note = _of(HEATMAP_MODELS, data.n_items, which="first" if order is None else "top")
    if kind == "win_fraction":
        table = observed_win_fraction(data, order).iloc[:HEATMAP_MODELS, :HEATMAP_MODELS]
        M = table.to_numpy(dtype=float)
        return _heatmap(M, table.index, table.columns, cmap="RdBu_r", vmin=0.0, vmax=1.0,
                        text=lambda v: f"{v:.2f}", light=lambda v: abs(v - 0.5) > 0.3,
                        colorbar="observed share won by row",
                        title=f"Observed win fraction{note}", xlabel="opponent",
                        ylabel="model")
    table = battle_counts(data, order).iloc[:HEATMAP_MODELS, :HEATMAP_MODELS]
    M = table.to_numpy(dtype=float, copy=True)
    M[M == 0] = np.nan
    top = np.nanmax(M) if np.isfinite(M).any() else 1.0
    return _heatmap(M, table.index, table.columns, cmap="Greens", vmin=0.0, vmax=top,
                    text=lambda v: f"{v:,.0f}", light=lambda v: v > 0.6 * top,
                    colorbar="comparisons", title=f"Comparisons between each pair{note}",
                    xlabel="opponent", ylabel="model")


def _hatch(a: int, b: int):
    from matplotlib.patches import Rectangle

    # dark and thick enough to be seen on mid-tone cells once a report scales the figure
    # down (grey hairlines there had read as "significant")
    patch = Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, hatch="//", edgecolor="#3a3a3a",
                      linewidth=0, alpha=0.8)
    if hasattr(patch, "set_hatch_linewidth"):  # matplotlib >= 3.10; before, 1 point
        patch.set_hatch_linewidth(1.3)
    return patch
