"""``spml demo``: the main job on the embedded Yeast data."""
from __future__ import annotations

from .common import _add_device_option, _device, _pos_int, _seed


def run(args) -> int:
    from ..experiments.demo import run_demo

    device = _device(args)
    return run_demo(out_dir=args.out, epochs=args.epochs, seed=args.seed, quick=args.quick, methods=args.methods,
                    device=str(device))


def add_parser(sub) -> None:
    """``spml demo``: its options (``spml demo --help``)."""
    p = sub.add_parser("demo", help="the main job on the embedded Yeast data",
                       description="Prepare Yeast (from the river package), train full-label BCE and every "
                                   "single-positive method in the linear setting with a small learning-rate "
                                   "grid, and print a table of test mAP.")
    p.add_argument("-o", "--out", default=None, help="folder for the bundle and results (default: a temp folder)")
    p.add_argument("--epochs", type=_pos_int, default=25, help="training epochs per run (default 25, Cole et al. 6.1)")
    p.add_argument("--seed", type=_seed, default=0,
                   help="seed of the single-positive draw and the validation split; training seeds are "
                        "SEED, SEED+1, SEED+2 (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke test: 3 epochs, two learning rates, one seed, and only bce/an unless --methods")
    p.add_argument("--methods", nargs="+", help="methods to run (default: bce and every single-positive method)")
    _add_device_option(p, "training")
    p.set_defaults(func=run)
