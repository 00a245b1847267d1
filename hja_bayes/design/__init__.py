"""Adaptive design: which comparisons to ask for next, how many are needed, and adding
them to a fit.

* :func:`next_comparisons` — the next verdicts (judge, model shown first, model shown
  second) for a goal, by expected Fisher information on the goal's contrasts per unit cost;
* :func:`plan` — power and sample size from the information, with prompts through a design
  effect;
* :func:`update_fit` (``HJAFit.update``) — add verdicts to a fit, warm-started at it.

These functions read fits; they never change them.
"""

from .next import DesignContext, design_context, next_comparisons
from .plan import Plan, plan
from .update import merge_comparisons, update_fit

__all__ = ["DesignContext", "Plan", "design_context", "merge_comparisons", "next_comparisons",
           "plan", "update_fit"]
