"""File output and input (spmlkit.io): atomic writes, JSON and JSON-lines, checksums,
numpy and torch files read without unpickling, lock files.  Output folders: see
tests/ownership/."""
import hashlib
import json
import os
import re

import numpy as np
import pytest
import torch

from spmlkit import io
from spmlkit.errors import ConfigError, CorruptFileError, DataFormatError


def test_atomic_path_leaves_the_target_untouched_on_failure(tmp_path):
    target = tmp_path / "sub" / "x.txt"
    io.write_text(target, "old")
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError
    assert target.read_text() == "old" and sorted(p.name for p in target.parent.iterdir()) == ["x.txt"]
    io.write_bytes(target, b"new")
    assert target.read_bytes() == b"new" and oct(target.stat().st_mode & 0o777) != oct(0o600)  # not mkstemp's 0600


def test_json_round_trip_with_numpy_values_and_a_one_line_error(tmp_path):
    io.write_json(tmp_path / "a.json", {"n": np.int64(3), "x": np.float32(0.5), "v": np.arange(2), "p": tmp_path})
    assert io.read_json(tmp_path / "a.json") == {"n": 3, "x": 0.5, "v": [0, 1], "p": str(tmp_path)}
    (tmp_path / "bad.json").write_text('{"a": 1,\n "b": }\n')
    with pytest.raises(DataFormatError, match=r"bad.json, line 2: invalid JSON: Expecting value"):
        io.read_json(tmp_path / "bad.json")
    with pytest.raises(TypeError, match="not JSON serialisable: object"):
        io.dumps_json({"o": object()})


def test_compressed_json_round_trip_same_bytes_and_one_line_errors(tmp_path):
    """Run records are stored gzip-compressed (issue 38): read back by read_json, the same
    object gives the same bytes (no time or name in the archive), a damaged archive is one
    line naming the file."""
    import gzip

    obj = {"runs": [{"x": np.float32(0.25), "v": np.arange(3)}], "nan": float("nan")}
    io.write_json_gz(tmp_path / "r.json.gz", obj)
    data = (tmp_path / "r.json.gz").read_bytes()
    assert gzip.decompress(data).decode() == io.dumps_json(obj)
    back = io.read_json(tmp_path / "r.json.gz")
    assert back["runs"] == [{"x": 0.25, "v": [0, 1, 2]}] and back["nan"] != back["nan"]
    io.write_json_gz(tmp_path / "again.json.gz", obj)
    assert (tmp_path / "again.json.gz").read_bytes() == data and data[4:8] == b"\0\0\0\0"  # gzip's MTIME field
    for bad in (b"{}", data[:20], gzip.compress(b'{"a": }')):
        (tmp_path / "bad.json.gz").write_bytes(bad)
        with pytest.raises(DataFormatError) as err:
            io.read_json(tmp_path / "bad.json.gz")
        assert str(err.value).startswith(str(tmp_path / "bad.json.gz")) and "\n" not in str(err.value)
    with pytest.raises(FileNotFoundError):
        io.read_json(tmp_path / "missing.json.gz")


def test_json_record_path_prefers_the_compressed_record(tmp_path):
    """``F/runs.json`` names a record: ``runs.json.gz`` when there, else a plain
    ``runs.json`` (written before records were compressed), else where a new one goes."""
    rec = tmp_path / "runs.json"
    assert io.json_record_path(rec) == tmp_path / "runs.json.gz"
    with pytest.raises(FileNotFoundError):
        io.read_json_record(rec)
    io.write_json(rec, {"old": True})
    assert io.json_record_path(rec) == rec and io.read_json_record(rec) == {"old": True}
    io.write_json_gz(tmp_path / "runs.json.gz", {"new": True})
    for name in ("runs.json", "runs.json.gz"):
        assert io.json_record_path(tmp_path / name) == tmp_path / "runs.json.gz"
        assert io.read_json_record(tmp_path / name) == {"new": True}


def test_jsonl_reader_stops_at_a_partial_or_foreign_line(tmp_path):
    f = tmp_path / "m.jsonl"
    assert io.read_jsonl(f) == []
    io.append_jsonl(f, {"epoch": 1})
    io.append_jsonl(f, {"epoch": 2})
    with open(f, "a") as fh:
        fh.write('{"epoch": 3')  # a writer killed mid-line
    assert io.read_jsonl(f) == [{"epoch": 1}, {"epoch": 2}]
    f.write_text('{"epoch": 1}\n\n[1, 2]\n{"epoch": 2}\n')
    assert io.read_jsonl(f) == [{"epoch": 1}]


def test_checksums(tmp_path):
    data = os.urandom(3000)
    (tmp_path / "b").write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    assert io.sha256_file(tmp_path / "b", chunk=1000) == io.sha256_bytes(data) == want
    assert io.torch_save_atomic({"w": torch.ones(2)}, tmp_path / "w.pt") == io.sha256_file(tmp_path / "w.pt")


