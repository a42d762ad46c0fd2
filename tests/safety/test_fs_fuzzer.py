"""A file-system fuzzer (issue 33): output trees with symbolic links, hard links, foreign
files and foreign folders planted at every depth a command writes, then the command,
then two checks:

* **nothing of the user's changed or disappeared**: every file and folder outside the
  output (the user's folder that links point to, the command's inputs) is byte-identical,
  and nothing was added to it (a write through a link lands there);
* **every planted file and folder is intact**: a foreign file keeps its bytes, a foreign
  folder its content (a planted link may be replaced by the link's own name — "replace the
  link itself" — but is never written through: that is the first check).

A command may refuse (exit 2, one line) or succeed (exit 0); anything else (a traceback)
fails.  Where spmlkit's manifest exists, everything in the output that spmlkit did not
list must be one of the planted things (the manifest is what spmlkit wrote).

Commands (small data, one epoch): ``train`` (the default ``auto``: run folder, ``members/*``,
``model/``), ``train -m role --param storage=memmap`` (``.spml-scratch``), ``prepare``
(``--overwrite``), ``bench`` (``groups/``, ``bundles/``, ``work/HASH``), ``predict -o``
(a file: links, hard links, the inputs themselves), ``diagnose`` and
``SPMLClassifier.save``.  The cases issue 33 lists are explicit examples (they failed on
75e1ce7); hypothesis draws the rest, seeded (``derandomize``).

Default: 8 drawn cases per command besides the issue's (tiny data, one epoch: seconds,
well under a minute on a busy 2-core machine).  ``SPML_FUZZ_EXAMPLES=N`` draws N cases
per command — a nightly-style run: ``SPML_FUZZ_EXAMPLES=300 pytest tests/safety/test_fs_fuzzer.py -s``
(the last test prints the count and the time).
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spmlkit.cli import main

N_EXAMPLES = int(os.environ.get("SPML_FUZZ_EXAMPLES", "8"))
FUZZ = settings(max_examples=N_EXAMPLES, deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=list(HealthCheck))
PLANTS = ("link-dir", "link-file", "hardlink", "file", "dir")
STATS: dict[str, list] = {}  # command -> [cases, seconds, exit 0, exit 2]: printed by test_fuzzer_report


# ----------------------------------------------------------------------------- the world
def tiny_csv(path: Path, n: int = 60, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = rng.random((n, 4)) < 0.4
    Y[np.arange(n), rng.integers(0, 4, n)] = True
    rows = ["f0,f1,f2," + ",".join(f"label_{j}" for j in range(4))]
    rows += [",".join(f"{v:.3f}" for v in X[i]) + "," + ",".join(str(int(v)) for v in Y[i]) for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    np.savez(path.with_suffix(".npz"), X=X.astype(np.float32), Y=Y)  # (what a bench prepares into bundles/)
    return path


def run_cli(*argv) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The inputs every case copies, and a clean output of each command (a case's
    'previous' state: spmlkit's own output, written by spmlkit)."""
    root = tmp_path_factory.mktemp("fuzz-world")
    csv = tiny_csv(root / "tiny.csv")
    assert run_cli("prepare", csv, "--label-columns", "label_*", "-o", root / "B")[0] == 0
    t = {"train": ("train", root / "B", "--epochs", "1", "--threads", "1", "-o"),
         "role": ("train", root / "B", "-m", "role", "--param", "storage=memmap", "--epochs", "1", "--threads", "1",
                  "-o"),
         "prepare": ("prepare", csv, "--label-columns", "label_*", "-o"),
         "bench": ("bench", "--datasets", root / "tiny.npz", "--methods", "an", "--lrs", "1e-3", "--batch-sizes", "8", "--seeds",
                   "1", "--epochs", "1", "--no-figures", "-o"),
         "an": ("train", root / "B", "-m", "an", "--epochs", "1", "--threads", "1", "-o")}
    for name, argv in t.items():
        code, err = run_cli(*argv, root / "out" / name)
        assert code == 0, err
    code, err = run_cli("diagnose", root / "B", root / "out" / "an", "-o", root / "out" / "diagnose")
    assert code == 0, err
    from spmlkit.practitioner.saved import load_model, save_model

    save_model(load_model(root / "out" / "an"), root / "out" / "save")  # (SPMLClassifier.save's folder)
    return root


KIND = {"train": "run", "role": "run", "prepare": "bundle", "bench": "bench", "diagnose": "diagnostics",
        "save": "model"}


