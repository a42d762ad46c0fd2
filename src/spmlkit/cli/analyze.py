"""``spml analyze NAME``: one registered analysis (spmlkit.experiments.analyses)."""
from __future__ import annotations

from ..experiments.analyses import add_analyze_parser, run_analysis


def run(args) -> int:
    summary = run_analysis(args.analysis, vars(args))
    for path in summary.get("written", []):
        print(path)
    return 0


def add_parser(sub) -> None:
    """``spml analyze``: one sub-command per registered analysis (their own --help)."""
    add_analyze_parser(sub, func=run)
