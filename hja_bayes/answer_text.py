"""Counting in an answer's text: its length and its markdown elements (headers, list items,
bold spans) outside code blocks, the raw counts behind :func:`hja_bayes.style_features`."""

from __future__ import annotations

import numbers
import re
from typing import Callable

from .errors import ParameterError

__all__ = ["length_counter", "markdown_counts"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADER = re.compile(r"^#{1,6}[ \t]")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)[ \t]")
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def markdown_counts(text: str) -> tuple[int, int, int]:
    """Markdown headers, list items and bold spans in one text, outside fenced code blocks.

    * a header is a line that starts with one to six ``#`` followed by a space or tab;
    * a list item is a line that starts, after any indentation (nested lists), with ``-``,
      ``*``, ``+`` or a number and a full stop (``1.``), followed by a space or tab;
    * a bold span is ``**text**`` or ``__text__`` within one line.

    Lines between code fences (a line starting with three or more backticks or tildes,
    closed by a line of the same character at least as long; an unclosed fence runs to the
    end) are not counted: a ``# comment`` in a code block is no header.  Lines are split at
    line feeds (``\r\n`` too), not at the other characters Python calls line breaks.
    Chatbot Arena counts the same elements, also leaving code blocks out.

    Parameters
    ----------
    text : str

    Returns
    -------
    (headers, lists, bold) : tuple of int

    Examples
    --------
    >>> markdown_counts("# Title\\n\\n- one\\n- two with **bold**\\n```\\n# not a header\\n```")
    (1, 2, 1)
    """
    headers = lists = bold = 0
    fence = ""  # the open code fence ("" outside code)
    for line in text.split("\n"):
        mark = _FENCE.match(line)
        mark = mark.group(1) if mark else ""
        if fence or mark:  # a fence's line or a line of code
            closes = fence and mark[:1] == fence[0] and len(mark) >= len(fence)
            fence = "" if closes else (fence or mark)
            continue
        headers += bool(_HEADER.match(line))
        lists += bool(_LIST_ITEM.match(line))
        bold += len(_BOLD.findall(line))
    return headers, lists, bold


def length_counter(length) -> Callable[[str], int]:
    """The count of an answer's length: ``"words"`` (split at white space), ``"characters"``,
    or a callable (a tokenizer) giving a count or the tokens."""
    if callable(length):
        def count(text: str) -> int:
            n = length(text)
            if isinstance(n, numbers.Real):  # a count (a whole float too), or the tokens
                if not (float(n).is_integer() and n >= 0):
                    raise ParameterError(f"length gave {n!r}: a count is a whole number >= 0")
                return int(n)
            return len(n)
        return count
    if length == "words":
        return lambda text: len(text.split())
    if length == "characters":
        return len
    raise ParameterError(f"length must be 'words', 'characters' or a callable (a tokenizer), "
                         f"got {length!r}")
