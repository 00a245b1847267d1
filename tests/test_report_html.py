"""HTML and Markdown renderings: tables match the report's tables, user strings escaped."""

import html

import numpy as np

import hja_bayes as hb
from hja_bayes.reporting import build_report, render_html, render_markdown

from .report_support import EVIL_JUDGE, EVIL_MODEL, evil_fit, parse_html, small_fit


def test_html_tables_match_the_tables(tmp_path):
    fit = small_fit()
    rep = build_report(fit, level=0.9, title="Test & report")
    text = render_html(rep)
    parsed = parse_html(text)
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
    assert "γ" in judges[0] and "β" in judges[0] and "High γ and h" in judges[0]
    # self-contained: no scripts, every image inline, no external references
    assert "script" not in parsed.tags
    assert parsed.urls and all(u.startswith("data:image/png;base64,") for u in parsed.urls)
    assert "Test &amp; report" in text
    assert render_markdown(rep).startswith("# Test & report")


def test_user_strings_are_escaped():
    rep = build_report(evil_fit(), title="<b>bold</b>")
    text = render_html(rep)
    for raw in (EVIL_MODEL, EVIL_JUDGE, "<b>bold</b>"):
        assert raw not in text
    assert html.escape(EVIL_MODEL) in text and html.escape(EVIL_JUDGE) in text
    parsed = parse_html(text)
    assert "script" not in parsed.tags and parsed.tags.count("img") == len(rep.figures)
    assert "&lt;b&gt;bold&lt;/b&gt;" in text
    assert all(u.startswith("data:image/png;base64,") for u in parsed.urls)
    # the parser gives the original name back as text
    assert EVIL_MODEL in [r[0] for r in parsed.tables["leaderboard"][1:]]
    assert EVIL_JUDGE in [r[0] for r in parsed.tables["judges"][1:]]
    md = render_markdown(rep)
    assert EVIL_MODEL not in md and EVIL_JUDGE not in md
    assert "\\<script>alert(1)\\</script>" in md  # backslash escapes: inert, readable
    assert "\\<b>bold\\</b>" in md


def test_render_without_writing():
    fit = small_fit()
    rep = build_report(fit)
    assert rep.leaderboard.equals(hb.leaderboard(fit))
    assert render_html(rep).startswith("<!DOCTYPE html>")
    assert "| Model |" in render_markdown(rep)


def test_dark_style_and_no_entities_in_markdown():
    fit = small_fit()
    rep = build_report(fit)
    text = render_html(rep)
    assert "@media (prefers-color-scheme: dark)" in text
    md = render_markdown(rep)
    assert "&gt;" not in md and "&lt;" not in md and "&amp;" not in md
    assert "> 0.999" in md  # P(better than next) near 1, written as text
    assert "nan" not in md.lower().replace("nanmax", "")


def test_rank_zero_report_leaves_out_the_empty_disagreement():
    rep = build_report(evil_fit())
    text = render_html(rep)
    header = parse_html(text).tables["judges"][0]
    assert "Leverage h" not in header and "High γ and h" not in header
    assert "The model was fitted at rank 0, without structured disagreement" in text
    assert "residual" not in rep.figures and "Structured disagreement UV" not in text


def test_the_posterior_rows_whose_chains_disagree_are_shaded_and_the_notes_headed():
    """Rows of the convergence table with R-hat above its limit are shaded (a reader had to
    scan the numbers) where more entries are above it than agreeing chains put there by
    chance; the notes the sentences point to ("see the notes") are headed so."""
    import re

    from .report_support import posterior

    fit, idata = posterior()
    rep = build_report(fit, idata)
    limit = rep.convergence.attrs["rhat_limit"]
    above = {q: bool(r > limit) for q, r in zip(rep.convergence["quantity"],
                                                rep.convergence["max_rhat"])}
    assert any(above.values())  # 2 x 60 draws
    rep.convergence.attrs = dict(rep.convergence.attrs)  # this report's own
    for chance, shaded in ((0.0, True), (1e4, False)):  # beyond chance, or what it gives
        rep.convergence.attrs.update(rhat_by_chance=chance)
        text = render_html(rep)
        table = text[text.index('<table id="convergence">'):]
        table = table[:table.index("</table>")]
        rows = re.findall(r"<tr( class=\"flag\")?><td class=\"text\">([^<]+)</td>", table)
        assert {q: bool(flag) for flag, q in rows} == {q: a and shaded for q, a in above.items()}
    plain = build_report(small_fit())
    assert ("<h3>Notes</h3>" in render_html(plain)) == bool(plain.notes)
    noted = plain._replace(notes=("a note",)) if hasattr(plain, "_replace") else None
    if noted is not None:
        assert '<h3>Notes</h3><p class="note">a note</p>' in render_html(noted)
        assert "### Notes\n\n> a note" in render_markdown(noted)
