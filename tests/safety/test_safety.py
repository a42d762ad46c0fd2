"""Security and data safety (issue 14): nothing spmlkit reads is unpickled, --overwrite
replaces only what spmlkit wrote, bad input ends in one line with exit 2, folders are
locked while written, killed processes leave no litter and no orphans."""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from spmlkit.cli import main
from tests.helpers.owned import spmlkit_wrote


class Payload:
    """Creates ``path`` when unpickled: proves whether a load executed code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own errors exit from parse_args
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return code == 2 and len(lines) == 1 and lines[0].startswith("spml: error:")


def ends_in_one_error(code, err):
    """Progress lines may come first (a bench logs what it prepares); the failure itself
    is one line, the last, and there is no traceback."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return (code == 2 and lines and lines[-1].startswith("spml: error:") and "Traceback" not in err
            and sum(ln.startswith("spml: error:") for ln in lines) == 1)


def plant_torch_payload(path: Path, marker: Path) -> None:
    """What an attacker writes: a pickle payload and a matching checksum sidecar."""
    torch.save({"epoch": 1, "method": Payload(marker), "state": {}}, path)
    path.with_name(path.name + ".sha256").write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "\n")


def plant_npy_payload(path: Path, marker: Path) -> None:
    with open(path, "wb") as fh:
        np.save(fh, np.array([Payload(marker), 1], dtype=object), allow_pickle=True)


@pytest.fixture(scope="module")
def yeast(tmp_path_factory):
    root = tmp_path_factory.mktemp("safety")
    assert main(["prepare", "yeast", "-o", str(root / "b")]) == 0
    assert main(["train", str(root / "b"), "-m", "an", "--epochs", "2", "-o", str(root / "run")]) == 0
    return root


def copy_run(yeast, tmp_path, name="evil") -> Path:
    dst = tmp_path / name
    shutil.copytree(yeast / "run", dst)
    (dst / ".spml.lock").unlink(missing_ok=True)
    return dst


# --------------------------------------------------------------- 1. no unpickling
def test_checkpoint_payload_is_refused_on_diagnose_and_resume(yeast, tmp_path, capsys):
    marker = tmp_path / "PWNED"
    evil = copy_run(yeast, tmp_path)
    plant_torch_payload(evil / "last.pt", marker)
    code, _, err = run(capsys, "diagnose", yeast / "b", evil, "-o", tmp_path / "figs")
    assert one_line_error(code, err) and "refused to load" in err, err
    (evil / "result.json").unlink()  # as if killed after its last checkpoint: the next train resumes
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "2", "-o", evil)
    assert one_line_error(code, err) and "refused to load" in err, err
    assert not marker.exists()


def test_checkpoints_spmlkit_writes_hold_no_pickled_objects(yeast):
    """Every checkpoint and saved model loads with weights_only=True (numpy's RNG state
    included), so the safe loader never refuses spmlkit's own files."""
    for f in ("last.pt", "model/weights.pt"):
        torch.load(yeast / "run" / f, weights_only=True)


def test_checkpoint_writer_refuses_unsafe_objects(tmp_path):
    from spmlkit import ownership
    from spmlkit.training.checkpoint import load_checkpoint, save_checkpoint

    tmp_path = ownership.claim(tmp_path / "run", "run")  # (spmlkit writes only into folders it made)

    with pytest.raises(TypeError, match="cannot be checkpointed"):
        save_checkpoint({"x": Payload(tmp_path / "m")}, tmp_path / "c.pt")
    rng = np.random.default_rng(0)
    state = {"a": rng.normal(size=(2, 3)), "b": (np.int64(3), [np.float32(1.5)]), "rng": np.random.get_state()}
    save_checkpoint(state, tmp_path / "c.pt")
    back = load_checkpoint(tmp_path / "c.pt")
    assert np.array_equal(back["a"], state["a"]) and back["b"] == (3, [1.5])
    np.random.set_state(back["rng"])  # numpy's global state survives the round trip


def test_saved_model_payload_is_refused_on_predict(yeast, tmp_path, capsys):
    marker = tmp_path / "PWNED"
    evil = copy_run(yeast, tmp_path)
    plant_torch_payload(evil / "model" / "weights.pt", marker)
    np.save(tmp_path / "x.npy", np.zeros((2, 103), np.float32))
    code, _, err = run(capsys, "predict", evil, tmp_path / "x.npy", "-o", tmp_path / "p.csv")
    assert one_line_error(code, err) and "refused to load" in err, err
    assert not marker.exists() and not (tmp_path / "p.csv").exists()