def test_numpy_input_is_never_unpickled(tmp_path):
    io.save_npy(tmp_path / "a.npy", np.arange(6).reshape(2, 3))
    assert io.load_numpy(tmp_path / "a.npy", mmap=True).tolist() == [[0, 1, 2], [3, 4, 5]]
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(DataFormatError, match="holds Python objects .* spmlkit never unpickles input files"):
        io.load_numpy(tmp_path / "o.npy")
    (tmp_path / "t.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(DataFormatError, match="t.npy: not a readable numpy file"):
        io.load_numpy(tmp_path / "t.npy")
    with pytest.raises(DataFormatError, match="missing.npy: file not found"):
        io.load_numpy(tmp_path / "missing.npy")


def test_torch_files_with_python_objects_are_refused(tmp_path):
    torch.save({"w": torch.zeros(1)}, tmp_path / "ok.pt")
    assert torch.equal(io.safe_torch_load(tmp_path / "ok.pt")["w"], torch.zeros(1))
    torch.save({"f": os.getcwd}, tmp_path / "payload.pt")  # a pickled global
    with pytest.raises(CorruptFileError, match="refused to load: it holds Python objects"):
        io.safe_torch_load(tmp_path / "payload.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "ok.pt").read_bytes()[:40])
    with pytest.raises(CorruptFileError, match="cut.pt: cannot be loaded"):
        io.safe_torch_load(tmp_path / "cut.pt")


def test_a_second_writer_of_a_folder_is_refused(tmp_path):
    with io.FolderLock(tmp_path):
        assert (tmp_path / ".spml.lock").read_text() == f"pid {os.getpid()}\n"
        with pytest.raises(ConfigError, match=f"is in use by another spml process \\(pid {os.getpid()}\\)"):
            io.FolderLock(tmp_path).acquire()
    with io.FolderLock(tmp_path):  # released: free again
        pass
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / ".spml.lock").write_text("the user's notes")
    with pytest.raises(ConfigError, match="holds something other than spmlkit's lock"):
        io.FolderLock(tmp_path / "x").acquire()
    assert (tmp_path / "x" / ".spml.lock").read_text() == "the user's notes"


def test_release_never_removes_another_holders_lock_file(tmp_path):
    """``remove=True`` deletes the lock file on release only while it is still the file this
    holder locked.  Here the first holder's file is deleted from under it (by hand, say)
    and a second process locks a new one: the first holder's release must leave the
    second's file alone, or a third process locks a fresh file while the second still
    writes — two writers in one folder."""
    path = tmp_path / "b.lock"
    first = io.FolderLock(tmp_path, lock_file=path, remove=True).acquire()
    path.unlink()
    second = io.FolderLock(tmp_path, lock_file=path, remove=True).acquire()  # a new file: free
    first.release()
    assert path.exists(), "the first holder removed the second holder's lock file"
    with pytest.raises(ConfigError, match="is in use by another spml process"):
        io.FolderLock(tmp_path, lock_file=path, remove=True).acquire()
    second.release()
    assert not path.exists()  # its own file: removed
    io.FolderLock(tmp_path, lock_file=path, remove=True).acquire().release()  # and free again


def test_safe_filename():
    assert io.safe_filename("coco/2014 val:x.y-z") == "coco_2014_val_x.y-z"


def test_atomic_temporaries_carry_spmlkits_signature(tmp_path):
    """'.NAME.spml-XXXXXXXX.tmp': the name spmlkit.ownership recognises a killed writer's temporary by."""
    seen = []
    with io.atomic_path(tmp_path / "x.json", before_replace=lambda t: seen.append(t.name)) as tmp:
        tmp.write_text("{}")
    assert seen and seen[0].startswith(".x.json.spml-") and seen[0].endswith(".tmp")


def test_a_shared_lock_admits_shared_holders_only(tmp_path):
    with io.FolderLock(tmp_path, shared=True), io.FolderLock(tmp_path, shared=True):
        with pytest.raises(ConfigError, match="in use"):
            io.FolderLock(tmp_path).acquire()
    io.FolderLock(tmp_path).acquire().release()


def test_check_input_paths(tmp_path):
    from spmlkit.io import check_input_paths

    f = tmp_path / "data.csv"
    f.write_text("x\n")
    check_input_paths([None, f, tmp_path, tmp_path / "not-yet"])  # files, folders, absent paths: fine
    with pytest.raises(ConfigError, match=r"^/dev/null: not a regular file or folder \(a device"):
        check_input_paths([f, "/dev/null"])


# ------------------------------------------------------------- issue 39: gaps of io's mutation run
def test_atomic_writes_create_parents_name_their_temporary_and_follow_the_umask(tmp_path):
    target = tmp_path / "a" / "b" / "x.txt"
    seen = []
    with io.atomic_path(target) as tmp:
        seen.append(tmp)
        assert tmp.parent == target.parent and tmp.name.startswith(".x.txt.") and tmp.name.endswith(".tmp")
        tmp.write_text("new")
    assert target.read_text() == "new" and not seen[0].exists()
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask
    io.append_jsonl(tmp_path / "c" / "d" / "m.jsonl", {"v": np.float32(0.5), "name": "Pōhutukawa"})
    assert io.read_jsonl(tmp_path / "c" / "d" / "m.jsonl") == [{"v": 0.5, "name": "Pōhutukawa"}]


def test_stale_temporaries_and_private_scratch_folders(tmp_path):
    from spmlkit import ownership  # (stale temporaries are removed by the ownership module: issue 33)

    out = ownership.claim(tmp_path / "o", "run")
    ownership.mkdir(out / "sub")
    (out / ".x.npy.spml-abc.tmp").write_text("half")
    (out / "keep.tmp").write_text("not ours: no leading dot")
    (out / ".hidden").write_text("not a temporary")
    (out / ".draft.abc.tmp").write_text("not ours: no spml- signature")
    (out / "sub" / ".y.json.spml-q.tmp").write_text("half")
    assert ownership.remove_stale_temporaries(out) == 1
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".spml")) == [
        ".draft.abc.tmp", ".hidden", "keep.tmp", "sub"]
    assert ownership.remove_stale_temporaries(out, recursive=True) == 1 and not any((out / "sub").iterdir())
    assert ownership.remove_stale_temporaries(tmp_path / "missing") == 0
    d = io.mkdtemp_like_umask("spml-x-", tmp_path)
    mask = os.umask(0)
    os.umask(mask)
    assert d.parent == tmp_path and d.name.startswith("spml-x-") and d.stat().st_mode & 0o777 == 0o777 & ~mask


