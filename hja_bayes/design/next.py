"""Which comparisons to ask for next: ``next_comparisons``.

The value of a verdict is what it is expected to do for a goal (:mod:`~hja_bayes.design.goals`):
the fit's Fisher information in its chart, plus ``w d d^T`` per new verdict
(:mod:`~hja_bayes.design.candidates`), gives the variances every contrast of the goal would
have, and so the expected number of contrasts whose joint interval would still be undecided.
Verdicts are chosen greedily, each step the one (or block) that lowers that number most per
unit cost, with the information updated after each choice
(:mod:`~hja_bayes.design.greedy`).  The fit itself is only read.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import ndtr, stdtrit

from ..threads import one_blas_thread
from ..checks import check_choice, check_integer, check_level, check_positive
from ..errors import DataWarning, HJAWarning, IdentifiabilityError, ParameterError, warn
from ..inference.ranking import simultaneous_critical_value
from ..position_locked import locked_judges
from . import screen as screening
from .candidates import MAX_WORK, candidate_cells, candidate_units
from .goals import GOALS, Goal, goal_pairs, mu_gradients, quadratic_forms
from .greedy import greedy_allocation
from .prompt_use import PromptUse, assign_prompts, check_prompts

__all__ = ["DesignContext", "design_context", "next_comparisons"]

#: Default equivalence margin (logits) under which a pair may be declared a tie: a 55:45
#: win rate between equally placed models.
TIE_MARGIN = 0.2

#: Default number of greedy steps: budgets above it are chosen in blocks of
#: ``ceil(budget / steps)`` verdicts on one (judge, pair).
STEPS = 500


def _check_fit(fit):
    from ..hja.result import HJAFit

    if not isinstance(fit, HJAFit):
        raise ParameterError(
            "next_comparisons and plan read a fitted HJA model (fit_hja, load_fit); got "
            f"{type(fit).__name__}")
    return fit


class DesignContext:
    """The pieces of a fit (and of a posterior of its model) that the design functions read
    (computed once).

    Attributes
    ----------
    fit : HJAFit
    fisher : WaldInference
        Fisher inference at the fit (its chart and covariance drive the search).
    robust : WaldInference or None
        Inference with the fit's default covariance (cluster-robust when the data carry
        prompts), which decides the goal; None when a posterior decides it.
    sigma : (dim, dim)
        Fisher covariance of the chart's factor coordinates.
    draws : (draws, N) or None
        The posterior's consensus draws, when the goal is decided from a posterior.
    """

    def __init__(self, fit, cov_type: str | None = None, posterior=None):
        self.fit = _check_fit(fit)
        self.fisher = fit.wald_inference("fisher")
        self.draws = None
        if posterior is not None:
            if cov_type is not None:
                raise ParameterError("cov_type and posterior are alternatives: the posterior "
                                     "decides the goal by its own variances")
            from .posterior import consensus_draws

            self.draws = consensus_draws(fit, posterior)
            self.cov_type, self.robust = "posterior", None
        else:
            self.cov_type = fit.cov_type if cov_type is None else cov_type
            try:
                self.robust = fit.wald_inference(self.cov_type)
            except IdentifiabilityError as error:  # e.g. a model on one prompt: ask for more
                if self.cov_type != "cluster":
                    raise
                warn(f"{error}. The design decides its goal by the Fisher covariance",
                     DataWarning)
                self.cov_type, self.robust = "fisher", self.fisher
        N = len(fit.items)
        #: why the deciding covariance makes no joint statement (fewer prompts than
        #: models), or None; the critical value then comes from the Fisher covariance
        self.joint_refusal = None if self.robust is None else self.robust.joint_refusal(
            N - 1, f"the scores of {N} models")
        chart = self.fisher.chart
        self.chart = chart
        self.sigma = self.fisher._chart_covariance(np.eye(chart.dim))
        self._robust_sigma = None

    @property
    def mu(self) -> np.ndarray:
        """The consensus the goal is read from: the fit's, or the posterior mean."""
        return self.fit.mu if self.draws is None else self.draws.mean(axis=0)

    def contrast_variances(self, G, pairs=None) -> tuple[np.ndarray, np.ndarray]:
        """Fisher and deciding variances of contrasts with gradients ``G`` (the posterior's
        of the differences ``pairs`` when a posterior decides)."""
        vF = quadratic_forms(G, self.sigma)
        if self.draws is not None:
            pairs = np.asarray(pairs, dtype=np.int64)
            return vF, np.var(self.draws[:, pairs[:, 0]] - self.draws[:, pairs[:, 1]],
                              axis=0, ddof=1)
        if self.cov_type == "fisher":
            return vF, vF
        if self._robust_sigma is None:  # not the (contrasts x contrasts) matrix: 3 GB for
            # the 19,900 pairs of 200 models
            self._robust_sigma = self.robust._chart_covariance(np.eye(self.chart.dim))
        return vF, quadratic_forms(G, self._robust_sigma)

    def critical_value(self, level: float) -> float:
        """The max-|t| critical value of the joint rank intervals at ``level`` (from the
        Fisher covariance where the deciding one makes no joint statement)."""
        cov = (np.cov(self.draws, rowvar=False) if self.draws is not None
               else (self.fisher if self.joint_refusal else self.robust).mu_covariance()[1])
        return simultaneous_critical_value(cov, level)

    def pair_critical_values(self, level: float, pairs) -> np.ndarray:
        """The critical value of each contrast ``pairs`` as the leaderboard's joint rank
        intervals use it: the max-|t| value, or under CR2 its t quantile at the pair's
        Satterthwaite degrees of freedom."""
        c = self.critical_value(level)
        pairs = np.asarray(pairs, dtype=np.int64)
        if (self.draws is not None or self.joint_refusal
                or self.robust.small_sample != "CR2"):
            return np.full(len(pairs), c)
        df = self.robust.difference_degrees_of_freedom(pairs)  # the goal's pairs only
        return np.where(np.isfinite(df), stdtrit(np.where(np.isfinite(df), df, 1.0), ndtr(c)), c)


