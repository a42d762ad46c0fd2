"""spmlkit.ownership.writers: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import json
import os
import time

import numpy as np
import pytest

from spmlkit import ownership
from spmlkit.ownership import manifest as own_manifest
from spmlkit.ownership import writers as own_writers
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import opened_path, snapshot, user, manifest_lines, _owned_then_replaced, _mode, _list_by_hand, _before_open, _to_link


def test_a_new_folder_is_made_with_its_marker_and_manifest(tmp_path):
    out = ownership.claim(tmp_path / "run", "run")
    mark = json.loads((out / ownership.MARKER).read_text())
    assert mark["written_by"] == "spmlkit" and mark["kind"] == "run" and (out / ownership.MANIFEST).is_file()
    ownership.write_json(out / "a" / "b.json", {"x": 1})
    lines = (out / ownership.MANIFEST).read_text().splitlines()
    assert [ln.split(" ")[0] + " " + ln.split(" ", 2)[2] for ln in lines] == ["d a", "f a/b.json"]
    assert ownership.foreign(out) == []


@pytest.mark.parametrize("where", ["folder", "file"])
def test_links_inside_an_owned_folder_are_never_followed(tmp_path, user, where):
    out = ownership.claim(tmp_path / "run", "run")
    ownership.write_text(out / "members" / "wan" / "metrics.jsonl", "{}\n")
    before = snapshot(user)
    if where == "folder":  # a member folder replaced by a link to the user's folder (issue 33)
        ownership.remove(out / "members" / "wan")
        os.symlink(user, out / "members" / "wan")
        target = out / "members" / "wan" / "notes.txt"
    else:
        os.symlink(user / "notes.txt", out / "report.md")
        target = out / "report.md"
    for write in (lambda: ownership.write_text(target, "spmlkit's\n"),
                  lambda: ownership.append_jsonl(target, {"a": 1}),
                  lambda: ownership.open_memmap(target, mode="r+")):
        with pytest.raises(ConfigError, match="is a symbolic link .* never writes through links"):
            write()
    assert snapshot(user) == before and os.path.islink(target if where == "file" else out / "members" / "wan")


def test_hard_links_are_replaced_by_name_and_never_modified_in_place(tmp_path, user):
    out = ownership.claim(tmp_path / "run", "run")
    ownership.append_jsonl(out / "metrics.jsonl", {"epoch": 1})
    os.link(out / "metrics.jsonl", user / "backup.jsonl")  # the user keeps a hard link as a backup
    ownership.append_jsonl(out / "metrics.jsonl", {"epoch": 2})  # rewritten, not appended in place
    assert (user / "backup.jsonl").read_text() == '{"epoch": 1}\n'
    assert (out / "metrics.jsonl").read_text() == '{"epoch": 1}\n{"epoch": 2}\n'
    os.link(out / "metrics.jsonl", user / "backup2.jsonl")
    with pytest.raises(ConfigError, match="has 2 names"):
        ownership.open_memmap(out / "metrics.jsonl", mode="r+")


def test_the_manifest_reader_skips_what_it_cannot_read_and_honours_removals(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    ownership.write_text(out / "b.txt", "b")
    with open(out / ownership.MANIFEST, "a") as fh:  # damaged lines: skipped, the rest still read
        fh.write("garbage\nf x:y:z:1:2 c.txt\nf 1:2 d.txt\nq 1:2:-:-:- e.txt\nf -:2:-:-:- g.txt\n")
    ownership.write_text(out / "a.txt", "a2")  # still spmlkit's
    with open(out / ownership.MANIFEST, "a") as fh:
        fh.write("- 0:0:-:-:- b.txt\n")  # listed as removed: not spmlkit's any more
    with pytest.raises(ConfigError, match="b.txt: this file was not written by spmlkit"):
        ownership.write_text(out / "b.txt", "b2")
    with open(out / ownership.MANIFEST, "a") as fh:
        fh.write("f 1:2:-:-:- partial")  # a writer mid-append: no line break yet
    ownership.write_text(out / "a.txt", "a3")
    assert ownership.foreign(out) == ["b.txt"] and (out / "a.txt").read_text() == "a3"


def test_a_manifest_rewritten_shorter_is_read_again_whole(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    ownership.write_text(out / "b.txt", "b")
    lines = (out / ownership.MANIFEST).read_text().splitlines(keepends=True)
    (out / ownership.MANIFEST).write_text(lines[1])  # the same inode, shorter: only b listed now
    assert ownership.foreign(out) == ["a.txt"]
    with pytest.raises(ConfigError, match="a.txt: this file was not written"):
        ownership.write_text(out / "a.txt", "again")
    ownership.write_text(out / "b.txt", "again")


def test_a_missing_or_linked_manifest_stops_every_write(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    os.rename(out / ownership.MANIFEST, tmp_path / "m")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "a.txt", "b")
    assert str(e.value) == (f"{out}: spmlkit's list of what it wrote there ({ownership.MANIFEST}) is missing; the "
                            "folder was changed by someone else — choose another -o")
    os.symlink(tmp_path / "m", out / ownership.MANIFEST)
    with pytest.raises(ConfigError, match="is not spmlkit's manifest \\(a link or not a regular file\\)"):
        ownership.write_text(out / "a.txt", "b")
    os.unlink(out / ownership.MANIFEST)
    os.link(tmp_path / "m", out / ownership.MANIFEST)
    with pytest.raises(ConfigError, match="is not spmlkit's manifest"):
        ownership.write_text(out / "a.txt", "b")
    assert (out / "a.txt").read_text() == "a" and (tmp_path / "m").read_text().count("\n") == 1


def test_a_folder_made_by_a_parallel_worker_at_the_same_moment_is_checked_not_fatal(tmp_path, monkeypatch):
    """Two ``--jobs`` workers making the same sub-folder: the one whose ``mkdir`` loses
    (FileExistsError) checks the folder found there like any other: the winner's listed
    folder or an empty one is used; one holding a file of anyone else's is refused."""
    out = ownership.claim(tmp_path / "r", "run")
    real_mkdir = os.mkdir
    winner = {}

    def racing_mkdir(path, *a, **kw):  # the other worker gets there first
        real_mkdir(path, *a, **kw)
        if winner.get("lists"):
            ownership._ROOTS[str(out)].record("d", os.path.relpath(path, out), os.lstat(path))
        if winner.get("puts"):
            open(os.path.join(path, winner["puts"]), "w").close()
        raise FileExistsError(17, "File exists", path)

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    winner["lists"] = True
    ownership.write_text(out / "work" / "a.json", "{}")  # listed by the winner: used
    winner.clear()
    ownership.write_text(out / "empty" / "a.json", "{}")  # not listed yet, empty: taken
    winner["puts"] = "theirs.txt"
    with pytest.raises(ConfigError, match="this folder was not written by spmlkit"):
        ownership.write_text(out / "full" / "a.json", "{}")
    monkeypatch.setattr(os, "mkdir", real_mkdir)
    assert (out / "work" / "a.json").read_text() == "{}" and (out / "empty" / "a.json").read_text() == "{}"
    assert {"d work", "f work/a.json", "d empty", "f empty/a.json"} <= set(manifest_lines(out))
    assert (out / "full" / "theirs.txt").exists() and not (out / "full" / "a.json").exists()