def test_numpy_reads_mmap_only_when_asked_and_npz_members_are_checked(tmp_path):
    io.save_npy(tmp_path / "a.npy", np.arange(4))
    plain = io.load_numpy(tmp_path / "a.npy")
    assert type(plain) is np.ndarray and not isinstance(plain, np.memmap)
    mapped = io.load_numpy(tmp_path / "a.npy", mmap=True)
    assert isinstance(mapped, np.memmap) and mapped.mode == "r"
    np.savez(tmp_path / "z.npz", ok=np.arange(3), bad=np.array([{"a": 1}], dtype=object))
    with np.load(tmp_path / "z.npz", allow_pickle=False) as z:
        assert io.npz_array(z, "ok", tmp_path / "z.npz").tolist() == [0, 1, 2]
        with pytest.raises(DataFormatError) as e:
            io.npz_array(z, "bad", tmp_path / "z.npz")
        assert str(e.value) == (f"{tmp_path / 'z.npz'}: array 'bad' holds Python objects (an object array); spmlkit "
                                "never unpickles input files — save plain numeric arrays")
        with pytest.raises(KeyError):
            io.npz_array(z, "missing", tmp_path / "z.npz")
    with pytest.raises(DataFormatError) as e:
        io.load_numpy(tmp_path / "none.npy")
    assert str(e.value) == f"{tmp_path / 'none.npy'}: file not found"


def test_torch_files_load_to_the_requested_device(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "w.pt")
    assert io.safe_torch_load(tmp_path / "w.pt")["w"].device.type == "cpu"
    assert io.safe_torch_load(tmp_path / "w.pt", map_location="meta")["w"].device.type == "meta"
    (tmp_path / "d.pt").mkdir()
    with pytest.raises(CorruptFileError, match=r"d.pt: cannot be read \(Is a directory\)$"):
        io.safe_torch_load(tmp_path / "d.pt")


def test_output_folders_new_empty_legacy_and_the_option_named(tmp_path):
    from spmlkit import ownership  # (output folders are claimed by the ownership module: issue 33)

    out = ownership.claim(tmp_path / "n" / "e" / "w", "demo")
    assert out.is_dir() and ownership.folder_kind(out) == "demo"  # parents created, marked
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ownership.claim(empty, "bench", create=False) == empty
    assert not (empty / ownership.MARKER).exists()  # create=False: only checked
    ownership.register_kind("io-test-legacy", "an io test folder", is_ours=lambda p: (p / "runs.json").exists(),
                            layout=("runs.json",))
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "runs.json").write_text("{}")
    assert ownership.claim(legacy, "io-test-legacy") == legacy and ownership.foreign(legacy) == []
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("x")
    with pytest.raises(ConfigError) as e:
        ownership.claim(mine, "io-test-legacy", option="--out-dir")
    assert str(e.value) == (f"refusing to write into {mine}: it holds files that are not an io test folder written "
                            "by spmlkit (no spmlkit marker); choose a new (or empty) folder with --out-dir")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError) as e:
        ownership.claim(tmp_path / "file", "bench")
    assert str(e.value) == f"-o/--out {tmp_path / 'file'} is a file; expected a folder (a new one, or one spmlkit wrote)"


def test_lock_files_that_are_not_ours_are_refused_exactly(tmp_path):
    (tmp_path / "target").write_text("x")
    link = tmp_path / "l"
    link.mkdir()
    (link / ".spml.lock").symlink_to(tmp_path / "target")
    with pytest.raises(ConfigError) as e:
        io.FolderLock(link).acquire()
    assert str(e.value) == (f"{link / '.spml.lock'}: is a symbolic link, not spmlkit's lock file; refusing to follow "
                            "it (remove the link, or choose another -o)")
    hard = tmp_path / "h"
    hard.mkdir()
    os.link(tmp_path / "target", hard / ".spml.lock")
    with pytest.raises(ConfigError) as e:
        io.FolderLock(hard).acquire()
    assert str(e.value) == (f"{hard / '.spml.lock'}: is not spmlkit's lock file (a hard link to another file); refusing "
                            "to use it (remove it, or choose another -o)")
    d = tmp_path / "d"
    (d / ".spml.lock").mkdir(parents=True)
    with pytest.raises(Exception) as e:
        io.FolderLock(d).acquire()
    assert "not spmlkit's lock file" in str(e.value) or "Is a directory" in str(e.value)
    big = tmp_path / "big"
    big.mkdir()
    (big / ".spml.lock").write_text("pid " + "1" * 29)  # 33 bytes of digits: not a lock spmlkit wrote
    with pytest.raises(ConfigError) as e:
        io.FolderLock(big).acquire()
    assert str(e.value) == (f"{big / '.spml.lock'}: holds something other than spmlkit's lock ('pid N'); refusing to "
                            "overwrite it (move it away, or choose another -o)")
    ok = tmp_path / "ok"
    ok.mkdir()
    (ok / ".spml.lock").write_text("pid " + "1" * 27 + "\n")  # 32 bytes: a (stale) lock of ours
    with io.FolderLock(ok):
        assert (ok / ".spml.lock").read_text() == f"pid {os.getpid()}\n"
    with pytest.raises(FileNotFoundError):  # a lock never makes its folder (spmlkit.ownership does, checked)
        io.FolderLock(tmp_path / "new" / "deep").acquire()
    empty = tmp_path / "e"
    empty.mkdir()
    with io.FolderLock(empty):
        (empty / ".spml.lock").write_text("")  # a holder that wrote nothing yet
        with pytest.raises(ConfigError) as e:
            io.FolderLock(empty).acquire()
        assert str(e.value) == (f"{empty} is in use by another spml process (another process); wait for it to "
                                "finish or choose another -o")


