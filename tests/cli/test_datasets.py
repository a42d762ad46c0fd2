"""``spml datasets`` (spmlkit.cli.datasets): the built-ins, and statistics that agree
with what the loader keeps."""


from tests.helpers.cli import run_cli as run

# Input readers refuse bad input in one line (issue 14 §3-4) and the new-user traps of
# issue 15: one label per row read as full labels, Mulan folders not found by name,
# dataset statistics that disagree with what the loader keeps.


def test_datasets_statistics_agree_with_the_loader(shared_data, capsys):
    code, out, err = run(capsys, "datasets", "--data-root", shared_data)
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("tiny-coco "))
    assert "train 30/test 6" in row and "30 train / 6 test" in row and "32 train /" not in row
    assert "dropped 2 of the 32 train images without annotations" in row


# The CLI end to end on tiny data, and every bad-input path ending in one clear line.


def test_datasets_lists_builtins(capsys):
    code, out, err = run(capsys, "datasets")
    assert code == 0 and "yeast" in out and "built-in" in out


def test_datasets_command_prints_the_rows(small_registry, tmp_path, capsys):
    from spmlkit.cli import main

    assert main(["datasets", "--data-root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "kind", "where", "splits", "labels", "features", "description"]
    assert lines[1].split()[:7] == ["tiny", "features", "built-in", "train", "4/test", "2", "3"]
    assert lines[1].endswith("train cardinality 1.75; a tiny set; dropped 1 row without labels")
    why = ("dataset 'gone' is not built in; looked for gone/ under " + "x" * 80)[:60]  # cut at 60 characters
    assert lines[2].startswith("gone ") and lines[2].endswith("  " + why)
