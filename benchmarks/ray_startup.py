"""What ``spml bench --executor ray`` costs before and after its groups (issue 37).

docs/scale.md said 7.9 s: that was ``ray.init`` + ``ray.shutdown`` alone.  A bench also
starts Ray's worker processes, each of which imports spmlkit and torch before its first
group, and a tiny grid pays all of it.  This script times, each in a fresh process, on one
prepared Yeast bundle:

1. ``spml bench`` on a one-group grid (an, one lr, one seed, one epoch), sequential;
2. the same with ``--executor ray --jobs 2`` (a local cluster started and stopped by the
   command);
3. ``ray.init(num_cpus=2)`` + ``ray.shutdown()`` alone, in a fresh Python;

and reports Ray's start-up cost per bench = (2) − (1), and what of it the cluster start
(3) explains; with the 1-min load average (the machine is shared).  It also checks that
the Ray bench printed nothing on stderr beyond spmlkit's own lines (Ray 2.5x's "Token
authentication is enabled" notice is silenced).  Writes
``benchmarks/results/ray_startup.md``::

    python benchmarks/ray_startup.py [--repeat 2]
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "ray_startup.md"
INIT = ("import time, ray; t = time.perf_counter(); ray.init(num_cpus=2, include_dashboard=False, "
        "log_to_driver=False, configure_logging=False); ray.shutdown(); print(time.perf_counter() - t)")


def _env() -> dict:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [src, os.environ.get("PYTHONPATH", "")] if p),
            "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}


def timed(cmd: list[str], cwd: Path) -> tuple[float, str, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return time.perf_counter() - t, p.stdout, p.stderr


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    load0 = os.getloadavg()[0]
    spml = [sys.executable, "-m", "spmlkit.cli"]
    grid = ["--methods", "an", "--lrs", "1e-2", "--batch-sizes", "8", "--seeds", "1", "--epochs", "1", "--no-figures"]
    times: dict[str, list[float]] = {"sequential": [], "ray": [], "init": []}
    stray: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        timed([*spml, "prepare", "yeast", "-o", "b"], tmp)
        for i in range(args.repeat):
            s, _, _ = timed([*spml, "bench", "--datasets", "b", *grid, "-o", f"seq{i}"], tmp)
            r, _, err = timed([*spml, "bench", "--datasets", "b", *grid, "--executor", "ray", "--jobs", "2",
                               "-o", f"ray{i}"], tmp)
            stray += [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("bench", "spml", "results"))]
            n, out, _ = timed([sys.executable, "-c", INIT], tmp)
            times["sequential"].append(s)
            times["ray"].append(r)
            times["init"].append(float(out.strip().splitlines()[-1]))
            print(f"repeat {i + 1}: sequential {s:.1f} s, ray {r:.1f} s, ray.init+shutdown {times['init'][-1]:.1f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    cost = med["ray"] - med["sequential"]
    from spmlkit.experiments.machine import machine_info

    lines = ["# Ray's start-up cost per bench (`--executor ray`)", "",
             "- command: `" + " ".join(["python benchmarks/ray_startup.py", *map(shlex.quote, argv)]) + "`",
             f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"- machine: {machine_info(device='cpu')}",
             "- device: cpu",
             f"- wall time: {time.perf_counter() - t_start:.0f} s",
             f"- load: 1-min load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (the machine "
             "is shared; 2.0 = both cores busy)",
             "- grid: `spml bench --datasets <yeast bundle> " + " ".join(grid) + "` (one group of one run), each way a "
             f"fresh process, one torch thread; median of {args.repeat}", "",
             "| way | wall (s), each repeat | median (s) |", "|---|---|---:|",
             f"| sequential | {', '.join(f'{x:.1f}' for x in times['sequential'])} | {med['sequential']:.1f} |",
             f"| `--executor ray --jobs 2` | {', '.join(f'{x:.1f}' for x in times['ray'])} | {med['ray']:.1f} |",
             f"| `ray.init(num_cpus=2)` + `ray.shutdown()` alone | {', '.join(f'{x:.1f}' for x in times['init'])} | "
             f"{med['init']:.1f} |", "",
             f"Ray's start-up cost per bench: **{cost:.1f} s** (Ray − sequential on a one-run grid): the cluster's "
             f"start and stop ({med['init']:.1f} s) plus a worker process that imports spmlkit and torch before its "
             f"first group ({max(cost - med['init'], 0):.1f} s here).",
             f"- lines on stderr from the Ray bench other than spmlkit's own: {len(stray)}"
             + (f" (first: `{stray[0][:120]}`)" if stray else "")]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
