"""Pooled Bradley–Terry: hja_bayes against arena-rank and evalica on one simulated arena.

One judge, ``--n-models`` models, ``--n-battles`` battles with a share ``--tie-prob`` of ties,
simulated by :func:`hja_bayes.simulate` and expanded into one row per battle
(``model_a``, ``model_b``, ``winner`` in {``model_a``, ``model_b``, ``tie``}), shuffled.
Every library gets those same rows in the form its API takes, and is timed twice:

* end to end: from the battle rows to fitted scores (building each library's own data
  object from the rows is part of the work);
* fit alone: from data already aggregated the way the library aggregates it
  (hja_bayes: a :class:`Comparisons` of cells; arena-rank: its ``PairDataset``;
  evalica: one weighted row per (pair, outcome)).

Each timing is warmed up once and reported as the median of ``--repeats`` runs, in one
process.  All three treat a tie as half a win for each side and fit the plain maximum
likelihood; the scores are compared as centred natural-log strengths.

Needs the ``bench`` extra (``pip install -e .[bench]``).  Run from the repository root::

    python benchmarks/bench_pooled_btl.py            # writes benchmarks/results/pooled_btl.*
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

# importable when run as a script from a source checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hja_bayes import Comparisons, fit_pooled_btl, simulate  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

#: arena-rank's reported rating is ``init_rating + scale / ln(base) * s`` (defaults below).
ARENA_SCALE, ARENA_BASE, ARENA_INIT = 400.0, 10.0, 1000.0


def battle_rows(data: Comparisons, seed: int) -> pd.DataFrame:
    """One row per battle from single-judge cells, in a random order."""
    if data.n_judges != 1:
        raise ValueError("battle_rows expects one judge")
    first_wins = np.rint(data.wins - data.ties / 2).astype(np.int64)
    second_wins = np.rint(data.n - data.wins - data.ties / 2).astype(np.int64)
    ties = np.rint(data.ties).astype(np.int64)
    items = np.asarray(data.items, dtype=object)
    outcome = np.repeat(np.array(["model_a", "model_b", "tie"], dtype=object), data.n_cells)
    repeats = np.concatenate([first_wins, second_wins, ties])
    frame = pd.DataFrame(
        {
            "model_a": np.repeat(np.tile(items[data.first], 3), repeats),
            "model_b": np.repeat(np.tile(items[data.second], 3), repeats),
            "winner": np.repeat(outcome, repeats),
        }
    )
    order = np.random.default_rng(seed).permutation(len(frame))
    return frame.iloc[order].reset_index(drop=True)


def centred(scores: pd.Series, items) -> np.ndarray:
    s = scores.reindex(list(items)).to_numpy(dtype=float)
    if np.isnan(s).any():
        raise RuntimeError("a library returned scores for a different set of models")
    return s - s.mean()


def median_time(fn, repeats: int):
    """Warm up once, then time ``repeats`` calls; returns (median s, all times, last result)."""
    result = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, result


# ------------------------------------------------------------------ the three libraries
def ours(rows: pd.DataFrame, cells: Comparisons, repeats: int):
    def end_to_end():
        return fit_pooled_btl(Comparisons.from_frame(rows, judge=None))

    t_e2e, runs_e2e, _ = median_time(end_to_end, repeats)
    t_fit, runs_fit, fit = median_time(lambda: fit_pooled_btl(cells), repeats)
    scores = pd.Series(fit.scores, index=fit.items)
    return t_e2e, runs_e2e, t_fit, runs_fit, scores


def arena(rows: pd.DataFrame, repeats: int):
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.utils.data_utils import PairDataset

    def fit_dataset(dataset):
        model = BradleyTerry(len(dataset.competitors))
        model.fit(dataset)
        model.params["ratings"].block_until_ready()  # JAX dispatches asynchronously
        return model

    def end_to_end():
        return fit_dataset(PairDataset.from_pandas(rows))

    t_e2e, runs_e2e, _ = median_time(end_to_end, repeats)
    dataset = PairDataset.from_pandas(rows)
    t_fit, runs_fit, model = median_time(lambda: fit_dataset(dataset), repeats)
    # the published ratings are on the Elo-like scale: convert back to natural-log strengths
    out = model.compute_ratings_and_cis(dataset)
    ratings = np.asarray(out["ratings"], dtype=float)
    scores = pd.Series((ratings - ARENA_INIT) * math.log(ARENA_BASE) / ARENA_SCALE,
                       index=out["competitors"])
    raw = pd.Series(np.asarray(model.params["ratings"], dtype=float), index=dataset.competitors)
    conversion_error = float(np.max(np.abs(scores - raw.reindex(scores.index))))
    return t_e2e, runs_e2e, t_fit, runs_fit, scores, conversion_error


def evalica_runs(rows: pd.DataFrame, cells: Comparisons, repeats: int):
    import evalica

    outcome = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}

    def end_to_end():
        winners = rows["winner"].map(outcome).tolist()
        return evalica.bradley_terry(rows["model_a"].tolist(), rows["model_b"].tolist(), winners)

    t_e2e, runs_e2e, _ = median_time(end_to_end, repeats)

    # aggregated input: one weighted row per (first, second, outcome) with a positive count
    items = np.asarray(cells.items, dtype=object)
    counts = np.concatenate([cells.wins - cells.ties / 2, cells.n - cells.wins - cells.ties / 2,
                             cells.ties])
    keep = counts > 0
    xs = np.tile(items[cells.first], 3)[keep].tolist()
    ys = np.tile(items[cells.second], 3)[keep].tolist()
    winners = np.repeat(np.array([evalica.Winner.X, evalica.Winner.Y, evalica.Winner.Draw],
                                 dtype=object), cells.n_cells)[keep].tolist()
    weights = counts[keep].tolist()
    t_fit, runs_fit, result = median_time(
        lambda: evalica.bradley_terry(xs, ys, winners, weights=weights), repeats
    )
    scores = np.log(result.scores)  # evalica reports positive strengths
    return t_e2e, runs_e2e, t_fit, runs_fit, scores, int(result.iterations)


# ------------------------------------------------------------------------------ report
def write_markdown(path: Path, report: dict) -> None:
    cfg, t, r, agree = report["config"], report["seconds"], report["ratios"], report["agreement"]
    lines = [
        "# Pooled Bradley–Terry: hja_bayes, arena-rank, evalica",
        "",
        f"{cfg['n_battles']:,} simulated battles among {cfg['n_models']} models, "
        f"{cfg['tie_prob']:.0%} ties (seed {cfg['seed']}); median of {cfg['repeats']} runs after "
        f"one warm-up, one process, {report['machine']['cpu_count']} CPUs "
        f"(load average {report['machine']['load_average_1_5_15'][0]} at the end: on a shared "
        "machine the times vary between invocations; every run is kept in the JSON).",
        f"Command: `{report['command']}`",
        "",
        "| seconds (median) | hja_bayes | arena-rank | evalica | ours / arena-rank | ours / evalica |",
        "|---|---|---|---|---|---|",
    ]
    for what in ("end_to_end", "fit"):
        lines.append(
            f"| {what.replace('_', ' ')} | {t['hja_bayes'][what]:.4f} | {t['arena_rank'][what]:.4f} "
            f"| {t['evalica'][what]:.4f} | {r['arena_rank'][what]:.4f} | {r['evalica'][what]:.3f} |"
        )
    lines += [
        "",
        "Max abs difference of the centred log-strengths: "
        + ", ".join(f"{k.replace('_vs_', ' vs ')} {v:.1e}" for k, v in agree.items()) + ".",
        "",
        "Ties: hja_bayes counts a tie as half a win for each side; arena-rank maps the `tie` "
        "outcome to 0.5 in its logistic loss (the same likelihood); evalica's `Winner.Draw` "
        "gets `tie_weight=0.5` of a win for each side.  Scale: arena-rank reports "
        f"`{ARENA_INIT:g} + {ARENA_SCALE:g}/ln({ARENA_BASE:g}) * s`, converted back to the natural-log "
        "strength `s`; evalica reports strengths `exp(s)`, so its log is taken.  All are centred "
        "before comparing.",
        "",
        "End to end includes building each library's own data object from the battle rows "
        "(`Comparisons.from_frame`, `PairDataset.from_pandas`, and the winner-label mapping "
        "that evalica's API needs).  arena-rank builds and jit-compiles its L-BFGS loop "
        "inside every `fit` call, so its fit time is mostly XLA compilation, which a warm-up "
        "cannot remove.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-battles", type=int, default=100_000)
    parser.add_argument("--n-models", type=int, default=50)
    parser.add_argument("--tie-prob", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=7, help="timed runs after one warm-up")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help="folder for pooled_btl.json and pooled_btl.md")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")

    cells, _ = simulate(n_judges=1, n_items=args.n_models, rank=0,
                        comparisons_per_judge=args.n_battles, tie_prob=args.tie_prob,
                        seed=args.seed)
    rows = battle_rows(cells, args.seed)

    o_e2e, o_e2e_runs, o_fit, o_fit_runs, o_scores = ours(rows, cells, args.repeats)
    a_e2e, a_e2e_runs, a_fit, a_fit_runs, a_scores, a_conv = arena(rows, args.repeats)
    e_e2e, e_e2e_runs, e_fit, e_fit_runs, e_scores, e_iter = evalica_runs(rows, cells, args.repeats)

    s_ours, s_arena, s_evalica = (centred(s, cells.items) for s in (o_scores, a_scores, e_scores))
    report = {
        "command": " ".join(["python benchmarks/bench_pooled_btl.py",
                             *(argv if argv is not None else sys.argv[1:])]),
        "config": {"n_battles": len(rows), "n_models": cells.n_items, "tie_prob": args.tie_prob,
                   "n_ties": int(cells.ties.sum()), "seed": args.seed, "repeats": args.repeats},
        "versions": {"python": platform.python_version(),
                     **{p: version(p) for p in ("numpy", "scipy", "pandas", "jax",
                                                "arena-rank", "evalica")}},
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()]},
        "seconds": {
            "hja_bayes": {"end_to_end": o_e2e, "fit": o_fit,
                          "runs": {"end_to_end": o_e2e_runs, "fit": o_fit_runs}},
            "arena_rank": {"end_to_end": a_e2e, "fit": a_fit,
                           "runs": {"end_to_end": a_e2e_runs, "fit": a_fit_runs}},
            "evalica": {"end_to_end": e_e2e, "fit": e_fit,
                        "runs": {"end_to_end": e_e2e_runs, "fit": e_fit_runs}},
        },
        "ratios": {
            "arena_rank": {"end_to_end": o_e2e / a_e2e, "fit": o_fit / a_fit},
            "evalica": {"end_to_end": o_e2e / e_e2e, "fit": o_fit / e_fit},
        },
        "agreement": {
            "hja_bayes_vs_arena_rank": float(np.max(np.abs(s_ours - s_arena))),
            "hja_bayes_vs_evalica": float(np.max(np.abs(s_ours - s_evalica))),
            "arena_rank_vs_evalica": float(np.max(np.abs(s_arena - s_evalica))),
        },
        "notes": {
            "arena_rank_rating_conversion_max_error": a_conv,
            "evalica_iterations": e_iter,
            "ties": "half a win for each side in all three",
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pooled_btl.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    write_markdown(args.out / "pooled_btl.md", report)

    print(f"{len(rows):,} battles, {cells.n_items} models, {int(cells.ties.sum())} ties; "
          f"median of {args.repeats} runs (s)")
    print(f"{'':12s}{'hja_bayes':>12s}{'arena-rank':>12s}{'evalica':>12s}"
          f"{'ours/arena':>12s}{'ours/evalica':>14s}")
    for what in ("end_to_end", "fit"):
        print(f"{what:12s}{report['seconds']['hja_bayes'][what]:12.4f}"
              f"{report['seconds']['arena_rank'][what]:12.4f}{report['seconds']['evalica'][what]:12.4f}"
              f"{report['ratios']['arena_rank'][what]:12.4f}{report['ratios']['evalica'][what]:14.3f}")
    for name, diff in report["agreement"].items():
        print(f"max |centred log-score difference| {name}: {diff:.2e}")
    return report


if __name__ == "__main__":
    main()
