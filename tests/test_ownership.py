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


def test_an_older_spmlkits_folder_inside_an_owned_folder_is_replaced_by_its_layout(tmp_path):
    """The same inside a folder spmlkit owns (a bench's ``bundles/NAME`` written by an older
    spmlkit): the old folder, renamed beside the new one, is cleared by its layout, not
    refused as an unlisted sub-folder of the owner."""
    ownership.register_kind("legacy-build2", "a legacy build", is_ours=lambda p: (p / "meta.json").exists(),
                            layout=("meta.json", "train"))
    bench = ownership.claim(tmp_path / "bench", "run")
    old = bench / "B"
    (old / "train").mkdir(parents=True)
    (old / "meta.json").write_text("{}")
    (old / "train" / "X.npy").write_text("x")
    with ownership.build(old, "legacy-build2", replace=True) as tmp:
        ownership.write_text(tmp / "meta.json", '{"new": 1}')
    assert (old / "meta.json").read_text() == '{"new": 1}' and not (old / "train").exists()
    assert sorted(p.name for p in bench.iterdir() if not p.name.startswith(".spml")) == ["B"]
    assert "o B" in manifest_lines(bench)


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


# ------------------------------------------ issue 39: what the mutation run of ownership.py asked
def manifest_lines(folder):
    return [ln.split(" ")[0] + " " + ln.split(" ", 2)[2] for ln in (folder / ownership.MANIFEST).read_text().splitlines()]


