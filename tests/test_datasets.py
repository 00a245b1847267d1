import pytest

from hja_bayes import Comparisons
from hja_bayes.datasets import (
    load_ja_ranking,
    load_prd_vicuna80,
    load_trust_or_escalate,
)

from .conftest import SHARED_DATA, shared_data_or_skip


def test_bundled_prd_vicuna80():
    prd = load_prd_vicuna80()
    assert prd.judgments.shape[0] == 8000 and prd.human.shape[0] == 7040
    data = Comparisons.from_frame(prd.judgments)
    assert (data.n_judges, data.n_items, data.n_comparisons) == (5, 5, 8000)
    assert not data.one_orientation_only
    # bard picks the answer shown first in 1,253 of 1,600 verdicts (data README)
    bard = prd.judgments[prd.judgments.judge == "bard"]
    assert (bard.winner == "model_a").sum() == 1253


@pytest.mark.parametrize("name,judges,items,invalid", [("mtbench", 20, 6, 294), ("chatbot_arena", 10, 20, 63)])
def test_ja_ranking_loaders(name, judges, items, invalid):
    shared_data_or_skip("ja_ranking", f"{name}.csv")
    data = Comparisons.from_frame(load_ja_ranking(name, SHARED_DATA))
    s = data.summary()
    assert (s.n_judges, s.n_items, s.rows_read) == (judges, items, 10_000)
    assert sum(s.rejected.values()) == invalid and s.rows_used == 10_000 - invalid
    assert s.one_orientation_only


def test_trust_or_escalate_loader():
    shared_data_or_skip("trust_or_escalate", "calibration_judge_probs.csv")
    df = load_trust_or_escalate(SHARED_DATA)
    assert len(df) == 500 and set(df.human_preference) == {1, 2}
