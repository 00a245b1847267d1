"""Simulation-based calibration (Talts et al. 2018) of the Bayesian HJA sampler.

For each of ``--draws`` draws from the prior: simulate a panel from the drawn parameters,
sample the posterior with :func:`hja_bayes.sample_hja` as a user would (MAP, Laplace starts,
NUTS; 2 chains x (200 warm-up + 99 draws), thinned by 2), and record the rank of the true
value among the 99 kept posterior draws for a set of identified quantities.  If the sampler is right, every rank statistic is uniform on
0..99; the script tests that (chi-square over 20 bins) and draws the histograms.

Design (tiny panels, so that 2 x 200 draws take seconds): K=3 judges, N=4 models, rank 1,
position bias, every judge comparing every ordered pair ``n`` times with n alternating
between 3 and 15 (36 or 180 comparisons per judge: small n, where Wald intervals break).
Two arms, each calibrated against its own prior:

* ``default`` (200 draws): the default priors (:class:`hja_bayes.bayes.HJAPriors`);
* ``small_D`` (200 draws): ``U_scale = 0.15``, so the disagreement D is near zero in every
  draw (the over-specified-rank geometry);
* ``davidson`` (``--draws-davidson``, default 200): default priors, Davidson ties with
  ``log nu_k ~ N(0, 1.5^2)``; the data are simulated from Davidson's model, the MAP and
  the posterior use ``outcome="davidson"``.  A judge that never tied in a simulated panel has
  its nu held at 0 (the MAP's rule, not the model's posterior), so the arm's ranks are
  summarised over the draws in which every judge tied: SBC stays exact conditional on any
  event of the data, and the number of draws left out is reported.

* ``prompts`` (``--draws-prompts``, default 100): default priors with prompt effects: every
  judge compares every ordered pair once on each of 8 prompts (36 verdicts a prompt, 96 a
  judge), answer effects ``alpha_qi = tau_i z_qi`` drawn with the rest from the model's own
  prior predictive, which also draws the verdicts; the posterior is sampled with the answer
  effects integrated out (``prompt_effects="integrated"``: four answers a prompt, so the
  Laplace part of the integral).

Quantities: mu_0 - mu_1, mu_2 - mu_3, gamma_0, S_00 - S_01, S_12 - S_13, beta_0 and D_0;
in the davidson arm also nu_0 and nu_1; in the prompts arm also tau_0 and tau_3.

Runs are resumable: each draw is appended to ``<out>_<arm>.jsonl`` as it finishes.  The data
enter the sampler as arguments (``compile_data=False``) and chains run one after the other,
so with the package's persistent compilation cache every draw after the first reuses the
compiled sampler.

    nohup nice python benchmarks/bench_bayes_sbc.py &        # 200 + 200 + 200 + 100 draws
    python benchmarks/bench_bayes_sbc.py --draws 4 --arms default --out /tmp/sbc   # smoke
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from hja_bayes import Comparisons, HJAError, fit_hja, sample_hja  # noqa: E402
from hja_bayes.bayes import HJAPriors  # noqa: E402
from hja_bayes.bayes.model import default_chart, hja_model  # noqa: E402
from hja_bayes.decomposition import canonicalize  # noqa: E402
from hja_bayes.likelihood import DAVIDSON, HALF, cells_of, probabilities, sample_counts  # noqa: E402

K, N, RANK = 3, 4, 1
PER_CELL = (3, 15)
ARMS = {"default": HJAPriors(), "small_D": HJAPriors(U_scale=0.15), "davidson": HJAPriors(),
        "prompts": HJAPriors()}
TIES = {"default": "half", "small_D": "half", "davidson": "davidson", "prompts": "half"}
PROMPTS = 8  # the prompts arm: every judge compares every ordered pair once on each
THIN = 2
SAMPLES = 99  # per chain; 2 x 99 draws thinned by 2 = 99 draws, ranks 0..99
WARMUP = 200
BINS = 20


def quantities(S, beta, D, nu=None) -> dict[str, np.ndarray]:
    """The calibrated quantities from S (..., K, N), beta (..., K), D (..., r), nu (..., K)."""
    mu = S.mean(axis=-2)
    gamma = np.einsum("...kn,...n->...k", S - S.mean(-1, keepdims=True), mu) / np.sum(
        mu**2, axis=-1)[..., None]
    return {"mu_0 - mu_1": mu[..., 0] - mu[..., 1], "mu_2 - mu_3": mu[..., 2] - mu[..., 3],
            "gamma_0": gamma[..., 0], "S_00 - S_01": S[..., 0, 0] - S[..., 0, 1],
            "S_12 - S_13": S[..., 1, 2] - S[..., 1, 3], "beta_0": beta[..., 0],
            "D_0": D[..., 0], **({} if nu is None else {"nu_0": nu[..., 0], "nu_1": nu[..., 1]})}


def design(per_cell: int) -> Comparisons:
    """Every judge compares every ordered pair ``per_cell`` times (outcomes filled later)."""
    k, i, j = (a.ravel() for a in np.meshgrid(range(K), range(N), range(N), indexing="ij"))
    keep = i != j
    return k[keep], i[keep], j[keep], per_cell


def panel(S, beta, per_cell: int, rng, nu=None) -> Comparisons:
    k, i, j, n = design(per_cell)
    eta = beta[k] + S[k, i] - S[k, j]
    if nu is None:
        p = probabilities(HALF, eta)
    else:
        with np.errstate(divide="ignore"):
            p = probabilities(DAVIDSON, eta, np.log(nu)[k][:, None])
    first, ties, _ = sample_counts(rng, np.full(len(k), n), p).T
    frame = pd.DataFrame({"judge": [f"j{x}" for x in k], "model_a": [f"m{x}" for x in i],
                          "model_b": [f"m{x}" for x in j], "n": n, "wins": first + 0.5 * ties,
                          "ties": ties})
    return Comparisons.from_counts(frame)


def prior_draws(priors: HJAPriors, n: int, seed: int, ties: str = "half"):
    """Parameters from the prior (the model's own Predictive, on a full design)."""
    from numpyro.infer import Predictive

    k, i, j, _ = design(1)
    frame = pd.DataFrame({"judge": [f"j{x}" for x in k], "model_a": [f"m{x}" for x in i],
                          "model_b": [f"m{x}" for x in j], "n": 1, "wins": 0.5})
    data = Comparisons.from_counts(frame)
    out = Predictive(hja_model, num_samples=n)(
        jax.random.PRNGKey(seed), cells_of(data), default_chart(K, N), rank=RANK,
        position_bias=True, priors=priors, outcome=ties)
    nu = np.asarray(out["nu"]) if ties == "davidson" else [None] * n
    return np.asarray(out["S"]), np.asarray(out["beta"]), nu


def prompt_panel(outcomes=None) -> Comparisons:
    """The prompts arm's panel: every judge, every ordered pair, once on each prompt; the
    verdicts of ``outcomes`` (entries, 3: first, tie, second, in the order of the panel's
    own entries), or all for the first-shown model (a design whose outcomes are drawn
    later)."""
    k, i, j, _ = design(1)
    q = np.repeat(np.arange(PROMPTS), len(k))
    k, i, j = (np.tile(a, PROMPTS) for a in (k, i, j))
    if outcomes is None:
        counts = np.tile([1, 0, 0], (len(k), 1))
    else:  # outcomes follow the design's entries; map them back to these rows
        base = prompt_panel()
        c = base.clusters
        assert (base.judges, base.items, c.names) == (  # indices are the labels' numbers
            tuple(f"j{x}" for x in range(K)), tuple(f"m{x}" for x in range(N)),
            tuple(f"q{x}" for x in range(PROMPTS)))
        key = lambda qq, kk, ii, jj: ((qq * K + kk) * N + ii) * N + jj  # noqa: E731
        order = np.argsort(key(c.cluster, base.judge[c.cell], base.first[c.cell],
                               base.second[c.cell]))
        counts = np.asarray(outcomes)[order]  # rows here are sorted by the same key
    rows = np.repeat(np.arange(len(k)), counts.sum(axis=1).astype(int))
    label = np.concatenate([np.repeat(["model_a", "tie", "model_b"], c.astype(int))
                            for c in counts])
    frame = pd.DataFrame({"judge": [f"j{x}" for x in k[rows]],
                          "model_a": [f"m{x}" for x in i[rows]],
                          "model_b": [f"m{x}" for x in j[rows]],
                          "prompt": [f"q{x}" for x in q[rows]], "winner": label})
    return Comparisons.from_frame(frame, cluster="prompt")


def prompt_prior_draws(priors: HJAPriors, n: int, seed: int):
    """Parameters and verdicts from the prior predictive of the model with prompt effects."""
    from numpyro.infer import Predictive

    from hja_bayes.bayes.prompts import entry_units

    units, answers, _ = entry_units(prompt_panel())
    out = Predictive(hja_model, num_samples=n)(
        jax.random.PRNGKey(seed), units, default_chart(K, N), rank=RANK, position_bias=True,
        priors=priors, answers=(answers.first, answers.second, answers.item))
    return (np.asarray(out["S"]), np.asarray(out["beta"]), np.asarray(out["tau"]),
            np.asarray(out["outcomes"]))


def records_of(arm: str, out: Path) -> list[dict]:
    path = out.parent / f"{out.name}_{arm}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run_arm(arm: str, priors: HJAPriors, draws: int, seed: int, out: Path,
            chunk: int | None = None) -> list[dict]:
    path = out.parent / f"{out.name}_{arm}.jsonl"
    done = records_of(arm, out)
    ties = TIES[arm]
    if arm == "prompts":
        S_all, beta_all, tau_all, outcomes_all = prompt_prior_draws(priors, draws, seed)
        nu_all = [None] * draws
    else:
        S_all, beta_all, nu_all = prior_draws(priors, draws, seed, ties)
    start = time.perf_counter()
    stop = draws if chunk is None else min(draws, len(done) + chunk)
    for m in range(len(done), stop):
        S, beta, nu = S_all[m], beta_all[m], nu_all[m]
        truth_d = canonicalize(S, RANK)
        truth = {k: float(v) for k, v in quantities(S, beta, np.asarray(truth_d.D), nu).items()}
        if arm == "prompts":
            truth.update({f"tau_{i}": float(tau_all[m][i]) for i in (0, 3)})
            per_cell = 1
            data = prompt_panel(outcomes_all[m])
        else:
            per_cell = PER_CELL[m % 2]
            data = panel(S, beta, per_cell, np.random.default_rng([seed, m]), nu)
        t_draw = time.perf_counter()
        record = {"draw": m, "per_cell": per_cell, "truth": truth,
                  "all_tied": bool(np.all(np.bincount(data.judge, data.ties, K) > 0))}
        try:
            # the MAP is only where the chains start: a loose stopping rule keeps the proximal
            # solver from crawling on these tiny panels
            fit = fit_hja(data, RANK, position_bias=True, tol=1e-7, max_iter=300, outcome=ties)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                extra = {"prompt_effects": "integrated"} if arm == "prompts" else {}
                idata = sample_hja(data, RANK, init=fit, priors=priors, num_warmup=WARMUP,
                                   num_samples=SAMPLES, num_chains=2, seed=m,
                                   compile_data=False, chain_method="sequential",
                                   progress_bar=False, **extra)
        except HJAError as exc:  # reported, never silently dropped
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            post = idata.posterior
            flat = {v: np.asarray(post[v]).reshape((-1,) + post[v].shape[2:])
                    for v in ("S", "beta", "D", "nu") if v in post}
            q = quantities(flat["S"], flat["beta"], flat["D"], flat.get("nu"))
            if arm == "prompts":
                tau = np.asarray(post["tau"]).reshape(-1, N)
                q.update({f"tau_{i}": tau[:, i] for i in (0, 3)})
            record["ranks"] = {k: int(np.sum(v[::THIN] < truth[k])) for k, v in q.items()}
            record["divergences"] = int(idata.sample_stats["diverging"].sum())
            record["warnings"] = len(caught)
            record["aligned_share"] = float(post.attrs["aligned_share"])
            record["seconds"] = time.perf_counter() - t_draw
        with path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        done.append(record)
        elapsed = time.perf_counter() - start
        print(f"[{arm}] draw {m + 1}/{draws} ({elapsed:.0f} s)", file=sys.stderr, flush=True)
    return done


