"""The checks of a bundle's stored files (spmlkit.data.bundle_checks): checksums
mandatory and remembered per file version, observations against their regime (dense and
sparse), feature caches finite (moved from test_bundle.py with the checks)."""
import hashlib

import numpy as np
import pytest

from spmlkit.data import bundle_checks as bmod
from spmlkit.errors import CorruptFileError
from spmlkit.sparse_labels import SparseLabels


def os_utime(p, mtime_ns):
    import os

    os.utime(p, ns=(mtime_ns, mtime_ns))


def test_checksums_are_mandatory_and_compared(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(5))
    good = hashlib.sha256(p.read_bytes()).hexdigest()
    bmod._verify_checksum(p, good)
    with pytest.raises(CorruptFileError) as e:
        bmod._verify_checksum(p, "0" * 64, advice="do this")
    assert str(e.value) == (f"{p}: checksum mismatch with the bundle's record; the file was altered or truncated "
                            "— do this")
    for expected in (None, ""):
        with pytest.raises(CorruptFileError) as e:
            bmod._verify_checksum(p, expected)
        assert str(e.value) == (f"{p}: no checksum is recorded for it (not in meta.json's 'checksums', no "
                                "a.npy.sha256); spmlkit reads only arrays it can verify — re-run 'spml prepare'")
    (tmp_path / "a.npy.sha256").write_text(good + "\n")  # a sidecar (arrays written after prepare)
    bmod._verify_checksum(p, None)
    (tmp_path / "a.npy.sha256").write_text("1" * 64 + "\n")
    with pytest.raises(CorruptFileError, match="checksum mismatch"):
        bmod._verify_checksum(p, None)
    (tmp_path / "a.npy.sha256").unlink()
    (tmp_path / "elsewhere").write_text(good + "\n")
    (tmp_path / "a.npy.sha256").symlink_to(tmp_path / "elsewhere")  # a link is not spmlkit's record
    with pytest.raises(CorruptFileError, match="no checksum is recorded"):
        bmod._verify_checksum(p, None)


def test_a_verified_file_is_checked_again_when_it_or_its_record_changes(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(5))
    good = hashlib.sha256(p.read_bytes()).hexdigest()
    bmod._verify_checksum(p, good)
    with pytest.raises(CorruptFileError, match="checksum mismatch"):  # another record, the same file
        bmod._verify_checksum(p, "f" * 64)
    st = p.stat()
    np.save(p, np.arange(6))  # altered (longer), its time set back: the size still tells
    os_utime(p, st.st_mtime_ns)
    with pytest.raises(CorruptFileError, match="checksum mismatch"):
        bmod._verify_checksum(p, good)


def test_observations_are_checked_against_their_regime():
    ok = np.array([[1, 0, 0], [0, 1, 0]], np.int8)
    for Z in (ok, SparseLabels.from_dense(ok)):
        assert bmod.check_observations(Z, "z", "single_positive") is Z
    with pytest.raises(CorruptFileError) as e:
        bmod.check_observations(ok.astype(np.int16), "z.npy")
    assert str(e.value) == "z.npy: observations must be int8 (+1 / 0 / -1), found int16; re-run 'spml prepare'"
    for v in (2, -2):
        bad = ok.copy()
        bad[1, 2] = v
        with pytest.raises(CorruptFileError) as e:
            bmod.check_observations(bad, "z.npy")
        assert str(e.value) == f"z.npy: row 2, column 3 holds {v}; observations must be +1, 0 or -1"
    assert bmod.check_observations(np.zeros((0, 3), np.int8), "z", "single_positive").shape == (0, 3)
    none = np.array([[0, 0, -1], [0, 0, 0]], np.int8)
    for Z in (none, SparseLabels.from_dense(none)):
        assert bmod.check_observations(Z, "z") is Z  # values only: fine
        with pytest.raises(CorruptFileError) as e:
            bmod.check_observations(Z, "z", "partial")
        assert str(e.value) == ("z: no observed positive at all (regime 'partial' observes at least one); the file "
                                "was altered — re-run 'spml prepare'")
    for two in (np.array([[1, 0, 0], [1, 1, 0]], np.int8), np.array([[1, 0, 0], [0, 0, 0]], np.int8)):
        for Z in (two, SparseLabels.from_dense(two)):
            with pytest.raises(CorruptFileError) as e:
                bmod.check_observations(Z, "z", "single_positive_all_negatives")
            k = int((two[1] == 1).sum())
            assert str(e.value) == (f"z: row 2 has {k} observed positives; regime 'single_positive_all_negatives' "
                                    "observes exactly one per example — the file was altered, re-run 'spml prepare'")
        assert bmod.check_observations(two, "z", "partial") is two  # partial: any number
    full = np.array([[1, -1, -1], [-1, 1, -1]], np.int8)
    assert bmod.check_observations(full, "z", "full") is full
    full[1, 2] = 0
    with pytest.raises(CorruptFileError) as e:
        bmod.check_observations(SparseLabels.from_dense(full), "z", "full")
    assert str(e.value) == ("z: row 2 has unobserved labels; regime 'full' observes every label — the file was "
                            "altered, re-run 'spml prepare'")


