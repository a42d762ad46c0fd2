"""Images/s of EfficientNet-Lite0 on this CPU: feature extraction and one fine-tuning step.

    PYTHONPATH=src python benchmarks/images_speed.py [--sizes 224 448] [--threads 1 2] [--batch-size 8]

* extraction: ``backbone(x)`` (pooled features) in eval mode under ``torch.inference_mode``;
* fine-tuning step: backbone + linear head (80 labels) in train mode, AN loss, backward,
  Adam step (what one step of ``spml train --setting finetune`` does, minus image decoding);
* decoding: loading + resizing real images (the digits canvases, or ``--images DIR``) with
  the ``eval`` view, single process.

Inputs are random tensors (decoding is measured separately), one warm-up batch, then the
mean over ``--batches`` timed batches.  Writes ``benchmarks/results/images_speed.md`` with
the command, date, machine and load average (the machine is shared: numbers are noisy).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _time(fn, warmup: int, batches: int) -> float:
    for _ in range(warmup):
        fn()
    t = time.perf_counter()
    for _ in range(batches):
        fn()
    return (time.perf_counter() - t) / batches


def bench_extract(size: int, bs: int, warmup: int, batches: int, channels_last: bool) -> float:
    from spmlkit.features import build_backbone

    net = build_backbone("efficientnet-lite0", image_size=size).eval()
    x = torch.rand(bs, 3, size, size, generator=torch.Generator().manual_seed(0))
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)

    def run():
        with torch.inference_mode():
            net(x)

    return bs / _time(run, warmup, batches)


def bench_step(size: int, bs: int, warmup: int, batches: int) -> float:
    from spmlkit.features import build_backbone
    from spmlkit.losses import get_loss
    from spmlkit.models.image import ImageModel

    model = ImageModel(build_backbone("efficientnet-lite0", image_size=size), 80).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-5)
    an = get_loss("an").fn
    g = torch.Generator().manual_seed(0)
    x = torch.rand(bs, 3, size, size, generator=g)
    z = torch.zeros(1, bs, 80, dtype=torch.int8)
    z[0, torch.arange(bs), torch.randint(0, 80, (bs,), generator=g)] = 1

    def run():
        loss = an(model(x), z).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    return bs / _time(run, warmup, batches)


def bench_decode(paths: list[str], size: int) -> float:
    from spmlkit.features.transforms import apply_view, load_image

    t = time.perf_counter()
    for p in paths:
        apply_view("eval", load_image(p), size, None)
    return len(paths) / (time.perf_counter() - t)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[224, 448])
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batches", type=int, default=2)
    ap.add_argument("--images", help="folder of images for the decoding measurement (default: digits canvases)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "images_speed.md"))
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    if args.images:
        from spmlkit.features.transforms import list_images

        paths, src = list_images(args.images)[:64], args.images
    else:
        from spmlkit.data.digits import make_digits

        ds = make_digits()
        paths, src = ds.splits["train"].paths[:64], "digits canvases (64x64 PNG)"

    load0 = os.getloadavg()
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        for size in args.sizes:
            ex = bench_extract(size, args.batch_size, args.warmup, args.batches, channels_last=False)
            ex_cl = bench_extract(size, args.batch_size, args.warmup, args.batches, channels_last=True)
            st = bench_step(size, args.batch_size, args.warmup, args.batches)
            dec = bench_decode(paths, size)
            rows.append((threads, size, ex, ex_cl, st, dec, os.getloadavg()[0]))
            print(f"{threads} thread(s), {size}px: extraction {ex:.1f} img/s (channels_last {ex_cl:.1f}), "
                  f"fine-tuning step {st:.1f} img/s, decode+resize {dec:.0f} img/s", flush=True)
    load1 = os.getloadavg()

    env = " ".join(f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "SPMLKIT_CACHE") if k in os.environ)
    cmd = (env + " " if env else "") + "PYTHONPATH=src python benchmarks/images_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# EfficientNet-Lite0 speed on CPU (images/s)", "",
        f"- command: `{cmd.strip()}`",
        f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
        f"- machine: `{uname}`",
        f"- CPU: {_cpu_model()}, {os.cpu_count()} logical CPUs; torch {torch.__version__}; torch threads per row",
        "- device: cpu (every measurement runs on the CPU, whatever GPU the machine has)",
        f"- wall time of this benchmark: {time.perf_counter() - t_start:.0f} s",
        f"- load average before / after: {load0[0]:.1f} / {load1[0]:.1f} (shared machine: other processes compete "
        "for the cores, so these are lower bounds of what an idle machine gives)",
        f"- batch {args.batch_size}, {args.warmup} warm-up batch(es), mean over {args.batches} timed batches; "
        "random input tensors (decoding measured separately, on " + src + ")", "",
        "| threads | input | extraction (eval, pooled) | extraction, channels_last | fine-tuning step "
        "(fwd+bwd+Adam) | decode + resize | load average |",
        "|---|---|---|---|---|---|---|",
    ]
    for threads, size, ex, ex_cl, st, dec, load in rows:
        lines.append(f"| {threads} | {size} x {size} | {ex:.1f} | {ex_cl:.1f} | {st:.2f} | {dec:.0f} | {load:.1f} |")
    lines += ["", "Time per epoch follows directly: e.g. 82,081 COCO training images at 448 px and the fine-tuning "
              "rate above; the papers' protocol (10 epochs x 8 configurations x 3 seeds) needs a GPU."]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
