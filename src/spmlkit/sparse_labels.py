"""Labels and observations stored as what they are: one row of label indices per example.

A single positive is one integer.  :class:`SparseLabels` holds an ``(N, L)`` matrix of
full labels ``Y`` (bool), observations ``Z`` (int8 in {−1, 0, +1}, see :mod:`spmlkit.labels`)
or a label mask in compressed sparse row (CSR) form:

* ``indptr`` ``(N + 1,)`` int64 — row ``n`` lists entries ``indptr[n]:indptr[n + 1]``;
* ``indices`` ``(nnz,)`` int32 — their label columns, increasing within a row;
* ``values`` ``(nnz,)`` — their values, or ``None`` when every listed entry is 1 (True);
* ``fill`` — the value of every entry that is not listed: 0 (False / unobserved), or −1
  for observations where everything not listed is an observed negative (the ``full`` and
  ``1 P. & all N.`` regimes), so that those regimes also cost O(N + nnz(Y)).

Memory is ``8·(N + 1) + (4 + itemsize)·nnz`` bytes: 13 MB for a million single positives,
whatever ``L``.  Dense ``(B, L)`` blocks are built only for the rows asked for
(:meth:`SparseLabels.dense` with ``rows``; :meth:`DeviceLabels.block` on the training
device), so nothing here allocates ``N × L`` unless :meth:`SparseLabels.dense` is called
without rows.  ``np.asarray(Z)`` densifies too (small data, and code written for dense
arrays); above :data:`DENSE_LIMIT_BYTES` it refuses with one line, so a path that would
silently need ``N × L`` memory fails where it is written, not in the kernel's OOM killer.

Examples
--------
>>> import numpy as np
>>> Z = SparseLabels.single([2, 0, -1], n_labels=3)
>>> Z.dense().tolist()
[[0, 0, 1], [1, 0, 0], [0, 0, 0]]
>>> Z.row_counts().tolist(), Z.col_counts().tolist(), Z.nbytes
([1, 1, 0], [1, 0, 1], 40)
>>> SparseLabels.from_dense(np.array([[1, -1], [-1, -1]], dtype=np.int8)).fill
-1
"""
from __future__ import annotations


import numpy as np

from .errors import ConfigError, DataFormatError
from .reading import env_megabytes

#: ``np.asarray(labels)`` / :meth:`SparseLabels.dense` without rows refuse above this many
#: bytes (the environment variable ``SPML_DENSE_LIMIT_MB`` overrides it): 2 GiB.
DENSE_LIMIT_BYTES = 2 * 2 ** 30
#: rows per block when a dense array is converted or a regime is drawn (memory O(block × L))
BLOCK_ENTRIES = 2 ** 24


def dense_limit_bytes() -> int:
    return env_megabytes("SPML_DENSE_LIMIT_MB", DENSE_LIMIT_BYTES)


def block_rows(n_labels: int, entries: int = BLOCK_ENTRIES) -> int:
    """Rows per block of at most ``entries`` entries (at least one row)."""
    return max(1, entries // max(int(n_labels), 1))


def _as_rows(rows, n: int) -> np.ndarray:
    if isinstance(rows, slice):
        return np.arange(n, dtype=np.int64)[rows]
    r = np.asarray(rows)
    if r.dtype == bool:
        if r.shape != (n,):
            raise IndexError(f"boolean row mask of shape {r.shape} for {n} rows")
        return np.flatnonzero(r)
    r = r.astype(np.int64, copy=False).reshape(-1)
    if r.size and (int(r.min()) < -n or int(r.max()) >= n):
        raise IndexError(f"row index out of range for {n} rows")
    return np.where(r < 0, r + n, r)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + l)`` for every pair, vectorised."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.cumsum(lengths) - lengths
    return np.repeat(starts - first, lengths) + np.arange(total, dtype=np.int64)


#: numpy array attributes a :class:`SparseLabels` answers by densifying (small data and
#: code written for dense arrays; each is refused above the dense limit)
_DENSE_ATTRIBUTES = frozenset({"sum", "any", "all", "mean", "astype", "tolist", "copy", "nonzero", "T", "ravel",
                               "reshape", "flatten", "max", "min", "argmax", "argmin", "item", "view", "cumsum",
                               "transpose", "squeeze", "clip", "std", "var", "flat", "argsort", "round"})


