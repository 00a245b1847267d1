"""Every notebook in notebooks/ runs, on small settings (HJA_NOTEBOOK_FAST=1).

Notebooks are kept as jupytext percent-format scripts.  Each is read as a notebook (jupytext)
and its code cells are executed in order in one namespace, from the notebooks folder, as a
kernel executes them: a notebook that goes stale fails the suite.  They run in the test
process rather than in a Jupyter kernel each, so that they reuse what the suite has imported
and compiled (a kernel per notebook cost about 40 s more in all); like a kernel, a cell's
warnings are shown, not raised.
"""

import tempfile
import warnings
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9]*.py"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch, tmp_path):
    jupytext = pytest.importorskip("jupytext")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    notebook = jupytext.read(path)
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    assert cells, f"{path.name} has no code cells"
    assert notebook.cells[0].cell_type == "markdown", f"{path.name} opens without a title cell"
    monkeypatch.setenv("HJA_NOTEBOOK_FAST", "1")
    monkeypatch.chdir(path.parent)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the notebooks' mkdtemp()
    namespace = {"__name__": "__main__"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            for i, source in enumerate(cells):
                exec(compile(source, f"{path.name} (code cell {i + 1})", "exec"), namespace)
    finally:
        plt.close("all")
