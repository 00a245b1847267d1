"""The Comparisons container: cells, folding, connectivity, immutability."""

import numpy as np
import pandas as pd
import pytest

from hja_bayes import Comparisons, DataError, DisconnectedGraphError


def frame(**cols):
    return pd.DataFrame(cols)


def test_aggregation_counts_ties_half_and_keeps_order():
    df = frame(
        judge=["j1", "j1", "j1", "j1", "j2"],
        model_a=["x", "x", "x", "y", "x"],
        model_b=["y", "y", "y", "x", "y"],
        winner=["model_a", "tie", "y", "model_a", "tie (bothbad)"],
    )
    data = Comparisons.from_frame(df)
    cells = data.to_frame().set_index(["judge", "model_a", "model_b"])
    assert cells.loc[("j1", "x", "y")].tolist() == [3.0, 1.5, 1.0]  # n, wins, ties
    assert cells.loc[("j1", "y", "x")].tolist() == [1.0, 1.0, 0.0]  # separate cell: order kept
    assert cells.loc[("j2", "x", "y")].tolist() == [1.0, 0.5, 1.0]
    assert data.n_comparisons == 5
    folded = data.fold_order()
    fc = folded.to_frame().set_index(["judge", "model_a", "model_b"])
    # (j1, y, x): y won -> in folded (x, y) orientation x lost: wins of x = 1.5 + 0
    assert fc.loc[("j1", "x", "y")].tolist() == [4.0, 1.5, 1.0]
    assert not folded.order_known


def test_connectivity_pooled_and_per_judge():
    df = frame(
        judge=["j1", "j1", "j2"],
        model_a=["a", "c", "b"],
        model_b=["b", "d", "c"],
        winner=["model_a"] * 3,
    )
    data = Comparisons.from_frame(df)
    assert data.is_connected()
    assert not data.is_connected("j1")
    with pytest.raises(DisconnectedGraphError, match="2 groups"):
        data.check_connected("j1")
    assert data.summary().disconnected_judges == ("j1", "j2")
    split = Comparisons.from_frame(frame(model_a=["a", "c"], model_b=["b", "d"],
                                         winner=["tie", "tie"]), judge=None)
    with pytest.raises(DisconnectedGraphError, match=r"\{a, b\}; \{c, d\}"):
        split.check_connected()


def test_one_orientation_only_detected():
    one = Comparisons.from_frame(frame(model_a=["a", "b"], model_b=["b", "c"],
                                       winner=["tie", "tie"]), judge=None)
    both = Comparisons.from_frame(frame(model_a=["a", "b"], model_b=["b", "a"],
                                        winner=["tie", "tie"]), judge=None)
    assert one.one_orientation_only and "one orientation only" in str(one.summary())
    assert not both.one_orientation_only


def test_cells_are_immutable():
    data = Comparisons.from_frame(frame(model_a=["a"], model_b=["b"], winner=["tie"]),
                                  judge=None)
    with pytest.raises(ValueError):
        data.counts[0, 0] = 5
    with pytest.raises(AttributeError):
        data.items = ("z",)


def test_clusters_are_kept_through_folding_and_judge_selection():
    df = pd.DataFrame({
        "judge": ["j1", "j1", "j2", "j2", "j1", "j2"],
        "model_a": ["x", "y", "x", "x", "x", "y"],
        "model_b": ["y", "x", "y", "y", "z", "z"],
        "winner": ["model_a", "tie", "model_b", "model_a", "invalid", "model_a"],
        "question_id": ["q1", "q1", "q1", "q2", "q2", "q2"],
    })
    data = Comparisons.from_frame(df, cluster="question_id")
    c = data.clusters
    assert c.names == ("q1", "q2") and c.n.sum() == data.n_comparisons == 5
    assert np.allclose(np.bincount(c.cell, c.wins, data.n_cells), data.wins)
    assert data.summary().n_clusters == 2
    assert "clusters from column 'question_id': 2, effective 1.9" in str(data.summary())
    folded = data.fold_order()
    assert folded.clusters.n.sum() == 5
    assert np.allclose(np.bincount(folded.clusters.cell, folded.clusters.wins,
                                   folded.n_cells), folded.wins)
    one = data.select_judges(["j2"])
    assert one.clusters.n.sum() == one.n_comparisons == 3
    # j1 alone: its two valid verdicts are on q1; q2 holds none of them (its summary had
    # said 2 clusters, as the fit's 1)
    assert data.select_judges(["j1"]).summary().n_clusters == 1
    for judges in ([], ["j1", "j1"]):  # had said "every row was rejected" / "at least one"
        with pytest.raises(DataError, match="needs one judge or more, each once"):
            data.select_judges(judges)
    counts = Comparisons.from_counts(pd.DataFrame({
        "model_a": ["x", "x"], "model_b": ["y", "y"], "n": [3, 2], "wins": [2, 0.5],
        "ties": [0, 1], "q": ["a", "b"]}), judge=None, cluster="q")
    assert counts.n_cells == 1 and counts.clusters.n_clusters == 2


