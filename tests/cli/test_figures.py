"""``spml figures`` (spmlkit.cli.figures): the figures of a finished bench folder."""
import json

from tests.helpers.cli import one_line_error, run_cli


def test_help(capsys):
    code, out, _ = run_cli(capsys, "figures", "--help")
    assert code == 0 and "RESULTS_DIR" in out and "--methods" in out


def test_a_folder_that_is_not_a_bench_is_one_line_exit_2(tmp_path, capsys):
    code, out, err = run_cli(capsys, "figures", tmp_path)
    assert code == 2 and out == ""
    assert one_line_error(err) == f"{tmp_path}: no runs.json or partial-runs.json; is this a 'spml bench' results folder?"


def test_nothing_to_draw_says_why(tmp_path, capsys):
    """A bench without --train-fractions, histograms or a partial sweep has no figure: the
    command says which options would give one, and writes nothing."""
    (tmp_path / "runs.json").write_text(json.dumps({"runs": []}))
    code, out, err = run_cli(capsys, "figures", tmp_path)
    assert code == 0 and out.startswith("no figure to draw: run 'spml bench' with --train-fractions") and err == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.json"]
