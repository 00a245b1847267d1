"""Power and sample size: ``plan``.

Assumed truth: a pilot fit (its estimates, its judges' allocation over pairs, its prompts'
design effect) or assumed consensus scores (``S = gamma mu^T``, every judge every ordered
pair equally often).  With T comparisons per judge the Fisher covariance of the chart
coordinates is ``Sigma_1 / T``, ``Sigma_1`` the inverse of the information of one
comparison per judge (``sum_k sum_cells pi_kc w_c d_c d_c^T``, restricted to the chart; with
Davidson's ties or ordered verdicts, the outcome model's per-judge parameters are estimated
too, and their information and cross terms enter).  Style coefficients are held at the
pilot's values: the style of answers yet to be written is not known, so the plan is for
answers of equal style.

Prompts enter through a design effect ``deff = 1 + (m - 1) rho``, m = comparisons per
prompt (K T / G for G prompts) and rho the intra-prompt correlation of the score
contributions: given (``icc``), or read off a pilot fit with prompts as
``rho = (deff_0 - 1) / (m_0 - 1)``, clipped to [0, 1], from its cluster-robust (CR2, as
its intervals, which has no G/(G-1) factor) over its sandwich variance ``deff_0`` over the
contrasts asked, m_0 its size-weighted comparisons per prompt (``sum n_g^2 / sum n_g``:
Kish's).  Its sandwich over Fisher variance ``phi`` (single verdicts more or less variable
than the model says) multiplies every planned variance: at the pilot's own design the
plan's is its cluster-robust one.  With a fixed number of prompts the variance has a
floor ``rho K / G`` times the per-comparison one: past some point more verdicts on the same
prompts do not help, and the plan says so.

A contrast ``mu_a - mu_b = d > 0`` is detected when its estimate exceeds ``c`` standard
errors, ``c`` the critical value of the multiplicity rule: the max-|t| value over every pair
of models ("ranks": the package's joint rank intervals, :mod:`hja_bayes.inference.ranking`),
over the pairs asked ("pairs"), Bonferroni over the pairs asked, or none.  With G prompts the
fit's intervals are CR2's with t quantiles, as the leaderboard's: each pair's critical value
is then ``t_{G-1}^-1(Phi(c))`` (about Satterthwaite's df for balanced prompts), its standard
error the estimate's standard deviation (CR2 is about unbiased).  Power of one contrast:
``Phi((d - c' se) / sd)``; joint power (every pair asked detected): the normal orthant
probability with the contrasts' correlation, by simulation with a fixed seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri, stdtrit

from ..checks import check_choice, check_integer, check_level, check_probability
from ..errors import IdentifiabilityError, ParameterError
from ..inference.few_verdicts import FEW_VERDICTS_SE, few_verdicts
from ..inference.ranking import simultaneous_critical_value
from ..position_locked import locked_judges
from .assumed import assumed_fit
from .candidates import allocation_information
from .contrast_draws import ContrastDraws, pair_variances
from .goals import asked_pairs, gamma_gradients, mu_gradients, quadratic_forms
from ..threads import one_blas_thread

__all__ = ["Plan", "plan"]

MULTIPLICITY, TARGETS = ("ranks", "pairs", "bonferroni", "none"), ("all", "each")


@dataclass(frozen=True)
class Plan:
    """A power and sample-size plan.

    Attributes
    ----------
    comparisons_per_judge : int or None
        The smallest number of comparisons per judge that reaches ``power`` (None when no
        number up to ``max_per_judge`` does, e.g. because of too few prompts).
    total_comparisons : int or None
        ``comparisons_per_judge`` times the number of judges.
    power : float
        Achieved power at ``comparisons_per_judge`` (joint or smallest per-pair power,
        see ``target``); NaN when unreachable.
    table : DataFrame
        Per contrast at that size (at ``max_per_judge`` when unreachable; the size in
        ``attrs["comparisons_per_judge"]``): model_a,
        model_b, gap, sd (the estimate's true standard deviation, design effect included),
        se (the standard error the test will use: CR2's, about sd, where there are
        prompts), critical (the pair's critical value: ``c``, or with prompts its t
        quantile at G - 1 degrees of freedom), power (``Phi((gap - critical se) / sd)``).
    curve : DataFrame
        comparisons_per_judge, power_all (every pair detected), power_min (the weakest
        pair), design_effect, over a range of sizes (or those asked for).
    critical_value : float
    multiplicity, target : str
    level, target_power : float
    icc : float
        Intra-prompt correlation used (0 without prompts).
    prompts : int or None
        Number of prompts the comparisons are spread over (None: every comparison on its
        own prompt).
    variance_factor : float
        The pilot's sandwich over Fisher variance, on every planned variance (1 without
        prompts or from assumed scores).
    notes : tuple of str
        What was assumed, and why a target is out of reach.
    """

    comparisons_per_judge: int | None
    total_comparisons: int | None
    power: float
    table: pd.DataFrame
    curve: pd.DataFrame
    critical_value: float
    multiplicity: str
    target: str
    level: float
    target_power: float
    icc: float
    prompts: int | None
    notes: tuple = field(default=())
    variance_factor: float = 1.0

    def __repr__(self) -> str:
        size = "unreachable: see .notes for why" if self.comparisons_per_judge is None else \
            f"{self.comparisons_per_judge} comparisons per judge ({self.total_comparisons} in all)"
        t = ("" if self.prompts is None else
              f", {float(self.table.critical.iloc[0]):.3f} at t({self.prompts - 1})")
        return (f"Plan({size}; power {self.power:.3f} ({self.target}) at joint level "
                f"{self.level} ({self.multiplicity}, c = {self.critical_value:.3f}{t}); "
                f"{len(self.table)} contrasts)")


def _smallest(ok, low: int, largest: int) -> int | None:
    """The smallest n in [low, largest] for which ``ok(n)`` holds (it holds from some n on),
    by doubling then bisection; None when not even ``largest`` does."""
    if not ok(largest):
        return None
    if ok(low):
        return low
    lo, hi = low, min(2 * low, largest)  # not ok(lo), and ok(hi) once the doubling stops
    while not ok(hi):
        lo, hi = hi, min(2 * hi, largest)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if not ok(mid) else (lo, mid)
    return hi


def _style_coordinates(fit, chart) -> np.ndarray:
    """The chart coordinates of style coefficients (held at the pilot's values)."""
    m = chart.shape[2]
    names = list(fit.coef_names) + list(fit.theta_names)  # the local columns after the A row
    style = np.array([n.startswith("style:") for n in names], dtype=bool)
    cols = chart.local_columns()[0][:, m:][:, style]
    return np.unique(cols[cols >= 0])


def _unit_sigma(fit, chart, allocation: str) -> np.ndarray:
    """Covariance of the chart coordinates for one comparison per judge (Fisher), the style
    coefficients held fixed."""
    data = fit.data
    K, N = len(fit.judges), len(fit.items)
    if allocation == "uniform":  # every ordered pair alike, one judge at a time
        i, j = np.where(~np.eye(N, dtype=bool))
        share = np.full(len(i), 1.0 / len(i))
        F = sum(allocation_information(fit, chart, np.full(len(i), judge), i, j, share)
                for judge in range(K))
    else:
        k, i, j = data.judge, data.first, data.second
        share = data.n / np.bincount(k, data.n, K)[k]
        F = allocation_information(fit, chart, k, i, j, share)
    T = chart.tangent_map()
    held = _style_coordinates(fit, chart)
    if held.size:  # the extra coordinates are identity columns of T: drop the held ones
        T = T[:, ~np.any(T[held] != 0, axis=0)]
    inner = T.T @ F @ T
    if not (eig := np.linalg.eigvalsh(inner))[0] > 1e-10 * eig[-1]:
        raise IdentifiabilityError(
            "the planned allocation does not identify the model (its information is "
            "singular): every judge must link every model, and at rank >= 1 each judge needs "
            "its own connected comparisons")
    return T @ np.linalg.solve(inner, T.T)


def _numbers(value, name: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be numbers, got {value!r}") from None


def _icc(fit, Gmu, a, b, icc=None) -> tuple[float, int | None, float, str]:
    """Intra-prompt correlation (``icc`` where given), prompts, variance factor ``phi`` and
    its note, from a pilot with prompts (0, None, 1 and "" without): see the module's notes."""
    c = fit.data.clusters
    if c is None or fit.cov_type != "cluster":
        return 0.0, None, 1.0, ""
    vS, vF = (pair_variances(fit.wald_inference(kind)._chart_covariance(Gmu), a, b).sum()
              for kind in ("sandwich", "fisher"))
    if icc is not None:  # the pilot's own is not needed (nor always estimable)
        return icc, c.n_clusters, float(vS / vF), ""
    vC = pair_variances(fit.wald_inference("cluster")._chart_covariance(Gmu), a, b).sum()
    G0, sizes = c.n_clusters, c.comparisons_per_cluster()
    m0 = float(np.sum(sizes ** 2) / np.sum(sizes))
    deff0, phi = vC / vS, vS / vF
    raw = (deff0 - 1) / (m0 - 1) if m0 > 1 else 0.0
    rho = float(np.clip(raw, 0.0, 1.0))
    note = (f"pilot design effect {deff0:.3g} at {m0:.3g} comparisons per prompt (size-weighted"
            f", {G0} prompts): intra-prompt correlation {rho:.3g}; variance factor {phi:.3g} "
            "(sandwich over Fisher, on every size)")
    if raw > 1:
        note += f"; the estimate {raw:.3g} was cut to 1: its prompts are too small (pass icc=)"
    return rho, G0, float(phi), note


def _critical(multiplicity, level, M, a, b, sd, seed) -> float:
    if multiplicity == "none":
        return float(ndtri(0.5 + level / 2))
    if multiplicity == "bonferroni":
        return float(ndtri(1 - (1 - level) / (2 * len(a))))
    if multiplicity == "ranks":
        return simultaneous_critical_value(M, level, seed=seed)
    return float(np.quantile(ContrastDraws(M, a, b, seed).max_abs_t(sd), level))


@one_blas_thread
def plan(source, *, gap=None, pairs="adjacent", k: int = 3, level: float = 0.95,
         power: float = 0.8, multiplicity: str = "ranks", target: str = "all",
         comparisons_per_judge=None, prompts: int | None = None, icc: float | None = None,
         allocation: str | None = None, judges=None, sensitivities=None, position_bias=None,
         max_per_judge: int = 10_000_000, seed: int = 0) -> Plan:
    """Comparisons per judge needed to detect score gaps jointly, at a level and power.

    Parameters
    ----------
    source : HJAFit, or scores (array, Series or dict model -> score)
        A pilot fit (its estimates are the assumed truth, its judges' mix of pairs the
        allocation, its prompts the design effect), or assumed consensus scores (logits);
        then ``judges`` (a number or names) judge with ``sensitivities`` (default 1 each)
        and optional ``position_bias``, every ordered pair equally often (scores spread
        over more than 30 logits are refused: Elo points, most likely).
    gap : float or array, optional
        The difference to detect in each pair asked (logits); default the source's own
        differences.
    pairs : "adjacent", "top", "all" or list of (model, model)
        Which differences must be detected: neighbours in the source's order, the top
        ``k`` against the rest, every pair, or these pairs (the first model is the better).
    k : int
        For ``pairs="top"``.
    level : float
        Joint confidence level of the test.
    power : float
        Target power.
    multiplicity : {"ranks", "pairs", "bonferroni", "none"}
        Critical value: max-|t| over every pair of models (the joint rank intervals'),
        max-|t| over the pairs asked, Bonferroni over the pairs asked, or none.
    target : {"all", "each"}
        Power that every pair asked is detected at once, or that the weakest one is.
    comparisons_per_judge : int or sequence, optional
        Sizes to evaluate instead of solving for the smallest one.
    prompts : int, optional
        Prompts the comparisons are spread over (default: the pilot's, or independent
        comparisons without prompts).
    icc : float, optional
        Intra-prompt correlation (default: from the pilot; 0 without prompts).
    allocation : {"source", "uniform"}, optional
        Each judge's mix of ordered pairs: the pilot's (default for a fit) or uniform.
    judges, sensitivities, position_bias
        For scores as ``source``.
    max_per_judge : int
        Largest size searched.
    seed : int
        Seed of the simulated critical values and joint power.

    Returns
    -------
    Plan

    Raises
    ------
    ParameterError
        Bad arguments; IdentifiabilityError when the allocation does not identify the model.

    Examples
    --------
    >>> p = plan([1.0, 0.5, 0.0, -1.5], judges=2, pairs="adjacent", power=0.8)
    >>> p.comparisons_per_judge > 0
    True
    """
    from ..hja.result import HJAFit

    level = check_level(level)
    power = check_probability(power, "power", open_low=True, open_high=True)
    multiplicity = check_choice(multiplicity, "multiplicity", MULTIPLICITY)
    target = check_choice(target, "target", TARGETS)
    check_integer(max_per_judge, "max_per_judge", 1)
    check_integer(seed, "seed")
    if isinstance(source, HJAFit):
        given = [name for name, value in (("judges", judges), ("sensitivities", sensitivities),
                                          ("position_bias", position_bias)) if value is not None]
        if given:  # they had been ignored
            raise ParameterError(f"{', '.join(given)}: for assumed scores; a pilot fit has its "
                                 "own judges, sensitivities and position biases")
        fit = source
        allocation = check_choice(allocation or "source", "allocation", ("source", "uniform"))
    else:
        fit = assumed_fit(source, judges, sensitivities, position_bias)
        allocation = "uniform"
    wald = fit.wald_inference("fisher")
    chart = wald.chart
    sigma1 = _unit_sigma(fit, chart, allocation)
    index = asked_pairs(pairs, fit.mu, fit.items, k)
    a, b = index[:, 0], index[:, 1]
    N = fit.mu.size
    # contrasts through the models' scores: M1 = cov(mu_n - mu_0), one comparison per judge
    Gmu = mu_gradients(chart, np.column_stack([np.arange(N), np.zeros(N, int)]))
    M1 = Gmu @ sigma1 @ Gmu.T
    v1 = pair_variances(M1, a, b)
    d = fit.mu[a] - fit.mu[b]
    if gap is not None:
        gap = _numbers(gap, "gap")
        if gap.ndim > 1 or gap.size not in (1, d.size):
            raise ParameterError(f"gap must be one number or one per pair asked ({d.size}), "
                                 f"got shape {gap.shape}")
        d = np.broadcast_to(gap.ravel() if gap.ndim else gap, d.shape).copy()
        if np.any(d <= 0) or not np.all(np.isfinite(d)):
            raise ParameterError("gap must be finite and > 0")
    if np.any(d <= 0):
        raise ParameterError("every pair asked needs a positive assumed gap (the first model "
                             "better): reorder the pairs or pass gap=")
    notes = [f"assumed truth: {'pilot fit' if isinstance(source, HJAFit) else 'given scores'}, "
             f"rank {fit.rank}, allocation {allocation}"]
    if _style_coordinates(fit, chart).size:
        notes.append("style coefficients held at the pilot's values (the style of answers yet "
                     "to be written is not known): the plan is for answers of equal style")
    locked = (locked_judges(source.data) if isinstance(source, HJAFit)
              and not source.position_bias else [])
    if locked:
        notes.append(f"the pilot has judges locked on one presentation slot "
                     f"({', '.join(map(str, locked))}) and no position bias term: it takes "
                     "their verdicts for information about the models, and so does this plan; "
                     "refit the pilot with position_bias=True (hja_bayes.position_locked)")
    rho, G0, phi, note = (_icc(fit, Gmu, a, b, icc) if isinstance(source, HJAFit)
                          else (0.0, None, 1.0, ""))
    if note:
        notes.append(note)
    if icc is not None:
        rho = check_probability(icc, "icc")
    G = prompts if prompts is not None else G0
    if G is not None:
        check_integer(G, "prompts", 2)
    if rho > 0 and G is None:
        raise ParameterError("an intra-prompt correlation needs the number of prompts (prompts=)")
    K = len(fit.judges)
    sd1 = np.sqrt(v1)
    c = _critical(multiplicity, level, M1, a, b, sd1, seed)
    # joint power: a draw detects every pair at the scale s = sqrt(phi deff / T) while s is
    # below its largest such scale, which depends on the prompts only through the t quantile
    draws, largest = ContrastDraws(M1, a, b, seed + 1), {}

    def evaluate(T, g=G):
        deff = 1.0 if g is None else 1 + max(K * T / g - 1, 0.0) * rho
        # the fit's CR2 intervals: each pair at the t quantile (G - 1 df) of c's tail
        critical = c if g is None else float(stdtrit(max(g - 1, 1), ndtr(c)))
        scale = np.sqrt(phi * deff / T)
        sd = se = sd1 * scale
        each = ndtr((d - critical * se) / sd)
        if critical not in largest:
            largest[critical] = draws.largest_scale(d, critical * sd1)
        joint = float(np.mean(scale < largest[critical]))
        return joint, each, sd, critical, deff

    def achieved(T, g=G):
        joint, each, *_ = evaluate(T, g)
        return joint if target == "all" else float(each.min())

    if comparisons_per_judge is not None:
        sizes = np.atleast_1d(_numbers(comparisons_per_judge, "comparisons_per_judge"))
        if sizes.ndim != 1 or sizes.size == 0:
            raise ParameterError("comparisons_per_judge must be a number or a non-empty list "
                                 f"of numbers, got {comparisons_per_judge!r}")
        if np.any(sizes < 1) or not np.all(np.isfinite(sizes)):
            raise ParameterError("comparisons_per_judge must be >= 1")
        if np.any(sizes != np.round(sizes)):  # 420.9 had been priced so and shown as 420
            raise ParameterError(f"comparisons_per_judge must be whole numbers, got "
                                 f"{comparisons_per_judge!r}")
        hit = [int(s) for s in sizes if achieved(s) >= power]
        best = min(hit) if hit else None
        if best is None:
            notes.append(f"power {power} is not reached at the sizes asked (up to "
                         f"{int(sizes.max()):,} comparisons per judge)")
    else:
        best = _smallest(lambda T: achieved(T) >= power, 1, max_per_judge)
        if best is None:
            floor = G is not None and rho > 0
            fewest = _smallest(lambda g: achieved(max_per_judge, g) >= power, G + 1, 2 ** 40) \
                if floor else None
            why = ""
            if floor:
                why = f": with {G} prompts the variance has a floor (more prompts are needed)"
            if fewest:
                why = (f": with {G} prompts the variance has a floor; at least {fewest} prompts "
                       "reach it within that many comparisons per judge (plan(..., prompts=) "
                       "gives the comparisons that more prompts need)")
            notes.append(f"power {power} is out of reach up to {max_per_judge:,} comparisons "
                         f"per judge{why}")
        ref, grid = ((best, [0.25, 0.5, 0.75, 1, 1.5, 2, 4]) if best is not None  # none above
                     else (max_per_judge, [1e-3, 1e-2, 0.1, 0.25, 0.5, 1]))  # the cap searched
        sizes = np.unique(np.round(ref * np.array(grid))).clip(1)
    curve = []
    for s in sizes:
        joint, each, _, _, deff = evaluate(s)
        curve.append((int(s), joint, float(each.min()), deff))
    curve = pd.DataFrame(curve, columns=["comparisons_per_judge", "power_all", "power_min",
                                         "design_effect"])
    # out of reach: the table at the largest size asked, or at the cap of the search
    at = best if best is not None else (int(sizes.max()) if comparisons_per_judge is not None
                                        else max_per_judge)
    joint, each, sd, critical, deff = evaluate(at)
    items = np.asarray(fit.items, dtype=object)
    table = pd.DataFrame({"model_a": items[index[:, 0]], "model_b": items[index[:, 1]],
                          "gap": d, "sd": sd, "se": sd, "critical": critical, "power": each})
    table.attrs["comparisons_per_judge"] = int(at)  # the size of the powers and errors
    if G is not None:
        notes.append(f"{G} prompts, intra-prompt correlation {rho:.3g}: design effect "
                     f"{deff:.3g} at {at:,} comparisons per judge")
    # the judges' sensitivities at that size: gamma_k's variances scale as the contrasts'
    vg1 = quadratic_forms(gamma_gradients(chart, fit.S), sigma1) * phi

    def thin(T, deff=True):
        return few_verdicts(np.sqrt(vg1 * (evaluate(T)[4] if deff else 1.0) / T))

    thin_at = thin(at)
    if thin_at is not None and thin(at, deff=False) is None:  # the prompts' doing
        notes.append(f"at {at:,} comparisons per judge the judges' sensitivities rest on few "
                     f"prompts (median predicted standard error of gamma_k {thin_at:.2g} with "
                     f"the design effect, above {FEW_VERDICTS_SE:g}; {np.median(np.sqrt(vg1 / at)):.2g} "
                     "from the verdicts alone): the fit will warn of it; more prompts, not more "
                     "comparisons on these, bring it down")
    elif thin_at is not None:
        enough = _smallest(lambda T: thin(T) is None, 1, max_per_judge)
        notes.append(
            f"at {at:,} comparisons per judge the judges' sensitivities rest on few verdicts "
            f"(median predicted standard error of gamma_k {thin_at:.2g}, above "
            f"{FEW_VERDICTS_SE:g}): Wald intervals then cover less than their level "
            "(hja_bayes.inference.few_verdicts), so detections come more often than "
            "planned but some are the short intervals' errors (in one simulation, not this "
            "plan: 20 judges at 11 per judge detected 0.97 of the time against 0.81 planned); "
            + (f"{enough:,}" if enough else f"not even {max_per_judge:,}")
            + f" comparisons per judge bring it to {FEW_VERDICTS_SE:g}")
    reached = (joint if target == "all" else float(each.min())) if best is not None else np.nan
    return Plan(best, None if best is None else best * K, float(reached), table, curve, c,
                multiplicity, target, level, power, float(rho), None if G is None else int(G),
                tuple(notes), phi)