def test_cluster_counts_that_do_not_add_up_are_refused():
    data = Comparisons.from_frame(pd.DataFrame({
        "model_a": ["x", "x"], "model_b": ["y", "y"], "winner": ["model_a", "model_b"],
        "q": ["a", "b"]}), judge=None, cluster="q")
    c = data.clusters
    with pytest.raises(DataError, match="do not add up"):
        Comparisons(data.judges, data.items, data.judge, data.first, data.second, data.counts,
                    clusters=c._replace(counts=c.counts * 2))
    with pytest.raises(DataError, match="not found"):
        Comparisons.from_frame(pd.DataFrame({"model_a": ["x"], "model_b": ["y"],
                                             "winner": ["x"]}), judge=None,
                               cluster="question_id")


def test_cells_by_judge_indexes_each_judges_cells_sorted_or_not():
    df = frame(
        judge=["j1", "j2", "j1", "j3", "j2", "j1"],
        model_a=["x", "x", "y", "x", "z", "x"],
        model_b=["y", "z", "z", "y", "y", "z"],
        winner=["model_a", "model_b", "tie", "model_a", "model_a", "model_b"],
    )
    data = Comparisons.from_frame(df)
    # the readers leave the cells sorted by judge; a reordered selection does not
    for d in (data, data.select_judges(["j3", "j1", "j2"])):
        blocks = d.cells_by_judge()
        assert len(blocks) == d.n_judges
        for k, index in enumerate(blocks):
            np.testing.assert_array_equal(np.arange(d.n_cells)[index], np.flatnonzero(d.judge == k))
    assert all(isinstance(b, slice) for b in data.cells_by_judge())
    assert not np.all(np.diff(data.select_judges(["j3", "j1", "j2"]).judge) >= 0)


@pytest.mark.parametrize("order", ["random", "two sorted runs", "empty"])
def test_unique_keys_and_inverse_as_numpy_gives_them(order):
    from hja_bayes.clusters import unique_inverse

    rng = np.random.default_rng(5)
    keys = {"random": rng.integers(0, 300, 2000),
            "two sorted runs": np.concatenate([np.sort(rng.integers(0, 300, 900)),
                                               np.sort(rng.integers(0, 300, 1100))]),
            "empty": np.zeros(0, dtype=np.int64)}[order]
    got, want = unique_inverse(keys), np.unique(keys, return_inverse=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_items", [7, 40])
def test_item_graph_marks_each_edge_once_with_or_without_the_flags(monkeypatch, n_items):
    """The graph from the array of flags and the one from a COO matrix (SciPy's sort and
    merge) hold the same edges as a brute-force adjacency, repeats merged; components too."""
    from scipy.sparse.csgraph import connected_components

    import hja_bayes.graphs as graphs

    rng = np.random.default_rng(n_items)
    a = rng.integers(0, n_items, 3 * n_items)
    b = rng.integers(0, n_items, 3 * n_items)
    a, b = np.concatenate([a, a[:10]]), np.concatenate([b, b[:10]])  # repeated edges
    adjacency = np.zeros((n_items, n_items), dtype=bool)
    for i, j in zip(a, b):
        adjacency[i, j] = True
    built = [graphs.item_graph(a, b, n_items)]
    monkeypatch.setattr(graphs, "DENSE_GRAPH_MAX", 0)
    built.append(graphs.item_graph(a, b, n_items))
    for g in built:
        assert g.shape == (n_items, n_items) and g.nnz == adjacency.sum()
        np.testing.assert_array_equal(g.toarray() != 0, adjacency)
    labels = [connected_components(g, directed=True, connection="strong")[1] for g in built]
    np.testing.assert_array_equal(labels[0], labels[1])
