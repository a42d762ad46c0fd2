"""``spml demo``: the main job on data embedded in the package (PASCAL VOC 2007 features by default)."""
from __future__ import annotations

from ..config import check_device_syntax
from .common import _add_device_option, _check_method, _device, _pos_int, _seed

#: the demos (spmlkit.experiments.demo.DEMOS), named here so that --help imports no torch
DATASETS = ("voc2007-lite0", "yeast")


def run(args) -> int:
    for name in args.methods or ():  # before torch: a mistake is one line at once
        _check_method(name)
    check_device_syntax(args.device, "--device")
    from ..experiments.demo import run_demo  # lazy: torch-free CLI start-up

    device = _device(args)
    return run_demo(out_dir=args.out, epochs=args.epochs, seed=args.seed, quick=args.quick, methods=args.methods,
                    device=str(device), dataset=args.dataset)


def add_parser(sub) -> None:
    """``spml demo``: its options (``spml demo --help``)."""
    p = sub.add_parser("demo", help="the main job: single-positive methods on PASCAL VOC 2007 (embedded features)",
                       description="Prepare PASCAL VOC 2007 from the embedded EfficientNet-Lite0 features (one "
                                   "positive label kept per training image), train full-label BCE, assume-negative, "
                                   "a method of each paper and auto (spml train's default) in the linear setting "
                                   "with a small learning-rate grid and 3 seeds, and print a table of test mAP and "
                                   "what you get without full labels. --dataset yeast: the Mulan Yeast set and "
                                   "every single-positive method.")
    p.add_argument("-o", "--out", default=None, help="folder for the bundle and results (default: a temp folder)")
    p.add_argument("--dataset", choices=DATASETS, default=DATASETS[0],
                   help="voc2007-lite0 (default): PASCAL VOC 2007 as EfficientNet-Lite0 features, a few methods; "
                        "yeast: the Mulan Yeast set, every single-positive method")
    p.add_argument("--epochs", type=_pos_int, default=25, help="training epochs per run (default 25, Cole et al. 6.1)")
    p.add_argument("--seed", type=_seed, default=0,
                   help="seed of the single-positive draw and the validation split; training seeds are "
                        "SEED, SEED+1, SEED+2 (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke test: 3 epochs, two learning rates, one seed, and only bce/an/auto unless --methods")
    p.add_argument("--methods", nargs="+", help="methods to run (default: the demo's own list)")
    _add_device_option(p, "training")
    p.set_defaults(func=run)
