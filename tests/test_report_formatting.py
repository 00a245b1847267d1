"""Cell formats, Markdown escaping and spreadsheet-safe CSV."""

import numpy as np
import pandas as pd

from hja_bayes.reporting.formatting import csv_safe, format_value, md_escape


def test_posterior_probabilities_say_what_the_draws_can_say():
    assert format_value(0.0, "p_best", "logit", n_draws=600) == "< 1/600"
    assert format_value(1.0, "post_p_better_next", "logit", n_draws=600) == "> 1 − 1/600"
    assert format_value(0.25, "p_best", "logit", n_draws=600) == "0.250"
    # a Wald probability is a normal tail, not a share of draws
    assert format_value(0.99999, "p_better_next", "logit") == "> 0.999"
    assert format_value(np.nan, "p_better_next", "logit") == "–"


def test_counts_shares_and_elo_scores():
    assert format_value(np.int64(3200), "comparisons", "logit") == "3,200"
    assert format_value(0.516, "invalid_share", "logit") == "51.6%"
    assert format_value(1.0, "both_orders", "logit") == "100%"
    assert format_value(1173.66, "score", "elo") == "1174"
    assert format_value(np.bool_(True), "converged", "logit") == "yes"


def test_a_negative_number_rounded_to_zero_is_written_as_zero():
    """A lower bound of -0.0004 had read "-0.000" (and -0.3 Elo points "-0")."""
    assert format_value(-0.0004, "score_lower", "logit") == "0.000"
    assert format_value(-0.3, "score", "elo") == "0"
    assert format_value(-0.004, "nll", "logit") == "0.00"
    assert format_value(-0.0005, "score", "logit") == "-0.001"  # not zero: kept
    assert format_value(-0.7, "score", "elo") == "-1"


def test_markdown_escaping_is_inert_and_readable():
    assert md_escape("<script>x</script>") == "\\<script>x\\</script>"
    assert md_escape("> 0.999") == "> 0.999" and md_escape("< 0.001") == "< 0.001"
    assert md_escape("a|b\nc") == "a\\|b c"
    assert md_escape("&lt;") == "\\&lt;" and md_escape("Q & A") == "Q & A"
    assert md_escape("gpt_4_turbo") == "gpt_4_turbo" and md_escape("_x_") == "\\_x\\_"
    assert "&gt;" not in md_escape("> 1 − 1/600")


def test_csv_cells_cannot_start_a_formula():
    df = pd.DataFrame({"model": ['=HYPERLINK("http://x","y")', "+1", "-cmd", "@SUM(A1)",
                                 "gpt-4"], "score": [1.0, -2.0, 3.0, 4.0, 5.0]})
    safe = csv_safe(df)
    assert list(safe["model"]) == ["'=HYPERLINK(\"http://x\",\"y\")", "'+1", "'-cmd",
                                   "'@SUM(A1)", "gpt-4"]
    assert list(safe["score"]) == [1.0, -2.0, 3.0, 4.0, 5.0]  # numbers untouched
    assert list(df["model"])[0].startswith("=")  # the input is not changed


def test_a_wide_table_of_biases_reads_as_estimates_with_their_intervals():
    """The judge-bias table (β, every style feature, self-preference, each with two bounds:
    16 columns on PRD) ran off a 1,400-pixel page; shown as one column per quantity."""
    from hja_bayes.reporting.formatting import column_label, with_intervals

    biases = pd.DataFrame({"judge": ["a", "(panel)"], "beta": [1.95, np.nan],
                           "beta_lower": [1.685, np.nan], "beta_upper": [2.2154, np.nan],
                           "style:length": [0.649, 0.879], "style:length_lower": [0.315, 0.613],
                           "style:length_upper": [0.983, 1.145], "self": [0.139, np.nan],
                           "self_lower": [np.nan, np.nan], "self_upper": [np.nan, np.nan]})
    shown = with_intervals(biases, "logit")
    assert list(shown.columns) == ["judge", "beta [interval]", "style:length [interval]",
                                   "self [interval]"]
    assert shown["beta [interval]"].tolist() == ["1.950 [1.685, 2.215]", "–"]
    assert shown["style:length [interval]"].tolist() == ["0.649 [0.315, 0.983]",
                                                         "0.879 [0.613, 1.145]"]
    assert shown["self [interval]"].tolist() == ["0.139", "–"]  # no bounds: none shown
    assert column_label("beta [interval]") == "β [interval]"
    assert column_label("style:length [interval]") == "style: length [interval]"
