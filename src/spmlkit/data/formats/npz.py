"""NumPy ``.npz`` archives of a multi-label dataset (dense or scipy-CSR labels), read
without unpickling anything.

NPZ
---
Keys ``X`` (or ``features``) and ``Y`` (or ``labels``), optionally ``Z`` instead of ``Y``
for observations, ``label_names`` and ``feature_names``.  Official splits may be given
as ``X_train``/``Y_train``/``X_test``/``Y_test`` (and ``_val``).  Nothing is unpickled;
object or complex arrays and arrays without rows, feature columns or label columns are
refused.

Labels may be stored sparse, as scipy.sparse's CSR arrays under the label key as a
prefix: ``Y_indptr``, ``Y_indices``, ``Y_shape`` and, unless every entry is 1,
``Y_data`` (observations ``Z_data``: +1 / -1) — for a scipy matrix ``S``:
``np.savez(f, X=X, Y_indptr=S.indptr, Y_indices=S.indices, Y_data=S.data, Y_shape=S.shape)``
(``Y_train_indptr``, ... for splits).  They are read without ever building the dense
``N × L`` matrix: a million examples with one label each take 13 MB however many labels.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from ...errors import DataFormatError
from ...io import load_numpy, npz_array
from ...reading import open_bytes
from ...sparse_labels import SparseLabels
from ..dataset import MultiLabelDataset, Split, check_features

#: most labels a sparse archive may declare (every label costs a name and per-label state:
#: a 1 KB archive declaring a billion labels would fill memory); 16.8 million, five times
#: the largest extreme-classification benchmarks (Amazon-3M)
MAX_LABELS = 2 ** 24


def load_npz(path: str | Path, *, name: str | None = None, observed: bool = False) -> MultiLabelDataset:
    """A dataset from an ``.npz`` archive (see module docstring for the keys).

    Never unpickles: an object array, a corrupt or truncated archive, complex numbers,
    or an array with no rows, no feature columns or no label columns is a one-line
    :class:`DataFormatError` naming the file."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, "file not found")
    with open_bytes(path) as fh:
        magic = fh.read(6)
    if magic == b"\x93NUMPY":
        raise DataFormatError(path, "is a single .npy array, not an .npz archive; expected an archive written by "
                                    "np.savez with keys X and Y (or X_train, Y_train, ...)")
    if not zipfile.is_zipfile(path):  # checked here: np.load leaves the file open when the zip is unreadable
        raise DataFormatError(path, "is not a readable .npz archive (truncated, damaged or not a zip file); expected "
                                    "a file written by np.savez")
    arc = load_numpy(path)
    try:
        return _npz_dataset(arc, path, name=name, observed=observed, read=lambda k: npz_array(arc, k, path))
    finally:
        arc.close()


