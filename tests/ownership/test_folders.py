"""spmlkit.ownership.folders: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import json
import os

import pytest

from spmlkit import ownership
from spmlkit.ownership import manifest as own_manifest
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import user, manifest_lines, _restore_from_copy, _before_open


def test_folders_of_the_user_are_refused(tmp_path, user):
    with pytest.raises(ConfigError, match="refusing to write into .*: it holds files that are not a .*run"):
        ownership.claim(user, "run")
    out = ownership.claim(tmp_path / "new", "bench")
    assert ownership.folder_kind(out) == "bench" and ownership.claim(out, "bench") == out
    with pytest.raises(ConfigError, match="it holds spmlkit's bench output, not an analysis"):
        ownership.claim(out, "analysis")
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="is a file; expected a folder"):
        ownership.check_output_folder(tmp_path / "f")
    assert (user / "notes.txt").read_text() == "mine\n"


def test_an_empty_folder_is_taken_and_kept(tmp_path):
    (tmp_path / "empty").mkdir()
    out = ownership.claim(tmp_path / "empty", "run")
    assert not ownership.created(out) and ownership.folder_kind(out) == "run"


def test_the_marker_records_the_kind_and_the_folders_identity(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    st = out.stat()
    assert json.loads((out / ownership.MARKER).read_text()) == {
        "written_by": "spmlkit", "kind": "run", "manifest": ownership.MANIFEST, "folder": f"{st.st_dev}:{st.st_ino}"}
    assert (out / ownership.MANIFEST).read_text() == "" and ownership.created(out)
    assert not ownership.created(tmp_path / "elsewhere")


def test_names_with_a_line_break_are_never_written(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    for name in ("a\nf 1:2:-:-:- b", "c\rd"):
        with pytest.raises(ConfigError, match="spmlkit does not write names holding a line break"):
            ownership.write_text(out / name, "x")
    assert manifest_lines(out) == []


def test_temporary_and_new_folders_are_owned(tmp_path):
    t = ownership.temporary_folder("spml-t-", dir=tmp_path)
    assert t.parent == tmp_path and t.name.startswith("spml-t-") and ownership.folder_kind(t) == "scratch"
    assert ownership.created(t)
    ownership.write_text(t / "x.txt", "x")
    n = ownership.new_folder(tmp_path / "a" / "n1", "shard")
    assert ownership.folder_kind(n) == "shard" and ownership.created(n)
    with pytest.raises(ConfigError) as e:
        ownership.new_folder(tmp_path / "a" / "n1", "shard")
    assert str(e.value) == (f"{tmp_path / 'a' / 'n1'} exists already; spmlkit makes a new folder there and never "
                            "reuses one it did not make")
    inner = ownership.new_folder(n / "s" / "inner", "shard")  # inside an owned folder: a listed sub-folder
    assert inner.is_dir() and manifest_lines(n) == ["d s", "d s/inner"]


def test_a_hard_linked_manifest_is_never_appended_to(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    os.link(out / ownership.MANIFEST, tmp_path / "other-name")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "new.txt", "x")
    assert str(e.value) == f"{out / ownership.MANIFEST}: has other names (a hard link); refusing to write it"
    assert (tmp_path / "other-name").read_text() == "" and not (out / "new.txt").exists()


def test_a_link_refusal_names_the_path_as_the_user_wrote_it(tmp_path, user, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = ownership.claim("rel", "run")
    os.symlink(user, tmp_path / "rel" / "sub")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "sub" / "x.txt", "x")
    assert str(e.value).startswith(f"{os.path.join('rel', 'sub')} is a symbolic link (to {user})")


def test_a_folder_replaced_by_a_copy_of_itself_stays_writable_and_keeps_its_kind(tmp_path):
    (tmp_path / "empty").mkdir()
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    ownership._ROOTS.pop(str(bench / "voc"))
    ownership.write_text(bench / "voc" / "found.json", "{}")  # registered again, from its marker
    with ownership.build(tmp_path / "built", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    made = {"new": (ownership.claim(tmp_path / "new", "run"), "run"),
            "empty": (ownership.claim(tmp_path / "empty", "run"), "run"),
            "built": (tmp_path / "built", "tbuild"),
            "scratch": (ownership.temporary_folder("spml-t-", dir=tmp_path), "scratch"),
            "shard": (ownership.new_folder(tmp_path / "shard", "shard"), "shard"),
            "nested": (bench / "voc", "tbuild")}
    for name, (out, kind) in made.items():
        ownership.write_text(out / "a.txt", "a")
        _restore_from_copy(out, tmp_path)  # the same kind's folder, another inode: still the one written
        ownership.write_text(out / "a.txt", "a2")
        assert not ownership.created(out)  # (the copy was not made by this process)
        ownership.write_text(out / "b.txt", "b")
        assert ownership.folder_kind(out) == kind and ownership.foreign(out) == [], name
        assert (out / "a.txt").read_text() == "a2", name


def test_prune_goes_on_past_a_folder_that_cannot_be_removed(tmp_path, monkeypatch):
    import errno

    out = ownership.claim(tmp_path / "r", "run")
    for name in ("busy", "free"):
        ownership.mkdir(out / name)
    rmdir = os.rmdir

    def busy(path, *a, **kw):  # (a mount point, or a folder of a file system mounted read-only)
        if os.path.basename(os.fspath(path)) == "busy":
            raise OSError(errno.EBUSY, "Device or resource busy", os.fspath(path))
        return rmdir(path, *a, **kw)

    monkeypatch.setattr(os, "rmdir", busy)
    ownership.prune(out)
    assert (out / "busy").is_dir() and not (out / "free").exists()


def test_a_marked_folder_claimed_again_keeps_the_users_spelling_and_was_not_made_now(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ownership.claim("out", "run")
    ownership._ROOTS.pop(str(tmp_path / "out"))  # another process: found by its marker and manifest
    out = ownership.claim("out", "run")
    assert not ownership.created(out)
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "notes.txt", "x")
    assert str(e.value) == (f"{os.path.join('out', 'notes.txt')}: this file was not written by spmlkit (it is not "
                            f"listed in {os.path.join('out', ownership.MANIFEST)}); refusing to replace it — move it "
                            "away or choose another -o")


def test_claim_names_the_option_in_its_refusals(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError) as e:
        ownership.claim(tmp_path / "f", "run", option="--into")
    assert str(e.value) == f"--into {tmp_path / 'f'} is a file; expected a folder (a new one, or one spmlkit wrote)"


def test_folder_checks_what_is_inside_an_owned_folder_by_the_ownership_rule(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "notes").write_text("the user's")
    with pytest.raises(ConfigError) as e:
        ownership.folder(out / "notes", "model")
    assert str(e.value) == (f"{out / 'notes'} is a file where spmlkit writes a folder; it was not written by "
                            "spmlkit — move it away or choose another -o")
    assert ownership.folder(out, "model") == out  # the owned folder itself: written into, whatever is asked


def test_a_new_manifest_is_not_created_through_a_link_put_in_its_place(tmp_path, monkeypatch):
    out = tmp_path / "r"
    elsewhere = tmp_path / "elsewhere.txt"
    done = _before_open(monkeypatch, out / ownership.MANIFEST,
                        lambda: os.symlink(elsewhere, out / ownership.MANIFEST), when=lambda f: f & os.O_CREAT)
    with pytest.raises(OSError):
        ownership.claim(out, "run")
    assert done and not elsewhere.exists()


def test_a_new_manifest_has_the_permissions_of_a_new_file(tmp_path):
    mask = os.umask(0o022)
    try:
        out = ownership.claim(tmp_path / "r", "run")
    finally:
        os.umask(mask)
    assert (out / ownership.MANIFEST).stat().st_mode & 0o777 == 0o644


def test_a_folder_with_a_space_is_listed_with_its_own_generation(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.mkdir(out / "a b")
    line = (out / ownership.MANIFEST).read_text().splitlines()[-1]
    assert line.endswith(" a b")
    gen = own_manifest._generation(str(out / "a b"), os.lstat(out / "a b"))
    assert line.split(" ")[1].split(":")[2] == ("-" if gen is None else str(gen))


def test_a_users_file_under_a_name_with_a_space_is_refused(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "my notes.txt").write_text("the user's")
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.write_text(out / "my notes.txt", "spmlkit's")
    assert (out / "my notes.txt").read_text() == "the user's"


def test_a_folder_made_and_removed_by_someone_else_meanwhile_is_refused(tmp_path, monkeypatch):
    import errno

    out = ownership.claim(tmp_path / "r", "run")

    def raced(path, *a, **kw):  # made by someone else just now, and removed again
        raise FileExistsError(errno.EEXIST, "File exists", os.fspath(path))

    monkeypatch.setattr(os, "mkdir", raced)
    with pytest.raises(ConfigError, match="^.*/sub: made and removed by someone else while spmlkit made it — "
                                          "choose another -o$"):
        ownership.write_text(out / "sub" / "a.txt", "a")


def test_a_folder_of_this_version_whose_manifest_is_gone_is_not_claimed_again(tmp_path):
    """Its marker says it had a manifest: without it nothing inside is known to be spmlkit's,
    so the folder is refused (an older version's folder, without one, is adopted by layout)."""
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    (out / ownership.MANIFEST).unlink()
    ownership._ROOTS.pop(str(out))  # (a later process)
    with pytest.raises(ConfigError) as e:
        ownership.claim(out, "run", option="--out")
    assert str(e.value) == (f"{out}: spmlkit's list of what it wrote there ({ownership.MANIFEST}) is missing; the "
                            "folder was changed by someone else — choose another --out")