def design_context(fit, cov_type: str | None = None, posterior=None) -> DesignContext:
    """A :class:`DesignContext` for ``fit`` (reuse it across calls on one fit)."""
    return DesignContext(fit, cov_type, posterior)


def _goal(ctx: DesignContext, goal: str, k: int, level: float, margin: float):
    """The goal (its count averaged over truths ``N(estimate, deciding variance)``), its
    contrasts' Fisher gradients, and the design effect: one number (the deciding over the
    Fisher variance, pooled over the contrasts), or per contrast from a posterior (each
    contrast's posterior variance then carries over to the search)."""
    mu = ctx.mu
    pairs = goal_pairs(goal, mu, k)
    G = mu_gradients(ctx.chart, pairs)
    vF, vD = ctx.contrast_variances(G, pairs)
    if ctx.draws is not None:
        design_effect = np.where(vF > 0, vD / np.where(vF > 0, vF, 1.0), 1.0)
    else:
        design_effect = float(vD.sum() / vF.sum()) if vF.sum() > 0 else 1.0
    critical = (np.zeros(len(pairs)) if goal == "pairs"
                else ctx.pair_critical_values(level, pairs))
    estimate = mu[pairs[:, 0]] - mu[pairs[:, 1]]
    target = Goal(goal, pairs, estimate, margin if goal in ("ranks", "tiers") else 0.0,
                  critical, goal == "pairs", vD)
    return target, G, design_effect, vD, vF


