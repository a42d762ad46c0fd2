"""Checks of a bundle's stored files before they are read as data: each array against
its recorded SHA-256 (hashed once per process and file version), the observations
against what their regime promises (files.md), and feature caches finite.  Used by
:mod:`.bundle` (which re-exports them); every failure is one
:class:`~spmlkit.errors.CorruptFileError` line naming the file.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import CorruptFileError
from ..io import sha256_file
from ..labels import REGIMES
from ..reading import check_regular

OBSERVED_ONLY = "observed"  # the regime name of a practitioner's own observations


_VERIFIED: dict[tuple, bool] = {}  # (path, size, mtime_ns) -> checked, so each file is hashed once per process


def _verify_checksum(path: Path, expected: str | None, *, advice: str = "re-run 'spml prepare'") -> None:
    """Compare ``path`` with its recorded SHA-256 (``expected``, or the ``.sha256``
    sidecar of an array written after the bundle was prepared).  A checksum is mandatory:
    an array with neither (a ``meta.json`` whose ``checksums`` were removed, an array added
    by hand) is refused — verification can never be turned off by deleting it."""
    check_regular(path)  # (the reader rule: a pipe or device in a bundle is refused, never read or waited on)
    side = path.with_name(path.name + ".sha256")
    if expected is None and side.is_file() and not side.is_symlink():
        expected = side.read_text().strip()
    if not isinstance(expected, str) or not expected:
        raise CorruptFileError(f"{path}: no checksum is recorded for it (not in meta.json's 'checksums', no "
                               f"{side.name}); spmlkit reads only arrays it can verify — {advice}")
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, expected)
    if key in _VERIFIED:
        return
    if sha256_file(path) != expected:
        raise CorruptFileError(f"{path}: checksum mismatch with the bundle's record; the file was altered or "
                               f"truncated — {advice}")
    _VERIFIED[key] = True


def check_observations(Z, path, regime: str | None = None, *, background_rows: int = 0):
    """Observations as files.md promises them: int8 in {-1, 0, +1}; for the training
    observations of a ``regime`` (None: values only), what the regime promises — one
    observed positive per example for the single-positive regimes, no unobserved entry for
    ``full``, at least one observed positive for every regime, and (the user's own
    observations, ``observed``) no example without any observation beyond the declared
    ``background_rows``.  Anything else is a one-line :class:`CorruptFileError` naming
    ``path`` (and the row).  ``Z``: a dense array or :class:`~spmlkit.sparse_labels.SparseLabels`
    (whose constructor has checked the values); returned unchanged."""
    sparse = hasattr(Z, "row_counts")
    if np.dtype(Z.dtype) != np.int8:
        raise CorruptFileError(f"{path}: observations must be int8 (+1 / 0 / -1), found {Z.dtype}; re-run "
                               "'spml prepare'")
    if not sparse:
        A = np.asarray(Z)
        if A.size and (int(A.min()) < -1 or int(A.max()) > 1):
            bad = np.argwhere((A < -1) | (A > 1))[0]
            raise CorruptFileError(f"{path}: row {int(bad[0]) + 1}, column {int(bad[1]) + 1} holds "
                                   f"{int(A[bad[0], bad[1]])}; observations must be +1, 0 or -1")
    n, L = Z.shape
    if regime is None or not n or not L:
        return Z

    def counts(value):
        return Z.row_counts(value) if sparse else (np.asarray(Z) == value).sum(axis=1)

    pos = counts(1)
    if not pos.any():
        raise CorruptFileError(f"{path}: no observed positive at all (regime {regime!r} observes at least one); the "
                               "file was altered — re-run 'spml prepare'")

    r = REGIMES.get(regime)
    if r is not None and r.needs_positive and regime != "partial" and (pos != 1).any():
        row = int(np.flatnonzero(pos != 1)[0])
        raise CorruptFileError(f"{path}: row {row + 1} has {int(pos[row])} observed positives; regime "
                               f"{regime!r} observes exactly one per example — the file was altered, re-run "
                               "'spml prepare'")
    unobserved = counts(0)
    if regime == "full" and unobserved.any():
        row = int(np.flatnonzero(unobserved)[0])
        raise CorruptFileError(f"{path}: row {row + 1} has unobserved labels; regime 'full' observes every label — "
                               "the file was altered, re-run 'spml prepare'")
    if regime == OBSERVED_ONLY:
        empty = unobserved == L
        if int(empty.sum()) > background_rows:
            row = int(np.flatnonzero(empty)[0])
            raise CorruptFileError(f"{path}: {int(empty.sum())} example(s) without any observation (first: row "
                                   f"{row + 1}) but the bundle declares {background_rows} background row(s); the "
                                   "file was altered — re-run 'spml prepare'")
    return Z


def _check_finite(path: Path, X: np.ndarray, chunk_rows: int = 65536) -> None:
    """A feature cache must hold finite numbers (a NaN would surface much later as
    "scores contain NaN" with no file named); read in chunks, once per file version."""
    st = path.stat()
    key = ("finite", str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key in _VERIFIED:
        return
    for s in range(0, X.shape[0], chunk_rows):
        block = np.asarray(X[s:s + chunk_rows])
        if not np.isfinite(block).all():
            r, c = (int(i) for i in np.argwhere(~np.isfinite(block))[0])
            raise CorruptFileError(f"{path}: row {s + r + 1}, column {c + 1} is {block[r, c]} (features must be finite "
                                   "numbers); delete the feature set and run 'spml features' again")
    _VERIFIED[key] = True
