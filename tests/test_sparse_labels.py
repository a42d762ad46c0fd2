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


# ---------------------------------------------------------------------------------------------
# Every method against the dense matrix, with the exact messages (mutation testing, issue 44)
def _fmt(source, msg):
    return f"{source if source is not None else '<input>'}: {msg}"


def _refused(msg, *args, source=None, **kw):
    with pytest.raises(DataFormatError) as e:
        SparseLabels(*args, source=source, **kw)
    assert str(e.value) == _fmt(source, msg)


def test_every_malformed_array_is_refused_with_its_own_exact_message():
    ptr = "sparse labels: row pointers must be a 1-D integer array of N + 1 entries"
    _refused(ptr, np.zeros((2, 2), np.int64), np.zeros(0, np.int32), n_labels=3, source="f.npz")
    _refused(ptr, np.zeros(0, np.int64), np.zeros(0, np.int32), n_labels=3)
    _refused(ptr, np.array([0.0]), np.zeros(0, np.int32), n_labels=3)
    ix = "sparse labels: label indices must be a 1-D integer array"
    _refused(ix, np.array([0, 1]), np.array([[1]]), n_labels=3)
    _refused(ix, np.array([0, 1]), np.array([1.0]), n_labels=3)
    order = "sparse labels: row pointers must start at 0, never decrease and end at the number of entries ({})"
    _refused(order.format(1), np.array([1, 1]), np.array([0]), n_labels=3)
    _refused(order.format(1), np.array([0, 2]), np.array([0]), n_labels=3)
    _refused(order.format(2), np.array([0, 2, 1, 2]), np.array([0, 1]), n_labels=3)
    _refused("sparse labels: a label index lies outside 0..2", np.array([0, 1]), np.array([3]), n_labels=3)
    _refused("sparse labels: a label index lies outside 0..2", np.array([0, 1]), np.array([-1]), n_labels=3)
    twice = "sparse labels: label indices must increase within each row (a label listed twice in one example)"
    _refused(twice, np.array([0, 2]), np.array([1, 1]), n_labels=3)
    _refused(twice, np.array([0, 2]), np.array([2, 1]), n_labels=3)
    _refused(twice, np.array([0, 0, 3]), np.array([0, 2, 2]), n_labels=3)  # an empty first row hides nothing
    _refused("sparse labels: one value per label index expected", np.array([0, 1]), np.array([1]),
             np.array([1, 1], np.int8), n_labels=3)
    _refused("sparse labels: fill must be 0 or -1, got 1", np.array([0, 1]), np.array([1]), n_labels=3, fill=1)
    obs = "observations must be +1, 0 or -1"
    for bad in (np.array([2], np.int8), np.array([-2], np.int8), np.array([1.0])):
        _refused(obs, np.array([0, 1]), np.array([1]), bad, n_labels=3)
    full = "full labels and masks are 0/1: every listed entry must be 1"
    _refused(full, np.array([0, 1]), np.array([1]), np.array([0], np.int8), n_labels=3, dtype=bool)
    _refused(full, np.array([0, 1]), np.array([1]), None, n_labels=3, dtype=bool, fill=-1)


def test_valid_arrays_are_accepted_and_stored_in_the_canonical_dtypes():
    # rows may go down at a boundary, empty rows anywhere, values at the edges of {-1, 0, 1}
    S = SparseLabels(np.array([0, 2, 2, 4, 4], np.int32), np.array([1, 2, 0, 1], np.int64),
                     np.array([-1, 1, 0, 1], np.int64), n_labels=3)
    assert S.indptr.dtype == np.int64 and S.indices.dtype == np.int32 and S.values.dtype == np.int8
    assert S.dense().tolist() == [[0, -1, 1], [0, 0, 0], [0, 1, 0], [0, 0, 0]]
    B = SparseLabels(np.array([0, 1]), np.array([2]), np.array([1], np.int8), n_labels=3, dtype=bool)
    assert B.dense().tolist() == [[False, False, True]] and B.dense().dtype == bool
    assert SparseLabels(np.array([0]), np.zeros(0, np.int64), n_labels=0).shape == (0, 0)


