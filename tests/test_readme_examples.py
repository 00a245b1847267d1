"""The README's Python examples on the bundled data run as written.

Blocks that use names a reader brings (``votes.csv``, ``question_ids``, a training split) or
optional engines are left to their own tests; the leaderboard block runs without its
posterior lines (NUTS takes a minute; ``test_report_files`` covers those calls).
"""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def _block(starting: str) -> str:
    found = [b for b in _blocks() if b.lstrip().startswith(starting)]
    assert len(found) == 1, f"README: {len(found)} python blocks start with {starting!r}"
    return found[0]


def test_the_readme_examples_on_the_bundled_data_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = "import hja_bayes as hb\n\nprd = hb.datasets.load_prd_vicuna80()"
    quickstart = _block(first + "            # bundled")
    style = _block(first + "              # judgments")
    board = "\n".join(line for line in _block('fit = hb.fit_hja(data, rank="bic"').splitlines()
                      if "idata" not in line)
    agreement = _block(first + "\ndata")
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PRD's flat "headers" feature is named, as documented
        for name, code in (("quickstart", quickstart), ("style", style), ("board", board),
                           ("agreement", agreement)):
            exec(compile(code, f"README {name} block", "exec"), namespace)
    assert (tmp_path / "out" / "report.html").exists()
    assert len(namespace["plain"].terms) == 1  # the style block's fit, its position bias only
    # what to ask next, on the agreement block's PRD fit; the confidence ranker
    namespace["new_rows"] = namespace["prd"].judgments.head(20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(_block("# fit: PRD's five LLM judges"), "README design block", "exec"),
             namespace)
        exec(compile(_block("from hja_bayes import confidence as hc"),
                     "README confidence block", "exec"), namespace)
    assert set(namespace["ask"].judge) <= {"gpt4", "claude", "bard"}
    bard = namespace["ask"][namespace["ask"].judge == "bard"]
    assert set(bard.model_a) | set(bard.model_b) <= {"gpt4", "claude", "gpt35"}
    assert len(namespace["trusted"]) == namespace["test"].n
    assert namespace["p"].comparisons_per_judge == 47  # as the block says
    assert namespace["cert"].threshold is not None and namespace["trusted"].sum() > 0


def test_the_readme_scan_example_runs():
    for engine in ("duckdb", "polars"):  # both in the "test" extra
        pytest.importorskip(engine, reason=f"the {engine} extra is not installed")
    namespace: dict = {}
    exec(compile(_block("from importlib import resources"), "README scan block", "exec"),
         namespace)
    assert namespace["data"].n_comparisons == 8000