def test_prediction_input_with_objects_is_refused(yeast, tmp_path, capsys):
    marker = tmp_path / "PWNED"
    plant_npy_payload(tmp_path / "x.npy", marker)
    code, _, err = run(capsys, "predict", yeast / "run", tmp_path / "x.npy", "-o", tmp_path / "p.csv")
    assert one_line_error(code, err) and "Python objects" in err, err
    assert not marker.exists()


def test_bench_work_folder_payload_is_refused(tmp_path, capsys):
    marker = tmp_path / "PWNED"
    out = tmp_path / "bench"
    argv = ["bench", "--datasets", "yeast", "--methods", "an", "--lrs", "1e-3", "--batch-sizes", "64",
            "--seeds", "1", "--epochs", "2", "--no-figures", "-o", out]
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    (group,) = list((out / "groups").glob("*.json"))
    work = out / "work" / group.stem
    work.mkdir(parents=True)
    plant_torch_payload(work / "last.pt", marker)
    spmlkit_wrote(out, "bench", work / "last.pt", work / "last.pt.sha256")  # (someone else's would not be read)
    group.unlink()  # the group is unfinished again: the bench resumes from its work folder
    code, _, err = run(capsys, *argv)
    assert ends_in_one_error(code, err) and "refused to load" in err, err
    assert not marker.exists()


def test_bundle_and_feature_cache_payloads_are_refused(yeast, tmp_path, capsys):
    marker = tmp_path / "PWNED"
    b = tmp_path / "b"
    shutil.copytree(yeast / "b", b)
    plant_npy_payload(b / "train" / "X.npy", marker)
    meta = json.loads((b / "meta.json").read_text())  # the attacker fixes the recorded checksum too
    meta["checksums"]["train/X.npy"] = hashlib.sha256((b / "train" / "X.npy").read_bytes()).hexdigest()
    (b / "meta.json").write_text(json.dumps(meta))
    code, _, err = run(capsys, "train", b, "-m", "an", "--epochs", "1", "-o", tmp_path / "r")
    assert one_line_error(code, err) and "Python objects" in err, err
    # a cached feature set of an image bundle is read the same way
    from spmlkit.data import Bundle

    fs = b / "features" / "evil"
    fs.mkdir(parents=True)
    for split in ("train", "val", "test"):
        plant_npy_payload(fs / f"{split}.npy", marker)
    from tests.helpers.owned import seal_feature_cache

    seal_feature_cache(fs)  # the attacker writes the checksums too
    with pytest.raises(Exception, match="Python objects"):
        Bundle(b).features("test", "evil")
    assert not marker.exists()


def test_estimator_snapshot_and_backbone_payloads_are_refused(tmp_path):
    from spmlkit.errors import SpmlError
    from spmlkit.features.backbones import _read_state_dict
    from spmlkit.methods.role import LabelEstimator

    marker = tmp_path / "PWNED"
    plant_npy_payload(tmp_path / "member.npy", marker)
    with pytest.raises(SpmlError, match="Python objects"):
        LabelEstimator.logits_from_state({"path": str(tmp_path / "member.npy")})
    torch.save({"conv1.weight": Payload(marker)}, tmp_path / "resnet50.pth")
    with pytest.raises(SpmlError, match="refused to load"):
        _read_state_dict(tmp_path / "resnet50.pth")
    assert not marker.exists()


# ------------------------------------------------------- 2. --overwrite is safe
@pytest.mark.parametrize("target", [".", "parent", "user-folder", "file"])
def test_overwrite_never_replaces_what_spmlkit_did_not_write(tmp_path, monkeypatch, capsys, target):
    work = tmp_path / "parent" / "work"
    work.mkdir(parents=True)
    (work / "keep.txt").write_text("mine")
    (tmp_path / "user-folder").mkdir()
    (tmp_path / "user-folder" / "keep.txt").write_text("mine")
    (tmp_path / "file").write_text("mine")
    monkeypatch.chdir(work)
    out = {".": ".", "parent": str(tmp_path / "parent"), "user-folder": str(tmp_path / "user-folder"),
           "file": str(tmp_path / "file")}[target]
    code, _, err = run(capsys, "prepare", "yeast", "-o", out, "--overwrite")
    assert one_line_error(code, err), err
    assert (work / "keep.txt").read_text() == "mine"
    assert (tmp_path / "user-folder" / "keep.txt").exists() and (tmp_path / "file").read_text() == "mine"