def summarise(records: list[dict], arm: str = "default") -> dict:
    ok = [r for r in records if "ranks" in r]
    left_out = 0
    if TIES[arm] == "davidson":  # nu held at 0 for a judge that never tied: see the docstring
        left_out = sum(not r["all_tied"] for r in ok)
        ok = [r for r in ok if r["all_tied"]]
    n_ranks = SAMPLES * 2 // THIN + 1  # 0..99
    table = {}
    for q in ok[0]["ranks"] if ok else []:
        ranks = np.array([r["ranks"][q] for r in ok])
        counts = np.bincount(ranks * BINS // n_ranks, minlength=BINS)
        chi2 = stats.chisquare(counts)
        table[q] = {"p_value": float(chi2.pvalue), "counts": counts.tolist(),
                    "mean_rank": float(ranks.mean()), "ranks": ranks.tolist()}
    return {"draws": len(records), "sampled": len(ok),
            "failed": [r.get("error") for r in records if "error" in r],
            "with_divergences": sum(r["divergences"] > 0 for r in ok),
            "left_out_untied": left_out,
            "seconds_per_draw": float(np.mean([r["seconds"] for r in ok if "seconds" in r]))
            if any("seconds" in r for r in ok) else None,
            "quantities": table}


def figure(summary: dict, arm: str, path: Path) -> None:
    from matplotlib.figure import Figure

    names = list(summary["quantities"])
    fig = Figure(figsize=(3.0 * len(names), 2.8), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    expected = summary["sampled"] / BINS
    band = stats.binom.ppf([0.005, 0.995], summary["sampled"], 1 / BINS)
    for ax, name in zip(axes, names):
        q = summary["quantities"][name]
        ax.bar(np.arange(BINS), q["counts"], width=1.0, color="C0", alpha=0.8)
        ax.axhspan(band[0], band[1], color="grey", alpha=0.2)
        ax.axhline(expected, color="grey", lw=1)
        ax.set_title(f"{name}\np = {q['p_value']:.2f}", fontsize=9)
        ax.set_xticks([])
    fig.suptitle(f"SBC rank histograms, arm {arm} ({summary['sampled']} draws; grey: 99% "
                 "band of each bin under uniformity)", fontsize=10)
    fig.savefig(path, dpi=110)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--draws-small-d", type=int, default=200,
                   help="prior draws of the small_D arm")
    p.add_argument("--draws-davidson", type=int, default=200,
                   help="prior draws of the davidson arm")
    p.add_argument("--draws-prompts", type=int, default=100,
                   help="prior draws of the prompts arm")
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "bayes_sbc"))
    p.add_argument("--chunk", type=int, default=25,
                   help="draws per worker process (XLA keeps every compiled program mapped, "
                        "so one process running hundreds of samplers runs out of memory maps)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    counts = {"default": args.draws, "small_D": args.draws_small_d,
              "davidson": args.draws_davidson, "prompts": args.draws_prompts}
    wanted = {arm: counts[arm] for arm in args.arms}
    if args.worker:  # one chunk of draws, then exit
        for arm in args.arms:
            if len(records_of(arm, out)) < wanted[arm]:
                run_arm(arm, ARMS[arm], wanted[arm], args.seed + list(ARMS).index(arm), out,
                        chunk=args.chunk)
                return {}
        return {}
    import subprocess

    t0 = time.perf_counter()
    while any(len(records_of(arm, out)) < wanted[arm] for arm in args.arms):
        before = sum(len(records_of(arm, out)) for arm in args.arms)
        subprocess.run([sys.executable, __file__, "--worker", *(argv or sys.argv[1:])],
                       check=False)
        if sum(len(records_of(arm, out)) for arm in args.arms) == before:
            raise RuntimeError("a worker made no progress; see its output above")
    result = {}
    previous = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(
        ".json").exists() else {}
    for arm in ARMS:  # every arm with records, so that one arm's rerun keeps the others
        records = records_of(arm, out)[: wanted.get(arm, None)]
        if not records:
            continue
        summary = summarise(records, arm)
        summary["seconds_this_run"] = (time.perf_counter() - t0 if arm in wanted  # run arms
                                       else previous.get(arm, {}).get("seconds_this_run"))
        summary["priors"] = ARMS[arm]._asdict()
        figure(summary, arm, out.parent / f"{out.name}_{arm}.png")
        result[arm] = summary
    write(result, out)
    return result


