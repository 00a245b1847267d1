"""The package's entry points run with one BLAS thread and give the caller's setting back
(hja_bayes.threads: NumPy's and SciPy's OpenBLAS pools, alternated on small matrices, had made
MT-Bench's cluster-robust intervals 7x slower on 2 cores)."""

from threadpoolctl import threadpool_info, threadpool_limits

import hja_bayes as hb
from hja_bayes.threads import one_blas_thread


def blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_one_blas_thread_inside_and_the_callers_after(monkeypatch):
    inside = one_blas_thread(blas_threads)
    with threadpool_limits(limits=2, user_api="blas"):
        assert set(inside()) == {1}
        assert set(blas_threads()) == {2}
        monkeypatch.setenv("HJA_BAYES_BLAS_THREADS", "keep")
        assert set(inside()) == {2}
        monkeypatch.setenv("HJA_BAYES_BLAS_THREADS", "3")
        assert set(inside()) == {3}
        assert set(blas_threads()) == {2}


def test_the_entry_points_are_limited():
    for entry in (hb.fit_hja, hb.HJAFit.intervals, hb.leaderboard, hb.pairwise_table,
                  hb.judge_table, hb.bias_table, hb.leaderboard_by, hb.report, hb.agreement,
                  hb.next_comparisons, hb.plan, hb.sample_hja):
        assert entry.__wrapped__.__name__ == entry.__name__, entry
