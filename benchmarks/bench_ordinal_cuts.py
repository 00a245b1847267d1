"""What symmetric cut points cost on ordered verdicts whose cut points are lopsided.

The ordinal model's cut points are symmetric about 0 per judge (a judge's lean towards one
slot is its position bias beta_k); SPEC section 11 writes them free.  For three levels the
two are the same model; from four levels on symmetry is a restriction: one spread of grades
towards either slot.  Here five-level verdicts (A>>B .. B>>A) are drawn, by this script's own
generator, from K = 3 judges, N = 4 models, rank 0, 1,500 verdicts per judge, with

* **lopsided** cut points (each judge's grades spread unequally towards the two slots), and
* **symmetric** ones with a position bias (the control: the restriction holds),

and fitted twice: by ``fit_hja(rank=0, position_bias=True, outcome="ordinal", ridge=0)``
(symmetric cuts, beta_k) and by a direct SciPy maximum-likelihood fit with free cut points
(four per judge, beta_k absorbed in their location).  Reported per seed: the likelihood-ratio
statistic (free against symmetric; 3 degrees of freedom, one per judge, chi-square 95% point
7.81), its p-value, and the largest change of a consensus score mu_i.

Usage: ``python benchmarks/bench_ordinal_cuts.py [--seeds 5]``.
Writes ``benchmarks/results/ordinal_cuts.json`` and ``ordinal_cuts.md``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import chi2

import hja_bayes as hb

OUT = Path(__file__).parent / "results"
K, N, PER_JUDGE = 3, 4, 1500
LABELS = ["A>>B", "A>B", "A=B", "B>A", "B>>A"]
MU = np.array([0.8, 0.2, -0.3, -0.7])
GAMMA = np.array([0.7, 1.0, 1.3])
CUTS = {  # P(Y <= c) = expit(eta + kappa_kc), c = 0 (A>>B) .. 3, per judge
    "lopsided": np.array([[-2.0, -0.6, 0.4, 1.6], [-1.5, -0.3, 0.3, 1.5],
                          [-2.5, -1.0, 0.2, 2.2]]),
    "symmetric": np.array([[-1.7, -0.5, 0.5, 1.7], [-1.2, -0.3, 0.3, 1.2],
                           [-2.0, -0.6, 0.6, 2.0]]) + np.array([[0.3], [-0.2], [0.0]]),
}


def draw(cuts: np.ndarray, seed: int) -> pd.DataFrame:
    """Five-level verdicts of every judge on random ordered pairs."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(K):
        for _ in range(PER_JUDGE):
            i, j = rng.choice(N, 2, replace=False)
            below = np.r_[0.0, expit(GAMMA[k] * (MU[i] - MU[j]) + cuts[k]), 1.0]
            rows.append((f"j{k}", f"m{i}", f"m{j}", LABELS[rng.choice(5, p=np.diff(below))]))
    return pd.DataFrame(rows, columns=["judge", "model_a", "model_b", "winner"])


def free_cut_fit(frame: pd.DataFrame, judges, items) -> tuple[float, np.ndarray]:
    """Negative log-likelihood and mu of the model with free cut points, by BFGS."""
    k = frame.judge.map(list(judges).index).to_numpy()
    i = frame.model_a.map(list(items).index).to_numpy()
    j = frame.model_b.map(list(items).index).to_numpy()
    c = frame.winner.map(LABELS.index).to_numpy()

    def unpack(theta):
        gamma = np.append(theta[:K - 1], K - theta[:K - 1].sum())
        mu = np.append(theta[K - 1:K + N - 2], -theta[K - 1:K + N - 2].sum())
        a = theta[K + N - 2:].reshape(K, 4)
        cuts = np.c_[a[:, :1], a[:, :1] + np.cumsum(np.exp(a[:, 1:]), axis=1)]
        return gamma, mu, cuts

    def nll(theta):
        gamma, mu, cuts = unpack(theta)
        eta = gamma[k] * (mu[i] - mu[j])
        below = np.c_[np.zeros(len(eta)), expit(eta[:, None] + cuts[k]), np.ones(len(eta))]
        rows = np.arange(len(eta))
        return -np.sum(np.log(below[rows, c + 1] - below[rows, c]))

    start = np.r_[np.ones(K - 1), np.zeros(N - 1), np.tile([-1.5, 0.0, 0.0, 0.0], K)]
    out = minimize(nll, start, method="BFGS", options={"gtol": 1e-8, "maxiter": 10_000})
    return float(out.fun), unpack(out.x)[1]


def run(seeds: int) -> list[dict]:
    rows = []
    for design, cuts in CUTS.items():
        for seed in range(seeds):
            frame = draw(cuts, seed)
            data = hb.Comparisons.from_frame(frame)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = hb.fit_hja(data, rank=0, position_bias=True, outcome="ordinal", ridge=0.0)
            free_nll, free_mu = free_cut_fit(frame, fit.judges, fit.items)
            lr = 2 * (float(fit.nll) - free_nll)
            rows.append({"design": design, "seed": seed, "nll_symmetric": float(fit.nll),
                         "nll_free": free_nll, "lr": lr, "p": float(chi2.sf(lr, K)),
                         "max_mu_change": float(np.abs(np.asarray(fit.mu) - free_mu).max())})
            print(f"{design:9s} seed {seed}: LR {lr:7.2f} (p {rows[-1]['p']:.2g}), "
                  f"largest mu change {rows[-1]['max_mu_change']:.4f}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    rows = run(args.seeds)
    OUT.mkdir(exist_ok=True)
    (OUT / "ordinal_cuts.json").write_text(json.dumps(rows, indent=1))
    lines = ["# Symmetric against free cut points (five levels, K = 3, N = 4, 1,500 verdicts "
             "per judge)", "", "| design | seed | LR (3 df) | p | largest change of mu |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['design']} | {r['seed']} | {r['lr']:.2f} | {r['p']:.2g} | "
              f"{r['max_mu_change']:.4f} |" for r in rows]
    (OUT / "ordinal_cuts.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
