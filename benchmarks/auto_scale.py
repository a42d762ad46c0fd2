"""What the default ``spml train`` (``auto``) costs beside ``-m an`` as the data grows.

On the synthetic single-positive sets of ``benchmarks/scale.py`` (one Zipf label per
training row, 64 features, 5,000 fully labelled test rows), each size is prepared once
(20 % validation), then whole commands are timed, each as its own process, one thread:

* ``spml train B -m an --epochs E --batch-size 256 --threads 1``
* ``spml train B --epochs E --batch-size 256 --threads 1`` (``auto``, the default)

with this checkout's code and, with ``--before SRC``, again with the code under ``SRC``
(e.g. a checkout of ``main`` before the change: ``PYTHONPATH=SRC``).  The table has the
whole-command wall time, ``auto`` / ``an``, and how ``auto`` weighed its members (the
result's notes: the rule, and the validation rows it was weighed on).  The load average
is recorded as each command ends: on a shared machine it says how far a time is inflated.

    python benchmarks/auto_scale.py --sizes 20000x2000 --before /path/to/main/src
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "auto_scale.md"
SCALE = REPO / "benchmarks" / "scale.py"
BATCH = 256


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def _timed(cmd: list[str], src: Path, timeout: float) -> dict:
    """Wall and CPU seconds of ``cmd`` (the CPU time of the finished child, user + system:
    on a shared machine it is inflated far less than the wall time)."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    t, c = time.perf_counter(), _cpu()
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - t, "rc": None, "load": os.getloadavg()[0],
                "error": f"stopped at the {timeout:.0f} s limit (--timeout)"}
    out = {"seconds": time.perf_counter() - t, "cpu_seconds": _cpu() - c, "rc": r.returncode,
           "load": os.getloadavg()[0]}
    if r.returncode:
        out["error"] = ((r.stderr or r.stdout).strip().splitlines() or ["?"])[-1][:300]
    return out


def _spml(*args) -> list[str]:
    return [sys.executable, "-m", "spmlkit.cli", *map(str, args)]


def run_size(n: int, L: int, epochs: int, work: Path, codes: dict, timeout: float, log=print) -> dict:
    data, bundle = work / "data.npz", work / "bundle"
    here = REPO / "src"
    subprocess.run([sys.executable, str(SCALE), "data", str(data), str(n), str(L)], check=True,
                   env={**os.environ, "PYTHONPATH": str(here)})
    subprocess.run(_spml("prepare", data, "-o", bundle, "--seed", 0), check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(here)})
    row = {"N": n, "L": L, "epochs": epochs, "runs": {}}
    for code, src in codes.items():
        for method in ("an", "auto"):
            out = work / f"run-{code}-{method}"
            cmd = _spml("train", bundle, *(["-m", "an"] if method == "an" else []), "--epochs", epochs,
                        "--batch-size", BATCH, "--threads", 1, "-o", out)
            log(f"  {n:,} x {L:,}, {code}: train {method} ...")
            r = _timed(cmd, src, timeout)
            if r["rc"] == 0:
                res = json.loads((out / "result.json").read_text())
                notes = res.get("notes") or {}
                r.update(test_map=res.get("test_map"), combine=notes.get("combine"),
                         weighed_on=notes.get("weighed_on"),
                         weights={m["label"]: round(m["weight"], 3) for m in notes.get("members", [])} or None)
            row["runs"][f"{code} {method}"] = r
            log(f"    {r['seconds']:.1f} s, CPU {r.get('cpu_seconds', float('nan')):.1f} s (load {r['load']:.1f})"
                + (f" failed: {r['error']}" if r["rc"] else ""))
    return row


def render(rows: list[dict], argv: list[str], wall: float, codes: dict) -> str:
    lines = ["# `auto` (the default `spml train`) beside `-m an`, whole commands", "",
             f"- command: `python benchmarks/auto_scale.py {' '.join(argv)}`",
             f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; wall time {wall / 60:.1f} min",
             f"- machine: {platform.platform()}; {os.cpu_count()} cores; python {platform.python_version()}; "
             "one thread per command (OMP/MKL 1, --threads 1)",
             f"- code: {', '.join(f'{k} = {v}' for k, v in codes.items())}",
             "- load: the machine's 1-minute load average as each command ended (a shared machine: times "
             "above the core count are inflated by other processes)", "",
             "| N x L | epochs | code | `an` s (load) | `auto` s (load) | auto / an | auto / an (CPU s) | "
             "test mAP an / auto | auto weighed by | on validation rows |",
             "|---|---:|---|---:|---:|---:|---:|---|---|---|"]
    for row in rows:
        for code in codes:
            a, b = row["runs"].get(f"{code} an", {}), row["runs"].get(f"{code} auto", {})

            def cell(r):
                return f"{r['seconds']:.0f} ({r['load']:.1f})" if r.get("rc") == 0 else \
                    f"> {r['seconds']:.0f} ({r['load']:.1f}): {r.get('error', '?')}"

            both = a.get("rc") == 0 and b.get("rc") == 0
            ratio = f"{b['seconds'] / a['seconds']:.1f}x" if both else "-"
            cpu = (f"{b['cpu_seconds'] / a['cpu_seconds']:.1f}x ({a['cpu_seconds']:.0f} / {b['cpu_seconds']:.0f})"
                   if both and "cpu_seconds" in a else "-")
            maps = " / ".join(f"{r['test_map']:.2f}" if r.get("test_map") is not None else "-" for r in (a, b))
            w = b.get("weighed_on")
            on = "-" if b.get("rc") != 0 else f"{w['rows']:,} of {w['of']:,} (seed {w['seed']})" if w else \
                "all (kept logits)"
            lines.append(f"| {row['N']:,} x {row['L']:,} | {row['epochs']} | {code} | {cell(a)} | {cell(b)} | "
                         f"{ratio} | {cpu} | {maps} | {b.get('combine', '-')} | {on} |")
    lines += ["", "Members' weights (`auto`, per code and size):", ""]
    for row in rows:
        for code in codes:
            b = row["runs"].get(f"{code} auto", {})
            lines.append(f"- {row['N']:,} x {row['L']:,}, {code}: {b.get('weights')}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["20000x2000"])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--before", type=Path, default=None, help="a src/ folder with the code before the change")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds a command may run before it is stopped")
    ap.add_argument("-o", "--output", type=Path, default=OUT)
    args = ap.parse_args(argv)
    codes = {"after": REPO / "src", **({"before": args.before.resolve()} if args.before else {})}
    t0 = time.perf_counter()
    rows = []
    for size in args.sizes:
        n, L = (int(v) for v in size.lower().split("x"))
        with tempfile.TemporaryDirectory(prefix="auto_scale_") as tmp:
            rows.append(run_size(n, L, args.epochs, Path(tmp), codes, args.timeout))
    text = render(rows, argv, time.perf_counter() - t0, codes)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
