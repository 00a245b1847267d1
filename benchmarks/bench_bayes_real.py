"""Bayesian HJA on real panels: MT-Bench (JA-Ranking) and PRD Vicuna80.

For each data set and setting: MAP, NUTS from dispersed Laplace starts around the MAP (4
chains x (500 warm-up + 1000 draws), parallel), sampler diagnostics over every identified
quantity against the goals (max R-hat <= 1.01, 0 divergences, min bulk ESS >= 400), Wald
against credible intervals (median ratios per quantity), posterior predictive checks (share
of p-values outside [0.025, 0.975]), PSIS-LOO over single comparisons next to BIC across
ranks with its Pareto-k table (goal on MT-Bench rank 1: share of k > 0.7 <= 1%), and the
posterior rank intervals of the items.

MT-Bench is not bundled (no license): it is read from ``--data-dir`` or ``HJA_DATA_DIR``
or ``../shared/data``.  Every pair is shown in one orientation only there, so position
bias and structured disagreement cannot be told apart; the settings below therefore fit
MT-Bench without position bias (the papers' model) and PRD Vicuna80, where both orders
are shown, with it.

    nice python benchmarks/bench_bayes_real.py
    python benchmarks/bench_bayes_real.py --num-warmup 50 --num-samples 50 \
        --datasets prd --ranks 0 --out /tmp/smoke                 # smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpyro

numpyro.set_host_device_count(4)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402

from hja_bayes import Comparisons, ConvergenceWarning, compare_intervals, datasets, fit_hja, sample_hja  # noqa: E402
from hja_bayes.bayes import (  # noqa: E402
    ppc_calibration,
    ppc_judge_win_rates,
    ppc_pair_win_rates,
    rank_comparison,
    rank_posterior,
)

SETTINGS = {"mtbench": {"position_bias": False}, "prd": {"position_bias": True},
            "chatbot_arena": {"position_bias": False}}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["mtbench", "prd"], choices=list(SETTINGS))
    p.add_argument("--ranks", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--main-rank", type=int, default=1, help="rank of the detailed report")
    p.add_argument("--num-warmup", type=int, default=500)
    p.add_argument("--num-samples", type=int, default=1000)
    p.add_argument("--num-chains", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "bayes_real"))
    return p.parse_args(argv)


def load(name: str, data_dir) -> Comparisons:
    if name in ("mtbench", "chatbot_arena"):
        return Comparisons.from_frame(datasets.load_ja_ranking(name, data_dir))
    return Comparisons.from_frame(datasets.load_prd_vicuna80().judgments)


def diagnostics(idata) -> dict:
    post = idata.posterior
    rhat, ess = az.rhat(post), az.ess(post, method="bulk")
    sized = [v for v in post.data_vars if post[v].size]  # rank 0: U, V, D are empty
    return {"max_rhat": max(float(rhat[v].max()) for v in sized),
            "min_ess_bulk": min(float(ess[v].min()) for v in sized),
            "divergences": int(idata.sample_stats["diverging"].sum()),
            "sampling_seconds": float(post.attrs["sampling_time"]),
            "sign_flip_share": float(post.attrs["sign_flip_share"]),
            "permutation_share": float(post.attrs["permutation_share"]),
            "weak_match_share": float(post.attrs["weak_match_share"]),
            "mean_steps": float(idata.sample_stats["n_steps"].mean()),
            "target_accept_prob": float(post.attrs.get("target_accept_prob", 0.8))}


def outside(table) -> float:
    p = table["p_value"].to_numpy()
    return float(np.mean((p < 0.025) | (p > 0.975)))


def main(argv=None) -> dict:
    args = parse_args(argv)
    results = {}
    for name in args.datasets:
        data = load(name, args.data_dir)
        pb = SETTINGS[name]["position_bias"]
        res = {"data": str(data), "position_bias": pb, "one_orientation_only": bool(data.one_orientation_only),
               "ranks": {}}
        idatas = {}
        for r in args.ranks:
            t0 = time.perf_counter()
            fit = fit_hja(data, r, position_bias=pb)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                idata = sample_hja(data, r, init=fit, num_warmup=args.num_warmup,
                                   num_samples=args.num_samples, num_chains=args.num_chains,
                                   seed=args.seed, progress_bar=False)
            idatas[r] = idata
            entry = {"bic": fit.bic, "nll": fit.nll, **diagnostics(idata),
                     "warnings": [str(w.message)[:800] for w in caught],
                     "seconds": time.perf_counter() - t0}
            if r == args.main_rank:
                table = compare_intervals(fit, idata)
                entry["intervals"] = {
                    q: {"median_sd_ratio": float(t.sd_ratio.median()),
                        "median_width_ratio": float(t.width_ratio.median()),
                        "median_hdi_width_ratio": float(t.hdi_width_ratio.median()),
                        "min_width_ratio": float(t.width_ratio.min()),
                        "max_width_ratio": float(t.width_ratio.max()), "count": int(len(t))}
                    for q, t in table.groupby("quantity")}
                entry["ppc_share_outside_95"] = {
                    "judge_win_rates": outside(ppc_judge_win_rates(idata)),
                    "pair_win_rates": outside(ppc_pair_win_rates(idata)),
                    "calibration_bins": outside(ppc_calibration(idata)),
                }
                ranks = rank_posterior(idata).table
                entry["rank_posterior"] = ranks.to_dict(orient="records")
            res["ranks"][r] = entry
            print(f"{name} rank {r}: {entry['seconds']:.0f} s, R-hat {entry['max_rhat']:.4f}, "
                  f"ESS {entry['min_ess_bulk']:.0f}, divergences {entry['divergences']}", flush=True)
        loo = rank_comparison(idatas)
        res["loo"] = loo.reset_index().to_dict(orient="records")
        results[name] = res
    load_avg = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=2, default=float))
    lines = ["# Bayesian HJA on real panels", "",
             f"{args.num_chains} chains x ({args.num_warmup} warm-up + {args.num_samples} draws), "
             f"seed {args.seed}; sample_hja's default target_accept_prob (0.8 at ranks 0-1, "
             f"0.95 at rank 2 and above).  Load average at the end: "
             f"{', '.join(f'{x:.1f}' for x in load_avg)}.", ""]
    for name, res in results.items():
        lines += [f"## {name} ({res['data']}), position bias {'on' if res['position_bias'] else 'off'}"
                  + (" — every pair in one orientation only" if res["one_orientation_only"] else ""), "",
                  "Goals: max R-hat <= 1.01, 0 divergences, min bulk ESS >= 400.", "",
                  "| rank | target accept | max R-hat | min bulk ESS | divergences | steps/draw | "
                  "NUTS s | goals | sign flips / reorders / weak |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r, e in res["ranks"].items():
            met = e["max_rhat"] <= 1.01 and e["divergences"] == 0 and e["min_ess_bulk"] >= 400
            lines.append(f"| {r} | {e['target_accept_prob']:.2f} | {e['max_rhat']:.4f} | {e['min_ess_bulk']:.0f} | {e['divergences']} | "
                         f"{e['mean_steps']:.1f} | {e['sampling_seconds']:.0f} | "
                         f"{'met' if met else 'MISSED'} | {e['sign_flip_share']:.2f} / "
                         f"{e['permutation_share']:.2f} / {e['weak_match_share']:.2f} |")
        lines += ["", "PSIS-LOO over single comparisons (Pareto k > 0.7 marks an unreliable "
                  "comparison):", "",
                  "| rank | BIC | elpd_loo | se | p_loo | elpd_diff | dse | max Pareto k | "
                  "share k > 0.7 | comparisons k > 0.7 |", "|---|---|---|---|---|---|---|---|---|---|"]
        for lo in sorted(res["loo"], key=lambda row: row["rank"]):
            lines.append(f"| {lo['rank']} | {lo['bic']:.1f} | {lo['elpd_loo']:.1f} | {lo['se']:.1f} | "
                         f"{lo['p_loo']:.1f} | {lo['elpd_diff']:.1f} | {lo['dse']:.1f} | "
                         f"{lo['max_pareto_k']:.2f} | {lo['share_bad_k']:.4f} | {lo['n_bad_k']} |")
        main_entry = res["ranks"].get(args.main_rank)
        if main_entry and "intervals" in main_entry:
            lines += ["", f"Rank {args.main_rank}: Wald vs posterior (medians over quantities)", "",
                      "| quantity | count | sd / se | ETI width / Wald | HDI width / Wald | range of ETI / Wald |",
                      "|---|---|---|---|---|---|"]
            for q, s in main_entry["intervals"].items():
                lines.append(f"| {q} | {s['count']} | {s['median_sd_ratio']:.3f} | {s['median_width_ratio']:.3f} | "
                             f"{s['median_hdi_width_ratio']:.3f} | {s['min_width_ratio']:.2f}–{s['max_width_ratio']:.2f} |")
            p = main_entry["ppc_share_outside_95"]
            lines += ["", f"PPC share of p-values outside [0.025, 0.975]: judge win rates "
                      f"{p['judge_win_rates']:.2f}, pair win rates {p['pair_win_rates']:.2f}, "
                      f"calibration bins {p['calibration_bins']:.2f}.", "",
                      "| item | mean rank | 95% rank interval | P(best) |", "|---|---|---|---|"]
            for row in main_entry["rank_posterior"]:
                lines.append(f"| {row['item']} | {row['mean_rank']:.2f} | {row['lower']}–{row['upper']} | {row['p_best']:.2f} |")
        for r, e in res["ranks"].items():
            if e["warnings"]:
                lines += ["", f"Warnings at rank {r}: " + "; ".join(e["warnings"])]
        lines.append("")
    out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))
    return results


if __name__ == "__main__":
    main()
