"""Helpers of the scan tests: the in-memory reader's result as the reference."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from hja_bayes import Comparisons, DataWarning, IdentifiabilityError, fit_hja
from hja_bayes.comparisons import aggregate_cells

#: Panels read both ways: (path parts under shared/data, cluster column).
SHARED_PANELS = [(("ja_ranking", "mtbench.csv"), "question_id"),
                 (("ja_ranking", "chatbot_arena.csv"), "question_id")]


def bundled_prd() -> str:
    """Path of the bundled PRD Vicuna80 LLM judgments (gzipped CSV)."""
    from importlib import resources

    return str(resources.files("hja_bayes") / "data" / "prd_vicuna80" / "llm_judgments.csv.gz")


def read_as_text(path) -> pd.DataFrame:
    """A CSV read as the readers read it (every cell text)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def numbered_hive_folders(root, fmt: str) -> Comparisons:
    """PRD's judgments in hive folders ``judge=01``, ``judge=1``, ``judge=007``, ... (as parquet
    or CSV parts without a judge column), and the in-memory reading of the same rows: judges
    whose names read as numbers, 01 beside 1, which Polars, Spark and Dask had merged."""
    df = read_as_text(bundled_prd())
    df["judge"] = df["judge"].map(dict(zip(sorted(df["judge"].unique()),
                                           ["01", "1", "007", "7", "2"])))
    for judge, part in df.groupby("judge"):
        folder = root / f"judge={judge}"
        folder.mkdir(parents=True)
        part = part.drop(columns="judge")
        if fmt == "parquet":
            part.to_parquet(folder / "part-0.parquet")
        else:
            part.to_csv(folder / "part-0.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # '1' / '01': said, and kept apart
        return Comparisons.from_frame(df, cluster="question_id")


def cells(data: Comparisons) -> pd.DataFrame:
    """The cells by name, in a fixed order (scan sorts names; from_frame keeps their order)."""
    frame = data.to_frame()
    for c, label in enumerate(data.categories):
        frame[f"c{c}"] = data.counts[:, c]
    return frame.sort_values(["judge", "model_a", "model_b"]).reset_index(drop=True)


def entries(data: Comparisons) -> pd.DataFrame:
    """The (prompt, cell) incidence by name, in a fixed order."""
    c = data.clusters
    frame = pd.DataFrame({
        "prompt": np.asarray(c.names, dtype=object)[c.cluster],
        "judge": np.asarray(data.judges, dtype=object)[data.judge[c.cell]],
        "a": np.asarray(data.items, dtype=object)[data.first[c.cell]],
        "b": np.asarray(data.items, dtype=object)[data.second[c.cell]]})
    for k in range(c.counts.shape[1]):
        frame[f"c{k}"] = c.counts[:, k]
    return frame.sort_values(["prompt", "judge", "a", "b"]).reset_index(drop=True)


def assert_same_data(scanned: Comparisons, reference: Comparisons) -> None:
    """Same cells, counts, rejected rows and incidence (names matched, order aside)."""
    assert set(scanned.judges) == set(reference.judges)
    assert set(scanned.items) == set(reference.items)
    assert scanned.categories == reference.categories
    pd.testing.assert_frame_equal(cells(scanned), cells(reference))
    assert scanned.rows_read == reference.rows_read
    assert scanned.rows_used == reference.rows_used
    assert scanned.rejected == reference.rejected
    assert scanned.rejected_by_judge == reference.rejected_by_judge
    assert set(scanned.dropped_judges) == set(reference.dropped_judges)
    assert scanned.cluster_column == reference.cluster_column
    if reference.clusters is not None:
        assert scanned.clusters.n_clusters == reference.clusters.n_clusters
        if not getattr(scanned.clusters, "in_engine", False):
            pd.testing.assert_frame_equal(entries(scanned), entries(reference))


def in_order_of(scanned: Comparisons, reference: Comparisons) -> Comparisons:
    """``scanned`` with its judges and items in ``reference``'s order (its clusters kept),
    so that both fits start from the same layout and differ only in how the prompts' scores
    are summed."""
    jm = np.array([reference.judges.index(j) for j in scanned.judges])
    im = np.array([reference.items.index(i) for i in scanned.items])
    out = aggregate_cells(reference.judges, reference.items, jm[scanned.judge],
                          im[scanned.first], im[scanned.second], scanned.counts,
                          categories=scanned.categories, order_known=scanned.order_known,
                          rows_read=scanned.rows_read,
                          rows_used=scanned.rows_used, rejected=scanned.rejected,
                          dropped_judges=scanned.dropped_judges,
                          rejected_by_judge=scanned.rejected_by_judge)
    return replace(out, clusters=scanned.clusters)


def interval_gap(scanned: Comparisons, reference: Comparisons, **fit) -> float:
    """Largest difference of the cluster-robust (CR1: what a scan's engine computes)
    intervals of the same fit on both."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = fit_hja(reference, **fit)
        b = fit_hja(in_order_of(scanned, reference), **fit)
    assert a.cov_type == b.cov_type == "cluster"
    ia, ib = a.intervals(cov_type="CR1"), b.intervals(cov_type="CR1")
    assert list(ia.label) == list(ib.label)
    return float(max(np.abs(ia[c].to_numpy() - ib[c].to_numpy()).max()
                     for c in ("estimate", "se", "lower", "upper")))


def prd_with_lone_prompts() -> pd.DataFrame:
    """PRD's judgments with 'claude' compared on question 1 by every judge and on question 2
    by 'bard' only, and judge 'gpt4' kept on question 3 only: without 'bard', 'claude' is on
    a single prompt; 'gpt4' always is."""
    df = read_as_text(bundled_prd())
    claude = (df["model_a"] == "claude") | (df["model_b"] == "claude")
    keep = ~claude | (df["question_id"] == "1") | ((df["question_id"] == "2")
                                                  & (df["judge"] == "bard"))
    keep &= (df["judge"] != "gpt4") | (df["question_id"] == "3")
    return df[keep].reset_index(drop=True)


def single_prompt_refusals(data: Comparisons) -> list[str]:
    """The refusals of the cluster-robust intervals (CR1) of rank-0 fits of ``data``: with
    every judge, without 'bard', and without 'gpt4' ("" where intervals came)."""
    out = []
    for leave_out in ([], ["bard"], ["gpt4"]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_hja(data, rank=0, leave_out=leave_out)
            try:
                fit.intervals(cov_type="CR1")
                out.append("")
            except IdentifiabilityError as error:
                out.append(str(error))
    return out
