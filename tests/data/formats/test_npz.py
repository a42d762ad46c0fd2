"""NPZ archives (spmlkit.data.formats.npz): dense and scipy-CSR labels, official
splits, and damaged, hostile or misshapen archives refused in one line, never unpickled
(moved from test_tabular.py with the reader)."""
import warnings
import zipfile

import numpy as np
import pytest

from spmlkit.data.formats import load_npz
from spmlkit.errors import DataFormatError
from tests.helpers.cli import strict_one_line_error as one_line_error




def test_npz_complex_features_are_refused(tmp_path):
    p = tmp_path / "c.npz"
    np.savez(p, X=np.ones((4, 2)) * (1 + 2j), Y=np.eye(4, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ComplexWarning used to be the only sign
        with pytest.raises(DataFormatError, match=r"c\.npz \[X\]: features are complex numbers"):
            load_npz(p)


def test_npz_complex_labels_are_refused(tmp_path):
    p = tmp_path / "cy.npz"
    np.savez(p, X=np.ones((4, 2)), Y=np.eye(4, 2).astype(complex))
    with pytest.raises(DataFormatError, match=r"cy\.npz: \[Y\] labels are complex numbers"):
        load_npz(p)


@pytest.mark.parametrize("arrays,msg", [
    (dict(X=np.ones((4, 0)), Y=np.eye(4, 2)), "no feature columns"),
    (dict(X=np.ones((4, 3)), Y=np.ones((4, 0))), "[Y] has no label columns"),
    (dict(X=np.ones((0, 3)), Y=np.ones((0, 2))), "[X] has no rows"),
    (dict(X_train=np.ones((4, 3)), Y_train=np.eye(4, 2), X_test=np.ones((0, 3)), Y_test=np.ones((0, 2))),
     "[X_test] has no rows"),
    (dict(X=np.ones((4, 3)), Y=np.array(1.0)), "[Y] labels must be a 2-D"),
    (dict(X=np.ones((4, 3)), Y=np.eye(4, 2), label_names=np.array(["a", "b", "c"])), "[label_names] has shape (3,)"),
])
def test_npz_empty_or_misshapen_arrays_are_refused_at_load_time(tmp_path, arrays, msg):
    p = tmp_path / "e.npz"
    np.savez(p, **arrays)
    with pytest.raises(DataFormatError) as exc:
        load_npz(p)
    assert msg in str(exc.value) and "e.npz" in str(exc.value)


def test_npz_without_feature_columns_fails_in_prepare_not_in_train(tmp_path, capsys):
    p = tmp_path / "z.npz"
    np.savez(p, X=np.ones((40, 0)), Y=np.eye(40, 3))
    err = one_line_error(capsys, "prepare", p, "-o", tmp_path / "b")
    assert "z.npz [X]: no feature columns" in err and not (tmp_path / "b").exists()


def test_npz_object_arrays_are_one_line_and_never_unpickled(tmp_path, capsys):
    p = tmp_path / "obj.npz"
    np.savez(p, X=np.array([[1.0, "a"], [2.0, "b"]], dtype=object), Y=np.eye(2))
    with pytest.raises(DataFormatError, match=r"obj\.npz: array 'X' holds Python objects"):
        load_npz(p)
    err = one_line_error(capsys, "prepare", p, "-o", tmp_path / "b")
    assert "spml: error:" in err and "obj.npz" in err and "object array" in err


@pytest.mark.parametrize("damage", ["truncate", "corrupt_member", "npy", "text"])
def test_npz_damaged_files_are_one_line(tmp_path, capsys, damage):
    good = tmp_path / "good.npz"
    np.savez(good, X=np.arange(400.0).reshape(100, 4), Y=np.eye(100, 3))
    p = tmp_path / "bad.npz"
    raw = good.read_bytes()
    if damage == "truncate":
        p.write_bytes(raw[: len(raw) // 2])
    elif damage == "corrupt_member":  # the zip directory is intact, a member's bytes are not
        with zipfile.ZipFile(good) as z:
            info = z.getinfo("X.npy")
        start = info.header_offset + 30 + len(info.filename) + 200
        p.write_bytes(raw[:start] + bytes(b ^ 0xFF for b in raw[start:start + 64]) + raw[start + 64:])
    elif damage == "npy":
        np.save(tmp_path / "a.npy", np.ones((3, 2)))
        p.write_bytes((tmp_path / "a.npy").read_bytes())
    else:
        p.write_text("X,Y\n1,2\n")
    with pytest.raises(DataFormatError) as exc:
        load_npz(p)
    assert str(exc.value).startswith(str(p))
    err = one_line_error(capsys, "prepare", p, "-o", tmp_path / "b")
    assert "bad.npz" in err


def test_npz_float32_overflow_names_row_and_column_without_a_warning(tmp_path, capsys):
    p = tmp_path / "o.npz"
    X = np.ones((5, 3))
    X[3, 2] = 1e300
    np.savez(p, X=X, Y=np.eye(5, 2))
    err = one_line_error(capsys, "prepare", p, "-o", tmp_path / "b")
    assert "o.npz [X]: feature value 1e+300 at row 4, column 3 overflows float32" in err


def test_npz_single_and_official_split(tmp_path):
    p = tmp_path / "d.npz"
    np.savez(p, X=np.ones((4, 3)), Y=np.eye(4, 2), label_names=np.array(["a", "b"]))
    ds = load_npz(p)
    assert ds.label_names == ["a", "b"] and ds.splits["train"].Y.shape == (4, 2)
    q = tmp_path / "s.npz"
    np.savez(q, X_train=np.ones((4, 3)), Y_train=np.eye(4, 2), X_test=np.ones((2, 3)), Y_test=np.eye(2))
    assert set(load_npz(q).splits) == {"train", "test"}
    bad = tmp_path / "bad.npz"
    np.savez(bad, X=np.ones((4, 3)), Y=np.ones((3, 2)))
    with pytest.raises(DataFormatError, match="4 rows but its labels have 3"):
        load_npz(bad)
    nan = tmp_path / "nan.npz"
    np.savez(nan, X=np.array([[1.0], [np.inf]]), Y=np.ones((2, 1)))
    with pytest.raises(DataFormatError, match="row 2"):
        load_npz(nan)


def test_npz_with_sparse_csr_labels(tmp_path):
    """scipy.sparse CSR arrays under the label key (Y_indptr, Y_indices, Y_shape[, Y_data])
    are read without the dense matrix; unsorted indices are sorted; bad ones refused."""
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    Y = sp.csr_matrix((rng.random((30, 400)) < 0.02).astype(np.int8))
    X = rng.normal(size=(30, 3)).astype(np.float32)
    Yu = Y.copy()
    Yu.indices = Yu.indices.copy()
    for r in range(30):  # scramble each row's order
        a, b = Yu.indptr[r], Yu.indptr[r + 1]
        Yu.indices[a:b] = Yu.indices[a:b][::-1]
    np.savez(tmp_path / "s.npz", X=X, Y_indptr=Yu.indptr, Y_indices=Yu.indices, Y_data=Yu.data, Y_shape=Yu.shape)
    ds = load_npz(tmp_path / "s.npz")
    assert np.array_equal(np.asarray(ds.splits["train"].Y), Y.toarray().astype(bool))
    np.savez(tmp_path / "bad.npz", X=X, Y_indptr=Y.indptr[:-1], Y_indices=Y.indices, Y_shape=Y.shape)
    with pytest.raises(DataFormatError, match="Y_indptr"):
        load_npz(tmp_path / "bad.npz")
    np.savez(tmp_path / "neg.npz", X=X, Y_indptr=Y.indptr, Y_indices=Y.indices, Y_data=-Y.data, Y_shape=Y.shape)
    with pytest.raises(DataFormatError, match="-1"):
        load_npz(tmp_path / "neg.npz")  # -1 in full labels
    np.savez(tmp_path / "dup.npz", X=X[:1], Y_indptr=np.array([0, 2]), Y_indices=np.array([3, 3]),
             Y_shape=np.array([1, 400]))
    with pytest.raises(DataFormatError, match="twice"):
        load_npz(tmp_path / "dup.npz")


def test_a_tiny_npz_claiming_a_billion_labels_is_refused(tmp_path):
    p = tmp_path / "big.npz"
    np.savez(p, X=np.zeros((2, 3), np.float32), Y_indptr=np.array([0, 1, 2]), Y_indices=np.array([0, 5]),
             Y_shape=np.array([2, 10 ** 9]))
    assert p.stat().st_size < 2048
    with pytest.raises(DataFormatError, match=r"\[Y_shape\] declares 1,000,000,000 labels; spmlkit reads at most"):
        load_npz(p)
