"""Twins of the sparse label paths: :meth:`spmlkit.sparse_labels.DeviceLabels.block` (a
padded table scattered on the device) and the observation regimes drawn block by block
(:func:`spmlkit.labels.observe` with ``rows_per_block``), against the dense rows and the
regimes drawn on the whole matrix at once, on drawn matrices with empty rows (presence-only
background rows), rows with every label and labels without a positive."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from spmlkit.labels import REGIMES, observe
from spmlkit.sparse_labels import SparseLabels
from tests.twins.strategies import TWIN, label_matrix


@st.composite
def observations(draw):
    """An int8 ``(N, L)`` observation matrix in one of the stored forms: single positives
    (values None), observations with negatives (fill 0 or -1), full labels (bool)."""
    Y = draw(label_matrix(max_rows=20, max_labels=draw(st.sampled_from([2, 8, 30]))))
    n, L = Y.shape
    kind = draw(st.sampled_from(["single positives", "positives", "with negatives", "mostly negative", "bool"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "single positives":  # one observed positive or none (a background row)
        idx = np.where(Y.any(1), Y.argmax(1), -1)
        return SparseLabels.single(idx, L)
    if kind == "bool":
        return SparseLabels.from_dense(Y)
    Z = Y.astype(np.int8)
    if kind == "with negatives":
        Z[(rng.random((n, L)) < 0.2) & ~Y] = -1
    elif kind == "mostly negative":
        Z[~Y] = -1
        Z[(rng.random((n, L)) < 0.1) & ~Y] = 0
    Z[rng.random(n) < 0.25] = -1 if kind != "positives" else 0  # all-negative rows (nothing listed at fill -1)
    return SparseLabels.from_dense(Z)


@TWIN
@given(S=observations(), data=st.data())
@example(S=SparseLabels.single([-1, 2, -1], 8), data=None)  # background rows: no label at all
def test_device_blocks_equal_the_dense_rows(S, data):
    n = len(S)
    if data is None:
        idx = np.array([[0, 1], [2, 0]])
    else:
        shape = data.draw(st.sampled_from([(n,), (1,), (2, 3), (0,)]))
        idx = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).integers(0, n, size=shape)
    block = S.to("cpu").block(torch.from_numpy(idx))
    want = S.dense()[idx]
    assert tuple(block.shape) == want.shape
    assert block.dtype == (torch.bool if S.dtype == bool else torch.int8)
    assert np.array_equal(block.numpy(), want)


def test_a_row_without_an_observed_positive_stays_empty_on_the_device():
    """Presence-only background rows (no observed label) next to single positives: their
    device rows are all zero, never a positive of label 0 (in the padded table, used when
    rows list few labels against ``L``, and in the dense form)."""
    for L in (2, 6, 50):
        S = SparseLabels.single([-1, 1, -1, 0], L)
        block = S.to("cpu").block(torch.arange(4)).numpy()
        assert block.sum() == 2 and block[1, 1] == block[3, 0] == 1, L


def _areas(Y, seed):
    return np.where(Y, np.random.default_rng(seed).integers(1, 5, Y.shape), 0).astype(float)


@TWIN
@given(Y=label_matrix(max_rows=25, max_labels=6), regime=st.sampled_from(sorted(REGIMES)), data=st.data())
def test_regimes_drawn_block_by_block_equal_the_whole_matrix(Y, regime, data):
    n = len(Y)
    rows = data.draw(st.integers(1, n))
    seed = data.draw(st.integers(0, 2 ** 31 - 1))
    kw = {"hide_prob": data.draw(st.sampled_from([0.0, 0.4, 1.0]))}
    if regime == "single_positive_largest":
        kw["areas"] = _areas(Y, seed)
    whole = observe(Y, regime, seed=seed, rows_per_block=n, **kw)
    blocks = observe(Y, regime, seed=seed, rows_per_block=rows, **kw)
    sparse = observe(SparseLabels.from_dense(Y), regime, seed=seed, rows_per_block=rows, **kw)
    assert np.array_equal(blocks, whole)
    assert isinstance(sparse, SparseLabels) and sparse.fill == REGIMES[regime].fill
    assert np.array_equal(sparse.dense(), whole)


@pytest.mark.parametrize("regime", sorted(REGIMES))
def test_every_regime_on_one_row_and_on_one_label(regime):
    for Y in (np.array([[True, False, True]]), np.array([[True], [False], [True]])):
        kw = {"areas": _areas(Y, 0)} if regime == "single_positive_largest" else {}
        whole = observe(Y, regime, seed=3, **kw)
        for rows in range(1, len(Y) + 1):
            assert np.array_equal(observe(SparseLabels.from_dense(Y), regime, seed=3, rows_per_block=rows,
                                          **kw).dense(), whole)
