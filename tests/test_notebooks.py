"""Every notebook in notebooks/ runs, on small settings (HJA_NOTEBOOK_FAST=1).

Notebooks are kept as jupytext percent-format scripts; each is converted in memory and
executed by a Jupyter kernel, so a notebook that goes stale fails the suite.
"""

import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9]*.py"))


@pytest.fixture(scope="module")
def jax_cache(tmp_path_factory):
    """One persistent XLA compilation cache shared by the notebooks' kernels.

    The notebooks fit and sample the same bundled data, so a kernel can reuse what an
    earlier one compiled instead of compiling it again.
    """
    return str(tmp_path_factory.mktemp("jax_cache"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch, jax_cache):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    root = str(path.parents[1])
    monkeypatch.setenv("HJA_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", jax_cache)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    notebook = jupytext.read(path)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
