"""The README's "tour of the CLI" runs top to bottom exactly as written (issue 15)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time

import pytest

from tests.helpers import REPO


def tour_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## A tour of the CLI", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    cmds, current = [], ""
    for line in block.splitlines():
        line = line.rstrip()
        if current:
            current += " " + line.rstrip("\\").strip()
        elif line.startswith("spml "):
            current = line.rstrip("\\")
        if current and not line.endswith("\\"):
            cmds.append(current)
            current = ""
    return cmds


def test_the_tour_lists_the_commands_it_runs():
    cmds = tour_commands()
    assert len(cmds) >= 10
    # every run a later command reads is created by an earlier one
    made = set()
    for c in cmds:
        for ref in re.findall(r"\bruns/[\w-]+", c.split(" -o ")[0]):
            assert ref in made, f"{c!r} reads {ref}, which the tour never creates"
        m = re.search(r" -o (runs/[\w-]+)", c)
        if m:
            made.add(m.group(1))


@pytest.mark.slow
def test_the_tour_runs_top_to_bottom(shared_data, tmp_path):
    env = {**os.environ, "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    for cmd in tour_commands():
        cmd = cmd.split("  #", 1)[0].split(" # ", 1)[0]
        argv = [sys.executable, "-m", "spmlkit", *shlex.split(cmd)[1:]]
        argv = [str(shared_data) if a == "../shared/data" else a for a in argv]
        t0 = time.perf_counter()
        p = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        print(f"{time.perf_counter() - t0:6.1f} s  {cmd}")
        assert p.returncode == 0, f"{cmd}\n{p.stderr[-2000:]}"
    assert (tmp_path / "results" / "label_sets.csv").exists()
    assert (tmp_path / "results" / "cole-table1" / "table.md").exists()
