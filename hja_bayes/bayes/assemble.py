"""From NUTS's draws to the ``InferenceData``: replicated data, pointwise log-likelihood, layout.

The sampler may run on folded cells (without position bias the likelihood depends on the
order of presentation only through ``eta``'s sign); everything stored here is computed on
the data's own units, in their order: its cells, or its (question, cell) entries when the
prompt effects or a term vary by prompt.  The layout itself is
:func:`~hja_bayes.bayes.convert.to_inference_data`'s.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from ..btl import usable_cores
from ..categories import THREE, collapse_counts
from ..likelihood import Cells, OutcomeModel, cells_of, probabilities
from ..likelihood.terms import design_of
from .align import AlignedDraws
from .convert import Units, to_inference_data
from .outcomes import log_scale_aux, predicts_middle
from .problem import Request
from .predictive import (comparison_index, outcome_log_likelihood, replicate_outcomes,
                         unit_aux, unit_logits)
from .prompts import entry_answers, marginal_consensus
from .recover import EffectDrawer, single_verdict_units

__all__ = ["POINTWISE_LIMIT", "assemble", "averaged_units", "data_units", "keeps_pointwise",
           "predictive"]

#: Largest number of values (draws x comparisons) stored in the ``log_likelihood`` group
#: (25 million float64 values = 200 MB); above it the group is left out (PSIS-LOO by
#: :func:`~hja_bayes.bayes.psis_loo` does not need it).
POINTWISE_LIMIT = 25_000_000

#: Draws whose replicated data are computed at once.
_STEP = 256
#: Runs of draws computed at once at most, in threads, one per usable core (the 5 x 5 x
#: 1,000-prompt panel's 4,000 draws: 4.4 -> 2.7 s on two cores; Chatbot Arena's integrated
#: effects drawn on one device: 9.4 -> 7.3 s per 1,024 draws).
_THREADS = 2


def data_units(data, request: Request):
    """The data's own likelihood units (NumPy) and, with prompt effects, their answers."""
    design = design_of(data, request.terms, request.level)
    cells = Cells(*(np.asarray(a) for a in cells_of(data, outcome=request.outcome,
                                                     design=design)))
    if request.level == "cells":
        return Units(cells, np.arange(data.n_cells), None), None
    answers, cell = entry_answers(data)
    prompt = (answers.first, answers.second) if request.prompt else None
    return Units(cells, cell, prompt), answers if request.prompt else None


def keeps_pointwise(counts, draws: int, max_pointwise: int) -> bool:
    """Whether the per-comparison log-likelihood is stored: whole counts, and draws x
    comparisons at most ``max_pointwise``."""
    counts = np.asarray(counts, dtype=float)
    return bool(np.allclose(counts, np.rint(counts))
                and draws * int(np.rint(counts).sum()) <= max_pointwise)


def averaged_units(units: Units, question, draws: int, max_pointwise: int,
                   keep_alpha: bool) -> np.ndarray | None:
    """The units whose replicated data come from their outcome probabilities averaged over
    their integrated prompt effects (:class:`~hja_bayes.bayes.recover.EffectDrawer`), or
    None: the single verdicts alone on their prompt, where neither the effects
    (``keep_alpha``) nor the per-comparison log-likelihood are stored (both need every
    effect drawn).  The replicated verdicts have the same distribution, and the effects are
    not drawn (Chatbot Arena: 7,529 of 9,937 units, 8.9 -> 2.8 ms per draw).

    ``question`` (answers,): the prompt of every answer; ``draws``: chains x draws.
    """
    if keep_alpha or keeps_pointwise(units.cells.counts, draws, max_pointwise):
        return None
    return single_verdict_units(units.cells, units.prompt, question)