def as_written_by_spmlkit(out: Path, command: str) -> None:
    """A copied output is spmlkit's output as the first spmlkit command to open the copy
    sees it (the manifest re-read by name, spmlkit.ownership): opened here, before anything
    is planted.  (The code before issue 33 has no such module: nothing to do.)"""
    try:
        from spmlkit import ownership
    except ImportError:
        return
    if (out / ownership.MARKER).exists():
        ownership.claim(out, KIND[command])


# -------------------------------------------------------------------------- snapshots
def snapshot(top: Path, skip: Path | None = None) -> dict:
    """Every entry under ``top`` (links not followed; ``skip``'s subtree left out):
    ('l', target) / ('f', bytes) / ('d', modification time) — a folder's time changes when
    anything is created or removed in it, so a write through a link that is removed again
    before the command ends is seen too."""
    out = {}
    for d, dirs, files in os.walk(top):
        for name in dirs + files:
            p = Path(d) / name
            if skip is not None and (p == skip or skip in p.parents):
                continue
            if p.is_symlink():
                out[str(p.relative_to(top))] = ("l", os.readlink(p))
            elif p.is_dir():
                out[str(p.relative_to(top))] = ("d", None if skip is not None and p == skip.parent
                                                else p.stat().st_mtime_ns)
            else:
                out[str(p.relative_to(top))] = ("f", p.read_bytes())
        dirs[:] = [x for x in dirs if not (Path(d) / x).is_symlink()]
    return out


@dataclass
class Case:
    root: Path        # the case's folder: inputs, the user's folder and the output
    out: Path         # the command's output
    planted: dict     # path inside the output -> what was planted there
    user: Path


def make_case(world: Path, command: str, state: str) -> Case:
    root = Path(tempfile.mkdtemp(prefix=f"fuzz-{command}-"))
    shutil.copy(world / "tiny.csv", root / "tiny.csv")
    shutil.copy(world / "tiny.npz", root / "tiny.npz")
    shutil.copytree(world / "B", root / "B")
    user = root / "user"
    (user / "data").mkdir(parents=True)
    (user / "notes.txt").write_text("my notes\n")
    for name in ("metrics.jsonl", "last.pt", "config.json", "meta.json", "table.md"):  # names spmlkit writes
        (user / "data" / name).write_text(f"my {name}\n")
    out = root / "out"
    if command == "predict":
        shutil.copytree(world / "out" / "an", root / "R")
    if command == "diagnose":
        shutil.copytree(world / "out" / "an", root / "R")
    if command == "save":
        shutil.copytree(world / "out" / "an", root / "R")
    if state == "empty":
        out.mkdir()
    elif state == "previous" and command != "predict":
        shutil.copytree(world / "out" / command, out, symlinks=True)
        as_written_by_spmlkit(out, command)
    return Case(root, out, {}, user)


