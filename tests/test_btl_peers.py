"""Pooled Bradley–Terry against arena-rank (a benchmark extra: skipped when absent)."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hja_bayes import Comparisons, fit_pooled_btl, simulate

ROOT = Path(__file__).resolve().parents[1]


def battles(data):
    """Single-judge cells expanded to one row per battle (winner model_a / model_b / tie)."""
    items = np.asarray(data.items, dtype=object)
    per_outcome = np.rint(np.concatenate([data.wins - data.ties / 2,
                                          data.n - data.wins - data.ties / 2,
                                          data.ties])).astype(int)
    outcome = np.repeat(np.array(["model_a", "model_b", "tie"], dtype=object), data.n_cells)
    return pd.DataFrame({
        "model_a": np.repeat(np.tile(items[data.first], 3), per_outcome),
        "model_b": np.repeat(np.tile(items[data.second], 3), per_outcome),
        "winner": np.repeat(outcome, per_outcome),
    })


def test_battle_rows_rebuild_the_cells():
    data, _ = simulate(n_judges=1, n_items=5, rank=0, comparisons_per_judge=300, seed=2, tie_prob=0.2)
    again = Comparisons.from_frame(battles(data), judge=None)
    ours = data.to_frame().drop(columns="judge").sort_values(["model_a", "model_b"], ignore_index=True)
    theirs = again.to_frame().drop(columns="judge").sort_values(["model_a", "model_b"], ignore_index=True)
    pd.testing.assert_frame_equal(ours, theirs)


def test_agrees_with_arena_rank_on_ties():
    pytest.importorskip("arena_rank")
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.utils.data_utils import PairDataset

    data, _ = simulate(n_judges=1, n_items=12, rank=0, comparisons_per_judge=6000, seed=5, tie_prob=0.1)
    fit = fit_pooled_btl(data, ridge=0.0)

    dataset = PairDataset.from_pandas(battles(data))  # maps "tie" to an outcome of 1/2
    model = BradleyTerry(len(dataset.competitors))
    out = model.compute_ratings_and_cis(dataset)
    # arena-rank reports init_rating + scale / ln(base) * s; bring it back to log strengths s
    s = (np.asarray(out["ratings"], dtype=float) - model.init_rating) * math.log(model.base) / model.scale
    theirs = pd.Series(s, index=out["competitors"]).reindex(list(fit.items)).to_numpy()
    np.testing.assert_allclose(fit.scores, theirs - theirs.mean(), rtol=0, atol=1e-4)


def test_benchmark_runs_with_tiny_arguments(tmp_path, capsys):
    pytest.importorskip("arena_rank")
    pytest.importorskip("evalica")
    # in this process, so that JAX and the peers are imported once for the whole suite
    spec = importlib.util.spec_from_file_location("bench_pooled_btl", ROOT / "benchmarks" / "bench_pooled_btl.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    report = bench.main(["--n-battles", "1500", "--n-models", "6", "--repeats", "1", "--out", str(tmp_path)])
    assert "ours/arena" in capsys.readouterr().out
    assert report == json.loads((tmp_path / "pooled_btl.json").read_text(encoding="utf-8"))
    assert report["config"]["n_battles"] == 1500
    assert set(report["ratios"]) == {"arena_rank", "evalica"}
    assert max(report["agreement"].values()) < 1e-4
    assert (tmp_path / "pooled_btl.md").read_text(encoding="utf-8").startswith("# Pooled")
