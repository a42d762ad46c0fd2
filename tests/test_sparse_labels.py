"""The sparse label model (issue 32): SparseLabels against dense numpy on random data,
its device blocks, the dense-size guard, and the observation regimes drawing block by
block with the seeds of the whole-matrix computation (golden values from 75e1ce7)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.errors import ConfigError, DataFormatError
from spmlkit.labels import REGIMES, observe
from spmlkit.sparse_labels import SparseLabels, as_sparse

# observe(Y, regime, seed=11, hide_prob=0.4) as main 75e1ce7 computed it on the dense matrix
GOLDEN_Y = [[0, 0, 0, 0, 0], [0, 1, 0, 0, 1], [1, 1, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 0, 1, 1], [0, 1, 0, 0, 0]]
GOLDEN_AREAS = [[0, 0, 0, 0, 0], [0, 1, 0, 0, 6], [8, 2, 6, 3, 0], [0, 0, 0, 0, 0], [5, 3, 0, 8, 2], [0, 8, 0, 0, 0]]
GOLDEN = {
    "full": [[-1, -1, -1, -1, -1], [-1, 1, -1, -1, 1], [1, 1, 1, 1, -1], [-1, -1, -1, -1, -1], [1, 1, -1, 1, 1],
             [-1, 1, -1, -1, -1]],
    "single_positive_all_negatives": [[-1, -1, -1, -1, -1], [-1, 0, -1, -1, 1], [0, 1, 0, 0, -1],
                                      [-1, -1, -1, -1, -1], [0, 1, -1, 0, 0], [-1, 1, -1, -1, -1]],
    "single_positive_one_negative": [[-1, 0, 0, 0, 0], [0, 0, -1, 0, 1], [0, 1, 0, 0, -1], [-1, 0, 0, 0, 0],
                                     [0, 1, -1, 0, 0], [0, 1, -1, 0, 0]],
    "single_positive": [[0, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 1, 0, 0, 0],
                        [0, 1, 0, 0, 0]],
    "partial": [[0, -1, -1, -1, -1], [-1, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, -1, 0, -1, -1], [0, 1, 0, 0, 0],
                [-1, 1, 0, 0, -1]],
    "single_positive_most_frequent": [[0, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0],
                                      [0, 1, 0, 0, 0], [0, 1, 0, 0, 0]],
    "single_positive_least_frequent": [[0, 0, 0, 0, 0], [0, 0, 0, 0, 1], [0, 0, 1, 0, 0], [0, 0, 0, 0, 0],
                                       [0, 0, 0, 1, 0], [0, 1, 0, 0, 0]],
    "single_positive_largest": [[0, 0, 0, 0, 0], [0, 0, 0, 0, 1], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0],
                                [0, 0, 0, 1, 0], [0, 1, 0, 0, 0]],
}


def test_golden_covers_every_regime():
    assert set(GOLDEN) == set(REGIMES)


@pytest.mark.parametrize("regime", sorted(GOLDEN))
@pytest.mark.parametrize("rows_per_block", [1, 2, 4, None])
def test_regimes_keep_their_seeds_block_by_block_dense_and_sparse(regime, rows_per_block):
    Y = np.array(GOLDEN_Y, dtype=bool)
    kw = {"areas": np.array(GOLDEN_AREAS, float)} if regime == "single_positive_largest" else {}
    dense = observe(Y, regime, seed=11, hide_prob=0.4, rows_per_block=rows_per_block, **kw)
    sparse = observe(SparseLabels.from_dense(Y), regime, seed=11, hide_prob=0.4, rows_per_block=rows_per_block, **kw)
    assert isinstance(dense, np.ndarray) and dense.tolist() == GOLDEN[regime]
    assert isinstance(sparse, SparseLabels) and sparse.dense().tolist() == GOLDEN[regime]
    assert sparse.fill == REGIMES[regime].fill  # the sparse form lists O(nnz(Y)) entries, not N x L
    if regime != "partial":
        assert sparse.nnz <= 2 * Y.sum() + 2 * len(Y)


def _random(rng, n, L, p):
    return rng.choice([-1, 0, 1], size=(n, L), p=p).astype(np.int8)


@pytest.mark.parametrize("p", [(0.05, 0.9, 0.05), (0.45, 0.1, 0.45), (0.8, 0.1, 0.1)])
def test_counts_rows_and_blocks_equal_numpy(p):
    rng = np.random.default_rng(0)
    A = _random(rng, 40, 9, p)
    A[3] = 0
    A[-1] = 0
    S = SparseLabels.from_dense(A)
    assert S.fill == (-1 if (A == -1).sum() > (A == 0).sum() else 0)
    assert np.array_equal(S.dense(), A) and np.array_equal(np.asarray(S), A)
    for v in (-1, 0, 1):
        assert np.array_equal(S.row_counts(v), (A == v).sum(1))
        assert np.array_equal(S.col_counts(v), (A == v).sum(0))
        assert S.count(v) == int((A == v).sum())
    rows = rng.integers(0, 40, 25)
    assert np.array_equal(S.take(rows).dense(), A[rows]) and np.array_equal(S.dense(rows), A[rows])
    assert np.array_equal(S[5:17].dense(), A[5:17]) and np.array_equal(S[A[:, 0] == 1].dense(), A[A[:, 0] == 1])
    assert np.array_equal(S.positives().dense(), A == 1)
    assert np.array_equal(SparseLabels.vstack([S[:7], S[7:]]).dense(), A)
    for start, block in S.iter_dense(rows_per_block=6):
        assert np.array_equal(block, A[start:start + 6])
    # numpy interoperability for small data: operators, ufuncs, element indexing, methods
    assert np.array_equal(S == 1, A == 1) and int(np.sum(S)) == int(A.sum()) and S[2, 3] == A[2, 3]
    assert np.array_equal(S.sum(axis=0), A.sum(axis=0))


def test_single_positives_cost_one_index_per_row():
    idx = np.array([3, -1, 0, 7, 7])
    Z = SparseLabels.single(idx, n_labels=8)
    assert Z.nbytes == 8 * 6 + 4 * 4 and Z.values is None
    assert np.array_equal(Z.single_index(), idx)
    assert Z.dense()[0].tolist() == [0, 0, 0, 1, 0, 0, 0, 0] and not Z.dense()[1].any()
    assert SparseLabels.from_dense(Z.dense()).equals(Z)
    Z2 = SparseLabels.from_coo([0, 0], [1, 2], shape=(2, 4))
    assert Z2.single_index() is None  # two labels in a row


def test_bad_arrays_are_refused_with_one_line():
    with pytest.raises(DataFormatError, match="listed twice|twice"):
        SparseLabels.from_coo([0, 0], [1, 1], shape=(1, 3))
    with pytest.raises(DataFormatError, match="outside"):
        SparseLabels(np.array([0, 1]), np.array([5]), n_labels=3)
    with pytest.raises(DataFormatError, match="increase within each row"):
        SparseLabels(np.array([0, 2]), np.array([2, 1]), n_labels=3)
    with pytest.raises(DataFormatError, match="\\+1, 0 or -1"):
        SparseLabels(np.array([0, 1]), np.array([1]), np.array([5], np.int8), n_labels=3)
    with pytest.raises(DataFormatError, match="every listed entry must be 1"):
        SparseLabels(np.array([0, 1]), np.array([1]), np.array([-1], np.int8), n_labels=3, dtype=bool)
    with pytest.raises(DataFormatError, match="row pointers"):
        SparseLabels(np.array([0, 2, 1]), np.array([0, 1]), n_labels=3)


def test_dense_guard_refuses_n_by_l_above_the_limit(monkeypatch):
    Z = SparseLabels.single(np.zeros(1000, dtype=np.int64), n_labels=5000)
    monkeypatch.setenv("SPML_DENSE_LIMIT_MB", "1")
    with pytest.raises(ConfigError, match="refusing to build a dense 1,000 x 5,000"):
        np.asarray(Z)
    assert Z.dense(slice(0, 10)).shape == (10, 5000)  # row blocks stay allowed
    assert Z.col_counts(1)[0] == 1000  # and the sparse methods never need the dense matrix


@pytest.mark.parametrize("kind", ["single", "few", "dense", "fill-1"])
def test_device_blocks_equal_the_dense_rows(kind):
    rng = np.random.default_rng(1)
    if kind == "single":
        S = SparseLabels.single(rng.integers(-1, 200, 50), 200)
    elif kind == "few":
        S = SparseLabels.from_dense(_random(rng, 50, 200, (0.01, 0.98, 0.01)))
    elif kind == "dense":  # many entries a row: held dense on the device
        S = SparseLabels.from_dense(_random(rng, 50, 200, (0.3, 0.4, 0.3)))
    else:
        S = SparseLabels.from_dense(_random(rng, 50, 200, (0.98, 0.01, 0.01)))
    D = S.to("cpu")
    assert (D._dense is not None) == (kind == "dense")
    idx = torch.from_numpy(rng.integers(0, 50, (3, 11)))
    block = D.block(idx)
    assert block.shape == (3, 11, 200) and block.dtype == torch.int8
    assert np.array_equal(block.numpy(), S.dense()[idx.numpy()])


def test_as_sparse_keeps_sparse_and_converts_dense():
    S = SparseLabels.single([0, 1], 2)
    assert as_sparse(S) is S
    assert as_sparse(np.eye(2, dtype=bool)).dtype == bool


@pytest.mark.parametrize("raw", ["abc", "nan", "inf", "1e400"])
def test_the_dense_limit_variable_is_parsed_with_one_message(monkeypatch, raw):
    from spmlkit.errors import ConfigError
    from spmlkit.sparse_labels import dense_limit_bytes

    monkeypatch.setenv("SPML_DENSE_LIMIT_MB", raw)
    with pytest.raises(ConfigError, match=f"environment variable SPML_DENSE_LIMIT_MB={raw!r} is not a usable size"):
        dense_limit_bytes()