def plant(case: Case, rel: str, what: str) -> None:
    """Put ``what`` at ``out/rel`` (removing what spmlkit had there)."""
    p = case.out / rel
    if p.is_symlink() or p.is_file():
        p.unlink()
    elif p.is_dir():
        shutil.rmtree(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    if what == "link-dir":
        os.symlink(case.user / "data", p)
    elif what == "link-file":
        os.symlink(case.user / "notes.txt", p)
    elif what == "hardlink":
        os.link(case.user / "notes.txt", p)
    elif what == "file":
        p.write_text("a file of the user's\n")
    else:
        p.mkdir()
        (p / "mine.txt").write_text("the user's\n")
    case.planted[rel] = what


def candidates(case: Case, extra: tuple) -> list[str]:
    """Every depth the command writes: the output folder and each folder in it (spmlkit's
    own entries, to be replaced by a planted thing, and new names), plus ``extra``."""
    names = list(extra) + ["notes.txt"]
    if case.out.is_dir():
        for d, dirs, files in os.walk(case.out):
            rel = os.path.relpath(d, case.out)
            base = "" if rel == "." else rel + "/"
            names += [base + x for x in dirs + files if not x.startswith(".spml")] + [base + "mine"]
    return sorted(set(names))


def check(case: Case, code: int, err: str, before_user: dict, before_planted: dict) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code in (0, 2), err
    if code == 2:
        assert lines and lines[-1].startswith("spml: error:") and "Traceback" not in err, err
    after_user = snapshot(case.root, skip=case.out)
    changed = sorted(k for k in set(before_user) | set(after_user) if before_user.get(k) != after_user.get(k))
    assert not changed, f"files outside the output changed, appeared or disappeared: {changed[:6]} ({err[-300:]})"
    for rel, (what, content) in before_planted.items():
        p = case.out / rel
        if what in ("link-dir", "link-file", "hardlink"):
            continue  # replacing the link itself is allowed (its target is checked above)
        assert p.exists() and not p.is_symlink(), f"the user's {what} {rel} disappeared ({err[-300:]})"
        got = p.read_bytes() if what == "file" else snapshot(p)
        assert got == content, f"the user's {what} {rel} changed ({err[-300:]})"
    manifest = case.out / ".spml-manifest"
    if code == 0 and manifest.is_file():  # (on the code before issue 33 there is none)
        from spmlkit import ownership

        planted = set(case.planted)
        unlisted = [f for f in ownership.foreign(case.out)
                    if not any(f == p or f.startswith(p + "/") for p in planted)]
        assert not unlisted, f"spmlkit wrote files its manifest does not list: {unlisted}"


def plant_all(case: Case, plantings) -> dict:
    for rel, what in plantings:
        if any(rel == p or rel.startswith(p + "/") or p.startswith(rel + "/") for p in case.planted):
            continue  # (inside, or above, something planted already)
        parents = [case.out / "/".join(rel.split("/")[:i]) for i in range(1, rel.count("/") + 1)]
        if any(q.is_symlink() or (q.exists() and not q.is_dir()) for q in parents):
            continue
        plant(case, rel, what)
    return {rel: (what, (case.out / rel).read_bytes() if what == "file" else
                  snapshot(case.out / rel) if what == "dir" else None) for rel, what in case.planted.items()}


# ------------------------------------------------------------------------- the fuzzers
def argv_for(command: str, case: Case, flag: bool) -> list:
    r, out = case.root, case.out
    if command == "train":
        return ["train", r / "B", "--epochs", "1", "--threads", "1", "-o", out, *(["--no-resume"] if flag else [])]
    if command == "role":
        return ["train", r / "B", "-m", "role", "--param", "storage=memmap", "--epochs", "1", "--threads", "1",
                "-o", out, "--no-resume"]
    if command == "prepare":
        return ["prepare", r / "tiny.csv", "--label-columns", "label_*", "-o", out, *(["--overwrite"] if flag else [])]
    if command == "bench":  # a second seed: a new group, trained into work/HASH
        return ["bench", "--datasets", r / "tiny.npz", "--methods", "an", "--lrs", "1e-3", "--batch-sizes", "8",
                "--seeds", "2" if flag else "1", "--epochs", "1", "--no-figures", "-o", out]
    if command == "diagnose":
        return ["diagnose", r / "B", r / "R", "-o", out]
    raise AssertionError(command)


EXTRA = {"train": ("members", "members/wan", "model", "metrics.jsonl", "last.pt", "config.json"),
         "role": (".spml-scratch", "metrics.jsonl", "last.pt"),
         "prepare": ("meta.json", "train", "observed"),
         "bench": ("groups", "work", "bundles", "runs.json", "table.md"),
         "diagnose": ("diagnostics.json",),
         "save": ("model.json", "weights.pt")}


def run_case(world, command: str, state: str, plantings, flag: bool) -> None:
    """One case: ``plantings`` are ``(index, what)`` (drawn: the index picks one of the
    depths the command writes) or ``(relative path, what)`` (the issue's cases)."""
    t0 = time.monotonic()
    stats = STATS.setdefault(command, [0, 0.0, 0, 0])
    case = make_case(world, command, state)
    try:
        names = candidates(case, EXTRA[command])
        chosen = [(names[i % len(names)] if isinstance(i, int) else i, what) for i, what in plantings]
        before_planted = plant_all(case, chosen)
        before_user = snapshot(case.root, skip=case.out)
        if command == "save":
            code, err = save_model_case(case)
        else:
            code, err = run_cli(*argv_for(command, case, flag))
        check(case, code, err, before_user, before_planted)
        stats[2 if code == 0 else 3] += 1
    finally:
        shutil.rmtree(case.root, ignore_errors=True)
        stats[0] += 1
        stats[1] += time.monotonic() - t0


def save_model_case(case: Case) -> tuple[int, str]:
    """``SPMLClassifier.save``'s folder (the model of a run, saved again to ``out``)."""
    from spmlkit.errors import SpmlError
    from spmlkit.practitioner.saved import load_model, save_model

    model = load_model(case.root / "R")
    try:
        save_model(model, case.out)
    except SpmlError as exc:
        return 2, f"spml: error: {exc}\n"
    return 0, ""


plantings = st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(PLANTS)), min_size=0, max_size=3)
states = st.sampled_from(["previous", "previous", "previous", "empty", "fresh"])


