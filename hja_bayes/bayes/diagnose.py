"""Warnings about a posterior sample: divergences, R-hat, relabelled draws, empty components.

:func:`warn_on_diagnostics` is called by :func:`~hja_bayes.bayes.sample_hja` on every
result; it only reads the ``InferenceData``.
"""

from __future__ import annotations


import numpy as np

from ..errors import ConvergenceWarning, warn
from .mixing import rank_rhat_by_chance

__all__ = ["RHAT_LIMIT", "ALIGNMENT_LIMIT", "SAFE_TARGET", "STUCK_MEANING", "STUCK_RHAT",
           "divergence_report", "warn_on_diagnostics", "labels", "rhat_text"]

#: R-hat above this produces a ConvergenceWarning naming the quantities.
RHAT_LIMIT = 1.01
#: A share of draws above this whose U, V columns had to be reordered to match the MAP's,
#: or matched it only weakly, produces a ConvergenceWarning.
ALIGNMENT_LIMIT = 0.1
#: An R-hat this large (or inf) says a chain did not move or the chains never met; it is
#: shown to 3 significant digits (chains each stuck at its own value: about 1e16).
STUCK_RHAT = 1000.0
#: What such an R-hat means, as the warnings and reports say it.
STUCK_MEANING = (f"{STUCK_RHAT:,.0f} or more, or inf: a chain that did not move, or chains "
                 "stuck apart")


def rhat_text(value: float) -> str:
    """An R-hat as the warnings and reports show it: 3 decimals, 3 significant digits from
    :data:`STUCK_RHAT` on ("9.86e+15"), "inf"."""
    return f"{value:.3f}" if value < STUCK_RHAT else f"{value:.3g}"


def labels(da) -> list[str]:
    """'name[label, ...]' for every entry of a DataArray without chain/draw."""
    if da.ndim == 0:
        return [da.name]
    index = [da[d].values for d in da.dims]
    grids = np.meshgrid(*index, indexing="ij")
    return [f"{da.name}[{', '.join(str(g.flat[i]) for g in grids)}]" for i in range(da.size)]


#: The last component counts as not separated from zero when the 5% quantile of its D is
#: below this fraction of its median (a component the data determine has a narrow posterior
#: of D; an over-specified one a wide, chi-square-like one starting near zero).
SEPARATION = 0.5


def _weak_last_component(idata) -> str:
    """Advice when the last component looks over-specified (else "").

    Either its D is not separated from zero, or more than ALIGNMENT_LIMIT of the draws have
    a U, V column only weakly matched to the MAP's.
    """
    post = idata.posterior
    if "D" not in post:
        return ""
    D = np.asarray(post["D"])[..., -1].ravel()
    rank = int(post.attrs.get("rank", np.asarray(post["D"]).shape[-1]))
    weak = float(post.attrs.get("weak_match_share", 0.0))
    low, median = np.quantile(D, 0.05), np.median(D)
    if low > SEPARATION * median and weak <= ALIGNMENT_LIMIT:
        return ""
    return (f"; the smallest component D[{rank - 1}] is not separated from zero "
            f"(5% quantile {low:.2g}, median {median:.2g}; {weak:.0%} of the draws have a "
            f"column weakly matched to the MAP's): rank {rank} is probably more than the "
            "data support, and the sampler meets the singular point of the (U, V) "
            f"factorisation there - compare ranks (BIC, rank_comparison) and use rank "
            f"{rank - 1}")


#: The target acceptance probability the divergence warning recommends (and the default of
#: ``sample_hja`` at rank 2 and above).
SAFE_TARGET = 0.95


def divergence_report(idata) -> str:
    """Where the divergent transitions are and what to do about them ("" when there are none).

    Names the chains they occurred in, and at rank r > 0 where the divergent draws sit in the
    posterior of the smallest component ``D[r-1]`` (a median quantile near 0 points to the
    singular point of the (U, V) factorisation at D = 0; elsewhere to a step size too large
    for the posterior's curvature), then says what to run next.
    """
    div = np.asarray(idata.sample_stats["diverging"], dtype=bool)
    n_div = int(div.sum())
    if not n_div:
        return ""
    chains = sorted({int(c) for c in np.nonzero(div)[0]})
    where = f" in chain(s) {', '.join(map(str, chains))}"
    post = idata.posterior
    if "D" in post and post["D"].shape[-1]:
        last = post["D"].shape[-1] - 1
        D = np.asarray(post["D"])[..., last]
        q = float(np.median([np.mean(D < x) for x in D[div]]))
        where += (f"; the divergent draws sit at the {q:.0%} quantile (median) of the "
                  f"posterior of D[{last}]")
        where += (" - near zero, the singular point of the (U, V) factorisation" if q < 0.1
                  else ", not at its small values")
    target = float(post.attrs.get("target_accept_prob", 0.8))
    if target < SAFE_TARGET:
        todo = (f"rerun with target_accept_prob={SAFE_TARGET} (smaller steps; at rank 2 on "
                "MT-Bench and PRD Vicuna80 this removed every divergence, at 1-3x the "
                "gradients per draw)")
    else:
        todo = ("rerun with target_accept_prob=0.99, and compare ranks (BIC, "
                "rank_comparison): the posterior may be too curved for this rank")
    return (f"{n_div} divergent transition(s) after warm-up{where}: the sampler may have "
            f"missed part of the posterior; {todo}")