def test_a_lock_file_made_by_a_parallel_worker_at_the_same_moment_is_used_when_listed(tmp_path, monkeypatch):
    """``touch`` losing the O_EXCL race to another worker uses the winner's listed file; a
    file nobody lists (planted there) is refused like any file of anyone else's."""
    out = ownership.claim(tmp_path / "r", "run")
    real_open = os.open

    def racing_open(path, flags, *a, **kw):
        if flags & os.O_EXCL:
            fd = real_open(path, flags, *a, **kw)
            os.close(fd)
            path = opened_path(path, kw.get("dir_fd"))
            if racing_open.lists:
                ownership._ROOTS[str(out)].record("f", os.path.relpath(path, out), os.lstat(path), inplace=True)
            raise FileExistsError(17, "File exists", path)
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", racing_open)
    racing_open.lists = True
    assert ownership.touch(out / "a.lock") == out / "a.lock"
    racing_open.lists = False
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.touch(out / "b.lock")


def test_files_made_in_place_and_copied_are_listed(tmp_path, user):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.copy_file(user / "notes.txt", out / "copy.txt")
    assert (out / "copy.txt").read_text() == "mine\n" and (user / "notes.txt").read_text() == "mine\n"
    assert ownership.new_file(out / "n" / "new.bin") == out / "n" / "new.bin" and (out / "n" / "new.bin").stat().st_size == 0
    with pytest.raises(ConfigError) as e:
        ownership.new_file(out / "n" / "new.bin")
    assert str(e.value) == (f"{out / 'n' / 'new.bin'} exists already; spmlkit writes a new file there and never reuses "
                            "one")
    ownership.touch(out / "t.lock")
    ownership.touch(out / "t.lock")  # spmlkit's already: left as it is
    assert manifest_lines(out) == ["f copy.txt", "d n", "f n/new.bin", "f t.lock"]
    (out / "t.lock").unlink()
    (out / "t.lock").write_text("the user's")
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.touch(out / "t.lock")
    assert ownership.foreign(out) == ["t.lock"]


def _write_memmap(path, index, value, **open_kw):
    """Open ``path`` through ``ownership.open_memmap(path, **open_kw)``, set ``[index] = value``,
    flush and close it."""
    m = ownership.open_memmap(path, **open_kw)
    m[index] = value
    m.flush()
    del m


