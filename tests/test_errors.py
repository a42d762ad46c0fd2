"""The user-facing errors (spmlkit.errors): every input error is an SpmlError whose message
names where and what; the CLI prints it on one line with exit status 2."""
import pytest

from spmlkit.errors import ConfigError, CorruptFileError, DataFormatError, SpmlError, UnknownNameError
from tests.helpers.cli import one_line_error, run_cli


def test_data_format_error_names_the_file_and_line(tmp_path):
    e = DataFormatError(tmp_path / "x.csv", "row has 1 fields; the header has 2", line=3)
    assert str(e) == f"{tmp_path / 'x.csv'}, line 3: row has 1 fields; the header has 2"
    assert e.path == tmp_path / "x.csv" and e.line == 3
    assert str(DataFormatError(None, "empty")) == "<input>: empty"
    assert isinstance(e, SpmlError) and isinstance(e, ValueError)


def test_unknown_name_lists_the_known_names_sorted_and_prints_plainly():
    e = UnknownNameError("method", "nope", {"wan": 1, "an": 2, "role": 3})
    assert str(e) == "unknown method 'nope'; expected one of: an, role, wan"  # not KeyError's repr()
    assert (e.kind, e.name, e.known) == ("method", "nope", ["an", "role", "wan"])
    with pytest.raises(KeyError):  # callers that look names up in dicts still catch it
        raise e


@pytest.mark.parametrize("cls", [ConfigError, CorruptFileError, DataFormatError, UnknownNameError])
def test_every_input_error_is_an_spml_error(cls):
    assert issubclass(cls, SpmlError)


def test_the_cli_prints_an_spml_error_on_one_line(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("f1,a\n1\n")
    code, out, err = run_cli(capsys, "prepare", tmp_path / "bad.csv", "--labels-last", 1, "-o", tmp_path / "b")
    assert code == 2 and out == ""
    assert one_line_error(err) == f"{tmp_path / 'bad.csv'}, line 2: row has 1 fields; the header has 2"
