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