@one_blas_thread
def next_comparisons(fit, budget: int, *, goal: str = "top", k: int = 3, judges=None,
                     cost=None, prompts=None, seed: int = 0, level: float = 0.95,
                     tie_margin: float = TIE_MARGIN, candidates=None,
                     max_cost: float | None = None, steps: int = STEPS,
                     cov_type: str | None = None, posterior=None) -> pd.DataFrame:
    """The next ``budget`` comparisons to ask for, chosen for a goal.

    Each step adds the verdict (judge, model shown first, model shown second) whose
    expected Fisher information ``w d d^T`` in the model's chart lowers the goal's
    uncertainty most per unit cost, with the information updated after each choice.  The
    uncertainty of a goal is the expected number of its contrasts ``mu_a - mu_b`` whose
    joint (max-|t|) interval would still be undecided, averaged over what the fit says the
    true differences may be (``N(estimate, variance now)``: :mod:`~hja_bayes.design.goals`);
    for ``goal="pairs"`` it is the sum of the variances of every difference (A-optimality).
    With a ``posterior`` of the fit's model the goal is read from it instead: the order and
    the differences are the posterior means, the variances and the critical value the
    posterior's, and the count is averaged over the posterior of the true differences.
    A pure function of the fit (and posterior) and the seed, which breaks ties and picks
    the order of the next verdict of a (judge, pair) shown equally often both ways.

    Parameters
    ----------
    fit : HJAFit
        A fitted HJA model (``fit_hja`` or ``load_fit``).
    budget : int
        Verdicts to ask for (rows of the result).
    goal : {"top", "ranks", "pairs", "tiers"}
        "top": separate the top ``k`` from the rest; "ranks": decide every neighbouring
        pair of the ranking (separated, or a tie within ``tie_margin``); "tiers": decide
        every pair; "pairs": shrink every difference's variance.
    k : int
        Size of the top for ``goal="top"``.
    judges : mapping judge -> models, or list of judges, optional
        Who may be asked, and about which models (None as a value: every model).  Judges
        left out are not asked.  Default: every judge, every model.
    cost : mapping judge -> cost, optional
        Cost of one verdict per judge (e.g. 50 for a human, 1 for an LLM call); default 1.
        A Series, or a DataFrame with columns judge and cost, will do.  ``budget`` still
        counts verdicts: costs choose them, by uncertainty drop per unit cost.
    prompts : sequence, optional
        Prompt ids to put the verdicts on; each row then gets a ``prompt``: one on which the
        judge has not yet seen the two answers in that order (a verdict is never repeated, so
        each (judge, ordered pair) can take at most one verdict per prompt), then the one
        whose two answers were shown least, the pair's least used, the least used overall
        (the fit's data count when its clusters are named like the prompts).  A model's
        verdicts thus spread over prompts, and no pair can pile up correlated verdicts on a
        few of them.
    seed : int
        Breaks ties between equally good choices, and picks the presentation order of a
        (judge, pair) shown equally often both ways (with position bias the two orders'
        information differs a little: the order is not optimised).
    level : float
        Joint level of the intervals that decide the goal (the rank intervals' level).
    tie_margin : float
        For "ranks" and "tiers": a difference whose joint interval lies inside
        ``[-tie_margin, tie_margin]`` (logits) is decided as a tie.
    candidates : DataFrame, optional
        A finite pool to choose from (judge, model_a, model_b and an optional ``limit`` per
        row): replaying collected verdicts, or answers already generated.  Presentation
        orders are then the pool's.
    max_cost : float, optional
        Stop early rather than spend more than this.
    steps : int
        Greedy steps; a larger budget is chosen in blocks of ``ceil(budget / steps)``
        verdicts of one (judge, pair).
    cov_type : str, optional
        Covariance that decides the goal (default the fit's: cluster-robust with prompts).
        With prompts, new verdicts are assumed to carry the fit's design effect, the ratio
        of that covariance to the Fisher one over the goal's contrasts.
    posterior : InferenceData, optional
        A posterior sample of the fit's model (``sample_hja(data, rank, init=fit)``, or
        ``load_posterior`` of a folder written by ``hja-bayes fit --bayes``): it decides the
        goal by its consensus draws (``mu_marginal`` with prompt effects), in place of
        ``cov_type``.  The search still adds each verdict's Fisher information at the fit;
        each contrast keeps the ratio of its posterior to its Fisher variance (a design
        effect per contrast: prompt effects, the prior).

    Returns
    -------
    DataFrame
        One row per verdict, in the order chosen: ``judge``, ``model_a`` (shown first),
        ``model_b``, ``prompt`` (with ``prompts``), ``cost``, ``gain`` (the expected drop of
        the goal's uncertainty, the block's drop shared among its verdicts),
        ``uncertainty`` (expected uncertainty left after the row's step) and ``step``.
        Presentation orders balance each (judge, pair), counting the fit's own verdicts.
        ``attrs["meta"]`` holds the goal, level, critical value (the max-|t| value;
        ``critical_values``: the smallest and largest a contrast uses, each pair's t quantile
        at its own degrees of freedom under CR2, as the leaderboard), design effect (pooled over
        the goal's contrasts), the uncertainty before, ``undecided_now`` (how many of the
        goal's contrasts the fit's own joint intervals leave undecided; None for "pairs"),
        the block size, the seed and ``screened`` (None, or the units and contrasts a
        screened search ran on and the uncertainty it held); ``cov_type`` is "posterior"
        when a posterior decided the goal.

    Raises
    ------
    ParameterError
        Bad arguments: an unknown goal, judge or model, a cost that is not positive, ``k``
        outside 1..N-1, a budget below 1, nothing left to ask (with ``prompts``: every
        allowed judge has judged every allowed ordered pair on every prompt given).

    Warns
    -----
    HJAWarning
        Fewer rows than ``budget`` (without ``max_cost``): the prompts or the candidates'
        limits ran out; no row at all within ``max_cost``.

    Notes
    -----
    The design is computed from the current estimates and their variances, so it is only
    as good as the fit (start from a design that links every judge to every model).  The
    likelihood does not depend on how the pairs were chosen, but Wald intervals after a
    design that followed the estimates cover a little less than their level in simulation
    (``benchmarks/bench_adaptive.py``, 12 models, 300 seeds): marginal 95% intervals of the
    differences 0.935 after a fixed budget spent mostly by this rule (0.953 under random
    allocation; 0.921 when the count took the estimates for the true differences; 0.939
    when the whole budget was asked for in one call after a random start, and 0.939 for a
    randomised version of this rule fitted with importance weights, whose intervals were as
    wide as under random allocation); the joint rank intervals kept every true rank in every
    run.
    For the decision goals on panels with more than 4,000 candidate units (10 judges and 30
    models), the search is screened first (:mod:`~hja_bayes.design.screen`): it steers by
    the goal's most uncertain contrasts (at most 200; the others' uncertainty is carried in
    ``uncertainty`` as a constant) and chooses among the 4,000 units whose first block would
    do most for them to first order (``attrs["meta"]["screened"]``).  In simulation,
    keeping 1,000 of 7,800 units, it chose designs as good as the full search's (0.996 to
    1.000 of its drop), 8 to 58 times faster (``benchmarks/bench_next_screen.py``).
    "pairs" is not screened, and is refused above ``MAX_WORK`` candidate units x chart
    coordinates (e.g. 20 judges and 200 models); "tiers" is refused when its pairs x chart
    coordinates exceed it (some 300 models at rank 2).
    For outcome models with per-judge parameters (Davidson ties, ordinal cut points) only a
    verdict's information about its linear predictor is counted, not what it says about the
    judge's own tie propensity or cut points.

    Examples
    --------
    >>> import hja_bayes as hb
    >>> data, _ = hb.simulate(n_judges=3, n_items=6, rank=1, comparisons_per_judge=800)
    >>> fit = hb.fit_hja(data, rank=1)
    >>> plan = hb.next_comparisons(fit, 20, goal="top", k=2, cost={"judge0": 1,
    ...                            "judge1": 1, "judge2": 5})
    >>> list(plan.columns[:3]), len(plan)
    (['judge', 'model_a', 'model_b'], 20)
    """
    budget = check_integer(budget, "budget", 1)
    steps = check_integer(steps, "steps", 1)
    goal = check_choice(goal, "goal", GOALS)
    level = check_level(level)
    tie_margin = check_positive(tie_margin, "tie_margin", allow_zero=True)
    if goal == "top":
        k = check_integer(k, "k", 1)
    if max_cost is not None:
        max_cost = check_positive(max_cost, "max_cost")
    check_integer(seed, "seed")
    if isinstance(fit, DesignContext):
        if cov_type is not None or posterior is not None:
            raise ParameterError("a DesignContext carries its cov_type and posterior: pass "
                                 "them to design_context")
        ctx = fit
    else:
        ctx = DesignContext(fit, cov_type, posterior)
    fit = ctx.fit
    if ctx.joint_refusal and goal != "pairs":
        warn(f"{ctx.joint_refusal}: the goal's joint intervals take their critical value from "
             "the Fisher covariance, and the fit's leaderboard has no rank intervals until "
             f"there are more prompts than models ({len(fit.items)}): ask for these "
             "comparisons on new prompts (prompts=; hja-bayes next --prompts FILE)",
             DataWarning)
    units = candidate_units(fit, judges=judges, cost=cost, candidates=candidates)
    units_total = units.size
    large = units.size * ctx.chart.dim > MAX_WORK
    N, dim = len(fit.items), ctx.chart.dim
    # refused before any work: "pairs" cannot be screened (every variance counts), and
    # "tiers" needs every pair's gradient
    if (goal == "pairs" and large) or (goal == "tiers" and N * (N - 1) // 2 * dim > MAX_WORK):
        what = (f"{units.size:,} candidate (judge, pair) units" if goal == "pairs"
                else f"{N * (N - 1) // 2:,} contrasts")
        raise ParameterError(
            f"goal {goal!r} weighs every pair of the {N:,} models: {what} x {dim} chart "
            "coordinates is too large for it; ask for goal 'top' or 'ranks' (screened on "
            "large panels), restrict the judges or the models they may see (judges=; on the "
            "command line, the --cost file's models column) or pass a pool of candidates "
            "(candidates=)")
    target, G, design_effect, vD, vF = _goal(ctx, goal, k, level, tie_margin)
    block = max(1, math.ceil(budget / steps))
    search, effect, screened = target, design_effect, None
    if goal != "pairs" and (large or units.size > screening.KEEP_UNITS):
        screened = screening.screen(fit, ctx.chart, ctx.sigma, G, target, design_effect,
                                    units, min(block, budget), MAX_WORK)
        units, G = units.take(screened.units), G[screened.contrasts]
        search = target.subset(screened.contrasts)
        if np.ndim(design_effect):
            effect = design_effect[screened.contrasts]
    cand = candidate_cells(fit, ctx.chart, units)
    use = None
    if prompts is not None:  # a judge gives one verdict per (first, second, prompt)
        prompts = check_prompts(prompts)
        use = PromptUse(fit, prompts)
        free1 = [use.free(k, a, b) for k, a, b in zip(cand.judge, cand.a, cand.b)]
        free2 = [use.free(k, b, a) for k, a, b in zip(cand.judge, cand.a, cand.b)]
        cand = cand._replace(limit1=np.minimum(cand.limit1, free1),
                             limit2=np.minimum(cand.limit2, free2))
        if not np.any(cand.limit1 + cand.limit2 > 0):
            raise ParameterError(
                f"nothing left to ask: on the {len(prompts)} prompts given, every judge allowed "
                "has already judged every pair it may see in both orders (a judge gives one "
                "verdict per ordered pair and prompt); pass more prompts, or no prompts")
    picks = greedy_allocation(ctx.sigma, G, search, cand, budget, block=block,
                              design_effect=effect, seed=int(seed), max_cost=max_cost)
    rest = 0.0 if screened is None else screened.rest
    placed = sum(p.s1 + p.s2 for p in picks)
    if placed == 0 and max_cost is not None:
        warn(f"no verdict could be placed: max_cost {max_cost:g} is below the cost of any "
             "verdict that may be asked for", HJAWarning)
    elif placed < budget and max_cost is None:
        limits = ([] if candidates is None else ["the candidates' limits"]) + (
            [] if prompts is None else [f"the {len(prompts)} prompts given (one verdict per "
                                        "judge, ordered pair and prompt)"])
        warn(f"only {placed} of the {budget} verdicts asked for could be placed: "
             f"{' and '.join(limits)} allow no more", HJAWarning)
    before = float(target.uncertainty(design_effect * vF).sum())  # vF: the Fisher variances now
    rows = []
    for step, p in enumerate(picks):
        kk, a, b = int(cand.judge[p.candidate]), int(cand.a[p.candidate]), int(cand.b[p.candidate])
        orders = [(a, b)] * p.s1 + [(b, a)] * p.s2
        # alternate the two orders within a block (a1 b1 a2 b2 ...)
        orders = [o for pair in zip(orders[:p.s1], orders[p.s1:]) for o in pair] \
            + orders[min(p.s1, p.s2): p.s1] + orders[p.s1 + min(p.s1, p.s2):]
        size = p.s1 + p.s2
        for first, second in orders:
            rows.append((kk, first, second, cand.cost[p.candidate], p.gain / size,
                         p.after + rest, step))
    judge_names, items = np.asarray(fit.judges, dtype=object), np.asarray(fit.items, dtype=object)
    kk, first, second, price, gain, after, step = (np.asarray(c) for c in zip(*rows)) if rows \
        else (np.zeros(0, int),) * 3 + (np.zeros(0),) * 3 + (np.zeros(0, int),)
    out = pd.DataFrame({"judge": judge_names[kk.astype(int)], "model_a": items[first.astype(int)],
                        "model_b": items[second.astype(int)]})
    if prompts is not None:
        out["prompt"] = assign_prompts(use, prompts, kk.astype(int), first.astype(int),
                                        second.astype(int), int(seed))
    out["cost"] = price.astype(float)
    out["gain"] = gain.astype(float)
    out["uncertainty"] = after.astype(float)
    out["step"] = step.astype(int)
    out.attrs["meta"] = {
        "goal": goal, "k": int(k) if goal == "top" else None, "level": level,
        "tie_margin": target.margin,
        "critical_value": 0.0 if target.variance_only else ctx.critical_value(level),
        "critical_values": [float(target.critical.min()), float(target.critical.max())],
        "cov_type": ctx.cov_type,
        "design_effect": float(vD.sum() / vF.sum()) if vF.sum() > 0 else 1.0,
        "uncertainty_before": before,
        "undecided_now": None if target.variance_only else int(target.undecided_now().sum()),
        "uncertainty_unit": ("sum of variances" if goal == "pairs"
                             else "expected number of undecided contrasts"),
        "contrasts": len(target.pairs), "block": block, "budget": budget, "seed": int(seed),
        "total_cost": float(out["cost"].sum()),
        "screened": None if screened is None else {
            "units": int(units_total), "units_searched": len(screened.units),
            "contrasts_searched": len(screened.contrasts), "uncertainty_held": rest},
    }
    _warn_locked_asked(fit, out)
    return out


def _warn_locked_asked(fit, asked: pd.DataFrame) -> None:
    """A DataWarning when rows go to judges locked on one presentation slot
    (:mod:`~hja_bayes.position_locked`) while the fit has no position term: it then reads
    their verdicts as strong preferences and their next ones as informative."""
    if getattr(fit, "position_bias", True) or not len(asked):
        return
    locked = {j.judge: j for j in locked_judges(fit.data)}
    hit = asked["judge"].isin(list(locked))
    if hit.any():
        names = ", ".join(str(locked[j]) for j in dict.fromkeys(asked.loc[hit, "judge"]))
        warn(f"{int(hit.sum())} of the {len(asked)} comparisons asked for go to judges locked "
             f"on one presentation slot: {names}. The fit has no position bias term, so it "
             "reads their verdicts as preferences and expects the new ones to inform; refit "
             "with position_bias=True (hja-bayes fit --position-bias) before choosing, or "
             "leave them out (judges=; hja-bayes next --cost with the judges that may be "
             "asked)", DataWarning)
