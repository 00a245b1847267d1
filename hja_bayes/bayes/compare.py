"""Wald intervals at the MAP beside the posterior's, quantity by quantity (SPEC §6)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..checks import check_level
from ..errors import DataWarning, ParameterError, warn
from .convert import coordinate_names, import_arviz, posterior_cells

__all__ = ["check_posterior", "compare_intervals", "describes", "interval_summaries", "mismatch"]


def interval_summaries(draws: np.ndarray, level: float) -> dict[str, np.ndarray]:
    """Mean, sd, equal-tailed and HDI bounds of draws with shape (chain, draw, m)."""
    az = import_arviz()

    tail = (1 - level) / 2
    flat = draws.reshape(-1, draws.shape[-1])
    hdi = np.asarray(az.hdi(draws, hdi_prob=level))  # (m, 2)
    return {
        "post_mean": flat.mean(axis=0),
        "post_sd": flat.std(axis=0, ddof=1),
        "eti_lower": np.quantile(flat, tail, axis=0),
        "eti_upper": np.quantile(flat, 1 - tail, axis=0),
        "hdi_lower": hdi[:, 0],
        "hdi_upper": hdi[:, 1],
    }


def mismatch(idata, fit) -> str | None:
    """What differs between a posterior's model and the fit's: rank, position bias, outcome
    model, terms, judges or items (in order), or the data (the comparisons' number, then the
    verdicts cell by cell); None when nothing does."""
    post = getattr(idata, "posterior", None)
    if post is None or "rank" not in post.attrs or not {"judge", "item"} <= set(post.coords):
        return "the posterior carries no model description (not from sample_hja?)"

    def names(dim):
        have = [str(v) for v in post.coords[dim].values] if dim in post.coords else []
        return [n for n in have if n != "position"]

    pairs = (("rank", int(post.attrs["rank"]), fit.rank),
             ("position bias", bool(post.attrs.get("position_bias", 0)), fit.position_bias),
             ("outcome model", str(post.attrs.get("outcome", "half")), str(fit.outcome)),
             ("terms", names("term"), [n for n in fit.coef_names if n != "position"]),
             ("shared terms", names("shared_term"), list(fit.theta_names)),
             ("judges", coordinate_names(idata, "judge"), list(fit.judges)),
             ("models", coordinate_names(idata, "item"), list(fit.items)))
    for what, theirs, ours in pairs:
        if theirs != ours:
            if isinstance(ours, list) and sorted(theirs) == sorted(ours):
                return (f"the same {what} in another order (the order of the rows read sets "
                        "it): read the data as the posterior's were read")
            if isinstance(ours, list) and len(ours) > 6:
                return f"{what}: {len(theirs)} against the fit's {len(ours)}"
            return f"{what} {theirs!r} against the fit's {ours!r}"
    # the same names, other data (a subset, another file): the verdicts counted differ
    given = getattr(idata, "constant_data", None)
    if given is None or "n" not in given:
        return None  # nothing to check the data by (check_posterior says so)
    n = float(given["n"].sum())
    if not np.isclose(n, fit.data.n_comparisons):
        return (f"data: the posterior's {n:,g} comparisons against the fit's "
                f"{fit.data.n_comparisons:,g}")
    if not _same_verdicts(idata, fit.data):
        return ("data: as many comparisons, of the same judges and models, but other "
                "verdicts or cells (another run or file)")
    return None


def _same_verdicts(idata, data) -> bool:
    """Whether the posterior's cells hold the data's verdicts, cell by cell: the same cells
    (judge, model shown first, second) with the same counts, or the same number in each
    where they are counted in other categories (ordered verdicts fitted as three, say)."""
    cells = posterior_cells(idata)
    theirs, ours = np.asarray(cells.counts, dtype=float), np.asarray(data.counts, dtype=float)
    if len(theirs) != len(ours):
        return False
    mine = np.lexsort((data.second, data.first, data.judge))
    other = np.lexsort((cells.second, cells.first, cells.judge))
    keys = all(np.array_equal(np.asarray(a)[other], np.asarray(b)[mine]) for a, b in
               ((cells.judge, data.judge), (cells.first, data.first),
                (cells.second, data.second)))
    if not keys:
        return False
    if theirs.shape != ours.shape:
        return np.allclose(theirs.sum(axis=1)[other], ours.sum(axis=1)[mine])
    return np.allclose(theirs[other], ours[mine])


def describes(idata, fit) -> bool:
    """Whether a posterior is of the fit's model (:func:`mismatch` finds nothing)."""
    return mismatch(idata, fit) is None