def test_single_empty_coo_and_rows_constructors():
    Z = SparseLabels.single([2, -1, 0], 3, value=-1)
    assert Z.dense().tolist() == [[0, 0, -1], [0, 0, 0], [-1, 0, 0]] and Z.values.dtype == np.int8
    assert SparseLabels.single([2, -1, 0], 3).values is None
    assert SparseLabels.single([[1], [0]], 2, dtype=bool).dense().tolist() == [[False, True], [True, False]]
    assert SparseLabels.single([], 2).shape == (0, 2)
    for bad in ([3], [-2]):
        with pytest.raises(DataFormatError) as e:
            SparseLabels.single(bad, 3)
        assert str(e.value) == "<input>: label index outside 0..2"
    E = SparseLabels.empty(3, 4, dtype=bool)
    assert E.shape == (3, 4) and E.dtype == bool and not E.dense().any() and E.nnz == 0
    C = SparseLabels.from_coo([2, 0, 2], [1, 3, 0], [-1, 1, 1], shape=(3, 4), fill=-1)
    assert C.dense().tolist() == [[-1, -1, -1, 1], [-1, -1, -1, -1], [1, -1, -1, -1]] and C.fill == -1
    assert SparseLabels.from_coo([1], [1], shape=(2, 2)).values is None
    for rows, cols, msg in (([2], [0], "row number outside 1..2"), ([-1], [0], "row number outside 1..2"),
                            ([0], [3], "label index outside 0..2"), ([0], [-1], "label index outside 0..2"),
                            ([1, 0, 1], [1, 1, 1], "row 2 lists label 1 twice")):
        with pytest.raises(DataFormatError) as e:
            SparseLabels.from_coo(rows, cols, shape=(2, 3), source="o.csv")
        assert str(e.value) == f"o.csv: {msg}"
    R = SparseLabels.from_rows([[2, 0], [], [1]], 3, dtype=bool)
    assert R.dense().tolist() == [[True, False, True], [False, False, False], [False, True, False]]
    assert SparseLabels.from_rows([], 2).shape == (0, 2)


def test_from_dense_picks_the_fill_and_refuses_bad_shapes_and_values():
    A = np.array([[-1, -1, 1], [0, -1, -1]], np.int8)  # 4 negatives against 1 zero: fill -1
    S = SparseLabels.from_dense(A)
    assert S.fill == -1 and S.nnz == 2 and S.values.tolist() == [1, 0] and S.equals(A)
    tie = np.array([[-1, 0]], np.int8)  # as many negatives as zeros: fill 0
    assert SparseLabels.from_dense(tie).fill == 0
    assert SparseLabels.from_dense([[0, 1], [1, 1]]).values is None  # a list; all listed entries 1
    assert SparseLabels.from_dense(np.array([[0, 1]]), fill=-1).values.tolist() == [0, 1]
    assert SparseLabels.from_dense(np.array([[0, 1]]), dtype=bool).dtype == bool
    assert SparseLabels.from_dense(np.array([[1, 0]]), dtype=np.int8, fill=0).dtype == np.int8
    assert SparseLabels.from_dense(np.zeros((0, 3), np.int8)).shape == (0, 3)
    with pytest.raises(DataFormatError) as e:
        SparseLabels.from_dense(np.array([1, 0]), source="y.npy")
    assert str(e.value) == "y.npy: labels must be a 2-D (examples x labels) array, got shape (2,)"
    with pytest.raises(DataFormatError) as e:
        SparseLabels.from_dense(np.array([[2, 0]]), source="y.npy")
    assert str(e.value) == "y.npy: observations must be +1, 0 or -1"
    with pytest.raises(DataFormatError, match="must be \\+1, 0 or -1"):
        SparseLabels.from_dense(np.array([[-1, -1, -3]]))


