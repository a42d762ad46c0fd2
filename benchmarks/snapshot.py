"""The repository's ``src/`` at another revision, for the benchmarks that time the code
before and after a change (``validation_metric.py``, ``predict_stream.py``): ``git
archive`` of that revision, extracted with tarfile's ``data`` filter."""
from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def snapshot_src(rev: str, work: Path) -> Path:
    """Extract ``src/`` of ``rev`` under ``work/before`` and return that ``src`` folder."""
    with open(work / "before.tar", "wb") as fh:
        subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, stdout=fh, check=True)
    with tarfile.open(work / "before.tar") as t:
        t.extractall(work / "before", filter="data")
    return work / "before" / "src"
