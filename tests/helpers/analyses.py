"""Running the papers' analyses in tests (tests/experiments/analyses/)."""
from __future__ import annotations

import csv

#: the image options of the analyses' image runs: a tiny random backbone on 64-px digits
IMG = dict(backbone="tiny-random", image_size=64, batch_size=8, threads=1)


def read_csv(path) -> list[dict]:
    """The rows of a CSV an analysis wrote, as dicts."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def run_quiet(name: str, **kw):
    """``run_analysis(name, kw)`` without its log lines."""
    from spmlkit.experiments.analyses import quiet, run_analysis

    return run_analysis(name, kw, log=quiet)
