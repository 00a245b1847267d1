"""What a NUTS run samples: the MAP checked against the request, the model with its data.

:func:`resolve_init` validates a request exactly as :func:`~hja_bayes.fit_hja` does (or
fits the MAP); :func:`build_problem` lays out the NumPyro model of
:mod:`~hja_bayes.bayes.model` over the data's units with the fit's terms and outcome model,
and puts the MAP into the model's raw coordinates, the point the Laplace approximation and
the chains' starts are built at (:mod:`~hja_bayes.bayes.run`).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

from ..checks import check_flag
from ..comparisons import Comparisons
from ..decomposition import Decomposition, check_rank
from ..errors import DataWarning, IdentifiabilityError, ParameterError, warn
from ..hja import HJAFit, check_fit_inputs, fit_hja
from ..likelihood import OutcomeModel, cells_of, outcome_model
from ..likelihood.terms import Position, design_of, terms_of
from .blocks import QUADRATURE, prompt_blocks, unit_keys
from .integrated import TOLERANCE, Integrated
from .model import FOLDED_TAU, POSITION, TermLayout, chart_at, hja_model, term_layout, unconstrain
from .outcomes import AUX_SITE, is_symmetric, log_scale_aux
from .prompts import entry_answers

__all__ = ["INTEGRATE_FROM_EFFECTS", "INTEGRATE_UP_TO_VERDICTS", "PROMPT_METHODS", "Problem",
           "PromptLayout", "Request", "build_problem", "default_prompt_method", "prompt_layout",
           "prompt_setting", "resolve_init", "start_prompts_at", "warn_laplace_prompts"]


class Request(NamedTuple):
    """What was sampled.

    Attributes
    ----------
    rank : int
    position_bias : bool
    prompt : {False, "sampled", "integrated"}
        Prompt (answer-quality) effects, and how the sampler handles them.
    outcome : OutcomeModel
    terms : tuple
        The fit's linear-term objects.
    level : {"cells", "entries"}
        The likelihood's units.
    layout : TermLayout
        The coefficients sampled.
    """

    rank: int
    position_bias: bool
    prompt: bool | str
    outcome: OutcomeModel
    terms: tuple
    level: str
    layout: TermLayout


def resolve_init(data, rank, init, position_bias, outcome, style=None, self_preference=None):
    """Validate a request exactly as fit_hja does and return (init fit, rank, position_bias,
    data).

    Without ``init`` the MAP is fitted (:func:`~hja_bayes.fit_hja`); with it, the rank,
    position bias, outcome model, terms, judges and items must match the request.  The data
    returned are ``data`` less the judges the fit left out (``init.excluded_judges``: too few
    comparisons, or every verdict in one slot), as the MAP was fitted without them.

    Raises
    ------
    IdentifiabilityError, ParameterError
        When ``init`` does not match the request; everything ``fit_hja`` raises.
    """
    if position_bias is not None and not isinstance(position_bias, Position):
        check_flag(position_bias, "position_bias")
    if init is None:
        pb = bool(position_bias) if position_bias is not None else False
        init = fit_hja(data, rank, position_bias=pb, outcome="half" if outcome is None else outcome,
                       style=style, self_preference=self_preference)
        return init, init.rank, pb, _without_left_out(data, init)
    if not isinstance(init, HJAFit):
        raise ParameterError(f"init must be an HJAFit (from fit_hja), got {type(init).__name__}")
    pb = init.position_bias if position_bias is None else bool(position_bias)
    data = _without_left_out(data, init)
    check_fit_inputs(data, pb)
    if isinstance(rank, str):
        raise IdentifiabilityError(
            f"rank {rank!r} selects a rank by fitting; with an explicit init pass its rank "
            f"({init.rank})")
    r = check_rank(rank, data.n_judges, data.n_items)
    if init.rank != r or init.position_bias != pb:
        raise IdentifiabilityError(
            f"init is a rank-{init.rank} fit with position_bias={init.position_bias}, but "
            f"rank {r} with position_bias={pb} was requested: sample init's model, "
            f"sample_hja(data, {init.rank}, position_bias={init.position_bias}, init=init), "
            "or fit the MAP of the one you want")
    if outcome is not None and outcome_model(outcome, data.categories).name != init.outcome:
        raise ParameterError(
            f"init was fitted with outcome={init.outcome!r}, but outcome={outcome!r} was "
            f"requested: fit the MAP with fit_hja(..., outcome={outcome!r})")
    if style is not None or self_preference is not None:
        wanted = terms_of(pb, style, self_preference)
        if tuple(wanted) != tuple(init.terms):
            raise ParameterError(
                f"init was fitted with the terms {list(init.terms)}, but {list(wanted)} were "
                "requested: fit the MAP with the same style= and self_preference=")
    if (init.judges, init.items) != (data.judges, data.items):
        same = (sorted(init.judges), sorted(init.items)) == (sorted(data.judges),
                                                             sorted(data.items))
        raise IdentifiabilityError(
            "init was fitted to data with "
            + ("the same judges and models in another order (data read from other rows)"
               if same else "other judges or models")
            + ": fit the MAP to these data, fit_hja(data, ...), or sample the data init was "
            "fitted to (init.data)")
    return init, r, pb, data


def _without_left_out(data, init: HJAFit):
    """``data`` without the judges ``init`` left out of its fit."""
    if not isinstance(data, Comparisons):
        return data  # check_fit_inputs says what it should be
    left = set(init.excluded_judges) & set(data.judges)
    return data.select_judges([j for j in data.judges if j not in left]) if left else data


class Problem(NamedTuple):
    """The NumPyro model of a request, its data arguments, the raw starting point (the MAP;
    answer effects at 0), the potential energy of the raw sites and what was requested.

    With integrated prompt effects both have exact first derivatives, the potential's
    Newton iterations stopping at the full tolerance and, once started at the modes
    (:func:`start_prompts_at`), the model's at the sampler's; see
    :class:`~hja_bayes.bayes.integrated.Integrated`."""

    model: Callable
    args: tuple
    params0: dict
    answers: object
    potential: Callable
    request: Request


def start_coefficients(init: HJAFit, layout: TermLayout, params0: dict) -> None:
    """The MAP's term coefficients as the model's raw sites ``coef_raw`` and ``theta_raw``."""
    names = tuple(init.coef_names)
    if tuple(layout.names) != names or tuple(layout.global_names) != tuple(init.theta_names):
        raise IdentifiabilityError(
            f"the fit's coefficients {list(names) + list(init.theta_names)} do not match the "
            f"terms' design {list(layout.names) + list(layout.global_names)}")
    others = [c for c, name in enumerate(names) if name != POSITION]
    if others:
        cols, rows = np.nonzero(layout.free[:, others].T)
        if len(rows):
            coef = np.asarray(init.coef, dtype=float)
            params0["coef_raw"] = jnp.asarray(coef[rows, np.asarray(others)[cols]])
    if layout.global_names:
        params0["theta_raw"] = jnp.asarray(np.asarray(init.theta, dtype=float))


def build_problem(data, init: HJAFit, r: int, pb: bool, prompt, priors,
                  outcome: OutcomeModel, held, quadrature=QUADRATURE) -> Problem:
    """The model of a request over ``data``'s units, with the MAP as its starting point.

    Parameters
    ----------
    data : Comparisons
    init : HJAFit
        The MAP (its terms and outcome model are the model's).
    r : int
    pb : bool
        Position bias.
    prompt : {False, "sampled", "integrated"}
        Prompt effects (True reads as "sampled").
    priors : HJAPriors
    outcome : OutcomeModel
    held : bool array (K, n_aux)
        Outcome parameters held at their boundary.
    quadrature : sequence of int
        Gauss-Hermite nodes per dimension of the prompts' integrals
        (:func:`~hja_bayes.bayes.blocks.prompt_blocks`).
    """
    N = data.n_items
    reference = Decomposition(init.gamma, init.mu, init.U, init.V, init.D)
    chart = chart_at(reference)
    raw0 = unconstrain(reference, init.beta if pb else None, chart)
    params0 = {"z_mu": raw0.z_mu, "z_gamma": raw0.z_gamma}
    if r > 0:
        params0.update(l_free=raw0.l_free, w=raw0.w)
    if pb:
        params0["beta_raw"] = raw0.beta
    terms = tuple(init.terms)
    if pb and not any(t.name == POSITION for t in terms):  # a fit made without its terms
        terms = (Position(),) + terms
    level = "entries" if prompt or any(t.needs_entries for t in terms) else "cells"
    # Without position bias the likelihood of (k, i, j) and (k, j, i) depends on the order
    # only through eta's sign (every other term changes sign with the order) and, for a
    # symmetric outcome model, reversing the order reverses the categories: the sampler then
    # works on folded units (same posterior, half the work); log-likelihoods and replicated
    # data stay per original unit.
    model_data = data if pb or not is_symmetric(outcome) else data.fold_order()
    design = design_of(model_data, terms, level)
    layout = term_layout(design)
    start_coefficients(init, layout, params0)
    if outcome.n_aux:
        aux0 = log_scale_aux(outcome, np.asarray(init.aux, dtype=float).reshape(held.shape))
        params0[AUX_SITE] = jnp.asarray(aux0[~held])
    cells = cells_of(model_data, outcome=outcome, design=design)
    answers = answer_terms = integrated = None
    if prompt is True:
        prompt = "sampled"
    if prompt:
        answers, _ = entry_answers(model_data)
        answer_terms = (jnp.asarray(answers.first), jnp.asarray(answers.second),
                        jnp.asarray(answers.item))
        if prompt == "integrated":
            params0[FOLDED_TAU] = jnp.full(N, 0.5 * priors.tau_scale)
            # prompts whose units are alike share one integral (the blocks hold for these
            # counts only: the model is never given others)
            blocks = prompt_blocks(answers.first, answers.second, answers.question,
                                   len(model_data.clusters.names), quadrature=quadrature,
                                   unit_keys=unit_keys(cells))
            integrated = Integrated(blocks)
        else:
            params0["tau"] = jnp.full(N, jnp.log(0.5 * priors.tau_scale))  # unconstrained: log
            params0["z_alpha"] = jnp.zeros(len(answers.labels))
    settings = dict(rank=r, position_bias=pb, terms=layout, priors=priors, outcome=outcome,
                    answers=answer_terms, held=held)
    model = partial(hja_model, **settings, integrated=integrated)
    args = (cells, chart, cells.counts)
    request = Request(r, pb, prompt, outcome, terms, level, layout)
    return Problem(model, args, params0, answers, _potential(model, args), request)


def _potential(model, args):
    from numpyro.infer.util import potential_energy

    def potential(p):
        return potential_energy(model, args, {}, p)

    return potential


def start_prompts_at(problem: Problem, params: dict, tolerance: float = TOLERANCE,
                     single: bool = False) -> Problem:
    """The problem with every prompt's Newton iterations started at its mode at ``params``
    (raw sites), for integrated prompt effects; other problems are returned as they are.

    The potential is the same function (the modes are unique); near ``params`` it takes
    fewer iterations (:func:`~hja_bayes.bayes.integrated.prompt_modes`).  The model's
    iterations stop at ``tolerance`` (the sampler's:
    :data:`~hja_bayes.bayes.integrated.SAMPLING_TOLERANCE`) and, with ``single``, its
    quadrature rules sum the log integrand in single precision (the sampler's:
    :func:`~hja_bayes.bayes.integrated.log_integrals`); the potential's at the defaults.
    """
    import jax
    from numpyro.infer.util import constrain_fn

    integrated = problem.model.keywords.get("integrated")
    if integrated is None:
        return problem
    recording = partial(problem.model, integrated=integrated._replace(record_modes=True))
    names = [f"prompt_mode_{b}" for b in range(len(integrated.blocks))]

    @jax.jit  # one compiled call, not the model's operations one by one
    def modes(args, params):
        values = constrain_fn(recording, args, {}, params, return_deterministic=True)
        return [values[name] for name in names]

    starts = tuple(np.asarray(mode) for mode in modes(problem.args, params))
    model = partial(problem.model, integrated=integrated._replace(
        starts=starts, tolerance=tolerance, single=single))
    exact = partial(problem.model, integrated=integrated._replace(starts=starts))
    return problem._replace(model=model, potential=_potential(exact, problem.args))


#: How ``sample_hja`` can handle prompt effects.
PROMPT_METHODS = ("sampled", "integrated")
#: The default integrates the answer effects out only where sampling them would give NUTS at
#: least this many latent effects ...
INTEGRATE_FROM_EFFECTS = 2500
#: ... and the prompts carry at most this many verdicts each (median): see
#: :func:`default_prompt_method`.
INTEGRATE_UP_TO_VERDICTS = 2


class PromptLayout(NamedTuple):
    """What the choice between the two prompt methods rests on."""

    effects: int  # answer effects (one per prompt and model shown on it)
    most_answers: int  # answers shown on the largest prompt
    median_verdicts: float  # verdicts per prompt, median over prompts holding any


def prompt_layout(data) -> PromptLayout:
    """The answer effects, largest prompt and median verdicts per prompt of ``data``."""
    answers, _ = entry_answers(data)
    per_prompt = np.bincount(answers.question)
    verdicts = data.clusters.comparisons_per_cluster()
    return PromptLayout(len(answers.labels), int(per_prompt.max(initial=0)),
                        float(np.median(verdicts[verdicts > 0])) if np.any(verdicts > 0) else 0.0)


def default_prompt_method(data, quadrature=QUADRATURE) -> tuple[str, str]:
    """The prompt method ``sample_hja`` uses by default, and why (a phrase).

    "integrated" where sampling the effects would put many latent effects into NUTS
    (:data:`INTEGRATE_FROM_EFFECTS` or more), the prompts carry few verdicts each (median
    :data:`INTEGRATE_UP_TO_VERDICTS` or fewer) and every prompt has a product rule
    (``len(quadrature) + 1`` answers or fewer: larger ones would get the Laplace
    approximation, which biases the posterior where verdicts are few); "sampled" otherwise.
    Measured on simulated 5 x 5 panels at the default draws, 4 chains x (500 + 1000) on
    four host devices (``benchmarks/bench_bayes_integrated.py``'s ``run``), with the sampled
    effects' arrow-shaped whitening (:mod:`hja_bayes.bayes.arrow`): on 2,000 prompts with a
    median of 2 verdicts each (5,533 effects) the sampled effects had not mixed (tau's R-hat
    1.10); with 3 (7,002 effects) they had, R-hat 1.0066 in 62 s, and with 5 on 1,000 and
    2,000 prompts 1.0095 in 37-44 s and 1.0108 in 75 s, 0 divergences, where the integrated
    sampler took 614 s on the 1,000 prompts (R-hat 1.004; at equal draws it gets more
    effective draws, but fewer per second).  On Chatbot Arena (one verdict per prompt) only
    the integrated sampler mixes.  Shorter runs, 2 x (300 + 300) (``--parts crossover``),
    had the sampled effects unmixed from ~2,800 effects on at one to five verdicts per
    prompt: short runs on large panels may warn of R-hat either way.
    """
    layout = prompt_layout(data)
    ruled = layout.most_answers <= len(tuple(quadrature)) + 1
    verdicts = (f"a median of {layout.median_verdicts:g} "
                f"verdict{'' if layout.median_verdicts == 1 else 's'} per prompt")
    if (layout.effects >= INTEGRATE_FROM_EFFECTS and ruled
            and layout.median_verdicts <= INTEGRATE_UP_TO_VERDICTS):
        return "integrated", f"{layout.effects:,} answer effects, {verdicts}"
    why = (f"{layout.effects:,} answer effects, fewer than {INTEGRATE_FROM_EFFECTS:,}"
           if layout.effects < INTEGRATE_FROM_EFFECTS else
           f"prompts of up to {layout.most_answers} answers" if not ruled else verdicts)
    return "sampled", why


#: Verdicts per answer (median over the prompts concerned) below which a warning says that
#: the Laplace approximation serves prompts too large for a product rule.
LAPLACE_FROM_VERDICTS_PER_ANSWER = 10


def warn_laplace_prompts(data, quadrature=QUADRATURE) -> None:
    """A DataWarning when integrated prompt effects would use the Laplace approximation on
    prompts with few verdicts per answer (median below
    :data:`LAPLACE_FROM_VERDICTS_PER_ANSWER`).

    Its error in each prompt's log integral grows with tau and shrinks with the verdicts,
    and summed over many prompts it moves every global quantity: on 1,000 five-answer
    prompts of five verdicts, tau came out 1.55-2.25 against 0.95-1.34 with the effects
    sampled; on MT-Bench (six answers, ~20 verdicts per answer) it agreed within 1.4%.
    """
    answers, _ = entry_answers(data)
    per_prompt = np.bincount(answers.question, minlength=len(data.clusters.names))
    large = per_prompt > len(tuple(quadrature)) + 1
    if not np.any(large):
        return
    verdicts = data.clusters.comparisons_per_cluster()[large] / per_prompt[large]
    if np.median(verdicts) < LAPLACE_FROM_VERDICTS_PER_ANSWER:
        warn(
            f"{int(large.sum())} prompts show more than {len(tuple(quadrature)) + 1} answers "
            f"and get the Laplace approximation of their integrals, with a median of "
            f"{np.median(verdicts):.3g} verdicts per answer: it biases tau and gamma where "
            f"verdicts are few; use prompt_effects='sampled' (or a longer quadrature)",
            DataWarning)


def prompt_setting(data, prompt_effects, quadrature=QUADRATURE) -> tuple[bool | str, str]:
    """Whether prompt effects are on, and how: False, "integrated" or "sampled"; and why.

    Default (None), True and "auto": on when the data carry clusters, the method chosen by
    :func:`default_prompt_method`; a method's name forces it.

    Raises
    ------
    ParameterError
        For an unknown method, or prompt effects asked for on data without clusters.
    """
    if isinstance(prompt_effects, np.bool_):
        prompt_effects = bool(prompt_effects)
    if prompt_effects is None:
        if data.clusters is None:
            return False, "no prompts (clusters) in the data"
        prompt_effects = "auto"
    if prompt_effects is False or (isinstance(prompt_effects, (int, np.integer))
                                   and not prompt_effects):
        return False, "turned off"
    if prompt_effects is True:
        prompt_effects = "auto"
    if isinstance(prompt_effects, str):  # any case, as the other choices
        prompt_effects = prompt_effects.lower()
    if prompt_effects not in PROMPT_METHODS + ("auto",):
        raise ParameterError(f"prompt_effects must be True, False, None, 'auto' or one of "
                             f"{PROMPT_METHODS}, got {prompt_effects!r}")
    if data.clusters is None:
        raise ParameterError(f"prompt_effects={prompt_effects!r} needs clusters: read the "
                             "data with cluster=<question column>")
    if prompt_effects == "auto":
        return default_prompt_method(data, quadrature)
    return prompt_effects, "asked for"
