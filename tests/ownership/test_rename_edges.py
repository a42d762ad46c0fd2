"""A rename inside an owned folder (spmlkit.ownership.rename) when the destination changes
between the first check and the rename: a file of the user's made there meanwhile is
refused inside the opened folder, and keeps its bytes; spmlkit's source keeps its own."""
from __future__ import annotations

import pytest

from spmlkit import ownership
from spmlkit.errors import ConfigError
from spmlkit.ownership import writers


def test_a_user_file_made_at_the_destination_after_the_check_is_never_overwritten(tmp_path, monkeypatch):
    out = ownership.claim(tmp_path / "r", "run")
    ownership.write_text(out / "a.part", "spmlkit's")
    dst = out / "a.txt"
    real = writers.target

    def target_then_the_user_writes(path, **kw):
        got = real(path, **kw)
        if str(path) == str(dst):
            dst.write_text("the user's")  # made after the check, before the rename
        return got

    monkeypatch.setattr(writers, "target", target_then_the_user_writes)
    with pytest.raises(ConfigError, match="a.txt"):
        ownership.rename(out / "a.part", dst)
    assert dst.read_text() == "the user's" and (out / "a.part").read_text() == "spmlkit's"
