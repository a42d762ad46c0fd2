"""Inventory of ``benchmarks/results/``: every table's command, cost and header fields.

The project's standard for result tables: they are written by a command, never by hand,
and record the command, date, machine, device and wall time.  This script reads the
header of every Markdown file under the results folder (the lines before its first
table row or section heading) and lists, per file:

* the command its header records (``command:`` / ``commands:``),
* its cost: the wall time its header records, otherwise the sum of a seconds column
  of its table (``seconds``, ``wall time (s)``), marked as such,
* which of command, date, machine, device and wall time its header records, and
  what is missing.

It then lists every folder with its other files (runs, figures).  It prints the
inventory and writes it to ``benchmarks/results/README.md`` (``--out``); the output
depends only on the files read (no date), so re-running it on unchanged tables gives
the same file.  It trains nothing.

    python benchmarks/results_index.py
    python benchmarks/results_index.py --results benchmarks/results --out -   # print only
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TITLE = "# Inventory of benchmarks/results"
FIELDS = ("command", "date", "machine", "device", "wall time")

_KEY = re.compile(r"^\s*(?:[-*]\s+)?(commands?|dates?|machine)\s*:\s*(.*)$", re.IGNORECASE)
_DEVICE = re.compile(r"\bdevice\b", re.IGNORECASE)
# a wall time: "wall time: 1 min 19 s", "wall time 8 s", "the benchmark took 31.8 min",
# or a duration closing the date line ("date: 2026-11-24 13:00 UTC; 6.1 min")
_WALL = re.compile(r"wall time|\btook\s+\d|;\s*\d+(?:\.\d+)?\s*(?:h|min|s)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)\s*h\b\s*)?(?:(\d+(?:\.\d+)?)\s*min\b\s*)?(?:(\d+(?:\.\d+)?)\s*s\b)?")
_SECONDS_COLUMN = re.compile(r"^(seconds|wall time \(s\))$", re.IGNORECASE)


@dataclass
class Entry:
    """What the header of one results file records."""

    path: str
    title: str = ""
    command: str | None = None
    date: str | None = None
    machine: str | None = None
    device: bool = False
    wall: bool = False
    cost_s: float | None = None
    cost_note: str = ""
    table_rows: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        have = {"command": self.command is not None, "date": self.date is not None,
                "machine": self.machine is not None, "device": self.device, "wall time": self.wall}
        return [f for f in FIELDS if not have[f]]


def parse_duration(text: str) -> float | None:
    """Seconds of the first duration in ``text`` ("1 h 54 min 28 s", "6.1 min", "179 s"); None if none.

    >>> parse_duration("wall time: 1 min 19 s; training time summed 2 min 30 s")
    79.0
    >>> parse_duration("the benchmark took 31.8 min.") == 31.8 * 60
    True
    """
    for m in _DURATION.finditer(text):
        if any(m.groups()):
            h, mi, s = (float(g) if g else 0.0 for g in m.groups())
            return h * 3600 + mi * 60 + s
    return None


def header_lines(lines: list[str]) -> list[str]:
    """The lines before the first table row or section heading (the title line included)."""
    out = []
    for i, line in enumerate(lines):
        if line.startswith("|") or (i > 0 and line.startswith("#")):
            break
        out.append(line)
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def seconds_column_sum(lines: list[str]) -> tuple[float, int] | None:
    """Sum of every table column headed ``seconds`` or ``wall time (s)`` (and the rows summed)."""
    total, rows, col = 0.0, 0, None
    for line in lines:
        if not line.startswith("|"):
            col = None
            continue
        cells = _cells(line)
        if col is None:
            hits = [i for i, c in enumerate(cells) if _SECONDS_COLUMN.match(c)]
            col = hits[0] if hits else -1
            continue
        if col < 0 or set(line.replace("|", "").strip()) <= set("-: "):
            continue
        try:
            total += float(cells[col])
            rows += 1
        except (IndexError, ValueError):
            pass
    return (total, rows) if rows else None


def row_columns(lines: list[str]) -> set[str]:
    """Lower-cased names of the columns of every table in the file (a command or date per row)."""
    names, prev_table = set(), False
    for line in lines:
        is_row = line.startswith("|")
        if is_row and not prev_table:
            names.update(c.lower() for c in _cells(line))
        prev_table = is_row
    return names


def read_entry(path: Path, root: Path) -> Entry:
    """Parse the header of one Markdown results file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    e = Entry(path=path.relative_to(root).as_posix())
    e.title = lines[0].lstrip("# ").strip() if lines else ""
    head = header_lines(lines)
    for line in head:
        m = _KEY.match(line)
        key = m.group(1).lower().rstrip("s") if m else None
        if key == "command":
            if e.command is None:
                e.command = m.group(2).strip()
            continue  # a command's own words ("--device", "... wall time are in ...") are not header fields
        if key == "date" and e.date is None:
            e.date = m.group(2).split(";")[0].strip()
        elif key == "machine" and e.machine is None:
            e.machine = m.group(2).strip()
        if _DEVICE.search(line):
            e.device = True
        if _WALL.search(line):
            e.wall = True
            if e.cost_s is None:
                at = re.search(r"wall time|\btook\b|;\s*(?=\d)", line, re.IGNORECASE)
                e.cost_s = parse_duration(line[at.end():] if at else line)
                e.cost_note = "header"
    per_row = row_columns(lines)
    if e.command is None and "command" in per_row:
        e.command = "(one per table row)"
    if e.date is None and "date" in per_row:
        e.date = "(one per table row)"
    if e.cost_s is None:
        col = seconds_column_sum(lines)
        if col is not None:
            e.cost_s, n = col
            e.cost_note = f"sum of a seconds column ({n} rows)"
            if "command" in per_row:  # one command per row, each with its own seconds: their wall times
                e.wall = True
    e.table_rows = sum(1 for ln in lines if ln.startswith("|") and not set(ln.replace("|", "").strip()) <= set("-: "))
    return e


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "not recorded"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def inventory(root: Path) -> tuple[list[Entry], dict[str, list[str]]]:
    """Every Markdown file under ``root`` (but the index itself) and, per folder, its other files."""
    entries, others = [], {}
    for p in sorted(root.rglob("*")):
        if p.is_dir() or any(part.startswith(".") or part in ("bundles", "groups", "work")
                             for part in p.relative_to(root).parts):
            continue
        rel = p.relative_to(root)
        if p.suffix == ".md":
            if rel.as_posix() != "README.md":
                entries.append(read_entry(p, root))
        else:
            others.setdefault(rel.parent.as_posix(), []).append(rel.name)
    return entries, others


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def render(root: Path, command: str = "python benchmarks/results_index.py") -> str:
    entries, others = inventory(root)
    yes = "yes"
    out = [TITLE, "",
           f"Written by `{command}` from the headers of the files below; do not edit by hand. "
           "It trains nothing and records no date: re-running it on unchanged tables gives the same file.", "",
           "Standard: a table is written by a command and its header records the command, date, machine, "
           "device and wall time.  *cost*: the wall time in the header, else the sum of the table's seconds "
           "column (marked Σ), which leaves out loading and setup.", "",
           "| file | command | date | cost | machine | device | wall time | missing |",
           "|---|---|---|---:|---|---|---|---|"]
    for e in entries:
        cmd = f"`{_esc(e.command.strip('`'))}`" if e.command else "—"
        if e.command and ("`" in e.command.strip("`") or e.command.startswith("(")):  # notes, or per row
            cmd = _esc(e.command)
        cost = fmt_seconds(e.cost_s) + (" Σ" if e.cost_note.startswith("sum") else "")
        out.append(f"| {e.path} | {cmd} | {_esc(e.date) if e.date else '—'} | {cost} | "
                   f"{yes if e.machine else 'no'} | {yes if e.device else 'no'} | {yes if e.wall else 'no'} | "
                   f"{', '.join(e.missing) or '—'} |")
    complete = sum(1 for e in entries if not e.missing)
    missing = Counter(f for e in entries for f in e.missing)
    out += ["", f"{len(entries)} files; {complete} with a complete header; missing: "
            + (", ".join(f"{f} {n}" for f, n in sorted(missing.items(), key=lambda kv: FIELDS.index(kv[0])))
               or "nothing") + ".", "", "## Other files", "",
            "| folder | files |", "|---|---|"]
    for folder, names in sorted(others.items()):
        by_ext = Counter(Path(n).suffix or n for n in names)
        listed = ", ".join(sorted(n for n in names if not n.endswith(".png")))
        pngs = by_ext.get(".png", 0)
        if pngs:
            listed += (", " if listed else "") + f"{pngs} figure(s) (.png)"
        out.append(f"| {folder if folder != '.' else '(top level)'} | {listed} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(here / "results"), help="the results folder (default: %(default)s)")
    ap.add_argument("--out", help="where to write the inventory (default: RESULTS/README.md; '-' prints only)")
    args = ap.parse_args(argv)
    root = Path(args.results)
    if not root.is_dir():
        print(f"results_index: --results {root}: not a folder", file=sys.stderr)
        return 2
    text = render(root)
    print(text, end="")
    if args.out == "-":
        return 0
    out = Path(args.out) if args.out else root / "README.md"
    if out.exists() and not out.read_text(encoding="utf-8", errors="replace").startswith(TITLE):
        print(f"results_index: {out} exists and was not written by this script; not replacing it "
              "(choose another --out)", file=sys.stderr)
        return 2
    from spmlkit.io import write_text

    write_text(out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
