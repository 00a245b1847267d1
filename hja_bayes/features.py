"""Answer style features, and their differences joined to the rows of judgments.

Judges, human or LLM, tend to prefer the longer and the more formatted of two answers.  To
separate an answer's quality from its style, a fit controls for features of the two answers
shown (``fit_hja(..., style=...)``, SPEC §10).  This module makes those features:

* :func:`style_features` counts, per (prompt, model) answer, Chatbot Arena's style features:
  length, markdown headers, list items and bold spans;
* :func:`join_features` puts the features of both answers beside every row of judgments and
  turns them into one transformed difference per feature (first shown minus second shown).
  The readers call it for ``Comparisons.from_frame(df, cluster=..., features=...)``.
"""

from __future__ import annotations

import re
from typing import Mapping, NamedTuple

import numpy as np
import pandas as pd

from .answer_text import length_counter, markdown_counts
from .errors import DataError, DataWarning, ParameterError, warn
from .sources import as_frame, row_label

__all__ = ["FEATURE_TRANSFORMS", "STYLE_FEATURES", "FeatureDifferences", "join_features",
           "markdown_counts", "relative_difference", "style_features"]

#: The columns :func:`style_features` makes, in order.
STYLE_FEATURES = ("length", "headers", "lists", "bold")
#: How :func:`join_features` turns two answers' features into one difference.
FEATURE_TRANSFORMS = ("relative", "difference", "raw")

def style_features(answers, *, prompt: str = "question_id", model: str = "model",
                   text: str = "answer", length="words") -> pd.DataFrame:
    """Style features of every answer: length, markdown headers, list items, bold spans.

    Parameters
    ----------
    answers : DataFrame, or a table with ``.to_pandas()``
        One row per answer: the prompt it answers, the model that wrote it, its text.
    prompt, model, text : str
        The columns naming the prompt, the model, and holding the answer's text.
    length : {"words", "characters"} or callable
        How the length is counted: whitespace-separated words (default), characters, or a
        tokenizer: a callable mapping a text to its tokens (whose number is taken, e.g.
        ``tiktoken.get_encoding("o200k_base").encode``, Chatbot Arena's choice) or to a count.

    Returns
    -------
    DataFrame
        One row per answer, in the input's order: the ``prompt`` column, ``model``, and the
        counts ``length``, ``headers``, ``lists``, ``bold`` (see :func:`markdown_counts` for
        what is counted).  Pass it to ``Comparisons.from_frame(df, cluster=prompt,
        features=table)``, which joins it to every judgment.

    Raises
    ------
    DataError
        A missing column, a missing prompt, model or text (naming the row), or two answers
        of one model to one prompt.
    ParameterError
        An unknown ``length``.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({
    ...     "question_id": [1, 1],
    ...     "model": ["terse", "verbose"],
    ...     "answer": ["Yes.", "## Answer\\n\\n- **Yes**, because\\n- it is so."]})
    >>> style_features(answers)
       question_id    model  length  headers  lists  bold
    0            1    terse       1        0      0     0
    1            1  verbose       9        1      2     1
    """
    answers = as_frame(answers, "style_features")
    counter = length_counter(length)
    missing = [c for c in (prompt, model, text) if c not in answers.columns]
    if missing:
        raise DataError(f"column(s) {missing} not found in the answers; the columns there are "
                        f"{list(answers.columns)} (name them with prompt=, model=, text=)")
    for column in (prompt, model, text):  # an empty cell of a file reads as "" or NaN
        values = answers[column]
        bad = (values.isna() | values.map(lambda v: isinstance(v, str) and v == "")).to_numpy()
        if bad.any():
            raise DataError(f"answers {row_label(answers.index, np.argmax(bad))}: missing {column!r} "
                            f"({int(bad.sum())} such rows)"
                            + ("; an answer that really was empty can be given as one space"
                               if column == text else ""))
    keys = pd.MultiIndex.from_arrays([answers[prompt].astype(str), answers[model].astype(str)])
    if keys.has_duplicates:
        pos = int(np.argmax(keys.duplicated()))
        raise DataError(f"answers {row_label(answers.index, pos)}: a second answer of model "
                        f"{keys[pos][1]!r} to prompt {keys[pos][0]!r}")
    texts = answers[text].astype(str).tolist()
    counts = np.array([markdown_counts(t) for t in texts], dtype=np.int64).reshape(-1, 3)
    return pd.DataFrame({
        prompt: answers[prompt].to_numpy(),
        "model": answers[model].to_numpy(),
        "length": np.array([counter(t) for t in texts], dtype=np.int64),
        "headers": counts[:, 0], "lists": counts[:, 1], "bold": counts[:, 2],
    })


