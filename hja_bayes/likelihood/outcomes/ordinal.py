"""Ordered verdicts of any length: a cumulative-logit model with per-judge cut points.

Categories ``c = 0 .. C-1`` run from the strongest preference for the item shown first to
the strongest for the second (Arena-Hard's ``A>>B, A>B, A=B, B>A, B>>A`` for C = 5).  For a
verdict with linear predictor ``eta`` by judge k,

    P(Y <= c) = expit(eta + kappa_kc),   kappa_k0 < kappa_k1 < ... < kappa_k,C-2,

so every category on the first item's side grows more likely as ``eta`` grows.  The cut
points are symmetric, ``kappa_kc = -kappa_k,C-2-c``: a judge with no preference (eta = 0)
favours either side equally, and a judge's lean towards one presentation slot is its
position bias ``beta_k``, a term of ``eta`` (free cut points would absorb it).  With
``m = (C - 1) // 2`` the free parameters are the positive cut points ``t_1 < ... < t_m``
through the logs of their gaps, ``aux_j = log(t_j - t_{j-1})`` (``t_0 = 0``): for odd C the
middle category (a tie) is ``-t_1 < eta-scale noise < t_1``; for even C there is a cut at 0.
C = 2 is Bradley–Terry; C = 3 is a model of ties with a per-judge tie zone.

The natural-scale parameters reported are the gaps ``exp(aux_j)`` (named ``gap_1`` ...).
The functions accept NumPy or JAX arrays.  The derivatives are written out (a test checks
them against JAX's): with ``u_c = eta + kappa_c``, ``F = expit(u)``, a category's
log-probability ``log(F_c - F_{c-1})`` has the partial derivatives ``f_c / p_c`` and
``-f_{c-1} / p_c`` in its two logits (``f = F (1 - F)``), second ones ``g / p`` minus their
products (``g = f (1 - 2F)``), and the cut points move with the gaps through
``d kappa / d aux`` (whose own second derivative is diagonal, as the gaps are exponentials).
"""

from __future__ import annotations

from functools import lru_cache

import jax
import numpy as np

from .base import OutcomeModel, is_jax, xp_of

__all__ = ["ordinal", "ordinal_cut_points"]

#: Labels of the five-level scale (Arena-Hard's), strongest preference for the first first.
FIVE_LEVELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")


def _log_sigmoid(x):
    return jax.nn.log_sigmoid(x) if is_jax(x) else -np.logaddexp(0.0, -x)


def ordinal_cut_points(aux, n_categories: int):
    """The C - 1 ascending cut points ``kappa`` (..., C-1) from the log gaps ``aux`` (..., m)."""
    xp = xp_of(aux)
    t = xp.cumsum(xp.exp(aux), axis=-1)
    middle = () if n_categories % 2 else (xp.zeros(xp.shape(aux)[:-1] + (1,)),)
    return xp.concatenate([-t[..., ::-1], *middle, t], axis=-1)


def _log_probabilities(n_categories: int):
    def log_probabilities(eta, aux):
        xp = xp_of(eta)
        kappa = ordinal_cut_points(xp.zeros(xp.shape(eta) + (0,)) if aux is None else xp.asarray(aux),
                                   n_categories)
        u = eta[..., None] + kappa  # logits of P(Y <= c), c = 0 .. C-2
        first = _log_sigmoid(u[..., :1])
        last = _log_sigmoid(-u[..., -1:])
        gap = u[..., 1:] - u[..., :-1]  # > 0
        inner = _log_sigmoid(u[..., 1:]) + _log_sigmoid(-u[..., :-1]) + xp.log(-xp.expm1(-gap))
        return xp.concatenate([first, inner, last], axis=-1)

    return log_probabilities


def _signs(n_categories: int) -> np.ndarray:
    """``M`` (C - 1, m): the cut points as signed positive cut points, ``kappa = M t``."""
    m = (n_categories - 1) // 2
    M = np.zeros((n_categories - 1, m))
    for r in range(m):
        M[r, m - 1 - r] = -1.0
        M[n_categories - 1 - m + r, r] = 1.0
    return M


