"""spmlkit.ownership.adopt: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import json
import os

import pytest

from spmlkit import ownership
from spmlkit.ownership import builds as own_builds
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import user, manifest_lines, _mode, _list_by_hand, legacy_marked_build


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


def test_a_marked_folder_of_an_older_spmlkit_without_manifest_is_replaced(tmp_path):
    old = legacy_marked_build(tmp_path, "legacy-marked")
    with ownership.build(old, "legacy-marked", replace=True) as tmp:
        ownership.write_text(tmp / "meta.json", '{"new": 1}')
    assert (old / "meta.json").read_text() == '{"new": 1}' and not (old / "train").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["B"]


def test_an_abandoned_build_of_an_older_version_is_left_as_it_is(tmp_path):
    """A marker and an owner file alone never make a folder removable: with no manifest,
    nothing in it is known to be spmlkit's (issue 49: rmtree only of what a manifest lists)."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    d = tmp_path / ".B.old"
    d.mkdir()
    (d / ownership.MARKER).write_text(json.dumps({"written_by": "spmlkit", "kind": "bundle"}))  # no manifest yet
    (d / "meta.json").write_text("{}")
    (d / ownership.BUILD_OWNER).write_text(f"{dead}\n")
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))
    assert sorted(p.name for p in d.iterdir()) == sorted([ownership.MARKER, "meta.json", ownership.BUILD_OWNER])


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
    (d / ownership.BUILD_OWNER).write_text(f"{dead}\n")  # an older version's build: no manifest, left whole
    unlink = os.unlink

    def busy(path, *a, **kw):  # (a file of a file system that refuses, or one in use elsewhere)
        if os.path.basename(os.fspath(path)) == "stuck":
            raise OSError(errno.EBUSY, "Device or resource busy", os.fspath(path))
        return unlink(path, *a, **kw)

    monkeypatch.setattr(os, "unlink", busy)
    own_builds._remove_abandoned_builds(str(tmp_path / "B"))  # what cannot be removed is left, and no error
    assert sorted(p.name for p in d.iterdir()) == [ownership.BUILD_OWNER, "meta.json", "stuck"]
