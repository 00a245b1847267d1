"""What a table reads from a fitted model: the kind of fit, its covariance type and its Wald
inference (the fit's own, or one the caller computed from it, checked to be that fit's)."""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..inference import WaldInference

__all__ = ["check_fit", "cov_type", "interval_name", "is_hja", "wald"]


def wald(fit, inference: WaldInference | None = None) -> WaldInference:
    """Wald inference of a fitted model (the fit computes it once and keeps it), or the
    ``inference`` given for it, checked to be that fit's.

    Parameters
    ----------
    fit : HJAFit
    inference : WaldInference, optional
        Inference computed from this fit (e.g. ``fit.wald_inference(cov_type="cluster")``).

    Returns
    -------
    WaldInference
        ``inference``, or ``fit.wald``: :func:`hja_bayes.inference.wald_inference` at the
        fit's scores, rank and position biases, on the fit's own data (with the fit's
        default covariance type).

    Raises
    ------
    ParameterError
        Where ``inference`` is not a WaldInference, or was computed from another fit (other
        judges, models, rank or scores): its numbers would be shown under this fit's names.
    """
    if inference is None:
        return fit.wald
    if not isinstance(inference, WaldInference):
        raise ParameterError(f"inference must be a WaldInference (from fit.wald_inference()), "
                             f"got {type(inference).__name__}")
    same = (tuple(inference.judges) == tuple(fit.judges)
            and tuple(inference.items) == tuple(fit.items)
            and int(inference.rank) == int(fit.rank)
            and np.shape(inference.S) == np.shape(fit.S)
            and np.allclose(inference.S, fit.S, rtol=1e-12, atol=1e-12))
    if not same:
        raise ParameterError("inference was computed from another fit (its judges, models, "
                             "rank or scores differ from this fit's): compute it from this "
                             "fit with fit.wald_inference()")
    return inference


def is_hja(fit) -> bool:
    """Whether ``fit`` is an HJA fit (it has judges and a score matrix)."""
    return hasattr(fit, "S") and hasattr(fit, "judges")


def check_fit(fit, what: str = "leaderboard") -> None:
    """A fitted model (HJAFit or BTLFit), or a ParameterError saying what to pass instead."""
    if is_hja(fit) or (hasattr(fit, "scores") and hasattr(fit, "cov")):
        return
    kind = type(fit).__name__
    if kind in ("Comparisons", "DataFrame") or isinstance(fit, str):
        raise ParameterError(
            f"{what} needs a fitted model, got {kind}: fit one first, e.g. "
            f"{what}(hja_bayes.fit_hja(data)) or {what}(hja_bayes.fit_pooled_btl(data))")
    raise ParameterError(f"{what} needs an HJAFit or a BTLFit, got {kind}")


def cov_type(fit) -> str:
    """The covariance behind the fit's intervals ("fisher" unless the fit says otherwise)."""
    return str(getattr(fit, "cov_type", "fisher"))


def interval_name(meta: dict) -> str:
    """The kind of a leaderboard's Wald intervals, from its metadata: "Wald", "sandwich
    Wald" or "cluster-robust Wald (CR2)" / "(CR1)"."""
    cov = meta.get("cov_type", "fisher")
    if cov == "cluster":
        return f"cluster-robust Wald ({meta.get('small_sample') or 'CR1'})"
    return "sandwich Wald" if cov == "sandwich" else "Wald"
