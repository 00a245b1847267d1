"""What a report says: notes and summary sentences (nothing written)."""

from hja_bayes.reporting import build_report

from .report_support import evil_fit


def test_one_orientation_note():
    fit = evil_fit()
    assert fit.data.one_orientation_only
    rep = build_report(fit)
    assert any("one orientation" in n for n in rep.notes)
