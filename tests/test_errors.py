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


def test_unknown_names_suggest_the_closest_known_ones():
    """Issue 37: a typo gets a "did you mean" (one helper for every unknown-name message)."""
    from spmlkit.errors import did_you_mean

    e = UnknownNameError("method", "wna", ["an", "wan", "role"])
    assert str(e) == "unknown method 'wna' (did you mean 'wan'?); expected one of: an, role, wan"
    assert did_you_mean("observed_mAP", ["observed_map", "observed_recall@5"]) == " (did you mean 'observed_map'?)"
    assert did_you_mean("Yeast", ["yeast", "scene"]) == " (did you mean 'yeast'?)"
    assert did_you_mean("zzz", ["an", "wan"]) == ""  # nothing close: no suggestion


@pytest.mark.parametrize("argv, suggestion", [
    (["methods", "wna"], "'wan'"),
    (["prepare", "yaest", "-o", "{tmp}/b"], "'yeast'"),
    (["train", "{tmp}/nobundle", "-m", "wan", "--param", "gamm=0.1", "-o", "{tmp}/r"], "'gamma'"),
    (["train", "{tmp}/nobundle", "-m", "an", "--log-to", "mlfow", "-o", "{tmp}/r"], "'mlflow'"),
])
def test_the_cli_says_did_you_mean_for_methods_datasets_params_and_loggers(tmp_path, capsys, argv, suggestion):
    import numpy as np

    from spmlkit.data import Split, prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset

    rng = np.random.default_rng(0)
    Y = rng.random((40, 3)) < 0.5
    Y[:, 0] = True
    prepare_bundle(MultiLabelDataset("toy", ["a", "b", "c"], {"train": Split(X=rng.normal(size=(40, 2)), Y=Y)}),
                   tmp_path / "nobundle", log=lambda m: None)
    code, out, err = run_cli(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and f"(did you mean {suggestion}?)" in one_line_error(err)
