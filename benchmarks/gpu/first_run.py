#!/usr/bin/env python3
"""The first GPU check, in one call of the lent GPU machine (issue 38; docs/gpu.md).

    python3 benchmarks/gpu/first_run.py                      # on the GPU machine: results under $OUT
    python3 benchmarks/gpu/first_run.py --dry-run            # here, on a CPU: the same steps, GPU parts skipped

Steps, each with a time limit inside one budget (``--budget-s``, default 440 s, so that
the call fits an 8-minute ``timeout_s`` and a rerun still fits the lease):

1. **install**, without network: the wheels ``benchmarks/gpu/prepare.py`` put in
   ``.gpu-wheels/`` (if any) into a folder of their own, then spmlkit itself from a copy
   of the carried tree (``pip install --no-index --no-deps --no-build-isolation``: the
   machine's own torch and libraries are used, nothing is fetched, nothing of the
   machine's is replaced).  If that build fails (an older setuptools there, say), the
   tree's ``src/`` goes on ``PYTHONPATH`` instead and the check goes on; the log says so.
2. **versions**: GPU, driver, CUDA, torch, cuDNN and the libraries the check imports
   (``environment.txt``, with ``pip list``); a library the check needs that is missing
   is a failure.
3. **tests**: ``pytest -m gpu`` over the whole suite (every ``gpu``-marked test, wherever
   it is), a per-test time limit (pytest-timeout, else pytest's faulthandler dump), the
   full log (``pytest-gpu.log``), JUnit XML and a summary with each failure's message
   (``pytest-gpu-summary.md``).
4. **speed**: ``benchmarks/gpu_speed.py`` with sizes chosen to fit (fine-tuning
   images/s against the bare loop at 224/448 px, batch 16/64, fp32/bf16; feature
   extraction; the COCO-sized linear AN grid, stacked; device mAP), writing
   ``gpu_speed.md`` (its header: command, date, wall time, machine, the GPU) section by
   section, so a stopped run keeps what it finished.

The output folder is ``--out``, else ``$OUT`` (the device tool's), else a new temporary
folder; at most 8 files are written there (the device tool returns 8).  The last lines
printed are the summary.  Exit status 0 when every step passed (in a dry run: when every
GPU step skipped cleanly), 1 for a real failure (no GPU on the GPU machine, a failed or
erroring test, a crash, a step over its time limit, a missing library), 2 for a usage
error.

``--dry-run`` (no GPU needed, about a minute): the same script and commands, GPU steps
skipped (no nvidia-smi; every ``gpu`` test skips; ``gpu_speed.py --smoke-cpu`` instead of
the measurement), and every installed package the GPU machine does not have
(``benchmarks/gpu/machine_packages.txt``) hidden from the processes it starts, so what
the check imports is known to be there.  ``tests/devices/test_gpu_first_run.py`` runs it.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WHEELS = REPO / ".gpu-wheels"
MACHINE_PACKAGES = Path(__file__).resolve().with_name("machine_packages.txt")
FILES = ("first_run.log", "environment.txt", "pytest-gpu.log", "pytest-gpu.xml", "pytest-gpu-summary.md",
         "gpu_speed.log", "gpu_speed.md")
#: what the check imports (module: distribution), beyond the standard library and spmlkit
NEEDED = {"torch": "torch", "numpy": "numpy", "scipy": "scipy", "sklearn": "scikit-learn",
          "matplotlib": "matplotlib", "tqdm": "tqdm", "yaml": "pyyaml", "PIL": "pillow", "pytest": "pytest",
          "hypothesis": "hypothesis"}
OPTIONAL = {"pytest_timeout": "pytest-timeout", "xdist": "pytest-xdist"}
#: gpu_speed.py on the GPU: about 3 minutes on an H100 by estimate (docs/gpu.md, "First GPU run")
SPEED_ARGS = ["--sections", "map,finetune,grid,features", "--sizes", "224,448", "--batches", "16,64",
              "--steps", "10", "--warmup", "3", "--repeats", "2", "--workers", "8",
              "--grid-epochs", "2", "--grid-modes", "stacked"]
SMOKE_ARGS = ["--smoke-cpu", "--grid-modes", "stacked"]

# Hides, in the dry run's processes, every installed top-level module whose distribution
# the GPU machine lacks (so an import the machine would fail fails here too).
SITECUSTOMIZE = r'''
import importlib.abc, importlib.metadata, os, re, sys

def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

_have = {_norm(l.strip()) for l in open(os.environ["SPML_GPU_MACHINE_PACKAGES"], encoding="utf-8")
         if l.strip() and not l.startswith("#")}
_blocked = {m for m, ds in importlib.metadata.packages_distributions().items()
            if m not in ("spmlkit", "tests") and not m.startswith("__editable__")
            and not any(_norm(d) in _have for d in ds)}


class _NotOnTheGPUMachine(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by first_run.py --dry-run: the GPU "
                                      "machine does not have it; benchmarks/gpu/machine_packages.txt)", name=name)
        return None


sys.meta_path.insert(0, _NotOnTheGPUMachine())
if os.environ.get("SPML_GPU_LIST_BLOCKED"):
    print("hidden modules: " + ", ".join(sorted(_blocked)))
'''


class Log:
    """Prints and keeps everything in ``first_run.log``."""

    def __init__(self, path: Path):
        self.fh = open(path, "a", encoding="utf-8")

    def __call__(self, text: str = "", end: str = "\n") -> None:
        sys.stdout.write(text + end)
        sys.stdout.flush()
        self.fh.write(text + end)
        self.fh.flush()


def run(cmd, *, log: Log, out_file: Path | None, limit: float, env: dict, cwd: Path = REPO,
        echo: bool = True) -> tuple[int, float, bool]:
    """Run ``cmd`` (its own process group), its output to ``out_file`` and the log; past
    ``limit`` seconds it gets SIGINT (pytest and gpu_speed.py then write what they have),
    20 s later SIGKILL.  Returns ``(exit status, seconds, timed out)``."""
    t0 = time.perf_counter()
    log(f"$ {shlex.join(str(c) for c in cmd)}   (limit {limit:.0f} s)")
    if limit <= 1:
        log("  not started: no time left in the budget")
        return 124, 0.0, True
    fh = open(out_file, "a", encoding="utf-8") if out_file else None
    # SIGINT back to its default in the step: a shell starts background commands with SIGINT
    # ignored, which Python then keeps ignoring (no KeyboardInterrupt, no partial report)
    proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True,
                            errors="replace", preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    state = {"timed_out": False}

    def stop():
        state["timed_out"] = True
        log(f"  ** time limit of {limit:.0f} s reached: interrupting (SIGINT), killing in 20 s **")
        for sig, wait in ((signal.SIGINT, 20), (signal.SIGKILL, 0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                pass

    timer = threading.Timer(limit, stop)
    timer.daemon = True
    timer.start()
    try:
        for line in proc.stdout:
            if fh:
                fh.write(line)
                fh.flush()
            if echo:
                log("  " + line.rstrip("\n"))
        rc = proc.wait()
    finally:
        timer.cancel()
        if fh:
            fh.close()
        try:  # nothing of the step outlives it (loader workers, ...)
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return rc, time.perf_counter() - t0, state["timed_out"]


def output_folder(arg: str | None) -> Path:
    if arg:
        out = Path(arg)
    elif os.environ.get("OUT"):
        out = Path(os.environ["OUT"])
    else:
        out = Path(tempfile.mkdtemp(prefix="spml-first-run-"))
    if out.exists() and not out.is_dir():
        raise SystemExit(f"first_run.py: error: {out}: is a file; expected a folder")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in FILES)
        if foreign:
            raise SystemExit(f"first_run.py: error: {out}: holds files this script did not write "
                             f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}); give an empty "
                             "folder with --out")
        for name in FILES:  # a previous first run's files, replaced
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    return out


def junit_summary(xml_path: Path) -> dict:
    """Counts and failures from pytest's JUnit XML."""
    res = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "failures": [], "skip_reasons": {}}
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError) as exc:
        res["unreadable"] = f"{xml_path.name}: {exc}"
        return res
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
        bad = [c for c in case if c.tag in ("failure", "error")]
        skip = [c for c in case if c.tag == "skipped"]
        if bad:
            kind = "failed" if bad[0].tag == "failure" else "errors"
            res[kind] += 1
            msg = (bad[0].get("message") or (bad[0].text or "")).strip().splitlines()
            res["failures"].append((kind, name, msg[0][:300] if msg else ""))
        elif skip:
            res["skipped"] += 1
            reason = (skip[0].get("message") or "").strip()[:200]
            res["skip_reasons"][reason] = res["skip_reasons"].get(reason, 0) + 1
        else:
            res["passed"] += 1
    return res


