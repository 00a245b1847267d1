"""The MAP, BIC and Wald se against frozen cases computed independently (tests/data/).

``tests/data/make_reference_cases.py`` wrote them once from a direct low-rank fit by scipy and
the Moore-Penrose inverse of the expected information in redundant coordinates; nothing
there uses the package's solver or inference code.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import hja_bayes as hb

CASES = json.loads((Path(__file__).parent / "data" / "reference_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_fit_and_wald_match_the_frozen_case(case):
    cells = {name: np.asarray(v) for name, v in case["cells"].items()}
    K, N = max(cells["judge"]) + 1, len(case["mu"])
    n, wins, ties = cells["n"], cells["wins"], cells["ties"]  # ties counted 1/2 in wins
    data = hb.Comparisons(judges=tuple(f"judge{k}" for k in range(K)),
                          items=tuple(f"item{i}" for i in range(N)),
                          judge=cells["judge"], first=cells["first"], second=cells["second"],
                          counts=np.column_stack([wins - ties / 2, ties, n - wins - ties / 2]))
    # a tight stopping rule: at the default tol the proximal solver stops ~1e-6 short
    fit = hb.fit_hja(data, rank=case["rank"], position_bias=case["position_bias"], ridge=0.0,
                     tol=1e-14, max_iter=20000)
    # the reference optimum has a gradient of ~1e-6: its NLL is exact to ~1e-12 relative
    assert fit.nll == pytest.approx(case["nll"], rel=1e-10)
    assert fit.bic == pytest.approx(case["bic"], rel=1e-10)
    np.testing.assert_allclose(fit.mu, case["mu"], atol=1e-6)
    np.testing.assert_allclose(fit.gamma, case["gamma"], atol=1e-6)
    np.testing.assert_allclose(fit.beta, case["beta"], atol=1e-6)
    wald = hb.wald_inference(data, fit.S, fit.beta, fit.rank, position_bias=fit.position_bias,
                             cov_type="fisher")
    np.testing.assert_allclose(wald.mu().se, case["se_mu"], rtol=1e-5)
    np.testing.assert_allclose(wald.gamma().se, case["se_gamma"], rtol=1e-5)
    if case["position_bias"]:
        np.testing.assert_allclose(wald.position_biases().se, case["se_beta"], rtol=1e-5)


DAVIDSON = json.loads((Path(__file__).parent / "data" / "reference_davidson.json").read_text())["cases"]


@pytest.mark.parametrize("case", DAVIDSON, ids=[c["name"] for c in DAVIDSON])
def test_davidson_fit_and_wald_match_the_frozen_case(case):
    cells = {name: np.asarray(v) for name, v in case["cells"].items()}
    K, N = max(cells["judge"]) + 1, len(case["mu"])
    data = hb.Comparisons(judges=tuple(f"judge{k}" for k in range(K)),
                          items=tuple(f"item{i}" for i in range(N)), **cells)
    fit = hb.fit_hja(data, rank=case["rank"], position_bias=case["position_bias"], ridge=0.0,
                     outcome="davidson", tol=1e-14, max_iter=20000)
    assert fit.nll == pytest.approx(case["nll"], rel=1e-10)
    assert fit.bic == pytest.approx(case["bic"], rel=1e-10)
    for name in ("mu", "gamma", "beta", "nu"):
        np.testing.assert_allclose(getattr(fit, name), case[name], atol=1e-6)
    wald = hb.wald_inference(data, fit.S, fit.beta, fit.rank, position_bias=fit.position_bias,
                             cov_type="fisher", outcome="davidson", aux=fit.nu)
    np.testing.assert_allclose(wald.mu().se, case["se_mu"], rtol=1e-5)
    np.testing.assert_allclose(wald.gamma().se, case["se_gamma"], rtol=1e-5)
    np.testing.assert_allclose(wald.position_biases().se, case["se_beta"], rtol=1e-5)
    np.testing.assert_allclose(wald.outcome_parameters("nu").se, case["se_nu"], rtol=1e-5)
