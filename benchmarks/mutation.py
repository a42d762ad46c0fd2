"""Mutation testing of the modules where a silent bug corrupts results or files (issue 39).

A mutant is the source with one small change (``<`` for ``<=``, ``+`` for ``-``, a
constant changed, an argument dropped, ...); the covering tests *kill* it when one of
them fails.  A surviving mutant is a bug the tests would let through, or an equivalent
program (a change that cannot alter any result).  The score of a module is the share of
its mutants the covering tests kill.

Tool: mutmut 3 (``pip install -e ".[mutation]"``).  It imports the code and the tests
once and forks a child per mutant (mutation switching: no re-import of torch per
mutant, the cost that makes cosmic-ray's file-rewriting take hours here), and runs only
the covering tests that execute the mutated function.  mutmut leaves decorated
functions unmutated (a decorator runs when the function is defined, so its trampoline
cannot sit under an arbitrary one); every loss is registered by a decorator, so this
script runs mutmut on a copy of the source in which ``@register_loss(...)`` and the
other registration decorators are written as the equivalent assignment after the
function (``f = register_loss(...)(f)``).  ``@property``, ``@staticmethod``,
``@classmethod`` and ``functools.lru_cache`` stay (mutmut handles the first three; a
cache would keep the original's values), and are listed as not mutated.

Each module is mutated against its covering test files only (``MODULES``), so the time
is bounded, with a time budget per module (mutants not reached in it are reported as
not checked).  Runs one module at a time, in a temporary copy of the repository; the
working tree is never written except ``benchmarks/results/mutation.{md,json}``.  A
re-run of one module replaces that module's section and keeps the others, each with the
commit, date and wall time it was measured at::

    python benchmarks/mutation.py --module losses/ --module data/formats/presence_only.py
    python benchmarks/mutation.py --module metrics.py --budget 1800
    python benchmarks/mutation.py --all
    python benchmarks/mutation.py --render      # re-write mutation.md from mutation.json
    python benchmarks/mutation.py --module io.py --plant   # which survivors the tests kill now
    python benchmarks/mutation.py --module ownership/ --plant --shard 1/3   # (and 2/3, 3/3 beside it)

``mutation.md`` marks a row **stale** when its module changed after the commit it was
measured at (``git log``, or uncommitted changes), and its header lists the stale rows:
re-measure those.  The hand-kept lists (the reasons survivors are equivalent, the
equivalent survivors, the survivors killed since) are data, in
``benchmarks/mutation_survivors.toml``.

``--plant`` plants each survivor of a module's last measurement that is not listed as
equivalent, one at a time, in a temporary copy of the repository, runs the covering tests
and records the first test that fails ("killed since" the measurement, with the commit and
date); a re-measurement of the module replaces them.  For a package the test file that
mirrors the mutated module (``tests/ownership/test_files.py`` for ``ownership/files.py``) runs
first, the other covering tests only when it passes; ``--shard K/N`` plants every N-th
survivor (N processes side by side, their findings merged).

Heavy (minutes to an hour per module on 2 cores): not part of CI.  Run it under
``flock /tmp/spml-heavy.lock`` on a shared machine.

Surviving mutants are listed with their diff.  A survivor known to be equivalent is
listed with the reason, from ``benchmarks/mutation_survivors.toml`` (matched by module and by the
line before and after the change); every other survivor is marked as needing a test.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
TARGET = 0.85

LOSS_TESTS = ["tests/losses", "tests/contracts/test_losses.py", "tests/contracts/test_loss_references.py"]
#: module (relative to src/spmlkit) -> its covering test files (relative to the repository)
MODULES: dict[str, list[str]] = {
    "losses/": LOSS_TESTS,
    "metrics.py": ["tests/test_metrics.py", "tests/twins/test_metrics_twins.py"],
    # the streamed rank counts, moved out of metrics.py (issue 48)
    "rank_counts.py": ["tests/test_rank_counts.py", "tests/twins/test_metrics_twins.py", "tests/test_metrics.py"],
    "labels.py": ["tests/test_labels.py", "tests/twins/test_labels_twins.py"],
    "io.py": ["tests/test_io.py"],
    # every file write goes through it (issue 33); the file-system fuzzer (tests/safety/test_fs_fuzzer.py)
    # drives whole commands and would cost ~20 s a mutant: left out, its cases are unit tests here
    # (a package since issue 48, measured as a whole like losses/; formerly the module ownership.py)
    "ownership/": ["tests/ownership"],
    # its helpers pinned on stubs first (a planted mutant they kill fails in seconds), then the end-to-end tests
    "training/recipe.py": ["tests/training/test_recipe_survivors.py", "tests/training/test_recipe.py"],
    "data/formats/presence_only.py": ["tests/data/formats/test_presence_only.py"],
    # the bundle's readers and writer; test_memory reads bundles into memory (selection observations)
    "data/bundle.py": ["tests/data/test_bundle.py", "tests/data/test_memory.py"],
    # the bundle's file checks, moved out of bundle.py (issue 48)
    "data/bundle_checks.py": ["tests/data/test_bundle_checks.py", "tests/data/test_bundle.py"],
    # the fast paths of the sparse labels, streamed prediction and evaluation, with their twins (issue 44)
    "sparse_labels.py": ["tests/test_sparse_labels.py", "tests/twins/test_labels_twins.py"],
    # with every test file that imports from it: reading features and images, the logit rules, the saved model
    # (tests/cli/test_predict.py drives whole ``spml predict`` runs, ~10 s a mutant on a loaded machine: left out,
    # its cases are unit tests in test_inference.py)
    "practitioner/inference.py": ["tests/practitioner/test_inference.py", "tests/twins/test_practitioner_twins.py",
                                  "tests/features/test_extract.py", "tests/practitioner/test_logit_sets.py",
                                  "tests/practitioner/test_saved.py"],
    "practitioner/evaluation.py": ["tests/practitioner/test_evaluation.py", "tests/twins/test_practitioner_twins.py"],
    "practitioner/explain.py": ["tests/practitioner/test_explain.py"],
    # with the MESS and binary maps beside the suitability map (``spml predict --rasters --mess --binary``)
    "practitioner/maps.py": ["tests/practitioner/test_maps.py", "tests/practitioner/test_sdm_maps.py",
                             "tests/practitioner/test_maps_pinned.py"],
    "training/callbacks.py": ["tests/training/test_callbacks.py"],
    "training/ensemble.py": ["tests/training/test_ensemble.py"],
    # with ``spml clean``, which calls it (tests/cli/test_prepare.py reads the README beside the tests, which
    # mutmut's copy of them does not have)
    "data/formats/occurrences.py": ["tests/data/formats/test_occurrences.py", "tests/cli/test_clean.py"],
}

#: keys a module was measured under before it moved (a module that became a package): a measurement
#: stored under the old key is read as the new key's, so the report shows one row per module
FORMER_KEYS = {"ownership.py": "ownership/"}

#: decorators left on their function (mutmut then leaves it unmutated, or handles it itself)
KEEP_DECORATORS = {"staticmethod", "classmethod", "property", "cached_property", "lru_cache", "cache",
                   "overload", "abstractmethod"}

#: the hand-kept lists (reasons, equivalent survivors, survivors killed since), a data file
SURVIVORS = REPO / "benchmarks" / "mutation_survivors.toml"


def load_survivors(path: Path = SURVIVORS) -> tuple[dict, list[tuple], list[tuple]]:
    """``(reasons, equivalent, killed_since)`` from the data file (its header says what each
    holds): reasons by name; equivalent survivors as ``(module, line before, line after,
    reason[, context...])``; survivors killed since as ``(module, line before, line after,
    test)``."""
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    reasons = dict(data.get("reasons", {}))
    equivalent = [(e["module"], e["before"], e["after"], reasons[e["reason"]] if "reason" in e else e["why"],
                   *e.get("context", [])) for e in data.get("equivalent", [])]
    killed = [(e["module"], e["before"], e["after"], e["test"]) for e in data.get("killed_since", [])]
    return reasons, equivalent, killed


_WHY, EQUIVALENT, KILLED_SINCE = load_survivors()



def killed_since(key: str, diff: str, mutant: str | None = None, planted: dict | None = None) -> str | None:
    """The test added after the measurement that kills this survivor: found by ``--plant``
    (``planted``: the module's ``killed_since`` record) or listed in :data:`KILLED_SINCE`
    (an empty ``after`` matches any change of the line)."""
    if planted and mutant in planted:
        return planted[mutant]["test"]
    minus, plus = changed_lines(diff)
    for mod, before, after, test in KILLED_SINCE:
        if (mod == key or key.startswith(mod)) and before.strip() in minus and (not after or after.strip() in plus):
            return test
    return None


# ----------------------------------------------------------------------------- helpers
def _package_of(key: str) -> str | None:
    """The package key (``losses/``, ``ownership/``) a file key such as ``losses/focal.py`` is in."""
    return next((k for k in MODULES if k.endswith("/") and key.startswith(k) and key.endswith(".py")), None)


def module_key(arg: str) -> str:
    arg = arg.strip().removeprefix("src/spmlkit/")
    arg = FORMER_KEYS.get(arg, arg)
    if arg in MODULES or _package_of(arg):
        return arg  # one file of a package: the package's tests
    packages = ", ".join(f"{k}<file>.py" for k in MODULES if k.endswith("/"))
    raise SystemExit(f"mutation.py: unknown module {arg!r}; known: {', '.join(MODULES)} (or {packages})")


def tests_for(key: str) -> list[str]:
    return [t for t in MODULES.get(key, MODULES.get(_package_of(key) or "", [])) if (REPO / t).exists()]


def migrate(modules: dict) -> dict:
    """The stored measurements with each former key (:data:`FORMER_KEYS`) read as its new key;
    a measurement under the new key replaces the one under the old."""
    out = dict(modules)
    for old, new in FORMER_KEYS.items():
        if old in out:
            m = out.pop(old)
            out.setdefault(new, {**m, "module": new})
    return out


def mutate_pattern(key: str) -> str:
    return f"src/spmlkit/{key}*" if key.endswith("/") else f"src/spmlkit/{key}"


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> str:
    import torch

    try:
        load = f"; load average at the start {os.getloadavg()[0]:.1f}"
    except OSError:
        load = ""
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
            f"torch {torch.__version__}{load}")


def device() -> str:
    import torch

    return "CPU" + ("" if not torch.cuda.is_available() else " (a CUDA device is present; tests run on the CPU)")


def undecorate(source: str) -> tuple[str, list[str]]:
    """``@d(...) def f`` at module level -> ``def f`` followed by ``f = d(...)(f)`` (the same
    program), for every decorator not in :data:`KEEP_DECORATORS`; returns the new source
    and the names of the functions that keep a decorator (not mutated by mutmut)."""
    import libcst as cst

    def final_name(expr) -> str:
        while isinstance(expr, cst.Call):
            expr = expr.func
        if isinstance(expr, cst.Attribute):
            return expr.attr.value
        return getattr(expr, "value", "")

    kept: list[str] = []
    module = cst.parse_module(source)
    body = []
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.decorators:
            names = [final_name(d.decorator) for d in stmt.decorators]
            if any(n in KEEP_DECORATORS for n in names):
                kept.append(stmt.name.value)
                body.append(stmt)
                continue
            expr: cst.BaseExpression = cst.Name(stmt.name.value)
            for d in reversed(stmt.decorators):
                expr = cst.Call(func=d.decorator, args=[cst.Arg(expr)])
            body.append(stmt.with_changes(decorators=[]))
            body.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(stmt.name.value))], expr)]))
        else:
            if isinstance(stmt, cst.ClassDef):
                for inner in stmt.body.body:
                    if isinstance(inner, cst.FunctionDef) and inner.decorators:
                        names = [final_name(d.decorator) for d in inner.decorators]
                        if not (len(names) == 1 and names[0] in ("staticmethod", "classmethod")):
                            kept.append(f"{stmt.name.value}.{inner.name.value}")
            body.append(stmt)
    return module.with_changes(body=body).code, kept


def prepare_work(key: str, work: Path, max_children: int) -> list[str]:
    """A copy of the repository in ``work`` (src with decorators unrolled in the mutated
    files, tests, pyproject with mutmut's configuration); returns the kept-decorator list."""
    repo = work / "repo"
    shutil.copytree(REPO / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(REPO / "tests", repo / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, repo / name)
    if (REPO / "docs").is_dir():
        shutil.copytree(REPO / "docs", repo / "docs")
    kept: list[str] = []
    pattern = mutate_pattern(key)
    import fnmatch

    for f in sorted((repo / "src").rglob("*.py")):
        rel = f.relative_to(repo).as_posix()
        if fnmatch.fnmatch(rel, pattern) and f.name != "__init__.py":
            text, k = undecorate(f.read_text(encoding="utf-8"))
            f.write_text(text, encoding="utf-8")
            kept += [f"{rel}: {n}" for n in k]
    py = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    py = re.sub(r"(?ms)^\[tool\.mutmut\].*?(?=^\[|\Z)", "", py)
    cfg = {
        "source_paths": ["src"],
        "only_mutate": [pattern],
        "do_not_mutate": ["src/spmlkit/*/__init__.py", "src/spmlkit/__init__.py"],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        "pytest_add_cli_args_test_selection": tests_for(key),
        "use_git_change_detection": False,
        "timeout_multiplier": 10.0,
        "timeout_constant": 5.0,
    }
    lines = ["", "[tool.mutmut]"] + [f"{k} = {json.dumps(v)}" for k, v in cfg.items()]
    (repo / "pyproject.toml").write_text(py.rstrip() + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return kept


def run_mutmut(repo: Path, budget: float, max_children: int, log) -> tuple[float, bool]:
    """``mutmut run`` in ``repo``; stopped (SIGINT, then SIGKILL) after ``budget`` seconds."""
    env = {**os.environ, "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    shared = REPO.parent / "shared" / "data"
    if shared.exists():
        env.setdefault("SPMLKIT_SHARED_DATA", str(shared.resolve()))
    env.pop("PYTHONPATH", None)
    exe = Path(sys.executable).with_name("mutmut")
    cmd = [str(exe) if exe.exists() else "mutmut", "run", "--max-children", str(max_children)]
    t0 = time.time()
    with open(repo / "mutmut.log", "w") as out:
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        stopped = False
        while proc.poll() is None:
            if time.time() - t0 > budget:
                stopped = True
                log(f"  time budget {budget:.0f} s spent: stopping mutmut")
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                break
            time.sleep(2)
    return time.time() - t0, stopped


STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
          36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", None: "not checked",
          2: "not checked", 37: "caught by type check"}


def collect(repo: Path) -> dict:
    """Every mutant's status from mutmut's ``.meta`` files: {file: {mutant: status}}."""
    out: dict[str, dict[str, str]] = {}
    for meta in sorted((repo / "mutants").rglob("*.py.meta")):
        rel = meta.relative_to(repo / "mutants").as_posix()[: -len(".meta")]
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key", {})
        if codes:
            out[rel] = {k: STATUS.get(v, "suspicious") for k, v in sorted(codes.items())}
    return out


def _functions(path: Path) -> dict:
    """The source of every function (also methods, as ``Class.method``) in a file of mutmut's
    ``mutants/`` tree, by name."""
    import ast

    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in out:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            out[node.name] = "\n".join(lines[start - 1:node.end_lineno])
    return out


_FUNCS: dict = {}


def show(repo: Path, name: str, rel: str | None = None) -> str:
    """The mutant's diff against the original function (what ``mutmut show`` prints, read
    from mutmut's generated source without starting mutmut once per mutant)."""
    import difflib

    if rel is not None:
        path = repo / "mutants" / rel
        if str(path) not in _FUNCS:
            _FUNCS[str(path)] = _functions(path) if path.exists() else {}
        funcs = _FUNCS[str(path)]
        short = name.rsplit(".", 1)[-1]  # x_func__mutmut_3 or xǁClassǁmethod__mutmut_3
        orig = funcs.get(short.rsplit("__mutmut_", 1)[0] + "__mutmut_orig")
        mutant = funcs.get(short)
        if orig and mutant:
            a = orig.replace(short.rsplit("__mutmut_", 1)[0] + "__mutmut_orig", "FUNC").splitlines()
            b = mutant.replace(short, "FUNC").splitlines()
            base = short.rsplit("__mutmut_", 1)[0]
            plain = (base[2:] if base.startswith("x_") else base[1:]).replace("ǁ", ".").strip(".")
            diff = [ln for ln in difflib.unified_diff(a, b, lineterm="", n=3)][2:]
            return "\n".join([f"# {name}"] + [ln.replace("FUNC", plain) for ln in diff])
    exe = Path(sys.executable).with_name("mutmut")
    r = subprocess.run([str(exe) if exe.exists() else "mutmut", "show", name], cwd=repo, capture_output=True,
                       text=True, timeout=120)
    text = r.stdout.strip()
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith(("---", "+++")) or "@@" in ln)


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    minus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return minus, plus


def reason_for(key: str, diff: str) -> str | None:
    """The reason a survivor is equivalent (None: it needs a test).  An entry may add a line
    of context that must appear just before the change (for a line written twice)."""
    minus, plus = changed_lines(diff)
    lines = [ln[1:].strip() for ln in diff.splitlines()]
    for mod, before, after, why, *context in EQUIVALENT:
        if (mod == key or key.startswith(mod)) and before.strip() in minus and after.strip() in plus:
            # the line just before the removed one (not before a context line of the same text)
            at = next((i for i, ln in enumerate(diff.splitlines()) if ln.startswith("-") and not ln.startswith("---")
                       and ln[1:].strip() == before.strip()), 0)
            if context and context[0] not in lines[max(0, at - 1):at]:
                continue
            return why
    return _generic_reason(minus, plus)


_OS_FLAG = re.compile(r'getattr\(os, "(O_[A-Z]+)",[^)]*\)')


def _generic_reason(minus: list[str], plus: list[str]) -> str | None:
    """Equivalents recognised by their form, in any module: only the default of a
    ``getattr(os, "O_FLAG", default)`` changed, or only the case of a codec name."""
    if len(minus) != 1 or len(plus) != 1 or minus[0] == plus[0]:
        return None
    a, b = minus[0], plus[0]
    if _OS_FLAG.sub(r'getattr(os, "\1")', a) == _OS_FLAG.sub(r'getattr(os, "\1")', b):
        return _WHY['FLAGDEFAULT']
    if any(a.replace(f'"{c}"', f'"{c.upper()}"') == b for c in ("utf-8", "ascii", "utf-8-sig")):
        return _WHY['CODEC']
    if re.sub(r"(\w)=False([,)])", r"\1=None\2", a) == b or re.sub(r"topdown=False", "topdown=None", a) == b:
        return _WHY['FALSYKW']
    if a.replace('.split("/")', '.split("XX/XX")') == b:
        return _WHY['SPLITSLASH']
    if "owns(" in a and any(a.replace(f'"{t}")', f'"XX{t}XX")') == b for t in ("f", "d", "o", "fdo")):
        return _WHY['TYPELETTER']
    if "os.O_CREAT | os.O_EXCL" in a and "O_NOFOLLOW" in a:
        for v in ('getattr(None, "O_NOFOLLOW", 0)', 'getattr(os, "XXO_NOFOLLOWXX", 0)', 'getattr(os, "o_nofollow", 0)'):
            if b.replace(v, 'getattr(os, "O_NOFOLLOW", 0)') == a:
                return _WHY['EXCL']
    return None


def score(counts: dict) -> float | None:
    """Killed (timeouts count as killed: the tests did not pass) over every mutant that was
    checked; mutants no covering test executes ("no tests") count as survivors."""
    detected = counts.get("killed", 0) + counts.get("timeout", 0)
    checked = detected + counts.get("survived", 0) + counts.get("no tests", 0) + counts.get("suspicious", 0)
    return detected / checked if checked else None


def measure(key: str, budget: float, max_children: int, keep: bool, log, from_work: Path | None = None) -> dict:
    work = from_work or Path(tempfile.mkdtemp(prefix="spml-mutation-"))
    commit = git("rev-parse", "--short", "HEAD")  # what is copied and measured (HEAD may move during the run)
    dirty = bool(git("status", "--porcelain", "--", "src", "tests"))
    try:
        if from_work is None:
            kept = prepare_work(key, work, max_children)
            log(f"{key}: mutating {mutate_pattern(key)} against {' '.join(tests_for(key))} (work folder {work})")
            wall, stopped = run_mutmut(work / "repo", budget, max_children, log)
        else:  # a run whose mutmut finished but whose report was not written: its results, its wall time
            kept = []
            metas = list((work / "repo" / "mutants").rglob("*.py.meta"))
            wall = max(m.stat().st_mtime for m in metas) - (work / "repo" / "pyproject.toml").stat().st_mtime
            stopped = False
            log(f"{key}: reading mutmut's results in {work}")
        statuses = collect(work / "repo")
        tail = (work / "repo" / "mutmut.log").read_text(errors="replace")[-3000:]
        files = {}
        survivors = []
        for rel, st in statuses.items():
            c: dict[str, int] = {}
            for s in st.values():
                c[s] = c.get(s, 0) + 1
            files[rel.removeprefix("src/")] = c
            for name, s in st.items():
                if s in ("survived", "no tests", "suspicious"):
                    diff = show(work / "repo", name, rel)
                    survivors.append({"file": rel.removeprefix("src/"), "mutant": name, "status": s, "diff": diff,
                                      "reason": reason_for(key, diff)})
        total: dict[str, int] = {}
        for c in files.values():
            for s, n in c.items():
                total[s] = total.get(s, 0) + n
        if not statuses:
            log(f"  no mutant results; mutmut's log ends with:\n{tail}")
        return {"module": key, "tests": tests_for(key), "commit": commit, "dirty": dirty,
                "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "wall_s": round(wall, 1), "budget_s": budget, "stopped_by_budget": stopped,
                "machine": machine(), "device": device(), "max_children": max_children,
                "counts": total, "files": files, "score": score(total), "survivors": survivors,
                "not_mutated": kept, "log_tail": tail if not statuses else ""}
    finally:
        if keep or from_work is not None:
            log(f"  work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------------- planting
def _function_span(source: str, name: str) -> tuple[int, int] | None:
    """Lines (1-based, inclusive) of function ``name`` (``Class.method`` for a method)."""
    import ast

    parts = name.split(".")
    for node in ast.walk(ast.parse(source)):
        if len(parts) == 2 and isinstance(node, ast.ClassDef) and node.name == parts[0]:
            for f in node.body:
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == parts[1]:
                    return f.lineno, f.end_lineno
        if len(parts) == 1 and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == parts[0]:
            return node.lineno, node.end_lineno
    return None


def plant_source(source: str, mutant: str, diff: str) -> str | None:
    """``source`` with the survivor's change applied inside its function (the lines its
    diff removes replaced by the lines it adds), or None when they are not found."""
    base = mutant.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]  # x_func or xǁClassǁmethod
    name = (base[2:] if base.startswith("x_") else base[1:]).replace("ǁ", ".").strip(".")
    minus = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    span = _function_span(source, name)
    if span is None or not minus:
        return None
    unname = re.compile(r"^def [\w.]+\(")  # mutmut shows the def line with the plain (dotted) name
    want = [unname.sub("def (", x.strip()) for x in minus]
    lines = source.splitlines(keepends=True)
    # where the diff says the change is (its hunk's first line counts from the def line, then the
    # context lines before the change): tried first, so a line written twice is changed where mutated
    hunk = re.search(r"^@@ -(\d+)", diff, re.M)
    body = diff[hunk.end():].split("\n")[1:] if hunk else []
    lead = next((k for k, ln in enumerate(body) if ln.startswith("-")), 0)
    at = [span[0] - 1 + int(hunk.group(1)) - 1 + lead] if hunk else []
    for i in at + list(range(span[0] - 1, span[1] - len(want) + 1)):
        if 0 <= i <= len(lines) - len(want) and \
                [unname.sub("def (", lines[i + k].strip()) for k in range(len(want))] == want:
            indent = [re.match(r"\s*", lines[i + min(k, len(want) - 1)]).group(0) for k in range(len(plus))]
            new = [ind + unname.sub(f"def {name.split('.')[-1]}(", p.strip()) + "\n" for ind, p in zip(indent, plus)]
            return "".join(lines[:i] + new + lines[i + len(want):])
    return None


def _mirror_test(key: str, file: str) -> str | None:
    """The test file that mirrors a package's module (``spmlkit/ownership/files.py`` ->
    ``tests/ownership/test_files.py``) when it is among the covering tests, else None."""
    if not key.endswith("/"):
        return None
    mirror = f"tests/{key}test_{Path(file).stem}.py"
    covered = any(mirror == t or mirror.startswith(t.rstrip("/") + "/") for t in tests_for(key))
    return mirror if covered and (REPO / mirror).is_file() else None


def plant(key: str, data: dict, log, budget: float = float("inf"), shard: tuple[int, int] = (1, 1),
          only: set | None = None) -> dict:
    """Plant each survivor of ``key``'s last measurement that is not listed as equivalent,
    one at a time, in a temporary copy of the repository (the working tree is never
    written), run the covering tests there (``-x``; for a package, the test file that
    mirrors the mutated module first, the others only when it passes) and record the first
    test that fails: ``{mutant: {"test", "commit", "date"}}`` for the killed ones.
    ``shard`` ``(k, n)``: only every n-th of those survivors, from the k-th (to run in parallel);
    ``only``: only the survivors of these names (planted again after a test was added)."""
    mod = data["modules"][key]
    commit = git("rev-parse", "--short", "HEAD")
    dirty = bool(git("status", "--porcelain", "--", "src", "tests"))
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    work = Path(tempfile.mkdtemp(prefix="spml-plant-"))
    out: dict = {}
    try:
        shutil.copytree(REPO / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shutil.copytree(REPO / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(REPO / "pyproject.toml", work / "pyproject.toml")
        env = {**os.environ, "PYTHONPATH": str(work / "src"), "PYTHONDONTWRITEBYTECODE": "1", "SPML_NO_PROGRESS": "1"}
        t0 = time.time()
        todo = [s for s in mod["survivors"] if not reason_for(key, s["diff"])
                and (only is None or s["mutant"] in only or s["mutant"].rsplit(".", 1)[-1] in only)]
        for s in todo[shard[0] - 1::shard[1]]:
            if time.time() - t0 > budget:
                log(f"  time budget {budget:.0f} s spent: the other survivors are not planted")
                break
            path = work / "src" / s["file"]
            orig = path.read_text(encoding="utf-8")
            planted = plant_source(orig, s["mutant"], s["diff"])
            if planted is None:
                log(f"  {s['mutant']}: not planted (its lines were not found: the source changed)")
                continue
            path.write_text(planted, encoding="utf-8")
            try:
                mirror = _mirror_test(key, s["file"])
                for tests in ([mirror], tests_for(key)) if mirror else (tests_for(key),):
                    r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                                       cwd=work, capture_output=True, text=True, timeout=600, env=env)
                    failed = [ln[len("FAILED "):].split(" - ")[0].split("[")[0] for ln in r.stdout.splitlines()
                              if ln.startswith(("FAILED ", "ERROR "))]
                    verdict = failed[0] if failed else ("survives" if r.returncode == 0 else f"exit {r.returncode}")
                    if verdict != "survives":
                        break
            except subprocess.TimeoutExpired:
                verdict = "timeout"
            finally:
                path.write_text(orig, encoding="utf-8")
            log(f"  {s['mutant']}: {verdict}")
            if verdict != "survives":
                out[s["mutant"]] = {"test": verdict, "commit": commit + (" + uncommitted changes" if dirty else ""),
                                    "date": date}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------- report
def fmt_score(s) -> str:
    return "–" if s is None else f"{100 * s:.1f}%"


def _load_of(m: dict) -> str:
    """The load average a module's measurement recorded at its start ('?' when none)."""
    found = re.search(r"load average at the start ([0-9.]+)", m.get("machine", ""))
    return found.group(1) if found else "?"


def stale_since(key: str, commit: str, *, worktree: bool = True) -> str | None:
    """Why a measurement of module ``key`` at ``commit`` is stale — the module's files
    changed in a commit since (``git log commit..HEAD``), or, with ``worktree``, have
    uncommitted changes — or None when it is current."""
    path = f"src/spmlkit/{key}"
    if not git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"):
        return f"measured at {commit}, a commit not in this history"
    since = [ln for ln in git("log", "--format=%h", f"{commit}..HEAD", "--", path).splitlines() if ln]
    if since:
        return f"changed in {len(since)} commit{'s' if len(since) > 1 else ''} since (latest {since[0]})"
    if worktree and git("status", "--porcelain", "--", path):
        return "uncommitted changes since"
    return None


def render(data: dict, command: str) -> str:
    mods = [data["modules"][k] for k in MODULES if k in data["modules"]]
    mods += [v for k, v in sorted(data["modules"].items()) if k not in MODULES]
    wall = sum(m["wall_s"] for m in mods)
    stale = {m["module"]: stale_since(m["module"], m["commit"]) for m in mods}
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    lines = ["# Mutation testing (issue 39)", "",
             f"- **stale rows** (the module changed since the commit it was measured at; checked at {head} when "
             "this file was written): " + (", ".join(f"{k} ({why})" for k, why in stale.items() if why) or "none"),
             f"- command: `{command}` (each module's own command and date are in its row below)",
             f"- date: {data.get('date', '')}",
             f"- machine: {re.sub(r'; load average at the start [0-9.]+', '', mods[0]['machine']) if mods else platform.platform()}"
             " (shared with other jobs: times are on a loaded machine); load average at each module's start: "
             + ", ".join(f"{m['module']} {_load_of(m)}" for m in mods),
             f"- device: {mods[0]['device'] if mods else 'CPU'}",
             f"- wall time: {wall / 60:.1f} min over the modules below (mutmut; parallel mutant runs: "
             + ", ".join(f"{m['module']} {m['max_children']}" for m in mods) + ")",
             f"- tool: mutmut {data.get('mutmut', '')}, through `benchmarks/mutation.py` (decorated functions "
             "unrolled so that registered losses are mutated; see the script's docstring)",
             f"- target: >= {TARGET:.0%} of the mutants killed in each module; score = (killed + timeout) / "
             "(killed + timeout + survived + no tests + suspicious); the last score leaves out the survivors "
             "listed as equivalent (programs no test can tell apart); \"killed since\" counts the survivors a test "
             "added after the measurement kills (`--plant`: each planted in a copy of the source and the covering "
             "tests run), and \"score now\" counts them as killed", "",
             "| module | measured on commit | date | wall time | mutants | killed | timeout | survived | no tests "
             "| not checked | score | equivalent | score without equivalents | killed since | score now | target "
             "| stale |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for m in mods:
        c = m["counts"]
        n = sum(c.values())
        ok = m["score"] is not None and m["score"] >= TARGET
        n_eq = sum(1 for s in m["survivors"] if reason_for(m["module"], s["diff"]))
        detected = c.get("killed", 0) + c.get("timeout", 0)
        rest = detected + c.get("survived", 0) + c.get("no tests", 0) + c.get("suspicious", 0) - n_eq
        s_eq = detected / rest if rest else None
        planted = m.get("killed_since") or {}
        n_since = sum(1 for s in m["survivors"] if not reason_for(m["module"], s["diff"])
                      and killed_since(m["module"], s["diff"], s["mutant"], planted))
        s_now = (detected + n_since) / rest if rest else None
        named = n_eq + n_since == len(m["survivors"])
        verdict = ("met" if ok else "every survivor named" if named else "NOT met") + (
            f" ({c['not checked']} not checked)" if c.get("not checked") else "")
        commit = m["commit"] + (" + uncommitted changes" if m.get("dirty") else "")
        lines.append(f"| {m['module']} | {commit} | {m['date']} | {m['wall_s'] / 60:.1f} min"
                     f"{' (budget spent)' if m['stopped_by_budget'] else ''} | {n} | {c.get('killed', 0)} | "
                     f"{c.get('timeout', 0)} | {c.get('survived', 0)} | {c.get('no tests', 0)} | "
                     f"{c.get('not checked', 0)} | {fmt_score(m['score'])} | {n_eq} | {fmt_score(s_eq)} | "
                     f"{n_since} | {fmt_score(s_now)} | {verdict} | "
                     f"{'**stale**: ' + stale[m['module']] if stale[m['module']] else 'current'} |")
    for m in mods:
        lines += ["", f"## {m['module']}", "",
                  f"- command: `python benchmarks/mutation.py --module {m['module']}` (budget {m['budget_s']:.0f} s)",
                  f"- covering tests: {', '.join(m['tests'])}",
                  f"- commit {m['commit']}, {m['date']}, wall time {m['wall_s'] / 60:.1f} min", ""]
        if len(m["files"]) > 1:
            lines += ["| file | mutants | killed | timeout | survived | no tests | score |",
                      "|---|---:|---:|---:|---:|---:|---:|"]
            for f, c in sorted(m["files"].items()):
                lines.append(f"| {f} | {sum(c.values())} | {c.get('killed', 0)} | {c.get('timeout', 0)} | "
                             f"{c.get('survived', 0)} | {c.get('no tests', 0)} | {fmt_score(score(c))} |")
            lines.append("")
        if m.get("not_mutated"):
            lines.append("Not mutated (a decorator mutmut cannot trampoline under): "
                         + ", ".join(f"`{x}`" for x in m["not_mutated"]) + ".")
            lines.append("")
        surv = m["survivors"]
        for s in surv:  # reasons are the script's (EQUIVALENT), so a re-render picks up new ones
            s["reason"] = reason_for(m["module"], s["diff"])
        if not surv:
            lines.append("No surviving mutant.")
            continue
        explained = sum(1 for s in surv if s["reason"])
        planted = m.get("killed_since") or {}
        since = sum(1 for s in surv if not s["reason"] and killed_since(m["module"], s["diff"], s["mutant"], planted))
        lines.append(f"Surviving mutants: {len(surv)} ({explained} equivalent, with the reason; {since} killed by a "
                     f"test added after this measurement; {len(surv) - explained - since} without a killing test).")
        for s in surv:
            k = killed_since(m["module"], s["diff"], s["mutant"], planted)
            why = (f"equivalent: {s['reason']}" if s["reason"] else
                   f"killed by `{k}`, added after this measurement (checked by planting the mutant)" if k else
                   "**needs a test** (or a reason it is equivalent)")
            lines += ["", f"- `{s['mutant']}` ({s['status']}) — {why}", "", "```diff", s["diff"] or "(no diff)",
                      "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", default=[], help="module under src/spmlkit (repeatable): "
                    + ", ".join(MODULES))
    ap.add_argument("--all", action="store_true", help="every module, one after the other")
    ap.add_argument("--budget", type=float, default=3600.0, help="seconds per module (default 3600)")
    ap.add_argument("--max-children", type=int, default=2, help="parallel mutant runs (default 2)")
    ap.add_argument("--keep-work", action="store_true", help="keep the temporary copy (to inspect mutants)")
    ap.add_argument("--render", action="store_true", help="only re-write mutation.md from mutation.json")
    ap.add_argument("--from-work", type=Path, help="report the finished mutmut run in this work folder (one "
                    "--module) instead of running mutmut again")
    ap.add_argument("--plant", action="store_true", help="for each --module: plant every survivor of its last "
                    "measurement that is not listed as equivalent, one at a time, in a temporary copy of the "
                    "repository, run the covering tests and record the test that kills it (killed since the "
                    "measurement)")
    ap.add_argument("--shard", type=lambda v: tuple(int(x) for x in v.split("/")), default=(1, 1), metavar="K/N",
                    help="with --plant: only every N-th survivor, from the K-th (N runs in parallel, each K once; "
                         "their findings are merged)")
    ap.add_argument("--mutant", action="append", default=[], help="with --plant: only this survivor (repeatable; "
                    "its full or short name), its finding merged with the module's others")
    ap.add_argument("--out", type=Path, default=RESULTS / "mutation.md")
    args = ap.parse_args(argv)
    keys = list(MODULES) if args.all else [module_key(m) for m in args.module]
    if not keys and not args.render:
        ap.error("give --module MODULE (repeatable), --all or --render")
    store = args.out.with_suffix(".json")
    data = json.loads(store.read_text()) if store.exists() else {"modules": {}}
    data["modules"] = migrate(data.get("modules", {}))
    command = "python benchmarks/mutation.py " + " ".join(sys.argv[1:] if argv is None else argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    try:
        from importlib.metadata import version

        data["mutmut"] = version("mutmut")
    except Exception:  # noqa: BLE001 - not installed: only --render works
        if not args.render:
            raise SystemExit("mutation.py: mutmut is not installed; pip install -e '.[mutation]'")
    if args.plant:
        for key in keys:
            if key not in data["modules"]:
                raise SystemExit(f"mutation.py: {key} has no measurement to plant from")
            t0 = time.time()
            found = plant(key, data, log, args.budget if "--budget" in (argv or sys.argv) else float("inf"),
                          shard=args.shard, only=set(args.mutant) or None)
            data = json.loads(store.read_text())  # (another run may have written meanwhile: keep what it wrote)
            data["modules"] = migrate(data.get("modules", {}))
            if args.shard != (1, 1) or args.mutant:  # a shard, or named survivors: keep what the others found
                named = set(args.mutant)
                kept = {k: v for k, v in (data["modules"][key].get("killed_since") or {}).items()
                        if k not in named and k.rsplit(".", 1)[-1] not in named}  # (the named ones: planted again)
                found = {**kept, **found}
            data["modules"][key]["killed_since"] = found
            log(f"{key}: {len(found)} survivors killed by the tests now ({time.time() - t0:.0f} s)")
            store.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        args.out.write_text(render(data, data.get("command", command)))
        return 0
    measured: dict = {}
    for key in keys:
        t0 = time.time()
        res = measure(key, args.budget, args.max_children, args.keep_work, log, from_work=args.from_work)
        measured[key] = res
        if store.exists():  # another run may have written other modules meanwhile: keep them
            data["modules"] = {**migrate(json.loads(store.read_text()).get("modules", {})), **measured}
        data["modules"][key] = res
        log(f"{key}: {sum(res['counts'].values())} mutants, score {fmt_score(res['score'])}, "
            f"{len(res['survivors'])} survivors, {time.time() - t0:.0f} s")
        data["date"] = res["date"]
        data["command"] = command
        args.out.parent.mkdir(parents=True, exist_ok=True)
        store.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        args.out.write_text(render(data, command))
    if args.render:
        args.out.write_text(render(data, data.get("command", command)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
