"""spml clean: raw occurrence records -> one id,species,x,y CSV with every dropped row
counted; a file of the user's is never replaced."""
from __future__ import annotations

import csv

from tests.helpers.cli import one_line_error, run_cli as run
from tests.helpers.rasters import write_records


def test_clean_merges_files_and_counts_drops(tmp_path, capsys):
    a = write_records(tmp_path / "a.csv", [["Aus alpha L.", 1, 2], ["aus alpha", 1, 2], ["Aus", 3, 4]])
    b = write_records(tmp_path / "b.csv", [["Bus beta", 5, 6], ["Bus beta", "", 6]], header=("name", "x", "y"))
    code, out, err = run(capsys, "clean", a, b, "-o", tmp_path / "clean.csv")
    assert code == 0, err
    assert "records: 5 read, 2 kept, 3 dropped" in out and "dropped, duplicate: 1" in out
    assert "dropped, no coordinates: 1" in out and "dropped, not identified to species: 1" in out
    assert "wrote 2 records of 2 species" in out
    rows = list(csv.reader(open(tmp_path / "clean.csv")))
    assert rows == [["id", "species", "x", "y"], ["a.csv:2", "Aus alpha", "1.0", "2.0"],
                    ["b.csv:2", "Bus beta", "5.0", "6.0"]]
    code, out, err = run(capsys, "clean", a, "-o", tmp_path / "clean.csv")  # its own output: replaced
    assert code == 0


def test_clean_refuses_to_replace_a_users_file(tmp_path, capsys):
    a = write_records(tmp_path / "a.csv", [["Aus alpha", 1, 2]])
    mine = tmp_path / "mine.csv"
    mine.write_text("my data\n")
    code, out, err = run(capsys, "clean", a, "-o", mine)
    assert code == 2 and "refusing to replace" in one_line_error(err) and mine.read_text() == "my data\n"
    code, out, err = run(capsys, "clean", a, "-o", a, "--overwrite")
    assert code == 2 and "is an input of this command" in one_line_error(err)
    code, out, err = run(capsys, "clean", tmp_path / "none.csv", "-o", tmp_path / "x.csv")
    assert code == 2 and "file not found" in one_line_error(err) and not (tmp_path / "x.csv").exists()
