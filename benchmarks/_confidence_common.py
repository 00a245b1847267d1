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


def write_results(name: str, payload: dict, table: str) -> None:
    """Write ``results/<name>.json`` and ``results/<name>.md`` and print the table."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = dict(payload)
    payload["machine"] = {"platform": platform.platform(), "python": platform.python_version()}
    payload["written"] = time.strftime("%Y-%m-%d %H:%M:%S")
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=float) + "\n")
    (RESULTS / f"{name}.md").write_text(table + "\n")
    print(table)
