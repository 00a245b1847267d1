"""Report layer: tables against the inference results they arrange, figures, HTML, escaping."""

import html
import json
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from scipy.special import expit

import hja_bayes as hb
from hja_bayes.reporting import build_report, render_html, render_markdown, wald
from hja_bayes.reporting.leaderboard import ELO_FACTOR

EVIL_MODEL = "<script>alert(1)</script>"
EVIL_JUDGE = '"><img src=x onerror=alert(2)>'


@pytest.fixture(scope="module")
def fit():
    data, _ = hb.simulate(n_judges=4, n_items=5, rank=1, comparisons_per_judge=600,
                          position_bias=0.4, seed=3)
    return hb.fit_hja(data, rank=1, position_bias=True)


@pytest.fixture(scope="module")
def evil_fit():
    # every pair in one orientation only (folded cells read back as ordered), hostile names
    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=400, seed=1)
    frame = data.fold_order().to_frame()
    frame["model_a"] = frame["model_a"].replace({data.items[0]: EVIL_MODEL})
    frame["model_b"] = frame["model_b"].replace({data.items[0]: EVIL_MODEL})
    frame["judge"] = frame["judge"].replace({data.judges[0]: EVIL_JUDGE})
    evil = hb.Comparisons.from_counts(frame)
    return hb.fit_hja(evil, rank=0)


class _Tables(HTMLParser):
    """Collect every <table id=...> as a list of rows of cell texts; note tags and URLs."""

    def __init__(self):
        super().__init__()
        self.tables, self.tags, self.urls = {}, [], []
        self._table = self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        for key in ("src", "href"):
            if key in attrs:
                self.urls.append(attrs[key])
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _parse(text):
    parser = _Tables()
    parser.feed(text)
    return parser


# ------------------------------------------------------------------------- leaderboard
def test_leaderboard_arranges_the_wald_intervals(fit):
    inference = hb.wald_inference(fit.data, fit.S, fit.beta, fit.rank, position_bias=True,
                                  ridge=fit.ridge)
    board = hb.leaderboard(fit, level=0.9)
    mu = inference.mu(0.9)
    idx = [fit.items.index(m) for m in board["model"]]
    np.testing.assert_allclose(board["score"], mu.estimate[idx])
    np.testing.assert_allclose(board["score_lower"], mu.lower[idx])
    np.testing.assert_allclose(board["score_upper"], mu.upper[idx])
    assert list(board["rank"]) == list(range(1, len(fit.items) + 1))
    assert np.all(np.diff(board["score"]) <= 0)
    # Rank(UB) = 1 + #{j : lower_j > upper_i}, counted here by brute force
    for i, row in board.iterrows():
        assert row["rank_ub"] == 1 + sum(board["score_lower"] > row["score_upper"])
    # rank interval from the pairwise difference intervals
    pairs, diff = inference.mu_differences(0.9)
    for _, row in board.iterrows():
        i = fit.items.index(row["model"])
        above = sum(1 for (a, b), lo, hi in zip(pairs, diff.lower, diff.upper)
                    if (b == i and lo > 0) or (a == i and hi < 0))
        below = sum(1 for (a, b), lo, hi in zip(pairs, diff.lower, diff.upper)
                    if (a == i and lo > 0) or (b == i and hi < 0))
        assert row["rank_lower"] == 1 + above
        assert row["rank_upper"] == len(fit.items) - below
        assert row["rank_lower"] <= row["rank"] <= row["rank_upper"]
    assert board["p_better_next"].iloc[:-1].between(0.5, 1).all()
    assert np.isnan(board["p_better_next"].iloc[-1])
    assert board["tier"].iloc[0] == 1 and np.all(np.diff(board["tier"]) >= 0)
    np.testing.assert_allclose(board["comparisons"].sum(), 2 * fit.data.n_comparisons)


def test_p_better_next_is_the_normal_probability_of_the_wald_z(fit):
    board = hb.leaderboard(fit)
    a, b = (fit.items.index(m) for m in board["model"][:2])
    q = wald(fit).contrast(lambda S, beta: S.mean(0)[a] - S.mean(0)[b])
    from scipy.stats import norm

    np.testing.assert_allclose(board["p_better_next"][0], norm.cdf(q.estimate / q.se), rtol=1e-6)


def test_tiers_group_models_that_cannot_be_told_apart(fit):
    board = hb.leaderboard(fit, level=0.999999)  # very wide intervals: few tiers
    narrow = hb.leaderboard(fit, level=0.5)
    assert board["tier"].max() <= narrow["tier"].max()
    pairs = hb.pairwise_table(fit, 0.5).set_index(["model_a", "model_b"])
    for tier, group in narrow.groupby("tier"):
        leader = group["model"].iloc[0]
        for other in group["model"].iloc[1:]:
            assert not pairs.loc[(leader, other), "significant"]


