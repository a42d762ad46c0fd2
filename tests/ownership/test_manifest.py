"""spmlkit.ownership.manifest: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import json
import os

import pytest

from spmlkit import ownership
from spmlkit.ownership import builds as own_builds, manifest as own_manifest
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import user, _before_open, _to_link, _permissions_as_for_a_user


@pytest.mark.parametrize("marker", [
    '{"written_by": "someone", "kind": "run"}', '{"written_by": "spmlkit", "kind": 3}', '["spmlkit"]', "{not json",
    '{"written_by": "spmlkit", "kind": "run", "pad": "' + "x" * 4100 + '"}', "\xff\xfe"])
def test_a_marker_that_is_not_spmlkits_makes_no_folder_spmlkits(tmp_path, marker):
    d = tmp_path / "d"
    d.mkdir()
    (d / ownership.MARKER).write_bytes(marker.encode("latin-1") if marker == "\xff\xfe" else marker.encode())
    assert ownership.folder_kind(d) is None
    with pytest.raises(ConfigError, match="holds files that are not"):
        ownership.claim(d, "run")


def test_a_marker_that_is_a_link_or_has_two_names_is_not_spmlkits(tmp_path):
    real = ownership.claim(tmp_path / "real", "run")
    (tmp_path / "sym").mkdir()
    os.symlink(real / ownership.MARKER, tmp_path / "sym" / ownership.MARKER)
    assert ownership.folder_kind(tmp_path / "sym") is None and ownership.folder_kind(real) == "run"
    (tmp_path / "hard").mkdir()
    os.link(real / ownership.MARKER, tmp_path / "hard" / ownership.MARKER)
    assert ownership.folder_kind(tmp_path / "hard") is None and ownership.folder_kind(real) is None  # two names


def test_generations_are_read_without_following_links(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    st = os.lstat(f)
    os.symlink(f, tmp_path / "l")
    assert own_manifest._generation(str(tmp_path / "l"), os.lstat(tmp_path / "l")) is None  # a link: none
    assert own_manifest._generation(str(tmp_path / "l"), st) is None  # opened with O_NOFOLLOW: refused
    assert own_manifest._generation(str(f), None) is None
    other = tmp_path / "g"
    other.write_text("y")
    assert own_manifest._generation(str(other), st) is None  # not the inode asked about
    if own_manifest._generation(str(f), st) is None:
        pytest.skip("this file system records no inode generations")
    assert isinstance(own_manifest._generation(str(f), st), int)
    assert isinstance(own_manifest._generation(str(tmp_path), os.lstat(tmp_path)), int)  # a folder has one too


def test_files_are_listed_with_their_generation_and_stamp(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "abc")
    dev, ino, gen, mtime, size = (out / ownership.MANIFEST).read_text().split(" ")[1].split(":")
    st = os.lstat(out / "a.txt")
    assert (int(dev), int(ino), int(mtime), int(size)) == (st.st_dev, st.st_ino, st.st_mtime_ns, 3)
    want = own_manifest._generation(str(out / "a.txt"), st)
    assert gen == ("-" if want is None else str(want))  # read from the temporary before its rename


def test_a_copied_folder_keeps_its_kind(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    shutil.copytree(out, tmp_path / "copy")
    ownership.claim(tmp_path / "copy", "run")
    assert ownership.folder_kind(tmp_path / "copy") == "run"


def test_removing_an_abandoned_build_touches_nothing_in_the_current_folder(tmp_path, monkeypatch):
    import subprocess
    import sys

    work = tmp_path / "work"
    work.mkdir()
    (work / ownership.BUILD_OWNER).write_text("the user's file of that name")
    monkeypatch.chdir(work)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    d = tmp_path / ".B.dead"
    d.mkdir()
    own_manifest._write_marker(str(d), "bundle")
    (d / ownership.BUILD_OWNER).write_text(f"{dead}\nflock\n")
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))
    assert not d.exists() and (work / ownership.BUILD_OWNER).read_text() == "the user's file of that name"


def test_a_marker_swapped_for_a_link_before_it_is_opened_is_not_read(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "bench")
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"written_by": "spmlkit", "kind": "run"}))
    marker = out / ownership.MARKER
    done = _before_open(monkeypatch, marker, _to_link(marker, forged))
    assert ownership.folder_kind(out) is None and done


def test_a_marker_is_read_up_to_4096_bytes(tmp_path, monkeypatch):
    def marked(name, size):
        d = tmp_path / name
        d.mkdir()
        text = json.dumps({"written_by": "spmlkit", "kind": "run"})
        (d / ownership.MARKER).write_text(text + " " * (size - len(text)))
        return d

    assert ownership.folder_kind(marked("at", 4096)) == "run"
    assert ownership.folder_kind(marked("over", 4097)) is None
    grows = marked("grows", 4096)  # grown while read: only the 4096 bytes checked are read

    def grow():
        with open(grows / ownership.MARKER, "a") as fh:
            fh.write("x")
    done = _before_open(monkeypatch, grows / ownership.MARKER, grow)
    assert ownership.folder_kind(grows) == "run" and done


def test_a_new_folder_made_by_a_parallel_worker_meanwhile_is_claimed(tmp_path, monkeypatch):
    out = tmp_path / "r"
    makedirs = os.makedirs

    def raced(path, *a, **kw):
        if os.fspath(path) == str(out):
            os.mkdir(out)  # a parallel worker made it first
        return makedirs(path, *a, **kw)

    monkeypatch.setattr(os, "makedirs", raced)
    ownership.claim(out, "run")
    assert ownership.folder_kind(out) == "run"


def test_the_manifest_is_read_on_from_where_the_last_read_ended(tmp_path):
    """Each refresh reads only what was appended since the last one: the read offset ends at
    the manifest's size, whatever the number of refreshes."""
    out = ownership.claim(tmp_path / "r", "run")
    root = ownership._ROOTS[str(out)]
    for name in ("a.txt", "b.txt", "c.txt"):
        ownership.write_text(out / name, name)
        root.refresh()
        assert root._offset == os.path.getsize(out / ownership.MANIFEST)
    assert sorted(root.entries) == ["a.txt", "b.txt", "c.txt"]


def test_a_read_only_file_spmlkit_wrote_keeps_its_generation_and_stays_spmlkits(tmp_path, monkeypatch):
    """A file's generation number is read through a read-only descriptor: a file spmlkit wrote,
    made read-only since (no write permission), has the same generation and is still spmlkit's."""
    p = ownership.output_file(tmp_path / "pred.csv")
    with ownership.write_output_file(p) as tmp:
        tmp.write_text("a\n")
    gen = own_manifest._generation(str(p), os.lstat(p))  # (None on a file system without generation numbers)
    os.chmod(p, 0o444)
    _permissions_as_for_a_user(monkeypatch)
    assert own_manifest._generation(str(p), os.lstat(p)) == gen
    assert ownership.output_file(p) == p  # replaced without --overwrite: still the file spmlkit wrote