def test_overwrite_replaces_a_bundle_and_an_empty_folder(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert run(capsys, "prepare", "yeast", "-o", tmp_path / "empty", "--overwrite")[0] == 0
    code, _, err = run(capsys, "prepare", "yeast", "-o", tmp_path / "empty", "--overwrite", "--seed", "3")
    assert code == 0, err
    assert json.loads((tmp_path / "empty" / "meta.json").read_text())["seed"] == 3


def test_bundle_folder_follows_the_umask(tmp_path, capsys):
    assert run(capsys, "prepare", "yeast", "-o", tmp_path / "b")[0] == 0
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "b").stat().st_mode & 0o777 == 0o777 & ~umask


# ------------------------------------------- 3. one line and exit 2, before any work
def _bad_cases(yeast, tmp_path):
    b, r = yeast / "b", yeast / "run"
    (tmp_path / "afile").write_text("x")
    np.save(tmp_path / "x.npy", np.zeros((2, 103), np.float32))
    out = tmp_path / "o"
    return {
        "param not a number": ["train", b, "-m", "wan", "--param", "gamma=abc", "-o", out],
        "param nan": ["train", b, "-m", "wan", "--param", "gamma=nan", "-o", out],
        "hidden 0": ["train", b, "--head", "mlp", "--hidden", "0", "-o", out],
        "hidden -3": ["train", b, "--head", "mlp", "--hidden", "-3", "-o", out],
        "seed -1": ["train", b, "--seed", "-1", "-o", out],
        "seed 20 digits": ["train", b, "--seed", "12345678901234567890", "-o", out],
        "lr nan": ["train", b, "--lr", "nan", "-o", out],
        "epochs 0": ["train", b, "--epochs", "0", "-o", out],
        "decimals -1": ["bench", "--datasets", "yeast", "--decimals", "-1", "-o", out],
        "bench param": ["bench", "--datasets", "yeast", "--methods", "wan", "--param", "wan:gamma=abc", "-o", out],
        "bench unknown dataset": ["bench", "--datasets", "no-such-set", "--methods", "an", "-o", out],
        "overwrite onto a file": ["prepare", "yeast", "-o", tmp_path / "afile", "--overwrite"],
        "train -o a file": ["train", b, "-o", tmp_path / "afile"],
        "predict -o a folder": ["predict", r, tmp_path / "x.npy", "-o", tmp_path],
        "threshold nan": ["predict", r, tmp_path / "x.npy", "--labels", "--threshold", "nan", "-o", out],
        "unknown option value": ["train", b, "--selection", "nope", "-o", out],
        "missing bundle": ["train", tmp_path / "nope", "-o", out],
    }


def test_bad_options_end_in_one_line_and_write_nothing(yeast, tmp_path, capsys):
    for name, argv in _bad_cases(yeast, tmp_path).items():
        code, _, err = run(capsys, *argv)
        assert one_line_error(code, err), f"{name}: exit {code}, stderr {err!r}"
        assert not (tmp_path / "o").exists(), f"{name}: left {tmp_path / 'o'} behind"