def test_elo_scale(fit):
    logit, elo = hb.leaderboard(fit), hb.leaderboard(fit, scale="elo")
    for column in ("score", "score_lower", "score_upper"):
        np.testing.assert_allclose(elo[column], ELO_FACTOR * logit[column] + 1000)
    assert list(elo["model"]) == list(logit["model"])
    with pytest.raises(hb.HJAError, match="scale"):
        hb.leaderboard(fit, scale="glicko")
    with pytest.raises(hb.HJAError, match="level"):
        hb.leaderboard(fit, level=1.5)


def test_judge_table(fit):
    table = hb.judge_table(fit)
    inference = wald(fit)
    np.testing.assert_allclose(table["gamma"], fit.gamma)
    np.testing.assert_allclose(table["gamma_lower"], inference.gamma().lower)
    np.testing.assert_allclose(table["beta_upper"], inference.position_biases().upper)
    lev = hb.judge_leverage(fit.gamma, fit.mu, fit.U, fit.V)
    np.testing.assert_allclose(table["leverage"], np.linalg.norm(fit.U @ fit.V.T, axis=1))
    assert list(table["high_leverage"]) == list(lev.high)
    np.testing.assert_allclose(table["comparisons"], fit.data.comparisons_per_judge())
    # Kendall's tau by hand: concordant minus discordant pairs over all pairs (no ties)
    for k, tau in enumerate(table["rank_corr"]):
        s, m = fit.S[k], fit.mu
        i, j = np.triu_indices(len(m), 1)
        sign = np.sign(s[i] - s[j]) * np.sign(m[i] - m[j])
        assert tau == pytest.approx(sign.mean())


def test_judge_table_without_position_bias_has_no_beta(evil_fit):
    table = hb.judge_table(evil_fit)
    assert "beta" not in table.columns and not table["high_leverage"].any()


def test_pairwise_table(fit):
    pairs = hb.pairwise_table(fit)
    n = len(fit.items)
    assert len(pairs) == n * (n - 1)
    row = pairs.iloc[0]
    a, b = fit.items.index(row["model_a"]), fit.items.index(row["model_b"])
    assert row["difference"] == pytest.approx(fit.mu[a] - fit.mu[b])
    assert row["p_win"] == pytest.approx(expit(fit.mu[a] - fit.mu[b]))
    mirror = pairs[(pairs.model_a == row["model_b"]) & (pairs.model_b == row["model_a"])].iloc[0]
    assert mirror["lower"] == pytest.approx(-row["upper"])


# ------------------------------------------------------------------------------ figures
def test_figures_are_figures(fit):
    for fig in (hb.forest_plot(fit), hb.judge_map(fit), hb.residual_heatmap(fit),
                hb.win_probability_heatmap(fit)):
        assert isinstance(fig, Figure) and fig.axes


def test_rank_zero_figures_do_not_fail(evil_fit):
    fit = evil_fit
    assert "rank 0" in hb.residual_heatmap(fit).axes[0].get_title()
    assert isinstance(hb.judge_map(fit), Figure)


# --------------------------------------------------------------------------------- HTML
def test_report_files_and_html_tables(fit, tmp_path):
    files = hb.report(fit, tmp_path, level=0.9, title="Test & report")
    text = files.html.read_text(encoding="utf-8")
    parsed = _parse(text)
    board = hb.leaderboard(fit, level=0.9)
    rows = parsed.tables["leaderboard"]
    header, body = rows[0], rows[1:]
    assert header[:2] == ["Model", "Score"] and "Rank (UB)" in header
    assert [r[0] for r in body] == list(board["model"])
    col = header.index("Rank (UB)")
    assert [int(r[col]) for r in body] == list(board["rank_ub"])
    np.testing.assert_allclose([float(r[1]) for r in body], board["score"], atol=5e-4)
    judges = parsed.tables["judges"]
    assert [r[0] for r in judges[1:]] == list(fit.judges)
    assert "γ" in judges[0] and "β" in judges[0] and "High leverage" in judges[0]
    # self-contained: no scripts, every image inline, no external references
    assert "script" not in parsed.tags
    assert parsed.urls and all(u.startswith("data:image/png;base64,") for u in parsed.urls)
    assert "Test &amp; report" in text
    # the other outputs
    assert files.markdown.read_text(encoding="utf-8").startswith("# Test &amp; report")
    names = {p.name for p in files.tables}
    assert {"leaderboard.csv", "leaderboard.json", "judges.csv", "judges.json",
            "pairwise.csv"} <= names
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    assert list(csv["model"]) == list(board["model"])
    records = json.loads((tmp_path / "judges.json").read_text(encoding="utf-8"))
    assert [r["judge"] for r in records] == list(fit.judges)
    assert all((tmp_path / "figures" / f"{n}.png").stat().st_size > 1000
               for n in ("forest", "judge_map", "residual", "win_probability"))


