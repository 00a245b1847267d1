"""Tables of the observed data against a direct count over the raw rows."""

import numpy as np
import pandas as pd

import hja_bayes as hb
from hja_bayes.reporting import battle_counts, observed_win_fraction


def _rows():
    rng = np.random.default_rng(0)
    items = ["a", "b", "c", "d"]
    rows = []
    for _ in range(400):
        i, j = rng.choice(3, 2, replace=False)  # d never plays
        rows.append(dict(judge=f"j{rng.integers(3)}", model_a=items[i], model_b=items[j],
                         winner=rng.choice(["model_a", "model_b", "tie"], p=[0.5, 0.3, 0.2])))
    rows.append(dict(judge="j0", model_a="d", model_b="a", winner="model_a"))
    return pd.DataFrame(rows)


def test_battles_and_win_fractions_are_the_raw_counts():
    rows = _rows()
    data = hb.Comparisons.from_frame(rows)
    order = ["c", "a", "d", "b"]
    battles = battle_counts(data, order)
    frac = observed_win_fraction(data, order)
    assert list(battles.index) == order and list(frac.columns) == order
    for x in order:
        for y in order:
            met = rows[((rows.model_a == x) & (rows.model_b == y))
                       | ((rows.model_a == y) & (rows.model_b == x))]
            assert battles.loc[x, y] == len(met)
            if x == y or len(met) == 0:
                assert np.isnan(frac.loc[x, y])
                continue
            won = (((met.model_a == x) & (met.winner == "model_a"))
                   | ((met.model_b == x) & (met.winner == "model_b"))).sum()
            tied = (met.winner == "tie").sum()
            assert frac.loc[x, y] == (won + tied / 2) / len(met)
    both = frac.to_numpy() + frac.to_numpy().T
    np.testing.assert_allclose(both[np.isfinite(both)], 1.0)
