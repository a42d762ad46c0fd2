"""The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""
import json
import os

import pytest

from spmlkit import ownership
from spmlkit.errors import ConfigError


def snapshot(folder):
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else os.readlink(p)
                                         if p.is_symlink() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture
def user(tmp_path):
    """A folder of the user's, with a file in it."""
    u = tmp_path / "user"
    u.mkdir()
    (u / "notes.txt").write_text("mine\n")
    return u


def test_a_new_folder_is_made_with_its_marker_and_manifest(tmp_path):
    out = ownership.claim(tmp_path / "run", "run")
    mark = json.loads((out / ownership.MARKER).read_text())
    assert mark["written_by"] == "spmlkit" and mark["kind"] == "run" and (out / ownership.MANIFEST).is_file()
    ownership.write_json(out / "a" / "b.json", {"x": 1})
    lines = (out / ownership.MANIFEST).read_text().splitlines()
    assert [ln.split(" ")[0] + " " + ln.split(" ", 2)[2] for ln in lines] == ["d a", "f a/b.json"]
    assert ownership.foreign(out) == []


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


def test_an_output_is_never_an_input_by_inode(tmp_path, user):
    src = user / "notes.txt"
    os.link(src, tmp_path / "hardlink.csv")
    os.symlink(user, tmp_path / "alias")
    for out, why in ((tmp_path / "hardlink.csv", "is an input"), (tmp_path / "alias" / "x.csv", "lies inside"),
                     (user / "new" / "deeper", "lies inside"), (tmp_path, "lies inside it")):
        with pytest.raises(ConfigError, match=why):
            ownership.refuse_inputs(out, [src if why != "lies inside" else user])
    ownership.refuse_inputs(tmp_path / "elsewhere", [src, user])  # fine


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


def test_stale_temporaries_carry_spmlkits_signature(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "config.json", "{}")
    (out / ".config.json.spml-abcd1234.tmp").write_text("half")  # a killed writer's
    (out / ".draft.tmp").write_text("mine")  # the user's
    assert ownership.remove_stale_temporaries(out) == 1 and (out / ".draft.tmp").exists()


def test_build_renames_into_place_and_replaces_only_its_own(tmp_path):
    out = tmp_path / "B"
    with ownership.build(out, "bundle") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    assert (out / "meta.json").exists() and ownership.foreign(out) == []
    with ownership.build(out, "bundle", replace=True) as tmp:
        ownership.write_text(tmp / "meta.json", '{"v": 2}')
    assert (out / "meta.json").read_text() == '{"v": 2}'
    assert [p.name for p in tmp_path.iterdir()] == ["B"]  # no temporary or old folder left
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(ConfigError, match="notes.txt was not written by spmlkit"):
        with ownership.build(out, "bundle", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", '{"v": 3}')
    assert (out / "notes.txt").read_text() == "mine\n" and (out / "meta.json").read_text() == '{"v": 2}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["B"]


def test_a_copied_folder_stays_spmlkits(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "last.pt", "x")
    shutil.copytree(out, tmp_path / "copy")  # every inode new: re-listed by name, once
    ownership.claim(tmp_path / "copy", "run")
    ownership.write_text(tmp_path / "copy" / "last.pt", "y")
    assert (tmp_path / "copy" / "last.pt").read_text() == "y" and ownership.foreign(tmp_path / "copy") == []


def test_folders_of_an_older_spmlkit_are_adopted_by_their_layout(tmp_path):
    ownership.register_kind("legacy-test", "a legacy test folder", is_ours=lambda p: (p / "config.json").exists(),
                            layout=("config.json", "model"))
    old = tmp_path / "old"
    (old / "model").mkdir(parents=True)
    (old / "config.json").write_text("{}")
    (old / "model" / "w.pt").write_text("w")
    (old / "notes.txt").write_text("mine\n")
    ownership.claim(old, "legacy-test")
    assert ownership.foreign(old) == ["notes.txt"]
    ownership.write_text(old / "config.json", '{"again": 1}')


def test_an_older_spmlkits_folder_is_replaced_by_its_layout(tmp_path):
    ownership.register_kind("legacy-build", "a legacy build", is_ours=lambda p: (p / "meta.json").exists(),
                            layout=("meta.json", "train"))
    old = tmp_path / "B"
    (old / "train").mkdir(parents=True)
    (old / "meta.json").write_text("{}")
    (old / "train" / "X.npy").write_text("x")
    with ownership.build(old, "legacy-build", replace=True) as tmp:
        ownership.write_text(tmp / "meta.json", '{"new": 1}')
    assert (old / "meta.json").read_text() == '{"new": 1}' and not (old / "train").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["B"]  # the old one removed, nothing left behind


def test_writing_outside_a_claimed_folder_is_a_programming_error(tmp_path):
    with pytest.raises(ownership.UnownedPathError):
        ownership.write_text(tmp_path / "x.txt", "no")
    assert not (tmp_path / "x.txt").exists()


def test_check_input_paths(tmp_path):
    f = tmp_path / "data.csv"
    f.write_text("x\n")
    ownership.check_input_paths([None, f, tmp_path, tmp_path / "not-yet"])  # files, folders, absent paths: fine
    with pytest.raises(ConfigError, match=r"^/dev/null: not a regular file or folder \(a device"):
        ownership.check_input_paths([f, "/dev/null"])
