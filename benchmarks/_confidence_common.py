"""Shared helpers of the confidence benchmarks (fold splits, result files)."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def stratified_folds(agree: np.ndarray, n_folds: int, seed: int) -> list[np.ndarray]:
    """Test indices of ``n_folds`` folds, each class spread evenly (shuffled by ``seed``)."""
    rng = np.random.default_rng(seed)
    fold = np.empty(len(agree), dtype=int)
    for cls in (True, False):
        idx = rng.permutation(np.flatnonzero(agree == cls))
        fold[idx] = np.arange(len(idx)) % n_folds
    return [np.flatnonzero(fold == f) for f in range(n_folds)]


def grouped_folds(groups: np.ndarray, n_folds: int, seed: int) -> list[np.ndarray]:
    """Test indices of ``n_folds`` folds that keep every group inside one fold."""
    rng = np.random.default_rng(seed)
    uniq = rng.permutation(np.unique(groups))
    where = {g: i % n_folds for i, g in enumerate(uniq)}
    fold = np.array([where[g] for g in groups])
    return [np.flatnonzero(fold == f) for f in range(n_folds)]


def cross_validated_auroc(data, methods: dict, n_seeds: int, *, grouped: bool) -> dict:
    """AUROC of every method within each held-out fold, 5 folds x ``n_seeds`` shuffles.

    ``methods`` maps a name to ``f(x_train, agree_train, x_test, seed) -> scores``; the same
    folds are used for every method.  Returns name -> list of per-fold AUROCs.
    """
    from hja_bayes.confidence import auroc

    scores = {name: [] for name in methods}
    for seed in range(n_seeds):
        folds = grouped_folds(data.groups, 5, seed) if grouped else stratified_folds(data.agree, 5, seed)
        for f, test in enumerate(folds):
            train = np.setdiff1d(np.arange(data.n), test)
            for name, method in methods.items():
                c = method(data.features[train], data.agree[train], data.features[test], 10 * seed + f)
                scores[name].append(float(auroc(c, data.agree[test])))
    return scores


def baselines() -> dict:
    """scikit-learn references: LogisticRegression() and HistGradientBoosting(max_depth=2)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    def logistic(x, a, x_test, seed):
        return LogisticRegression().fit(x, a).predict_proba(x_test)[:, 1]

    def boosting(x, a, x_test, seed):
        model = HistGradientBoostingClassifier(max_depth=2, random_state=seed)
        return model.fit(x, a).predict_proba(x_test)[:, 1]

    return {"logistic": logistic, "boosting": boosting}


def write_results(name: str, payload: dict, table: str) -> None:
    """Write ``results/<name>.json`` and ``results/<name>.md`` and print the table."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = dict(payload)
    payload["machine"] = {"platform": platform.platform(), "python": platform.python_version()}
    payload["written"] = time.strftime("%Y-%m-%d %H:%M:%S")
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=float) + "\n")
    (RESULTS / f"{name}.md").write_text(table + "\n")
    print(table)