# ---------------------------------------------- issue 39: survivors of io's second mutation run
def test_a_failed_write_names_the_file_being_written_and_leaves_it_untouched(tmp_path):
    """A write that fails inside ``atomic_path`` is reported against the user's path (not the
    hidden temporary): numpy's short write (no errno) as EIO with the likely cause, an error
    naming the temporary or nothing with the path, an error about another file unchanged."""
    import errno

    target = tmp_path / "x.npy"
    io.write_text(target, "old")

    def fail(exc_for_tmp):
        with pytest.raises(OSError) as err:
            with io.atomic_path(target) as tmp:
                tmp.write_text("half")
                raise exc_for_tmp(tmp)
        assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]
        return err.value

    e = fail(lambda tmp: OSError("100 requested and 10 written"))
    assert (e.errno, e.filename) == (errno.EIO, str(target))
    assert e.strerror == ("write failed (100 requested and 10 written): the disk is full or a file size limit "
                          "(ulimit -f) was reached")
    e = fail(lambda tmp: OSError(errno.ENOSPC, "No space left on device", str(tmp)))
    assert (e.errno, e.strerror, e.filename) == (errno.ENOSPC, "No space left on device", str(target))
    e = fail(lambda tmp: OSError(errno.ENOSPC, "No space left on device"))
    assert (e.errno, e.strerror, e.filename) == (errno.ENOSPC, "No space left on device", str(target))
    e = fail(lambda tmp: OSError(errno.EACCES, "Permission denied", "/elsewhere/input.csv"))
    assert (e.errno, e.strerror, e.filename) == (errno.EACCES, "Permission denied", "/elsewhere/input.csv")
    # the temporary already gone (the body removed it) when the body fails: its error, not a FileNotFoundError
    with pytest.raises(RuntimeError, match="the body's own error"):
        with io.atomic_path(target) as tmp:
            tmp.unlink()
            raise RuntimeError("the body's own error")
    assert target.read_text() == "old"


def test_a_failed_append_names_the_file(tmp_path, monkeypatch):
    import errno

    f = tmp_path / "m.jsonl"

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as err:
        io.append_jsonl(f, {"epoch": 1})
    assert (err.value.errno, err.value.strerror, err.value.filename) == (errno.ENOSPC, "No space left on device",
                                                                          str(f))

    def named(fd):
        raise OSError(errno.EIO, "Input/output error", "/dev/sdz")

    monkeypatch.setattr(os, "fsync", named)
    with pytest.raises(OSError) as err:
        io.append_jsonl(f, {"epoch": 2})
    assert err.value.filename == "/dev/sdz"


def test_json_is_written_indented_in_the_given_order_with_nan_and_dataclasses():
    """Run records are read by people and diffed: two-space indent, keys in the order
    written (not sorted), NaN kept (a metric that is undefined), dataclasses as objects."""
    from dataclasses import dataclass

    @dataclass
    class Cfg:
        lr: float
        method: str

    assert io.dumps_json({"b": 1, "a": [float("nan")]}) == '{\n  "b": 1,\n  "a": [\n    NaN\n  ]\n}\n'
    assert json.loads(io.dumps_json({"cfg": Cfg(0.1, "an")})) == {"cfg": {"lr": 0.1, "method": "an"}}


def test_arrays_are_never_saved_pickled_and_torch_files_hold_the_object(tmp_path):
    with pytest.raises(ValueError):
        io.save_npy(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object))
    assert not (tmp_path / "o.npy").exists() and list(tmp_path.iterdir()) == []
    digest = io.torch_save_atomic({"w": torch.arange(3)}, tmp_path / "w.pt")
    assert torch.equal(torch.load(tmp_path / "w.pt", weights_only=True)["w"], torch.arange(3))
    assert digest == hashlib.sha256((tmp_path / "w.pt").read_bytes()).hexdigest()
    io.write_text(tmp_path / "t.txt", "Pōhutukawa")
    assert (tmp_path / "t.txt").read_bytes() == "Pōhutukawa".encode("utf-8")