def test_memory_mapped_files_are_made_new_and_modified_only_when_spmlkits(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    _write_memmap(out / "s.npy", slice(None), 1, mode="w+", dtype=np.float32, shape=(3,))
    _write_memmap(out / "s.npy", 1, 5, mode="r+")
    r = ownership.open_memmap(out / "s.npy", mode="r")
    assert r.tolist() == [1, 5, 1] and r.mode == "r"
    m = ownership.open_memmap(out / "s.npy", mode="w+", dtype=np.int8, shape=(2,))  # spmlkit's: made new
    assert m.tolist() == [0, 0] and ownership.foreign(out) == []
    del m
    (out / "u.npy").write_bytes(b"mine")
    for mode in ("w+", "r+", "r"):
        with pytest.raises(ConfigError, match="not written by spmlkit"):
            ownership.open_memmap(out / "u.npy", mode=mode, dtype=np.int8, shape=(2,))
    assert (out / "u.npy").read_bytes() == b"mine"


def test_appending_creates_lists_and_keeps_appending(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.append_jsonl(out / "m" / "log.jsonl", {"a": 1})
    ownership.append_jsonl(out / "m" / "log.jsonl", {"a": 2})
    assert (out / "m" / "log.jsonl").read_text() == '{"a": 1}\n{"a": 2}\n'
    assert manifest_lines(out) == ["d m", "f m/log.jsonl"]  # listed once, in place (no stamp)
    line = (out / ownership.MANIFEST).read_text().splitlines()[1]
    assert line.split(" ")[1].endswith(":-:-")
    (out / "u.jsonl").write_text("mine\n")
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.append_jsonl(out / "u.jsonl", {"a": 1})
    assert (out / "u.jsonl").read_text() == "mine\n"


def test_files_another_library_wrote_in_an_owned_folder_are_listed(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    tb = ownership.folder(out / "tb", "run")
    (tb / "events.out.1").write_text("e")
    (tb / ".x.spml-ab.tmp").write_text("half")
    (tb / "sub").mkdir()
    ownership.record_new(tb)
    assert manifest_lines(out) == ["d tb", "f tb/events.out.1"]
    ownership.record_new(tb)  # once
    assert manifest_lines(out) == ["d tb", "f tb/events.out.1"]
    (out / "top.txt").write_text("t")
    ownership.record_new(out)
    assert manifest_lines(out)[-1] == "f top.txt"


def test_renames_move_only_spmlkits_files_within_owned_folders(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.tmpname", "a")
    ownership.rename(out / "a.tmpname", out / "d" / "a.txt")
    assert (out / "d" / "a.txt").read_text() == "a" and not (out / "a.tmpname").exists()
    assert ownership.foreign(out) == []
    ownership.write_text(out / "d" / "a.txt", "again")  # spmlkit's at its new name
    (out / "u.txt").write_text("mine")
    with pytest.raises(ConfigError) as e:
        ownership.rename(out / "u.txt", out / "v.txt")
    assert str(e.value).startswith(f"{out / 'u.txt'}: this file was not written by spmlkit")
    ownership.write_text(out / "b.txt", "b")
    with pytest.raises(ConfigError, match="u.txt: this file was not written"):
        ownership.rename(out / "b.txt", out / "u.txt")  # never over someone else's
    assert (out / "u.txt").read_text() == "mine" and (out / "b.txt").read_text() == "b"
    with pytest.raises(ConfigError):
        ownership.rename(out / "missing.txt", out / "w.txt")


def test_a_folder_removed_or_replaced_under_spmlkit_stops_its_writes(tmp_path):
    out = _owned_then_replaced(tmp_path)
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "a.txt", "b")
    # (by its inode; a new folder may get the old one's inode number: then its manifest is missing)
    assert str(e.value) in (f"{out} was removed or replaced by someone else while spmlkit was using it; nothing "
                            "more is written there",
                            f"{out}: spmlkit's list of what it wrote there ({ownership.MANIFEST}) is missing; the "
                            "folder was changed by someone else — choose another -o")
    assert sorted(p.name for p in out.iterdir()) == ["theirs.txt"]


def test_a_folder_emptied_under_spmlkit_stops_its_writes_in_one_line(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    for p in out.iterdir():
        p.unlink()  # the same folder (inode), its marker and manifest gone
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "new.txt", "b")
    assert str(e.value) == (f"{out}: spmlkit's list of what it wrote there ({ownership.MANIFEST}) is missing; the "
                            "folder was changed by someone else — choose another -o")
    assert list(out.iterdir()) == []
    os.rmdir(out)
    with pytest.raises(ConfigError, match="was removed or replaced by someone else"):
        ownership.write_text(out / "new.txt", "b")
    with pytest.raises(ownership.UnownedPathError):  # and it is no longer registered
        ownership.write_text(out / "new.txt", "b")


def test_a_file_changed_in_place_by_someone_else_is_not_spmlkits(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "report.md", "spmlkit's\n")
    with open(out / "report.md", "a") as fh:  # the same inode, edited by the user: another size and time
        fh.write("the user's notes\n")
    with pytest.raises(ConfigError, match="report.md: this file was not written by spmlkit"):
        ownership.write_text(out / "report.md", "again")
    assert (out / "report.md").read_text() == "spmlkit's\nthe user's notes\n"
    ownership.append_jsonl(out / "log.jsonl", {"a": 1})  # appended by spmlkit: listed without a stamp
    ownership.append_jsonl(out / "log.jsonl", {"a": 2})
    ownership.write_text(out / "log.jsonl", "rewritten\n")


def test_an_inode_of_another_generation_is_not_spmlkits(tmp_path, monkeypatch):
    """A freed inode number given to someone else's new file or folder has another
    generation (ext4, xfs, btrfs): it is not what spmlkit listed."""
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "d" / "a.txt", "a")
    real = own_manifest._generation
    monkeypatch.setattr(own_manifest, "_generation", lambda path, st: None)  # a file system without generations
    ownership.write_text(out / "d" / "a.txt", "b")
    monkeypatch.setattr(own_manifest, "_generation", real)
    ownership.write_text(out / "d" / "a.txt", "c")
    monkeypatch.setattr(own_manifest, "_generation", lambda path, st: -7)  # every inode: another generation
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.write_text(out / "d" / "a.txt", "d")
    assert (out / "d" / "a.txt").read_text() == "c"


def test_a_manifest_replaced_by_another_file_is_read_again_whole(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    ownership.write_text(out / "b.txt", "b")
    b_line = (out / ownership.MANIFEST).read_text().splitlines(keepends=True)[1]
    (tmp_path / "m").write_text(b_line + "padding that is longer than what was read before\n" * 3)
    os.replace(tmp_path / "m", out / ownership.MANIFEST)  # another inode, longer: read from its start
    with pytest.raises(ConfigError, match="a.txt: this file was not written"):
        ownership.write_text(out / "a.txt", "again")
    ownership.write_text(out / "b.txt", "again")


def test_a_file_written_whole_then_appended_stays_spmlkits(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "log.jsonl", '{"a": 0}\n')
    ownership.append_jsonl(out / "log.jsonl", {"a": 1})  # now modified in place: listed without a stamp
    ownership.append_jsonl(out / "log.jsonl", {"a": 2})
    assert (out / "log.jsonl").read_text() == '{"a": 0}\n{"a": 1}\n{"a": 2}\n' and ownership.foreign(out) == []


def test_a_link_inside_an_owned_folder_is_refused_word_for_word(tmp_path, user):
    out = ownership.claim(tmp_path / "r", "run")
    os.symlink(user / "notes.txt", out / "report.md")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "report.md", "x")
    assert str(e.value) == (f"{out / 'report.md'} is a symbolic link (to {user / 'notes.txt'}) inside a folder spmlkit "
                            "wrote; spmlkit never writes through links — remove the link or choose another -o")
    os.symlink(user, out / "sub")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "sub" / "x.txt", "x")
    assert str(e.value).startswith(f"{out / 'sub'} is a symbolic link (to {user}) inside a folder spmlkit wrote")


def test_refusals_of_links_hard_links_and_unclaimed_paths_word_for_word(tmp_path, user):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.append_jsonl(out / "m.jsonl", {"a": 1})
    os.link(out / "m.jsonl", user / "copy.jsonl")
    with pytest.raises(ConfigError) as e:
        ownership.open_memmap(out / "m.jsonl", mode="r+")
    assert str(e.value) == (f"{out / 'm.jsonl'} has 2 names (hard links); spmlkit never modifies a file shared with "
                            "another path in place — remove the other names or choose another -o")
    os.symlink(user / "notes.txt", tmp_path / "p.csv")
    with pytest.raises(ConfigError) as e:
        ownership.output_file(tmp_path / "p.csv", overwrite=True, option="--output")
    assert str(e.value) == (f"--output {tmp_path / 'p.csv'} is a symbolic link (to {user / 'notes.txt'}); spmlkit "
                            "never writes through links — give the real path or remove the link")
    with pytest.raises(ownership.UnownedPathError) as e:
        ownership.write_text(tmp_path / "x.txt", "no")
    assert str(e.value) == (f"{tmp_path / 'x.txt'}: not inside a folder this process claimed (spmlkit.ownership."
                            "claim/folder/build must be called first)")
    os.rename(out / ownership.MANIFEST, tmp_path / "m")
    os.symlink(tmp_path / "m", out / ownership.MANIFEST)
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "m.jsonl", "x")
    assert str(e.value) == (f"{out / ownership.MANIFEST}: is not spmlkit's manifest (a link or not a regular file); "
                            "refusing to use the folder — choose another -o")


