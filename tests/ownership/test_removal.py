"""spmlkit.ownership.removal: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import json
import os
import time

import pytest

from spmlkit import ownership
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import snapshot, user, manifest_lines, _owned_then_replaced, _list_by_hand, _before_open


def test_files_and_folders_of_anyone_else_are_never_replaced(tmp_path):
    out = ownership.claim(tmp_path / "run", "run")
    (out / "notes.txt").write_text("mine\n")  # someone else's, at a name spmlkit might write
    (out / "model").mkdir()
    (out / "model" / "x").write_text("mine\n")
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.write_text(out / "notes.txt", "spmlkit's")
    with pytest.raises(ConfigError, match="this folder was not written by spmlkit"):
        ownership.write_text(out / "model" / "model.json", "{}")
    assert (out / "notes.txt").read_text() == "mine\n" and not (out / "model" / "model.json").exists()
    assert sorted(ownership.foreign(out)) == ["model", "notes.txt"]


def test_a_file_replaced_under_spmlkits_name_is_not_spmlkits(tmp_path):
    out = ownership.claim(tmp_path / "run", "run")
    ownership.write_text(out / "report.md", "spmlkit's\n")
    os.replace(tmp_path / "run" / "report.md", tmp_path / "moved")
    (out / "report.md").write_text("the user's own report\n")  # a new inode at spmlkit's name
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.write_text(out / "report.md", "again")
    assert not ownership.remove(out / "report.md") and (out / "report.md").read_text() == "the user's own report\n"


def test_removal_takes_only_what_the_manifest_lists(tmp_path, user):
    out = ownership.claim(tmp_path / "b", "bench")
    ownership.write_text(out / "work" / "h" / "last.pt", "x")
    (out / "work" / "h" / "mine.txt").write_text("mine\n")
    os.symlink(user, out / "work" / "link")
    assert not ownership.remove(out / "work")  # what is left keeps its folder
    assert sorted(p.name for p in (out / "work").rglob("*")) == ["h", "link", "mine.txt"]
    assert snapshot(user) == {"notes.txt": b"mine\n"}
    assert not ownership.discard(out) and (out / "work" / "h" / "mine.txt").exists()


def test_overwrite_refuses_anything_not_written_by_spmlkit(tmp_path):
    out = ownership.claim(tmp_path / "b", "bundle")
    ownership.write_text(out / "meta.json", "{}")
    ownership.check_clearable(out, "bundle")
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(ConfigError, match="refusing --overwrite: .*notes.txt was not written by spmlkit"):
        ownership.check_clearable(out, "bundle")


def test_stale_temporaries_carry_spmlkits_signature(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "config.json", "{}")
    (out / ".config.json.spml-abcd1234.tmp").write_text("half")  # a killed writer's
    (out / ".draft.tmp").write_text("mine")  # the user's
    assert ownership.remove_stale_temporaries(out) == 1 and (out / ".draft.tmp").exists()


def test_a_copied_folder_stays_spmlkits(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "last.pt", "x")
    shutil.copytree(out, tmp_path / "copy")  # every inode new: re-listed by name, once
    ownership.claim(tmp_path / "copy", "run")
    ownership.write_text(tmp_path / "copy" / "last.pt", "y")
    assert (tmp_path / "copy" / "last.pt").read_text() == "y" and ownership.foreign(tmp_path / "copy") == []


def test_check_output_folder_and_clearable_refusals(tmp_path):
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    with pytest.raises(ConfigError) as e:
        ownership.check_output_folder(tmp_path / "dangling", option="--out-dir")
    assert str(e.value) == (f"--out-dir {tmp_path / 'dangling'} is a symbolic link to {tmp_path / 'nowhere'}, which "
                            "does not exist; expected a folder (remove the link or create its target)")
    ownership.check_clearable(tmp_path / "new", "t-run")  # nothing there: fine
    b = ownership.claim(tmp_path / "b", "bench")
    os.symlink(b, tmp_path / "alias")
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(tmp_path / "alias", "bench")
    assert str(e.value) == f"refusing to replace {tmp_path / 'alias'}: it is a symbolic link; pass a new folder to -o"
    ownership.write_text(b / "x.json", "{}")
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(b, "t-run")
    assert str(e.value) == (f"refusing to replace {b}: it holds spmlkit's bench output, not a t-run folder; pass a new "
                            "folder to -o")
    for name in ("u1", "u2", "u3"):
        (b / name).write_text("mine")
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(b, "bench", option="--fresh")
    assert str(e.value) == (f"refusing --fresh: {b / 'u1'} (and 2 more) was not written by spmlkit; spmlkit removes "
                            f"only what it wrote — move it out of {b} (or choose another -o)")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "a").write_text("")
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(mine, "t-run")
    assert str(e.value) == (f"refusing to replace {mine}: it is not a t-run folder written by spmlkit (its own metadata "
                            "is missing) and may hold your files; pass a new folder to -o")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ownership.LOCK).write_text("")
    ownership.check_clearable(empty, "t-run")  # only a lock file: empty


def test_remove_prune_and_discard_take_only_spmlkits(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a" / "x.txt", "x")
    ownership.mkdir(out / "e1" / "e2")
    ownership.mkdir(out / "keep")
    (out / "keep" / "mine").write_text("m")
    assert ownership.remove(out / "nothing-there")
    assert not ownership.remove(out / "a", only_if_empty=True) and (out / "a" / "x.txt").exists()
    assert ownership.remove(out / "a" / "x.txt") and not (out / "a" / "x.txt").exists()
    assert ownership.remove(out / "a", only_if_empty=True) and not (out / "a").exists()
    assert "- a" in manifest_lines(out) and "- a/x.txt" in manifest_lines(out)
    assert ownership.remove(out / "nope" / "deeper" / "x")  # nothing there (folders missing)
    ownership.prune(out)
    assert not (out / "e1").exists() and (out / "keep" / "mine").exists()
    ownership.prune(tmp_path / "unowned")  # not owned: nothing done
    assert not ownership.discard(out, only_if_empty=True) and out.exists()
    (out / "keep" / "mine").unlink()
    (out / ".x.spml-q.tmp").write_text("half")
    assert ownership.discard(out, only_if_empty=False) and not out.exists()
    assert not ownership.discard(tmp_path / "r")  # gone: no marker
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not ownership.discard(plain) and plain.exists()
    with pytest.raises(ownership.UnownedPathError):
        ownership.remove(tmp_path / "plain" / "x")


def test_an_owned_folder_is_discarded_through_remove_and_only_if_empty(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    assert ownership.remove(out, only_if_empty=True) and not out.exists()
    out = ownership.claim(tmp_path / "s", "run")
    ownership.write_text(out / "f.txt", "x")
    assert not ownership.remove(out, only_if_empty=True) and (out / "f.txt").exists()
    assert ownership.remove(out) and not out.exists()
    assert not (tmp_path / "s").exists() and sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_discarded_folder_spmlkit_did_not_register_is_read_from_its_marker(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "f.txt", "x")
    ownership._ROOTS.pop(str(out))
    assert ownership.discard(out) and not out.exists()


def test_foreign_skips_temporaries_and_names_links_and_hard_links(tmp_path, user):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "d" / "a.txt", "a")
    (out / "d" / ".a.txt.spml-xy.tmp").write_text("half")
    os.symlink(user, out / "d" / "link")
    os.link(user / "notes.txt", out / "d" / "hard.txt")
    assert ownership.foreign(out) == ["d/hard.txt", "d/link"]


def test_stale_temporaries_with_other_names_are_left(tmp_path, user):
    out = ownership.claim(tmp_path / "r", "run")
    os.link(user / "notes.txt", out / ".x.spml-ab.tmp")  # a hard link of the user's file: not a temporary
    (out / ".y.spml-cd.tmp").mkdir()  # a folder: not a temporary
    assert ownership.remove_stale_temporaries(out) == 0
    assert (user / "notes.txt").read_text() == "mine\n" and (out / ".x.spml-ab.tmp").exists()
    ownership.write_text(out / "sub" / "f.txt", "f")
    (out / "sub" / ".z.spml-ef.tmp").write_text("half")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / ".w.spml-gh.tmp").write_text("theirs")
    os.symlink(tmp_path / "theirs", out / "lnk")
    assert ownership.remove_stale_temporaries(out, recursive=True) == 1
    assert (tmp_path / "theirs" / ".w.spml-gh.tmp").exists()  # a link is not followed


def test_a_copied_folder_records_its_new_identity_and_skips_what_changed_type(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    ownership.write_text(out / "d" / "b.txt", "b")
    shutil.copytree(out, tmp_path / "copy")
    os.unlink(tmp_path / "copy" / "a.txt")
    (tmp_path / "copy" / "a.txt").mkdir()  # a listed file that is a folder in the copy: not adopted
    ownership.claim(tmp_path / "copy", "run")
    st = (tmp_path / "copy").stat()
    assert json.loads((tmp_path / "copy" / ownership.MARKER).read_text())["folder"] == f"{st.st_dev}:{st.st_ino}"
    assert ownership.foreign(tmp_path / "copy") == ["a.txt"]
    ownership.write_text(tmp_path / "copy" / "d" / "b.txt", "b2")


def test_a_folder_that_cannot_be_listed_is_one_line(tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    real = os.listdir

    def denied(path="."):
        if os.fspath(path) == str(d):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(os, "listdir", denied)
    with pytest.raises(ConfigError) as e:
        ownership.claim(d, "run")
    assert str(e.value) == f"{d}: cannot be read (Permission denied)"
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(d, "run")
    assert str(e.value) == f"{d}: cannot be read (Permission denied)"


def test_inputs_are_checked_when_claiming_and_clearing(tmp_path, user):
    with pytest.raises(ConfigError, match=f"--dir {user / 'out'} lies inside {user}"):
        ownership.claim(user / "out", "run", inputs=[user], option="--dir")
    assert not (user / "out").exists()
    out = ownership.claim(tmp_path / "r", "run")
    (out / "input.csv").write_text("data")  # the folder to replace holds what the command reads
    with pytest.raises(ConfigError, match=f"--overwrite {out}: {out / 'input.csv'}, which this command reads, lies "
                                          "inside it"):
        ownership.check_clearable(out, "run", inputs=[out / "input.csv"])


def test_nothing_is_removed_through_a_folder_of_anyone_elses(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "theirs").mkdir()
    with pytest.raises(ConfigError, match="this folder was not written by spmlkit"):
        ownership.remove(out / "theirs" / "x")  # (not taken over by a removal, even empty)
    (out / "theirs" / "x").write_text("mine")
    with pytest.raises(ConfigError, match="this folder was not written by spmlkit"):
        ownership.remove(out / "theirs" / "x")
    assert (out / "theirs" / "x").read_text() == "mine" and ownership.foreign(out) == ["theirs"]


def test_a_folder_removed_with_a_killed_writers_temporary_in_it(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "d" / "a.txt", "a")
    (out / "d" / ".a.txt.spml-k1.tmp").write_text("half")
    assert ownership.remove(out / "d") and not (out / "d").exists()


def test_foreign_reads_an_unregistered_folder_from_its_marker(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    (out / "b.txt").write_text("mine")
    ownership._ROOTS.pop(str(out))
    assert ownership.foreign(out) == ["b.txt"]


def test_prune_keeps_spmlkits_files_and_anyone_elses_folders_quietly(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a" / "x.txt", "x")
    ownership.mkdir(out / "e")
    (out / "theirs" / "deeper").mkdir(parents=True)
    ownership.prune(out)
    assert (out / "a" / "x.txt").read_text() == "x" and (out / "theirs" / "deeper").is_dir()
    assert not (out / "e").exists()
    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    ownership.prune(plain)  # not spmlkit's: nothing done, no error
    assert (plain / "sub").is_dir()


def test_stale_temporaries_counted_where_asked(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "s" / "d" / "f.txt", "f")
    for p in (out / ".a.spml-1.tmp", out / ".b.spml-2.tmp", out / "s" / ".c.spml-3.tmp",
              out / "s" / "d" / ".e.spml-4.tmp"):
        p.write_text("half")
    assert ownership.remove_stale_temporaries(out / "s", recursive=True) == 2  # a sub-folder, and below it
    assert (out / ".a.spml-1.tmp").exists()
    assert ownership.remove_stale_temporaries(out) == 2  # not below: none left there anyway
    (out / "s" / ".g.spml-5.tmp").write_text("half")
    assert ownership.remove_stale_temporaries(out) == 0 and (out / "s" / ".g.spml-5.tmp").exists()
    assert ownership.remove_stale_temporaries(out / "missing") == 0
    with pytest.raises(ownership.UnownedPathError) as e:
        ownership.remove(tmp_path / "x")
    assert str(e.value) == f"{tmp_path / 'x'}: not inside a folder this process claimed"


def test_overwrite_refusals_count_the_rest(tmp_path):
    b = ownership.claim(tmp_path / "b", "bench")
    for name in ("u1", "u2"):
        (b / name).write_text("mine")
    with pytest.raises(ConfigError, match=r"u1 \(and 1 more\) was not written"):
        ownership.check_clearable(b, "bench")
    (b / "u2").unlink()
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(b, "bench")
    assert f"{b / 'u1'} was not written by spmlkit" in str(e.value) and "more" not in str(e.value)


def test_removal_leaves_anyone_elses_empty_folder_and_lists_what_it_removed(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "theirs").mkdir()  # empty, but not spmlkit's
    assert not ownership.remove(out / "theirs") and (out / "theirs").is_dir()
    assert not ownership.discard(out) and (out / "theirs").is_dir()
    ownership.write_text(out / "a.txt", "a")
    (out / "a.txt").unlink()  # gone already (by hand): the manifest says so after the removal
    before = manifest_lines(out)
    assert ownership.remove(out / "a.txt") and manifest_lines(out) == before + ["- a.txt"]
    assert ownership.remove(out / "never.txt") and manifest_lines(out) == before + ["- a.txt"]  # nothing to list


def test_a_link_to_spmlkits_own_file_is_still_foreign(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    os.symlink(out / "a.txt", out / "alias.txt")  # points at a listed file: the link itself is not spmlkit's
    assert ownership.foreign(out) == ["alias.txt"]
    os.unlink(out / "alias.txt")
    os.rename(out / "a.txt", tmp_path / "moved.txt")
    os.symlink(tmp_path / "moved.txt", out / "a.txt")  # spmlkit's name, now a link to the (listed) file moved away
    assert ownership.foreign(out) == ["a.txt"]


def test_a_copied_folder_read_without_registering_it_keeps_its_kind(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    (out / "b.txt").write_text("mine")
    for name in ("c1", "c2"):
        shutil.copytree(out, tmp_path / name)
    assert ownership.foreign(tmp_path / "c1") == ["b.txt"]  # (its marker rewritten with the copy's identity)
    assert ownership.folder_kind(tmp_path / "c1") == "run"
    assert not ownership.discard(tmp_path / "c2")  # the user's file keeps the folder, and spmlkit's marker in it
    assert sorted(p.name for p in (tmp_path / "c2").iterdir()) == sorted([ownership.MARKER, ownership.MANIFEST, "b.txt"])
    assert ownership.folder_kind(tmp_path / "c2") == "run"


def test_a_copy_lists_again_only_what_it_holds_of_the_listed_types(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    for rel in ("a b.txt", "gone.txt", "f.txt", "d/x.txt"):
        ownership.write_text(out / rel, rel)
    os.unlink(out / "gone.txt")  # removed by hand: still listed
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    os.unlink(copy / "f.txt")
    (copy / "f.txt").mkdir()  # a folder where a file was listed
    shutil.rmtree(copy / "d")
    (copy / "d").write_text("a file where a folder was listed")
    before = manifest_lines(copy)
    ownership.claim(copy, "run")
    assert manifest_lines(copy)[len(before):] == ["f a b.txt"]
    assert ownership.foreign(copy) == ["d", "f.txt"]
    # a copy that shares the files (hard links: `cp -al`, rsync --link-dest): only its folders are new
    linked = tmp_path / "linked"
    shutil.copytree(out, linked, copy_function=lambda s, d: (shutil.copy2 if os.path.basename(s) in (
        ownership.MARKER, ownership.MANIFEST) else os.link)(s, d))
    before = manifest_lines(linked)
    ownership.claim(linked, "run")
    assert manifest_lines(linked)[len(before):] == ["d d"] and ownership.foreign(linked) == []


def test_a_file_made_new_and_then_written_stays_spmlkits(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    p = ownership.new_file(out / "part.bin")
    with open(p, "ab") as fh:
        fh.write(b"written by its caller")
    assert ownership.foreign(out) == []
    assert ownership.remove(p) and not p.exists()


def test_names_with_spaces_in_removals_and_messages(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "my dir" / "x.txt", "x")
    assert not ownership.remove(out / "my dir", only_if_empty=True) and (out / "my dir" / "x.txt").is_file()
    (out / "my data").write_text("the user's")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "my data" / "x.txt", "x")
    assert str(e.value) == (f"{out / 'my data'} is a file where spmlkit writes a folder; it was not written by "
                            "spmlkit — move it away or choose another -o")


def test_a_replaced_folder_is_not_discarded(tmp_path):
    out = _owned_then_replaced(tmp_path)
    with pytest.raises(ConfigError):
        ownership.discard(out)
    assert sorted(p.name for p in out.iterdir()) == ["theirs.txt"]


def test_a_folder_holding_anyone_elses_file_keeps_its_marker_whatever_the_listing_order(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "theirs.txt").write_text("mine")
    for i in range(50):  # until a file of spmlkit's is the last the folder lists (its order is the file system's)
        ownership.write_text(out / f"s{i}.txt", "s")
        names = [n for n in os.listdir(out) if n not in (ownership.MARKER, ownership.MANIFEST)]
        if names[-1] != "theirs.txt":
            break
    assert not ownership.discard(out)
    assert sorted(p.name for p in out.iterdir()) == sorted([ownership.MARKER, ownership.MANIFEST, "theirs.txt"])
    assert ownership.folder_kind(out) == "run"


def test_an_inode_listed_as_another_type_is_not_spmlkits(tmp_path):
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    (bench / "a.txt").write_text("the user's")
    _list_by_hand(bench, "f", "voc", bench / "voc")  # a folder listed as a file
    _list_by_hand(bench, "d", "a.txt", bench / "a.txt")  # a file listed as a folder
    assert ownership.foreign(bench) == ["a.txt", "voc"]
    ownership._ROOTS.pop(str(bench / "voc"))  # (else removed as a folder registered itself)
    assert not ownership.remove(bench / "voc") and (bench / "voc" / "meta.json").is_file()
    assert not ownership.remove(bench / "a.txt") and (bench / "a.txt").is_file()


def test_the_manifest_reader_skips_lines_it_does_not_expect(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    ownership.write_text(out / "c.txt", "c")
    st = os.lstat(out / "a.txt")
    junk = [f"f {st.st_dev}:{st.st_ino}:-:-:7 a.txt".encode(),  # a size without a time: no stamp
            b"f 1:2:-:-:- a.txt",  # another inode under the same name: listed beside the first
            b"\xff\xfe not utf-8", b"f", b"z 1:2:-:-:- a.txt", b"f 1:2 a.txt", b"f x:y:-:-:- a.txt",
            f"d {st.st_dev}:-:-:-:- a.txt".encode(), f"d -:{st.st_ino}:-:-:- a.txt".encode()]
    with open(out / ownership.MANIFEST, "ab") as fh:
        fh.write(b"\n".join(junk) + b"\n")
    ownership.remove(out / "c.txt")
    ownership.write_text(out / "b.txt", "b")  # after the lines, and after a removal
    ownership.write_text(out / " lead.txt", "l")  # a name starting with a space
    lines = (out / ownership.MANIFEST).read_bytes().count(b"\n")
    ownership._ROOTS.pop(str(out))  # another process: reads the manifest from the start
    ownership.claim(out, "run")
    assert ownership.foreign(out) == []
    for name in ("a.txt", "b.txt", " lead.txt"):
        ownership.write_text(out / name, "again")  # each still spmlkit's
    assert ownership.remove(out / "c.txt") and (out / ownership.MANIFEST).read_bytes().count(b"\n") == lines + 3  # removed already: no line
    (out / "c.txt").write_text("the user's, under a name spmlkit removed")
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.write_text(out / "c.txt", "spmlkit's")


def test_a_removal_line_lists_no_inode(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "x.txt", "x")
    ownership.remove(out / "x.txt")
    assert (out / ownership.MANIFEST).read_text().splitlines()[-1] == "- 0:0:-:-:- x.txt"


def test_discard_keeps_a_folder_holding_something_under_a_bookkeeping_name(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    (out / ownership.LOCK).mkdir()  # a folder of the user's under the lock file's name
    assert ownership.discard(out) is False and (out / ownership.LOCK).is_dir()


def test_a_folder_whose_manifest_was_deleted_is_not_cleared(tmp_path):
    """The marker says a manifest lists what spmlkit wrote; without it nothing inside is known
    to be spmlkit's, so ``--overwrite`` is refused whole (not judged by the layout)."""
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    (out / ownership.MANIFEST).unlink()
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(out, "run", option="--overwrite")
    assert str(e.value) == (f"refusing --overwrite: {out} has spmlkit's marker but its list of what spmlkit wrote there "
                            f"({ownership.MANIFEST}) is missing, so nothing in it is known to be spmlkit's; spmlkit "
                            "removes only what that list names — move your files out (or choose another -o)")