def test_from_dense_in_blocks_equals_one_block(monkeypatch):
    import spmlkit.sparse_labels as sl

    assert sl.block_rows(0) == sl.BLOCK_ENTRIES and sl.block_rows(3, 10) == 3 and sl.block_rows(20, 10) == 1
    rng = np.random.default_rng(5)
    A = _random(rng, 9, 4, (0.5, 0.3, 0.2))
    whole = SparseLabels.from_dense(A)
    monkeypatch.setattr(sl, "block_rows", lambda L, entries=0: 2)
    blocks = SparseLabels.from_dense(A)
    assert blocks.fill == whole.fill and np.array_equal(blocks.indptr, whole.indptr)
    assert np.array_equal(blocks.dense(), A) and [s for s, _ in blocks.iter_dense()] == [0, 2, 4, 6, 8]


def test_sizes_repr_and_entry_rows():
    S = SparseLabels.from_dense(np.array([[-1, -1, 1], [-1, -1, -1], [0, 1, -1]], np.int8))
    assert (S.shape, len(S), S.nnz, S.size) == ((3, 3), 3, 3, 9)
    assert S.nbytes == 8 * 4 + 4 * 3 + 1 * 3
    assert repr(S) == "SparseLabels(3 x 3, int8, 3 listed entries, fill -1)"
    assert repr(SparseLabels.empty(2, 5, dtype=bool)) == "SparseLabels(2 x 5, bool, 0 listed entries)"
    assert S.row_of_entries().tolist() == [0, 2, 2] and S.listed_values.tolist() == [1, 0, 1]
    ones = SparseLabels.single([1, 0], 2).listed_values
    assert ones.tolist() == [1, 1] and ones.dtype == np.int8


def test_the_dense_limit_is_inclusive_and_named_in_the_message(monkeypatch):
    monkeypatch.setenv("SPML_DENSE_LIMIT_MB", "1")
    assert SparseLabels.empty(1024, 1024).dense().shape == (1024, 1024)  # exactly 1 MiB: allowed
    with pytest.raises(ConfigError) as e:
        SparseLabels.empty(1024, 1025, dtype=bool).dense()
    assert str(e.value) == ("refusing to build a dense 1,024 x 1,025 label matrix (0.0 GiB): this step should work "
                            "in row blocks (SPML_DENSE_LIMIT_MB raises the limit)")


def test_numpy_interoperability_and_indexing():
    A = np.array([[0, 1, -1], [1, 0, 0], [0, 0, 1]], np.int8)
    S = SparseLabels.from_dense(A)
    assert np.asarray(S, dtype=np.float32).dtype == np.float32 and np.array_equal(np.asarray(S, dtype=float), A)
    assert np.array_equal(np.add(S, S), 2 * A) and np.array_equal(S + 1, A + 1)
    out = np.zeros((3, 3), np.int8)
    np.add(S, 1, out=(out,))
    assert np.array_equal(out, A + 1)
    np.add(S, 1, out=(S,))  # an out= that is itself sparse is densified (a scratch array), never an error
    assert [r.tolist() for r in S] == A.tolist()
    assert S.T.tolist() == A.T.tolist()
    with pytest.raises(AttributeError) as e:
        S.foo
    assert str(e.value) == "'SparseLabels' object has no attribute 'foo'"
    assert S[1].tolist() == [1, 0, 0] and S[np.int64(2)].tolist() == [0, 0, 1]
    assert S[0, 2] == -1 and S[np.int64(0), 1] == 1 and S[1:, 0].tolist() == [1, 0]
    assert S[[2, 0], 1:].tolist() == [[0, 1], [1, -1]]
    assert S[np.array([-1, 0])].dense().tolist() == [A[2].tolist(), A[0].tolist()]
    assert S.take(np.array([[2], [1]])).dense().tolist() == [A[2].tolist(), A[1].tolist()]
    assert S.take(np.zeros(0, np.int64)).shape == (0, 3) and S.take(slice(1, None)).equals(A[1:])
    for rows, msg in ((np.array([3]), "row index out of range for 3 rows"),
                      (np.array([-4]), "row index out of range for 3 rows"),
                      (np.array([True, False]), "boolean row mask of shape (2,) for 3 rows")):
        with pytest.raises(IndexError) as e:
            S.take(rows)
        assert str(e.value) == msg
    assert S.take(np.array([-3])).dense().tolist() == [A[0].tolist()]


