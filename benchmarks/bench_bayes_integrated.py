"""Integrated prompt effects against sampled ones: cost per gradient, whole runs, same answer.

Parts (``--parts``, comma-separated):

* ``gradient``: milliseconds per value-and-gradient of the potential NUTS differentiates, for
  ``prompt_effects="integrated"`` and ``"sampled"``, on simulated 5 x 5 panels (rank 1, five
  verdicts per prompt, question correlation 0.5) with 200 and 1,000 prompts; jitted, the
  median of 50 calls after a first one.
* ``panel``: the issue's panel, 5 judges x 5 models x 1,000 prompts: ``sample_hja`` with the
  integrated effects, 4 chains x (500 + 1000), wall time of the call in this process
  (compilation included), the part of it from the search for the chains' start to the last draw
  (``sampling_time``), max R-hat of ``mu_marginal``, gamma and tau, divergences;
  ``panel_sampled``: the same with the sampled effects.  The chains run in parallel, on
  four host devices (``numpyro.set_host_device_count(4)``, as the sampler's documentation
  tells users to; ``--sequential``: one device).
* ``laplace_bias``: the same panel, 2 chains x (300 + 300) each way: the effects integrated
  by the default rule (up to five answers), integrated by the Laplace approximation
  (``quadrature=(21, 9)``, the default before), and sampled: posterior mean, sd and MCSE
  of tau and ``mu_marginal``, wall time, steps per draw.
* ``accuracy``: the per-prompt log integral of 300 simulated prompts with three answers
  (two free dimensions) and 3-6 verdicts each, at tau = 0.3, 1, 2, by the default 9 x 9
  rule, a 7 x 7 rule and the Laplace approximation, against a 25 x 25 rule (mean and max
  absolute error per prompt).
  Then 1,000 five-answer prompts with five verdicts each: the summed log integrals of the
  default rules, of cheaper rules for four dimensions (3^4 nodes; a fully symmetric
  degree-7 rule of 49) and of the Laplace approximation against a finer rule, at tau 0.5-2,
  and the milliseconds of one value and gradient with each.
* ``arena``: the real panel with the most prompts we hold, Chatbot Arena from JA-Ranking
  (10 LLM judges, 20 models, 8,691 prompts, most with one verdict; needs ``HJA_DATA_DIR``):
  ``sample_hja`` rank 1 with the integrated effects, 4 chains x (500 + 1000), as ``panel``;
  ``arena_sampled``: the same with the sampled effects.
* ``crossover``: which method is faster, by prompts and verdicts per prompt.  Simulated
  5 x 5 panels (rank 1, question correlation 0.5), ``--designs PROMPTS:VERDICTS,...``
  (default 2,000 verdicts on 400, 100 and 20 prompts, and 4,000 on 800), both methods,
  2 chains x (300 + 300): wall time, steps per draw, and the smallest bulk ESS of
  ``mu_marginal``, gamma and tau per second of the whole call.
* ``mtbench``: MT-Bench rank 1 (needs ``HJA_DATA_DIR``), both methods with 4 chains x
  (500 + 1000): posterior means and sds of ``mu_marginal``, gamma and tau, the difference of
  means over its Monte Carlo standard error, and the sds' ratio.

Writes ``benchmarks/results/bayes_integrated.json`` and ``.md`` (parts run earlier are kept).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

if "--sequential" not in sys.argv:
    import numpyro

    numpyro.set_host_device_count(4)  # before JAX starts: one CPU device per chain

RESULTS = Path(__file__).resolve().parent / "results"
QUANTITIES = ("mu_marginal", "gamma", "tau")


def panel(questions: int, seed: int = 1):
    from hja_bayes import simulate

    data, _ = simulate(5, 5, 1, 5 * questions // 5, seed=seed, questions=questions,
                       question_correlation=0.5)
    return data


def gradient_costs(sizes, log):
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import potential_energy

    from hja_bayes import fit_hja
    from hja_bayes.bayes.outcomes import held_aux
    from hja_bayes.bayes.priors import HJAPriors
    from hja_bayes.bayes.problem import build_problem
    from hja_bayes.likelihood import outcome_model

    out = []
    half = outcome_model("half")
    for questions in sizes:
        data = panel(questions)
        fit = fit_hja(data, 1)
        row = {"questions": questions, "comparisons": int(data.n_comparisons)}
        for method in ("integrated", "sampled"):
            problem = build_problem(data, fit, 1, False, method, HJAPriors(), half,
                                    held_aux(data, half))
            model, args, params = problem.model, problem.args, problem.params0
            flat, unravel = ravel_pytree({k: jnp.asarray(params[k]) for k in sorted(params)})
            value_and_grad = jax.jit(jax.value_and_grad(
                lambda x: potential_energy(model, args, {}, unravel(x))))
            jax.block_until_ready(value_and_grad(flat))
            times = []
            for i in range(50):
                t = time.perf_counter()
                jax.block_until_ready(value_and_grad(flat + 1e-4 * i))
                times.append(time.perf_counter() - t)
            row[method] = {"dimension": int(flat.shape[0]), "ms": 1e3 * float(np.median(times))}
        log(f"gradient, {questions} prompts: " + ", ".join(
            f"{m} dim {row[m]['dimension']} {row[m]['ms']:.2f} ms" for m in ("integrated", "sampled")))
        out.append(row)
    return out


CROSSOVER = "400:2000,100:2000,20:2000,800:4000"


def crossover(log, designs: str = CROSSOVER, rows=None, methods=("integrated", "sampled")):
    """``methods`` on each design ``prompts:verdicts`` (rows and methods measured earlier
    are kept)."""
    import arviz as az

    from hja_bayes import simulate

    rows = [] if rows is None else rows
    for design in designs.split(","):
        questions, verdicts = (int(x) for x in design.split(":"))
        data, _ = simulate(5, 5, 1, verdicts // 5, seed=1, questions=questions,
                           question_correlation=0.5)
        from hja_bayes.bayes.problem import default_prompt_method, prompt_layout

        earlier = [r for r in rows if (r["prompts"], r["verdicts"]) == (questions, verdicts)]
        row = {**(earlier[0] if earlier else {}),
               "prompts": questions, "verdicts": int(data.n_comparisons),
               "effects": prompt_layout(data).effects,
               "default": default_prompt_method(data)[0]}
        for method in methods:
            res = run(data, method, log, chains=2, warmup=300, draws=300, keep=True)
            idata = res.pop("idata")
            ess = min(float(np.min(az.ess(idata, var_names=[q])[q].values)) for q in QUANTITIES)
            res["min_bulk_ess"] = ess
            res["ess_per_second"] = ess / res["seconds"]
            row[method] = res
        log(f"crossover, {questions} prompts: " + ", ".join(
            f"{m} {row[m]['seconds']:.0f} s, {row[m]['steps_per_draw']:.1f} steps, "
            f"ESS/s {row[m]['ess_per_second']:.2f}" for m in methods))
        rows[:] = [r for r in rows if (r["prompts"], r["verdicts"]) != (questions, verdicts)]
        rows.append(row)
    return rows


def rhat_floor(ess, chains: int, draws: int, replicates: int = 300, seed: int = 0) -> dict:
    """The max R-hat a perfect sampler would show with these bulk ESS: every quantity's
    chains stationary AR(1) series whose autocorrelation gives its ESS
    (``ESS / (chains draws) = (1 - rho) / (1 + rho)``), the max over the quantities of
    ArviZ's rank-normalised split R-hat, over ``replicates`` simulations: its median, 90%
    quantile and how often it exceeds 1.01.  R-hat's own sampling noise grows as the ESS
    shrinks, so a goal of 1.01 needs a large enough ESS, not only convergence."""
    import arviz as az

    rng = np.random.default_rng(seed)
    frac = np.clip(np.asarray(ess, dtype=float) / (chains * draws), 1e-3, 1.0)
    rho = (1 - frac) / (1 + frac)
    maxima = []
    for _ in range(replicates):
        x = np.empty((chains, draws, len(rho)))
        e = rng.standard_normal(x.shape)
        x[:, 0] = e[:, 0]
        for t in range(1, draws):
            x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho ** 2) * e[:, t]
        maxima.append(float(az.rhat(az.convert_to_dataset({"x": x}))["x"].max()))
    maxima = np.array(maxima)
    return {"median": float(np.median(maxima)), "q90": float(np.quantile(maxima, 0.9)),
            "p_above_1.01": float(np.mean(maxima > 1.01)), "replicates": replicates}


def summary(idata):
    import arviz as az

    post = idata.posterior
    res = {}
    for name in QUANTITIES:
        x = post[name].values
        res[name] = {"mean": x.mean((0, 1)).tolist(), "sd": x.std((0, 1)).tolist(),
                     "mcse": az.mcse(idata, var_names=[name])[name].values.tolist(),
                     "r_hat": float(np.max(az.rhat(idata, var_names=[name])[name].values)),
                     "ess_bulk": np.ravel(az.ess(idata, var_names=[name])[name].values).tolist()}
    res["divergences"] = int(idata.sample_stats.diverging.sum())
    res["steps_per_draw"] = float(idata.sample_stats.n_steps.mean()) \
        if "n_steps" in idata.sample_stats else None
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    res["draws_total"] = int(chains * draws)
    res["r_hat_floor"] = rhat_floor([e for q in QUANTITIES for e in res[q]["ess_bulk"]],
                                    chains, draws)
    return res


def run(data, method, log, init=None, chains=4, warmup=500, draws=1000, keep=False, **options):
    from hja_bayes import ConvergenceWarning, fit_hja, sample_hja

    fit = init if init is not None else fit_hja(data, 1)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        idata = sample_hja(data, 1, init=fit, prompt_effects=method, num_warmup=warmup,
                           num_samples=draws, num_chains=chains, seed=0, progress_bar=False,
                           **options)
    seconds = time.perf_counter() - t
    cache = os.environ.get("HJA_BAYES_CACHE_DIR")
    attrs = idata.posterior.attrs
    res = {"seconds": seconds, "sampling_seconds": float(attrs["sampling_time"]),
           "chain_method": str(attrs["chain_method"]), **summary(idata)}
    if cache:
        res["cache"] = f"in {cache}"
    if keep:
        res["idata"] = idata
    log(f"{method}: {seconds:.0f} s, max R-hat "
        f"{max(res[q]['r_hat'] for q in QUANTITIES):.4f}, divergences {res['divergences']}")
    return res


def quadrature_accuracy(log, prompts: int = 300, seed: int = 0):
    import jax
    import jax.numpy as jnp

    from hja_bayes.bayes.blocks import prompt_blocks
    from hja_bayes.bayes.integrated import log_integrals
    from hja_bayes.likelihood import outcome_model

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(seed)
    first, second = [], []
    for q in range(prompts):  # every prompt shows all three answers (two free dimensions)
        pairs = [(0, 1), (0, 2), (1, 2)] + [tuple(rng.choice(3, 2, replace=False))
                                            for _ in range(rng.integers(0, 4))]
        for a, b in pairs:
            a, b = (a, b) if rng.random() < 0.5 else (b, a)
            first.append(3 * q + a)
            second.append(3 * q + b)
    first, second = np.array(first), np.array(second)
    question = np.repeat(np.arange(prompts), 3)
    units = len(first)
    eta = jnp.asarray(rng.normal(0.0, 1.0, units))
    gamma = jnp.asarray(rng.uniform(0.5, 2.0, units))
    counts = np.zeros((units, 3))
    counts[np.arange(units), 2 * rng.integers(0, 2, units)] = 1.0
    half = outcome_model("half")
    rules = {"25 x 25": (25, 25), "9 x 9 (default)": (21, 9), "7 x 7": (21, 7),
             "Laplace": (21, 1)}
    out = []
    for tau in (0.3, 1.0, 2.0):
        values = {}
        for name, rule in rules.items():
            (block,) = prompt_blocks(first, second, question, quadrature=rule)
            values[name] = np.asarray(log_integrals(block, eta, gamma, None, jnp.asarray(counts),
                                                    jnp.full(len(question), tau), half))
        ref = values.pop("25 x 25")
        row = {"tau": tau, **{name: {"mean": float(np.mean(np.abs(v - ref))),
                                     "max": float(np.max(np.abs(v - ref)))}
                              for name, v in values.items()}}
        log(f"accuracy, tau {tau}: " + ", ".join(f"{n} {r['mean']:.1e}" for n, r in row.items()
                                                 if n != "tau"))
        out.append(row)
    return {"prompts": prompts, "units": units, "rows": out}


def symmetric_rule_4d(root: int = 1):
    """A fully symmetric rule of degree 7 for N(0, I_4) with positive weights, 49 nodes
    (the origin, +-r on each axis, (+-s, +-s) on each pair of axes, (+-t, +-t, +-t, +-t)),
    from the moment equations (two solutions, ``root`` +1 or -1): nodes (49, 4) and
    ``log w + |z|^2 / 2``, as :class:`~hja_bayes.bayes.integrated.Block` holds them."""
    import itertools

    v = (6 + root * np.sqrt(12.0)) / 24  # 12 v^2 - 6 v + 1/2 = 0
    x, u = 1 - 2 * v, 0.25 - 0.5 * v
    A, B, C = x**3, 2 * v**3, 8 * u**3
    r, s, t = 1 / np.sqrt(u), 1 / np.sqrt(v), 1 / np.sqrt(x)
    nodes, weights = [np.zeros(4)], [1 - 4 * C - 6 * B - A]
    for i in range(4):
        for sign in (1, -1):
            nodes.append(sign * r * np.eye(4)[i])
            weights.append(C / 2)
    for i, j in itertools.combinations(range(4), 2):
        for a, b in itertools.product((1, -1), repeat=2):
            nodes.append(s * (a * np.eye(4)[i] + b * np.eye(4)[j]))
            weights.append(B / 4)
    for signs in itertools.product((1, -1), repeat=4):
        nodes.append(t * np.array(signs, dtype=float))
        weights.append(A / 16)
    z, w = np.array(nodes), np.array(weights)
    return z, np.log(w) + 0.5 * np.sum(z**2, axis=1)


def panel_prompt_accuracy(log, prompts: int = 1000, seed: int = 0):
    """Five-answer prompts with five verdicts each (random pairs, as on the panel): the sum
    over prompts of each rule's log integral minus a 25 / 25^2 / 11^3 / 9^4 rule's, and the
    milliseconds of one value and gradient (in eta and tau, at tau 1.2) with each rule.
    Rules: the default, 3^4 nodes for four dimensions, a fully symmetric degree-7 rule with
    49 nodes for four dimensions (:func:`symmetric_rule_4d`), the Laplace approximation."""
    import jax
    import jax.numpy as jnp

    from hja_bayes.bayes.blocks import QUADRATURE, prompt_blocks
    from hja_bayes.bayes.integrated import prompt_log_likelihood
    from hja_bayes.likelihood import outcome_model

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(seed)
    pairs = np.array([rng.choice(5, 2, replace=False) for _ in range(5 * prompts)])
    offset = 5 * np.repeat(np.arange(prompts), 5)
    first, second = offset + pairs[:, 0], offset + pairs[:, 1]
    question = np.repeat(np.arange(prompts), 5)
    eta = jnp.asarray(rng.normal(0.0, 1.0, len(first)))
    gamma = jnp.asarray(rng.uniform(0.5, 2.0, len(first)))
    counts = jnp.asarray(np.eye(3)[2 * rng.integers(0, 2, len(first))])
    half = outcome_model("half")
    layouts = {name: prompt_blocks(first, second, question, quadrature=rule) for name, rule in
               {"reference": (25, 25, 11, 9), "default": QUADRATURE,
                "3^4": QUADRATURE[:3] + (3,), "Laplace": (21, 9)}.items()}
    z, log_w = symmetric_rule_4d()
    layouts["symmetric 49"] = tuple(b._replace(z=z, log_weight=log_w) if b.z.shape[1] == 4
                                    else b for b in layouts["default"])

    def total(blocks, e, tau):
        return prompt_log_likelihood(blocks, e, gamma, None, counts, tau, half)

    totals = {name: jax.jit(functools.partial(total, blocks)) for name, blocks in layouts.items()}
    rows = []
    names = [n for n in layouts if n != "reference"]
    for tau in (0.5, 1.0, 1.5, 2.0):
        taus = jnp.full(len(question), tau)
        values = {name: float(f(eta, taus)) for name, f in totals.items()}
        rows.append({"tau": tau, **{n: values[n] - values["reference"] for n in names}})
        log(f"panel prompts, tau {tau}: {rows[-1]}")
    ms = {}
    for name in names:
        grad = jax.jit(jax.value_and_grad(functools.partial(total, layouts[name]),
                                          argnums=(0, 1)))
        taus = jnp.full(len(question), 1.2)
        jax.block_until_ready(grad(eta, taus))
        times = []
        for i in range(20):
            t = time.perf_counter()
            jax.block_until_ready(grad(eta + 1e-4 * i, taus))
            times.append(time.perf_counter() - t)
        ms[name] = 1e3 * float(np.median(times))
    log(f"panel prompts, value and gradient ms: {ms}")
    return {"prompts": prompts, "rows": rows, "ms": ms}


def report(results) -> str:
    lines = ["# Integrated prompt effects against sampled ones", "",
             "`python benchmarks/bench_bayes_integrated.py` (see its docstring); load average "
             "at the start and end of each part: " + ", ".join(
                 f"{part} {loads}" for part, loads in results.get("loads", {}).items()) + ".", ""]
    if "gradient" in results:
        lines += ["## Cost of one value and gradient of the potential", "",
                  "| prompts | comparisons | integrated: dimension, ms | sampled: dimension, ms |",
                  "|---|---|---|---|"]
        for r in results["gradient"]:
            lines.append(f"| {r['questions']} | {r['comparisons']} | "
                         f"{r['integrated']['dimension']}, {r['integrated']['ms']:.2f} | "
                         f"{r['sampled']['dimension']}, {r['sampled']['ms']:.2f} |")
        lines.append("")
    for key, method in (("panel", "integrated"), ("panel_sampled", "sampled")):
        if key not in results:
            continue
        p = results[key]
        lines += [f"## 5 judges x 5 models x 1,000 prompts, {method}, 4 chains x (500 + 1000)",
                  "", f"{p['seconds']:.0f} s for the whole `sample_hja` call (goal: 60 s"
                  + (f"; compilation cache {p['cache']}" if "cache" in p else "") + "), "
                  + (f"{p['sampling_seconds']:.0f} s of it from the search for the chains' "
                     f"start to the last draw, chains {p['chain_method']}; "
                     if "sampling_seconds" in p else "")
                  +
                  f"max R-hat {max(p[q]['r_hat'] for q in QUANTITIES):.4f} (goal 1.01), "
                  f"divergences {p['divergences']}, steps per draw {p['steps_per_draw']}.", ""]
        if "r_hat_floor" in p:
            floor, ess = p["r_hat_floor"], {q: min(p[q]["ess_bulk"]) for q in QUANTITIES}
            lines += ["Smallest bulk ESS " + ", ".join(f"{q} {e:.0f}" for q, e in ess.items())
                      + f" of {p.get('draws_total', 4000)} draws. A perfect sampler with "
                      f"these ESS (stationary AR(1) chains, {floor['replicates']} "
                      f"simulations) shows a max R-hat of {floor['median']:.4f} (median; 90%: "
                      f"{floor['q90']:.4f}) and exceeds 1.01 in "
                      f"{100 * floor['p_above_1.01']:.0f}% of runs: the R-hat goal is as "
                      "much a goal on the ESS as on convergence.", ""]
    if "laplace_bias" in results:
        runs = results["laplace_bias"]
        lines += ["## The Laplace approximation's bias: 5 x 5 x 1,000 prompts, 2 chains x "
                  "(300 + 300)", "",
                  "Posterior mean (sd, MCSE) per model.", "",
                  "| | seconds | steps per draw | max R-hat | tau | mu_marginal |", "|---" * 6 + "|"]
        for name, r in runs.items():
            cells = [" ".join(f"{m:.2f}" for m in r[q]["mean"]) + " (sd " + " ".join(
                f"{d:.2f}" for d in r[q]["sd"]) + "; MCSE " + " ".join(
                f"{e:.2f}" for e in r[q]["mcse"]) + ")" for q in ("tau", "mu_marginal")]
            lines.append(f"| {name} | {r['seconds']:.0f} | {r['steps_per_draw']:.1f} | "
                         f"{max(r[q]['r_hat'] for q in QUANTITIES):.3f} | " + " | ".join(cells)
                         + " |")
        lines.append("")
    if "panel" in results and "panel_sampled" in results:
        lines += ["### The 1,000-prompt panel: integrated against sampled", "",
                  *same_answer(results["panel"], results["panel_sampled"]), ""]
    for key, method in (("arena", "integrated"), ("arena_sampled", "sampled")):
        if key not in results:
            continue
        p = results[key]
        lines += [f"## Chatbot Arena ({p['judges']} judges, {p['models']} models, {p['prompts']:,} "
                  f"prompts, {p['verdicts']:,} verdicts), {method}, rank 1, 4 chains x "
                  "(500 + 1000)", "",
                  f"{p['seconds']:.0f} s for the whole `sample_hja` call (goal for a panel of "
                  f"9,000 prompts: 180 s), {p['sampling_seconds']:.0f} s of it from the search "
                  f"for the chains' start to the last draw, chains {p['chain_method']}; max "
                  f"R-hat {max(p[q]['r_hat'] for q in QUANTITIES):.4f}, divergences "
                  f"{p['divergences']}, steps per draw {p['steps_per_draw']:.2f}.", ""]
    if "arena" in results and "arena_sampled" in results:
        lines += ["### Chatbot Arena: integrated against sampled", "",
                  *same_answer(results["arena"], results["arena_sampled"]), ""]
    if "accuracy" in results:
        acc = results["accuracy"]
        names = [n for n in acc["rows"][0] if n != "tau"]
        lines += [f"## Accuracy of the per-prompt integral ({acc['prompts']} prompts of three "
                  f"answers, {acc['units']} verdicts)", "",
                  "Absolute error of each prompt's log integral against a 25 x 25 rule, mean / max.",
                  "", "| tau | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for r in acc["rows"]:
            lines.append(f"| {r['tau']} | " + " | ".join(
                f"{r[n]['mean']:.1e} / {r[n]['max']:.1e}" for n in names) + " |")
        lines.append("")
    if "panel_accuracy" in results:
        acc = results["panel_accuracy"]
        names = [n for n in acc["rows"][0] if n != "tau"]
        lines += [f"## Sum of the log integrals of {acc['prompts']:,} five-answer prompts with "
                  "five verdicts each, minus a 25 / 25^2 / 11^3 / 9^4 rule's", "",
                  "Rules for four free dimensions: default 4^4 nodes, 3^4, a fully symmetric "
                  "degree-7 rule of 49 nodes; the Laplace approximation there and for three.",
                  "", "| tau | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        lines += [f"| {r['tau']} | " + " | ".join(f"{r[n]:.3f}" for n in names) + " |"
                  for r in acc["rows"]]
        if "ms" in acc:
            lines.append("| value + gradient, ms | " + " | ".join(
                f"{acc['ms'][n]:.1f}" for n in names) + " |")
        lines.append("")
    if "crossover" in results:
        lines += ["## Which method is faster: simulated 5 x 5 panels, 2 chains x (300 + 300)", "",
                  "Whole `sample_hja` call (compilation included); ESS/s: the smallest bulk ESS "
                  "of `mu_marginal`, gamma and tau per second of it; default: what "
                  "`prompt_effects=None` picks.", "",
                  "| prompts | verdicts (per prompt) | answer effects | default | integrated: s, "
                  "steps per draw, max R-hat, ESS/s | sampled: s, steps per draw, max R-hat, "
                  "ESS/s |", "|---|---|---|---|---|---|"]
        for r in results["crossover"]:
            lines.append(f"| {r['prompts']} | {r['verdicts']} ({r['verdicts'] / r['prompts']:.0f})"
                         f" | {r.get('effects', '')} | {r.get('default', '')} | " + " | ".join(
                f"{r[m]['seconds']:.0f}, {r[m]['steps_per_draw']:.1f}, "
                f"{max(r[m][q]['r_hat'] for q in QUANTITIES):.3f}, {r[m]['ess_per_second']:.2f}"
                if m in r else "not run" for m in ("integrated", "sampled")) + " |")
        lines.append("")
    if "mtbench" in results:
        m = results["mtbench"]
        lines += ["## MT-Bench rank 1, both methods, 4 chains x (500 + 1000)", "",
                  f"Wall time: integrated {m['integrated']['seconds']:.0f} s, sampled "
                  f"{m['sampled']['seconds']:.0f} s. Divergences {m['integrated']['divergences']}"
                  f" / {m['sampled']['divergences']}.", "",
                  *same_answer(m["integrated"], m["sampled"]), ""]
    return "\n".join(lines)


def same_answer(a, b):
    """Table rows comparing two runs' posterior means and sds quantity by quantity."""
    lines = ["| quantity | index | mean integrated / sampled | difference / MCSE | "
             "sd integrated / sampled |", "|---|---|---|---|---|"]
    for q in QUANTITIES:
        for i, (ma, mb) in enumerate(zip(a[q]["mean"], b[q]["mean"])):
            z = (ma - mb) / np.hypot(a[q]["mcse"][i], b[q]["mcse"][i])
            sa, sb = a[q]["sd"][i], b[q]["sd"][i]
            lines.append(f"| {q} | {i} | {ma:.3f} / {mb:.3f} | {z:+.2f} | "
                         f"{sa:.3f} / {sb:.3f} ({sa / sb:.3f}) |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="gradient,panel,mtbench")
    parser.add_argument("--sizes", default="200,1000")
    parser.add_argument("--designs", default=CROSSOVER,
                        help="crossover designs, PROMPTS:VERDICTS separated by commas")
    parser.add_argument("--out", default=str(RESULTS / "bayes_integrated"))
    parser.add_argument("--methods", default="integrated,sampled",
                        help="methods the crossover and mtbench parts run (the other's "
                             "figures from an earlier run are kept)")
    parser.add_argument("--sequential", action="store_true",
                        help="run the chains one after the other (one host device)")
    args = parser.parse_args(argv)
    log = (lambda s: print(s, file=sys.stderr, flush=True))
    path = Path(args.out + ".json")
    results = json.loads(path.read_text()) if path.exists() else {}
    results.pop("load", None)
    loads = results.setdefault("loads", {})
    start = f"{os.getloadavg()[0]:.1f}"
    for part in args.parts.split(","):
        loads[part] = start
    parts = args.parts.split(",")
    methods = tuple(args.methods.split(","))
    if "gradient" in parts:
        results["gradient"] = gradient_costs([int(s) for s in args.sizes.split(",")], log)
        path.write_text(json.dumps(results, indent=1))
    if "panel" in parts:
        results["panel"] = run(panel(1000), "integrated", log)
        path.write_text(json.dumps(results, indent=1))
    if "panel_sampled" in parts:
        results["panel_sampled"] = run(panel(1000), "sampled", log)
        path.write_text(json.dumps(results, indent=1))
    if "laplace_bias" in parts:
        data = panel(1000)
        short = dict(chains=2, warmup=300, draws=300)
        results["laplace_bias"] = {
            "default rule": run(data, "integrated", log, **short),
            "Laplace": run(data, "integrated", log, quadrature=(21, 9), **short),
            "sampled": run(data, "sampled", log, **short)}
        path.write_text(json.dumps(results, indent=1))
    if "crossover" in parts:
        results["crossover"] = crossover(log, args.designs, results.get("crossover"),
                                         methods)
        path.write_text(json.dumps(results, indent=1))
    if "accuracy" in parts:
        results["accuracy"] = quadrature_accuracy(log)
        results["panel_accuracy"] = panel_prompt_accuracy(log)
        path.write_text(json.dumps(results, indent=1))
    for part, method in (("arena", "integrated"), ("arena_sampled", "sampled")):
        if part not in parts:
            continue
        from hja_bayes import Comparisons
        from hja_bayes.datasets import load_ja_ranking

        frame = load_ja_ranking("chatbot_arena")
        data = Comparisons.from_frame(frame, cluster="question_id")
        log(f"arena: {data.n_judges} judges, {data.n_items} models, "
            f"{len(data.clusters.names)} prompts, {data.n_comparisons} verdicts")
        results[part] = {"judges": data.n_judges, "models": data.n_items,
                         "prompts": len(data.clusters.names),
                         "verdicts": int(data.n_comparisons), **run(data, method, log)}
        path.write_text(json.dumps(results, indent=1))
    if "mtbench" in parts:
        from hja_bayes import Comparisons
        from hja_bayes.datasets import load_ja_ranking

        frame = load_ja_ranking("mtbench")
        data = Comparisons.from_frame(frame, cluster="question_id")
        results["mtbench"] = {**results.get("mtbench", {}),
                              **{m: run(data, m, log) for m in methods}}
        path.write_text(json.dumps(results, indent=1))
    for part in parts:
        loads[part] += f"-{os.getloadavg()[0]:.1f}"
    path.write_text(json.dumps(results, indent=1))
    Path(args.out + ".md").write_text(report(results) + "\n")


if __name__ == "__main__":
    main()
