#!/usr/bin/env python3
"""Prepare the first GPU run here (issue 38; docs/gpu.md): the wheels it must carry, the
size of what travels, and the exact call of the device tool to make.

    python3 benchmarks/gpu/prepare.py                 # wheels + size check + the call to make
    python3 benchmarks/gpu/prepare.py --wheel pytest-timeout==2.4.0   # carry one more (another version there)
    python3 benchmarks/gpu/prepare.py --check-only    # size check and the call; downloads nothing

What it does, in the repository it is run in (run it in the checkout the device tool
sends: the one the GPU session was started in):

1. **Wheels.**  The packages the check imports (``first_run.py``'s ``NEEDED`` and
   ``OPTIONAL``) that the GPU machine does not have (``machine_packages.txt``, the
   machine's documented package list), plus every ``--wheel``, are downloaded with
   ``pip download --no-deps --only-binary=:all:`` for the machine's Python (CPython 3.12,
   manylinux x86-64) into ``.gpu-wheels/`` (git-ignored), at the version installed here
   unless ``--wheel`` pins one.  Wheels there that are no longer needed are removed.
   spmlkit's own dependencies the machine lacks (``river``: the Yeast data file) are not
   needed by the check: ``first_run.py --dry-run`` hides them and still passes.
2. **Size.**  What the device tool carries: tracked files, untracked files that git does
   not ignore, a ``shared/`` folder in the checkout, and the carried ``.gpu-wheels/``,
   measured file by file, against the 64 MiB limit.  Over the limit: exit status 1 and
   the largest folders.
3. **The call.**  Prints the ``run`` call (command, ``carry``, ``timeout_s``).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LIMIT = 64 * 2**20  # the device tool's limit on what travels
TIMEOUT_S = 480  # first_run.py's budget is 440 s
COMMAND = "python3 benchmarks/gpu/first_run.py"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
NOT_NEEDED = {"river": "spmlkit reads only the Yeast data file river ships (spml demo, the yeast fixture); no gpu "
                       "test and no gpu_speed.py section does"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def machine_packages(path: Path = HERE / "machine_packages.txt") -> set[str]:
    return {norm(ln.strip()) for ln in path.read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")}


def first_run_module():
    spec = importlib.util.spec_from_file_location("first_run", HERE / "first_run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def project_dependencies() -> list[str]:
    """The names in pyproject.toml's ``[project] dependencies``."""
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return [re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0] for d in deps]


def wanted_wheels(extra: list[str], have: set[str]) -> list[str]:
    """``NAME==VERSION`` of every wheel to carry."""
    fr = first_run_module()
    pins = {}
    for dist in [*fr.NEEDED.values(), *fr.OPTIONAL.values()]:
        if norm(dist) not in have:
            try:
                pins[norm(dist)] = f"{dist}=={importlib.metadata.version(dist)}"
            except importlib.metadata.PackageNotFoundError:
                raise SystemExit(f"prepare.py: error: the check needs {dist}, which neither the GPU machine nor "
                                 f"this environment has: pip install {dist} here, or give --wheel {dist}==VERSION")
    for w in extra:
        if "==" not in w:
            raise SystemExit(f"prepare.py: error: --wheel {w}: expected NAME==VERSION")
        pins[norm(w.split("==")[0])] = w
    return sorted(pins.values())


def download(pins: list[str], folder: Path) -> list[Path]:
    folder.mkdir(exist_ok=True)
    if pins:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
               "--implementation", "cp", "-d", str(folder)]
        for p in PLATFORMS:
            cmd += ["--platform", p]
        print("$ " + " ".join(cmd + pins), flush=True)
        subprocess.run(cmd + pins, check=True)
    keep = {norm(p.split("==")[0]) for p in pins}
    wheels = []
    for w in sorted(folder.glob("*.whl")):
        if norm(w.name.split("-")[0]) in keep:
            wheels.append(w)
        else:
            print(f"removed {w.name} (no longer needed)")
            w.unlink()
    return wheels


