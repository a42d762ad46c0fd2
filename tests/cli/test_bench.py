"""``spml bench`` (spmlkit.cli.bench): its options, and bad input refused in one line before
anything is written.  The grid itself is tested in tests/experiments/bench/test_runner.py and
tests/experiments/bench/test_executors.py."""
import pytest

from tests.helpers.cli import one_line_error, run_cli


def test_help_names_the_grid_options(capsys):
    code, out, _ = run_cli(capsys, "bench", "--help")
    assert code == 0
    for option in ("--datasets", "--methods", "--lrs", "--batch-sizes", "--seeds", "--jobs", "--shard", "--out"):
        assert option in out, option


@pytest.mark.parametrize("argv, needle", [
    (["--methods", "no-such-method"], "unknown method 'no-such-method'"),
    (["--lrs", "0"], "argument --lrs: '0' is out of range; expected a number > 0"),
    (["--seeds", "0"], "argument --seeds: '0' is out of range; expected a whole number >= 1"),
])
def test_bad_input_is_one_line_and_writes_nothing(toy_bundle, tmp_path, capsys, argv, needle):
    out_dir = tmp_path / "bench"
    code, out, err = run_cli(capsys, "bench", "--datasets", toy_bundle.path, *argv, "--epochs", 1, "-o", out_dir)
    assert code == 2 and needle in one_line_error(err)
    assert not out_dir.exists()
