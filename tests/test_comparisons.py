"""The Comparisons container: cells, folding, connectivity, immutability."""


import pandas as pd
import pytest

from hja_bayes import Comparisons, DisconnectedGraphError


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
    split = Comparisons.from_frame(frame(model_a=["a", "c"], model_b=["b", "d"], winner=["tie", "tie"]))
    with pytest.raises(DisconnectedGraphError, match=r"\{a, b\}; \{c, d\}"):
        split.check_connected()


def test_one_orientation_only_detected():
    one = Comparisons.from_frame(frame(model_a=["a", "b"], model_b=["b", "c"], winner=["tie", "tie"]))
    both = Comparisons.from_frame(frame(model_a=["a", "b"], model_b=["b", "a"], winner=["tie", "tie"]))
    assert one.one_orientation_only and "one orientation only" in str(one.summary())
    assert not both.one_orientation_only


def test_cells_are_immutable():
    data = Comparisons.from_frame(frame(model_a=["a"], model_b=["b"], winner=["tie"]))
    with pytest.raises(ValueError):
        data.n[0] = 5
    with pytest.raises(AttributeError):
        data.items = ("z",)