def relative_difference(a, b) -> np.ndarray:
    """``(a - b) / (a + b)``, and 0 where ``a + b = 0``: the difference over the sum.

    Antisymmetric (swapping the answers negates it) and bounded by 1 for counts.

    Examples
    --------
    >>> relative_difference([300, 0, 5], [100, 0, 0])
    array([0.5, 0. , 1. ])
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    total = a + b
    return np.divide(a - b, total, out=np.zeros(np.broadcast(a, b).shape), where=total != 0)


class FeatureDifferences(NamedTuple):
    """The transformed feature differences of the rows, as ``aggregate_cells`` takes them.

    Attributes
    ----------
    features : float array (rows, F)
        First-shown answer minus second-shown, transformed.
    feature_names : tuple of str
    feature_transform : str
        What was done, with the scale used per feature (for the record).
    scale : float array (F,)
        What each feature's difference was divided by (its standard deviation; 1 for "raw").
        Pass it back as ``join_features(..., scale=)`` to transform new rows (e.g. held-out
        ones) exactly as these were.
    """

    features: np.ndarray
    feature_names: tuple
    feature_transform: str
    scale: np.ndarray

    def arguments(self) -> dict:
        """The keyword arguments of :func:`~hja_bayes.comparisons.aggregate_cells`."""
        return dict(features=self.features, feature_names=self.feature_names,
                    feature_transform=self.feature_transform)


def join_features(frame, features, *, cluster: str | None, model_a: str = "model_a",
                  model_b: str = "model_b", rows=None, transform: str = "relative",
                  scale=None) -> FeatureDifferences:
    """Both answers' style features for every row of judgments, as transformed differences.

    Parameters
    ----------
    frame : DataFrame
        One row per judgment.
    features : DataFrame or mapping
        Either a table of answers' features, one row per (prompt, model): the prompt column
        (named like ``cluster``), a ``model`` column and one numeric column per feature, as
        :func:`style_features` returns it; or, when there is no answer table, per-row columns
        for both answers, ``{"length": ("len_a", "len_b"), ...}`` (first shown, second shown).
    cluster : str
        The column naming each row's prompt.  Features vary by prompt, so they need it.
    model_a, model_b : str
        The columns naming the models shown first and second.
    rows : bool array, optional
        The rows that are comparisons (valid verdicts); only those need features, and only
        those set the scale.  Default: every row.
    transform : {"relative", "difference", "raw"}
        "relative" (default, Chatbot Arena's): the difference over the sum,
        ``(a - b) / (a + b)`` (0 where ``a + b = 0``; features must be >= 0, as counts are),
        divided by its standard deviation over the comparisons.  "difference": ``a - b``
        divided by its standard deviation.  "raw": ``a - b`` as it is.
    scale : array (F,), optional
        Divide by these instead of the standard deviations of these rows: to transform new
        rows as earlier ones were (their :attr:`FeatureDifferences.scale`).

    Returns
    -------
    FeatureDifferences
        For the chosen rows, in order.

    Notes
    -----
    arena-rank (and FastChat's style control) also *centre* each feature over the battles
    before scaling it.  Here the differences are scaled but never centred, on purpose: a
    feature difference must change sign when the two answers swap places, since the same
    comparison shown in the other order is the same evidence (:meth:`Comparisons.fold_order`
    relies on that antisymmetry, negating the features of the cells it swaps).  Subtracting
    the mean adds the same constant to every verdict's logit whichever answer came first,
    which is a position effect, not a style effect: it would mix the style term with
    position bias and break the antisymmetry.  Where both presentation orders are shown the
    mean is about 0 anyway, and then the two transforms agree.  The standard deviation is
    the sample one (``ddof=1``, as pandas' ``std``), around the mean.

    Raises
    ------
    DataError
        No ``cluster`` column (pass ``cluster=``); a feature table without the prompt column
        or ``model``, with a non-numeric column, or with two rows for one answer; a per-row
        column that is missing; a comparison whose answer has no features or a missing or
        non-finite value (the message names the row); a negative feature under
        "relative"; no feature that varies over the comparisons.
    ParameterError
        An unknown ``transform`` or a malformed ``features`` argument.

    Warns
    -----
    DataWarning
        A feature whose difference does not vary over the comparisons (without ``scale``):
        the data carry nothing on its effect, so it is left out (a DataError when no
        feature varies).

    Examples
    --------
    >>> import pandas as pd
    >>> votes = pd.DataFrame({"question_id": [1, 1], "model_a": ["x", "y"],
    ...                       "model_b": ["y", "x"], "winner": ["model_a", "model_b"]})
    >>> table = pd.DataFrame({"question_id": [1, 1], "model": ["x", "y"], "length": [300, 100]})
    >>> joined = join_features(votes, table, cluster="question_id")
    >>> joined.features.ravel().round(4), joined.feature_names
    (array([ 0.7071, -0.7071]), ('length',))
    """
    if transform not in FEATURE_TRANSFORMS:
        raise ParameterError(f"feature_transform must be one of {list(FEATURE_TRANSFORMS)}, "
                             f"got {transform!r}")
    if cluster is None:
        raise DataError("style features vary by prompt: pass cluster=<the prompt column> "
                        "(e.g. cluster='question_id') together with features=")
    frame = as_frame(frame, "from_frame")
    missing = [c for c in (cluster, model_a, model_b) if c not in frame.columns]
    if missing:
        raise DataError(f"column(s) {missing} not found; the columns there are "
                        f"{list(frame.columns)}")
    rows = np.ones(len(frame), dtype=bool) if rows is None else np.asarray(rows, dtype=bool)
    index = frame.index[rows]
    if isinstance(features, Mapping):
        names, first, second = _per_row(frame, features, rows)
    else:
        names, first, second = _from_table(frame, as_frame(features, "features="), cluster,
                                           model_a, model_b, rows)
    bad = ~np.isfinite(first) | ~np.isfinite(second)  # either answer (one side had been counted)
    if bad.any():
        r, f = np.argwhere(bad)[0]
        side = model_a if not np.isfinite(first[r, f]) else model_b
        row = frame.loc[rows].iloc[r]
        raise DataError(f"verdicts {row_label(index, r)}: feature {names[f]!r} of the answer of "
                        f"{str(row[side])!r} to prompt {str(row[cluster])!r} is missing or not "
                        f"finite ({int(bad.any(axis=1).sum())} such rows)")
    if transform == "relative":
        negative = (first < 0) | (second < 0)
        if negative.any():
            r, f = np.argwhere(negative)[0]
            raise DataError(f"{row_label(index, r)}: feature {names[f]!r} is negative; the relative "
                            "difference (a - b) / (a + b) is for counts >= 0: pass "
                            "feature_transform='difference' for features of any sign")
        diff = relative_difference(first, second)
    else:
        diff = first - second
    left_out = ""
    if scale is None:
        sd = diff.std(axis=0, ddof=1) if len(diff) > 1 else np.zeros(len(names))
        flat = ~(sd > 0)
        if flat.all():
            raise DataError(f"no style feature varies over the {len(diff):,} comparisons "
                            f"({list(names)}): their effects cannot be estimated")
        if flat.any():
            warn(f"style feature(s) {[n for n, f in zip(names, flat) if f]} do not "
                 "vary over the comparisons, so the data say nothing of their "
                 "effect: left out", DataWarning)
            left_out = f"; left out, not varying: {', '.join(np.array(names)[flat])}"
            keep = ~flat
            names, diff, sd = tuple(np.array(names)[keep].tolist()), diff[:, keep], sd[keep]
    if scale is None:
        _warn_per_model(diff, names, frame[model_a].to_numpy()[rows],
                        frame[model_b].to_numpy()[rows])
    if transform == "raw":
        return FeatureDifferences(diff, names, "raw: first minus second, as given" + left_out,
                                  np.ones(len(names)))
    if scale is not None:
        sd, source = np.asarray(scale, dtype=float).reshape(-1), "a given scale"
        if sd.shape != (len(names),) or not np.all(sd > 0):
            raise ParameterError(f"scale must hold {len(names)} positive numbers, one per "
                                 f"feature {list(names)}, got {scale!r} (a scale from "
                                 "FeatureDifferences.scale goes with the features named in "
                                 "its feature_names)")
    else:
        source = f"its standard deviation over the {len(diff):,} comparisons (ddof=1)"
    what = ("(a - b) / (a + b), 0 where a + b = 0" if transform == "relative" else "a - b")
    described = (f"{transform}: {what}, divided by {source}, not centred; sd " +
                 ", ".join(f"{n}={s:.6g}" for n, s in zip(names, sd)) + left_out)
    return FeatureDifferences(diff / sd, names, described, sd)


#: The share of a feature difference's sum of squares that a value per model explains above
#: which the feature is said to be (mostly) a per-model value: PRD's length, lists and bold
#: 0.39, 0.14 and 0.30; a provider flag 1, a numeric model id 0.997.
PER_MODEL_SHARE = 0.95


def _warn_per_model(diff: np.ndarray, names, first, second, most: int = 2000) -> None:
    """A DataWarning naming the features whose differences a value per model explains
    (``x_r ~ v[a_r] - v[b_r]`` by least squares, share of the sum of squares above
    :data:`PER_MODEL_SHARE`): their coefficients are hard to tell from the models' scores
    (at a share of 1 not at all).  Skipped above ``most`` models, and below two rows per
    model (too few to tell)."""
    from scipy import sparse

    codes, models = pd.factorize(np.concatenate([first, second]))
    n = len(first)
    if not 1 < len(models) <= min(most, n / 2):
        return
    r = np.arange(n)
    D = sparse.csr_matrix((np.r_[np.ones(n), -np.ones(n)], (np.r_[r, r], codes)),
                          shape=(n, len(models)))
    value = np.linalg.lstsq((D.T @ D).toarray(), D.T @ diff, rcond=None)[0]
    total = (diff ** 2).sum(axis=0)
    share = 1.0 - ((diff - D @ value) ** 2).sum(axis=0) / np.where(total > 0, total, 1.0)
    high = [f"{name} ({s:.3g})" for name, s in zip(names, share) if s > PER_MODEL_SHARE]
    if high:
        warn(f"style feature(s) {', '.join(high)} are (nearly) a value per model: a value per "
             "model explains that share of their differences, so their coefficients can "
             "hardly be told from the models' scores (wide intervals; at 1 a coefficient per "
             "judge is not identified at all and the intervals refuse, a shared one only "
             "through the judges' different sensitivities); a provider or a model id is not "
             "a style of the answer, drop it", DataWarning)


def _per_row(frame: pd.DataFrame, features: Mapping, rows: np.ndarray):
    """Per-row columns ``{name: (column_a, column_b)}`` as two (rows, F) arrays."""
    names, first, second = [], [], []
    for name, pair in features.items():
        if isinstance(pair, str) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ParameterError(f"features={{{name!r}: ...}} must name two columns (the first "
                                 f"shown answer's and the second's), got {pair!r}")
        missing = [c for c in pair if c not in frame.columns]
        if missing:
            raise DataError(f"feature {name!r}: column(s) {missing} not found; the columns there "
                            f"are {list(frame.columns)}")
        names.append(str(name))
        first.append(_numeric(frame[pair[0]], pair[0])[rows])
        second.append(_numeric(frame[pair[1]], pair[1])[rows])
    if not names:
        raise ParameterError("features= names no feature")
    return tuple(names), np.column_stack(first), np.column_stack(second)


def _from_table(frame, table, cluster, model_a, model_b, rows):
    """Look both answers of every chosen row up in a (prompt, model) feature table."""
    missing = [c for c in (cluster, "model") if c not in table.columns]
    if missing:
        raise DataError(f"the feature table needs the prompt column {cluster!r} (named like "
                        f"cluster=) and a 'model' column; missing {missing}, it has "
                        f"{list(table.columns)}")
    names = tuple(str(c) for c in table.columns if c not in (cluster, "model"))
    if not names:
        raise DataError("the feature table has no feature column besides "
                        f"{[cluster, 'model']}")
    saved_index = [n for n in names if re.fullmatch(r"Unnamed: \d+", n)]
    if saved_index:  # pandas' name for a CSV's unnamed first column: an index written out
        warn(f"feature table column(s) {saved_index} look like a saved row index, and are "
             "used as features like every other column: drop them if they are not",
             DataWarning)
    values = np.column_stack([_numeric(table[c], c, "the feature table") for c in names])
    keys = pd.MultiIndex.from_arrays([table[cluster].astype(str), table["model"].astype(str)])
    if keys.has_duplicates:
        pos = int(np.argmax(keys.duplicated()))
        raise DataError(f"the feature table has two rows for model {keys[pos][1]!r} on prompt "
                        f"{keys[pos][0]!r}")
    prompt = frame[cluster].astype(str).to_numpy()[rows]
    models = [frame[c].astype(str).to_numpy()[rows] for c in (model_a, model_b)]
    at = [keys.get_indexer(pd.MultiIndex.from_arrays([prompt, m])) for m in models]
    absent = (at[0] < 0) | (at[1] < 0)
    if absent.any():
        r = int(np.argmax(absent))
        side = 0 if at[0][r] < 0 else 1
        hint = ""
        known = keys.get_level_values(0).unique()
        if not pd.Index(prompt).isin(known).any():  # e.g. ids read as 1.0 beside 1
            hint = (f"; no prompt of the verdicts is in the table, which writes them like "
                    f"{list(known[:3])} where the verdicts have {list(pd.unique(prompt)[:3])}: "
                    "give both prompt columns one type")
        raise DataError(f"{row_label(frame.index[rows], r)}: no features for the answer of model "
                        f"{models[side][r]!r} to prompt {prompt[r]!r} (column "
                        f"{(model_a, model_b)[side]!r}); {int(absent.sum())} such rows. Every "
                        f"compared answer needs a row in the feature table{hint}")
    looked = [values[a] for a in at]
    return names, looked[0], looked[1]


def _numeric(column: pd.Series, name, where: str = "the frame") -> np.ndarray:
    """A column as floats (missing values and empty text, a CSV's empty cell, as NaN); other
    text is an error naming the column."""
    if column.dtype == bool:
        return column.to_numpy(dtype=float)
    column = column.mask(column.map(lambda v: isinstance(v, str) and not v.strip()))
    numbers_ = pd.to_numeric(column, errors="coerce")
    bad = numbers_.isna() & column.notna()
    if bad.any():
        raise DataError(f"column {name!r} of {where} is not numeric (e.g. "
                        f"{column[bad].iloc[0]!r}); feature columns must hold numbers")
    return numbers_.to_numpy(dtype=float)