def check_posterior(idata, fit) -> None:
    """Refuse posterior draws that do not go with ``fit``, saying why.

    Raises
    ------
    ParameterError
        Not an InferenceData with a posterior (a fit passed where the draws go, say), a
        pooled BTL fit, or a posterior of another model (what differs is named).

    Warns
    -----
    DataWarning
        Where the posterior carries no data to compare with the fit's (draws built by
        hand, or stripped of their groups).
    """
    if not hasattr(idata, "posterior"):
        also = ("; a fit without its bias terms goes as uncontrolled="
                if hasattr(idata, "coef_names") else "")
        raise ParameterError("the posterior (idata) must be the InferenceData of sample_hja or "
                             f"load_posterior, got {type(idata).__name__}{also}")
    if not hasattr(fit, "coef_names"):
        raise ParameterError("posterior draws (idata) go with an HJA fit, not a BTL fit")
    why = mismatch(idata, fit)
    if why:
        raise ParameterError(f"the posterior and the fit describe different models ({why}): "
                             "sample the fit's model, e.g. sample_hja(data, rank, init=fit)")
    given = getattr(idata, "constant_data", None)
    if given is None or "n" not in given:
        warn("the posterior carries no data (sample_hja's constant_data group, the cells' "
             "counts) to check against the fit's: its draws are taken as of the fit's data, "
             "unchecked", DataWarning)