# The cases issue 33 lists (each failed on 75e1ce7): a member folder of `auto` replaced by
# a link to a folder of the user's; ROLE's memmap scratch; bench groups/, bundles/ and
# work/; a file of the user's kept inside the bundle `prepare --overwrite` replaces.
ISSUE_CASES = {
    "auto-member-link": ("train", (("members/wan", "link-dir"),), True),
    "role-scratch-link": ("role", ((".spml-scratch", "link-dir"),), True),
    "prepare-overwrite-keeps-notes": ("prepare", (("notes.txt", "file"),), True),
    "bench-groups-link": ("bench", (("groups", "link-dir"),), True),
    "bench-work-link": ("bench", (("work", "link-dir"),), True),
    "bench-bundles-link": ("bench", (("bundles", "link-dir"),), False),
}


@pytest.mark.parametrize("case", sorted(ISSUE_CASES))
def test_the_cases_issue_33_lists(world, case):
    command, planted, flag = ISSUE_CASES[case]
    run_case(world, command, "previous", planted, flag)


@pytest.mark.parametrize("command", ["train", "role", "prepare", "bench", "diagnose", "save"])
def test_every_writing_command_keeps_its_hands_off_the_users_files(world, command):
    @FUZZ
    @given(state=states, plantings=plantings, flag=st.booleans())
    def fuzz(state, plantings, flag):
        run_case(world, command, state, plantings, flag)

    fuzz()


# ------------------------------------------------------------------ predict's -o FILE
PREDICT_TARGETS = ("new", "user-file", "link-to-user", "hardlink-of-meta", "B/meta.json", "R/model/model.json",
                   "R/model/weights.pt", "tiny.csv", "B", "R/preds.csv")


def predict_case(world, target: str, overwrite: bool) -> None:
    t0 = time.monotonic()
    stats = STATS.setdefault("predict", [0, 0.0, 0, 0])
    case = make_case(world, "predict", "fresh")
    try:
        r = case.root
        o = {"new": r / "p.csv", "user-file": case.user / "notes.txt", "link-to-user": r / "link.csv",
             "hardlink-of-meta": r / "meta-link.json", "B": r / "B"}.get(target, r / target)
        if target == "link-to-user":
            os.symlink(case.user / "notes.txt", o)
        if target == "hardlink-of-meta":
            os.link(r / "B" / "meta.json", o)
        source = r / "B"
        # the -o file itself (not an input): its bytes are the output (with --overwrite, a file of the user's)
        output = target in ("new", "R/preds.csv", "user-file", "tiny.csv")
        before = snapshot(r, skip=o if output else None)
        code, err = run_cli("predict", r / "R", source, "--split", "test", "-o", o,
                            *(["--overwrite"] if overwrite else []))
        assert code in (0, 2), err
        if code == 2:
            assert err.strip().splitlines()[-1].startswith("spml: error:") and "Traceback" not in err, err
        after = snapshot(r, skip=o if output else None)
        if target in ("link-to-user", "hardlink-of-meta") and code == 0:  # the link itself may be replaced
            for k in (os.path.relpath(o, r),):
                before.pop(k, None), after.pop(k, None)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        assert not changed, f"-o {target}: {changed[:6]} changed ({err[-300:]})"
        stats[2 if code == 0 else 3] += 1
    finally:
        shutil.rmtree(case.root, ignore_errors=True)
        stats[0] += 1
        stats[1] += time.monotonic() - t0


@pytest.mark.parametrize("target", ["B/meta.json", "R/model/model.json"])
def test_predict_never_replaces_its_inputs(world, target):
    """Issue 33: ``-o B/meta.json --overwrite`` replaced the input bundle's meta.json,
    ``-o R/model/model.json --overwrite`` the model being read."""
    predict_case(world, target, True)


@example(target="hardlink-of-meta", overwrite=True)
@example(target="link-to-user", overwrite=True)
@FUZZ
@given(target=st.sampled_from(PREDICT_TARGETS), overwrite=st.booleans())
def test_predict_output_is_never_an_input_nor_written_through_a_link(world, target, overwrite):
    predict_case(world, target, overwrite)


def test_fuzzer_report(world):
    """The case count and time of this run (printed with -s; the issue's note)."""
    total = sum(v[0] for v in STATS.values())
    seconds = sum(v[1] for v in STATS.values())
    print(f"\nfs fuzzer: {total} case(s) in {seconds:.1f} s: "
          + ", ".join(f"{k} {n} ({s:.1f} s; {ok} ran, {no} refused)" for k, (n, s, ok, no) in sorted(STATS.items())),
          file=sys.stderr)
