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
import importlib.util
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
    assert run_cli("prepare", csv, "--label-columns", "label_*", "--full-labels", "-o", root / "B")[0] == 0
    t = {"train": ("train", root / "B", "--epochs", "1", "--threads", "1", "-o"),
         "role": ("train", root / "B", "-m", "role", "--param", "storage=memmap", "--epochs", "1", "--threads", "1",
                  "-o"),
         "prepare": ("prepare", csv, "--label-columns", "label_*", "--full-labels", "-o"),
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
        return ["prepare", r / "tiny.csv", "--label-columns", "label_*", "--full-labels", "-o", out, *(["--overwrite"] if flag else [])]
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
        if code == 0:  # spmlkit's record of the file it wrote (issue 49), beside it
            after.pop(os.path.relpath(sidecar(o), r), None)
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


# ------------------------------------------------- single output files (issue 49, item 1)
def sidecar(path: Path) -> Path:
    """Where spmlkit records a single output file it wrote (``.NAME.spml-file``)."""
    return Path(path).with_name(f".{Path(path).name}.spml-file")


SINGLE_KINDS = ("predict-npy", "predict-csv", "clean")
#: what is at the output path before the command: nothing; a file of the user's that looks
#: like spmlkit's output (issue 49's three findings); spmlkit's own output of a previous run;
#: that output edited by the user since; a link to, or a hard link of, a file of the user's;
#: a folder; a file of the user's beside a record copied from another output
SINGLE_STATES = ("new", "lookalike", "previous", "edited", "link-to-user", "hardlink-of-user", "folder",
                 "forged-record")


def single_argv(kind: str, r: Path, o: Path) -> list:
    if kind == "clean":
        return ["clean", r / "raw.csv", "-o", o]
    return ["predict", r / "R", r / "B", "--split", "test", "-o", o]


def lookalike(kind: str, o: Path) -> None:
    """A file of the user's that the code before issue 49 took for spmlkit's by its content."""
    if kind == "predict-npy":  # a float32 matrix with one column per label (a 1000 x 4 embedding)
        np.save(o, np.random.default_rng(1).random((1000, 4), dtype=np.float32))
    elif kind == "predict-csv":  # a label table with spmlkit's header
        o.write_text("id,labels\nmine-1,label_0\nmine-2,label_3\n")
    else:  # the user's curated records
        o.write_text("id,species,x,y\nmy-1,Aus alpha,1.5,2.5\n")


def single_case(world, kind: str, state: str, overwrite: bool) -> None:
    t0 = time.monotonic()
    stats = STATS.setdefault("single-file", [0, 0.0, 0, 0])
    case = make_case(world, "predict", "fresh")
    try:
        r = case.root
        (r / "raw.csv").write_text("species,lon,lat\nAus alpha,1,2\nBus beta,3,4\n")
        o = r / {"predict-npy": "p.npy", "predict-csv": "p.csv", "clean": "records.csv"}[kind]
        argv = single_argv(kind, r, o)
        if state in ("previous", "edited", "forged-record"):
            code, err = run_cli(*argv)
            assert code == 0, err
        if state == "edited":
            with open(o, "ab") as fh:
                fh.write(b"my own line\n")
        elif state == "forged-record":  # the user's file put where spmlkit's was, the record left beside it
            o.unlink()
            lookalike(kind, o)
        elif state == "lookalike":
            lookalike(kind, o)
        elif state == "link-to-user":
            os.symlink(case.user / "notes.txt", o)
        elif state == "hardlink-of-user":
            os.link(case.user / "notes.txt", o)
        elif state == "folder":
            o.mkdir()
            (o / "mine.txt").write_text("the user's\n")
        users = state in ("lookalike", "edited", "forged-record", "hardlink-of-user", "link-to-user", "folder")
        before = snapshot(r, skip=None)
        mine = o.read_bytes() if o.is_file() and not o.is_symlink() else None
        code, err = run_cli(*argv, *(["--overwrite"] if overwrite else []))
        assert code in (0, 2), err
        if code == 2:
            assert err.strip().splitlines()[-1].startswith("spml: error:") and "Traceback" not in err, err
        may_replace = not users or (overwrite and state not in ("link-to-user", "folder"))
        if not may_replace:
            assert code == 2, f"{kind} over {state} (overwrite={overwrite}): replaced without a refusal"
        after = snapshot(r, skip=None)
        if code == 0:  # the output and its record may change, nothing else (a hard link's other name keeps its bytes)
            for k in (os.path.relpath(o, r), os.path.relpath(sidecar(o), r)):
                before.pop(k, None), after.pop(k, None)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        assert not changed, f"{kind} over {state}: {changed[:6]} changed ({err[-300:]})"
        if code == 2 and mine is not None:
            assert o.read_bytes() == mine, f"{kind} over {state}: the user's file changed although refused"
        stats[2 if code == 0 else 3] += 1
    finally:
        shutil.rmtree(case.root, ignore_errors=True)
        stats[0] += 1
        stats[1] += time.monotonic() - t0


@pytest.mark.parametrize("kind", SINGLE_KINDS)
def test_a_users_file_that_looks_like_spmlkits_output_is_not_replaced(world, kind):
    """Issue 49: ``predict -o F.npy`` replaced a user's float32 matrix with one column per
    label, ``predict -o F.csv`` a table headed ``id,labels``, ``clean -o records.csv`` the
    user's ``id,species,x,y`` file — all without ``--overwrite``."""
    single_case(world, kind, "lookalike", False)


@pytest.mark.parametrize("kind", SINGLE_KINDS)
def test_spmlkits_own_single_output_is_replaced_and_an_edited_one_is_not(world, kind):
    single_case(world, kind, "previous", False)
    single_case(world, kind, "edited", False)
    single_case(world, kind, "forged-record", False)


@FUZZ
@given(kind=st.sampled_from(SINGLE_KINDS), state=st.sampled_from(SINGLE_STATES), overwrite=st.booleans())
def test_single_output_files_follow_the_folder_rule(world, kind, state, overwrite):
    single_case(world, kind, state, overwrite)


# ------------------------------------------------ maps and the raster folder (issue 49, item 2)
def _map_model(labels):
    from spmlkit.data.encoding import CovariateEncoding
    from tests.helpers.rasters import linear_model

    enc = CovariateEncoding(("temp", "rain", "soil"), {"soil": (1.0, 2.0, 3.0)})
    w = np.resize(np.array([[0.3, -0.3], [0.01, 0.0], [1.0, -1.0], [0.0, 0.0], [-1.0, 1.0]]), (5, len(labels)))
    return linear_model(enc, labels, w)


def test_a_map_is_never_written_into_its_raster_folder(tmp_path):
    """Issue 49: ``predict --rasters DIR -o DIR/map.tif`` was not refused (and the next
    ``prepare --rasters DIR`` read the map as a covariate)."""
    pytest.importorskip("rasterio")
    from spmlkit.errors import SpmlError
    from spmlkit.practitioner.maps import predict_rasters
    from tests.helpers.rasters import make_stack

    env = make_stack(tmp_path / "env")
    before = snapshot(tmp_path)
    for out, per in ((env / "map.tif", False), (env / "maps", True), (env / "sub" / "map.tif", False)):
        with pytest.raises(SpmlError, match="inside|input"):
            predict_rasters(_map_model(["Aus alpha", "Bus beta"]), [env], out, per_species=per)
    assert snapshot(tmp_path) == before


def test_species_whose_file_names_coincide_get_a_map_each(tmp_path):
    """Issue 49: species whose file-safe names coincide shared one ``--per-species`` map."""
    pytest.importorskip("rasterio")
    from spmlkit.practitioner.maps import predict_rasters
    from tests.helpers.rasters import make_stack

    env = make_stack(tmp_path / "env")
    labels = ["Aus alpha", "Aus_alpha", "aus alpha", "Aus/alpha"]
    res = predict_rasters(_map_model(labels), [env], tmp_path / "maps", per_species=True, maps="all")
    tifs = [p for p in map(Path, res["written"]) if p.suffix == ".tif"]
    pngs = [p for p in map(Path, res["written"]) if p.suffix == ".png"]
    assert len(tifs) == len(set(str(p).lower() for p in tifs)) == len(labels)
    assert len(pngs) == len(set(str(p).lower() for p in pngs)) == len(labels)
    import rasterio

    for t, name in zip(tifs, labels):
        with rasterio.open(t) as ds:
            assert ds.descriptions[0] == name


def test_a_users_map_lookalike_is_not_replaced_and_spmlkits_map_is(tmp_path):
    pytest.importorskip("rasterio")
    from spmlkit.errors import SpmlError
    from spmlkit.practitioner.maps import TAG, predict_rasters
    from tests.helpers.rasters import make_stack, write_raster

    env = make_stack(tmp_path / "env")
    model = _map_model(["Aus alpha", "Bus beta"])
    mine = tmp_path / "mine.tif"
    write_raster(mine, np.ones((4, 4), np.float32))
    import rasterio

    with rasterio.open(mine, "r+") as ds:  # tagged as spmlkit tags its maps
        ds.update_tags(**{TAG: "probability of presence"})
    data = mine.read_bytes()
    with pytest.raises(SpmlError, match="refusing to replace"):
        predict_rasters(model, [env], mine)
    assert mine.read_bytes() == data
    predict_rasters(model, [env], tmp_path / "m.tif")
    predict_rasters(model, [env], tmp_path / "m.tif")  # its own map, by its record: replaced


# ----------------------------------------- a link swapped between check and write (item 3)
def _swap_after_check(monkeypatch, root, rel: str, swap) -> list:
    """Run ``swap`` once, right after spmlkit checked ``rel`` against ``root``'s manifest
    (the moment between a check and its write)."""
    cls, done = type(root), []
    real = cls.owns

    def owns(self, r, st, types="fdo"):
        ok = real(self, r, st, types)
        if r == rel and not done:
            done.append(True)
            swap()
        return ok

    monkeypatch.setattr(cls, "owns", owns)
    return done


def _to_link(path: Path, to: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        path.rename(path.with_name(path.name + ".moved"))
    else:
        path.unlink()
    os.symlink(to, path)


def test_an_append_never_follows_a_link_swapped_in_after_its_check(tmp_path, monkeypatch):
    """Issue 49: a symlink swapped in mid-run made ``metrics.jsonl`` append a line to a
    user file, with rc 0 and no message."""
    from spmlkit import ownership
    from spmlkit.errors import SpmlError

    user = tmp_path / "user.txt"
    user.write_text("mine\n")
    out = ownership.claim(tmp_path / "run", "run")
    ownership.append_jsonl(out / "metrics.jsonl", {"epoch": 1})
    root = ownership._ROOTS[str(out)]
    done = _swap_after_check(monkeypatch, root, "metrics.jsonl", lambda: _to_link(out / "metrics.jsonl", user))
    with pytest.raises(SpmlError):
        ownership.append_jsonl(out / "metrics.jsonl", {"epoch": 2})
    assert done and user.read_text() == "mine\n"


@pytest.mark.parametrize("writer", ["write_text", "save_npy", "append_jsonl", "new_file", "touch", "open_memmap"])
def test_a_folder_swapped_for_a_link_after_its_check_is_never_written_through(tmp_path, monkeypatch, writer):
    from spmlkit import ownership
    from spmlkit.errors import SpmlError

    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine\n")
    out = ownership.claim(tmp_path / "run", "run")
    ownership.write_text(out / "logs" / "a.json", "{}")
    before = snapshot(user)
    root = ownership._ROOTS[str(out)]
    done = _swap_after_check(monkeypatch, root, "logs", lambda: _to_link(out / "logs", user))
    p = out / "logs" / "new.bin"
    call = {"write_text": lambda: ownership.write_text(p, "x"),
            "save_npy": lambda: ownership.save_npy(p, np.zeros(3)),
            "append_jsonl": lambda: ownership.append_jsonl(p, {"a": 1}),
            "new_file": lambda: ownership.new_file(p),
            "touch": lambda: ownership.touch(p),
            "open_memmap": lambda: ownership.open_memmap(p, mode="w+", dtype=np.float32, shape=(3,))}[writer]
    mtime = user.stat().st_mtime_ns  # (a temporary file made and removed there changes it)
    with pytest.raises(SpmlError):
        call()
    assert done and snapshot(user) == before and sorted(os.listdir(user)) == ["notes.txt"]
    assert user.stat().st_mtime_ns == mtime, "a file was made (and removed) in the user's folder"


def test_a_removal_never_follows_a_folder_swapped_for_a_link_after_its_check(tmp_path, monkeypatch):
    """The file's own check passed, then its folder became a link to the user's folder
    holding a file of the same name: that file is never removed."""
    from spmlkit import ownership
    from spmlkit.errors import SpmlError

    user = tmp_path / "user"
    user.mkdir()
    (user / "a.json").write_text("mine\n")
    out = ownership.claim(tmp_path / "run", "run")
    ownership.write_text(out / "logs" / "a.json", "{}")
    root = ownership._ROOTS[str(out)]
    done = _swap_after_check(monkeypatch, root, "logs/a.json", lambda: _to_link(out / "logs", user))
    with contextlib.suppress(SpmlError):
        ownership.remove(out / "logs" / "a.json")
    assert done and (user / "a.json").read_text() == "mine\n"


def test_a_single_output_files_folder_swapped_after_its_check_is_never_written_through(tmp_path):
    from spmlkit import ownership
    from spmlkit.errors import SpmlError

    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine\n")
    (tmp_path / "d").mkdir()
    ownership.output_file(tmp_path / "d" / "p.csv")
    before, mtime = snapshot(user), user.stat().st_mtime_ns
    _to_link(tmp_path / "d", user)
    with pytest.raises(SpmlError):
        with ownership.write_output_file(tmp_path / "d" / "p.csv") as tmp:
            tmp.write_text("id,labels\n")
    assert snapshot(user) == before and sorted(os.listdir(user)) == ["notes.txt"] and user.stat().st_mtime_ns == mtime


# ------------------------------------------------ nothing removed by a marker alone (item 4)
@pytest.mark.parametrize("name", [".cache", ".git", ".B.cache"])
def test_prepare_never_removes_a_hidden_folder_for_the_owner_file_in_it(world, tmp_path, name):
    """Issue 49: ``prepare`` removed with rmtree a hidden folder beside ``-o`` (``.cache/``,
    ``.git/``) that held a ``.spml-owner`` file."""
    shutil.copy(world / "tiny.csv", tmp_path / "tiny.csv")
    hidden = tmp_path / name
    hidden.mkdir()
    (hidden / ".spml-owner").write_text("1\nflock\n")
    (hidden / "objects.bin").write_text("the user's\n")
    before = snapshot(hidden)
    code, err = run_cli("prepare", tmp_path / "tiny.csv", "--label-columns", "label_*", "--full-labels", "-o", tmp_path / "B")
    assert code == 0, err
    assert hidden.is_dir() and snapshot(hidden) == before


def test_overwrite_of_a_bundle_whose_manifest_is_gone_removes_nothing(world, tmp_path):
    """Issue 49: with a bundle's manifest gone, ``--overwrite`` deleted a user file in ``B/train/``."""
    shutil.copy(world / "tiny.csv", tmp_path / "tiny.csv")
    argv = ("prepare", tmp_path / "tiny.csv", "--label-columns", "label_*", "--full-labels", "-o", tmp_path / "B")
    assert run_cli(*argv)[0] == 0
    (tmp_path / "B" / ".spml-manifest").unlink()
    train = next(p for p in (tmp_path / "B").iterdir() if p.is_dir())
    (train / "mine.txt").write_text("the user's\n")
    before = snapshot(tmp_path / "B")
    code, err = run_cli(*argv, "--overwrite")
    assert code == 2 and "Traceback" not in err, err
    assert (train / "mine.txt").read_text() == "the user's\n" and snapshot(tmp_path / "B") == before


def test_a_prepare_stopped_by_a_file_size_limit_leaves_no_build_folder(world, tmp_path):
    """Issue 49: a ``prepare`` stopped by a file-size limit (SIGXFSZ / EFBIG) left its
    ``.B.XXXX/`` build folder behind."""
    import resource
    import subprocess

    shutil.copy(world / "tiny.csv", tmp_path / "tiny.csv")
    import spmlkit

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(Path(spmlkit.__file__).resolve().parents[1])}  # (the spmlkit under test)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (600, 600))

    res = subprocess.run([sys.executable, "-m", "spmlkit.cli", "prepare", str(tmp_path / "tiny.csv"), "--full-labels", "--label-columns",
                          "label_*", "-o", str(tmp_path / "B")], cwd=tmp_path, env=env, preexec_fn=limit,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0, res.stderr  # (the limit is reached)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.csv"], (res.returncode, res.stderr[-400:])
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-400:]




# ------------------------------------ explain's folder, per-species maps, the raster folder
@pytest.fixture(scope="module")
def geo_world(tmp_path_factory):
    """A model trained on raster covariates, and a previous output of ``explain`` and of
    ``predict --rasters --per-species`` (None without rasterio)."""
    if importlib.util.find_spec("rasterio") is None:
        return None
    from tests.helpers.rasters import located_records, make_stack, write_records

    root = tmp_path_factory.mktemp("fuzz-geo")
    env = make_stack(root / "env")
    rec = write_records(root / "r.csv", located_records(15))
    for argv in (("prepare", rec, "--rasters", env, "--background-points", "40", "-o", root / "b"),
                 ("train", root / "b", "-m", "an", "--epochs", "1", "--threads", "1", "-o", root / "run"),
                 GEO_ARGV["explain"](root, root / "run", root / "out" / "explain"),
                 GEO_ARGV["maps"](root, root / "run", root / "out" / "maps")):
        code, err = run_cli(*argv)
        assert code == 0, err
    return root


GEO_ARGV = {"explain": lambda r, run, out: ("explain", run, "-o", out, "--points", "3", "--repeats", "1",
                                            "--sample", "40"),
            "maps": lambda r, run, out: ("predict", run, "--rasters", r / "env", "--per-species", "--maps", "all",
                                         "-o", out)}
KIND.update({"explain": "explain", "maps": "maps"})
EXTRA.update({"explain": ("importance.csv", "response.csv", "importance.png"),
              "maps": ("Aus_alpha.tif", "Bus_beta.png")})


def geo_case(world, command: str, state: str, plantings) -> None:
    t0 = time.monotonic()
    stats = STATS.setdefault(command, [0, 0.0, 0, 0])
    root = Path(tempfile.mkdtemp(prefix=f"fuzz-{command}-"))
    try:
        shutil.copytree(world / "env", root / "env")
        shutil.copytree(world / "run", root / "R")
        user = root / "user"
        (user / "data").mkdir(parents=True)
        (user / "notes.txt").write_text("my notes\n")
        for name in ("importance.csv", "Aus_alpha.tif"):
            (user / "data" / name).write_text(f"my {name}\n")
        case = Case(root, root / "out", {}, user)
        if state == "empty":
            case.out.mkdir()
        elif state == "previous":
            shutil.copytree(world / "out" / command, case.out, symlinks=True)
            as_written_by_spmlkit(case.out, command)
        names = candidates(case, EXTRA[command])
        chosen = [(names[i % len(names)] if isinstance(i, int) else i, what) for i, what in plantings]
        before_planted = plant_all(case, chosen)
        before_user = snapshot(case.root, skip=case.out)
        code, err = run_cli(*GEO_ARGV[command](root, root / "R", case.out))
        check(case, code, err, before_user, before_planted)
        stats[2 if code == 0 else 3] += 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
        stats[0] += 1
        stats[1] += time.monotonic() - t0


@pytest.mark.parametrize("command", ["explain", "maps"])
def test_explain_and_per_species_maps_keep_their_hands_off_the_users_files(geo_world, command):
    if geo_world is None:
        pytest.skip("rasterio is not installed")

    @settings(FUZZ, max_examples=max(1, N_EXAMPLES // 2))
    @example(state="previous", plantings=[("Aus_alpha.tif" if command == "maps" else "importance.csv", "link-file")])
    @given(state=states, plantings=plantings)
    def fuzz(state, plantings):
        geo_case(geo_world, command, state, plantings)

    fuzz()


RASTER_TARGETS = ("env/map.tif", "env/sub/map.tif", "envlink/map.tif", "env/temp.tif", "hardlink-of-temp.tif",
                  "env", "envlink")


@FUZZ
@example(target="env/map.tif", per_species=False, overwrite=False)
@given(target=st.sampled_from(RASTER_TARGETS), per_species=st.booleans(), overwrite=st.booleans())
def test_a_map_is_never_written_into_or_over_the_rasters_it_reads(geo_world, target, per_species, overwrite):
    """Issue 49: ``predict --rasters DIR -o DIR/map.tif`` was not refused: every spelling of
    a place inside (or of) the raster folder, through a link or a hard link, is refused."""
    if geo_world is None:
        pytest.skip("rasterio is not installed")
    t0 = time.monotonic()
    stats = STATS.setdefault("rasters", [0, 0.0, 0, 0])
    root = Path(tempfile.mkdtemp(prefix="fuzz-rasters-"))
    try:
        shutil.copytree(geo_world / "env", root / "env")
        os.symlink(root / "env", root / "envlink")
        os.link(root / "env" / "temp.tif", root / "hardlink-of-temp.tif")
        o = root / target
        if per_species and o.suffix == ".tif":
            o = o.with_suffix("")
        before = snapshot(root)
        code, err = run_cli("predict", geo_world / "run", "--rasters", root / "env", "-o", o,
                            *(["--per-species"] if per_species else []), *(["--overwrite"] if overwrite else []))
        assert code == 2 and "Traceback" not in err and err.strip().splitlines()[-1].startswith("spml: error:"), err
        assert snapshot(root) == before
        stats[3] += 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
        stats[0] += 1
        stats[1] += time.monotonic() - t0




def test_fuzzer_report(world):
    """The case count and time of this run (printed with -s; the issue's note)."""
    total = sum(v[0] for v in STATS.values())
    seconds = sum(v[1] for v in STATS.values())
    print(f"\nfs fuzzer: {total} case(s) in {seconds:.1f} s: "
          + ", ".join(f"{k} {n} ({s:.1f} s; {ok} ran, {no} refused)" for k, (n, s, ok, no) in sorted(STATS.items())),
          file=sys.stderr)
