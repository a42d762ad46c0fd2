"""benchmarks/results_index.py: the inventory of benchmarks/results read from the tables' headers."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO


@pytest.fixture(scope="module")
def ri():
    spec = importlib.util.spec_from_file_location("results_index", REPO / "benchmarks" / "results_index.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["results_index"] = mod  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("results_index", None)


COMPLETE = """# A table
- command: `python benchmarks/x.py --out t.md`
- date: 2026-11-25 02:30 UTC
- machine: Linux; 2 cores
- device: cpu (AMD EPYC)
- wall time: 1 min 19 s

| a | b |
|---|---|
| 1 | 2 |
"""

NO_DEVICE = """# Quick runs
- command: `python benchmarks/q.py`
- date: 2026-11-22T04:42:50
- machine: x86_64 2 CPUs

## yeast

| method | seconds |
|---|---|
| an | 2.5 |
| bce | 1.5 |

## scene

| method | seconds |
|---|---|
| an | 6.0 |
"""

PROSE = """# Why?

Numbers come from other tables; no command wrote this.
"""


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    (root / "part").mkdir(parents=True)
    (root / "complete.md").write_text(COMPLETE, encoding="utf-8")
    (root / "part" / "quick.md").write_text(NO_DEVICE, encoding="utf-8")
    (root / "part" / "why.md").write_text(PROSE, encoding="utf-8")
    (root / "part" / "runs.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (root / "part" / "fig.png").write_bytes(b"\x89PNG")
    return root


@pytest.mark.parametrize("text,seconds", [("wall time: 1 min 19 s; training 2 min 30 s", 79.0),
                                          ("the benchmark took 31.8 min.", 31.8 * 60),
                                          ("58 min 45 s", 58 * 60 + 45.0), ("1 h 54 min 28 s", 6868.0),
                                          ("3528 s", 3528.0), ("no duration here", None)])
def test_parse_duration(ri, text, seconds):
    got = ri.parse_duration(text)
    assert got is None if seconds is None else got == pytest.approx(seconds)


def test_header_fields_and_cost(ri, tmp_path):
    root = _folder(tmp_path)
    entries = {e.path: e for e in ri.inventory(root)[0]}
    assert set(entries) == {"complete.md", "part/quick.md", "part/why.md"}
    c = entries["complete.md"]
    assert c.command == "`python benchmarks/x.py --out t.md`" and c.date == "2026-11-25 02:30 UTC"
    assert c.missing == [] and c.cost_s == 79.0 and c.cost_note == "header"
    q = entries["part/quick.md"]
    assert q.missing == ["device", "wall time"]
    assert q.cost_s == pytest.approx(10.0) and "3 rows" in q.cost_note  # summed over both tables
    assert entries["part/why.md"].missing == list(ri.FIELDS) and entries["part/why.md"].cost_s is None


def test_a_command_mentioning_wall_time_is_not_a_wall_time(ri, tmp_path):
    (tmp_path / "t.md").write_text("# T\n- command: `x.py table` (each part's wall time is in its table.md)\n"
                                   "- date: 2026-11-25\n", encoding="utf-8")
    (e,), _ = ri.inventory(tmp_path)
    assert not e.wall and "wall time" in e.missing


def test_writes_readme_rerun_identical_and_lists_other_files(ri, tmp_path, capsys):
    root = _folder(tmp_path)
    assert ri.main(["--results", str(root)]) == 0
    text = (root / "README.md").read_text(encoding="utf-8")
    assert text == capsys.readouterr().out
    assert "| part/quick.md | `python benchmarks/q.py` | 2026-11-22T04:42:50 | 10 s Σ |" in text
    assert "| part | runs.csv, 1 figure(s) (.png) |" in text
    assert "3 files; 1 with a complete header" in text
    assert ri.main(["--results", str(root)]) == 0  # its own README: replaced, not listed, same bytes
    assert (root / "README.md").read_text(encoding="utf-8") == text


def test_refuses_a_readme_it_did_not_write(ri, tmp_path, capsys):
    root = _folder(tmp_path)
    (root / "README.md").write_text("my notes\n", encoding="utf-8")
    assert ri.main(["--results", str(root)]) == 2
    assert "not written by this script" in capsys.readouterr().err
    assert (root / "README.md").read_text(encoding="utf-8") == "my notes\n"
    assert ri.main(["--results", str(tmp_path / "missing")]) == 2


def test_committed_results_every_table_listed(ri):
    root = REPO / "benchmarks" / "results"
    entries, _ = ri.inventory(root)
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*.md")} - {"README.md"}
    assert {e.path for e in entries} == on_disk
    assert all(e.command for e in entries if e.path.endswith("table.md") and "/" in e.path)
