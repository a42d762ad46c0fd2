"""spmlkit.ownership.rule: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import os

import pytest

from spmlkit import ownership
from spmlkit.ownership import rule as own_rule
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import user


def test_an_output_is_never_an_input_by_inode(tmp_path, user):
    src = user / "notes.txt"
    os.link(src, tmp_path / "hardlink.csv")
    os.symlink(user, tmp_path / "alias")
    for out, why in ((tmp_path / "hardlink.csv", "is an input"), (tmp_path / "alias" / "x.csv", "lies inside"),
                     (user / "new" / "deeper", "lies inside"), (tmp_path, "lies inside it")):
        with pytest.raises(ConfigError, match=why):
            ownership.refuse_inputs(out, [src if why != "lies inside" else user])
    ownership.refuse_inputs(tmp_path / "elsewhere", [src, user])  # fine


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
    assert own_rule._is_protected("/") == "it is the filesystem root"
    assert own_rule._is_protected(str(work)) == "it is the current directory"
    assert own_rule._is_protected(str(tmp_path / "a")) == "it contains the current directory"
    assert own_rule._is_protected(str(tmp_path / "home")) == "it is your home directory"
    assert own_rule._is_protected(str(tmp_path / "b")) is None
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


def test_folder_passes_its_options_to_claim_and_registered_kinds_are_named(tmp_path, user):
    with pytest.raises(ConfigError, match=f"^--dir {user / 'x'} lies inside"):
        ownership.folder(user / "x", "run", inputs=[user], option="--dir")
    ownership.register_kind("named-kind", "a named test folder", is_ours=lambda p: False)
    with pytest.raises(ConfigError) as e:
        ownership.claim(user, "named-kind")
    assert str(e.value) == (f"refusing to write into {user}: it holds files that are not a named test folder written "
                            "by spmlkit (no spmlkit marker); choose a new (or empty) folder with -o/--out")


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
