"""``spml methods`` (spmlkit.cli.methods): every registered method with its regime, paper
and hyper-parameters; aliases say which method they equal at the defaults."""
from spmlkit.methods import METHODS
from tests.helpers.cli import one_line_error, run_cli


def test_lists_every_method_once_auto_first(capsys):
    code, out, _ = run_cli(capsys, "methods")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")]
    # every method of spmlkit's (the catalogue, read without torch; tests/test_catalogue.py checks it
    # against the registry, where other test modules also register methods of their own)
    from spmlkit.catalogue import method_names

    assert sorted(names) == method_names() and names[:3] == ["auto", "bce", "an"]
    assert set(names) <= set(METHODS) and len(names) > 40


def test_named_methods_show_reference_and_hyperparameters(capsys):
    code, out, _ = run_cli(capsys, "methods", "wan", "dw")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == ["wan", "dw"]
    assert "reference: Cole et al. 2021, §5.1" in out and "hyper-parameters: gamma=None" in out
    assert "(= wan at the default hyper-parameters)" in next(line for line in lines if line.startswith("dw "))


def test_unknown_name_is_one_line_exit_2(capsys):
    code, out, err = run_cli(capsys, "methods", "no-such-method")
    assert code == 2 and out == ""
    assert one_line_error(err).startswith("unknown method 'no-such-method'; expected one of: an,")


def test_help(capsys):
    code, out, _ = run_cli(capsys, "methods", "--help")
    assert code == 0 and "--verbose" in out and "List every registered method" in out