def test_vstack_counts_positives_and_single_index():
    a = SparseLabels.from_dense(np.array([[0, 1, -1]], np.int8))
    b = SparseLabels.single([2, -1], 3)
    V = SparseLabels.vstack([a, b])
    assert V.dense().tolist() == [[0, 1, -1], [0, 0, 1], [0, 0, 0]] and V.values.tolist() == [1, -1, 1]
    assert SparseLabels.vstack([b, b]).values is None
    for other in (SparseLabels.single([0], 4), SparseLabels.single([0], 3, dtype=bool),
                  SparseLabels.from_dense(np.array([[-1, -1, 1]], np.int8))):
        with pytest.raises(ValueError) as e:
            SparseLabels.vstack([b, other])
        assert str(e.value) == "vstack: parts differ in width, fill or dtype"
    for A in (np.array([[0, 1, -1], [0, 0, 0], [1, 1, 0]], np.int8),
              np.array([[-1, 1, -1], [-1, -1, -1], [0, -1, -1]], np.int8), np.eye(3, dtype=bool)):
        S = SparseLabels.from_dense(A)
        for v in (-1, 0, 1):
            assert S.row_counts(v).tolist() == (A == v).sum(1).tolist(), (A, v)
            assert S.col_counts(v).tolist() == (A == v).sum(0).tolist(), (A, v)
            assert S.count(v) == int((A == v).sum()) and S.any_per_row(v).tolist() == (A == v).any(1).tolist()
        P = S.positives()
        assert P.dtype == bool and P.values is None and P.dense().tolist() == (A == 1).tolist()
    empty = SparseLabels.empty(2, 3)
    assert empty.row_counts(1).tolist() == [0, 0] and empty.row_counts(0).tolist() == [3, 3]
    assert empty.single_index().tolist() == [-1, -1] and SparseLabels.empty(0, 3).single_index().tolist() == []
    assert SparseLabels.single([1], 3, value=-1).single_index() is None
    assert SparseLabels.from_dense(np.array([[-1, -1, 1]], np.int8)).single_index() is None
    assert SparseLabels.from_dense(np.array([[0, 1, 0]], np.int8), fill=0).single_index().tolist() == [1]
    assert SparseLabels(np.array([0, 1, 1]), np.array([2]), np.array([1], np.int8), n_labels=3) \
        .single_index().tolist() == [2, -1]


def test_equals_compares_entries_whatever_the_storage():
    A = np.array([[-1, -1, 1], [-1, 0, -1]], np.int8)
    S, S0 = SparseLabels.from_dense(A), SparseLabels.from_dense(A, fill=0)
    assert S.fill != S0.fill and S.equals(S0) and S0.equals(S) and S.equals(A)
    B = A.copy()
    B[1, 2] = 0
    assert not S.equals(SparseLabels.from_dense(B)) and not S.equals(B)
    assert not S.equals(SparseLabels.from_dense(A[:1])) and not S.equals(A[:1]) and not S.equals(A.T)
    Y = SparseLabels.from_dense(np.eye(2, dtype=bool))
    assert Y.equals(np.eye(2, dtype=np.int8)) and Y.equals(SparseLabels.single([0, 1], 2))
    big = SparseLabels.single(np.arange(7) % 3, 3)
    assert big.equals(big.take(np.arange(7))) and not big.equals(SparseLabels.single(np.arange(7) % 2, 3))
    assert all(SparseLabels.from_dense(a).equals(a) for a in (np.zeros((5, 2), np.int8),))