def _derivatives(n_categories: int):
    M = _signs(n_categories)
    m = M.shape[1]
    lower = np.tril(np.ones((m, m)))

    def derivatives(eta, aux):
        xp = xp_of(eta)
        aux = xp.zeros(xp.shape(eta) + (0,)) if aux is None else xp.asarray(aux)
        gaps = xp.exp(aux)
        J = xp.einsum("cj,jl,...l->...cl", M, lower, gaps)  # d kappa / d aux
        kappa = xp.einsum("cj,jl,...l->...c", M, lower, gaps)
        u = eta[..., None] + kappa
        F = 1.0 / (1.0 + xp.exp(-u))
        f, g = F * (1 - F), F * (1 - F) * (1 - 2 * F)
        zero = xp.zeros_like(F[..., :1])
        fp, gp = (xp.concatenate([zero, x, zero], axis=-1) for x in (f, g))
        p = xp.exp(_log_probabilities(n_categories)(eta, aux))
        da = fp[..., 1:] / p
        db = -fp[..., :-1] / p
        daa = gp[..., 1:] / p - da**2
        dbb = -gp[..., :-1] / p - db**2
        # the end categories in closed form (log expit): no ratio of small numbers there
        first, last = 1 - F[..., 0], -F[..., -1]
        da = xp.concatenate([first[..., None], da[..., 1:]], axis=-1)
        db = xp.concatenate([db[..., :-1], last[..., None]], axis=-1)
        daa = xp.concatenate([-f[..., :1], daa[..., 1:]], axis=-1)
        dbb = xp.concatenate([dbb[..., :-1], -f[..., -1:]], axis=-1)
        dab = -da * db
        Jz = xp.zeros(xp.shape(J)[:-2] + (1, m))
        Ja, Jb = xp.concatenate([J, Jz], axis=-2), xp.concatenate([Jz, J], axis=-2)
        ones = xp.ones_like(p)[..., None]
        va, vb = (xp.concatenate([ones, x], axis=-1) for x in (Ja, Jb))  # (..., C, L)
        grad = da[..., None] * va + db[..., None] * vb
        outer = (lambda x, y: x[..., :, None] * y[..., None, :])
        H = (daa[..., None, None] * outer(va, va) + dbb[..., None, None] * outer(vb, vb)
             + dab[..., None, None] * (outer(va, vb) + outer(vb, va)))
        curvature = da[..., None] * Ja + db[..., None] * Jb  # second derivative of kappa
        diag = xp.concatenate([xp.zeros(xp.shape(curvature)[:-1] + (1,)), curvature], axis=-1)
        H = H + diag[..., :, None] * xp.eye(1 + m)
        return grad, -H

    return derivatives


def _initial_aux(n_categories: int):
    def initial_aux(totals):
        """Cut points matching each judge's symmetrised category shares at eta = 0."""
        totals = np.asarray(totals, dtype=float) + 0.5
        shares = (totals + totals[:, ::-1]) / 2
        cumulative = np.cumsum(shares, axis=1)[:, :-1] / shares.sum(axis=1, keepdims=True)
        kappa = np.log(cumulative) - np.log1p(-cumulative)
        m = (n_categories - 1) // 2
        t = kappa[:, n_categories - 1 - m:]
        gaps = np.diff(np.concatenate([np.zeros((len(t), 1)), t], axis=1), axis=1)
        return np.log(np.maximum(gaps, 0.1))

    return initial_aux


@lru_cache(maxsize=None)
def ordinal(categories: tuple[str, ...] | int = FIVE_LEVELS) -> OutcomeModel:
    """The cumulative-logit model for the ordered ``categories`` (or their number).

    One model object per scale (cached), so compiled programs are reused.

    Examples
    --------
    >>> import numpy as np
    >>> model = ordinal(5)
    >>> model.aux_names, model.categories
    (('gap_1', 'gap_2'), ('A>>B', 'A>B', 'A=B', 'B>A', 'B>>A'))
    >>> p = np.exp(model.log_probabilities(np.array([0.0]), np.zeros((1, 2))))
    >>> bool(np.isclose(p.sum(), 1.0)), bool(np.allclose(p[0], p[0, ::-1]))
    (True, True)
    """
    from ...errors import ParameterError

    if isinstance(categories, (int, np.integer)) and not isinstance(categories, bool):
        C = int(categories)
        if C < 2:
            raise ParameterError(f"an ordinal scale needs at least 2 categories, got {C}")
        categories = FIVE_LEVELS if C == 5 else tuple(str(c) for c in range(C))
    elif not isinstance(categories, tuple):
        raise ParameterError("categories must be the number of levels or their labels in "
                             f"order, got {categories!r}")
    categories = tuple(str(c) for c in categories)
    C = len(categories)
    if C < 2:
        raise ParameterError(f"an ordinal scale needs at least 2 categories, got {C}")
    if len(set(categories)) < C:
        raise ParameterError(f"an ordinal scale's categories must differ, got {categories}")
    m = (C - 1) // 2
    return OutcomeModel(
        name="ordinal",
        categories=categories,
        aux_names=tuple(f"gap_{j + 1}" for j in range(m)),
        log_probabilities=_log_probabilities(C),
        initial_aux=_initial_aux(C),
        natural=np.exp,
        prior=(0.0, 1.5),
        derivatives=_derivatives(C),
    )