@pytest.mark.parametrize("msg", [
    "Object arrays cannot be loaded when allow_pickle=False",  # numpy >= 1.16.3
    "Object arrays cannot be loaded",
    "cannot load a file with allow_pickle disabled",
    "This file contains pickled (object) data",
    "the array holds Python objects",
])
def test_every_numpy_wording_of_a_pickle_is_refused_as_python_objects(tmp_path, monkeypatch, msg):
    """numpy's versions word the refusal of an object array differently; each is one line
    that says the file holds Python objects, naming the file."""
    def refuse(*a, **k):
        raise ValueError(msg + "\nsecond line")

    np.save(tmp_path / "o.npy", np.zeros(2))  # (a regular file: the reader rule checks it first)
    monkeypatch.setattr(np, "load", refuse)
    with pytest.raises(DataFormatError) as e:
        io.load_numpy(tmp_path / "o.npy")
    assert str(e.value) == (f"{tmp_path / 'o.npy'}: holds Python objects (an object array); spmlkit never unpickles "
                            "input files — save plain numeric arrays")


def test_unreadable_numpy_files_say_why_in_one_line(tmp_path, monkeypatch):
    (tmp_path / "empty.npy").write_bytes(b"")
    with pytest.raises(DataFormatError) as e:
        io.load_numpy(tmp_path / "empty.npy")
    assert str(e.value) == f"{tmp_path / 'empty.npy'}: not a readable numpy file (No data left in file)"
    (tmp_path / "dir.npy").mkdir()
    with pytest.raises(DataFormatError) as e:
        io.load_numpy(tmp_path / "dir.npy")
    assert str(e.value) == f"{tmp_path / 'dir.npy'}: is a folder, not a regular file; give a data file"
    np.save(tmp_path / "v.npy", np.zeros(2))
    monkeypatch.setattr(np, "load", lambda *a, **k: (_ for _ in ()).throw(ValueError("")))
    with pytest.raises(DataFormatError) as e:
        io.load_numpy(tmp_path / "v.npy")
    assert str(e.value) == f"{tmp_path / 'v.npy'}: not a readable numpy file ()"


def test_damaged_npz_members_are_one_line_errors(tmp_path):
    """A damaged member of an archive (zipfile's BadZipFile: a CRC error) is one line."""
    np.savez(tmp_path / "z.npz", x=np.arange(1000))
    data = bytearray((tmp_path / "z.npz").read_bytes())
    data[200] ^= 0xFF  # inside the member's data: a CRC error when it is read
    (tmp_path / "z.npz").write_bytes(bytes(data))
    with np.load(tmp_path / "z.npz", allow_pickle=False) as z:
        with pytest.raises(DataFormatError) as e:
            io.npz_array(z, "x", tmp_path / "z.npz")
    assert str(e.value).startswith(f"{tmp_path / 'z.npz'}: array 'x' cannot be read (") and "\n" not in str(e.value)


def test_a_torch_file_with_a_class_is_refused_naming_the_global(tmp_path):
    import fractions

    torch.save({"f": fractions.Fraction(1, 3)}, tmp_path / "c.pt")
    with pytest.raises(CorruptFileError) as e:
        io.safe_torch_load(tmp_path / "c.pt")
    assert str(e.value) == (f"{tmp_path / 'c.pt'}: refused to load: it holds Python objects other than tensors and "
                            "plain values (Unsupported global: GLOBAL fractions.Fraction); spmlkit never unpickles "
                            "them — delete the file if you did not write it")
    torch.save({"f": os.getcwd}, tmp_path / "g.pt")
    with pytest.raises(CorruptFileError) as e:
        io.safe_torch_load(tmp_path / "g.pt")
    assert "values (Trying to load unsupported GLOBAL posix.getcwd whose module posix is blocked.); " in str(e.value)


def test_torch_load_failures_without_a_named_global_or_message(tmp_path, monkeypatch):
    import pickle

    torch.save({"w": torch.zeros(1)}, tmp_path / "ok.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "ok.pt").read_bytes()[:40])
    with pytest.raises(CorruptFileError) as e:
        io.safe_torch_load(tmp_path / "cut.pt")
    assert str(e.value).startswith(f"{tmp_path / 'cut.pt'}: cannot be loaded (RuntimeError: ")
    monkeypatch.setattr(torch, "load", lambda *a, **k: (_ for _ in ()).throw(pickle.UnpicklingError("bad opcode")))
    with pytest.raises(CorruptFileError) as e:
        io.safe_torch_load(tmp_path / "ok.pt")
    assert "plain values (not a weights-only file); " in str(e.value)
    monkeypatch.setattr(torch, "load", lambda *a, **k: (_ for _ in ()).throw(ValueError("")))
    with pytest.raises(CorruptFileError) as e:
        io.safe_torch_load(tmp_path / "ok.pt")
    assert str(e.value) == f"{tmp_path / 'ok.pt'}: cannot be loaded (ValueError: )"


def test_a_lock_file_is_kept_unless_asked_and_follows_the_umask(tmp_path):
    lock = io.FolderLock(tmp_path).acquire()
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / ".spml.lock").stat().st_mode & 0o777 == 0o666 & ~mask
    lock.release()
    lock.release()  # a second release is a no-op
    io.FolderLock(tmp_path / "never").release()  # and so is releasing a lock never acquired
    assert (tmp_path / ".spml.lock").exists()  # remove=False (the default): the file stays
    io.FolderLock(tmp_path).acquire().release()  # and is free


