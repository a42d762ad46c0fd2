"""``spml figures``: the figures of a finished bench."""
from __future__ import annotations

from .common import _check_exists


def run(args) -> int:
    _check_exists(args.results, "results folder")  # before torch: one line at once
    from ..experiments.figures import make_figures  # lazy: torch-free CLI start-up

    written = make_figures(args.results, methods=args.methods)
    if not written:
        print("no figure to draw: run 'spml bench' with --train-fractions (Fig. 1), on single-positive methods "
              "(Fig. 2, unless --no-histograms) or with --hide-fractions (partial sweep)")
    for p in written:
        print(p)
    return 0


def add_parser(sub) -> None:
    """``spml figures``: its options (``spml figures --help``)."""
    p = sub.add_parser("figures", help="draw the figures of a finished bench",
                       description="Cole Fig. 1 (with --train-fractions), Fig. 2 (histograms of unobserved "
                                   "positives) and the partial-label sweep, as PNG files in RESULTS_DIR.")
    p.add_argument("results", metavar="RESULTS_DIR", help="a finished (or partial) spml bench output folder")
    p.add_argument("--methods", nargs="+", help="methods to draw (default: all)")
    p.set_defaults(func=run)
