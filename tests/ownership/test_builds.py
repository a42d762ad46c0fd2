"""spmlkit.ownership.builds: part of the one ownership rule's tests.

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
from tests.helpers.ownership_fs import user, manifest_lines, _before_open, _to_link, legacy_marked_build


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


def test_abandoned_builds_are_removed_only_when_their_builder_is_gone(tmp_path):
    import fcntl
    import subprocess
    import sys

    def build_dir(name, owner_text, marked=True):
        d = tmp_path / name
        d.mkdir()
        if marked:
            own_manifest._write_marker(str(d), "bundle")
        (d / ownership.BUILD_OWNER).write_text(owner_text)
        return d

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    gone = build_dir(".B.gone", f"{dead}\nflock\n")
    held = build_dir(".B.held", f"{os.getpid()}\nflock\n")
    fd = os.open(held / ownership.BUILD_OWNER, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    old_dead = build_dir(".B.olddead", f"{dead}\n", marked=False)
    old_alive = build_dir(".B.oldalive", f"{os.getpid()}\n", marked=False)
    junk = build_dir(".B.junk", "not a pid\n", marked=False)
    visible = build_dir("B.visible", f"{dead}\nflock\n", marked=False)
    (tmp_path / ".file").write_text("")
    try:
        own_builds._remove_abandoned_builds(str(tmp_path / "B"))
    finally:
        os.close(fd)
    assert not gone.exists()
    # an older version's build has no manifest: nothing in it is known to be spmlkit's, so it is left
    assert held.exists() and old_dead.exists() and old_alive.exists() and junk.exists() and visible.exists()
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))  # the lock released: removed by its manifest
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


def test_a_build_holds_its_owner_file_locked_and_leaves_a_registered_folder(tmp_path):
    import fcntl

    out = tmp_path / "B"
    (tmp_path / ".B.old-run").mkdir()  # a build a killed process left: removed when the next one starts
    own_manifest._write_marker(str(tmp_path / ".B.old-run"), "tbuild")
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
        own_manifest._write_marker(str(d), "bundle")
        (d / ownership.BUILD_OWNER).write_text(f"{dead}\nflock\n")
        builds.append(d)
    (builds[0] / "mine.txt").write_text("the user's, in a build folder")
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))
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


def test_removing_a_folder_removes_the_folders_owned_on_their_own_inside(tmp_path):
    bench = ownership.claim(tmp_path / "bench", "bench")
    with ownership.build(bench / "bundles" / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    assert ownership.remove(bench / "bundles") and not (bench / "bundles").exists()
    assert manifest_lines(bench)[-2:] == ["- bundles/voc", "- bundles"]


def test_a_build_inside_an_owned_folder_replaces_its_previous_build(tmp_path, capsys):
    bench = ownership.claim(tmp_path / "bench", "bench")
    for i in range(2):
        with ownership.build(bench / "voc", "tbuild", replace=True) as tmp:
            ownership.write_text(tmp / "meta.json", str(i))
    assert (bench / "voc" / "meta.json").read_text() == "1" and sorted(p.name for p in bench.iterdir()) == sorted(
        [ownership.MARKER, ownership.MANIFEST, "voc"])
    assert capsys.readouterr().err == "" and ownership.foreign(bench) == []


def test_stale_temporaries_are_removed_deep_but_not_in_folders_owned_on_their_own(tmp_path):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a" / "b" / "x.txt", "x")
    with ownership.build(out / "voc", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    (out / "a" / "b" / ".x.txt.spml-1.tmp").write_text("half")
    (out / "voc" / ".meta.json.spml-2.tmp").write_text("half: its own writer's, under its own lock")
    assert ownership.remove_stale_temporaries(out, recursive=True) == 1
    assert not (out / "a" / "b" / ".x.txt.spml-1.tmp").exists() and (out / "voc" / ".meta.json.spml-2.tmp").exists()


def test_an_abandoned_build_is_removed_after_builds_that_are_skipped(tmp_path, monkeypatch):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()

    def build_dir(name, owner_text):
        d = tmp_path / name
        d.mkdir()
        own_manifest._write_marker(str(d), "bundle")
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
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))
    assert linked.exists() and theirs.exists() and not gone.exists()
    assert sent == [0]  # whether the builder lives is asked with signal 0: no signal is sent to it


@pytest.mark.parametrize("case", ["a file made by hand", "the manifest deleted", "its removal failing"])
def test_a_failed_build_of_this_process_is_removed_whole_even_where_its_manifest_cannot(tmp_path, monkeypatch, case):
    """The folder this process made for its build is removed whole when it fails, also when
    its manifest does not list everything, is gone, or its removal by the manifest fails."""
    if case == "its removal failing":
        monkeypatch.setattr(own_builds, "discard", lambda *a, **k: (_ for _ in ()).throw(OSError(5, "I/O error")))
    with pytest.raises(RuntimeError, match="killed"):
        with ownership.build(tmp_path / "B", "tbuild") as tmp:
            ownership.write_text(tmp / "meta.json", "{}")
            (tmp / "by-hand.txt").write_text("not listed")
            if case == "the manifest deleted":
                (tmp / ownership.MANIFEST).unlink()
            raise RuntimeError("killed")
    assert os.listdir(tmp_path) == []


def test_the_file_size_signal_is_ignored_while_building_and_only_in_the_main_thread(tmp_path):
    import signal
    import threading

    before = signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # (CPython starts with it ignored: make it kill)
    try:
        with ownership.build(tmp_path / "B", "tbuild") as tmp:  # a size limit reached: EFBIG, not a killed process
            assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
            ownership.write_text(tmp / "meta.json", "{}")
        assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_DFL
        seen = []

        def other():
            restore = own_builds._file_size_errors()
            seen.append(signal.getsignal(signal.SIGXFSZ))
            restore()
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == [signal.SIG_DFL]
    finally:
        signal.signal(signal.SIGXFSZ, before)


def test_things_named_like_a_build_folder_without_an_owner_file_are_skipped_unopened(tmp_path, monkeypatch):
    """A file named like a build folder, and a build folder whose owner file is a named pipe
    (opening it would wait for a writer), are left alone: never opened, never removed."""
    (tmp_path / ".B.abcd1234").write_text("the user's file")
    (tmp_path / ".B.ijkl9012").mkdir()  # a folder of that name without an owner file
    pipe_folder = tmp_path / ".B.efgh5678"
    pipe_folder.mkdir()
    os.mkfifo(pipe_folder / ownership.BUILD_OWNER)

    def opened():
        raise AssertionError("the named pipe was opened")
    _before_open(monkeypatch, pipe_folder / ownership.BUILD_OWNER, opened)
    with ownership.build(tmp_path / "B", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    assert sorted(os.listdir(tmp_path)) == [".B.abcd1234", ".B.efgh5678", ".B.ijkl9012", "B"]
    assert os.listdir(pipe_folder) == [ownership.BUILD_OWNER]


def test_a_build_leaves_no_descriptor_open(tmp_path):
    """The owner file is held open (locked) while building, and closed after."""
    before = sorted(os.listdir("/proc/self/fd"))
    with ownership.build(tmp_path / "B", "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", "{}")
    assert sorted(os.listdir("/proc/self/fd")) == before


# ---- the abandoned builds looked at one after another (a skipped one never stops the look-up), the owner
# file's first 64 bytes, and the previous folder of an older spmlkit replaced from inside another output folder
def _abandoned(tmp_path, name, owner_text=None):
    """A build folder a killed process left (marker and manifest), its owner file holding ``owner_text``."""
    d = tmp_path / name
    d.mkdir()
    own_manifest._write_marker(str(d), "bundle")
    if owner_text is not None:
        (d / ownership.BUILD_OWNER).write_text(owner_text)
    return d


def _in_order(monkeypatch):
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p=".": sorted(listdir(p)))  # the ones skipped looked at first


def test_a_build_folder_without_an_owner_file_is_skipped_and_the_next_one_still_removed(tmp_path, monkeypatch):
    bare = _abandoned(tmp_path, ".A.bare")  # marker and manifest, but no owner file: never a build's to remove
    gone = _abandoned(tmp_path, ".Z.gone", f"{os.getpid()}\nflock\n")  # unlocked: its builder is gone
    _in_order(monkeypatch)
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))
    assert bare.exists() and not gone.exists()


def test_a_build_whose_owner_file_goes_before_it_is_locked_is_skipped_and_the_next_one_still_removed(
        tmp_path, monkeypatch):
    """The owner file removed (by another spmlkit clearing the same folder) between its read
    and the open that locks it: that folder is left to the other, the next one is still removed."""
    raced = _abandoned(tmp_path, ".A.raced", f"{os.getpid()}\nflock\n")
    gone = _abandoned(tmp_path, ".Z.gone", f"{os.getpid()}\nflock\n")
    _in_order(monkeypatch)
    owner = raced / ownership.BUILD_OWNER
    opens = []
    done = _before_open(monkeypatch, owner, owner.unlink, when=lambda flags: opens.append(flags) or len(opens) == 2)
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))
    assert done and raced.exists() and not owner.exists() and not gone.exists()


def test_only_the_first_64_bytes_of_an_owner_file_are_read(tmp_path):
    """A lock is looked for only where the owner file's first 64 bytes say ``flock``; past them,
    the folder is taken for an older version's, kept while the process of its pid lives (this one)."""
    head = f"{os.getpid()}\n"
    read = _abandoned(tmp_path, ".B.read", head.ljust(59) + "flock\n")  # 'flock' ends at byte 64: read, unlocked
    cut = _abandoned(tmp_path, ".B.cut", head.ljust(60) + "flock\n")  # only 'floc' in the first 64 bytes
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))
    assert not read.exists() and cut.exists()
    assert (cut / ownership.BUILD_OWNER).read_text() == head.ljust(60) + "flock\n"