def test_a_lock_file_removed_by_its_holder_while_waiting_is_retried(tmp_path, monkeypatch):
    """A holder with ``remove=True`` deletes the lock file as it releases: a process that
    opened the old file and then got its lock must lock the new file, else two processes
    hold 'the' lock at once (one on a deleted file)."""
    import fcntl

    real = fcntl.flock
    path = tmp_path / "b.lock"
    calls = []

    def flock_then_vanish(fd, op):
        real(fd, op)
        calls.append(op)
        if len(calls) == 1 and path.exists():
            path.unlink()  # the previous holder's release, between our open and our lock

    monkeypatch.setattr(fcntl, "flock", flock_then_vanish)
    lock = io.FolderLock(tmp_path, lock_file=path).acquire()
    monkeypatch.setattr(fcntl, "flock", real)
    assert len(calls) == 2 and path.exists()
    assert os.path.samestat(os.fstat(lock._fd), os.stat(path))
    with pytest.raises(ConfigError, match="in use"):
        io.FolderLock(tmp_path, lock_file=path).acquire()
    lock.release()


def test_a_lock_file_that_keeps_changing_is_refused(tmp_path, monkeypatch):
    import fcntl

    real = fcntl.flock
    path = tmp_path / "b.lock"
    calls = []

    def flock_then_vanish(fd, op):
        real(fd, op)
        calls.append(op)
        path.unlink()

    monkeypatch.setattr(fcntl, "flock", flock_then_vanish)
    with pytest.raises(ConfigError) as e:
        io.FolderLock(tmp_path, lock_file=path).acquire()
    assert len(calls) == 20
    assert str(e.value) == f"{path}: keeps changing; is another spml process using {tmp_path}?"


def test_an_environment_that_turns_torchs_safe_loading_off_does_not_turn_spmlkits_off(tmp_path, monkeypatch):
    """``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` makes ``torch.load`` unpickle whenever the caller
    did not say ``weights_only`` itself: spmlkit always says it, so a pickled global is still
    refused (and nothing in it runs)."""
    torch.save({"f": os.getcwd}, tmp_path / "payload.pt")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(CorruptFileError, match="refused to load: it holds Python objects"):
        io.safe_torch_load(tmp_path / "payload.pt")


def test_a_link_put_at_the_lock_path_is_never_taken_for_the_lock(tmp_path, monkeypatch):
    """Someone moves the lock file away and puts a symbolic link to it at its path: the
    link is not spmlkit's lock file — acquiring refuses it, and a holder's release
    (``remove=True``) leaves the link alone."""
    import fcntl

    path = tmp_path / "b.lock"
    holder = io.FolderLock(tmp_path, lock_file=path, remove=True).acquire()
    os.rename(path, tmp_path / "moved.lock")
    os.symlink(tmp_path / "moved.lock", path)
    holder.release()
    assert path.is_symlink() and (tmp_path / "moved.lock").exists()
    os.unlink(path)
    real = fcntl.flock

    def flock_then_swap(fd, op):
        real(fd, op)
        if not path.is_symlink():
            os.rename(path, tmp_path / "moved2.lock")
            os.symlink(tmp_path / "moved2.lock", path)

    monkeypatch.setattr(fcntl, "flock", flock_then_swap)
    with pytest.raises(ConfigError, match="is a symbolic link, not spmlkit's lock file"):
        io.FolderLock(tmp_path, lock_file=path).acquire()


def test_releasing_a_lock_whose_file_is_gone_is_quiet(tmp_path):
    lock = io.FolderLock(tmp_path, remove=True).acquire()
    (tmp_path / ".spml.lock").unlink()
    lock.release()
    assert not (tmp_path / ".spml.lock").exists()


def test_every_input_path_is_checked_after_an_absent_one(tmp_path):
    with pytest.raises(ConfigError, match="/dev/null: not a regular file"):
        io.check_input_paths([None, "/dev/null"])


def test_a_pipe_at_the_lock_path_is_refused(tmp_path):
    os.mkfifo(tmp_path / ".spml.lock")
    with pytest.raises(ConfigError) as e:
        io.FolderLock(tmp_path).acquire()
    assert str(e.value) == (f"{tmp_path / '.spml.lock'}: is not spmlkit's lock file (not a regular file); refusing to "
                            "use it (remove it, or choose another -o)")


def test_jsonl_reading_skips_blank_lines_and_stops_at_the_first_broken_one(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text('{"a": 1}\n\n   \n{"a": 2}\n')
    assert io.read_jsonl(f) == [{"a": 1}, {"a": 2}]
    f.write_text('{"a": 1}\n{"a": \n{"a": 3}\n')  # nothing after a broken line is trusted
    assert io.read_jsonl(f) == [{"a": 1}]


def test_a_blocking_lock_waits_for_its_holder_and_a_busy_message_names_it(tmp_path):
    import threading
    import time

    holder = io.FolderLock(tmp_path).acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(io.FolderLock(tmp_path, block=True).acquire()))
    t.start()
    time.sleep(0.3)
    assert not got  # still waiting
    holder.release()
    t.join(10)
    assert got and (tmp_path / ".spml.lock").read_text() == f"pid {os.getpid()}\n"
    with pytest.raises(ConfigError) as e:
        io.FolderLock(tmp_path, busy="{folder} is busy ({holder})").acquire()
    assert str(e.value) == f"{tmp_path} is busy (pid {os.getpid()})"
    got[0].release()