def test_device_labels_layout_and_blocks():
    # k_max * 5 > L chooses the dense form: 2 labels a row of 10 stay a padded table, 3 do not
    two = SparseLabels.from_rows([[0, 9], [], [4]], 10)
    three = SparseLabels.from_rows([[0, 5, 9], [1]], 10)
    D2, D3 = two.to("cpu"), three.to("cpu")
    assert D2._dense is None and D3._dense is not None
    assert len(D2) == 3 and D2.shape == (3, 10) and D2.fill == 0 and D2.n_labels == 10
    assert D2.block(torch.arange(3)).numpy().tolist() == two.dense().tolist()
    assert D3.block(torch.tensor([1, 0])).numpy().tolist() == three.dense()[[1, 0]].tolist()
    assert SparseLabels.single([3, 1], 8).to("cpu")._vals is None  # every slot 1: a constant scatter
    for S in (SparseLabels.empty(3, 8), SparseLabels.from_dense(np.full((2, 8), -1, np.int8)),
              SparseLabels.single([1, -1, 0], 8, value=-1), SparseLabels.from_rows([[1, 2], [7]], 40, dtype=bool)):
        D = S.to(torch.device("cpu"))
        block = D.block(torch.tensor([[0], [len(S) - 1]]))
        assert block.dtype == (torch.bool if S.dtype == bool else torch.int8)
        assert tuple(block.shape) == (2, 1, S.n_labels)
        assert np.array_equal(block.numpy()[:, 0], S.dense()[[0, len(S) - 1]]), S


def test_as_sparse_and_dense_rows_pass_dtype_and_source():
    from spmlkit.sparse_labels import dense_rows

    assert as_sparse(np.array([[1, 0]], np.int8), dtype=bool).dtype == bool
    with pytest.raises(DataFormatError) as e:
        as_sparse(np.zeros(3), source="lab.npy")
    assert str(e.value).startswith("lab.npy: labels must be a 2-D")
    A = np.arange(12).reshape(4, 3)
    assert dense_rows(A, slice(1, 3)).tolist() == A[1:3].tolist()
    assert dense_rows(A, [3, 0]).tolist() == A[[3, 0]].tolist()
    S = SparseLabels.single([0, 2, 1], 3)
    assert dense_rows(S, [2]).tolist() == [[0, 1, 0]]


def test_sources_dtypes_and_defaults_of_every_form():
    """The source named in every refusal, the dtype of everything returned, the value 1
    that the counting methods default to, one part stacked, a listed entry equal to the fill."""
    cases = (((np.array([0, 1]), np.array([[1]])), {}), ((np.array([0, 2]), np.array([0])), {}),
             ((np.array([0, 1]), np.array([3])), {}), ((np.array([0, 2]), np.array([1, 1])), {}),
             ((np.array([0, 1]), np.array([1]), np.array([1, 1], np.int8)), {}), ((np.array([0, 1]), np.array([1])),
                                                                                 {"fill": 1}),
             ((np.array([0, 1]), np.array([1]), np.array([0], np.int8)), {"dtype": bool}))
    for args, kw in cases:
        with pytest.raises(DataFormatError) as e:
            SparseLabels(*args, n_labels=3, source="lab.npz", **kw)
        assert str(e.value).startswith("lab.npz: "), (args, kw)
    A = np.array([[0, 1, -1], [1, 0, 0]], np.int8)
    S = SparseLabels.from_dense(A)
    assert S.dense().dtype == np.int8 and np.asarray(S).dtype == np.int8 and S.dense([1]).dtype == np.int8
    for got, want in ((S.row_counts(), S.row_counts(1)), (S.col_counts(), S.col_counts(1)),
                      (S.any_per_row(), S.any_per_row(1))):
        assert got.tolist() == want.tolist()
    assert S.count() == S.count(1) == 2
    for c in (S.row_counts(1), S.col_counts(1), SparseLabels.empty(2, 3).row_counts(1), S.row_of_entries()):
        assert c.dtype == np.int64
    Y = SparseLabels.from_dense(np.eye(3, dtype=bool))
    for part in (Y.take([2, 0]), Y[1:], SparseLabels.vstack([Y, Y]), SparseLabels.vstack([Y]),
                 SparseLabels.from_rows([[1], []], 3, dtype=bool), SparseLabels.from_coo([0], [1], shape=(1, 3),
                                                                                         dtype=bool)):
        assert part.dtype == bool and part.dense().dtype == bool, part
    assert SparseLabels.vstack([S]).equals(A)
    F = SparseLabels(np.array([0, 1, 1]), np.array([0]), np.array([-1], np.int8), n_labels=2, fill=-1)
    assert F.col_counts(-1).tolist() == [2, 2] and F.row_counts(-1).tolist() == [2, 2] and F.count(-1) == 4
    E = SparseLabels.empty(2, 3)
    assert E.indices.dtype == np.int32 and E.col_counts(1).tolist() == [0, 0, 0]
    E0 = SparseLabels.from_dense(np.zeros((0, 3), np.int8))
    assert E0.listed_values.size == E0.nnz == 0 and E0.listed_values.dtype == np.int8
    with pytest.raises(DataFormatError, match="must be \\+1, 0 or -1"):
        SparseLabels.from_dense(np.array([[-2, 0]]))


