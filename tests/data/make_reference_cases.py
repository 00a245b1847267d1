"""Write tests/data/reference_cases.json: small panels with their MLE, BIC and Wald se.

The Davidson cases (``DAVIDSON_CASES``) add per-judge tie propensities: the NLL of the three
outcomes written out here, log nu per judge a free coordinate, and the expected information
of (eta, log nu) per cell, also written out.

Run once (``python tests/data/make_reference_cases.py``); the tests read the JSON only.  The
numbers come from an independent computation that uses none of the package's solver or
inference code: the direct low-rank parameterisation ``S = (A B^T) C`` (C centres the rows;
plus per-judge biases), minimised by scipy's L-BFGS from several starts and polished by Newton steps; the expected
information ``J^T W J`` in those redundant coordinates (J = d eta / dx by jax.jacfwd,
W = n p (1 - p)); its Moore-Penrose inverse, whose null space is exactly the m^2 + m gauge
directions (m = r + 1), gives the delta-method se of the identified mu and gamma.
The panels themselves are drawn by ``hja_bayes.simulate`` and stored as cells.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

import hja_bayes as hb

CASES = [
    dict(name="K3_N4_r0", n_judges=3, n_items=4, rank=0, position_bias=False, per_judge=600, seed=1),
    dict(name="K4_N5_r1", n_judges=4, n_items=5, rank=1, position_bias=False, per_judge=900, seed=2),
    dict(name="K3_N5_r1_bias", n_judges=3, n_items=5, rank=1, position_bias=True, per_judge=1200,
         seed=3),
    dict(name="K4_N6_r2", n_judges=4, n_items=6, rank=2, position_bias=False, per_judge=1500, seed=4),
]


def reference(case):
    data, _ = hb.simulate(n_judges=case["n_judges"], n_items=case["n_items"], rank=case["rank"],
                          comparisons_per_judge=case["per_judge"], seed=case["seed"],
                          position_bias=0.4 if case["position_bias"] else 0.0, tie_prob=0.05)
    K, N, m, pb = data.n_judges, data.n_items, case["rank"] + 1, case["position_bias"]
    k, i, j = (jnp.asarray(a) for a in (data.judge, data.first, data.second))
    n, w = jnp.asarray(data.n), jnp.asarray(data.wins)
    C = jnp.eye(N) - 1.0 / N

    def unpack(x):
        A = x[: K * m].reshape(K, m)
        B = x[K * m: (K + N) * m].reshape(N, m)
        beta = x[(K + N) * m:] if pb else jnp.zeros(K)
        return A @ B.T @ C, beta

    def eta(x):
        S, beta = unpack(x)
        return beta[k] + S[k, i] - S[k, j]

    def nll(x):
        e = eta(x)
        return jnp.sum(n * jax.nn.softplus(e) - w * e)

    f = jax.jit(nll)
    g = jax.jit(jax.grad(nll))
    rng = np.random.default_rng(case["seed"])
    dim = (K + N) * m + (K if pb else 0)
    best = None
    for _ in range(8):
        x0 = rng.normal(scale=0.5, size=dim)
        res = minimize(lambda x: float(f(x)), x0, jac=lambda x: np.asarray(g(x)),
                       method="L-BFGS-B", options=dict(maxiter=20000, gtol=1e-11, ftol=1e-15))
        if best is None or res.fun < best.fun:
            best = res
    x = jnp.asarray(best.x)
    hess = jax.jit(jax.hessian(nll))
    for _ in range(5):  # polish with Newton steps on the non-gauge directions
        x = x - jnp.asarray(np.linalg.pinv(np.asarray(hess(x)), rcond=1e-10, hermitian=True)
                            @ np.asarray(g(x)))
    best.fun = float(f(x))
    S, beta = unpack(x)
    S = np.asarray(S)
    mu = S.mean(axis=0)
    gamma = S @ mu / (mu @ mu)
    J = jax.jacfwd(eta)(x)
    p = jax.nn.sigmoid(eta(x))
    info = np.asarray(J.T @ (J * (n * p * (1 - p))[:, None]))
    eig = np.linalg.eigvalsh(info)
    gauge = m * m + m
    assert eig[gauge - 1] < 1e-8 * eig[-1] < eig[gauge], "unexpected null space"
    cov = np.linalg.pinv(info, rcond=1e-9, hermitian=True)

    def identified(x):
        S, beta = unpack(x)
        mu = S.mean(axis=0)
        return jnp.concatenate([mu, S @ mu / (mu @ mu), beta])

    G = np.asarray(jax.jacfwd(identified)(x))
    se = np.sqrt(np.diag(G @ cov @ G.T))
    n_total = float(data.n.sum())
    r = case["rank"]
    bic = 2 * float(best.fun) + r * (K + N - r - 3) * np.log(n_total)
    return dict(
        name=case["name"], rank=r, position_bias=pb,
        cells=dict(judge=data.judge.tolist(), first=data.first.tolist(),
                   second=data.second.tolist(), n=data.n.tolist(), wins=data.wins.tolist(),
                   ties=data.ties.tolist()),
        nll=float(best.fun), bic=float(bic), mu=mu.tolist(), gamma=gamma.tolist(),
        beta=np.asarray(beta).tolist(), se_mu=se[:N].tolist(), se_gamma=se[N:N + K].tolist(),
        se_beta=se[N + K:].tolist(), gradient_norm=float(np.abs(np.asarray(g(x))).max()),
    )


DAVIDSON_CASES = [
    dict(name="K3_N4_r1_davidson_bias", n_judges=3, n_items=4, rank=1, position_bias=True,
         per_judge=900, seed=5, nu=[0.4, 0.9, 1.5]),
]


def reference_davidson(case):
    """A Davidson panel: direct fit, expected information and se, outcome by outcome."""
    data, _ = hb.simulate(n_judges=case["n_judges"], n_items=case["n_items"], rank=case["rank"],
                          comparisons_per_judge=case["per_judge"], seed=case["seed"],
                          position_bias=0.4 if case["position_bias"] else 0.0,
                          outcome="davidson", nu=case["nu"])
    K, N, m, pb = data.n_judges, data.n_items, case["rank"] + 1, case["position_bias"]
    k, i, j = (jnp.asarray(a) for a in (data.judge, data.first, data.second))
    first, tie, second = (jnp.asarray(data.counts[:, c]) for c in range(3))
    n = first + tie + second
    C = jnp.eye(N) - 1.0 / N
    size = (K + N) * m + (K if pb else 0)

    def unpack(x):
        A = x[: K * m].reshape(K, m)
        B = x[K * m: (K + N) * m].reshape(N, m)
        beta = x[(K + N) * m: size] if pb else jnp.zeros(K)
        return A @ B.T @ C, beta, x[size:]

    def natural(x):
        S, beta, lam = unpack(x)
        return beta[k] + S[k, i] - S[k, j], lam[k]

    def nll(x):
        eta, lam = natural(x)
        log_z = jnp.log(jnp.exp(eta / 2) + jnp.exp(-eta / 2) + jnp.exp(lam))
        return -jnp.sum((first - second) * eta / 2 + tie * lam - n * log_z)

    f, g = jax.jit(nll), jax.jit(jax.grad(nll))
    rng = np.random.default_rng(case["seed"])
    best = None
    for _ in range(8):
        x0 = rng.normal(scale=0.5, size=size + K)
        res = minimize(lambda x: float(f(x)), x0, jac=lambda x: np.asarray(g(x)),
                       method="L-BFGS-B", options=dict(maxiter=20000, gtol=1e-11, ftol=1e-15))
        if best is None or res.fun < best.fun:
            best = res
    x = jnp.asarray(best.x)
    hess = jax.jit(jax.hessian(nll))
    for _ in range(5):
        x = x - jnp.asarray(np.linalg.pinv(np.asarray(hess(x)), rcond=1e-10, hermitian=True)
                            @ np.asarray(g(x)))
    S, beta, lam = (np.asarray(a) for a in unpack(x))
    mu = S.mean(axis=0)
    gamma = S @ mu / (mu @ mu)
    eta, lam_c = natural(x)
    z = jnp.exp(eta / 2) + jnp.exp(-eta / 2) + jnp.exp(lam_c)
    p1, pt, p2 = jnp.exp(eta / 2) / z, jnp.exp(lam_c) / z, jnp.exp(-eta / 2) / z
    w_ee = n * (p1 + p2 - (p1 - p2) ** 2) / 4
    w_el = -n * pt * (p1 - p2) / 2
    w_ll = n * pt * (1 - pt)
    J_eta = jax.jacfwd(lambda y: natural(y)[0])(x)
    J_lam = jax.jacfwd(lambda y: natural(y)[1])(x)
    info = np.asarray(J_eta.T @ (J_eta * w_ee[:, None]) + J_eta.T @ (J_lam * w_el[:, None])
                      + J_lam.T @ (J_eta * w_el[:, None]) + J_lam.T @ (J_lam * w_ll[:, None]))
    eig = np.linalg.eigvalsh(info)
    gauge = m * m + m
    assert eig[gauge - 1] < 1e-8 * eig[-1] < eig[gauge], "unexpected null space"
    cov = np.linalg.pinv(info, rcond=1e-9, hermitian=True)

    def identified(y):
        S_, beta_, lam_ = unpack(y)
        mu_ = S_.mean(axis=0)
        return jnp.concatenate([mu_, S_ @ mu_ / (mu_ @ mu_), beta_, jnp.exp(lam_)])

    G = np.asarray(jax.jacfwd(identified)(x))
    se = np.sqrt(np.diag(G @ cov @ G.T))
    r = case["rank"]
    bic = 2 * float(f(x)) + r * (K + N - r - 3) * np.log(float(n.sum()))
    return dict(
        name=case["name"], rank=r, position_bias=pb, outcome="davidson",
        cells=dict(judge=data.judge.tolist(), first=data.first.tolist(),
                   second=data.second.tolist(), counts=data.counts.tolist()),
        nll=float(f(x)), bic=float(bic), mu=mu.tolist(), gamma=gamma.tolist(),
        beta=beta.tolist(), nu=np.exp(lam).tolist(), se_mu=se[:N].tolist(),
        se_gamma=se[N:N + K].tolist(), se_beta=se[N + K:N + 2 * K].tolist(),
        se_nu=se[N + 2 * K:].tolist(), gradient_norm=float(np.abs(np.asarray(g(x))).max()),
    )


def main():
    jax.config.update("jax_enable_x64", True)
    davidson = {"about": reference_davidson.__doc__.strip(),
                "cases": [reference_davidson(c) for c in DAVIDSON_CASES]}
    Path(__file__).with_name("reference_davidson.json").write_text(json.dumps(davidson, indent=1) + "\n")
    for c in davidson["cases"]:
        print(c["name"], c["nll"], c["gradient_norm"])
    out = {"about": __doc__.strip(), "cases": [reference(c) for c in CASES]}
    path = Path(__file__).with_name("reference_cases.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    for c in out["cases"]:
        print(c["name"], c["nll"], c["gradient_norm"])


if __name__ == "__main__":
    main()
