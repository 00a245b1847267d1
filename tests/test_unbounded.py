"""Models without a finite maximum-likelihood score (they, alone or as a group, won or lost
every comparison with the rest): found against Ford's condition checked subset by subset and
against a direct optimiser, and marked in the leaderboard, the report and the forest plot."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import log_expit

import hja_bayes as hb
from hja_bayes.graphs import unbounded_items
from hja_bayes.reporting import build_report, render_html, render_markdown


def sparse_panel(seed, models=8, verdicts=14, tie_share=0.15):
    """Few verdicts among many models: wins both ways join only some of them."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(verdicts):
        a, b = rng.choice(models, 2, replace=False)
        judge = f"j{rng.integers(2)}"
        winner = ("tie" if rng.random() < tie_share else f"m{a}" if rng.random() < 0.6
                  else f"m{b}")
        rows.append({"judge": judge, "model_a": f"m{a}", "model_b": f"m{b}", "winner": winner})
    return hb.Comparisons.from_frame(pd.DataFrame(rows))


def bounded_pairs(data):
    """(N, N): whether the difference of two models' scores has a finite maximum, by Ford's
    condition read directly: it has none where some set of models holding one of the two
    and not the other won every comparison with the models outside it, or lost every one
    (a tie is a win each way).  Every subset is tried."""
    N = data.n_items
    wins = np.zeros((N, N))  # wins of row over column, pooled, ties both ways
    for a, b, n, w in zip(data.first, data.second, data.n, data.wins):
        wins[a, b] += w
        wins[b, a] += n - w
    finite = np.ones((N, N), bool)
    for size in range(1, N):
        for subset in itertools.combinations(range(N), size):
            inside = np.zeros(N, bool)
            inside[list(subset)] = True
            out_wins = wins[np.ix_(~inside, inside)].sum()
            in_wins = wins[np.ix_(inside, ~inside)].sum()
            if (out_wins == 0) != (in_wins == 0):  # every comparison across went one way
                finite[np.ix_(inside, ~inside)] = finite[np.ix_(~inside, inside)] = False
    return finite


@pytest.mark.parametrize("seed", range(16))
def test_the_marked_models_are_those_outside_the_largest_group_by_fords_condition(seed):
    data = sparse_panel(seed)
    finite = bounded_pairs(data)
    # models whose differences are all finite form groups; the largest (when it is the
    # only one of its size) is the panel's, every model outside it is marked
    groups = {tuple(np.flatnonzero(row)) for row in finite}
    sizes = sorted((len(g) for g in groups), reverse=True)
    expected = np.ones(data.n_items, bool)
    if len(sizes) == 1 or sizes[0] > sizes[1]:
        expected[list(max(groups, key=len))] = False
    np.testing.assert_array_equal(unbounded_items(data), expected)


def test_the_seeds_cover_every_case():
    """The panels above include one joined by wins both ways, one with a single largest
    group and models outside it, and one whose largest groups tie (all marked)."""
    kinds = set()
    for seed in range(16):
        data = sparse_panel(seed)
        assert np.all(data.comparisons_per_item() > 0)
        marked = unbounded_items(data)
        kinds.add("none" if not marked.any() else "all" if marked.all() else "some")
    assert kinds == {"none", "some", "all"}


def test_the_marked_scores_run_off_as_a_direct_optimisers_ridge_shrinks():
    """Pooled Bradley-Terry by SciPy with a ridge of 1e-3 and 1e-7: the differences among
    the unmarked models barely move, every marked model's distance to them grows by
    about log(1e4) or more."""
    data = sparse_panel(3, models=7, verdicts=25)
    marked = unbounded_items(data)
    assert 0 < marked.sum() < data.n_items - 1
    first, second, n, w = (np.asarray(x, float) for x in (data.first, data.second, data.n,
                                                            data.wins))
    first, second = first.astype(int), second.astype(int)

    def scores(ridge):
        def loss(s):
            d = s[first] - s[second]
            return -(w * log_expit(d) + (n - w) * log_expit(-d)).sum() + ridge * s @ s / 2
        out = minimize(loss, np.zeros(data.n_items), method="BFGS",
                       options={"gtol": 1e-12, "maxiter": 10_000})
        return out.x - out.x[~marked].mean()

    loose, tight = scores(1e-3), scores(1e-7)
    rest = ~marked
    assert np.abs((tight - loose)[rest]).max() < 0.05
    assert np.all(np.abs(tight[marked]) - np.abs(loose[marked]) > 0.5 * np.log(1e4))


