"""What the ``spml`` commands share (spmlkit.cli.common): argparse errors in one line with
a pointer to the command's help, option types that refuse out-of-range values, and the
--label-names and --device helpers."""
import pytest

from spmlkit.cli.common import _csv_list, _label_names
from tests.helpers.cli import one_line_error, run_cli


@pytest.mark.parametrize("option, value, needle", [
    ("--epochs", "0", "argument --epochs: '0' is out of range; expected a whole number >= 1"),
    ("--epochs", "2.5", "argument --epochs: '2.5' is not a whole number"),
    ("--lr", "nan", "argument --lr: 'nan' is not a finite number"),
    ("--lr=", "-1e-3", "argument --lr: '-1e-3' is out of range; expected a number > 0"),
    ("--patience", "-1", "argument --patience: '-1' is out of range; expected a whole number >= 0"),
    ("--seed", str(2**32), f"argument --seed: '{2**32}' is out of range; expected a whole number from 0 to {2**32 - 1}"),
])
def test_option_types_refuse_in_one_line_with_the_commands_help(toy_bundle, tmp_path, capsys, option, value, needle):
    args = [option + value] if option.endswith("=") else [option, value]
    code, out, err = run_cli(capsys, "train", toy_bundle.path, *args, "-o", tmp_path / "run")
    assert code == 2 and out == ""
    assert one_line_error(err) == f"{needle} (see 'spml train --help')"
    assert not (tmp_path / "run").exists()


def test_an_unknown_command_points_at_spml_help(capsys):
    code, _, err = run_cli(capsys, "no-such-command")
    assert code == 2 and one_line_error(err).endswith("(see 'spml --help')")


def test_an_unknown_regime_lists_the_short_names_too(tmp_path, capsys):
    code, _, err = run_cli(capsys, "prepare", "yeast", "--regime", "no-such-regime", "-o", tmp_path / "b")
    message = one_line_error(err)
    assert code == 2 and message.startswith("argument --regime: unknown observation regime 'no-such-regime'")
    assert " 1p-frequent, " in message and " single_positive_most_frequent, " in message
    assert not (tmp_path / "b").exists()


def test_label_names_from_a_file_or_a_list(tmp_path):
    f = tmp_path / "names.txt"
    f.write_text("cat\n\n dog \nsofa\n", encoding="utf-8")
    assert _label_names(str(f)) == ["cat", "dog", "sofa"]
    assert _label_names("cat, dog,,sofa") == ["cat", "dog", "sofa"]
    assert _csv_list(None) is None and _csv_list(" a ,b ") == ["a", "b"]


def test_device_option_refuses_what_the_machine_lacks(toy_bundle, tmp_path, capsys):
    """(tests/conftest.py hides CUDA from this test.)"""
    code, _, err = run_cli(capsys, "train", toy_bundle.path, "--device", "cuda", "-o", tmp_path / "run")
    assert code == 2 and "CUDA is not available" in one_line_error(err)
    assert not (tmp_path / "run").exists()
