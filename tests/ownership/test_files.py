"""spmlkit.ownership.files: part of the one ownership rule's tests.

The one ownership rule (spmlkit.ownership): a folder is spmlkit's only if spmlkit made
it (its marker and manifest); nothing inside is followed (links) or replaced (files of
anyone else's); only what the manifest lists is removed; an output is never an input
(by inode).  The file-system fuzzer (tests/safety/test_fs_fuzzer.py) drives every
command through the same rule."""

import os

import pytest

from spmlkit import ownership
from spmlkit.errors import ConfigError
from tests.helpers.ownership_fs import user, manifest_lines


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
    assert str(e.value) == (f"refusing to replace {tmp_path / 'p.csv'}: it is not a prediction table spmlkit wrote "
                            "(no record of spmlkit's names it: .p.csv.spml-file); choose a new file with --output or "
                            "pass --overwrite")
    assert ownership.output_file(tmp_path / "p.csv", overwrite=True) == tmp_path / "p.csv"
    assert ownership.is_checked_file(tmp_path / "p.csv") and not ownership.is_checked_file(tmp_path / "q.csv")
    with pytest.raises(ownership.UnownedPathError):
        with ownership.write_output_file(tmp_path / "q.csv"):
            pass
    with pytest.raises(ConfigError) as e:
        with ownership.replace_file(tmp_path / "p.csv") as tmp:
            tmp.write_text("new\n")
            os.unlink(tmp_path / "p.csv")
            (tmp_path / "p.csv").mkdir()  # became a folder while spmlkit wrote
    assert str(e.value) == (f"{tmp_path / 'p.csv'} became a link, a folder or another file while spmlkit wrote it; "
                            "nothing was replaced")
    assert (tmp_path / "p.csv").is_dir()
    ownership.output_file(tmp_path / "new.csv")
    with ownership.replace_file(tmp_path / "new.csv") as tmp:
        tmp.write_text("n\n")
    assert (tmp_path / "new.csv").read_text() == "n\n"
    out = ownership.claim(tmp_path / "r", "run")
    with ownership.replace_file(out / "inside.csv") as tmp:  # inside an owned folder: listed there
        tmp.write_text("i\n")
    assert manifest_lines(out) == ["f inside.csv"]


def test_single_output_file_messages_name_the_option_and_the_thing(tmp_path, user):
    with pytest.raises(ConfigError) as e:
        ownership.output_file(user / "x.csv", inputs=[user], option="--output")
    assert str(e.value).startswith(f"--output {user / 'x.csv'} lies inside {user}")
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError) as e:
        ownership.output_file(tmp_path / "d")
    assert str(e.value) == f"-o/--out {tmp_path / 'd'} is a folder; expected the path of the file to write"