def test_user_strings_are_escaped(evil_fit, tmp_path):
    files = hb.report(evil_fit, tmp_path, title="<b>bold</b>")
    text = files.html.read_text(encoding="utf-8")
    for raw in (EVIL_MODEL, EVIL_JUDGE, "<b>bold</b>"):
        assert raw not in text
    assert html.escape(EVIL_MODEL) in text and html.escape(EVIL_JUDGE) in text
    parsed = _parse(text)
    assert "script" not in parsed.tags and parsed.tags.count("img") == 4
    assert "&lt;b&gt;bold&lt;/b&gt;" in text
    assert all(u.startswith("data:image/png;base64,") for u in parsed.urls)
    # the parser gives the original name back as text
    assert EVIL_MODEL in [r[0] for r in parsed.tables["leaderboard"][1:]]
    assert EVIL_JUDGE in [r[0] for r in parsed.tables["judges"][1:]]
    md = files.markdown.read_text(encoding="utf-8")
    assert EVIL_MODEL not in md and EVIL_JUDGE not in md and "&lt;script&gt;" in md


def test_render_without_writing(fit):
    rep = build_report(fit)
    assert rep.leaderboard.equals(hb.leaderboard(fit))
    assert render_html(rep).startswith("<!DOCTYPE html>")
    assert "| Model |" in render_markdown(rep)


def test_one_orientation_note(evil_fit):
    assert evil_fit.data.one_orientation_only
    rep = build_report(evil_fit)
    assert any("one orientation" in n for n in rep.notes)


# ---------------------------------------------------------------------------- posterior
@pytest.fixture(scope="module")
def posterior():
    """A small fit and a short NUTS run from its MAP (few draws: R-hat warnings are expected)."""
    import warnings

    data, _ = hb.simulate(n_judges=3, n_items=4, rank=0, comparisons_per_judge=300,
                          position_bias=0.3, seed=7)
    fit = hb.fit_hja(data, rank=0, position_bias=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hb.ConvergenceWarning)
        idata = hb.sample_hja(data, 0, init=fit, num_warmup=60, num_samples=60, num_chains=2,
                              seed=0, progress_bar=False)
    return fit, idata


def test_bayesian_columns_arrange_the_posterior(posterior):
    fit, idata = posterior
    board = hb.leaderboard(fit, idata, level=0.9, scale="elo")
    draws = np.asarray(idata.posterior["mu"]).reshape(-1, len(fit.items))
    idx = [fit.items.index(m) for m in board["model"]]
    np.testing.assert_allclose(board["post_mean"], ELO_FACTOR * draws.mean(0)[idx] + 1000)
    np.testing.assert_allclose(board["cred_lower"],
                               ELO_FACTOR * np.quantile(draws, 0.05, axis=0)[idx] + 1000)
    ranks = hb.bayes.rank_posterior(idata, 0.9).table.set_index("item")
    assert list(board["post_rank_lower"]) == [ranks.loc[m, "lower"] for m in board["model"]]
    assert list(board["p_best"]) == [ranks.loc[m, "p_best"] for m in board["model"]]
    a, b = idx[0], idx[1]
    assert board["post_p_better_next"][0] == pytest.approx(np.mean(draws[:, a] > draws[:, b]))
    # the frequentist columns do not change
    plain = hb.leaderboard(fit, level=0.9, scale="elo")
    pd.testing.assert_frame_equal(board[plain.columns], plain, check_like=False)
    judges = hb.judge_table(fit, idata)
    gamma = np.asarray(idata.posterior["gamma"]).reshape(-1, len(fit.judges))
    np.testing.assert_allclose(judges["gamma_cred_upper"], np.quantile(gamma, 0.975, axis=0))
    assert {"beta_cred_lower", "beta_cred_upper"} <= set(judges.columns)


def test_posterior_of_another_model_is_refused(posterior, fit):
    _, idata = posterior
    with pytest.raises(hb.HJAError, match="posterior"):
        hb.leaderboard(fit, idata)


def test_report_with_posterior(posterior, tmp_path):
    fit, idata = posterior
    assert len(hb.forest_plot(fit, idata).axes[0].containers) == 2  # Wald and credible
    assert isinstance(hb.posterior_predictive_plot(idata), Figure)
    files = hb.report(fit, tmp_path, idata)
    parsed = _parse(files.html.read_text(encoding="utf-8"))
    header = parsed.tables["leaderboard"][0]
    assert "Cred. lower" in header and "P(best)" in header
    assert "γ cred. lower" in parsed.tables["judges"][0]
    assert parsed.tags.count("img") == 6
    intervals = pd.read_csv(tmp_path / "intervals.csv")
    assert {"mu_diff", "gamma", "beta"} <= set(intervals["quantity"])
    # saved with the fit, the posterior comes back into the report from the command line
    from hja_bayes.cli import main

    fit.save(tmp_path / "fit", idata=idata)
    assert main(["report", str(tmp_path / "fit"), "--quiet"]) == 0
    text = (tmp_path / "fit" / "report" / "report.html").read_text(encoding="utf-8")
    assert "Posterior rank probabilities" in text or "Posterior</h2>" in text
