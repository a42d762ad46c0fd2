"""``spml demo`` (spmlkit.cli.demo) end to end."""

import pytest

from spmlkit.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_demo_quick(tmp_path, capsys):
    code, out, err = run(capsys, "demo", "--quick", "-o", tmp_path / "d")
    assert code == 0 and "test mAP" in out and "bce" in out and "an" in out