def test_an_array_written_whole_then_mapped_for_writing_stays_spmlkits(tmp_path):
    import numpy as np

    out = ownership.claim(tmp_path / "r", "run")
    ownership.save_npy(out / "a.npy", np.zeros(3))
    m = ownership.open_memmap(out / "a.npy", mode="r+")
    m[0] = 7
    m.flush()
    del m
    m = ownership.open_memmap(out / "a.npy", mode="r+")  # still spmlkit's (listed as modified in place)
    assert m.tolist() == [7, 0, 0]
    del m
    assert ownership.foreign(out) == []


def test_names_with_spaces_and_the_permissions_of_files_made_in_place(tmp_path):
    import numpy as np

    out = ownership.claim(tmp_path / "r", "run")
    ownership.append_jsonl(out / "my runs" / "log file.jsonl", {"a": 1})
    ownership.new_file(out / "my runs" / "new file.bin")
    m = ownership.open_memmap(out / "my runs" / "mapped file.npy", mode="w+", dtype=np.float32, shape=(2,))
    assert m.dtype == np.float32
    del m
    for name in ("log file.jsonl", "new file.bin", "mapped file.npy"):
        p = out / "my runs" / name
        assert p.is_file() and not (out / "my").exists(), name
        got, want = _mode(p)
        assert got == want, name
    ownership.rename(out / "my runs" / "new file.bin", out / "my runs" / "renamed file.bin")
    assert (out / "my runs" / "renamed file.bin").is_file()
    assert ownership.remove(out / "my runs" / "renamed file.bin") and not (out / "my runs" / "renamed file.bin").exists()
    ownership.claim(out / "my runs" / "deep er", "run")
    with ownership.build(out / "my runs" / "a bundle", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    ownership._ROOTS.pop(str(out / "my runs" / "a bundle"))
    ownership.write_text(out / "my runs" / "a bundle" / "x.json", "{}")  # found again by its marker
    assert ownership.foreign(out) == []


def test_a_read_only_map_changes_nothing_in_the_manifest(tmp_path):
    import numpy as np

    out = ownership.claim(tmp_path / "r", "run")
    ownership.save_npy(out / "a.npy", np.arange(3))
    before = (out / ownership.MANIFEST).read_text()
    assert ownership.open_memmap(out / "a.npy", mode="r").tolist() == [0, 1, 2]
    assert (out / ownership.MANIFEST).read_text() == before


def test_files_other_libraries_write_deep_inside_are_listed_and_may_grow(tmp_path, user):
    out = ownership.claim(tmp_path / "r", "run")
    tb = ownership.folder(out / "runs" / "tb", "run")
    (tb / "events.1").write_text("e")
    os.symlink(user / "notes.txt", tb / "link")
    ownership.record_new(tb)
    assert manifest_lines(out) == ["d runs", "d runs/tb", "f runs/tb/events.1"]
    with open(tb / "events.1", "a") as fh:
        fh.write("more events")  # its library goes on writing
    assert ownership.foreign(out) == ["runs/tb/link"]


def test_renamed_files_keep_their_generation(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.part", "a")
    ownership.rename(out / "a.part", out / "a.txt")
    line = [ln for ln in (out / ownership.MANIFEST).read_text().splitlines() if ln.endswith(" a.txt")][-1]
    gen = line.split(" ")[1].split(":")[2]
    want = own_manifest._generation(str(out / "a.txt"), os.lstat(out / "a.txt"))
    assert gen == ("-" if want is None else str(want))


def test_compressed_json_arrays_and_json_written_through_an_owned_folder(tmp_path):
    import numpy as np

    from spmlkit import io

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_json_gz(out / "runs.json.gz", {"runs": [np.float32(0.5)]})
    ownership.write_json(out / "config.json", {"lr": np.float64(0.1)})
    assert io.read_json(out / "runs.json.gz") == {"runs": [0.5]} and io.read_json(out / "config.json") == {"lr": 0.1}
    with pytest.raises(ValueError):
        ownership.save_npy(out / "o.npy", np.array([{"a": 1}], dtype=object))  # never pickled
    assert sorted(manifest_lines(out)) == ["f config.json", "f runs.json.gz"]


def test_a_touched_lock_file_stays_spmlkits_while_its_holder_writes_it(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.touch(out / "my lock")
    got, want = _mode(out / "my lock")
    assert got == want
    fd = os.open(out / "my lock", os.O_WRONLY)
    os.write(fd, b"pid 12345\n")  # its holder writes into it in place
    os.close(fd)
    ownership.touch(out / "my lock")
    assert (out / "my lock").read_text() == "pid 12345\n" and ownership.foreign(out) == []


def test_a_hard_linked_log_is_rewritten_with_numpy_values(tmp_path, user):
    import numpy as np

    out = ownership.claim(tmp_path / "r", "run")
    ownership.append_jsonl(out / "m.jsonl", {"a": 1})
    os.link(out / "m.jsonl", user / "backup.jsonl")
    ownership.append_jsonl(out / "m.jsonl", {"loss": np.float32(0.25)})
    assert (out / "m.jsonl").read_text() == '{"a": 1}\n{"loss": 0.25}\n'
    with pytest.raises(ownership.UnownedPathError) as e:
        with ownership.write_output_file(tmp_path / "never.csv"):
            pass
    assert str(e.value) == f"{tmp_path / 'never.csv'}: not checked by spmlkit.ownership.output_file"


def test_an_inode_of_another_generation_under_a_name_with_spaces_is_not_spmlkits(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "my dir" / "a b.txt", "a")

    def other_generation(path, st):  # the inode found at the path asked about has another generation
        return -7 if st is not None and os.path.lexists(path) and os.lstat(path).st_ino == st.st_ino else None

    monkeypatch.setattr(own_manifest, "_generation", other_generation)
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.write_text(out / "my dir" / "a b.txt", "b")
    assert (out / "my dir" / "a b.txt").read_text() == "a"


def test_a_manifest_swapped_for_a_link_before_it_is_opened_is_neither_read_nor_written(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    manifest = out / ownership.MANIFEST
    (out / "theirs.txt").write_text("the user's")
    st = os.lstat(out / "theirs.txt")
    forged = tmp_path / "forged"  # a manifest listing the user's file
    forged.write_text(manifest.read_text() + f"f {st.st_dev}:{st.st_ino}:-:-:- theirs.txt\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's\n")
    listed = manifest.read_text()
    # appended to: the line is not written through the link
    done = _before_open(monkeypatch, manifest, _to_link(manifest, victim), when=lambda f: f & os.O_APPEND)
    with pytest.raises(OSError):
        ownership.write_text(out / "b.txt", "b")
    assert done and victim.read_text() == "the user's\n"
    monkeypatch.undo()
    # read (by another process, from the start): the forged list is not read through the link
    os.unlink(manifest)
    manifest.write_text(listed)
    ownership._ROOTS.pop(str(out))
    ownership.claim(out, "run")
    done = _before_open(monkeypatch, manifest, _to_link(manifest, forged),
                        when=lambda f: not f & (os.O_WRONLY | os.O_RDWR))
    with pytest.raises(OSError):
        ownership.write_text(out / "theirs.txt", "spmlkit's")
    assert done and (out / "theirs.txt").read_text() == "the user's"


def test_the_generation_of_a_file_is_read_without_blocking_or_writing(tmp_path, monkeypatch):
    import signal

    out = ownership.claim(tmp_path / "r", "run")
    lock = out / "held.lock"
    opened = []
    real = os.open

    def spy(p, flags, *a, **kw):
        if os.fspath(p) == str(lock):
            opened.append(flags)
        return real(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", spy)
    ownership.touch(lock)  # created (O_CREAT), then only read: never opened for writing to read its generation
    assert len(opened) >= 1 and all(f & os.O_ACCMODE == os.O_RDONLY for f in opened[1:])
    monkeypatch.undo()

    def to_fifo():  # the file replaced by a named pipe between its lstat and its open: the open does not wait
        os.unlink(lock2)
        os.mkfifo(lock2)

    class Hung(Exception):
        pass

    def hung(*_):
        raise Hung("blocked opening a named pipe")

    lock2 = out / "other.lock"
    done = _before_open(monkeypatch, lock2, to_fifo, when=lambda f: not f & os.O_CREAT)
    old = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    try:
        ownership.touch(lock2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert done


def test_an_earlier_inode_of_a_name_stays_listed_in_this_process_as_in_the_next(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    os.link(out / "a.txt", tmp_path / "kept")  # the first version kept (a backup by hard link)
    assert ownership.foreign(out) == []  # (the manifest read)
    ownership.write_text(out / "a.txt", "a2")  # another inode
    os.rename(tmp_path / "kept", out / "a.txt")  # the first version restored
    ownership.write_text(out / "a.txt", "a3")  # spmlkit's: this process agrees with the manifest
    ownership._ROOTS.pop(str(out))
    os.link(out / "a.txt", tmp_path / "kept2")
    ownership.claim(out, "run")
    ownership.write_text(out / "a.txt", "a4")
    os.rename(tmp_path / "kept2", out / "a.txt")
    ownership.write_text(out / "a.txt", "a5")


def test_a_folder_removed_while_in_use_is_not_written_again(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    shutil.rmtree(out)
    with pytest.raises(ConfigError, match="was removed or replaced by someone else while spmlkit was using it; "
                                          "nothing more is written there"):
        ownership.write_text(out / "a.txt", "a")
    assert not out.exists()


def test_an_inode_listed_as_another_type_is_refused_for_writing(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "a.txt").write_text("the user's")
    (out / "d").mkdir()
    (out / "d" / "mine.txt").write_text("the user's")
    _list_by_hand(out, "d", "a.txt", out / "a.txt")  # a file listed as a folder
    _list_by_hand(out, "f", "d", out / "d")  # a folder listed as a file
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.write_text(out / "a.txt", "x")
    with pytest.raises(ConfigError, match="this folder was not written by spmlkit"):
        ownership.write_text(out / "d" / "x.txt", "x")
    assert (out / "a.txt").read_text() == "the user's" and not (out / "d" / "x.txt").exists()


def test_a_file_a_parallel_worker_makes_meanwhile_is_waited_for_a_second_at_most(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    slept = []
    monkeypatch.setattr(time, "sleep", lambda s: slept.append(s))
    excl = lambda f: f & os.O_EXCL  # noqa: E731

    def worker(name, listed):
        def make():
            (out / name).write_text("")
            if listed:
                ownership._ROOTS[str(out)].record(listed, name, os.lstat(out / name), inplace=True)
        return make

    _before_open(monkeypatch, out / "a.lock", worker("a.lock", "f"), when=excl)
    ownership.touch(out / "a.lock")  # made and listed by the worker: taken at once
    assert slept == []
    _before_open(monkeypatch, out / "b.lock", worker("b.lock", None), when=excl)
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.touch(out / "b.lock")  # made by someone else: refused after 100 waits of 10 ms
    assert slept == [0.01] * 100
    slept.clear()
    _before_open(monkeypatch, out / "c.lock", worker("c.lock", "d"), when=excl)
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.touch(out / "c.lock")  # listed as a folder: not a file of spmlkit's
    assert slept == [0.01] * 100
    slept.clear()
    real = os.open

    def gone(p, flags, *a, **kw):  # made by someone else, and removed again at once
        if opened_path(p, kw.get("dir_fd")) == str(out / "d.lock") and flags & os.O_EXCL and not slept:
            (out / "d.lock").write_text("")
            try:
                return real(p, flags, *a, **kw)
            finally:
                os.unlink(out / "d.lock")
        return real(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", gone)
    assert ownership.touch(out / "d.lock") == out / "d.lock" and slept == [0.01] * 100


# ---- the writers two folders down (names with a space), and what changes between their check and their open


def _after(monkeypatch, obj, name, action):
    """Run ``action`` once right after ``obj.name`` returns (a change between two of spmlkit's steps)."""
    real = getattr(obj, name)

    def wrapped(*a, **k):
        out = real(*a, **k)
        action()
        return out
    monkeypatch.setattr(obj, name, wrapped)


def _swap_folder(folder, to):
    def swap():
        os.rename(folder, str(folder) + "-moved")
        os.symlink(to, folder)
    return swap


def test_the_writers_reach_a_file_two_folders_down_whose_name_has_a_space(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    sub = out / "a" / "b"
    ownership.append_jsonl(sub / "m l.jsonl", {"i": 1})
    ownership.append_jsonl(sub / "m l.jsonl", {"i": 2})
    assert (sub / "m l.jsonl").read_text() == '{"i": 1}\n{"i": 2}\n'
    for _ in range(2):  # new, then replacing spmlkit's own
        _write_memmap(sub / "x y.npy", slice(None), [1, 2, 3], mode="w+", dtype=np.float32, shape=(3,))
    _write_memmap(sub / "x y.npy", 0, 5, mode="r+")
    assert ownership.open_memmap(sub / "x y.npy", mode="r").tolist() == [5, 2, 3]
    ownership.rename(sub / "x y.npy", sub / "z w.npy")
    assert sorted(os.listdir(sub)) == ["m l.jsonl", "z w.npy"]
    assert np.load(sub / "z w.npy").tolist() == [5, 2, 3]


def test_an_append_never_goes_through_a_link_swapped_in_after_its_check(tmp_path, user, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.append_jsonl(out / "m.jsonl", {"i": 1})
    monkeypatch.chdir(tmp_path)
    shown = os.path.join("r", "m.jsonl")  # as the user spelled it
    _before_open(monkeypatch, out / "m.jsonl", _to_link(out / "m.jsonl", user / "notes.txt"),
                 when=lambda flags: flags & os.O_APPEND)
    with pytest.raises(ConfigError) as e:
        ownership.append_jsonl(shown, {"i": 2})
    assert str(e.value) == (f"{shown} is a symbolic link (to {user / 'notes.txt'}) inside a folder spmlkit wrote; "
                            "spmlkit never writes through links — remove the link or choose another -o")
    assert (user / "notes.txt").read_text() == "mine\n"


def test_a_new_append_or_memmap_never_opens_a_link_that_appeared_after_the_check(tmp_path, user, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    for path, write in ((out / "m.jsonl", lambda p: ownership.append_jsonl(p, {"i": 1})),
                        (out / "x.npy", lambda p: ownership.open_memmap(p, mode="w+", dtype=np.uint8, shape=(4,)))):
        if path.suffix == ".npy":
            write(path)  # spmlkit's own file, removed and made again by the w+ open
        with monkeypatch.context() as mp:
            _before_open(mp, path, lambda: os.symlink(user / "notes.txt", path), when=lambda flags: flags & os.O_CREAT)
            with pytest.raises(FileExistsError):
                write(path)
        assert (user / "notes.txt").read_text() == "mine\n" and os.readlink(path) == str(user / "notes.txt")


def test_a_hard_linked_file_appended_to_is_read_without_following_a_link_swapped_in(tmp_path, user, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.append_jsonl(out / "m.jsonl", {"i": 1})
    os.link(out / "m.jsonl", tmp_path / "other-name")
    _before_open(monkeypatch, out / "m.jsonl", _to_link(out / "m.jsonl", user / "notes.txt"),
                 when=lambda flags: not flags & os.O_NONBLOCK)  # (the read, not the generation's look)
    with pytest.raises(OSError) as e:
        ownership.append_jsonl(out / "m.jsonl", {"i": 2})
    assert e.value.errno == 40  # ELOOP: O_NOFOLLOW met the link
    assert (user / "notes.txt").read_text() == "mine\n"


def test_a_memmap_opened_for_change_refuses_a_hard_link_made_after_its_first_check(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    np.save(ownership.new_file(out / "x.npy"), np.zeros(3, np.float32))
    _after(monkeypatch, own_writers, "target", lambda: os.link(out / "x.npy", tmp_path / "other-name"))
    with pytest.raises(ConfigError) as e:
        ownership.open_memmap(out / "x.npy", mode="r+")
    assert str(e.value) == (f"{out / 'x.npy'} has 2 names (hard links); spmlkit never modifies a file shared with "
                            "another path in place — remove the other names or choose another -o")


def test_a_memmap_of_a_missing_file_is_file_not_found(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    with pytest.raises(FileNotFoundError) as e:
        ownership.open_memmap(out / "x.npy", mode="r+")
    assert (e.value.errno, e.value.strerror, e.value.filename) == (2, "No such file or directory", str(out / "x.npy"))


def test_a_memmap_is_opened_through_its_folder_even_when_the_folder_is_swapped_for_a_link(tmp_path, user, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    sub = out / "s"
    ownership.target(sub / "x.npy")
    with monkeypatch.context() as mp:
        _before_open(mp, sub / "x.npy", _swap_folder(sub, user), when=lambda flags: flags & os.O_CREAT)
        m = ownership.open_memmap(sub / "x.npy", mode="w+", dtype=np.uint8, shape=(2,))
        m[:] = 7
        m.flush()
        del m
    assert sorted(os.listdir(user)) == ["notes.txt"]
    moved = tmp_path / "r" / "s-moved"
    assert np.load(moved / "x.npy").tolist() == [7, 7]
    os.unlink(sub)
    os.rename(moved, sub)
    with monkeypatch.context() as mp:
        _after(mp, own_manifest._Root, "inplace", _swap_folder(sub, user))
        assert ownership.open_memmap(sub / "x.npy", mode="r+").tolist() == [7, 7]
    assert sorted(os.listdir(user)) == ["notes.txt"]


def test_a_rename_refuses_a_source_replaced_after_its_check(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "spmlkit's\n")

    def replace():
        os.rename(out / "a.txt", tmp_path / "a.old")  # (kept: its inode number is not reused)
        (out / "a.txt").write_text("someone else's\n")
    _after(monkeypatch, own_writers, "target", replace)
    with pytest.raises(ConfigError) as e:
        ownership.rename(out / "a.txt", out / "b.txt")
    assert str(e.value).startswith(f"{out / 'a.txt'}: this file was not written by spmlkit (it is not listed in ")
    assert sorted(os.listdir(out)) == sorted(["a.txt", ownership.MARKER, ownership.MANIFEST])
    assert (out / "a.txt").read_text() == "someone else's\n"


def test_a_link_or_another_file_appearing_between_the_checks_and_the_write_is_refused(tmp_path, user, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    with monkeypatch.context() as mp:  # a link swapped in after target()'s check, before the write's own
        _after(mp, own_writers, "target", _to_link(out / "a.txt", user / "notes.txt"))
        with pytest.raises(ConfigError) as e:
            ownership.write_text(out / "a.txt", "b")
    assert str(e.value) == (f"{out / 'a.txt'} is a symbolic link (to {user / 'notes.txt'}) inside a folder spmlkit "
                            "wrote; spmlkit never writes through links — remove the link or choose another -o")
    assert (user / "notes.txt").read_text() == "mine\n"
    ownership.append_jsonl(out / "m.jsonl", {"i": 1})

    def replace():
        os.rename(out / "m.jsonl", tmp_path / "m.old")  # (kept: its inode number is not reused)
        (out / "m.jsonl").write_text("someone else's\n")
    with monkeypatch.context() as mp:
        _before_open(mp, out / "m.jsonl", replace, when=lambda flags: flags & os.O_APPEND)
        with pytest.raises(ConfigError) as e:
            ownership.append_jsonl(out / "m.jsonl", {"i": 2})
    assert str(e.value) == f"{out / 'm.jsonl'} was replaced while spmlkit appended to it; nothing was written"
    assert (out / "m.jsonl").read_text() == "someone else's\n"
    ownership.append_jsonl(out / "n.jsonl", {"i": 1})
    with monkeypatch.context() as mp:  # another name made for it between the check and the open
        _before_open(mp, out / "n.jsonl", lambda: os.link(out / "n.jsonl", tmp_path / "n-other"),
                     when=lambda flags: flags & os.O_APPEND)
        with pytest.raises(ConfigError, match="was replaced while spmlkit appended to it"):
            ownership.append_jsonl(out / "n.jsonl", {"i": 2})
    assert (tmp_path / "n-other").read_text() == '{"i": 1}\n'


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), OSError("the disk went away")])
def test_a_failed_append_names_the_file(tmp_path, monkeypatch, exc):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.append_jsonl(out / "m.jsonl", {"i": 1})

    def fail(fd, data):
        raise exc
    monkeypatch.setattr(os, "write", fail)
    with pytest.raises(OSError) as e:
        ownership.append_jsonl(out / "m.jsonl", {"i": 2})
    assert (e.value.errno, e.value.strerror, e.value.filename) == (
        exc.errno, exc.strerror or str(exc), str(out / "m.jsonl"))


def test_a_memmap_for_change_of_a_file_with_two_names_is_refused_and_a_write_never_follows_a_swapped_folder(
        tmp_path, user, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    np.save(ownership.new_file(out / "x.npy"), np.zeros(3, np.float32))
    os.link(out / "x.npy", tmp_path / "other-name")
    with pytest.raises(ConfigError) as e:
        ownership.open_memmap(out / "x.npy", mode="r+")
    assert str(e.value).startswith(f"{out / 'x.npy'} has 2 names (hard links); spmlkit never modifies a file shared")
    sub = out / "s"
    ownership.write_text(sub / "a.txt", "a")
    with monkeypatch.context() as mp:  # the folder swapped for a link after the write's own check
        _after(mp, own_writers, "_check_at", _swap_folder(sub, user))
        ownership.write_text(sub / "a.txt", "b")
    assert sorted(os.listdir(user)) == ["notes.txt"] and (out / "s-moved" / "a.txt").read_text() == "b"


def test_a_new_file_where_one_exists_is_refused_naming_it(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.new_file(out / "a b" / "c d.txt")
    with pytest.raises(ConfigError) as e:
        ownership.new_file(out / "a b" / "c d.txt")
    assert str(e.value) == (f"{out / 'a b' / 'c d.txt'} exists already; spmlkit writes a new file there and never "
                            "reuses one")


def test_new_files_two_folders_down_are_made_where_asked(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    p = ownership.new_file(out / "a" / "b" / "c.txt")
    ownership.touch(out / "a" / "b" / "d.txt")
    assert sorted(os.listdir(out / "a" / "b")) == ["c.txt", "d.txt"] and p.read_text() == ""
    assert sorted(os.listdir(out / "a")) == ["b"]


# ---- a link (or someone else's file) met at the write's own check: named as the user spelled the path
@pytest.mark.parametrize("case", ["write, after target()", "append, after target()", "append, at its open"])
def test_a_link_swapped_in_before_the_write_is_named_as_the_user_spelled_it(tmp_path, user, monkeypatch, case):
    """Refused in one line naming the path as given (relative here, with a space in the name)
    and what the link points to, whichever of the write's checks meets it."""
    out = ownership.claim(tmp_path / "r", "run")
    path = out / "a b.txt"
    write = ownership.write_text if case.startswith("write") else ownership.append_jsonl
    record = "a" if case.startswith("write") else {"i": 1}
    write(path, record)
    monkeypatch.chdir(tmp_path)
    shown = os.path.join("r", "a b.txt")
    if case.endswith("after target()"):  # after target()'s check, before the write's own (_check_at)
        _after(monkeypatch, own_writers, "target", _to_link(path, user / "notes.txt"))
    else:  # after both checks, at the open that appends
        _before_open(monkeypatch, path, _to_link(path, user / "notes.txt"), when=lambda flags: flags & os.O_APPEND)
    with pytest.raises(ConfigError) as e:
        write(shown, record)
    assert str(e.value) == (f"{shown} is a symbolic link (to {user / 'notes.txt'}) inside a folder spmlkit wrote; "
                            "spmlkit never writes through links — remove the link or choose another -o")
    assert (user / "notes.txt").read_text() == "mine\n"


def test_a_file_appearing_during_a_write_listed_as_a_folder_is_not_replaced(tmp_path):
    """The write's own check (just before the rename) takes only a file listed as a file: the
    user's file made meanwhile, whose inode number the manifest lists for a folder (a file system
    without generation numbers), is refused and kept."""
    out = ownership.claim(tmp_path / "r", "run")
    with pytest.raises(ConfigError) as e:
        with ownership.atomic_path(out / "a.txt") as tmp:
            tmp.write_text("spmlkit's")
            (out / "a.txt").write_text("the user's")
            _list_by_hand(out, "d", "a.txt", out / "a.txt")
    assert str(e.value).startswith(f"{out / 'a.txt'}: this file was not written by spmlkit")
    assert (out / "a.txt").read_text() == "the user's"


def test_target_checks_the_file_at_a_name_with_a_space_and_its_other_names(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "a b.txt").write_text("the user's")
    with pytest.raises(ConfigError, match="a b.txt: this file was not written by spmlkit"):
        ownership.target(out / "a b.txt")
    ownership.write_text(out / "c d.txt", "c")
    assert ownership.target(out / "c d.txt", inplace=True) == out / "c d.txt"
    os.link(out / "c d.txt", tmp_path / "other name")
    assert ownership.target(out / "c d.txt") == out / "c d.txt"  # replaced by name: the other name keeps its bytes
    with pytest.raises(ConfigError) as e:
        ownership.target(out / "c d.txt", inplace=True)  # modified in place: refused
    assert str(e.value) == (f"{out / 'c d.txt'} has 2 names (hard links); spmlkit never modifies a file shared "
                            "with another path in place — remove the other names or choose another -o")


def test_touching_a_file_spmlkit_made_already_takes_it_at_once(tmp_path, monkeypatch):
    """No wait for a parallel worker when the file is there and spmlkit's (a name with a space)."""
    out = ownership.claim(tmp_path / "r", "run")
    slept = []
    monkeypatch.setattr(time, "sleep", lambda s: slept.append(s))
    assert ownership.touch(out / "a b.lock") == out / "a b.lock"  # made
    assert ownership.touch(out / "a b.lock") == out / "a b.lock" and slept == []  # there: taken at once
