"""``spml analyze NAME``: one registered analysis (spmlkit.experiments.analyses)."""
from __future__ import annotations


def run(args) -> int:
    from ..experiments.analyses import run_analysis

    summary = run_analysis(args.analysis, vars(args))
    for path in summary.get("written", []):
        print(path)
    return 0


def add_parser(sub) -> None:
    """``spml analyze``: one sub-command per registered analysis (their own --help)."""
    from ..experiments.analyses import add_analyze_parser

    add_analyze_parser(sub, func=run)
