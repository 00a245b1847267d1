"""Judges locked on one presentation slot: what they do to the consensus, and the remedies.

* ``--parts real``: both JA-Ranking files (every pair shown in one order there).  Each
  judge's share of decided verdicts won by the first-shown answer; the judges
  ``hja_bayes.position_locked`` names; the consensus at the rank BIC picks, fitted (a) as the
  data are, (b) without the locked judges, (c) with ``position_bias=True``; the models whose
  rank moves, and, for every pair whose order differs between (a) and (b), the other judges'
  head-to-head preferences and the pooled share of decided verdicts; the BIC of every rank
  with and without the position term (its K parameters counted, which the rank search's BIC
  leaves out as common to every rank).
* ``--parts simulated``: panels of 5 judges following one consensus (rank 1, ``simulate``)
  plus one judge choosing the first-shown answer with probability 0.98, every pair shown in
  one order (a random order of the models, unrelated to their quality), 8 models, 40
  verdicts per judge and pair.  Kendall's distance (discordant pairs) between the true
  consensus order and (a), (b), (c), fitted at the true rank.

Usage: ``python benchmarks/bench_position_locked.py [--parts real,simulated] [--seeds 100]``
(``HJA_DATA_DIR`` for the real data).  Writes ``benchmarks/results/position_locked.json`` and
``.md``, keeping the parts not run from an earlier run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import hja_bayes as hb
from hja_bayes.position_locked import locked_judges

OUT = Path(__file__).parent / "results"


def consensus(fit) -> pd.Series:
    return pd.Series(np.asarray(fit.mu), index=list(fit.data.items))


def quiet_fit(data, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        return hb.fit_hja(data, **options)


def head_to_head(frame: pd.DataFrame, a: str, b: str, leave_out: set[str]) -> dict:
    """How the judges other than ``leave_out`` decided a against b (ties aside)."""
    pair = frame[frame.model_a.isin([a, b]) & frame.model_b.isin([a, b])
                 & frame.winner.isin(["model_a", "model_b"])]
    a_won = np.where(pair.winner == "model_a", pair.model_a == a, pair.model_b == a)
    by_judge = pd.Series(a_won, index=pair.judge.to_numpy()).groupby(level=0).mean()
    by_judge = by_judge.drop([j for j in by_judge.index if j in leave_out])
    return {"pair": [a, b], "judges_preferring_first": int((by_judge > 0.5).sum()),
            "judges_preferring_second": int((by_judge < 0.5).sum()),
            "judges": int(len(by_judge)), "pooled_share_first": float(np.mean(a_won))}


def part_real() -> list[dict]:
    out = []
    for name in ("mtbench", "chatbot_arena"):
        frame = hb.datasets.load_ja_ranking(name)
        data = hb.Comparisons.from_frame(frame, cluster="question_id")
        locked = locked_judges(data)
        names = {j.judge for j in locked}
        fits = {
            "as the data are": quiet_fit(data, rank="bic"),
            "without the locked judges": quiet_fit(
                data.select_judges([j for j in data.judges if j not in names]), rank="bic"),
            "position bias": quiet_fit(data, rank="bic", position_bias=True),
        }
        scores = pd.DataFrame({key: consensus(fit) for key, fit in fits.items()})
        ranks = scores.rank(ascending=False).astype(int)
        decided = frame[frame.winner.isin(["model_a", "model_b"])]
        shares = (decided.winner == "model_a").groupby(decided.judge).mean()
        plain, without = scores.iloc[:, 0], scores.iloc[:, 1]
        flipped = [head_to_head(frame, a, b, names) for a in scores.index for b in scores.index
                   if a < b and (plain[a] - plain[b]) * (without[a] - without[b]) < 0]
        pb = fits["position bias"]
        table = pb.intervals()
        locked_terms = {}
        for j in names:
            rows = table[table.label == j].set_index("quantity")
            locked_terms[j] = {q: [float(rows.loc[q, c]) for c in ("estimate", "lower", "upper")]
                               for q in ("gamma", "beta")}
        bic = []  # every rank with and without the position term, its K parameters counted
        for pb in (False, True):
            searched = quiet_fit(data, rank="bic", position_bias=pb, patience=None)
            extra = searched.data.n_judges * np.log(data.n_comparisons) if pb else 0.0
            bic += [{"position_bias": pb, "rank": int(row.rank), "nll": float(row.nll),
                     "bic": float(row.bic + extra)} for row in searched.rank_table.itertuples()]
        out.append({
            "data": name, "one_orientation_only": bool(data.one_orientation_only),
            "bic": bic,
            "first_share_by_judge": {j: float(v) for j, v in shares.sort_values().items()},
            "locked": [j._asdict() for j in locked],
            "ranks_chosen": {key: int(fit.rank) for key, fit in fits.items()},
            "scores": scores.round(4).to_dict(), "ranks": ranks.to_dict(),
            "moved": {m: [int(v) for v in ranks.loc[m]] for m in ranks.index
                      if ranks.loc[m].nunique() > 1},
            "max_abs_shift": float(np.max(np.abs(plain - without))),
            "pairs_flipped_by_the_locked": flipped, "locked_with_position_bias": locked_terms,
        })
    return out


def locked_panel(seed: int, n_items: int = 8, per_pair: int = 40):
    """A simulated rank-1 panel of 5 judges plus a locked one, every pair in one order; its
    data and the true consensus (model ``m{i}`` is item i of the truth)."""
    rng = np.random.default_rng(seed)
    _, truth = hb.simulate(n_judges=5, n_items=n_items, rank=1, comparisons_per_judge=10,
                           seed=seed)
    position = np.argsort(rng.permutation(n_items))  # the order in which models are shown
    S = np.asarray(truth.S)
    rows = []
    for k in range(6):
        for i in range(n_items):
            for j in range(i + 1, n_items):
                a, b = (i, j) if position[i] < position[j] else (j, i)
                p = 0.98 if k == 5 else 1 / (1 + np.exp(-(S[k, a] - S[k, b])))
                first = rng.binomial(per_pair, p)
                rows += ([(f"j{k}", f"m{a}", f"m{b}", "model_a")] * first
                         + [(f"j{k}", f"m{a}", f"m{b}", "model_b")] * (per_pair - first))
    frame = pd.DataFrame(rows, columns=["judge", "model_a", "model_b", "winner"])
    return hb.Comparisons.from_frame(frame), np.asarray(truth.mu)


def discordant(mu_hat: pd.Series, mu_true: np.ndarray) -> int:
    values = mu_hat.reindex([f"m{i}" for i in range(len(mu_true))]).to_numpy()
    a, b = np.triu_indices(len(mu_true), 1)
    return int(np.sum(np.sign(values[a] - values[b]) != np.sign(mu_true[a] - mu_true[b])))


def part_simulated(seeds: int) -> dict:
    got = {"as the data are": [], "without the locked judge": [], "position bias": []}
    for seed in range(seeds):
        data, mu = locked_panel(seed)
        honest = data.select_judges([f"j{k}" for k in range(5)])
        got["as the data are"].append(discordant(consensus(quiet_fit(data, rank=1)), mu))
        got["without the locked judge"].append(discordant(consensus(quiet_fit(honest, rank=1)),
                                                          mu))
        got["position bias"].append(discordant(consensus(quiet_fit(
            data, rank=1, position_bias=True)), mu))
    return {"seeds": seeds, "pairs": 28, "discordant": {
        key: {"mean": float(np.mean(v)), "share_exact": float(np.mean(np.array(v) == 0)),
              "max": int(np.max(v))} for key, v in got.items()}}


def sides(part: dict) -> tuple[int, int, int]:
    """Of the pairs the locked judges turn: how many the other judges' head-to-head majority
    orders as the fit without them, as the fit with them, or neither (split)."""
    plain = part["scores"]["as the data are"]
    without = with_ = split = 0
    for f in part["pairs_flipped_by_the_locked"]:
        a, b = f["pair"]
        votes = f["judges_preferring_first"] - f["judges_preferring_second"]
        if votes == 0:
            split += 1
        elif (votes > 0) == (plain[a] > plain[b]):
            with_ += 1
        else:
            without += 1
    return without, with_, split


def markdown(result: dict) -> str:
    lines = ["# Judges locked on one presentation slot", "",
             f"`python benchmarks/bench_position_locked.py` ({result.get('when', '')}; "
             f"{result.get('commit', '')}; load {result.get('load', '')}).", ""]
    for part in result.get("real", []):
        lines += [f"## {part['data']} (every pair in one order: {part['one_orientation_only']})",
                  "", "Locked judges: " + (", ".join(
                      f"{j['judge']} ({j['slot']} slot, {j['share']:.1%} of {j['decided']:,.0f} "
                      "decided)" for j in part["locked"]) or "none") + ".", "",
                  "Ranks chosen by BIC: " + ", ".join(
                      f"{k} {v}" for k, v in part["ranks_chosen"].items()) + ".", "",
                  "| model | " + " | ".join(part["scores"]) + " |",
                  "|---|" + "---|" * len(part["scores"])]
        models = sorted(part["scores"]["as the data are"],
                        key=lambda m: -part["scores"]["without the locked judges"][m])
        for m in models:
            lines.append(f"| {m} | " + " | ".join(
                f"{part['scores'][k][m]:.3f} ({part['ranks'][k][m]})" for k in part["scores"])
                + " |")
        ranks = sorted({b["rank"] for b in part.get("bic", [])})
        if ranks:
            value = {(b["position_bias"], b["rank"]): b["bic"] for b in part["bic"]}
            lines += ["", "BIC by rank (the position term's K parameters counted): "
                      + "; ".join(f"rank {r}: {value[False, r]:,.1f} without the term, "
                                  f"{value[True, r]:,.1f} with it" for r in ranks) + "."]
        lines += ["", f"Largest shift of a score by the locked judges: "
                  f"{part['max_abs_shift']:.3f}.", ""]
        flipped = part["pairs_flipped_by_the_locked"]
        without, with_, split = sides(part)
        lines.append(f"Pairs whose order the locked judges turn: {len(flipped)}; the other "
                     f"judges' majority head to head sides with the fit without them in "
                     f"{without}, with the fit as the data are in {with_}, and is split in "
                     f"{split}.")
        lines.append("")
        for f in flipped if len(flipped) <= 5 else ():
            a, b = f["pair"]
            lines.append(f"- {a} vs {b}: the other judges head to head "
                         f"{f['judges_preferring_first']} for {a}, "
                         f"{f['judges_preferring_second']} for {b} (of {f['judges']}); "
                         f"{a} won {f['pooled_share_first']:.1%} of all decided verdicts")
        for j, terms in part["locked_with_position_bias"].items():
            lines.append(f"- with position bias, {j}: " + "; ".join(
                f"{q} {v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" for q, v in terms.items()))
        lines.append("")
    sim = result.get("simulated")
    if sim:
        lines += ["## Simulated panels", "",
                  f"{sim['seeds']} panels (5 judges of one rank-1 model + 1 locked at 0.98 on the "
                  "first slot, 8 models, every pair in one random order, 40 verdicts per judge "
                  "and pair), fitted at rank 1: discordant pairs of 28 against the true "
                  "consensus order.", "",
                  "| fit | mean discordant pairs | share of panels in the true order | most |",
                  "|---|---|---|---|"]
        for key, v in sim["discordant"].items():
            lines.append(f"| {key} | {v['mean']:.2f} | {v['share_exact']:.2f} | {v['max']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="real,simulated")
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    path = OUT / "position_locked.json"
    result = json.loads(path.read_text()) if path.exists() else {}
    parts = args.parts.split(",")
    if "real" in parts:
        result["real"] = part_real()
    if "simulated" in parts:
        result["simulated"] = part_simulated(args.seeds)
    result["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    result["load"] = round(os.getloadavg()[0], 2)
    result["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                      capture_output=True, text=True).stdout.strip()
    OUT.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    (OUT / "position_locked.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