def test_own_observations_may_leave_only_the_declared_background_rows_empty():
    Z = np.array([[1, 0], [0, 0], [0, -1], [0, 0]], np.int8)
    assert bmod.check_observations(Z, "z", "observed", background_rows=2) is Z
    with pytest.raises(CorruptFileError) as e:
        bmod.check_observations(SparseLabels.from_dense(Z), "z", "observed", background_rows=1)
    assert str(e.value) == ("z: 2 example(s) without any observation (first: row 2) but the bundle declares 1 "
                            "background row(s); the file was altered — re-run 'spml prepare'")
    assert bmod.check_observations(Z[:3], "z", "observed", background_rows=1) is not None


def test_feature_caches_must_be_finite_every_chunk_read(tmp_path):
    X = np.ones((7, 3), np.float32)
    X[5, 2] = np.nan
    p = tmp_path / "x.npy"
    np.save(p, X)
    with pytest.raises(CorruptFileError) as e:
        bmod._check_finite(p, X, chunk_rows=2)
    assert str(e.value) == (f"{p}: row 6, column 3 is nan (features must be finite numbers); delete the feature set "
                            "and run 'spml features' again")
    q = tmp_path / "y.npy"
    np.save(q, np.ones((7, 3), np.float32))
    bmod._check_finite(q, np.ones((7, 3), np.float32), chunk_rows=2)


def test_checksums_recorded_as_anything_but_text_are_no_checksum(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(3))
    for bad in (12345, ["x"]):
        with pytest.raises(CorruptFileError, match="no checksum is recorded for it"):
            bmod._verify_checksum(p, bad)


def test_observation_checks_per_regime_edge_cases():
    assert bmod.check_observations(np.zeros((2, 0), np.int8), "z", "single_positive").shape == (2, 0)
    full = np.array([[1, 1, -1], [-1, 1, -1]], np.int8)  # 'full': any number of positives
    assert bmod.check_observations(full, "z", "full") is full
    own = np.array([[1, 1, 0], [0, 1, -1]], np.int8)  # the user's own: any number of positives
    assert bmod.check_observations(own, "z", "observed") is own


def test_finite_checks_cover_the_first_row_and_each_file(tmp_path):
    import os

    X = np.ones((5, 2), np.float32)
    X[0, 0] = np.nan
    np.save(tmp_path / "a.npy", X)
    with pytest.raises(CorruptFileError, match="row 1, column 1 is nan"):
        bmod._check_finite(tmp_path / "a.npy", X)
    good = np.ones((5, 2), np.float32)
    np.save(tmp_path / "g.npy", good)
    np.save(tmp_path / "h.npy", X)
    st = (tmp_path / "g.npy").stat()
    os.utime(tmp_path / "h.npy", ns=(st.st_atime_ns, st.st_mtime_ns))  # the same size and time: another file
    bmod._check_finite(tmp_path / "g.npy", good)
    with pytest.raises(CorruptFileError, match="row 1, column 1 is nan"):
        bmod._check_finite(tmp_path / "h.npy", X)


def test_sparse_observations_are_checked_without_making_them_dense(monkeypatch):
    """A wide label set (a million rows, 10,000 labels) must never be made dense to be checked."""
    Z = SparseLabels.from_dense(np.array([[1, 0, 0], [0, 1, -1]], np.int8))

    def no_dense(self, *a, **k):
        raise AssertionError("made dense")

    monkeypatch.setattr(SparseLabels, "__array__", no_dense)
    for regime in ("single_positive", "full", "observed", None):
        try:
            bmod.check_observations(Z, "z", regime)
        except CorruptFileError:
            pass


def test_the_first_bad_observation_is_named_and_own_data_has_no_background_by_default():
    Z = np.array([[1, -1, 0], [0, 1, 2]], np.int8)
    with pytest.raises(CorruptFileError, match="row 2, column 3 holds 2"):
        bmod.check_observations(Z, "z")
    empty = np.array([[1, 0], [0, 0]], np.int8)
    with pytest.raises(CorruptFileError, match="1 example\\(s\\) without any observation .* declares 0 background"):
        bmod.check_observations(empty, "z", "observed")


def test_a_verified_checksum_is_remembered_for_its_own_file_only(tmp_path):
    import os

    a, c = tmp_path / "a.npy", tmp_path / "c.npy"
    np.save(a, np.arange(5))
    np.save(c, np.arange(5) + 1)  # the same size
    os.utime(c, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns))  # and the same time
    good = hashlib.sha256(a.read_bytes()).hexdigest()
    bmod._verify_checksum(a, good)
    with pytest.raises(CorruptFileError, match=f"{c}: checksum mismatch"):
        bmod._verify_checksum(c, good)


def test_a_pipe_in_place_of_a_bundle_array_is_refused_not_read(toy_bundle):
    """The reader rule inside a bundle: a FIFO where an array was is one line (checking its
    checksum would otherwise wait on the pipe forever)."""
    import os

    import pytest

    from spmlkit.errors import DataFormatError

    target = toy_bundle.path / "train" / "X.npy"  # (the bundle opened already: its files were there)
    target.unlink()
    os.mkfifo(target)
    with pytest.raises(DataFormatError, match="not a regular file"):
        toy_bundle.features("train")
