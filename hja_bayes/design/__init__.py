"""Adaptive design: which comparisons to ask for next, how many are needed, and adding
them to a fit.

* :func:`next_comparisons` — the next verdicts (judge, model shown first, model shown
  second) for a goal, by expected Fisher information on the goal's contrasts per unit cost;
* :func:`plan` — power and sample size from the information, with prompts through a design
  effect;
* :func:`update_fit` (``HJAFit.update``) — add verdicts to a fit, warm-started at it.

These functions read fits; they never change them.  Each submodule loads on first use, so
``HJAFit.update`` does not import the search and the planning code.
"""

import importlib

_WHERE = {"DesignContext": "next", "design_context": "next", "next_comparisons": "next",
          "Plan": "plan", "plan": "plan", "merge_comparisons": "update", "update_fit": "update"}

__all__ = sorted(_WHERE)


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f".{_WHERE[name]}", __name__)
    for key, where in _WHERE.items():  # the function ``plan`` wins over its module's name
        if where == _WHERE[name]:
            globals()[key] = getattr(module, key)
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(__all__))
