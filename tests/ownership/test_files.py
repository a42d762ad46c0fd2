"""spmlkit.ownership.files: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import json
import os

import pytest

from spmlkit import ownership
from spmlkit.errors import ConfigError
from spmlkit.ownership.files import written_by_spmlkit
from tests.helpers.ownership_fs import user, manifest_lines, _permissions_as_for_a_user


def test_single_output_files(tmp_path, user):
    with pytest.raises(ConfigError, match="is an input"):
        ownership.output_file(user / "notes.txt", inputs=[user / "notes.txt"], overwrite=True)
    with pytest.raises(ConfigError, match="lies inside"):
        ownership.output_file(user / "meta.json", inputs=[user], overwrite=True)
    os.symlink(user / "notes.txt", tmp_path / "p.csv")
    with pytest.raises(ConfigError, match="is a symbolic link"):
        ownership.output_file(tmp_path / "p.csv", overwrite=True)
    (tmp_path / "q.csv").write_text("data\n")
    with pytest.raises(ConfigError, match="refusing to replace"):
        ownership.output_file(tmp_path / "q.csv")
    ownership.output_file(tmp_path / "q.csv", overwrite=True)
    with ownership.write_output_file(tmp_path / "q.csv") as tmp:
        tmp.write_text("new\n")
    assert (tmp_path / "q.csv").read_text() == "new\n" and (user / "notes.txt").read_text() == "mine\n"


def test_single_output_files_refusals_and_rechecks(tmp_path):
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(ConfigError) as e:
        ownership.output_file(tmp_path / "dir.csv", what="prediction table")
    assert str(e.value) == f"-o/--out {tmp_path / 'dir.csv'} is a folder; expected the path of the prediction table to write"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ConfigError) as e:
        ownership.output_file(tmp_path / "fifo", overwrite=True)
    assert str(e.value) == f"-o/--out {tmp_path / 'fifo'} is not a regular file; choose another path"
    (tmp_path / "p.csv").write_text("spmlkit's predictions\n")
    with pytest.raises(ConfigError) as e:
        ownership.output_file(tmp_path / "p.csv", what="prediction table", option="--output")
    assert str(e.value) == (f"refusing to replace {tmp_path / 'p.csv'}: it is not a prediction table spmlkit wrote "
                            "(no record of spmlkit's names it: .p.csv.spml-file); choose a new file with --output or "
                            "pass --overwrite")
    assert ownership.output_file(tmp_path / "p.csv", overwrite=True) == tmp_path / "p.csv"
    assert ownership.is_checked_file(tmp_path / "p.csv") and not ownership.is_checked_file(tmp_path / "q.csv")
    with pytest.raises(ownership.UnownedPathError):
        with ownership.write_output_file(tmp_path / "q.csv"):
            pass
    with pytest.raises(ConfigError) as e:
        with ownership.replace_file(tmp_path / "p.csv") as tmp:
            tmp.write_text("new\n")
            os.unlink(tmp_path / "p.csv")
            (tmp_path / "p.csv").mkdir()  # became a folder while spmlkit wrote
    assert str(e.value) == (f"{tmp_path / 'p.csv'} became a link, a folder or another file while spmlkit wrote it; "
                            "nothing was replaced")
    assert (tmp_path / "p.csv").is_dir()
    ownership.output_file(tmp_path / "new.csv")
    with ownership.replace_file(tmp_path / "new.csv") as tmp:
        tmp.write_text("n\n")
    assert (tmp_path / "new.csv").read_text() == "n\n"
    out = ownership.claim(tmp_path / "r", "run")
    with ownership.replace_file(out / "inside.csv") as tmp:  # inside an owned folder: listed there
        tmp.write_text("i\n")
    assert manifest_lines(out) == ["f inside.csv"]


def test_single_output_file_messages_name_the_option_and_the_thing(tmp_path, user):
    with pytest.raises(ConfigError) as e:
        ownership.output_file(user / "x.csv", inputs=[user], option="--output")
    assert str(e.value).startswith(f"--output {user / 'x.csv'} lies inside {user}")
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError) as e:
        ownership.output_file(tmp_path / "d")
    assert str(e.value) == f"-o/--out {tmp_path / 'd'} is a folder; expected the path of the file to write"


# ---- the record beside a single output file (.NAME.spml-file): written, read, refused
from spmlkit.ownership import files as _files  # noqa: E402


def _write(path, text):
    with ownership.write_output_file(path) as tmp:
        tmp.write_text(text)


def _record_text(path, **change):
    rec = {"written_by": "spmlkit", "file": path.name, "ident": _files._ident(str(path), os.lstat(path))}
    return json.dumps({**rec, **change})


def test_a_written_file_is_recorded_beside_it_and_then_replaced_without_overwrite(tmp_path):
    p = tmp_path / "p.csv"
    ownership.output_file(p)
    _write(p, "a\n")
    side = tmp_path / ".p.csv.spml-file"
    assert side.read_text() == _record_text(p) + "\n"
    assert json.loads(side.read_text())["ident"].split(":")[:2] == [str(os.lstat(p).st_dev), str(os.lstat(p).st_ino)]
    assert _files.written_by_spmlkit(p)
    _write(p, "b\n")  # again, without a new check: the file spmlkit wrote last is the one expected
    ownership.output_file(p)  # spmlkit's own file: no --overwrite needed
    _write(p, "c\n")
    assert p.read_text() == "c\n" and side.read_text() == _record_text(p) + "\n"
    with open(p, "a") as fh:  # edited by someone since: not spmlkit's any more
        fh.write("theirs\n")
    assert not _files.written_by_spmlkit(p)
    with pytest.raises(ConfigError, match="refusing to replace"):
        ownership.output_file(p)
    ownership.output_file(tmp_path / "q.csv", record=False)
    _write(tmp_path / "q.csv", "q\n")
    assert not (tmp_path / ".q.csv.spml-file").exists()


@pytest.mark.parametrize("case", ["written_by", "file", "not a dict", "not json", "not utf-8", "4097 bytes",
                                  "hard link", "link", "folder"])
def test_a_record_that_does_not_name_the_file_is_not_spmlkits(tmp_path, case):
    p, side = tmp_path / "p.csv", tmp_path / ".p.csv.spml-file"
    p.write_text("data\n")
    text = {"written_by": _record_text(p, written_by="someone"), "file": _record_text(p, file="q.csv"),
            "not a dict": "[1]", "not json": "{", "not utf-8": '{"a": "\xff"}',
            "4097 bytes": _record_text(p)}.get(case, _record_text(p))
    if case == "not utf-8":
        side.write_bytes(text.encode("latin-1"))
    elif case == "link":
        (tmp_path / "elsewhere").write_text(text)
        side.symlink_to(tmp_path / "elsewhere")
    elif case == "folder":
        side.mkdir()
    else:
        side.write_text(text.ljust(4096) + "\n" if case == "4097 bytes" else text)  # (valid JSON in 4096 bytes)
        if case == "hard link":
            os.link(side, tmp_path / "other")
    assert not _files.written_by_spmlkit(p)
    with pytest.raises(ConfigError, match="refusing to replace"):
        ownership.output_file(p)


def test_a_record_of_4096_bytes_is_read_and_a_folder_is_never_a_recorded_file(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("data\n")
    (tmp_path / ".p.csv.spml-file").write_text(_record_text(p).ljust(4096))
    assert _files.written_by_spmlkit(p) and ownership.output_file(p) == p
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / ".d.spml-file").write_text(_record_text(d))
    assert not _files.written_by_spmlkit(d) and not _files.written_by_spmlkit(tmp_path / "missing")


def test_a_record_name_taken_by_something_not_spmlkits_is_refused_before_and_during_the_write(tmp_path, user):
    p, side = tmp_path / "p.csv", tmp_path / ".p.csv.spml-file"
    side.write_text("a user's file\n")
    with pytest.raises(ConfigError) as e:
        ownership.output_file(p, option="--output")
    assert str(e.value) == (f"--output {p}: {side}, where spmlkit records the files it writes, is not spmlkit's; move "
                            "it away")
    assert ownership.output_file(p, record=False) == p  # no record to write: nothing to refuse
    link = tmp_path / "via"
    link.symlink_to(user)  # the folder given through a link of the user's: its record name checked all the same
    (user / ".x.csv.spml-file").write_text("theirs\n")
    with pytest.raises(ConfigError, match="where spmlkit records the files it writes"):
        ownership.output_file(link / "x.csv")
    side.unlink()
    (tmp_path / "elsewhere").write_text(json.dumps({"written_by": "spmlkit", "file": "p.csv"}))
    for made in (lambda: side.write_text("a user's file, made meanwhile\n"),  # no JSON
                 lambda: side.write_text(json.dumps({"written_by": "someone", "file": "p.csv"})),  # another's
                 lambda: side.symlink_to(tmp_path / "elsewhere")):  # a link (to what reads as a record)
        ownership.output_file(p, overwrite=True)
        with pytest.raises(ConfigError) as e:
            with ownership.write_output_file(p) as tmp:
                tmp.write_text("new\n")
                made()
        assert str(e.value) == f"{side}: not spmlkit's; the record of {p} was not written"
        assert os.path.lexists(side) and not _files.written_by_spmlkit(p)
        side.unlink()


def test_a_new_folder_is_made_for_the_file_and_a_folder_replaced_meanwhile_is_refused(tmp_path):
    p = tmp_path / "new" / "p.csv"
    ownership.output_file(p)
    _write(p, "a\n")
    assert p.read_text() == "a\n" and _files.written_by_spmlkit(p)
    q = tmp_path / "new2" / "q.csv"
    ownership.output_file(q)
    q.parent.mkdir()  # made by anyone before the write: the file is new in it all the same
    _write(q, "q\n")
    assert q.read_text() == "q\n"
    r = tmp_path / "d" / "r.csv"
    r.parent.mkdir()
    ownership.output_file(r)
    r.parent.rename(tmp_path / "d-old")
    r.parent.mkdir()
    with pytest.raises(ConfigError) as e:
        _write(r, "r\n")
    assert str(e.value) == f"the folder of {r} was replaced while spmlkit wrote it; nothing was written"
    assert os.listdir(r.parent) == []


def test_the_file_replaced_by_another_meanwhile_is_not_replaced(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("old\n")
    ownership.output_file(p, overwrite=True)
    with pytest.raises(ConfigError, match="became a link, a folder or another file"):
        with ownership.write_output_file(p) as tmp:
            tmp.write_text("new\n")
            p.rename(tmp_path / "p.old")  # (kept: its inode number is not reused)
            p.write_text("someone else's, made meanwhile\n")
    assert p.read_text() == "someone else's, made meanwhile\n"


def test_a_folder_swapped_for_a_link_during_the_write_is_never_written_through(tmp_path, user):
    d = tmp_path / "d"
    d.mkdir()
    ownership.output_file(d / "p.csv")
    with ownership.write_output_file(d / "p.csv") as tmp:
        tmp.write_text("new\n")
        d.rename(tmp_path / "moved")
        d.symlink_to(user)
    assert sorted(os.listdir(user)) == ["notes.txt"]
    moved = tmp_path / "moved" / "p.csv"
    assert moved.read_text() == "new\n" and _files.written_by_spmlkit(moved)


def test_a_record_that_cannot_be_written_is_named_by_its_full_path(tmp_path, monkeypatch):
    import errno

    p = tmp_path / "p.csv"
    p.write_text("a\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    dfd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(OSError) as e:
            _files._write_record(dfd, str(p), "p.csv", os.lstat(p))
    finally:
        os.close(dfd)
    assert (e.value.errno, e.value.filename) == (errno.ENOSPC, str(tmp_path / ".p.csv.spml-file"))
    assert os.listdir(tmp_path) == ["p.csv"]


def test_a_file_in_a_folder_that_cannot_be_read_is_not_taken_for_spmlkits(tmp_path, monkeypatch):
    """A folder with search but no read permission: the file in it is found, the record beside it
    cannot be read, so the file is not known to be spmlkit's and is replaced only with --overwrite."""
    d = tmp_path / "out"
    p = ownership.output_file(d / "pred.csv")
    with ownership.write_output_file(p) as tmp:
        tmp.write_text("a\n")
    assert written_by_spmlkit(p)
    os.chmod(d, 0o311)
    try:
        _permissions_as_for_a_user(monkeypatch)
        assert not written_by_spmlkit(p)
        with pytest.raises(ConfigError, match="refusing to replace"):
            ownership.output_file(p)
    finally:
        os.chmod(d, 0o755)