def _damage(b: Path, how: str) -> None:
    x = b / "train" / "X.npy"
    if how == "truncated X":
        x.write_bytes(x.read_bytes()[:-500])
    elif how == "flipped byte":
        data = bytearray(x.read_bytes())
        data[len(data) // 2] ^= 0x01
        x.write_bytes(bytes(data))
    elif how == "edited header":
        data = bytearray(x.read_bytes())
        data[10:40] = b"{'descr': '<f4', 'fortran_or"
        x.write_bytes(bytes(data))
    elif how == "object array":
        np.save(x, np.array([1, "a"], dtype=object), allow_pickle=True)
    elif how == "wrong width":
        np.save(x, np.zeros((np.load(x).shape[0], 7), np.float32))
    elif how == "short observed":
        z = b / "observed" / "single_positive.indptr.npy"
        np.save(z, np.load(z)[:-3])
    elif how == "Z value 5":
        z = b / "observed" / "single_positive.values.npy"  # the first observation becomes 5
        a = np.ones(np.load(b / "observed" / "single_positive.indices.npy").shape, dtype=np.int8)
        a[0] = 5
        np.save(z, a)
    elif how == "short label_names":
        meta = json.loads((b / "meta.json").read_text())
        meta["label_names"] = meta["label_names"][:-1]
        (b / "meta.json").write_text(json.dumps(meta))
    if how in ("object array", "wrong width", "short observed", "Z value 5"):  # checksums fixed by the editor:
        meta = json.loads((b / "meta.json").read_text())  # the structural checks must still catch it
        meta["checksums"] = {}
        (b / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("how", ["truncated X", "flipped byte", "edited header", "object array", "wrong width",
                                 "short observed", "Z value 5", "short label_names"])
def test_damaged_bundles_are_refused_in_one_line(yeast, tmp_path, capsys, how):
    b = tmp_path / "b"
    shutil.copytree(yeast / "b", b)
    _damage(b, how)
    code, _, err = run(capsys, "train", b, "-m", "an", "--epochs", "1", "-o", tmp_path / "r")
    assert one_line_error(code, err), f"{how}: {err!r}"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("edit", ["label_names", "head"])
def test_model_json_that_no_longer_matches_its_weights(yeast, tmp_path, capsys, edit):
    r = copy_run(yeast, tmp_path)
    p = r / "model" / "model.json"
    meta = json.loads(p.read_text())
    if edit == "label_names":
        meta["label_names"] = meta["label_names"][:-2]
    else:
        meta["head"] = "mlp"
    p.write_text(json.dumps(meta))
    np.save(tmp_path / "x.npy", np.zeros((2, 103), np.float32))
    code, _, err = run(capsys, "predict", r, tmp_path / "x.npy", "-o", tmp_path / "p.csv")
    assert one_line_error(code, err) and "does not match" in err, err
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("err_no", [errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EFBIG])
def test_filesystem_errors_end_in_one_line(yeast, tmp_path, capsys, monkeypatch, err_no):
    """Read-only filesystem, disk full, no permission, file size limit: one line, exit 2
    (simulated: the tests run as root, which ignores permissions)."""
    import spmlkit.io as sio

    def fail(*a, **k):
        raise OSError(err_no, os.strerror(err_no), str(tmp_path / "o" / "config.json"))

    monkeypatch.setattr(sio, "write_bytes", fail)
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "-o", tmp_path / "o")
    assert one_line_error(code, err) and os.strerror(err_no) in err, err


def test_file_size_limit_is_one_line(yeast, tmp_path):
    """A real ``ulimit -f``: Python ignores SIGXFSZ, so the write fails with EFBIG."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    env = {**os.environ, "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "spmlkit.cli", "prepare", "yeast", "-o", str(tmp_path / "b")],
                       capture_output=True, text=True, preexec_fn=limit, env=env, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "ulimit -f" in p.stderr and not (tmp_path / "b").exists()


def test_validation_without_positives_is_refused(toy_bundle, tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.errors import ConfigError
    from spmlkit.training.prepare import make_evaluator

    Y = np.zeros((5, 3), bool)
    with pytest.raises(ConfigError, match="no positive label"):
        make_evaluator("map", Y_val=Y, Z_val=None)
    with pytest.raises(ConfigError, match="no positive label"):
        make_evaluator("observed_map", Y_val=None, Z_val=np.zeros((5, 3), np.int8))
    assert make_evaluator("last", Y_val=Y, Z_val=None)[0] == "last"
    assert TrainConfig().lr > 0


# ------------------------------------------------------ 5. locks, litter, orphans
def test_second_writer_of_a_run_folder_is_refused(yeast, tmp_path, capsys):
    from spmlkit.io import FolderLock

    out = tmp_path / "run"
    out.mkdir()  # (an empty folder: a run may be written into it)
    with FolderLock(out):
        code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "-o", out)
    assert one_line_error(code, err) and "in use by another spml process" in err, err
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "-o", out)
    assert code == 0, err  # released: the folder is usable again


def test_a_killed_holder_leaves_no_stuck_lock(tmp_path):
    from spmlkit.io import FolderLock

    code = ("import sys, time; from spmlkit.io import FolderLock; lock = FolderLock(sys.argv[1]).acquire(); "
            "print('locked', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    with pytest.raises(Exception, match="in use"):
        FolderLock(tmp_path).acquire()
    p.send_signal(signal.SIGKILL)
    p.wait()
    FolderLock(tmp_path).acquire().release()


def test_a_failed_train_leaves_nothing_behind(yeast, tmp_path, capsys, monkeypatch):
    import spmlkit.practitioner.run_folder as run_mod

    def boom(*a, **k):
        raise ValueError("simulated failure inside training")

    monkeypatch.setattr(run_mod, "train", boom)
    with pytest.raises(ValueError):
        main(["train", str(yeast / "b"), "-m", "an", "--epochs", "1", "-o", str(tmp_path / "r")])
    assert not (tmp_path / "r").exists()


def test_stale_temporaries_are_removed_on_the_next_start(yeast, tmp_path, capsys):
    r = copy_run(yeast, tmp_path, "r")
    (r / "result.json").unlink()
    litter = [r / ".last.pt.sha256.spml-abc123.tmp", r / "model" / ".weights.pt.spml-x1.tmp"]
    for p in litter:
        p.write_text("partial")
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "2", "-o", r)
    assert code == 0, err
    assert not any(p.exists() for p in litter)


def test_memmap_estimator_scratch_stays_in_the_run_folder(yeast, tmp_path, capsys, monkeypatch):
    sys_tmp = tmp_path / "systmp"
    sys_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(sys_tmp))
    code, _, err = run(capsys, "train", yeast / "b", "-m", "role", "--param", "storage=memmap", "--epochs", "2",
                       "-o", tmp_path / "r")
    assert code == 0, err
    assert list(sys_tmp.iterdir()) == []  # nothing in the system temp folder
    assert not (tmp_path / "r" / ".spml-scratch").exists()  # and the run's own scratch is gone once it finished


def test_bench_patience_with_histograms(tmp_path, capsys):
    """--patience compacts stopped members out of the stack; the histograms follow them."""
    code, _, err = run(capsys, "bench", "--datasets", "yeast", "--methods", "an", "--lrs", "1e-1", "1e-5",
                       "--batch-sizes", "256", "--seeds", "2", "--epochs", "8", "--patience", "1",
                       "-o", tmp_path / "bench")
    assert code == 0, err  # figures included
    runs = [r for g in (tmp_path / "bench" / "groups").glob("*.json") for r in json.loads(g.read_text())["runs"]]
    for r in runs:  # one histogram per epoch the member trained, however early it stopped
        trained = len(r["val_history"]) if "val_history" in r else None
        assert 1 <= len(r["hist_unobserved_positives"]) <= 8
        if trained is not None:
            assert len(r["hist_unobserved_positives"]) == trained
    assert min(len(r["hist_unobserved_positives"]) for r in runs) < 8  # some member did stop early


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_bench_workers_die_with_a_killed_bench(tmp_path):
    env = {**os.environ, "SPML_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    p = subprocess.Popen([sys.executable, "-m", "spmlkit.cli", "bench", "--datasets", "yeast", "--methods", "an",
                          "wan", "role", "--lrs", "1e-3", "1e-4", "--batch-sizes", "8", "--seeds", "1",
                          "--epochs", "25", "--jobs", "2", "--no-figures", "-o", str(tmp_path / "bench")],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workers: list[int] = []
        deadline = time.time() + 120
        while time.time() < deadline and not (tmp_path / "bench" / "work").is_dir():
            time.sleep(0.2)
        workers = [c for c in _children(p.pid) if "spawn_main" in (Path("/proc") / str(c) / "cmdline").read_text()]
        assert workers, "no worker processes seen"
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.time() + 15
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "bench workers outlived the killed bench"
    finally:
        if p.poll() is None:
            p.kill()


def test_abandoned_bundle_builds_are_removed(tmp_path, capsys):
    """A prepare killed mid-way leaves ``.NAME.XXXX/``; the next prepare of NAME removes it
    (only when its owner process is gone)."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    from spmlkit.ownership.manifest import _write_marker

    stale = tmp_path / ".b.abc123"
    stale.mkdir()
    _write_marker(str(stale), "bundle")  # (its marker and manifest: what it holds is listed)
    (stale / ".spml-owner").write_text(dead + "\n")
    alive = tmp_path / ".b.live99"
    alive.mkdir()
    _write_marker(str(alive), "bundle")
    (alive / ".spml-owner").write_text(f"{os.getpid()}\n")
    unlisted = tmp_path / ".b.old000"  # no manifest: left (issue 49: nothing removed for a marker alone)
    unlisted.mkdir()
    (unlisted / ".spml-owner").write_text(dead + "\n")
    assert run(capsys, "prepare", "yeast", "-o", tmp_path / "b")[0] == 0
    assert not stale.exists() and alive.exists() and unlisted.exists()
    assert not (tmp_path / "b" / ".spml-owner").exists()


def test_stale_bench_temporaries_are_removed(tmp_path, capsys):
    argv = ["bench", "--datasets", "yeast", "--methods", "an", "--lrs", "1e-3", "--batch-sizes", "64",
            "--seeds", "1", "--epochs", "1", "--no-figures", "-o", tmp_path / "bench"]
    assert run(capsys, *argv)[0] == 0
    litter = tmp_path / "bench" / "groups" / ".abc.json.spml-x1y2.tmp"
    litter.write_text("{")
    assert run(capsys, *argv)[0] == 0
    assert not litter.exists()


def test_train_never_writes_into_a_folder_of_the_users(yeast, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text('{"my": "settings"}')
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "-o", mine)
    assert one_line_error(code, err) and "not a spmlkit run" in err, err
    assert (mine / "config.json").read_text() == '{"my": "settings"}'
