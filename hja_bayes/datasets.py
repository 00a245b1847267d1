"""Real data sets: PRD Vicuna80 (bundled, MIT) and loaders for unbundled ones.

The JA-Ranking sets (MT-Bench, Chatbot Arena) and the Trust-or-Escalate calibration split
carry no license, so they are not shipped: their loaders read them from a folder you
point at (``data_dir``), else from the environment variable ``HJA_DATA_DIR``, else from
``../shared/data`` (relative to the working directory, then to the source checkout).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from .errors import DataError, ParameterError

__all__ = [
    "PRDVicuna80",
    "load_prd_vicuna80",
    "load_ja_ranking",
    "load_trust_or_escalate",
    "find_data_dir",
]

PRD_CITATION = (
    "Li, Patel, Du (2023), PRD: Peer Rank and Discussion Improve Large Language Model based "
    "Evaluations, arXiv:2307.02762; data from github.com/bcdnlp/PRD (MIT, (c) 2023 bcdnlp)"
)


class PRDVicuna80(NamedTuple):
    """PRD Vicuna80: LLM judges' verdicts and human votes on the same questions.

    Attributes
    ----------
    judgments : DataFrame
        8,000 LLM verdicts: judge, question_id, model_a (shown first), model_b, winner, ...
    human : DataFrame
        7,040 human votes: question_id, model_a, model_b, winner, raw_score, vote_idx, ...
    answers : DataFrame
        The 400 answers judged: question_id, model, model_id, answer (the text); one per
        (question, model) for the five LLM-judged models.
    questions : DataFrame
        The 80 questions: question_id, category, question (the text).
    """

    judgments: pd.DataFrame
    human: pd.DataFrame
    answers: pd.DataFrame
    questions: pd.DataFrame


def load_prd_vicuna80() -> PRDVicuna80:
    """Load the bundled PRD Vicuna80 judgments (MIT license; see :data:`PRD_CITATION`).

    Five LLM judges (bard, claude, gpt35, gpt4, vicuna-13b) compare the answers of the same
    five models on 80 questions, every pair in both presentation orders; human votes on the
    same questions (9 models) serve as reference labels.  The answers' texts come along, so
    that a fit can control for their style (:func:`hja_bayes.style_features`), and the
    questions with their categories.

    Examples
    --------
    >>> prd = load_prd_vicuna80()
    >>> len(prd.judgments), len(prd.human), len(prd.answers), len(prd.questions)
    (8000, 7040, 400, 80)
    """
    folder = resources.files("hja_bayes") / "data" / "prd_vicuna80"
    tables = []
    for name in ("llm_judgments", "human_judgments", "answers", "questions"):
        with resources.as_file(folder / f"{name}.csv.gz") as p:
            tables.append(pd.read_csv(p, keep_default_na=name != "answers"))
    return PRDVicuna80(*tables)


def find_data_dir(path: str | os.PathLike | None = None) -> Path:
    """The folder holding the unbundled data sets.

    Order: ``path`` if given; ``$HJA_DATA_DIR``; ``../shared/data`` from the working
    directory; ``../shared/data`` beside the source checkout.  Raises ``DataError`` if none
    exists.
    """
    candidates = []
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"data_dir is a folder's path, got {type(path).__name__}")
    if path is not None:
        candidates.append(Path(path))
    elif os.environ.get("HJA_DATA_DIR"):
        candidates.append(Path(os.environ["HJA_DATA_DIR"]))
    else:
        candidates.append(Path.cwd().parent / "shared" / "data")
        candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    raise DataError(
        f"data folder not found (tried {list(dict.fromkeys(str(c) for c in candidates))}); "
        "pass data_dir= or set HJA_DATA_DIR to the folder that holds ja_ranking/ and "
        "trust_or_escalate/"
    )


def _read(folder: Path, *parts: str) -> pd.DataFrame:
    path = folder.joinpath(*parts)
    if not path.is_file():
        raise DataError(f"{path} not found under the data folder {folder}")
    return pd.read_csv(path)


def load_ja_ranking(name: str = "mtbench", data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Load a JA-Ranking multi-judge data set (not bundled: no license stated).

    Parameters
    ----------
    name : {"mtbench", "chatbot_arena"}
        MT-Bench (20 judges, 6 models) or Chatbot Arena (10 judges, 20 models).
    data_dir : path, optional
        Folder holding ``ja_ranking/`` (see :func:`find_data_dir`).

    Returns
    -------
    DataFrame
        question_id, judge, model_a, model_b, winner (model_a / model_b / tie / invalid),
        judge_confidence.  Pass it to :meth:`Comparisons.from_frame`: "invalid" rows are
        counted and left out there.
    """
    if name not in ("mtbench", "chatbot_arena"):
        raise DataError(f"unknown JA-Ranking data set {name!r}; choose 'mtbench' or 'chatbot_arena'")
    return _read(find_data_dir(data_dir), "ja_ranking", f"{name}.csv")


def load_trust_or_escalate(data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Load the Trust-or-Escalate calibration split (500 items, 3 judges; not bundled).

    Columns: example_id, human_preference (1 or 2), ``p_output1__<judge>`` and
    ``p_output2__<judge>`` for gpt-4-turbo, gpt-3.5-turbo and mistral-7b-instruct.
    """
    return _read(find_data_dir(data_dir), "trust_or_escalate", "calibration_judge_probs.csv")