def test_an_entry_gone_before_its_removal_counts_as_removed_and_another_one_is_kept(tmp_path):
    from spmlkit.ownership import removal

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    root = ownership._ROOTS[str(out)]
    st = os.lstat(out / "a.txt")
    os.rename(out / "a.txt", tmp_path / "a.old")  # (kept: its inode number is not reused)
    assert removal._remove_checked(root, "a.txt", st) is True  # nothing left there
    (out / "a.txt").write_text("someone else's")
    assert removal._remove_checked(root, "a.txt", st) is False and (out / "a.txt").exists()


def test_a_file_replaced_as_it_is_removed_is_left_and_so_is_its_folders_bookkeeping(tmp_path, monkeypatch):
    """A file spmlkit wrote, replaced by someone else's between the check and the removal (as
    its folder is opened for it): left where it is, and reported as left; a folder being
    discarded keeps its marker and manifest then."""
    def replaced_when_opened(folder, name):
        def replace():
            os.rename(folder / name, tmp_path / f"{name}.old")  # (kept: its inode number is not reused)
            (folder / name).write_text("the user's")
        return _before_open(monkeypatch, folder, replace)

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    done = replaced_when_opened(out, "a.txt")
    assert ownership.remove(out / "a.txt") is False and done
    assert (out / "a.txt").read_text() == "the user's" and manifest_lines(out)[-1] == "f a.txt"
    other = ownership.claim(tmp_path / "s", "run")
    ownership.write_text(other / "b.txt", "b")
    done = replaced_when_opened(other, "b.txt")
    assert ownership.discard(other) is False and done
    assert sorted(os.listdir(other)) == sorted([ownership.MARKER, ownership.MANIFEST, "b.txt"])


def test_stale_temporaries_are_never_looked_for_through_a_link(tmp_path):
    """A folder spmlkit made, moved out by the user and a link left in its place (and a link to
    nothing): neither is followed; the temporary-named file in the moved folder is the user's now."""
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "sub" / "x.txt", "x")
    os.rename(out / "sub", tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", out / "sub")
    os.symlink(tmp_path / "nowhere", out / "dangling")
    (tmp_path / "elsewhere" / ".x.txt.spml-0123456789.tmp").write_text("the user's now")
    assert ownership.remove_stale_temporaries(out, recursive=True) == 0
    assert (tmp_path / "elsewhere" / ".x.txt.spml-0123456789.tmp").read_text() == "the user's now"