def write(result: dict, out: Path) -> None:
    lines = ["# Simulation-based calibration (Talts et al. 2018)", "",
             f"K={K}, N={N}, rank {RANK}, position bias; every ordered pair {PER_CELL[0]} or "
             f"{PER_CELL[1]} times per judge (alternating); 2 chains x ({WARMUP} warm-up + "
             f"{SAMPLES} draws), thinned by {THIN}: ranks 0..{2 * SAMPLES // THIN}.  "
             f"Chi-square test of uniformity over {BINS} bins.", ""]
    for arm, s in result.items():
        lines += [f"## arm {arm} (ties {TIES[arm]}; priors {s['priors']})", "",
                  *([f"Every judge compares every ordered pair once on each of {PROMPTS} "
                     "prompts; prompt effects integrated out of the likelihood.", ""]
                    if arm == "prompts" else []),
                  f"{s['sampled']} of {s['draws']} prior draws sampled; failed: "
                  f"{len(s['failed'])}; draws with divergences: {s['with_divergences']}"
                  + (f"; left out (a judge never tied): {s['left_out_untied']}"
                     if s.get("left_out_untied") else "") + ".", "",
                  "| quantity | chi-square p-value | mean rank (uniform: 49.5) |", "|---|---|---|"]
        lines += [f"| {q} | {v['p_value']:.3f} | {v['mean_rank']:.1f} |"
                  for q, v in s["quantities"].items()]
        if s["failed"]:
            lines += ["", "Failures:", *[f"- {e}" for e in s["failed"][:10]]]
        lines += ["", f"Histograms: `{out.name}_{arm}.png`.", ""]
    text = "\n".join(lines)
    print(text)
    out.with_suffix(".md").write_text(text)
    slim = {arm: {k: v for k, v in s.items()} for arm, s in result.items()}
    out.with_suffix(".json").write_text(json.dumps(slim, indent=1, default=float))


if __name__ == "__main__":
    main()
