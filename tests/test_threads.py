"""The package's public functions run with one BLAS thread and give the caller's setting back
(hja_bayes.threads: NumPy's and SciPy's OpenBLAS pools, alternated on small matrices, had made
MT-Bench's cluster-robust intervals 8x slower on 2 cores)."""

import pytest
import scipy.linalg  # noqa: F401  (SciPy's OpenBLAS loaded before the settings are read)
from threadpoolctl import threadpool_info, threadpool_limits

import hja_bayes as hb
from hja_bayes.threads import one_blas_thread


def blas_threads():
    return {lib["internal_api"] + lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"}


def test_one_blas_thread_inside_and_the_callers_after(monkeypatch):
    monkeypatch.delenv("HJA_BAYES_BLAS_THREADS", raising=False)
    inside = one_blas_thread(blas_threads)
    nested = one_blas_thread(lambda: (inside(), blas_threads()))
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        assert set(inside().values()) == {1} and len(inside()) == len(blas_threads())
        assert set(nested()[1].values()) == {1}  # still one after the inner call returned
        assert blas_threads() == before and set(before.values()) == {2}
        monkeypatch.setenv("HJA_BAYES_BLAS_THREADS", "keep")
        assert set(inside().values()) == {2}
        monkeypatch.setenv("HJA_BAYES_BLAS_THREADS", "3")
        assert set(inside().values()) == {3}
        monkeypatch.setenv("HJA_BAYES_BLAS_THREADS", "two")
        with pytest.raises(hb.ParameterError, match="HJA_BAYES_BLAS_THREADS must be"):
            inside()
        assert blas_threads() == before


def test_the_public_functions_are_limited():
    limited = one_blas_thread(lambda: None).__code__
    for entry in (hb.fit_hja, hb.rank_criteria, hb.fit_pooled_btl, hb.HJAFit.intervals,
                  hb.HJAFit.bootstrap, hb.HJAFit.fragility, hb.HJAFit.update, hb.leaderboard,
                  hb.pairwise_table, hb.judge_table, hb.bias_table, hb.leaderboard_by,
                  hb.report, hb.agreement, hb.next_comparisons, hb.plan, hb.sample_hja):
        assert getattr(entry, "__code__", None) is limited, entry


def test_the_libraries_are_found_again_only_after_new_imports(monkeypatch):
    """threadpoolctl finds the libraries by reading the process's memory map, about 1 ms: a
    third of a small ``fit.update``.  They are found once, and again after an import (a new
    BLAS comes into the process with a module)."""
    import sys
    import threadpoolctl

    from hja_bayes import threads

    monkeypatch.delenv("HJA_BAYES_BLAS_THREADS", raising=False)
    made = []
    real = threadpoolctl.ThreadpoolController

    def counted():  # threadpool_info() in blas_threads() makes one of its own
        made.append(sys._getframe(1).f_code.co_name == "_enter")
        return real()

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", counted)
    monkeypatch.setitem(threads._found, "modules", -1)
    inside = one_blas_thread(blas_threads)
    for _ in range(3):
        assert set(inside().values()) == {1}
    assert sum(made) == 1
    monkeypatch.setitem(sys.modules, "a_module_imported_since", object())
    assert set(inside().values()) == {1} and sum(made) == 2


def test_scipys_blas_is_limited_before_a_call_imports_scipy_linalg():
    """A fresh process: a limited call loads SciPy's bundled OpenBLAS without importing
    ``scipy.linalg`` (a call that never uses it does not pay the import), and a later call
    that imports it runs SciPy's BLAS with one thread, the library's own setting given back
    after."""
    import json
    import os
    import subprocess
    import sys

    code = """if True:
        import json, sys
        import threadpoolctl
        from hja_bayes.threads import one_blas_thread

        def scipy_blas():
            return [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
                    if "scipy.libs" in lib["filepath"]
                    or ("scipy" in lib["filepath"] and ".dylibs" in lib["filepath"])]

        def uses_scipy():
            import scipy.linalg
            return scipy_blas()

        quiet = one_blas_thread(lambda: "scipy.linalg" in sys.modules)()
        own = scipy_blas()
        print(json.dumps([quiet, own, one_blas_thread(uses_scipy)(), scipy_blas()]))
    """
    env = {k: v for k, v in os.environ.items() if k != "HJA_BAYES_BLAS_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    quiet, own, inside, after = json.loads(out)
    assert quiet is False and len(own) == 1  # loaded, not imported
    assert inside == [1] and after == own
