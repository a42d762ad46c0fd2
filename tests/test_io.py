"""File output and input (spmlkit.io): atomic writes, JSON and JSON-lines, checksums,
numpy and torch files read without unpickling, lock files.  Output folders: see
tests/test_ownership.py."""
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
