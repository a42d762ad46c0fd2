"""spmlkit.ownership.walks: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import os
import stat

import pytest

from spmlkit import ownership
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import user, manifest_lines, _list_by_hand


def test_sub_folders_are_made_listed_and_checked(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    assert ownership.folder(out / "a" / "b", "run") == out / "a" / "b"
    assert manifest_lines(out) == ["d a", "d a/b"]
    assert ownership.claim(out / "a" / "c", "other") == out / "a" / "c"  # inside an owned folder: a sub-folder
    assert (out / "a" / "c").is_dir() and not (out / "a" / "c" / ownership.MARKER).exists()
    assert ownership.folder(tmp_path / "s", "scratch") == tmp_path / "s" and ownership.folder_kind(tmp_path / "s") \
        == "scratch"
    (out / "file").write_text("mine")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "file" / "x.json", "{}")
    assert str(e.value) == (f"{out / 'file'} is a file where spmlkit writes a folder; it was not written by spmlkit "
                            "— move it away or choose another -o")
    (out / "empty").mkdir()  # an empty folder of anyone's holds nothing: taken
    ownership.write_text(out / "empty" / "x.json", "{}")
    assert "d empty" in manifest_lines(out)
    (out / "full").mkdir()
    (out / "full" / "mine").write_text("")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "full" / "x.json", "{}")
    assert str(e.value) == (f"{out / 'full'}: this folder was not written by spmlkit (it is not listed in "
                            f"{out / ownership.MANIFEST}); refusing to replace it — move it away or choose another -o")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "a", "x")
    assert str(e.value) == (f"{out / 'a'} is a folder where spmlkit writes a file; it was not written by spmlkit — "
                            "move it away or choose another -o")
    with pytest.raises(ownership.UnownedPathError, match="is an owned folder itself"):
        ownership.write_text(out, "x")
    with pytest.raises(ownership.UnownedPathError, match="not inside a folder this process claimed"):
        ownership.mkdir(tmp_path / "free" / "x")
    assert ownership.mkdir(out / "m" / "n") == out / "m" / "n" and (out / "m" / "n").is_dir()


def test_ensure_parent_makes_folders_outside_and_checks_inside(tmp_path):
    assert ownership.ensure_parent(tmp_path / "x" / "y" / "f.txt") == tmp_path / "x" / "y"
    assert (tmp_path / "x" / "y").is_dir()
    out = ownership.claim(tmp_path / "r", "run")
    ownership.ensure_parent(out / "p" / "q" / "f.txt")
    assert manifest_lines(out) == ["d p", "d p/q"]
    ownership.ensure_parent(out / "top.txt")  # the owned folder itself: nothing to make
    assert manifest_lines(out) == ["d p", "d p/q"]


def test_nested_folders_owned_on_their_own(tmp_path):
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "bundles" / "voc", "bundle") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    assert "o bundles/voc" in manifest_lines(bench)
    ownership.write_text(bench / "bundles" / "voc" / "extra.json", "{}")  # written inside, listed there
    assert manifest_lines(bench / "bundles" / "voc")[-1] == "f extra.json"
    assert ownership.foreign(bench) == []
    (bench / "bundles" / "voc" / "mine.txt").write_text("m")
    assert ownership.foreign(bench) == ["bundles/voc/mine.txt"]
    (bench / "bundles" / "voc" / "mine.txt").unlink()
    ownership._ROOTS.pop(str(bench / "bundles" / "voc"))
    ownership.write_text(bench / "bundles" / "voc" / "again.json", "{}")  # found again by its marker
    assert ownership.remove(bench / "bundles" / "voc") and not (bench / "bundles" / "voc").exists()
    with ownership.build(bench / "bundles" / "coco", "bundle") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    os.unlink(bench / "bundles" / "coco" / ownership.MARKER)
    ownership._ROOTS.pop(str(bench / "bundles" / "coco"))
    with pytest.raises(ConfigError) as e:
        ownership.write_text(bench / "bundles" / "coco" / "x.json", "{}")
    assert str(e.value) == (f"{bench / 'bundles' / 'coco'}: spmlkit's marker is missing; the folder was changed by "
                            "someone else — choose another -o")


def test_a_nested_folder_found_again_was_not_made_by_this_lookup(tmp_path):
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    ownership._ROOTS.pop(str(bench / "voc"))
    ownership.write_text(bench / "voc" / "x.json", "{}")
    assert not ownership.created(bench / "voc")


def test_files_are_written_where_asked_below_empty_and_nested_folders(tmp_path):
    out = ownership.claim(tmp_path / "bench", "bench")
    (out / "empty").mkdir()  # an empty folder of anyone's: taken, and walked through
    ownership.write_text(out / "empty" / "deeper" / "x.txt", "x")
    assert (out / "empty" / "deeper" / "x.txt").is_file() and not (out / "empty" / "x.txt").exists()
    with ownership.build(out / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    ownership._ROOTS.pop(str(out / "voc"))  # (found through the bench's manifest)
    ownership.write_text(out / "voc" / "deeper" / "y.txt", "y")  # below a folder owned on its own
    assert (out / "voc" / "deeper" / "y.txt").is_file() and not (out / "voc" / "y.txt").exists()


def test_a_nested_folder_replaced_by_the_users_is_refused_as_foreign(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(out / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    ownership._ROOTS.pop(str(out / "voc"))
    shutil.rmtree(out / "voc")
    (out / "voc").mkdir()
    (out / "voc" / "mine.txt").write_text("the user's")
    with pytest.raises(ConfigError, match="voc: this folder was not written by spmlkit"):
        ownership.write_text(out / "voc" / "x.txt", "x")


def test_lstat_at_never_follows_a_link(tmp_path):
    from spmlkit.ownership.walks import lstat_at

    (tmp_path / "f").write_text("x")
    os.symlink(tmp_path / "f", tmp_path / "to-f")
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert stat.S_ISLNK(lstat_at(fd, "to-f").st_mode) and stat.S_ISLNK(lstat_at(fd, "dangling").st_mode)
        assert stat.S_ISREG(lstat_at(fd, "f").st_mode) and lstat_at(fd, "missing") is None
    finally:
        os.close(fd)


def test_open_parent_refuses_a_root_replaced_or_a_folder_changed_into_a_link(tmp_path, user):
    from spmlkit.ownership.walks import open_parent

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "sub" / "a.txt", "a")
    root = ownership._ROOTS[str(out)]
    os.close(open_parent(root, "sub/a.txt"))
    (out / "sub").rename(tmp_path / "sub-moved")
    os.symlink(user, out / "sub")
    with pytest.raises(ConfigError) as e:
        open_parent(root, "sub/a.txt")
    assert str(e.value) == (f"{out / 'sub'} changed into a link or a file while spmlkit wrote in it; nothing was "
                            "written there")
    out.rename(tmp_path / "r-moved")
    out.mkdir()
    with pytest.raises(ConfigError) as e:
        open_parent(root, "a.txt")
    assert str(e.value) == (f"{out} was removed or replaced by someone else while spmlkit was using it; nothing more "
                            "is written there")


def test_open_parent_refuses_a_folder_in_place_of_spmlkits_even_listed_under_another_type(tmp_path):
    from spmlkit.ownership.walks import open_parent
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "sub" / "a.txt", "a")
    root = ownership._ROOTS[str(out)]
    (out / "sub").rename(tmp_path / "sub-moved")
    (out / "sub").mkdir()  # someone else's folder in its place
    _list_by_hand(out, "f", "sub", out / "sub")  # its inode listed, but as a file
    with pytest.raises(ConfigError) as e:
        open_parent(root, "sub/a.txt")
    assert str(e.value).startswith(f"{out / 'sub'}: this folder was not written by spmlkit (it is not listed in ")
    assert str(e.value).endswith("); refusing to replace it — move it away or choose another -o")


def test_mkdir_makes_every_folder_below_an_empty_folder_and_below_a_nested_owned_one(tmp_path):
    """A walk that only makes folders (mkdir, ensure_parent) goes on past an empty folder it
    takes, and past a folder owned on its own that it enters, to the last folder asked."""
    out = ownership.claim(tmp_path / "bench", "bench")
    (out / "empty").mkdir()  # an empty folder of anyone's: taken, and walked through
    ownership.mkdir(out / "empty" / "a" / "b")
    assert (out / "empty" / "a" / "b").is_dir()
    assert manifest_lines(out)[-3:] == ["d empty", "d empty/a", "d empty/a/b"]
    with ownership.build(out / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    ownership._ROOTS.pop(str(out / "voc"))  # (found through the bench's manifest)
    ownership.mkdir(out / "voc" / "c" / "d")
    assert (out / "voc" / "c" / "d").is_dir() and manifest_lines(out / "voc")[-2:] == ["d c", "d c/d"]


def test_mkdir_refuses_a_folder_of_the_users_listed_as_a_file(tmp_path):
    """A folder whose inode number the manifest lists for a file of spmlkit's (an inode number a
    removed file had, given by a file system without generation numbers to the user's folder)
    is not spmlkit's folder: nothing is made inside it."""
    out = ownership.claim(tmp_path / "r", "run")
    (out / "d").mkdir()
    (out / "d" / "mine.txt").write_text("the user's")
    _list_by_hand(out, "f", "d", out / "d")
    with pytest.raises(ConfigError) as e:
        ownership.mkdir(out / "d" / "sub")
    assert str(e.value) == (f"{out / 'd'}: this folder was not written by spmlkit (it is not listed in "
                            f"{out / ownership.MANIFEST}); refusing to replace it — move it away or choose another -o")
    assert os.listdir(out / "d") == ["mine.txt"]
