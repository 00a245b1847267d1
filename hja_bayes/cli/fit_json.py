"""What ``hja-bayes fit --format json`` prints: the data, the fit, its tables and warnings."""

from __future__ import annotations

import dataclasses

__all__ = ["bias_terms", "json_summary"]


def bias_terms(fit, level: float, inference=None):
    """The fit's bias terms beyond the judges' position bias (style, self-preference) as
    :func:`~hja_bayes.reporting.bias_table` gives them; None where it has none."""
    if not (set(fit.coef_names) - {"position"} or fit.theta_names):
        return None
    from ..reporting.biases import bias_table

    return bias_table(fit, level, inference=inference)


def json_summary(data, fit, board, judges, out, fragile=(), agree=None, said=(),
                 biases=None) -> str:
    """The JSON document: ``data`` (the summary), ``fit``, ``leaderboard``, ``judges``,
    ``warnings`` (as said on stderr), and where present ``biases``, ``fragility`` and
    ``agreement``."""
    from ..reporting.files import table_dict, to_json

    summary = dataclasses.asdict(data.summary())
    extra = {} if biases is None else {"biases": table_dict(biases)}
    if fragile:
        extra["fragility"] = [
            {"target": f.target, "unit": f.unit, "count": f.count, "total": f.total,
             "share": None if f.count is None else f.share, "confirmed": f.confirmed,
             "result": f.result, "sentence": f.sentence,
             "items": f.items.to_dict(orient="records")} for f in fragile]
    if agree is not None:
        extra["agreement"] = {name: table_dict(table) for name, table in agree._asdict().items()
                              if table is not None}
    return to_json({
        "data": summary,
        "fit": {"rank": int(fit.rank), "position_bias": bool(fit.position_bias),
                "nll": float(fit.nll), "bic": float(fit.bic), "n_iter": int(fit.n_iter),
                "converged": bool(fit.converged), "saved_to": str(out),
                "excluded_judges": dict(getattr(fit, "excluded_judges", {}) or {}),
                "clustering": fit.clustering},
        "leaderboard": table_dict(board),
        "judges": table_dict(judges), "warnings": list(said),  # as on stderr, up to here
        **extra,
    })
