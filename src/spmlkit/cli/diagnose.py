"""``spml diagnose``: Zhou et al.'s diagnostics of saved runs."""
from __future__ import annotations

from ..data import Bundle
from .common import _check_model


def run(args) -> int:
    Bundle(args.bundle)  # before torch: a mistake is one line at once
    for run_folder in args.runs:
        _check_model(run_folder)
    from ..experiments.diagnostics import diagnose, format_summary  # lazy: torch-free CLI start-up

    summary = diagnose(args.bundle, args.runs, args.out, reference=args.reference, split=args.split,
                       regime=args.regime)
    print(format_summary(summary))
    print(f"\nfigures and diagnostics.json written to {args.out}")
    return 0


def add_parser(sub) -> None:
    """``spml diagnose``: its options (``spml diagnose --help``)."""
    p = sub.add_parser("diagnose", help="Zhou et al. diagnostics of saved runs (figures + JSON)",
                       description="For runs written by 'spml train': per-class Wasserstein distance between the "
                                   "training-set probabilities of unobserved positives and negatives (scatter vs the "
                                   "reference run, Zhou Fig. 4a), class-wise AP change vs the reference (Fig. 4c), "
                                   "and the precision of APL pseudo-labels against the full training labels "
                                   "(Table 2). Writes PNGs and diagnostics.json.")
    p.add_argument("bundle", help="the prepared bundle the runs were trained on (needs full labels)")
    p.add_argument("runs", nargs="+", help="run folders (or their model/ folders)")
    p.add_argument("--reference", help="run to compare against (default: the run whose method is 'an')")
    p.add_argument("-o", "--out", required=True, help="output folder for the PNGs and diagnostics.json")
    p.add_argument("--split", default="test", choices=["train", "val", "test"],
                   help="split of the class-wise AP change (default test)")
    p.add_argument("--regime", help="training observations whose unobserved entries are analysed "
                                    "(default: the bundle's regime)")
    p.set_defaults(func=run)