def _git_files(*args: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", *args], cwd=REPO, capture_output=True, check=True).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _tree_bytes(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + [d for d in dirs if (Path(root) / d).is_symlink()]:
            total += (Path(root) / name).lstat().st_size
    return total


def carried_size(carry: list[str]) -> dict:
    """Bytes of what the device tool sends from this checkout, by part, and by top folder."""
    parts, by_top = Counter(), Counter()
    tracked, untracked = _git_files("--cached"), _git_files("--others", "--exclude-standard")
    for kind, files in (("tracked", tracked), ("untracked, not ignored", untracked)):
        for f in files:
            p = REPO / f
            if not os.path.lexists(p):  # deleted in the working tree: not sent
                continue
            n = p.lstat().st_size
            parts[kind] += n
            top = f.split("/")
            by_top["/".join(top[:2]) if len(top) > 2 and top[0] in ("benchmarks", "src") else top[0]] += n
    if (REPO / "shared").is_dir() and not any(f.startswith("shared/") for f in tracked + untracked):
        parts["shared/ (travels too)"] += _tree_bytes(REPO / "shared")
    for c in carry:
        parts[f"carried: {c}/"] += _tree_bytes(REPO / c)
    return {"parts": parts, "by_top": by_top, "total": sum(parts.values()), "untracked": untracked}


def mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", action="append", default=[], metavar="NAME==VERSION",
                    help="carry this wheel too (e.g. a package the machine has at an unsuitable version)")
    ap.add_argument("--check-only", action="store_true", help="download nothing; measure and print the call")
    ap.add_argument("--wheels-dir", default=".gpu-wheels", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    have = machine_packages()
    folder = REPO / args.wheels_dir
    pins = wanted_wheels(args.wheel, have)
    print("# wheels for the GPU machine")
    for dep in project_dependencies():
        if norm(dep) not in have and norm(dep) not in {norm(p.split("==")[0]) for p in pins}:
            why = NOT_NEEDED.get(norm(dep), "the check does not import it")
            print(f"- {dep}: not on the GPU machine, not carried: {why}")
    if args.check_only:
        wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    else:
        wheels = download(pins, folder)
    if wheels:
        for w in wheels:
            print(f"- {w.name}: {mib(w.stat().st_size)}")
    else:
        fr = first_run_module()
        print("- none: the GPU machine has every package the check imports ("
              + ", ".join(sorted([*fr.NEEDED.values(), *fr.OPTIONAL.values()])) + ")")
    carry = [args.wheels_dir] if wheels else []
    size = carried_size(carry)
    print("\n# what the device tool carries from this checkout")
    print(f"checkout: {REPO} (the device tool sends the checkout its session was started in: run this there)")
    for part, n in size["parts"].items():
        print(f"- {part}: {mib(n)}")
    if size["untracked"]:
        print(f"  untracked files that travel ({len(size['untracked'])}): "
              + ", ".join(size["untracked"][:8]) + (" ..." if len(size["untracked"]) > 8 else "")
              + "  (commit or ignore them)")
    total = size["total"]
    print(f"total: {mib(total)} of {mib(LIMIT)} ({total / LIMIT:.0%}); room left {mib(LIMIT - total)}")
    print("largest folders: " + ", ".join(f"{k} {mib(v)}" for k, v in size["by_top"].most_common(6)))
    if total > LIMIT:
        print(f"prepare.py: error: {mib(total)} would travel, over the device tool's {mib(LIMIT)}: store large "
              "records compressed, or ignore what the check does not need", file=sys.stderr)
        return 1
    print("\n# the call (device tool `run`)")
    call = {"command": COMMAND, "timeout_s": TIMEOUT_S}
    if carry:
        call["carry"] = carry
    import json

    print(json.dumps(call))
    print("then: read $OUT's files (first_run.log, pytest-gpu-summary.md, gpu_speed.md, ...); a rerun of some "
          "steps: add e.g. --steps install,speed to the command")
    return 0


if __name__ == "__main__":
    sys.exit(main())
