"""JAX hygiene: a second fit of a panel of the same size class compiles nothing new."""

import logging

import jax
import pytest

import hja_bayes as hb
from hja_bayes import programs
from hja_bayes.likelihood import padded_size


@pytest.fixture(autouse=True)
def empty_program_store(tmp_path, monkeypatch):
    """No program kept in memory or on disk, so that the first fit compiles its own."""
    monkeypatch.setenv("HJA_BAYES_CACHE_DIR", str(tmp_path))
    programs.clear()


class _Compiles(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.messages = []

    def emit(self, record):
        message = record.getMessage()
        if "ompil" in message:  # "Compiling ..." / "Finished XLA compilation ..."
            self.messages.append(message)


@pytest.mark.filterwarnings("ignore:the judges' sensitivities rest on few verdicts")  # 40 each
def test_second_fit_of_a_same_size_panel_does_not_recompile():
    small, _ = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=40, seed=1)
    large, _ = hb.simulate(n_judges=4, n_items=6, rank=1, comparisons_per_judge=900, seed=2)
    assert small.n_cells != large.n_cells
    assert padded_size(small.n_cells) == padded_size(large.n_cells)
    handler = _Compiles()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            fit = hb.fit_hja(small, rank=1)
            fit.intervals()
            first = len(handler.messages)
            fit = hb.fit_hja(large, rank=1)
            fit.intervals()
    finally:
        logger.removeHandler(handler)
    assert first > 0  # the check can see compilations at all
    assert [m for m in handler.messages[first:] if m.startswith("Compiling")] == []


def test_a_rank_search_compiles_one_solver_step():
    # a size no other test uses, so the step is compiled here (once per rank would be 4)
    data, _ = hb.simulate(n_judges=6, n_items=9, rank=1, comparisons_per_judge=77, seed=4)
    handler = _Compiles()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            fit = hb.fit_hja(data, rank="bic", max_rank=3)
    finally:
        logger.removeHandler(handler)
    assert list(fit.rank_table["rank"]) == [0, 1, 2, 3]
    steps = [m for m in handler.messages if m.startswith("Compiling") and "_outer_step" in m]
    assert len(steps) <= 1, steps