def test_the_marker_records_the_kind_and_the_folders_identity(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    st = out.stat()
    assert json.loads((out / ownership.MARKER).read_text()) == {
        "written_by": "spmlkit", "kind": "run", "manifest": ownership.MANIFEST, "folder": f"{st.st_dev}:{st.st_ino}"}
    assert (out / ownership.MANIFEST).read_text() == "" and ownership.created(out)
    assert not ownership.created(tmp_path / "elsewhere")


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


def test_names_with_a_line_break_are_never_written(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    for name in ("a\nf 1:2:-:-:- b", "c\rd"):
        with pytest.raises(ConfigError, match="spmlkit does not write names holding a line break"):
            ownership.write_text(out / name, "x")
    assert manifest_lines(out) == []


def test_refusals_of_outputs_that_are_inputs_say_which(tmp_path, user):
    src = user / "notes.txt"
    with pytest.raises(ConfigError) as e:
        ownership.refuse_inputs(src, [None, "", src], option="--out")
    assert str(e.value) == (f"--out {src} is an input of this command ({src}); spmlkit never writes over what it "
                            "reads — choose another output")
    with pytest.raises(ConfigError) as e:
        ownership.refuse_inputs(user / "x" / "y.csv", [user])
    assert str(e.value) == (f"-o/--out {user / 'x' / 'y.csv'} lies inside {user}, which this command reads; "
                            "spmlkit never writes into its inputs — choose an output outside it")
    ownership.refuse_inputs(user / "x" / "y.csv", [user], inside_ok=True)  # a data root: fine
    ownership.refuse_inputs(user / "notes.txt.out", [src, tmp_path / "missing"])  # a sibling, a missing input
    with pytest.raises(ConfigError) as e:
        ownership.refuse_inputs(tmp_path, [src])
    assert str(e.value) == (f"-o/--out {tmp_path}: {src}, which this command reads, lies inside it; spmlkit never "
                            "writes over (or removes) its inputs — choose another output")
    with pytest.raises(ConfigError, match="is an input"):
        ownership.refuse_inputs(user, [user])


def test_the_root_home_and_current_folders_are_never_replaced(tmp_path, monkeypatch):
    work = tmp_path / "a" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    assert ownership._is_protected("/") == "it is the filesystem root"
    assert ownership._is_protected(str(work)) == "it is the current directory"
    assert ownership._is_protected(str(tmp_path / "a")) == "it contains the current directory"
    assert ownership._is_protected(str(tmp_path / "home")) == "it is your home directory"
    assert ownership._is_protected(str(tmp_path / "b")) is None
    (work / "x").write_text("")
    with pytest.raises(ConfigError) as e:
        ownership.check_clearable(work, "run")
    assert str(e.value) == f"refusing to replace {work}: it is the current directory; pass a new folder to -o"
    (tmp_path / "home" / "x").write_text("")
    with pytest.raises(ConfigError, match="it is your home directory"):
        ownership.check_clearable(tmp_path / "home", "run")
    (tmp_path / "home" / "x").unlink()
    with pytest.raises(ConfigError) as e:
        ownership.claim(tmp_path / "home", "run")  # empty, but the home folder
    assert str(e.value) == (f"refusing to write into {tmp_path / 'home'}: it is your home directory; choose a new "
                            "folder with -o/--out")
    (work / "x").unlink()
    assert ownership.claim(work, "run") == work  # the empty current folder: `spml ... -o .`


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


def test_an_older_marker_without_a_manifest_is_cleared_by_its_layout(tmp_path):
    ownership.register_kind("legacy-marker", "a legacy marked folder", layout=("model*",))
    d = tmp_path / "d"
    d.mkdir()
    (d / ownership.MARKER).write_text(json.dumps({"written_by": "spmlkit", "kind": "legacy-marker"}))
    (d / "model.pt").write_text("w")
    ownership.check_clearable(d, "legacy-marker")
    (d / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="notes.txt was not written by spmlkit"):
        ownership.check_clearable(d, "legacy-marker")
    assert ownership.claim(d, "legacy-marker", create=False) == d and not (d / ownership.MANIFEST).exists()
    ownership.claim(d, "legacy-marker")  # claimed: the manifest made, the layout listed
    assert (d / ownership.MANIFEST).is_file() and ownership.foreign(d) == ["notes.txt"]
    ownership.write_text(d / "model.pt", "w2")


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

    monkeypatch.setattr(ownership.os, "mkdir", racing_mkdir)
    winner["lists"] = True
    ownership.write_text(out / "work" / "a.json", "{}")  # listed by the winner: used
    winner.clear()
    ownership.write_text(out / "empty" / "a.json", "{}")  # not listed yet, empty: taken
    winner["puts"] = "theirs.txt"
    with pytest.raises(ConfigError, match="this folder was not written by spmlkit"):
        ownership.write_text(out / "full" / "a.json", "{}")
    monkeypatch.setattr(ownership.os, "mkdir", real_mkdir)
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
            if racing_open.lists:
                ownership._ROOTS[str(out)].record("f", os.path.relpath(path, out), os.lstat(path), inplace=True)
            raise FileExistsError(17, "File exists", path)
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(ownership.os, "open", racing_open)
    racing_open.lists = True
    assert ownership.touch(out / "a.lock") == out / "a.lock"
    racing_open.lists = False
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.touch(out / "b.lock")


def test_ensure_parent_makes_folders_outside_and_checks_inside(tmp_path):
    assert ownership.ensure_parent(tmp_path / "x" / "y" / "f.txt") == tmp_path / "x" / "y"
    assert (tmp_path / "x" / "y").is_dir()
    out = ownership.claim(tmp_path / "r", "run")
    ownership.ensure_parent(out / "p" / "q" / "f.txt")
    assert manifest_lines(out) == ["d p", "d p/q"]
    ownership.ensure_parent(out / "top.txt")  # the owned folder itself: nothing to make
    assert manifest_lines(out) == ["d p", "d p/q"]


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


def test_memory_mapped_files_are_made_new_and_modified_only_when_spmlkits(tmp_path):
    import numpy as np

    out = ownership.claim(tmp_path / "r", "run")
    m = ownership.open_memmap(out / "s.npy", mode="w+", dtype=np.float32, shape=(3,))
    m[:] = 1
    m.flush()
    del m
    m = ownership.open_memmap(out / "s.npy", mode="r+")
    m[1] = 5
    m.flush()
    del m
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


def _owned_then_replaced(tmp_path):
    """A folder spmlkit claimed and wrote into, then removed and made again by someone else
    with a file of theirs in it."""
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    shutil.rmtree(out)
    out.mkdir()
    (out / "theirs.txt").write_text("someone else's folder now")
    return out


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


def test_abandoned_builds_are_removed_only_when_their_builder_is_gone(tmp_path):
    import fcntl
    import subprocess
    import sys

    def build_dir(name, owner_text, marked=True):
        d = tmp_path / name
        d.mkdir()
        if marked:
            ownership._write_marker(str(d), "bundle")
        (d / ownership.BUILD_OWNER).write_text(owner_text)
        return d

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    gone = build_dir(".B.gone", f"{dead}\nflock\n", marked=False)
    held = build_dir(".B.held", f"{os.getpid()}\nflock\n")
    fd = os.open(held / ownership.BUILD_OWNER, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    old_dead = build_dir(".B.olddead", f"{dead}\n", marked=False)
    old_alive = build_dir(".B.oldalive", f"{os.getpid()}\n", marked=False)
    junk = build_dir(".B.junk", "not a pid\n", marked=False)
    visible = build_dir("B.visible", f"{dead}\nflock\n", marked=False)
    (tmp_path / ".file").write_text("")
    try:
        ownership._remove_abandoned_builds(str(tmp_path / "B"))
    finally:
        os.close(fd)
    assert not gone.exists() and not old_dead.exists()
    assert held.exists() and old_alive.exists() and junk.exists() and visible.exists()
    ownership._remove_abandoned_builds(str(tmp_path / "B"))  # the lock released: removed by its manifest
    assert not held.exists() and (tmp_path / ".file").exists()


def test_a_failed_build_leaves_the_old_folder_and_no_temporary(tmp_path):
    out = tmp_path / "B"
    with ownership.build(out, "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", '{"v": 1}')
    with pytest.raises(RuntimeError):
        with ownership.build(out, "tbuild", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", '{"v": 2}')
            raise RuntimeError("killed")
    assert (out / "meta.json").read_text() == '{"v": 1}' and [p.name for p in tmp_path.iterdir()] == ["B"]
    with pytest.raises(ConfigError) as e:
        with ownership.build(out, "tbuild", option="--out") as tmp:  # replace not asked
            ownership.write_text(tmp / "meta.json", '{"v": 3}')
    assert str(e.value) == (f"{out} appeared (or changed) while it was being built and is not a tbuild folder spmlkit "
                            "wrote; nothing was replaced — choose another --out")
    assert (out / "meta.json").read_text() == '{"v": 1}' and [p.name for p in tmp_path.iterdir()] == ["B"]
    (tmp_path / "E").mkdir()
    with ownership.build(tmp_path / "E", "tbuild") as tmp:  # an empty folder: taken
        ownership.write_text(tmp / "meta.json", "{}")
    assert (tmp_path / "E" / "meta.json").exists()
    (tmp_path / "F").write_text("the user's file")
    with pytest.raises(ConfigError, match="appeared"):
        with ownership.build(tmp_path / "F", "tbuild", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", "{}")
    assert (tmp_path / "F").read_text() == "the user's file"
    with pytest.raises(ConfigError, match="appeared"):
        with ownership.build(tmp_path / "R", "tbuild", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", "{}")
            ownership.claim(tmp_path / "R", "run")  # another kind appeared meanwhile
    assert ownership.folder_kind(tmp_path / "R") == "run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["B", "E", "F", "R"]


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
    assert str(e.value) == (f"refusing to replace {tmp_path / 'p.csv'}: it is not a prediction table spmlkit wrote; "
                            "choose a new file with --output or pass --overwrite")
    assert ownership.output_file(tmp_path / "p.csv", is_ours=lambda p: p.read_text().startswith("spmlkit")) == \
        tmp_path / "p.csv"
    assert ownership.is_checked_file(tmp_path / "p.csv") and not ownership.is_checked_file(tmp_path / "q.csv")
    with pytest.raises(ownership.UnownedPathError):
        with ownership.write_output_file(tmp_path / "q.csv"):
            pass
    with pytest.raises(ConfigError) as e:
        with ownership.replace_file(tmp_path / "p.csv") as tmp:
            tmp.write_text("new\n")
            os.unlink(tmp_path / "p.csv")
            (tmp_path / "p.csv").mkdir()  # became a folder while spmlkit wrote
    assert str(e.value) == f"{tmp_path / 'p.csv'} became a link or a folder while spmlkit wrote it; nothing was replaced"
    assert (tmp_path / "p.csv").is_dir()
    ownership.output_file(tmp_path / "new.csv")
    with ownership.replace_file(tmp_path / "new.csv") as tmp:
        tmp.write_text("n\n")
    assert (tmp_path / "new.csv").read_text() == "n\n"
    out = ownership.claim(tmp_path / "r", "run")
    with ownership.replace_file(out / "inside.csv") as tmp:  # inside an owned folder: listed there
        tmp.write_text("i\n")
    assert manifest_lines(out) == ["f inside.csv"]


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
    real = ownership._generation
    monkeypatch.setattr(ownership, "_generation", lambda path, st: None)  # a file system without generations
    ownership.write_text(out / "d" / "a.txt", "b")
    monkeypatch.setattr(ownership, "_generation", real)
    ownership.write_text(out / "d" / "a.txt", "c")
    monkeypatch.setattr(ownership, "_generation", lambda path, st: -7)  # every inode: another generation
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.write_text(out / "d" / "a.txt", "d")
    assert (out / "d" / "a.txt").read_text() == "c"


def test_generations_are_read_without_following_links(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    st = os.lstat(f)
    os.symlink(f, tmp_path / "l")
    assert ownership._generation(str(tmp_path / "l"), os.lstat(tmp_path / "l")) is None  # a link: none
    assert ownership._generation(str(tmp_path / "l"), st) is None  # opened with O_NOFOLLOW: refused
    assert ownership._generation(str(f), None) is None
    other = tmp_path / "g"
    other.write_text("y")
    assert ownership._generation(str(other), st) is None  # not the inode asked about
    if ownership._generation(str(f), st) is None:
        pytest.skip("this file system records no inode generations")
    assert isinstance(ownership._generation(str(f), st), int)
    assert isinstance(ownership._generation(str(tmp_path), os.lstat(tmp_path)), int)  # a folder has one too


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


def test_a_hard_linked_manifest_is_never_appended_to(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    os.link(out / ownership.MANIFEST, tmp_path / "other-name")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "new.txt", "x")
    assert str(e.value) == f"{out / ownership.MANIFEST}: has other names (a hard link); refusing to write it"
    assert (tmp_path / "other-name").read_text() == "" and not (out / "new.txt").exists()


def test_files_are_listed_with_their_generation_and_stamp(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "abc")
    dev, ino, gen, mtime, size = (out / ownership.MANIFEST).read_text().split(" ")[1].split(":")
    st = os.lstat(out / "a.txt")
    assert (int(dev), int(ino), int(mtime), int(size)) == (st.st_dev, st.st_ino, st.st_mtime_ns, 3)
    want = ownership._generation(str(out / "a.txt"), st)
    assert gen == ("-" if want is None else str(want))  # read from the temporary before its rename


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


def test_a_build_holds_its_owner_file_locked_and_leaves_a_registered_folder(tmp_path):
    import fcntl

    out = tmp_path / "B"
    (tmp_path / ".B.old-run").mkdir()  # a build a killed process left: removed when the next one starts
    (tmp_path / ".B.old-run" / ownership.BUILD_OWNER).write_text("999999999\n")
    (tmp_path / ".hidden").mkdir()  # a folder of the user's with a dot name: not a build
    with ownership.build(out, "tbuild") as tmp:
        assert not (tmp_path / ".B.old-run").exists() and (tmp_path / ".hidden").exists()
        owner = tmp / ownership.BUILD_OWNER
        assert owner.read_text() == f"{os.getpid()}\nflock\n"
        fd = os.open(owner, os.O_RDONLY)
        with pytest.raises(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by the build
        os.close(fd)
        ownership.write_text(tmp / "meta.json", "{}")
    assert sorted(p.name for p in out.iterdir()) == [ownership.MANIFEST, ownership.MARKER, "meta.json"]
    ownership.write_text(out / "later.json", "{}")  # registered under its final name
    assert manifest_lines(out)[-1] == "f later.json" and ownership.foreign(out) == []


def test_a_build_that_cannot_be_moved_into_place_puts_the_old_folder_back(tmp_path, monkeypatch):
    out = tmp_path / "B"
    with ownership.build(out, "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", '{"v": 1}')
    real = os.rename

    def rename(src, dst):
        if os.fspath(dst) == str(out) and not os.fspath(src).endswith(".old"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(ConfigError) as e:
        with ownership.build(out, "tbuild", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", '{"v": 2}')
    monkeypatch.setattr(os, "rename", real)
    assert str(e.value) == f"{out}: cannot move the new folder into place (No space left on device); nothing was replaced"
    assert (out / "meta.json").read_text() == '{"v": 1}' and sorted(p.name for p in tmp_path.iterdir()) == ["B"]


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


def test_foreign_reads_an_unregistered_folder_from_its_marker(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    (out / "b.txt").write_text("mine")
    ownership._ROOTS.pop(str(out))
    assert ownership.foreign(out) == ["b.txt"]


# ------------------------------------ issue 39: survivors of ownership.py's first mutation run
def _mode(p):
    mask = os.umask(0)
    os.umask(mask)
    return os.stat(p).st_mode & 0o777, 0o666 & ~mask


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


def test_older_folders_adopt_no_links_and_no_files_with_other_names(tmp_path, user):
    ownership.register_kind("legacy-links", "a legacy folder with links", is_ours=lambda p: (p / "a.txt").exists(),
                            layout=("a.txt", "b.txt", "c.txt", "sub"))
    old = tmp_path / "old"
    old.mkdir()
    (old / "a.txt").write_text("a")
    os.symlink(user / "notes.txt", old / "b.txt")
    os.link(user / "notes.txt", old / "c.txt")
    (old / "sub").mkdir()
    (old / "sub" / "d.txt").write_text("d")
    ownership.claim(old, "legacy-links")
    assert ownership.foreign(old) == ["b.txt", "c.txt"]
    assert sorted(manifest_lines(old)) == ["d sub", "f a.txt", "f sub/d.txt"]  # each listed once


def test_an_older_folder_with_a_file_outside_its_layout_is_not_cleared(tmp_path):
    ownership.register_kind("legacy-clear", "a legacy cleared folder", is_ours=lambda p: (p / "meta.json").exists(),
                            layout=("meta.json",))
    old = tmp_path / "old"
    old.mkdir()
    (old / "meta.json").write_text("{}")
    ownership.check_clearable(old, "legacy-clear")
    (old / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="notes.txt was not written by spmlkit"):
        ownership.check_clearable(old, "legacy-clear")


def test_folder_passes_its_options_to_claim_and_registered_kinds_are_named(tmp_path, user):
    with pytest.raises(ConfigError, match=f"^--dir {user / 'x'} lies inside"):
        ownership.folder(user / "x", "run", inputs=[user], option="--dir")
    ownership.register_kind("named-kind", "a named test folder", is_ours=lambda p: False)
    with pytest.raises(ConfigError) as e:
        ownership.claim(user, "named-kind")
    assert str(e.value) == (f"refusing to write into {user}: it holds files that are not a named test folder written "
                            "by spmlkit (no spmlkit marker); choose a new (or empty) folder with -o/--out")


def test_single_output_file_messages_name_the_option_and_the_thing(tmp_path, user):
    with pytest.raises(ConfigError) as e:
        ownership.output_file(user / "x.csv", inputs=[user], option="--output")
    assert str(e.value).startswith(f"--output {user / 'x.csv'} lies inside {user}")
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError) as e:
        ownership.output_file(tmp_path / "d")
    assert str(e.value) == f"-o/--out {tmp_path / 'd'} is a folder; expected the path of the file to write"


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
    want = ownership._generation(str(out / "a.txt"), os.lstat(out / "a.txt"))
    assert gen == ("-" if want is None else str(want))


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


def test_a_link_refusal_names_the_path_as_the_user_wrote_it(tmp_path, user, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = ownership.claim("rel", "run")
    os.symlink(user, tmp_path / "rel" / "sub")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "sub" / "x.txt", "x")
    assert str(e.value).startswith(f"{os.path.join('rel', 'sub')} is a symbolic link (to {user})")


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


def test_a_copied_folder_keeps_its_kind(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    shutil.copytree(out, tmp_path / "copy")
    ownership.claim(tmp_path / "copy", "run")
    assert ownership.folder_kind(tmp_path / "copy") == "run"


def test_abandoned_builds_keep_what_is_not_spmlkits_and_all_are_seen(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    for i in range(6):
        (tmp_path / f".note{i}").write_text("a dot file of the user's")
    builds = []
    for i in range(4):
        d = tmp_path / f".B.dead{i}"
        d.mkdir()
        ownership._write_marker(str(d), "bundle")
        (d / ownership.BUILD_OWNER).write_text(f"{dead}\nflock\n")
        builds.append(d)
    (builds[0] / "mine.txt").write_text("the user's, in a build folder")
    ownership._remove_abandoned_builds(str(tmp_path / "B"))
    assert [d.exists() for d in builds] == [True, False, False, False]
    assert (builds[0] / "mine.txt").read_text() == "the user's, in a build folder"
    assert ownership.foreign(builds[0]) == ["mine.txt"]  # kept, still marked: the user's file is not spmlkit's
    assert not (builds[0] / ownership.BUILD_OWNER).exists()  # and no longer a build: not looked at again


def test_builds_made_beside_their_target_registered_and_created(tmp_path, capsys):
    out = tmp_path / "B"
    with ownership.build(out, "tbuild") as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".B.")
        ownership.write_text(tmp / "meta.json", "{}")
    assert ownership.created(out)
    (out / "theirs.json").write_text("mine")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "theirs.json", "x")
    assert str(e.value) == (f"{out / 'theirs.json'}: this file was not written by spmlkit (it is not listed in "
                            f"{out / ownership.MANIFEST}); refusing to replace it — move it away or choose another -o")
    with pytest.raises(RuntimeError, match="the build's own error"):  # a new folder: nothing to put back
        with ownership.build(tmp_path / "N", "tbuild"):
            raise RuntimeError("the build's own error")
    assert not (tmp_path / "N").exists()
    mine = tmp_path / "M"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError) as e:
        with ownership.build(mine, "tbuild", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", "{}")
    assert str(e.value) == (f"{mine} appeared (or changed) while it was being built and is not a tbuild folder spmlkit "
                            "wrote; nothing was replaced — choose another -o/--out")
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "voc", "tbuild") as tmp:  # directly inside an owned folder
        ownership.write_text(tmp / "meta.json", "{}")
    assert manifest_lines(bench) == ["o voc"] and ownership.foreign(bench) == []
    with ownership.build(bench / "src", "tbuild") as tmp:
        ownership.write_text(tmp / "data.csv", "x")
    with pytest.raises(ConfigError, match="which this command reads, lies inside it"):
        with ownership.build(bench / "src", "tbuild", replace=True, inputs=[bench / "src" / "data.csv"]) as tmp:
            ownership.write_text(tmp / "meta.json", "{}")
    assert (bench / "src" / "data.csv").read_text() == "x"
    assert capsys.readouterr().err == ""


def test_a_marked_folder_of_an_older_spmlkit_without_manifest_is_replaced(tmp_path):
    ownership.register_kind("legacy-marked", "a legacy marked build", layout=("meta.json", "train"))
    old = tmp_path / "B"
    (old / "train").mkdir(parents=True)
    (old / ownership.MARKER).write_text(json.dumps({"written_by": "spmlkit", "kind": "legacy-marked"}))
    (old / "meta.json").write_text("{}")
    (old / "train" / "X.npy").write_text("x")
    with ownership.build(old, "legacy-marked", replace=True) as tmp:
        ownership.write_text(tmp / "meta.json", '{"new": 1}')
    assert (old / "meta.json").read_text() == '{"new": 1}' and not (old / "train").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["B"]


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
    ownership._write_marker(str(d), "bundle")
    (d / ownership.BUILD_OWNER).write_text(f"{dead}\nflock\n")
    ownership._remove_abandoned_builds(str(tmp_path / "B"))
    assert not d.exists() and (work / ownership.BUILD_OWNER).read_text() == "the user's file of that name"


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


def test_removing_a_folder_removes_the_folders_owned_on_their_own_inside(tmp_path):
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "bundles" / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    assert ownership.remove(bench / "bundles") and not (bench / "bundles").exists()
    assert manifest_lines(bench)[-2:] == ["- bundles/voc", "- bundles"]


def test_an_abandoned_build_of_an_older_version_is_removed_whole(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    d = tmp_path / ".B.old"
    d.mkdir()
    (d / ownership.MARKER).write_text(json.dumps({"written_by": "spmlkit", "kind": "bundle"}))  # no manifest yet
    (d / "meta.json").write_text("{}")
    (d / ownership.BUILD_OWNER).write_text(f"{dead}\n")
    ownership._remove_abandoned_builds(str(tmp_path / "B"))
    assert not d.exists()


def test_a_nested_folder_found_again_was_not_made_by_this_lookup(tmp_path):
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    ownership._ROOTS.pop(str(bench / "voc"))
    ownership.write_text(bench / "voc" / "x.json", "{}")
    assert not ownership.created(bench / "voc")


def test_a_link_to_spmlkits_own_file_is_still_foreign(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    os.symlink(out / "a.txt", out / "alias.txt")  # points at a listed file: the link itself is not spmlkit's
    assert ownership.foreign(out) == ["alias.txt"]
    os.unlink(out / "alias.txt")
    os.rename(out / "a.txt", tmp_path / "moved.txt")
    os.symlink(tmp_path / "moved.txt", out / "a.txt")  # spmlkit's name, now a link to the (listed) file moved away
    assert ownership.foreign(out) == ["a.txt"]


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


# ----------------------------------- issue 39: survivors of ownership.py's second mutation run
def _restore_from_copy(folder, tmp_path):
    """``folder`` replaced by a copy of itself (moved away, copied back: a backup restored)."""
    import shutil

    away = tmp_path / "away"
    os.rename(folder, away)
    shutil.copytree(away, folder)
    shutil.rmtree(away)


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


def test_names_with_spaces_in_removals_and_messages(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "my dir" / "x.txt", "x")
    assert not ownership.remove(out / "my dir", only_if_empty=True) and (out / "my dir" / "x.txt").is_file()
    (out / "my data").write_text("the user's")
    with pytest.raises(ConfigError) as e:
        ownership.write_text(out / "my data" / "x.txt", "x")
    assert str(e.value) == (f"{out / 'my data'} is a file where spmlkit writes a folder; it was not written by "
                            "spmlkit — move it away or choose another -o")


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


def test_an_older_marker_gets_a_plain_manifest_and_a_current_folder_adopts_nothing(tmp_path):
    ownership.register_kind("layout-run", "a layout test folder", layout=("model*",))
    d = tmp_path / "d"
    d.mkdir()
    (d / ownership.MARKER).write_text(json.dumps({"written_by": "spmlkit", "kind": "layout-run"}))
    ownership.claim(d, "layout-run")
    got, want = _mode(d / ownership.MANIFEST)
    assert got == want
    out = ownership.claim(tmp_path / "cur", "layout-run")  # this version's: its manifest says what is spmlkit's
    (out / "model.pt").write_text("the user's, at a name of the layout")
    ownership._ROOTS.pop(str(out))
    ownership.claim(out, "layout-run")
    assert ownership.foreign(out) == ["model.pt"]
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.write_text(out / "model.pt", "w")


def test_a_build_inside_an_owned_folder_replaces_its_previous_build(tmp_path, capsys):
    bench = ownership.claim(tmp_path / "bench", "bench")
    for i in range(2):
        with ownership.build(bench / "voc", "tbuild", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", str(i))
    assert (bench / "voc" / "meta.json").read_text() == "1" and sorted(p.name for p in bench.iterdir()) == sorted(
        [ownership.MARKER, ownership.MANIFEST, "voc"])
    assert capsys.readouterr().err == "" and ownership.foreign(bench) == []


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


def test_folder_checks_what_is_inside_an_owned_folder_by_the_ownership_rule(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "notes").write_text("the user's")
    with pytest.raises(ConfigError) as e:
        ownership.folder(out / "notes", "model")
    assert str(e.value) == (f"{out / 'notes'} is a file where spmlkit writes a folder; it was not written by "
                            "spmlkit — move it away or choose another -o")
    assert ownership.folder(out, "model") == out  # the owned folder itself: written into, whatever is asked


def _list_by_hand(folder, t, rel, path):
    """A manifest line for ``path``'s inode as type ``t`` (an inode number a removed entry had, given by a file
    system without generation numbers to something of another type)."""
    st = os.lstat(path)
    with open(folder / ownership.MANIFEST, "a") as fh:
        fh.write(f"{t} {st.st_dev}:{st.st_ino}:-:-:- {rel}\n")


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


def test_stale_temporaries_are_removed_deep_but_not_in_folders_owned_on_their_own(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a" / "b" / "x.txt", "x")
    with ownership.build(out / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    (out / "a" / "b" / ".x.txt.spml-1.tmp").write_text("half")
    (out / "voc" / ".meta.json.spml-2.tmp").write_text("half: its own writer's, under its own lock")
    assert ownership.remove_stale_temporaries(out, recursive=True) == 1
    assert not (out / "a" / "b" / ".x.txt.spml-1.tmp").exists() and (out / "voc" / ".meta.json.spml-2.tmp").exists()


def test_an_inode_of_another_generation_under_a_name_with_spaces_is_not_spmlkits(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "my dir" / "a b.txt", "a")

    def other_generation(path, st):  # the inode found at the path asked about has another generation
        return -7 if st is not None and os.path.lexists(path) and os.lstat(path).st_ino == st.st_ino else None

    monkeypatch.setattr(ownership, "_generation", other_generation)
    with pytest.raises(ConfigError, match="not written by spmlkit"):
        ownership.write_text(out / "my dir" / "a b.txt", "b")
    assert (out / "my dir" / "a b.txt").read_text() == "a"


def test_a_folder_that_lost_its_marker_is_adopted_again_by_its_manifest_and_layout(tmp_path):
    ownership.register_kind("layout-ours", "a layout test folder", is_ours=lambda p: (p / "meta.json").exists(),
                            layout=("meta.json", "model*"))
    outs = []
    for name in ("b", "c"):
        out = ownership.claim(tmp_path / name, "layout-ours")
        ownership.write_text(out / "meta.json", "{}")
        ownership.write_text(out / "model" / "x.pt", "w")
        os.unlink(out / ownership.MARKER)  # removed by someone; the manifest is intact
        ownership._ROOTS.pop(str(out))
        outs.append(out)
    b, c = outs
    before = manifest_lines(b)
    ownership.claim(b, "layout-ours")  # recognised by its metadata: what the manifest lists is listed once
    assert manifest_lines(b) == before and ownership.foreign(b) == []
    _list_by_hand(c, "f", "model", c / "model")  # listed as another type: adopted as what it is
    _list_by_hand(c, "d", "model/x.pt", c / "model" / "x.pt")
    ownership.claim(c, "layout-ours")
    assert manifest_lines(c)[-2:] == ["d model", "f model/x.pt"] and ownership.foreign(c) == []
    ownership.write_text(c / "model" / "x.pt", "w2")
    ownership.write_text(c / "model" / "y.pt", "y")


def test_an_older_abandoned_build_that_cannot_be_removed_whole_is_left_quietly(tmp_path, monkeypatch):
    import errno
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    d = tmp_path / ".B.old"
    d.mkdir()
    for name in ("meta.json", "stuck"):
        (d / name).write_text("{}")
    (d / ownership.BUILD_OWNER).write_text(f"{dead}\n")  # an older version's build: removed whole
    unlink = os.unlink

    def busy(path, *a, **kw):  # (a file of a file system that refuses, or one in use elsewhere)
        if os.path.basename(os.fspath(path)) == "stuck":
            raise OSError(errno.EBUSY, "Device or resource busy", os.fspath(path))
        return unlink(path, *a, **kw)

    monkeypatch.setattr(os, "unlink", busy)
    ownership._remove_abandoned_builds(str(tmp_path / "B"))  # what cannot be removed is left, and no error
    assert sorted(p.name for p in d.iterdir()) == ["stuck"]


# ---- the survivors of the first whole measurement of ownership.py (issue 39): races scheduled by hand, the
# manifest's reader on lines it does not expect, the walk below owned folders, messages

def _before_open(monkeypatch, path, action, *, when=lambda flags: True):
    """Run ``action`` once, just before spmlkit next opens ``path`` (with flags ``when`` accepts): something
    done to the name by someone else between spmlkit's check and its open."""
    real, path, done = os.open, os.fspath(path), []

    def opened(p, flags, *a, **kw):
        if not done and os.fspath(p) == path and when(flags):
            done.append(True)
            action()
        return real(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", opened)
    return done


def _to_link(path, to):
    def swap():
        os.unlink(path)
        os.symlink(to, path)
    return swap


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


def test_a_marker_swapped_for_a_link_before_it_is_opened_is_not_read(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "bench")
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"written_by": "spmlkit", "kind": "run"}))
    marker = out / ownership.MARKER
    done = _before_open(monkeypatch, marker, _to_link(marker, forged))
    assert ownership.folder_kind(out) is None and done


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


def test_a_removal_line_lists_no_inode(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "x.txt", "x")
    ownership.remove(out / "x.txt")
    assert (out / ownership.MANIFEST).read_text().splitlines()[-1] == "- 0:0:-:-:- x.txt"


def test_a_folder_with_a_space_is_listed_with_its_own_generation(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.mkdir(out / "a b")
    line = (out / ownership.MANIFEST).read_text().splitlines()[-1]
    assert line.endswith(" a b")
    gen = ownership._generation(str(out / "a b"), os.lstat(out / "a b"))
    assert line.split(" ")[1].split(":")[2] == ("-" if gen is None else str(gen))


def test_a_users_file_under_a_name_with_a_space_is_refused(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    (out / "my notes.txt").write_text("the user's")
    with pytest.raises(ConfigError, match="was not written by spmlkit"):
        ownership.write_text(out / "my notes.txt", "spmlkit's")
    assert (out / "my notes.txt").read_text() == "the user's"


def test_inputs_are_refused_after_a_missing_one_and_above_the_output(tmp_path):
    data = tmp_path / "data"
    (data / "out").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is an input of this command"):
        ownership.refuse_inputs(data / "out", [tmp_path / "missing", data / "out"])
    with pytest.raises(ConfigError, match="lies inside .*data, which this command reads"):
        ownership.refuse_inputs(data / "out", [data])  # out just inside an input, existing


def test_refusals_show_the_path_as_the_user_spelled_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="^-o/--out f is a file"):
        ownership.check_output_folder("f")
    ownership.claim("run", "run")
    os.symlink(tmp_path / "f", tmp_path / "run" / "x")
    with pytest.raises(ConfigError, match="^run/x is a symbolic link"):
        ownership.write_text("run/x", "x")
    (tmp_path / "empty").mkdir()
    ownership.claim("empty", "run")
    (tmp_path / "empty" / "u.txt").write_text("the user's")
    with pytest.raises(ConfigError, match=f"listed in empty/{ownership.MANIFEST}"):
        ownership.write_text("empty/u.txt", "x")
    with pytest.raises(ConfigError, match=f"^{tmp_path}/run/a\nb: spmlkit does not write names holding a line"):
        ownership.write_text("run/a\nb", "x")
    with pytest.raises(ConfigError, match="not a Xkind folder; choose"):
        ownership.claim(tmp_path / "empty", "Xkind")


def test_a_folder_removed_while_in_use_is_not_written_again(tmp_path):
    import shutil

    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    shutil.rmtree(out)
    with pytest.raises(ConfigError, match="was removed or replaced by someone else while spmlkit was using it; "
                                          "nothing more is written there"):
        ownership.write_text(out / "a.txt", "a")
    assert not out.exists()


def test_a_folder_made_and_removed_by_someone_else_meanwhile_is_refused(tmp_path, monkeypatch):
    import errno

    out = ownership.claim(tmp_path / "r", "run")

    def raced(path, *a, **kw):  # made by someone else just now, and removed again
        raise FileExistsError(errno.EEXIST, "File exists", os.fspath(path))

    monkeypatch.setattr(os, "mkdir", raced)
    with pytest.raises(ConfigError, match="^.*/sub: made and removed by someone else while spmlkit made it — "
                                          "choose another -o$"):
        ownership.write_text(out / "sub" / "a.txt", "a")


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


def test_discard_keeps_a_folder_holding_something_under_a_bookkeeping_name(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.txt", "a")
    (out / ownership.LOCK).mkdir()  # a folder of the user's under the lock file's name
    assert ownership.discard(out) is False and (out / ownership.LOCK).is_dir()


def test_a_file_a_parallel_worker_makes_meanwhile_is_waited_for_a_second_at_most(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    slept = []
    monkeypatch.setattr(ownership.time, "sleep", lambda s: slept.append(s))
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
        if os.fspath(p) == str(out / "d.lock") and flags & os.O_EXCL and not slept:
            (out / "d.lock").write_text("")
            try:
                return real(p, flags, *a, **kw)
            finally:
                os.unlink(out / "d.lock")
        return real(p, flags, *a, **kw)

    monkeypatch.setattr(os, "open", gone)
    assert ownership.touch(out / "d.lock") == out / "d.lock" and slept == [0.01] * 100


def test_an_abandoned_build_is_removed_after_builds_that_are_skipped(tmp_path, monkeypatch):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()

    def build_dir(name, owner_text):
        d = tmp_path / name
        d.mkdir()
        ownership._write_marker(str(d), "bundle")
        (d / ownership.BUILD_OWNER).write_text(owner_text)
        return d

    linked = build_dir(".A.linked", f"{dead}\nflock\n")  # its owner file becomes a link before it is opened
    theirs = build_dir(".A.theirs", "4242\n")  # an older version's build of another user's live process
    gone = build_dir(".Z.gone", f"{dead}\nflock\n")
    listdir, kill = os.listdir, os.kill
    monkeypatch.setattr(os, "listdir", lambda p=".": sorted(listdir(p)))  # the skipped ones looked at first

    sent = []

    def other_user(pid, sig):
        sent.append(sig)
        if pid == 4242:
            raise PermissionError(1, "Operation not permitted")
        return kill(pid, sig)

    monkeypatch.setattr(os, "kill", other_user)
    owner = linked / ownership.BUILD_OWNER
    _before_open(monkeypatch, owner, _to_link(owner, tmp_path / "elsewhere"))
    ownership._remove_abandoned_builds(str(tmp_path / "B"))
    assert linked.exists() and theirs.exists() and not gone.exists()
    assert sent == [0]  # whether the builder lives is asked with signal 0: no signal is sent to it