def write_test_summary(path: Path, s: dict, rc: int, seconds: float, timed_out: bool, command: str,
                       device: str) -> list[str]:
    lines = ["# pytest -m gpu: summary", "",
             f"- command: `{command}`",
             f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             f"- wall time: {seconds:.0f} s" + (" (stopped at its time limit)" if timed_out else ""),
             f"- device: {device}",
             f"- pytest exit status {rc}; passed {s['passed']}, failed {s['failed']}, errors {s['errors']}, "
             f"skipped {s['skipped']}", ""]
    if s.get("unreadable"):
        lines += [f"JUnit XML unreadable: {s['unreadable']}", ""]
    if s["failures"]:
        lines += ["| outcome | test | message (first line) |", "|---|---|---|"]
        lines += [f"| {k} | `{n}` | {m.replace('|', '/')} |" for k, n, m in s["failures"]]
        lines.append("")
    if s["skip_reasons"]:
        lines += ["Skipped, by reason:", ""]
        lines += [f"- {n} × {r or '(no reason)'}" for r, n in sorted(s["skip_reasons"].items(), key=lambda kv: -kv[1])]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return lines


VERSIONS = r'''
import importlib, importlib.metadata, platform, sys
print(f"python {platform.python_version()} ({sys.executable})")
try:
    import torch
    print(f"torch {torch.__version__}; CUDA (build) {torch.version.cuda}; cuDNN {torch.backends.cudnn.version()}")
    ok = torch.cuda.is_available()
    print(f"CUDA available: {ok}; devices: {torch.cuda.device_count() if ok else 0}")
    if ok:
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            print(f"cuda:{i} {p.name}, compute capability {p.major}.{p.minor}, {p.total_memory / 2**30:.1f} GiB, "
                  f"{p.multi_processor_count} multiprocessors; bf16 supported: {torch.cuda.is_bf16_supported()}")
        print("CUDA_OK=1")
except Exception as exc:
    print(f"torch: {type(exc).__name__}: {exc}")
import spmlkit
print(f"spmlkit {spmlkit.__version__} from {spmlkit.__file__}")
missing = []
for mod, dist in sorted(NEEDED.items()) + sorted(OPTIONAL.items()):
    try:
        importlib.import_module(mod)
        try:
            v = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            v = "?"
        print(f"  {dist} {v}")
    except Exception as exc:
        print(f"  {dist}: MISSING ({type(exc).__name__}: {str(exc)[:120]})")
        if mod in NEEDED:
            missing.append(dist)
print("MISSING=" + ",".join(missing))
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true",
                    help="on a CPU: every step, the GPU parts skipped, the GPU machine's package set simulated")
    ap.add_argument("--out", help="output folder (default $OUT, else a new temporary folder)")
    ap.add_argument("--budget-s", type=float, default=440.0,
                    help="seconds for the whole check (default 440: fits timeout_s=480)")
    ap.add_argument("--steps", default="install,versions,tests,speed",
                    help="a rerun of some steps only, e.g. 'install,speed' (install is needed by the others)")
    ap.add_argument("--test-timeout", type=int, default=90, help="seconds per test (default 90)")
    ap.add_argument("--test-workers", type=int, default=4,
                    help="pytest-xdist processes for the gpu tests on a GPU, when pytest-xdist is there (default 4)")
    ap.add_argument("--pytest-args", default="", help="more pytest arguments (e.g. '-k resume')")
    ap.add_argument("--speed-args", default=None,
                    help=f"gpu_speed.py's arguments instead of the chosen ones ({' '.join(SPEED_ARGS)})")
    args = ap.parse_args(argv)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    bad = sorted(set(steps) - {"install", "versions", "tests", "speed"})
    if bad:
        ap.error(f"--steps: unknown {', '.join(bad)}")
    t_start = time.perf_counter()
    deadline = t_start + args.budget_s
    out = output_folder(args.out)
    log = Log(out / "first_run.log")
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="spml-first-run-work-"))
    env = dict(os.environ, PYTHONUNBUFFERED="1", SPML_NO_PROGRESS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    paths: list[str] = []
    status: list[tuple[str, str, float]] = []  # (step, outcome, seconds)
    failures: list[str] = []
    log(f"# spmlkit first GPU run{' (DRY RUN on the CPU)' if args.dry_run else ''}")
    log(f"repository {REPO}; output {out}; budget {args.budget_s:.0f} s; steps {', '.join(steps)}")
    log(f"started {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")

    if args.dry_run and MACHINE_PACKAGES.exists():
        sim = work / "simulate-gpu-machine"
        sim.mkdir()
        (sim / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        paths.append(str(sim))
        env["SPML_GPU_MACHINE_PACKAGES"] = str(MACHINE_PACKAGES)
        probe = subprocess.run([py, "-c", "pass"], env=dict(env, PYTHONPATH=str(sim), SPML_GPU_LIST_BLOCKED="1"),
                               capture_output=True, text=True)
        log("dry run: the GPU machine's package set is simulated; " + (probe.stdout.strip() or probe.stderr.strip()))

    def left(reserve: float = 0.0) -> float:
        return deadline - time.perf_counter() - reserve

    def set_paths():
        env["PYTHONPATH"] = os.pathsep.join(paths)

    # ------------------------------------------------------------------ 1. install
    site = work / "site"
    if "install" in steps:
        t0 = time.perf_counter()
        outcome = "ok"
        wheels = sorted(WHEELS.glob("*.whl")) if WHEELS.is_dir() else []
        if wheels:
            wsite = work / "wheels-site"
            set_paths()
            rc, _, _ = run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                            "--no-cache-dir", "--upgrade", "--target", wsite, *wheels], log=log, out_file=None,
                           limit=min(120, left(200)), env=env)
            if rc != 0:
                failures.append(f"install: the carried wheels did not install (pip exit status {rc})")
                outcome = "FAILED (wheels)"
            paths.append(str(wsite))
        else:
            log("no carried wheels (.gpu-wheels/ empty or absent): the machine has every package the check needs")
        pkg = work / "pkg"  # a copy: the build writes build/ and *.egg-info, which stay out of the carried tree
        pkg.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (REPO / name).exists():
                shutil.copy2(REPO / name, pkg / name)
        shutil.copytree(REPO / "src", pkg / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        set_paths()
        rc, _, _ = run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-build-isolation",
                        "--no-compile", "--no-cache-dir", "--target", site, pkg], log=log, out_file=None,
                       limit=min(120, left(200)), env=env)
        if rc == 0:
            paths.append(str(site))
            env["PATH"] = f"{site / 'bin'}{os.pathsep}{env.get('PATH', '')}"
            log(f"spmlkit installed from the carried tree into {site}")
        else:
            paths.append(str(REPO / "src"))
            log(f"spmlkit did not build here (pip exit status {rc}): the tree's src/ is on PYTHONPATH instead")
            outcome = outcome if outcome != "ok" else "ok (src/ on PYTHONPATH)"
        status.append(("install", outcome, time.perf_counter() - t0))
    else:
        paths.append(str(REPO / "src"))
    set_paths()

    # ------------------------------------------------------------------ 2. versions
    cuda_ok = False
    device = "no GPU"
    if "versions" in steps or "tests" in steps or "speed" in steps:
        t0 = time.perf_counter()
        lines = []
        if shutil.which("nvidia-smi"):
            q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=60)
            lines.append("nvidia-smi: " + (q.stdout.strip() or q.stderr.strip()))
            full = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=60)
            lines += full.stdout.splitlines()
        else:
            lines.append("nvidia-smi: skipped (not on this machine: no NVIDIA GPU)" if args.dry_run else
                         "nvidia-smi: NOT FOUND")
        code = f"NEEDED = {NEEDED!r}\nOPTIONAL = {OPTIONAL!r}\n" + VERSIONS
        v = subprocess.run([py, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
        lines += v.stdout.splitlines() + v.stderr.splitlines()
        cuda_ok = "CUDA_OK=1" in v.stdout
        missing = next((ln.split("=", 1)[1] for ln in v.stdout.splitlines() if ln.startswith("MISSING=")), "?")
        names = [ln for ln in v.stdout.splitlines() if ln.startswith("cuda:")]
        device = names[0] if names else "no GPU (CUDA not available)"
        pl = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], env=env, capture_output=True, text=True,
                            timeout=120)
        (out / "environment.txt").write_text("\n".join(lines) + "\n\n# pip list\n" + pl.stdout, encoding="utf-8")
        for ln in lines:
            if not ln.startswith(("CUDA_OK", "MISSING=")):
                log(ln)
        outcome = "ok"
        if v.returncode != 0 or missing == "?":
            failures.append(f"versions: the check's environment does not import (exit status {v.returncode}; "
                            "environment.txt)")
            outcome = "FAILED"
        elif missing:
            failures.append(f"versions: missing on this machine: {missing} (carry them: benchmarks/gpu/prepare.py "
                            "--wheel NAME==VERSION)")
            outcome = f"FAILED (missing {missing})"
        if not cuda_ok and not args.dry_run:
            failures.append("versions: no CUDA device visible to torch (this is the GPU machine: a real failure; "
                            "on a CPU use --dry-run)")
            outcome = "FAILED (no CUDA)"
        elif not cuda_ok:
            outcome += "; GPU parts skipped (dry run: no GPU)"
        status.append(("versions", outcome, time.perf_counter() - t0))

    # ------------------------------------------------------------------ 3. tests
    if "tests" in steps:
        xml = out / "pytest-gpu.xml"
        cmd = [py, "-m", "pytest", "-m", "gpu", "tests", "-p", "no:cacheprovider", "-v", "-rfEs",
               "--continue-on-collection-errors", f"--junitxml={xml}", "--durations=15"]
        probe = subprocess.run([py, "-c", "import pytest_timeout"], env=env, capture_output=True)
        if probe.returncode == 0:
            cmd += [f"--timeout={args.test_timeout}"]
        else:
            log(f"pytest-timeout is not installed: per-test limit by pytest's faulthandler dump after "
                f"{args.test_timeout} s (the step's own limit stops the run)")
            cmd += ["-o", f"faulthandler_timeout={args.test_timeout}"]
        if cuda_ok and args.test_workers > 1 and subprocess.run([py, "-c", "import xdist"], env=env,
                                                                capture_output=True).returncode == 0:
            cmd += ["-n", str(args.test_workers)]
            env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 4) // args.test_workers)))
        cmd += shlex.split(args.pytest_args)
        limit = min(240.0, left(150 if "speed" in steps else 10))
        rc, sec, timed_out = run(cmd, log=log, out_file=out / "pytest-gpu.log", limit=limit, env=env)
        s = junit_summary(xml)
        shown = shlex.join(["python", "-m", "pytest", *[str(c) for c in cmd[3:]]])
        summary = write_test_summary(out / "pytest-gpu-summary.md", s, rc, sec, timed_out, shown, device)
        outcome = f"passed {s['passed']}, failed {s['failed']}, errors {s['errors']}, skipped {s['skipped']}"
        if timed_out:
            failures.append(f"tests: stopped at the step's limit of {limit:.0f} s")
            outcome += "; STOPPED at its limit"
        if s["failed"] or s["errors"] or rc not in (0, 5) or s.get("unreadable"):
            failures.append(f"tests: pytest exit status {rc}, {s['failed']} failed, {s['errors']} errors "
                            "(pytest-gpu-summary.md)")
        if not cuda_ok and s["passed"]:
            failures.append(f"tests: {s['passed']} gpu test(s) passed without a GPU (they must skip)")
        if cuda_ok and not s["passed"]:
            failures.append("tests: a GPU is there but no gpu test passed")
        status.append(("tests" + ("" if cuda_ok else " (skipped: no GPU)"), outcome, sec))
        test_summary = summary
    else:
        test_summary = []

    # ------------------------------------------------------------------ 4. speed
    speed_lines: list[str] = []
    if "speed" in steps:
        extra = shlex.split(args.speed_args) if args.speed_args is not None else SPEED_ARGS
        if cuda_ok:
            cmd = [py, "benchmarks/gpu_speed.py", "--out", out / "gpu_speed.md", *extra]
            label = "speed"
        else:
            log("GPU speed: skipped (no GPU); gpu_speed.py --smoke-cpu checks the code on the CPU instead")
            cmd = [py, "benchmarks/gpu_speed.py", "--out", out / "gpu_speed.md", *SMOKE_ARGS]
            label = "speed (skipped: no GPU; CPU smoke run)"
        rc, sec, timed_out = run(cmd, log=log, out_file=out / "gpu_speed.log", limit=left(10), env=env)
        outcome = "ok" if rc == 0 else f"FAILED (exit status {rc})"
        if timed_out:
            failures.append("speed: stopped at the step's limit (gpu_speed.md keeps the sections it finished)")
            outcome = "STOPPED at its limit"
        elif rc != 0:
            failures.append(f"speed: gpu_speed.py exit status {rc} (gpu_speed.log)")
        report = out / "gpu_speed.md"
        if report.exists() and cuda_ok:  # (the smoke run's numbers mean nothing)
            text = report.read_text(encoding="utf-8").splitlines()
            if "## Against the targets (docs/gpu.md)" in text:
                speed_lines = [ln for ln in text[text.index("## Against the targets (docs/gpu.md)") + 1:] if ln]
        status.append((label, outcome, sec))

    shutil.rmtree(work, ignore_errors=True)
    # ------------------------------------------------------------------ summary
    wall = time.perf_counter() - t_start
    log("")
    log("=" * 78)
    log(f"SUMMARY{' (dry run on the CPU)' if args.dry_run else ''}: {device}; wall time {wall:.0f} s "
        f"(budget {args.budget_s:.0f} s)")
    for step, outcome, sec in status:
        log(f"  {step:<42} {sec:6.0f} s  {outcome}")
    for ln in test_summary[6:]:
        if ln:
            log("  " + ln)
    for ln in speed_lines:
        log("  " + ln)
    log("files: " + ", ".join(f"{p.name} ({p.stat().st_size:,} B)" for p in sorted(out.iterdir())))
    if failures:
        log("FAILED: " + "; ".join(failures))
    else:
        log("OK" + (" (dry run: every GPU step skipped cleanly; the rest ran)" if args.dry_run else ""))
    log.fh.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