def test_the_fill_is_counted_over_every_block(monkeypatch):
    import spmlkit.sparse_labels as sl

    A = np.zeros((6, 3), np.int8)
    A[4:] = -1  # 12 zeros against 6 negatives, the negatives all in the last block: fill 0
    monkeypatch.setattr(sl, "block_rows", lambda L, entries=0: 2)
    S = SparseLabels.from_dense(A)
    assert S.fill == 0 and S.equals(A)
    assert S.equals(SparseLabels.from_dense(A, fill=-1)) and not S.equals(SparseLabels.from_dense(A[::-1]))


def test_coo_duplicates_are_found_wherever_they_sit():
    for rows, cols, msg in (([0, 0], [1, 1], "row 1 lists label 1 twice"),
                            ([0, 0, 1], [0, 0, 2], "row 1 lists label 0 twice"),
                            ([0, 1, 1], [0, 2, 2], "row 2 lists label 2 twice")):
        with pytest.raises(DataFormatError) as e:
            SparseLabels.from_coo(rows, cols, shape=(2, 3))
        assert str(e.value) == f"<input>: {msg}"
    assert SparseLabels.from_coo([0, 1], [1, 1], shape=(2, 3)).dense().tolist() == [[0, 1, 0], [0, 1, 0]]
    assert SparseLabels.from_coo(np.array([[1], [0]]), np.array([[2], [0]]), shape=(2, 3)).dense().tolist() == \
        [[1, 0, 0], [0, 0, 1]]
    assert SparseLabels.from_coo(np.array([[1], [0]]), np.array([[2], [0]]), np.array([[-1], [1]]),
                                 shape=(2, 3)).dense().tolist() == [[1, 0, 0], [0, 0, -1]]
    assert SparseLabels.from_coo(np.array([1.0, 0.0]), np.array([0.0, 2.0]), shape=(2, 3)).dense().tolist() == \
        [[0, 0, 1], [1, 0, 0]]  # whole numbers stored as floats
    with pytest.raises(DataFormatError) as e:
        SparseLabels.from_coo([0], [0], [5], shape=(1, 2), source="o.csv")
    assert str(e.value) == "o.csv: observations must be +1, 0 or -1"


def test_the_size_in_the_refusal_and_device_blocks_of_no_rows(monkeypatch):
    monkeypatch.setenv("SPML_DENSE_LIMIT_MB", "1")
    with pytest.raises(ConfigError, match=r"\(0\.1 GiB\)"):
        SparseLabels.empty(100_000, 1_000).dense()
    D = SparseLabels.empty(0, 6).to("cpu")
    assert tuple(D.block(torch.zeros(0, dtype=torch.long)).shape) == (0, 6)