def compare_intervals(fit, idata, level: float = 0.95) -> pd.DataFrame:
    """Wald intervals at the MAP beside the posterior's, quantity by quantity.

    Parameters
    ----------
    fit : HJAFit
        The MAP fit (its Wald intervals are :attr:`HJAFit.wald`'s, as in its leaderboard).
    idata : InferenceData
        Posterior of the same model (:func:`~hja_bayes.sample_hja`), same data.
    level : float
        Coverage level of every interval.

    Returns
    -------
    DataFrame
        One row per quantity: ``quantity`` ("mu_diff" = mu_a - mu_b for every item pair
        a < b, "gamma", "beta" with position bias, the other term coefficients per judge
        ("self", "style:<feature>"; labelled by judge), a per-judge style's panel value (the
        mean over the judges that have it, labelled "(panel)") and panel-wide ones (shared
        style, labelled "(panel)"), "S_diff" = S_ka - S_kb for every judge and pair a < b),
        ``label``, ``wald_estimate``, ``wald_se``, ``wald_lower``,
        ``wald_upper``, ``post_mean``, ``post_sd``, ``eti_lower``, ``eti_upper``
        (equal-tailed), ``hdi_lower``, ``hdi_upper``, ``sd_ratio`` (posterior sd / Wald
        se), ``width_ratio`` (equal-tailed width / Wald width) and ``hdi_width_ratio``.
        With prompt effects the posterior side of "mu_diff", "gamma" and "S_diff" is from
        ``mu_marginal``, ``gamma_marginal`` and ``S_marginal``, the population-averaged
        quantities on the fixed-effects fit's scale; the terms' coefficients (position bias,
        self-preference, style) are then the mixed model's own, per-prompt (conditional)
        quantities, on another scale than the Wald intervals: column ``scale`` says which
        ("marginal" or "conditional"), and a width ratio of a conditional row compares two
        scales.
        The Wald intervals are those of the fit's own model (outcome model and terms),
        with the Fisher information unless the data carry clusters (then cluster-robust),
        the ridge's curvature included (as the leaderboard's).

    Raises
    ------
    ParameterError
        When ``idata`` is not a posterior of ``fit``'s model (:func:`check_posterior`).
    """
    level = check_level(level)
    check_posterior(idata, fit)
    post = idata.posterior
    # the fit's own (default covariance, its ridge's curvature): the leaderboard's intervals
    wald = fit.wald
    table = wald.intervals(level, pairs="all")  # rows aligned with the draws below
    K, N = len(fit.judges), len(fit.items)
    a, b = np.triu_indices(N, k=1)
    # with prompt effects the *_marginal quantities are on the fixed-effects scale
    marginal = "mu_marginal" in post
    mu, gamma, S = (np.asarray(post[f"{v}_marginal" if marginal else v])
                    for v in ("mu", "gamma", "S"))
    blocks = {"mu_diff": mu[..., a] - mu[..., b], "gamma": gamma}
    for c, name in enumerate(fit.coef_names):  # the judges that have the coefficient
        free = np.asarray(fit.coef_free, dtype=bool)[:, c]
        if name == "position":
            blocks["beta"] = np.asarray(post["beta"])[..., free]
        else:
            blocks[name] = np.asarray(post["coef"])[..., c][..., free]
    for g, name in enumerate(fit.theta_names):
        blocks[name] = np.asarray(post["theta"])[..., g:g + 1]
    frames = []
    for quantity, draws in blocks.items():
        rows = table[table["quantity"] == quantity]
        parts = [(rows, draws)]
        if quantity in fit.coef_names:  # a per-judge style also has a panel row: the mean
            panel = rows["label"] == "(panel)"
            parts = [(rows[~panel], draws), (rows[panel], draws.mean(axis=-1, keepdims=True))]
        for part, part_draws in parts:
            if len(part):
                part = part.reset_index(drop=True)
                frames.append(_side_by_side(quantity, part["label"], part["estimate"], part["se"],
                                            part["lower"], part["upper"], part_draws, level))
    k = np.repeat(np.arange(K), len(a))
    i, j = np.tile(a, K), np.tile(b, K)
    iv = wald.contrast(lambda S_, beta_: S_[k, i] - S_[k, j], level)
    labels = [f"{fit.judges[x]}: {fit.items[y]} - {fit.items[z]}" for x, y, z in zip(k, i, j)]
    frames.append(_side_by_side("S_diff", labels, iv.estimate, iv.se, iv.lower, iv.upper,
                                S[..., k, i] - S[..., k, j], level))
    table = pd.concat(frames, ignore_index=True)
    on_wald_scale = table["quantity"].isin(["mu_diff", "gamma", "S_diff"]) | (not marginal)
    table.insert(2, "scale", np.where(on_wald_scale, "marginal", "conditional"))
    return table


def _side_by_side(quantity, labels, estimate, se, lower, upper, draws, level) -> pd.DataFrame:
    out = pd.DataFrame({"quantity": quantity, "label": list(labels),
                        "wald_estimate": np.asarray(estimate, float), "wald_se": np.asarray(se, float),
                        "wald_lower": np.asarray(lower, float), "wald_upper": np.asarray(upper, float)})
    # a quantity the posterior holds fixed is not estimated: no posterior summaries
    held = np.ptp(np.asarray(draws).reshape(-1, len(out)), axis=0) == 0
    for name, value in interval_summaries(draws, level).items():
        out[name] = np.where(held, np.nan, value)
    wald_width = out["wald_upper"] - out["wald_lower"]
    out["sd_ratio"] = out["post_sd"] / out["wald_se"]
    out["width_ratio"] = (out["eti_upper"] - out["eti_lower"]) / wald_width
    out["hdi_width_ratio"] = (out["hdi_upper"] - out["hdi_lower"]) / wald_width
    return out