def predictive(draws: dict, units: Units, outcome: OutcomeModel, n_cells: int, seed,
               max_pointwise: int, effects=None, keep_effects: bool = False):
    """Replicated data per cell and, within the size limit, the per-comparison
    log-likelihood.

    Parameters
    ----------
    draws : dict
        ``S`` (chain, draw, K, N), ``Z`` (chain, draw, K, q), ``theta`` (chain, draw, g),
        ``gamma`` (chain, draw, K), ``alpha`` (chain, draw, answers), ``aux`` (chain,
        draw, K, n_aux) unconstrained, or None.
    units : Units
        The data's units (:func:`data_units`).
    outcome : OutcomeModel
    n_cells : int
    seed : int
    max_pointwise : int
    effects : EffectDrawer, optional
        Draws the answer effects (integrated prompt effects: ``draws["alpha"]`` is None),
        and gives the outcome probabilities of the units it averages instead.
    keep_effects : bool
        Return the drawn effects.

    Returns
    -------
    replicated : dict
        ``wins``, ``ties`` (chain, draw, cells) and ``categories`` (chain, draw, K, C), and
        ``expected_wins`` (cells): the posterior mean of each cell's expected wins of the
        first-shown item (ties 1/2), :func:`~hja_bayes.bayes.ppc.expected_wins` averaged
        over the draws, computed here where integrated prompt effects are drawn anyway
        (for the units ``effects`` averages, from their averaged probabilities: the same
        mean, with less Monte Carlo noise than the draws give).
    pointwise : ndarray (chain, draw, comparisons) or None
    labels : dict or None
        ``unit``, ``cell`` and ``outcome`` (category label) of every comparison.
    stored : str
        How the log-likelihood was stored, or why it was not.
    alpha : ndarray (chain, draw, answers) or None
        The drawn effects, with ``keep_effects``.
    """
    S = draws["S"]
    chains, n_draws = S.shape[:2]
    total = chains * n_draws
    counts = np.asarray(units.cells.counts, dtype=float)
    C = counts.shape[1]
    integral = np.allclose(counts, np.rint(counts))
    n_comparisons = int(np.rint(counts).sum()) if integral else 0
    keep_pointwise = keeps_pointwise(counts, total, max_pointwise)
    index = comparison_index(counts) if keep_pointwise else None
    flat = {k: None if v is None else np.asarray(v).reshape((total,) + np.shape(v)[2:])
            for k, v in draws.items()}
    judge = np.asarray(units.cells.judge)
    K = S.shape[2]
    replicated = {"wins": np.zeros((total, n_cells), np.float32),
                  "ties": np.zeros((total, n_cells), np.float32),
                  "categories": np.zeros((total, K, C), np.float32)}
    pointwise = np.empty((total, n_comparisons)) if keep_pointwise else None
    kept = None
    if effects is not None and keep_effects:
        kept = np.empty((total, len(effects.item)))
    m = len(units.cell)
    to_cells = sparse.csr_matrix((np.ones(m), (np.arange(m), units.cell)), shape=(m, n_cells))
    to_judges = sparse.csr_matrix((np.ones(m), (judge, np.arange(m))), shape=(K, m))
    n = np.asarray(units.cells.n)

    def chunk(start: int) -> np.ndarray:
        """Fill the draws start..start + _STEP of every output; return their expected wins."""
        stop = min(start + _STEP, total)
        part = {k: None if v is None else v[start:stop] for k, v in flat.items()}
        prompt = averaged = None
        if units.prompt is not None:
            alpha = part["alpha"]
            if effects is not None:
                alpha, averaged = effects.with_probabilities(
                    np.arange(start, stop), part["S"], part["Z"], part["theta"],
                    part["gamma"], part["aux"], part["tau"])
                if kept is not None:
                    kept[start:stop] = alpha
            prompt = (part["gamma"], alpha, units.prompt[0], units.prompt[1])
        eta = unit_logits(part["S"], part["Z"], units.cells, part["theta"], prompt)
        aux = unit_aux(part["aux"], judge)
        p = np.asarray(probabilities(outcome, np.asarray(eta, dtype=float), aux), dtype=float)
        if averaged is not None:  # single verdicts whose effects were not drawn
            p[:, effects.averaged] = averaged
        # each run of draws has its own stream: the same numbers however the runs are spread
        rep = replicate_outcomes(p, n, [int(seed), 0x5EED, start])  # (draws, units, C)
        p = collapse_counts(p)
        three = collapse_counts(rep)
        for name, value in (("wins", three[..., 0] + 0.5 * three[..., 1]),
                            ("ties", three[..., 1])):
            replicated[name][start:stop] = (to_cells.T @ value.T).T
        replicated["categories"][start:stop] = np.stack(
            [(to_judges @ rep[..., c].T).T for c in range(C)], axis=-1)
        if keep_pointwise:
            ll = outcome_log_likelihood(eta, outcome, aux)
            pointwise[start:stop] = ll.reshape(stop - start, -1)[:, index]
        return to_cells.T @ (n * (p[..., 0] + 0.5 * p[..., 1])).sum(axis=0)

    starts = range(0, total, _STEP)
    expected = chunk(0)  # the first run alone: it compiles the effects' drawer
    # runs side by side, unless the effects' drawer spreads its program over the devices
    threads = min(_THREADS, usable_cores())
    if threads > 1 and (effects is None or effects.lanes == 1):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:
            expected = sum(pool.map(chunk, starts[1:]), expected)
    else:
        expected = sum((chunk(start) for start in starts[1:]), expected)
    replicated = {k: v.reshape((chains, n_draws) + v.shape[1:]) for k, v in replicated.items()}
    replicated["expected_wins"] = expected / total
    if kept is not None:
        kept = kept.reshape(chains, n_draws, -1)
    if not keep_pointwise:
        why = ("counts are not whole numbers" if not integral else
               f"{total} draws x {n_comparisons} comparisons exceed the limit of "
               f"{max_pointwise} values")
        return replicated, None, None, why, kept
    labels = {"unit": index // C, "cell": units.cell[index // C],
              "outcome": np.asarray(outcome.categories)[index % C]}
    return replicated, pointwise.reshape(chains, n_draws, -1), labels, "per comparison", kept


