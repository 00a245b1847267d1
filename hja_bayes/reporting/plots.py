"""Figures of a fitted HJA model (matplotlib; every function returns a Figure).

Figures are built with :class:`matplotlib.figure.Figure` directly, not through pyplot, so
making one touches no global state and needs no display: save it with
``fig.savefig(...)``, or let Jupyter show it.  Everything drawn comes from the tables of
:mod:`hja_bayes.reporting.leaderboard` or from the fit's own estimates.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..diagnostics import bicluster_residual
from ..errors import HJAError
from ..inference import WaldInference
from .leaderboard import Scale, judge_table, leaderboard, pairwise_table

__all__ = [
    "forest_plot",
    "judge_map",
    "residual_heatmap",
    "win_probability_heatmap",
]

WALD_COLOR = "#1f5fa8"
FLAG_COLOR = "#c0392b"
CREDIBLE_COLOR = "#e67e22"
MUTED_COLOR = "#555555"


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
        credible interval just below it); tier boundaries as dotted lines.
    """
    if table is None:
        table = leaderboard(fit, idata, level=level, scale=scale, inference=inference)
    board = table
    n = len(board)
    fig = Figure(figsize=(5.2, 1.0 + 0.45 * n), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    ax.errorbar(
        board["score"], y,
        xerr=[board["score"] - board["score_lower"], board["score_upper"] - board["score"]],
        fmt="o", color=WALD_COLOR, capsize=3, label=f"Wald {level:.0%} (MAP)",
    )
    if "cred_lower" in board.columns:
        ax.errorbar(
            board["post_mean"], y - 0.22,
            xerr=[board["post_mean"] - board["cred_lower"], board["cred_upper"] - board["post_mean"]],
            fmt="s", markersize=4, color=CREDIBLE_COLOR, capsize=3,
            label=f"credible {level:.0%} (posterior mean)",
        )
    tiers = board["tier"].to_numpy()
    for pos in range(1, n):
        if tiers[pos] != tiers[pos - 1]:
            ax.axhline(y[pos] + 0.5, color=MUTED_COLOR, linestyle=":", linewidth=0.8)
    ax.set_yticks(y, [str(m) for m in board["model"]])
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel(_scale_label(scale))
    ax.set_title(f"Consensus ranking ({level:.0%} intervals; dotted lines separate tiers)",
                 fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return fig


def judge_map(
    fit, level: float = 0.95, *, inference: WaldInference | None = None, table=None
) -> Figure:
    """Judges placed by sensitivity gamma_k (x, with Wald interval) and leverage h_k (y).

    A judge far right agrees strongly with the consensus direction; a judge high up departs
    from it in a structured way.  Judges flagged as high-leverage (both) are drawn in red.

    Parameters
    ----------
    fit : HJAFit
    level : float
    inference : WaldInference, optional
    table : DataFrame, optional
        A :func:`~hja_bayes.reporting.judge_table` table to draw.

    Returns
    -------
    matplotlib.figure.Figure
    """
    judges = judge_table(fit, level=level, inference=inference) if table is None else table
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    ax = fig.add_subplot()
    flag = judges["high_leverage"].to_numpy(dtype=bool)
    for mask, color, label in ((~flag, WALD_COLOR, "judge"),
                               (flag, FLAG_COLOR, "high sensitivity and high leverage")):
        if not mask.any():
            continue
        sub = judges[mask]
        ax.errorbar(
            sub["gamma"], sub["leverage"],
            xerr=[sub["gamma"] - sub["gamma_lower"], sub["gamma_upper"] - sub["gamma"]],
            fmt="o", color=color, capsize=3, label=label,
        )
    for _, row in judges.iterrows():
        ax.annotate(str(row["judge"]), (row["gamma"], row["leverage"]),
                    textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.axvline(1.0, color=MUTED_COLOR, linestyle=":", linewidth=0.8)
    ax.set_xlabel(f"sensitivity γ_k ({level:.0%} Wald interval; panel mean is 1)")
    ax.set_ylabel("leverage h_k = ‖(UVᵀ)_k‖")
    if fit.rank == 0:
        ax.set_title("Judge map (rank 0: no structured disagreement, all h_k = 0)", fontsize=10)
    else:
        ax.set_title("Judge map: sensitivity against leverage", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
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
        blue: below.  Lines separate the blocks.
    """
    U, V = np.asarray(fit.U), np.asarray(fit.V)
    R = U @ V.T if fit.rank > 0 else np.zeros((len(fit.judges), len(fit.items)))
    K, N = R.shape
    fig = Figure(figsize=(1.6 + 0.62 * N, 1.4 + 0.42 * K), layout="constrained")
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
        jo, io = np.arange(K), np.argsort(-np.asarray(fit.mu), kind="stable")
    else:
        jo, io = blocks.judge_order, blocks.item_order
    M = R[np.ix_(jo, io)]
    vmax = float(np.abs(M).max()) or 1.0
    image = ax.imshow(M, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
    if K * N <= 400:
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
    ax.set_xticks(range(N), [str(fit.items[i]) for i in io], rotation=45, ha="right")
    ax.set_yticks(range(K), [str(fit.judges[k]) for k in jo])
    ax.set_xlabel("model")
    ax.set_ylabel("judge")
    fig.colorbar(image, ax=ax, label="residual (UVᵀ)_ki, logit")
    if fit.rank == 0:
        ax.set_title("Structured disagreement: none at rank 0 (S = γμᵀ)", fontsize=10)
    else:
        ax.set_title(f"Structured disagreement UVᵀ (rank {fit.rank})", fontsize=10)
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
    """
    pairs = pairwise_table(fit, level, inference=inference) if table is None else table
    order = list(dict.fromkeys(pairs["model_a"]))
    if not order:
        raise HJAError("no pairs to draw")
    N = len(order)
    index = {m: i for i, m in enumerate(order)}
    P = np.full((N, N), np.nan)
    sig = np.ones((N, N), dtype=bool)
    for a, b, p, s in zip(pairs["model_a"], pairs["model_b"], pairs["p_win"], pairs["significant"]):
        P[index[a], index[b]], sig[index[a], index[b]] = p, s
    fig = Figure(figsize=(1.8 + 0.62 * N, 1.4 + 0.55 * N), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(P, cmap="RdBu_r", vmin=0.0, vmax=1.0)
    for a in range(N):
        for b in range(N):
            if a == b:
                continue
            ax.text(b, a, f"{P[a, b]:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if abs(P[a, b] - 0.5) > 0.3 else "black")
            if not sig[a, b]:
                ax.add_patch(_hatch(a, b))
    labels = [str(m) for m in order]
    ax.set_xticks(range(N), labels, rotation=45, ha="right")
    ax.set_yticks(range(N), labels)
    ax.set_xlabel("opponent")
    ax.set_ylabel("model")
    fig.colorbar(image, ax=ax, label="P(row beats column)")
    ax.set_title(f"Consensus win probability (hatched: not significant at {level:.0%})",
                 fontsize=10)
    return fig


def _hatch(a: int, b: int):
    from matplotlib.patches import Rectangle

    return Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#888888",
                     linewidth=0)
