"""Thread defaults on a quiet and on a loaded CPU (issue 15).

Times, in one run, with and without a CPU burner on every core:

* the README's main job (``spml demo``, default options), and
* ``spml train bundles/yeast -m role --lr 1e-3 --batch-size 8 --epochs 25`` with the
  default (one torch thread in the linear setting) and with ``--threads N`` for N = the
  number of cores (torch's own default before the change).

Each command runs in a fresh process with the user's environment (no OMP_* variables are
set).  Writes ``benchmarks/results/threads.md`` with the command, date, machine, device
and wall time.

    python benchmarks/threads.py [--repeats 2] [--skip-demo]
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "threads.md"
BURN = "while True: pass"


def timed(argv: list[str], cwd: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    env["SPML_NO_PROGRESS"] = "1"
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed:\n{p.stderr[-2000:]}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--skip-demo", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    cores = os.cpu_count() or 1
    spml = [sys.executable, "-m", "spmlkit"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([*spml, "prepare", "yeast", "-o", "b"], cwd=tmp, check=True, capture_output=True)
        cases = [("train role, default threads", [*spml, "train", "b", "-m", "role", "--lr", "1e-3", "--batch-size",
                                                  "8", "--epochs", "25", "--no-resume", "-o", "r1"]),
                 (f"train role, --threads {cores}", [*spml, "train", "b", "-m", "role", "--lr", "1e-3",
                                                     "--batch-size", "8", "--epochs", "25", "--threads", str(cores),
                                                     "--no-resume", "-o", "r2"])]
        if not args.skip_demo:
            cases.append(("spml demo (README main job), default", [*spml, "demo"]))
        rows = []
        for load in ("quiet", "loaded"):
            burners = []
            if load == "loaded":
                burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(cores)]
                time.sleep(1.0)
            try:
                for name, argv in cases:
                    times = [timed(argv, tmp) for _ in range(args.repeats)]
                    rows.append((load, name, min(times), max(times)))
                    print(f"{load:7s} {name:40s} {min(times):7.1f} s (max {max(times):.1f})", flush=True)
            finally:
                for b in burners:
                    b.kill()
                    b.wait()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    import torch

    from spmlkit.device import describe, device_info, resolve_device

    lines = ["# Thread defaults, quiet and loaded CPU", "",
             f"- command: `python benchmarks/threads.py --repeats {args.repeats}"
             f"{' --skip-demo' if args.skip_demo else ''}`",
             f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             f"- machine: {platform.system()} {platform.machine()}, {cores} cores, python "
             f"{platform.python_version()}, torch {torch.__version__}; load average at the end {load:.1f}",
             f"- device: {describe(device_info(resolve_device(None)))} (the commands' default device, auto)",
             f"- wall time of this benchmark: {time.perf_counter() - t_start:.0f} s",
             f"- loaded = one busy-loop process per core (`python -c '{BURN}'`) running beside the command",
             "- wall time of the whole command in a fresh process (import, data, training), best and worst of "
             f"{args.repeats}", "",
             "| CPU | command | best (s) | worst (s) |", "|---|---|---:|---:|"]
    lines += [f"| {a} | {b} | {c:.1f} | {d:.1f} |" for a, b, c, d in rows]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