def champion_and_pair():
    """Six models that split their verdicts, a champion that beat three of them, and two
    models that beat them too and split between themselves (a group of two)."""
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=200, seed=5)
    cells = data.to_frame()
    extra = []
    for j in data.judges:
        for m in data.items[:3]:
            extra += [{"judge": j, "model_a": "champ", "model_b": m, "n": 3, "wins": 3, "ties": 0},
                      {"judge": j, "model_a": "g1", "model_b": m, "n": 3, "wins": 3, "ties": 0},
                      {"judge": j, "model_a": m, "model_b": "g2", "n": 3, "wins": 0, "ties": 0}]
        extra.append({"judge": j, "model_a": "g1", "model_b": "g2", "n": 2, "wins": 1, "ties": 0})
    return hb.Comparisons.from_counts(pd.concat([cells, pd.DataFrame(extra)]))


def test_the_leaderboard_the_report_and_the_forest_plot_mark_them():
    data = champion_and_pair()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = hb.fit_hja(data, rank=0)
    said = [str(w.message) for w in caught if "won or lost every comparison" in str(w.message)]
    assert len(said) == 1 and "item(s) champ, g1, g2 won" in said[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        rep = build_report(fit)
    board = rep.leaderboard
    assert board["unbounded"].dtype == "boolean"
    assert set(board.loc[board["unbounded"], "model"]) == {"champ", "g1", "g2"}
    note = [n for n in rep.notes if "no finite maximum-likelihood score" in n]
    assert len(note) == 1
    assert "won every comparison: champ" in note[0]
    assert "won or lost, as a group, every comparison with the other models: g1, g2" in note[0]
    assert board["model"].iloc[0] in ("champ", "g1", "g2")
    assert ("Its score has no finite maximum-likelihood value (Unbounded MLE, see the notes)"
            in rep.sentences["glance"])
    assert data.summary().unbounded == ("champ", "g1", "g2")
    assert str(data.summary()).endswith("(no finite maximum-likelihood score; the fit's ridge "
                                        "sets it): champ, g1, g2")
    page, text = render_html(rep), render_markdown(rep)
    assert "<th>Unbounded MLE</th>" in page and "<dt>Unbounded MLE</dt>" in page
    assert "| Unbounded MLE |" in text
    labels = [t.get_text() for t in rep.figures["forest"].axes[0].get_legend().get_texts()]
    assert any(label.startswith("unbounded MLE") for label in labels)
    hollow = [line for line in rep.figures["forest"].axes[0].get_lines()
              if line.get_marker() == "o" and line.get_markerfacecolor() == "none"]
    assert len(hollow) == 1 and len(hollow[0].get_ydata()) == 3


def test_a_panel_with_a_finite_optimum_shows_no_such_column():
    data, _ = hb.simulate(n_judges=3, n_items=5, rank=0, comparisons_per_judge=200, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.DataWarning)
        rep = build_report(hb.fit_hja(data, rank=0))
    assert not rep.leaderboard["unbounded"].any()
    assert data.summary().unbounded == () and "maximum-likelihood" not in str(data.summary())
    assert "maximum-likelihood" not in rep.sentences["glance"]
    assert "Unbounded MLE" not in render_html(rep) + render_markdown(rep)
    labels = [t.get_text() for t in rep.figures["forest"].axes[0].get_legend().get_texts()]
    assert not any(label.startswith("unbounded") for label in labels)
    btl = hb.leaderboard(hb.fit_pooled_btl(data))
    assert btl["unbounded"].isna().all()  # a pooled fit keeps no data to tell


def test_a_long_list_of_unbounded_models_is_cut_short_in_the_warning():
    """25 models that each lost their one comparison: the warning names the first 20 and
    counts the rest, where it had named every one."""
    data, _ = hb.simulate(n_judges=2, n_items=4, rank=0, comparisons_per_judge=100, seed=1)
    losers = [{"judge": "j0", "model_a": f"weak{i:02d}", "model_b": data.items[i % 4], "n": 1,
               "wins": 0, "ties": 0} for i in range(25)]
    data = hb.Comparisons.from_counts(pd.concat([data.to_frame(), pd.DataFrame(losers)]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hb.fit_hja(data, rank=0)
    said = [str(w.message) for w in caught if "won or lost every comparison" in str(w.message)]
    assert len(said) == 1
    assert "weak19" in said[0] and "weak20" not in said[0] and " and 5 more won" in said[0]
