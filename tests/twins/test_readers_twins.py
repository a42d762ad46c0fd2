"""Twins of the sparse readers: each label layout a table or an archive may hold (wide
columns, a label-set column, a long table of ``(example, label)`` rows, an ``.npz`` with
CSR labels) read block by block into sparse labels, against the dense matrix the file
was written from, for full labels and observations, with read blocks of 1..N rows.
Only the public read functions are called; label names are plain (``a0``, ``a1``, ...)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spmlkit.data.formats import tabular
from spmlkit.errors import DataFormatError
from spmlkit.data.formats.tabular import load_npz, read_table
from tests.twins.strategies import TWIN_FEW, label_matrix

_names = itertools.count()


def _dense(M) -> np.ndarray:
    return M.dense() if hasattr(M, "dense") else np.asarray(M)


@st.composite
def table(draw):
    """``(M, observed, X)``: labels (bool, or int8 observations with negatives) and features."""
    Y = draw(label_matrix(max_rows=12, max_labels=5))
    observed = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    M = Y
    if observed:
        M = Y.astype(np.int8)
        M[(rng.random(Y.shape) < 0.3) & ~Y] = -1
    X = rng.integers(-9, 10, size=(len(Y), 2)).astype(np.float32) / 4
    return M, observed, X


def _write(path, header, rows):
    path.write_text("\n".join(",".join(map(str, r)) for r in [header, *rows]) + "\n", encoding="utf-8")


def _check(split, M, X, observed):
    got = split.Z if observed else split.Y
    assert (split.Y if observed else split.Z) is None
    assert np.array_equal(_dense(got).astype(np.int8), np.asarray(M).astype(np.int8))
    assert np.array_equal(np.asarray(split.X), X)


@TWIN_FEW
@given(t=table(), data=st.data())
def test_wide_and_set_columns_read_block_by_block_equal_the_dense_labels(tmp_path, monkeypatch, t, data):
    M, observed, X = t
    n, L = M.shape
    monkeypatch.setattr(tabular, "BLOCK_ROWS", data.draw(st.integers(1, n)))
    names = [f"a{j}" for j in range(L)]
    tag = next(_names)
    wide = tmp_path / f"wide{tag}.csv"
    _write(wide, ["f0", "f1", *names], [[*x, *(int(v) for v in m)] for x, m in zip(X.tolist(), np.asarray(M))])
    if observed and not (np.asarray(M) == 1).any():  # observations without a positive are refused, whole or in blocks
        with pytest.raises(DataFormatError, match="no observed positive"):
            read_table(wide, label_columns=names, observed=observed)
        return
    split, labels, _ = read_table(wide, label_columns=names, observed=observed)
    assert labels == names
    _check(split, M, X, observed)
    sets = tmp_path / f"set{tag}.csv"
    cell = [";".join(("-" if v == -1 else "") + names[j] for j, v in enumerate(m) if v != 0) for m in np.asarray(M)]
    _write(sets, ["f0", "f1", "labels"], [[*x, c] for x, c in zip(X.tolist(), cell)])
    split, labels, _ = read_table(sets, label_set_column="labels", label_names=names, observed=observed)
    _check(split, M, X, observed)


@TWIN_FEW
@given(Y=label_matrix(max_rows=10, max_labels=5).filter(lambda y: y.any(1).all()), data=st.data())
def test_a_long_table_reads_as_the_dense_labels(tmp_path, monkeypatch, Y, data):
    """One ``(id, label)`` row per positive, rows of one example anywhere in the file."""
    n, L = Y.shape
    monkeypatch.setattr(tabular, "BLOCK_ROWS", data.draw(st.integers(1, int(Y.sum()))))
    names = [f"a{j}" for j in range(L)]
    X = (np.arange(n * 2).reshape(n, 2) / 4).astype(np.float32)
    rows = [[f"e{i}", *X[i].tolist(), names[j]] for i, j in zip(*np.nonzero(Y))]
    order = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))).permutation(len(rows))
    path = tmp_path / f"long{next(_names)}.csv"
    _write(path, ["id", "f0", "f1", "label"], [rows[i] for i in order])
    split, labels, _ = read_table(path, label_column="label", id_column="id", label_names=names, observed=False)
    assert labels == names
    pos = {e: i for i, e in enumerate(split.ids)}
    assert sorted(pos) == sorted(f"e{i}" for i in range(n))
    back = [pos[f"e{i}"] for i in range(n)]  # the file's example order is the reader's to choose
    assert np.array_equal(_dense(split.Y)[back], Y)
    assert np.array_equal(np.asarray(split.X)[back], X)


@TWIN_FEW
@given(t=table())
def test_npz_csr_labels_equal_the_dense_labels_of_the_same_archive(tmp_path, t):
    M, observed, X = t
    M = np.asarray(M)
    key = "Z" if observed else "Y"
    tag = next(_names)
    np.savez(tmp_path / f"dense{tag}.npz", X=X, **{key: M})
    rows, cols = np.nonzero(M)
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=len(M)))]
    csr = {f"{key}_indptr": indptr, f"{key}_indices": cols, f"{key}_shape": np.array(M.shape)}
    if observed:
        csr[f"{key}_data"] = M[rows, cols]
    np.savez(tmp_path / f"csr{tag}.npz", X=X, **csr)
    dense = load_npz(tmp_path / f"dense{tag}.npz").splits["train"]
    sparse = load_npz(tmp_path / f"csr{tag}.npz").splits["train"]
    for split in (dense, sparse):
        _check(split, M, X, observed)


@TWIN_FEW
@given(payload=st.binary(max_size=3000), repeat=st.integers(1, 400), limit=st.integers(0, 4000))
def test_gunzip_in_pieces_equals_gzip_decompress_and_refuses_past_its_limit(payload, repeat, limit):
    """reading.gunzip (decompressed a piece at a time, refused past ``limit``) against
    ``gzip.decompress`` of the whole stream: the same bytes when they fit, else one refusal."""
    import gzip

    import pytest

    from spmlkit.errors import DataFormatError
    from spmlkit.reading import gunzip

    data = payload * repeat
    stream = gzip.compress(data, mtime=0)
    if len(data) <= limit:
        assert gunzip(stream, "f.gz", limit=limit) == gzip.decompress(stream)
    else:
        with pytest.raises(DataFormatError, match="decompresses to more than"):
            gunzip(stream, "f.gz", limit=limit)
