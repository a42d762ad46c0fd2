"""``spml estimate-k``: k* and bootstrap intervals of k (Cole et al. 2021, Table A2)."""
from __future__ import annotations

import numpy as np

from ..io import dumps_json
from .common import _pos_int, _seed


def run(args) -> int:
    # lazy: torch-free CLI start-up
    from ..practitioner.estimate_k import bootstrap_k_intervals, format_k_estimate, training_labels

    Y, name = training_labels(args.source, data_root=args.data_root)
    est = bootstrap_k_intervals(Y, args.m, rng=np.random.default_rng(args.seed), trials=args.trials)
    print(dumps_json(est.to_dict()), end="") if args.json else print(format_k_estimate(est, name))
    return 0


def add_parser(sub) -> None:
    """``spml estimate-k``: its options (``spml estimate-k --help``)."""
    p = sub.add_parser("estimate-k", help="k* and bootstrap intervals of k from M labelled examples (Cole Table A2)",
                       description="Print k* (mean positives per training example, Cole Eq. A1) and, for each M, the "
                                   "5th-95th percentile interval of the estimate from M fully labelled examples drawn "
                                   "without replacement (Cole et al. 2021, appendix B, Table A2).")
    p.add_argument("source", help="a dataset name (see 'spml datasets'), a data file/folder, or a prepared bundle")
    p.add_argument("--m", type=_pos_int, nargs="+", default=[5, 10, 25], help="sample sizes M (default 5 10 25)")
    p.add_argument("--trials", type=_pos_int, default=100_000, help="draws per M (default 100000, as Table A2)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the draws (default 0)")
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)
