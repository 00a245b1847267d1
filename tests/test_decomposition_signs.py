"""The sign rule of canonicalize (largest-|entry| item positive) and reference alignment."""

import numpy as np
import pytest

from hja_bayes import ParameterError, canonicalize, compose
from hja_bayes.decomposition import Decomposition, align_decomposition, constraint_violations

from .bayes_support import zero_loading_scores


def test_largest_entry_of_every_v_column_is_positive():
    rng = np.random.default_rng(3)
    for _ in range(20):
        d = canonicalize(rng.normal(size=(5, 7)), 2)
        V = np.asarray(d.V)
        anchor = np.abs(V).argmax(axis=0)
        assert np.all(V[anchor, [0, 1]] > 0)
        assert constraint_violations(d)["V_sign"] == 0.0


def test_a_zero_loading_on_item_0_no_longer_flips_the_column():
    """The old rule (first non-zero entry positive) took item 0's sign, so noise of 1e-4 in
    S flipped the column at random.  The largest-|entry| rule does not care."""
    reference = np.asarray(canonicalize(zero_loading_scores(), 1).V)[:, 0]
    signs, old_signs = [], []
    for seed in range(30):
        V = np.asarray(canonicalize(zero_loading_scores(1e-4, seed), 1).V)[:, 0]
        signs.append(np.sign(V @ reference))
        first = np.argmax(np.abs(V) > 1e-8 * np.abs(V).max())  # the old rule's anchor
        assert first == 0
        old_signs.append(np.sign(V[first]) * np.sign(V @ reference))
    assert set(signs) == {1.0}
    assert set(old_signs) == {-1.0, 1.0}  # the old rule flipped the column at random


def _random_decomposition(rng, batch, K, N, D):
    S = rng.normal(size=(K, N))
    d = canonicalize(S, len(D))
    U = np.asarray(d.U) / np.sqrt(np.asarray(d.D)) * np.sqrt(D)
    return Decomposition(*(np.broadcast_to(np.asarray(x), (batch,) + np.shape(x)).copy()
                           for x in (d.gamma, d.mu, U, d.V, np.asarray(D))))


@pytest.mark.parametrize("r", [2, 3, 7])
def test_alignment_undoes_sign_flips_and_swaps_of_close_columns(r):
    rng = np.random.default_rng(r)
    K, N, batch = r + 4, r + 6, 40
    D = np.linspace(1.0, 0.9, r)  # all close: any order is allowed
    ref = _random_decomposition(rng, batch, K, N, D)
    perms = np.array([rng.permutation(r) for _ in range(batch)])
    signs = rng.choice([-1.0, 1.0], size=(batch, r))
    scrambled = ref._replace(
        U=np.take_along_axis(ref.U, perms[:, None, :], 2) * signs[:, None, :],
        V=np.take_along_axis(ref.V, perms[:, None, :], 2) * signs[:, None, :],
        D=np.take_along_axis(ref.D, perms, 1))
    out = align_decomposition(scrambled, ref.V[0])
    np.testing.assert_allclose(out.decomposition.V, ref.V, atol=1e-12)
    np.testing.assert_allclose(out.decomposition.U, ref.U, atol=1e-12)
    np.testing.assert_allclose(out.decomposition.D, ref.D, atol=1e-12)
    np.testing.assert_array_equal(out.permuted, np.any(perms != np.arange(r), axis=1))
    np.testing.assert_array_equal(out.flipped, np.any(signs < 0, axis=1))
    np.testing.assert_allclose(out.match, 1.0, atol=1e-12)
    # S is unchanged by the relabelling
    for b in range(3):
        S1 = compose(*(x[b] for x in scrambled[:4]))
        S2 = compose(*(x[b] for x in out.decomposition[:4]))
        np.testing.assert_allclose(S1, S2, atol=1e-12)


def test_columns_with_distant_d_keep_their_order():
    rng = np.random.default_rng(0)
    ref = _random_decomposition(rng, 1, 6, 8, np.array([1.0, 0.1]))
    swapped = ref._replace(U=ref.U[..., ::-1], V=ref.V[..., ::-1], D=ref.D)  # D stays ordered
    out = align_decomposition(swapped, ref.V[0], close=0.5)
    assert not out.permuted[0]  # 0.1 < 0.5 * 1.0: not exchangeable
    out = align_decomposition(swapped, ref.V[0], close=0.0)  # everything exchangeable
    assert out.permuted[0]
    np.testing.assert_allclose(out.decomposition.V, ref.V, atol=1e-12)


def test_alignment_checks_its_arguments():
    d = canonicalize(np.random.default_rng(0).normal(size=(4, 6)), 1)
    with pytest.raises(ParameterError, match="close"):
        align_decomposition(d, d.V, close=1.5)
    with pytest.raises(ParameterError, match="shape"):
        align_decomposition(d, np.ones((5, 1)))
    d0 = canonicalize(np.random.default_rng(0).normal(size=(4, 6)), 0)
    out = align_decomposition(d0, np.zeros((6, 0)))
    assert not out.flipped and not out.permuted
