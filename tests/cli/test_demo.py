"""``spml demo`` (spmlkit.cli.demo) end to end."""

import pytest

from tests.helpers.cli import run_cli as run


@pytest.mark.slow
def test_demo_quick(tmp_path, capsys):
    code, out, err = run(capsys, "demo", "--quick", "-o", tmp_path / "d")
    assert code == 0 and "test mAP" in out and "bce" in out and "an" in out