def _npz_dataset(arc, path: Path, *, name, observed, read) -> MultiLabelDataset:
    keys = set(arc.files)

    def pick(*cands):
        for c in cands:
            if c in keys:
                return c, read(c)
            if f"{c}_indptr" in keys:  # scipy.sparse CSR arrays under the key as a prefix
                return c, csr(c)
        return None, None

    def csr(c):
        missing = [k for k in ("indptr", "indices", "shape") if f"{c}_{k}" not in keys]
        if missing:
            raise DataFormatError(path, f"sparse labels {c!r} lack {', '.join(c + '_' + k for k in missing)} "
                                        "(CSR: indptr, indices, shape and optionally data)")
        shape = read(f"{c}_shape")
        if shape.shape != (2,) or shape.dtype.kind not in "iu":
            raise DataFormatError(path, f"[{c}_shape] must hold two whole numbers (rows, labels), got {shape!r}")
        if not 0 <= int(shape[1]) <= MAX_LABELS:  # (checked before anything of that width is made)
            raise DataFormatError(path, f"[{c}_shape] declares {int(shape[1]):,} labels; spmlkit reads at most "
                                        f"{MAX_LABELS:,} (a damaged or hostile file?)")
        data = read(f"{c}_data") if f"{c}_data" in keys else None
        if data is not None and (data.dtype.kind not in "biuf" or (data.size and not np.isin(data, (-1, 1)).all())):
            raise DataFormatError(path, f"[{c}_data] must hold 1 (and -1 for observed negatives) only")
        indptr, indices = read(f"{c}_indptr"), read(f"{c}_indices")
        if (indptr.ndim != 1 or indptr.dtype.kind not in "iu" or indptr.size != int(shape[0]) + 1 or
                int(indptr[0]) != 0 or int(indptr[-1]) != indices.size or bool((np.diff(indptr) < 0).any())):
            raise DataFormatError(path, f"[{c}_indptr] is not the row pointers of a {int(shape[0])}-row CSR matrix "
                                        f"with {indices.size} entries")
        if indices.ndim != 1 or indices.dtype.kind not in "iu" or (data is not None and data.shape != indices.shape):
            raise DataFormatError(path, f"[{c}_indices] must be whole numbers, one per entry of [{c}_data]")
        rows = np.repeat(np.arange(int(shape[0]), dtype=np.int64), np.diff(indptr))
        vals = None if data is None or (data.size and bool((data == 1).all())) else data.astype(np.int8)
        try:  # scipy may leave a row's indices unsorted: sorted here, and a label listed twice is refused
            return SparseLabels.from_coo(rows, indices, vals, shape=(int(shape[0]), int(shape[1])),
                                         source=f"{path} [{c}]")
        except DataFormatError as exc:
            raise DataFormatError(path, f"[{c}] {str(exc).split(': ', 1)[-1]}") from None

    def labels(key, sfx, arr, n):
        if isinstance(arr, SparseLabels):
            if arr.n_labels == 0:
                raise DataFormatError(path, f"[{key}] has no label columns (shape {arr.shape}); expected at least one")
            if len(arr) != n:
                raise DataFormatError(path, f"X{sfx} has {n} rows but its labels have {len(arr)}")
            return arr
        if np.iscomplexobj(arr):
            raise DataFormatError(path, f"[{key}] labels are complex numbers (dtype {arr.dtype}); expected 0/1 "
                                        "(or +1/-1/0 observations)")
        if arr.ndim != 2:
            raise DataFormatError(path, f"[{key}] labels must be a 2-D (examples x labels) array, got shape "
                                        f"{arr.shape}")
        if arr.shape[1] == 0:
            raise DataFormatError(path, f"[{key}] has no label columns (shape {arr.shape}); expected at least one")
        if arr.shape[0] != n:
            raise DataFormatError(path, f"X{sfx} has {n} rows but its labels have {arr.shape[0]}")
        return arr

    splits = {}
    for split in ("train", "val", "test", None):
        sfx = f"_{split}" if split else ""
        xkey, X = pick(f"X{sfx}", f"features{sfx}")
        if X is None:
            continue
        ykey, Y = pick(f"Y{sfx}", f"labels{sfx}")
        zkey, Z = pick(f"Z{sfx}", f"observed{sfx}")
        if observed and Z is None:
            Z, Y, zkey = Y, None, ykey
        if Y is None and Z is None:
            raise DataFormatError(path, f"has X{sfx} but no Y{sfx} (labels) or Z{sfx} (observations)")
        X = check_features(X, f"{path} [{xkey}]")
        if X.shape[0] == 0:
            raise DataFormatError(path, f"[{xkey}] has no rows (shape {X.shape}); expected at least one example")
        if Y is not None:
            Y = labels(ykey, sfx, Y, X.shape[0])
        else:
            Z = labels(zkey, sfx, Z, X.shape[0])
        try:
            splits[split or "train"] = Split(X=X, Y=Y, Z=Z if Y is None else None)
        except DataFormatError as exc:
            raise DataFormatError(path, f"[{ykey if Y is not None else zkey}] "
                                        f"{str(exc).removeprefix('<input>: ')}") from None
        if split is None:
            break
    if "train" not in splits:
        raise DataFormatError(path, f"no features found; expected key 'X' (or 'X_train'), got {sorted(keys)}")
    L = splits["train"].n_labels
    _, names = pick("label_names")
    if names is not None and (names.ndim != 1 or len(names) != L):
        raise DataFormatError(path, f"[label_names] has shape {names.shape}; expected {L} names (one per label column)")
    label_names = [str(s) for s in names] if names is not None else [f"label{i}" for i in range(L)]
    _, fn = pick("feature_names")
    D = splits["train"].X.shape[1]
    if fn is not None and (fn.ndim != 1 or len(fn) != D):
        raise DataFormatError(path, f"[feature_names] has shape {fn.shape}; expected {D} names (one per feature "
                                    "column)")
    return MultiLabelDataset(name=name or path.stem, label_names=label_names, splits=splits, source=str(path),
                             feature_names=[str(s) for s in fn] if fn is not None else None)