# ------------------------------------- issue 39: survivors of io's third mutation run (killed here)
def test_an_error_with_a_number_but_no_text_keeps_its_message(tmp_path, monkeypatch):
    import errno

    def numbered(text):
        e = OSError(text)
        e.errno = errno.EIO  # a number, no strerror: the exception's own words are kept
        return e

    with pytest.raises(OSError) as err:
        with io.atomic_path(tmp_path / "x.bin"):
            raise numbered("the device went away")
    assert (err.value.errno, err.value.strerror, err.value.filename) == (errno.EIO, "the device went away",
                                                                          str(tmp_path / "x.bin"))

    def fsync(fd):
        raise numbered("the device went away")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError) as err:
        io.append_jsonl(tmp_path / "m.jsonl", {"a": 1})
    assert (err.value.strerror, err.value.filename) == ("the device went away", str(tmp_path / "m.jsonl"))


def test_a_compressed_record_path_is_its_own_record(tmp_path):
    assert io.json_record_path(tmp_path / "runs.json.gz") == tmp_path / "runs.json.gz"  # nothing there yet
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip")
    with pytest.raises(DataFormatError) as e:
        io.read_json(tmp_path / "bad.json.gz")
    assert str(e.value).startswith(f"{tmp_path / 'bad.json.gz'}: not a readable gzip-compressed JSON file (")


def test_numpy_errors_without_words_name_their_kind(tmp_path, monkeypatch):
    np.save(tmp_path / "a.npy", np.zeros(2))
    monkeypatch.setattr(np, "load", lambda *a, **k: (_ for _ in ()).throw(EOFError()))
    with pytest.raises(DataFormatError) as e:
        io.load_numpy(tmp_path / "a.npy")
    assert str(e.value) == f"{tmp_path / 'a.npy'}: not a readable numpy file (EOFError)"


class _Archive:
    """An ``np.load``-ed archive whose member raises what numpy raises."""

    def __init__(self, exc):
        self.exc = exc

    def __getitem__(self, key):
        raise self.exc


@pytest.mark.parametrize("exc, said", [
    (ValueError("Object arrays cannot be loaded"), "holds Python objects (an object array); spmlkit never unpickles "
                                                   "input files — save plain numeric arrays"),
    (ValueError("cannot load with allow_pickle=False"), "holds Python objects (an object array); spmlkit never "
                                                        "unpickles input files — save plain numeric arrays"),
    (ValueError("cannot reshape array of size 3 into shape (2,)\nmore"), "cannot be read (cannot reshape array of "
                                                                         "size 3 into shape (2,))"),
    (ValueError(""), "cannot be read ()"),
    (EOFError("truncated member"), "cannot be read (truncated member)"),
])
def test_npz_member_errors_word_for_word(tmp_path, exc, said):
    with pytest.raises(DataFormatError) as e:
        io.npz_array(_Archive(exc), "x", tmp_path / "z.npz")
    assert str(e.value) == f"{tmp_path / 'z.npz'}: array 'x' {said}"


def test_json_files_are_read_as_utf_8_whatever_the_locale(tmp_path):
    """A server in the C locale (ASCII) reads spmlkit's and the user's JSON as UTF-8."""
    import subprocess
    import sys

    (tmp_path / "a.json").write_bytes('{"name": "Pōhutukawa"}'.encode("utf-8"))
    (tmp_path / "a.jsonl").write_bytes('{"name": "Pōhutukawa"}\n'.encode("utf-8"))
    code = ("import sys; from spmlkit import io; "
            "print(ascii(io.read_json(sys.argv[1])), ascii(io.read_jsonl(sys.argv[2])))")
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii"}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.json"), str(tmp_path / "a.jsonl")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["{'name':", "'P\\u014dhutukawa'}", "[{'name':", "'P\\u014dhutukawa'}]"]


def test_a_weights_only_refusal_without_a_global_names_the_opcode(tmp_path, monkeypatch):
    import pickle

    torch.save({"w": torch.zeros(1)}, tmp_path / "w.pt")
    msg = ("Weights only load failed. ...\n\tWeightsUnpickler error: Unsupported operand 149\n\nCheck the "
           "documentation of torch.load")
    monkeypatch.setattr(torch, "load", lambda *a, **k: (_ for _ in ()).throw(pickle.UnpicklingError(msg)))
    with pytest.raises(CorruptFileError) as e:
        io.safe_torch_load(tmp_path / "w.pt")
    assert "plain values (Unsupported operand 149); " in str(e.value)


def test_atomic_path_through_an_opened_folder_never_follows_a_link_swapped_in(tmp_path):
    """``dir_fd``: the temporary file is made, written and renamed inside the folder opened
    before the write; the folder's name swapped for a link meanwhile changes nothing."""
    from spmlkit import io as spml_io

    d, user = tmp_path / "d", tmp_path / "user"
    d.mkdir(), user.mkdir()
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        d.rename(tmp_path / "moved")
        os.symlink(user, d)
        with spml_io.atomic_path(d / "a.txt", dir_fd=fd) as tmp:
            tmp.write_text("new\n")
        with pytest.raises(RuntimeError):
            with spml_io.atomic_path(d / "b.txt", dir_fd=fd) as tmp:
                tmp.write_text("half\n")
                raise RuntimeError("stopped")
    finally:
        os.close(fd)
    assert os.listdir(user) == [] and os.listdir(tmp_path / "moved") == ["a.txt"]
    assert (tmp_path / "moved" / "a.txt").read_text() == "new\n"