def warn_on_diagnostics(idata, limit: float = RHAT_LIMIT) -> None:
    """ConvergenceWarning on divergences, R-hat above ``limit`` (naming the quantities; the
    rank-normalised split R-hat of :func:`~hja_bayes.bayes.mixing.rank_rhat`), or a
    large share of reordered or weakly matched draws (posterior attrs ``permutation_share``,
    ``weak_match_share``)."""
    advice = _weak_last_component(idata)
    n_div = int(idata.sample_stats["diverging"].sum())
    if n_div:
        warn(divergence_report(idata) + advice, ConvergenceWarning)
        advice = ""  # said once, with the first warning it explains
    attrs = idata.posterior.attrs
    permuted = float(attrs.get("permutation_share", 0.0))
    weak = float(attrs.get("weak_match_share", 0.0))
    if max(permuted, weak) > ALIGNMENT_LIMIT:
        seen = ([f"{permuted:.0%} of the draws had them reordered to match the MAP (close D "
                 "values)"] if permuted else []) + (
            [f"{weak:.0%} have a column at cosine below 0.5 with the MAP's"] if weak else [])
        head = (advice[2].upper() + advice[3:] + ". " if advice else "")  # the cause first
        warn(f"{head}The columns of U and V are not well determined: {' and '.join(seen)}; "
             "summarise S, mu, gamma and D, which are unaffected, rather than single columns "
             "of U and V", ConvergenceWarning)
        advice = ""
    chains, draws = idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
    if chains < 2 or draws < 4:  # split R-hat compares chains of at least 4 draws
        warn(f"R-hat not computed: it compares 2 or more chains of at least 4 draws each, and "
             f"these are {chains} chain(s) of {draws} draw(s), so nothing checks that the "
             "sampler converged; run more (num_chains= / num_samples=; hja-bayes fit --chains "
             "/ --samples)", ConvergenceWarning)
        return
    bad, worst, defined, expected, broken = [], 0.0, 0, 0.0, []
    for da in idata.posterior.data_vars.values():
        da = da.transpose("chain", "draw", ...)
        finite = np.isfinite(da.values).all(axis=(0, 1)).ravel()
        if not finite.all():  # R-hat is NaN there: say so rather than count it as undefined
            broken += [lab for lab, ok in zip(labels(da.isel(chain=0, draw=0, drop=True)),
                                              finite) if not ok]
        values, chance = (v.ravel() for v in rank_rhat_by_chance(da.values, limit))
        defined += int((~np.isnan(values)).sum())  # inf: chains stuck apart, counted
        expected += float(np.nansum(chance))
        if np.any(values > limit):  # label the entries only then
            worst = max(worst, float(np.nanmax(values)))
            entries = da.isel(chain=0, draw=0, drop=True)
            bad += [f"{lab} ({rhat_text(v)})" for lab, v in zip(labels(entries), values)
                    if v > limit]
    if broken:
        from ..summary import listed

        warn(f"{len(broken)} quantity(ies) have draws that are not finite (NaN or inf): "
             f"{listed(broken, 12)}; their R-hat and summaries mean nothing. The sampler met "
             "numerical trouble: check the data and priors, or try a smaller rank",
             ConvergenceWarning)
    if bad:
        from ..summary import about

        shown = ", ".join(bad[:12]) + (f" and {len(bad) - 12} more" if len(bad) > 12 else "")
        if worst >= STUCK_RHAT:
            shown += f" ({STUCK_MEANING})"
        warn(f"R-hat above {limit} for {len(bad)} quantity(ies) of {defined:,}: {shown}. "
             f"Chains that agree would show about {about(expected)} such at these effective "
             "sample sizes (hja_bayes.bayes.mixing.rhat_by_chance): a few just above the limit "
             "can be chance, many or far above it cannot; more draws (num_samples=; hja-bayes "
             "fit --samples) tell the two apart" + advice,
             ConvergenceWarning)