def assemble(samples: dict, sample_stats: dict, aligned: AlignedDraws, data, init,
             request: Request, *, seed: int, max_pointwise: int, attrs: dict,
             keep_alpha: bool | None = None):
    """The ``InferenceData`` of a NUTS run (layout: :mod:`~hja_bayes.bayes.convert`).

    Parameters
    ----------
    samples : dict
        NumPyro's draws grouped by chain (raw and deterministic sites).
    sample_stats : dict
        Sampler statistics (chain, draw).
    aligned : AlignedDraws
        The canonical draws aligned to the MAP.
    data : Comparisons
    init : HJAFit
        The MAP (its negative log-likelihood and BIC are recorded).
    request : Request
    seed, max_pointwise : int
    attrs : dict
        Further ``posterior.attrs`` (sampler settings and timings).
    keep_alpha : bool, optional
        Integrated prompt effects: store the drawn answer effects (default: when draws x
        answers is at most ``max_pointwise``).
    """
    outcome, layout = request.outcome, request.layout
    d, S = aligned.decomposition, aligned.S
    K, N = data.n_judges, data.n_items
    shape = S.shape[:2]
    Z = (np.asarray(samples["coef"]) if layout.names
         else np.zeros(shape + (K, 0)))
    theta = np.asarray(samples["theta"]) if layout.global_names else None
    aux = None
    if outcome.n_aux:
        natural = np.stack([np.asarray(samples[name]) for name in outcome.aux_names], -1)
        aux = log_scale_aux(outcome, natural)
    integrated = request.prompt == "integrated"
    units, answers = data_units(data, request)
    # sampled effects sample log tau (recorded as tau_value), integrated ones |tau_folded|
    tau = (np.asarray(samples["tau" if integrated else "tau_value"]) if request.prompt
           else None)
    effects = None
    if integrated:
        alpha = None
        if keep_alpha is None:
            keep_alpha = S.shape[0] * S.shape[1] * len(answers.labels) <= max_pointwise
        averaged = averaged_units(units, answers.question, S.shape[0] * S.shape[1],
                                  max_pointwise, keep_alpha)
        effects = EffectDrawer(units.cells, units.prompt, answers.question, answers.item,
                               outcome, seed, averaged=averaged)
    else:
        alpha = np.asarray(samples["alpha"]) if request.prompt else np.zeros(shape + (0,))
    draws = {"S": S, "Z": Z, "theta": theta, "gamma": np.asarray(d.gamma), "alpha": alpha,
             "aux": aux, "tau": tau}
    replicated, pointwise, labels, stored, drawn = predictive(
        draws, units, outcome, data.n_cells, seed, max_pointwise, effects,
        bool(integrated and keep_alpha))
    if drawn is not None:
        alpha = drawn
    posterior = {"gamma": d.gamma, "mu": d.mu, "U": d.U, "V": d.V, "D": d.D, "S": S}
    if request.position_bias:
        posterior["beta"] = np.asarray(samples["beta"])
    if any(name != "position" for name in layout.names):
        posterior["coef"] = Z
    if theta is not None:
        posterior["theta"] = theta
    if request.prompt:
        mu_bar, S_bar = marginal_consensus(S.reshape((-1, K, N)),
                                           np.asarray(d.gamma).reshape(-1, K), tau.reshape(-1, N))
        # the judges' sensitivities on the same, population-averaged, scale: S_bar's loadings
        # on mu_bar, as gamma = S mu / |mu|^2 (they sum to K)
        gamma_bar = np.einsum("dkn,dn->dk", S_bar, mu_bar) / np.sum(mu_bar**2, axis=1, keepdims=True)
        posterior.update(tau=tau, mu_marginal=mu_bar.reshape(shape + (N,)),
                         gamma_marginal=gamma_bar.reshape(shape + (K,)),
                         S_marginal=S_bar.reshape(shape + (K, N)))
        if alpha is not None:
            posterior["alpha"] = alpha
    for name in outcome.aux_names:
        posterior[name] = np.asarray(samples[name])
    attrs = {"rank": request.rank, "position_bias": int(request.position_bias),
             "outcome": outcome.name, "map_nll": float(init.nll), "map_bic": float(init.bic),
             "seed": int(seed), **attrs, **aligned.shares, "log_likelihood": stored,
             "prompt_effects": int(bool(request.prompt)),
             "prompt_method": str(request.prompt) if request.prompt else "none",
             "units": request.level}
    three = tuple(outcome.categories) == THREE
    return to_inference_data(
        posterior=posterior, data=data, replicated_wins=replicated["wins"],
        replicated_ties=replicated["ties"] if predicts_middle(outcome) else None,
        replicated_categories=None if three else replicated["categories"],
        expected_wins=replicated["expected_wins"],
        pointwise=pointwise, comparison_labels=labels, sample_stats=sample_stats,
        attrs=attrs, answers=answers, units=units, outcome=outcome,
        term_names=(layout.names, layout.global_names))