class SparseLabels(np.lib.mixins.NDArrayOperatorsMixin):
    """An ``(N, L)`` label, observation or mask matrix in CSR form (module docstring).

    Numpy interoperability (for small data and code written for dense arrays): operators
    and ufuncs (``Z == 1``, ``~mask``, ``np.sum(Y)``), element indexing (``Z[i, j]``) and the
    common array methods (``.sum(axis)``, ``.any()``, ``.astype()``, ...) work on the dense
    matrix, built for the purpose and refused above :func:`dense_limit_bytes`; the library's
    own code uses the sparse methods below.

    ``dtype`` is what :meth:`dense` returns: ``bool`` for full labels and masks, ``int8``
    for observations.  Construct with :meth:`single`, :meth:`from_dense`,
    :meth:`from_coo` or :meth:`from_rows`; the constructor checks the arrays (``check=False``
    skips the O(nnz) checks for arrays this module produced)."""

    __slots__ = ("indptr", "indices", "values", "n_labels", "fill", "dtype")
    ndim = 2

    def __init__(self, indptr, indices, values=None, *, n_labels: int, fill: int = 0, dtype=np.int8,
                 check: bool = True, source: str | None = None):
        self.indptr = np.asarray(indptr)
        self.indices = np.asarray(indices)
        self.values = None if values is None else np.asarray(values)
        self.n_labels = int(n_labels)
        self.fill = int(fill)
        self.dtype = np.dtype(dtype)
        if check:
            self._check(source)

    # ------------------------------------------------------------------ checks
    def _check(self, source) -> None:
        ip, ix, v = self.indptr, self.indices, self.values
        if ip.ndim != 1 or ip.size < 1 or ip.dtype.kind not in "iu":
            raise DataFormatError(source, "sparse labels: row pointers must be a 1-D integer array of N + 1 entries")
        if ix.ndim != 1 or ix.dtype.kind not in "iu":
            raise DataFormatError(source, "sparse labels: label indices must be a 1-D integer array")
        if int(ip[0]) != 0 or int(ip[-1]) != ix.size or (ip.size > 1 and bool((np.diff(ip) < 0).any())):
            raise DataFormatError(source, "sparse labels: row pointers must start at 0, never decrease and end at "
                                          f"the number of entries ({ix.size})")
        if ix.size and (int(ix.min()) < 0 or int(ix.max()) >= self.n_labels):
            raise DataFormatError(source, f"sparse labels: a label index lies outside 0..{self.n_labels - 1}")
        if ix.size > 1:
            step = np.diff(ix.astype(np.int64))
            starts = ip[1:-1]
            step[starts[(starts > 0) & (starts < ix.size)] - 1] = 1  # row boundaries may go down
            if bool((step <= 0).any()):
                raise DataFormatError(source, "sparse labels: label indices must increase within each row "
                                              "(a label listed twice in one example)")
        if v is not None and v.shape != ix.shape:
            raise DataFormatError(source, "sparse labels: one value per label index expected")
        if self.fill not in (0, -1):
            raise DataFormatError(source, f"sparse labels: fill must be 0 or -1, got {self.fill}")
        if self.dtype == np.int8 and v is not None and v.size and (v.dtype.kind not in "iu" or int(v.min()) < -1
                                                                   or int(v.max()) > 1):
            raise DataFormatError(source, "observations must be +1, 0 or -1")
        if self.dtype == bool and (self.fill != 0 or (v is not None and v.size and not bool((v == 1).all()))):
            raise DataFormatError(source, "full labels and masks are 0/1: every listed entry must be 1")
        if self.indptr.dtype != np.int64:
            self.indptr = self.indptr.astype(np.int64)
        if self.indices.dtype != np.int32:
            self.indices = self.indices.astype(np.int32)
        if self.dtype == np.int8 and v is not None and v.dtype != np.int8:
            self.values = v.astype(np.int8)

    # ---------------------------------------------------------- construction
    @classmethod
    def single(cls, index, n_labels: int, *, value: int = 1, dtype=np.int8) -> "SparseLabels":
        """One entry per row at column ``index[n]`` (``-1``: none), all equal to ``value``."""
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        if index.size and (int(index.max()) >= n_labels or int(index.min()) < -1):
            raise DataFormatError(None, f"label index outside 0..{n_labels - 1}")
        has = index >= 0
        indptr = np.zeros(index.size + 1, dtype=np.int64)
        np.cumsum(has, out=indptr[1:])
        values = None if value == 1 else np.full(int(has.sum()), value, dtype=np.int8)
        return cls(indptr, index[has].astype(np.int32), values, n_labels=n_labels, dtype=dtype, check=False)

    @classmethod
    def empty(cls, n_rows: int, n_labels: int, *, dtype=np.int8) -> "SparseLabels":
        return cls(np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int32), None, n_labels=n_labels,
                   dtype=dtype, check=False)

    @classmethod
    def from_coo(cls, rows, cols, values=None, *, shape: tuple[int, int], dtype=np.int8, fill: int = 0,
                 source: str | None = None) -> "SparseLabels":
        """From ``(row, column[, value])`` triples in any order; a repeated pair is an error
        naming the row (``values`` None: every entry 1)."""
        n, L = int(shape[0]), int(shape[1])
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        cols = np.asarray(cols, dtype=np.int64).reshape(-1)
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= n):
            raise DataFormatError(source, f"row number outside 1..{n}")
        if cols.size and (int(cols.min()) < 0 or int(cols.max()) >= L):
            raise DataFormatError(source, f"label index outside 0..{L - 1}")
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
        vals = None if values is None else np.asarray(values).reshape(-1)[order]
        if rows.size > 1:
            dup = (rows[1:] == rows[:-1]) & (cols[1:] == cols[:-1])
            if dup.any():
                r = int(rows[1:][dup][0])
                raise DataFormatError(source, f"row {r + 1} lists label {int(cols[1:][dup][0])} twice")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(indptr, cols.astype(np.int32), vals, n_labels=L, fill=fill, dtype=dtype, source=source)

    @classmethod
    def from_rows(cls, rows, n_labels: int, *, dtype=np.int8) -> "SparseLabels":
        """From a sequence of per-row label index lists (every listed entry 1)."""
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        flat = np.fromiter((int(c) for r in rows for c in sorted(r)), dtype=np.int64, count=int(indptr[-1]))
        return cls(indptr, flat, None, n_labels=n_labels, dtype=dtype)

    @classmethod
    def from_dense(cls, A, *, dtype=None, fill: int | None = None, source: str | None = None) -> "SparseLabels":
        """From a dense ``(N, L)`` array (bool labels or int8-like observations), in row
        blocks (memory-mapped arrays are read a block at a time).  ``fill`` defaults to the
        commoner of 0 and −1 for observations (0 for bool)."""
        A = A if hasattr(A, "shape") and hasattr(A, "dtype") else np.asarray(A)
        if len(A.shape) != 2:
            raise DataFormatError(source, f"labels must be a 2-D (examples x labels) array, got shape {A.shape}")
        n, L = A.shape
        dtype = np.dtype(bool if A.dtype == bool else np.int8) if dtype is None else np.dtype(dtype)
        step = block_rows(L)
        if fill is None:
            fill = 0
            if dtype == np.int8:
                neg = zero = 0
                for s in range(0, n, step):
                    block = np.asarray(A[s:s + step])
                    neg += int((block == -1).sum())
                    zero += int((block == 0).sum())
                fill = -1 if neg > zero else 0  # -1 when observed negatives outnumber unobserved entries
        counts = np.zeros(n, dtype=np.int64)
        parts_ix, parts_v = [], []
        for s in range(0, n, step):
            block = np.asarray(A[s:s + step])
            if block.dtype == bool:
                block = block.astype(np.int8)
            listed = block != fill
            r, c = np.nonzero(listed)
            counts[s:s + len(block)] = listed.sum(1)
            parts_ix.append(c.astype(np.int32))
            parts_v.append(block[r, c].astype(np.int8))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.concatenate(parts_ix) if parts_ix else np.zeros(0, dtype=np.int32)
        values = np.concatenate(parts_v) if parts_v else np.zeros(0, dtype=np.int8)
        if dtype == bool or (fill == 0 and values.size and bool((values == 1).all())):
            values = None
        return cls(indptr, indices, values, n_labels=L, fill=fill, dtype=dtype, source=source,
                   check=dtype != np.int8 or values is None or not values.size
                   or not (int(values.min()) >= -1 and int(values.max()) <= 1))

    # ---------------------------------------------------------------- shape
    @property
    def shape(self) -> tuple[int, int]:
        return (self.indptr.size - 1, self.n_labels)

    def __len__(self) -> int:
        return self.indptr.size - 1

    @property
    def nnz(self) -> int:
        """Listed entries (not the number of non-zero values when ``fill`` is −1)."""
        return int(self.indices.size)

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes + (0 if self.values is None else self.values.nbytes))

    @property
    def size(self) -> int:
        n, L = self.shape
        return n * L

    def __repr__(self) -> str:
        n, L = self.shape
        return (f"SparseLabels({n} x {L}, {np.dtype(self.dtype).name}, {self.nnz} listed entries"
                + (", fill -1" if self.fill else "") + ")")

    @property
    def listed_values(self) -> np.ndarray:
        """The value of every listed entry (ones when ``values`` is None)."""
        if self.values is not None:
            return self.values
        return np.ones(self.indices.size, dtype=np.int8)

    def row_of_entries(self) -> np.ndarray:
        """``(nnz,)`` row number of every listed entry."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.indptr))

    # ---------------------------------------------------------------- dense
    def dense(self, rows=None) -> np.ndarray:
        """The dense block of ``rows`` (a slice, index array or bool mask; None: every row,
        refused above :func:`dense_limit_bytes`) as :attr:`dtype`."""
        if rows is None:
            need = self.size * np.dtype(self.dtype).itemsize
            if need > dense_limit_bytes():
                raise ConfigError(f"refusing to build a dense {self.shape[0]:,} x {self.shape[1]:,} label matrix "
                                  f"({need / 2 ** 30:.1f} GiB): this step should work in row blocks "
                                  "(SPML_DENSE_LIMIT_MB raises the limit)")
            return self._dense_rows(np.arange(len(self), dtype=np.int64))
        return self._dense_rows(_as_rows(rows, len(self)))

    def _dense_rows(self, rows: np.ndarray) -> np.ndarray:
        out = np.full((rows.size, self.n_labels), self.fill, dtype=np.int8)
        starts, stops = self.indptr[rows], self.indptr[rows + 1]
        lengths = stops - starts
        pos = _ranges(starts, lengths)
        if pos.size:
            r = np.repeat(np.arange(rows.size, dtype=np.int64), lengths)
            out[r, self.indices[pos]] = 1 if self.values is None else self.values[pos]
        return out.astype(bool) if self.dtype == bool else out

    def iter_dense(self, rows_per_block: int | None = None):
        """``(start, dense block)`` over consecutive row blocks (memory O(block × L))."""
        step = rows_per_block or block_rows(self.n_labels)
        for s in range(0, len(self), step):
            yield s, self.dense(slice(s, min(s + step, len(self))))

    def __array__(self, dtype=None, copy=None):
        out = self.dense()
        return out if dtype is None else out.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(x.dense() if isinstance(x, SparseLabels) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.dense() if isinstance(x, SparseLabels) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __getattr__(self, name):
        if name in _DENSE_ATTRIBUTES:
            return getattr(self.dense(), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __iter__(self):
        for _, block in self.iter_dense():
            yield from block

    # ------------------------------------------------------------ subsets
    def take(self, rows) -> "SparseLabels":
        """The rows ``rows`` (slice, index array or bool mask), as a new matrix."""
        rows = _as_rows(rows, len(self))
        starts, stops = self.indptr[rows], self.indptr[rows + 1]
        lengths = stops - starts
        pos = _ranges(starts, lengths)
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return SparseLabels(indptr, self.indices[pos], None if self.values is None else self.values[pos],
                            n_labels=self.n_labels, fill=self.fill, dtype=self.dtype, check=False)

    def __getitem__(self, key):
        """Rows (a slice, index array or bool mask) -> a :class:`SparseLabels`; an integer
        row or a ``(rows, columns)`` pair -> dense values, as numpy would give."""
        if isinstance(key, tuple):
            rows, rest = key[0], key[1:]
            if isinstance(rows, (int, np.integer)):
                return self.dense([int(rows)])[0][rest]
            return self.dense(rows)[(slice(None),) + rest]
        if isinstance(key, (int, np.integer)):
            return self.dense([int(key)])[0]
        return self.take(key)

    @staticmethod
    def vstack(parts: list["SparseLabels"]) -> "SparseLabels":
        """Rows of ``parts`` one after the other (same width, fill and dtype)."""
        first = parts[0]
        if any(p.n_labels != first.n_labels or p.fill != first.fill or p.dtype != first.dtype for p in parts):
            raise ValueError("vstack: parts differ in width, fill or dtype")
        lengths = np.concatenate([np.diff(p.indptr) for p in parts])
        indptr = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        vals = None
        if any(p.values is not None for p in parts):
            vals = np.concatenate([p.listed_values for p in parts])
        return SparseLabels(indptr, np.concatenate([p.indices for p in parts]), vals, n_labels=first.n_labels,
                            fill=first.fill, dtype=first.dtype, check=False)

    # ------------------------------------------------------------- counts
    def _listed(self, value: int) -> np.ndarray:
        return np.ones(self.nnz, dtype=bool) if self.values is None and value == 1 else (
            np.zeros(self.nnz, dtype=bool) if self.values is None else self.values == value)

    def row_counts(self, value: int = 1) -> np.ndarray:
        """``(N,)`` number of entries equal to ``value`` in every row."""
        n, L = self.shape
        keep = self._listed(value)
        listed = np.bincount(self.row_of_entries()[keep], minlength=n).astype(np.int64) if self.nnz else \
            np.zeros(n, dtype=np.int64)
        if value == self.fill:
            return listed + (L - np.diff(self.indptr))
        return listed

    def col_counts(self, value: int = 1) -> np.ndarray:
        """``(L,)`` number of entries equal to ``value`` in every column."""
        n, L = self.shape
        counts = np.bincount(self.indices[self._listed(value)], minlength=L).astype(np.int64)
        if value == self.fill:
            counts += n - np.bincount(self.indices, minlength=L)
        return counts

    def count(self, value: int = 1) -> int:
        return int(self.row_counts(value).sum()) if value == self.fill else int(self._listed(value).sum())

    def any_per_row(self, value: int = 1) -> np.ndarray:
        return self.row_counts(value) > 0

    def positives(self) -> "SparseLabels":
        """The +1 (True) entries as a bool matrix (observed positives of ``Z``, or ``Y`` itself)."""
        if self.values is None and self.fill == 0:
            return SparseLabels(self.indptr, self.indices, None, n_labels=self.n_labels, dtype=bool, check=False)
        keep = self._listed(1)
        counts = np.bincount(self.row_of_entries()[keep], minlength=len(self)).astype(np.int64)
        indptr = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return SparseLabels(indptr, self.indices[keep], None, n_labels=self.n_labels, dtype=bool, check=False)

    def single_index(self) -> np.ndarray | None:
        """``(N,)`` the one listed label of every row when each row lists at most one entry
        equal to +1 and nothing else with ``fill`` 0 (pure single positives; −1 for a row
        without), else None."""
        if self.fill != 0 or (self.values is not None and not bool((self.values == 1).all())):
            return None
        lengths = np.diff(self.indptr)
        if lengths.size and int(lengths.max()) > 1:
            return None
        out = np.full(len(self), -1, dtype=np.int64)
        has = lengths == 1
        out[has] = self.indices[self.indptr[:-1][has]]
        return out

    def equals(self, other) -> bool:
        """Same shape and the same entries (whatever the storage)."""
        if isinstance(other, SparseLabels):
            if other.shape != self.shape:
                return False
            for s, a in self.iter_dense():
                if not np.array_equal(a.astype(np.int8), other.dense(slice(s, s + len(a))).astype(np.int8)):
                    return False
            return True
        other = np.asarray(other)
        return other.shape == self.shape and np.array_equal(self.dense().astype(np.int8), other.astype(np.int8))

    # ---------------------------------------------------------------- device
    def to(self, device) -> "DeviceLabels":
        return DeviceLabels(self, device)


def as_sparse(A, *, dtype=None, source: str | None = None) -> SparseLabels:
    """``A`` as :class:`SparseLabels` (itself when it already is one)."""
    if isinstance(A, SparseLabels):
        return A
    return SparseLabels.from_dense(A, dtype=dtype, source=source)


def dense_rows(A, rows) -> np.ndarray:
    """Rows ``rows`` of a dense array or a :class:`SparseLabels`, as a dense array."""
    if isinstance(A, SparseLabels):
        return A.dense(rows)
    return np.asarray(A[rows] if not isinstance(rows, slice) else A[rows])


class DeviceLabels:
    """A :class:`SparseLabels` on a torch device: dense ``(…, L)`` blocks of any rows
    (:meth:`block`), built there per batch without a host synchronisation.

    Rows are kept as a padded table of their listed label columns ``(N, k_max)`` (int32)
    and values, a short row padded with a repeat of its first entry (an empty row with
    column 0 and the fill value): a block is one gather and one ``scatter_`` into a
    ``(B, L)`` buffer of the fill value, the repeated writes writing the same value.  One
    label per row costs 4 bytes a row.  Where the rows list many entries (``k_max > L / 5``: the
    ``partial`` regime, where observations are dense by nature) the matrix is held dense
    as int8 instead, which is then the smaller form.  ``host`` keeps the numpy original."""

    def __init__(self, labels: SparseLabels, device):
        import torch  # lazy: torch-free CLI start-up

        self.host = labels
        self.device = torch.device(device)
        self.n_labels = L = labels.n_labels
        self.fill = labels.fill
        self.dtype = torch.bool if labels.dtype == bool else torch.int8
        lengths = np.diff(labels.indptr)
        k_max = max(int(lengths.max()) if lengths.size else 0, 1)
        self._dense = None
        if k_max * 5 > max(L, 1):  # the padded table (4 + 1 bytes a slot) would outgrow the dense int8
            self._dense = torch.tensor(np.asarray(labels.dense(), dtype=np.int8), device=self.device)
            return
        n = len(labels)
        lengths = np.diff(labels.indptr)
        first = np.minimum(labels.indptr[:-1], max(labels.nnz - 1, 0))
        has = lengths > 0
        cols = np.repeat(np.where(has, labels.indices[first] if labels.nnz else 0, 0)[:, None].astype(np.int32),
                         k_max, axis=1)
        vals_all = labels.listed_values
        vals = np.repeat(np.where(has, vals_all[first] if labels.nnz else self.fill, self.fill)[:, None]
                         .astype(np.int8), k_max, axis=1)
        rows = labels.row_of_entries()
        pos = np.arange(labels.nnz, dtype=np.int64) - labels.indptr[rows]
        cols[rows, pos] = labels.indices
        vals[rows, pos] = vals_all
        self._cols = torch.tensor(cols, device=self.device)
        # every slot 1 (pure positives, no empty row): the scatter writes a constant
        self._vals = None if labels.values is None and bool(has.all()) else torch.tensor(vals, device=self.device)

    def __len__(self) -> int:
        return len(self.host)

    @property
    def shape(self) -> tuple[int, int]:
        return self.host.shape

    def block(self, index) -> "torch.Tensor":
        """Dense rows ``index`` (a long tensor of any shape) -> ``(*index.shape, L)``."""
        import torch  # lazy: torch-free CLI start-up

        idx = index.to(self.device).reshape(-1)
        if self._dense is not None:
            out = self._dense.index_select(0, idx)
        else:
            cols = self._cols.index_select(0, idx).long()
            out = torch.full((idx.numel(), self.n_labels), self.fill, dtype=torch.int8, device=self.device)
            if self._vals is None:
                out.scatter_(1, cols, 1)
            else:
                out.scatter_(1, cols, self._vals.index_select(0, idx))
        out = out.view(*index.shape, self.n_labels)
        return out.bool() if self.dtype == torch.bool else out
