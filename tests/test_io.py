"""File output and input (spmlkit.io): atomic writes, JSON and JSON-lines, checksums,
numpy and torch files read without unpickling, and output folders that are never a
folder of the user's."""
import hashlib
import os

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


def test_output_folders_of_the_user_are_refused(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    with pytest.raises(ConfigError, match="refusing to write into .*: it holds files that are not a bench"):
        io.claim_output_folder(mine, kind="bench", what="a bench")
    out = io.claim_output_folder(tmp_path / "new", kind="bench", what="a bench")
    assert io.output_folder_kind(out) == "bench" and io.claim_output_folder(out, kind="bench", what="a bench") == out
    with pytest.raises(ConfigError, match="it holds spmlkit's bench output, not an analysis"):
        (out / "runs.json").write_text("{}")
        io.claim_output_folder(out, kind="analyze", what="an analysis")
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="is a file; expected a folder"):
        io.check_output_folder(tmp_path / "f")
    with pytest.raises(ConfigError, match="it is not a bundle written by spmlkit"):
        io.check_replaceable(mine, is_ours=lambda p: False, what="bundle")
    assert (mine / "notes.txt").read_text() == "the user's"


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


def test_check_input_paths(tmp_path):
    from spmlkit.io import check_input_paths

    f = tmp_path / "data.csv"
    f.write_text("x\n")
    check_input_paths([None, f, tmp_path, tmp_path / "not-yet"])  # files, folders, absent paths: fine
    with pytest.raises(ConfigError, match=r"^/dev/null: not a regular file or folder \(a device"):
        check_input_paths([f, "/dev/null"])