# ---- the temporary file of a write through an opened folder (dir_fd), and the fsync's open
def _opened(folder):
    return os.open(folder, os.O_RDONLY | os.O_DIRECTORY)


def test_a_taken_temporary_name_is_skipped_never_opened_through(tmp_path, monkeypatch):
    """``O_EXCL | O_NOFOLLOW``: a name already there (here a link to a user's file) is
    skipped for a fresh one; the user's file is never opened or written."""
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / "victim").write_text("user's\n")
    os.symlink(tmp_path / "victim", d / f".a.txt.spml-{'00' * 5}.tmp")
    draws = iter([b"\x00" * 5, b"\x01" * 5])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    fd = _opened(d)
    try:
        with io.atomic_path(d / "a.txt", dir_fd=fd) as tmp:
            assert tmp.name == f".a.txt.spml-{'01' * 5}.tmp"
            tmp.write_text("new\n")
    finally:
        os.close(fd)
    assert (tmp_path / "victim").read_text() == "user's\n" and (d / "a.txt").read_text() == "new\n"


def test_the_temporary_names_run_out_after_a_hundred_taken_ones(tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    (d / f".a.txt.spml-{'00' * 5}.tmp").write_text("")
    calls = []
    monkeypatch.setattr(os, "urandom", lambda n: calls.append(n) or b"\x00" * n)
    fd = _opened(d)
    try:
        with pytest.raises(FileExistsError) as e:
            io._new_temporary(d / "a.txt", fd)
    finally:
        os.close(fd)
    assert len(calls) == 100
    assert (e.value.errno, e.value.strerror, e.value.filename) == (17, "no unused temporary name", str(d / "a.txt"))


def test_the_temporary_file_is_made_in_the_opened_folder_with_the_usual_permissions(tmp_path, monkeypatch):
    """Made relative to the descriptor (not the working folder), mode 0666 less the umask."""
    d, cwd = tmp_path / "d", tmp_path / "cwd"
    d.mkdir(), cwd.mkdir()
    monkeypatch.chdir(cwd)
    old = os.umask(0o022)
    fd = _opened(d)
    try:
        with io.atomic_path(d / "a.txt", dir_fd=fd) as tmp:
            tmp.write_text("new\n")
    finally:
        os.close(fd)
        os.umask(old)
    assert os.listdir(cwd) == [] and os.listdir(d) == ["a.txt"]
    assert (d / "a.txt").stat().st_mode & 0o777 == 0o644


def test_the_longest_name_its_temporary_allows_is_written(tmp_path):
    """The temporary beside ``NAME`` is ``.NAME.spml-`` + 10 hex digits + ``.tmp``, 21 bytes
    longer than the name: a name up to the file system's longest less 21 bytes is written."""
    d = tmp_path / "d"
    d.mkdir()
    name = "a" * (os.pathconf(d, "PC_NAME_MAX") - 21)
    fd = _opened(d)
    try:
        with io.atomic_path(d / name, dir_fd=fd) as tmp:
            assert re.fullmatch(rf"\.{name}\.spml-[0-9a-f]{{10}}\.tmp", tmp.name)
            tmp.write_text("new\n")
    finally:
        os.close(fd)
    assert os.listdir(d) == [name] and (d / name).read_text() == "new\n"


def test_without_a_descriptor_path_the_temporary_is_named_beside_the_target(tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    monkeypatch.setattr(io, "fd_path", lambda dir_fd, name: None)  # no /proc/self/fd
    fd = _opened(d)
    try:
        tmp, name = io._new_temporary(d / "a.txt", fd)
    finally:
        os.close(fd)
    assert tmp == d / name and tmp.is_file() and name.startswith(".a.txt.spml-")


def test_fd_path_resolves_only_through_an_opened_folder(tmp_path):
    (tmp_path / "f").write_text("")
    fd, ffd = _opened(tmp_path), os.open(tmp_path / "f", os.O_RDONLY)
    try:
        assert io.fd_path(fd, "x") == io.Path(f"/proc/self/fd/{fd}", "x")
        assert io.fd_path(ffd, "x") is None  # a file's descriptor: no folder to resolve through
    finally:
        os.close(fd), os.close(ffd)


def test_a_temporary_swapped_for_a_link_is_never_synced_through_or_renamed_into_place(tmp_path):
    (tmp_path / "victim").write_text("user's\n")
    with pytest.raises(OSError):
        with io.atomic_path(tmp_path / "a.txt") as tmp:
            tmp.write_text("new\n")
            tmp.unlink()
            tmp.symlink_to(tmp_path / "victim")
    assert sorted(os.listdir(tmp_path)) == ["victim"] and (tmp_path / "victim").read_text() == "user's\n"


def test_jsonl_with_bytes_that_are_not_utf8_reads_them_as_replacement_characters(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_bytes(b'{"a": "x\xffy"}\n{"b": 2}\n')
    assert io.read_jsonl(f) == [{"a": "x\ufffdy"}, {"b": 2}]