def test_an_older_marked_folder_is_replaced_from_inside_another_output_folder(tmp_path, monkeypatch):
    """The old folder's manifest is looked for in the old folder, never in the current one: run
    from inside another output folder of spmlkit's (which has a manifest), a marked folder of an
    older spmlkit without one is still listed by its layout and removed."""
    old = legacy_marked_build(tmp_path, "legacy-marked-cwd")
    work = ownership.claim(tmp_path / "run", "run")
    monkeypatch.chdir(work)  # holds a .spml-manifest of its own
    with ownership.build(old, "legacy-marked-cwd", replace=True) as tmp:
        ownership.write_text(tmp / "meta.json", '{"new": 1}')
    assert (old / "meta.json").read_text() == '{"new": 1}' and not (old / "train").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["B", "run"]


def test_the_previous_folder_is_removed_by_its_manifest_whatever_its_marker_says_by_then(tmp_path, monkeypatch):
    """Once the new folder is in place, the previous one (renamed aside) is removed by what its
    manifest lists; it is not claimed again, so a marker rewritten by someone else meanwhile (here
    another kind's) cannot fail a build that has succeeded."""
    out = tmp_path / "B"
    with ownership.build(out, "tbuild") as tmp:
        ownership.write_text(tmp / "meta.json", '{"v": 1}')
    real = os.rename

    def rename(src, dst):
        real(src, dst)
        if os.fspath(dst) == str(out):  # the new folder just moved into place
            (old,) = tmp_path.glob(".B.*.old")
            own_manifest._write_marker(str(old), "run")
    monkeypatch.setattr(os, "rename", rename)
    with ownership.build(out, "tbuild", replace=True) as tmp:
        ownership.write_text(tmp / "meta.json", '{"v": 2}')
    assert (out / "meta.json").read_text() == '{"v": 2}' and os.listdir(tmp_path) == ["B"]
