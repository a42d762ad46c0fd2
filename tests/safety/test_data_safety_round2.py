"""Data safety, round two (issue 22): nothing of the user's is deleted, truncated or
written into; every damaged or tampered file ends in one line naming it (exit 2); what
used to be accepted silently (tampered arrays, NaN weights, reordered CSV columns, ...)
is refused.  Each test fails on the code before issue 22."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from spmlkit.cli import main
from tests.helpers.owned import spmlkit_wrote


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return code == 2 and len(lines) == 1 and lines[0].startswith("spml: error:") and "Traceback" not in err


def ends_in_one_error(code, err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return (code == 2 and lines and lines[-1].startswith("spml: error:") and "Traceback" not in err
            and sum(ln.startswith("spml: error:") for ln in lines) == 1)


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def user_folder(path: Path) -> dict:
    path.mkdir(parents=True, exist_ok=True)
    (path / "table.md").write_text("my table\n")
    (path / "runs.csv").write_text("mine,1\n")
    (path / ".draft.tmp").write_text("draft\n")
    return snapshot(path)


def set_checksum(path: Path) -> None:
    path.with_name(path.name + ".sha256").write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "\n")


@pytest.fixture(scope="module")
def yeast(tmp_path_factory):
    root = tmp_path_factory.mktemp("round2")
    assert main(["prepare", "yeast", "-o", str(root / "b")]) == 0
    assert main(["train", str(root / "b"), "-m", "an", "--epochs", "2", "-o", str(root / "run")]) == 0
    return root


def copy_bundle(yeast, tmp_path) -> Path:
    dst = tmp_path / "b"
    shutil.copytree(yeast / "b", dst)
    return dst


# ----------------------------------------------------------------------------- data losses
BENCH = ["bench", "--datasets", "yeast", "--methods", "an", "--lrs", "1e-3", "--batch-sizes", "64", "--seeds", "1",
         "--epochs", "1", "--no-figures"]


@pytest.mark.parametrize("command", ["bench", "analyze", "diagnose"])
def test_output_folders_of_the_user_are_refused(yeast, tmp_path, capsys, command):
    mine = tmp_path / "F"
    before = user_folder(mine)
    argv = {"bench": BENCH,
            "analyze": ["analyze", "li-confidence-histogram", yeast / "b", "--epochs", "1"],
            "diagnose": ["diagnose", yeast / "b", yeast / "run"]}[command]
    code, _, err = run(capsys, *argv, "-o", mine)
    assert one_line_error(code, err) and "refusing to write into" in err, err
    assert snapshot(mine) == before  # nothing overwritten, nothing deleted (.draft.tmp too), nothing added


def test_analyze_refuses_the_filesystem_root(yeast, capsys):
    code, _, err = run(capsys, "analyze", "li-confidence-histogram", yeast / "b", "--epochs", "1", "-o", "/")
    assert one_line_error(code, err), err


def test_outputs_are_still_written_into_their_own_folders(yeast, tmp_path, capsys):
    out = tmp_path / "diag"
    for _ in range(2):  # a second diagnose into its own folder is fine
        code, _, err = run(capsys, "diagnose", yeast / "b", yeast / "run", "-o", out)
        assert code == 0, err
    assert (out / "diagnostics.json").is_file()
    legacy = tmp_path / "legacy"  # a diagnostics folder written before the marker existed
    shutil.copytree(out, legacy)
    (legacy / ".spml-output.json").unlink()
    assert run(capsys, "diagnose", yeast / "b", yeast / "run", "-o", legacy)[0] == 0


def test_estimator_save_refuses_a_folder_of_the_users(tmp_path):
    from spmlkit import SPMLClassifier
    from spmlkit.errors import ConfigError

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), np.array(["a", "b", "c"])[rng.integers(0, 3, 40)]
    clf = SPMLClassifier("an", epochs=1).fit(X, y)
    mine = tmp_path / "mine"
    before = user_folder(mine)
    with pytest.raises(ConfigError, match="not a spmlkit model"):
        clf.save(mine)
    assert snapshot(mine) == before
    clf.save(tmp_path / "m")
    clf.save(tmp_path / "m")  # replacing its own model is fine
    assert SPMLClassifier.load(tmp_path / "m").classes_.tolist() == ["a", "b", "c"]


@pytest.mark.parametrize("link", ["symlink", "hardlink", "foreign"])
def test_lock_file_never_truncates_what_is_not_ours(yeast, tmp_path, capsys, link):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "RUN"
    run_dir.mkdir()
    lock = run_dir / ".spml.lock"
    if link == "symlink":
        lock.symlink_to(victim)
    elif link == "hardlink":
        os.link(victim, lock)
    else:
        lock.write_text("my notes, not a lock\n")
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "-o", run_dir)
    assert one_line_error(code, err) and ".spml.lock" in err, err
    assert victim.read_text() == "precious\n"
    if link == "foreign":
        assert lock.read_text() == "my notes, not a lock\n"


def test_lock_file_of_a_killed_run_is_reused(yeast, tmp_path, capsys):
    run_dir = tmp_path / "RUN"
    run_dir.mkdir()
    (run_dir / ".spml.lock").write_text("pid 999999\n")  # what a killed holder leaves
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "-o", run_dir)
    assert code == 0, err


def test_prepare_never_removes_a_folder_that_appeared_while_it_ran(tmp_path, capsys, monkeypatch):
    import spmlkit.data.bundle as bundle_mod

    out = tmp_path / "X"
    real = bundle_mod.observe

    def observe_while_the_user_creates_the_folder(*a, **k):
        out.mkdir()
        (out / "mine.txt").write_text("mine\n")
        return real(*a, **k)

    monkeypatch.setattr(bundle_mod, "observe", observe_while_the_user_creates_the_folder)
    code, _, err = run(capsys, "prepare", "yeast", "-o", out)
    assert ends_in_one_error(code, err) and "appeared" in err, err
    assert (out / "mine.txt").read_text() == "mine\n"
    assert [p.name for p in tmp_path.iterdir()] == ["X"]  # no build folder, no lock file left


def test_concurrent_prepares_to_one_folder(tmp_path, capsys):
    from spmlkit.io import FolderLock

    out = tmp_path / "X"
    with FolderLock(out, lock_file=tmp_path / ".X.spml.lock", remove=True):  # a prepare holding it
        code, _, err = run(capsys, "prepare", "yeast", "-o", out)
    assert ends_in_one_error(code, err) and "in use by another spml process" in err, err
    assert not out.exists()
    assert run(capsys, "prepare", "yeast", "-o", out)[0] == 0
    assert not (tmp_path / ".X.spml.lock").exists()


def test_overwrite_refuses_when_the_source_is_inside_the_bundle(yeast, tmp_path, capsys):
    b = copy_bundle(yeast, tmp_path)
    src = b / "mydata.csv"
    rng = np.random.default_rng(0)
    rows = ["f1,f2,l1,l2"] + [f"{rng.normal():.3f},{rng.normal():.3f},{i % 2},{(i + 1) % 2}" for i in range(60)]
    src.write_text("\n".join(rows) + "\n")
    before = src.read_bytes()
    code, _, err = run(capsys, "prepare", src, "--label-columns", "l1,l2", "-o", b, "--overwrite")
    assert one_line_error(code, err) and "lies inside" in err, err
    assert src.read_bytes() == before and (b / "meta.json").exists()


def test_abandoned_build_folders_of_other_bundles_are_removed(tmp_path, capsys):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    from spmlkit.ownership.manifest import _write_marker

    stale = tmp_path / ".other.abc123"  # a build of another bundle in the same folder, its process gone
    stale.mkdir()
    _write_marker(str(stale), "bundle")  # (a build of this version: its marker and manifest)
    (stale / ".spml-owner").write_text(f"{dead}\nflock\n")
    reused = tmp_path / ".third.def456"  # the owner's pid is alive (reused) but nobody holds the lock
    reused.mkdir()
    _write_marker(str(reused), "bundle")
    (reused / ".spml-owner").write_text(f"{os.getpid()}\nflock\n")
    unlisted = tmp_path / ".fourth.ghi789"  # no manifest: nothing in it is known to be spmlkit's (issue 49)
    unlisted.mkdir()
    (unlisted / ".spml-owner").write_text(f"{dead}\nflock\n")
    assert run(capsys, "prepare", "yeast", "-o", tmp_path / "b")[0] == 0
    assert not stale.exists() and not reused.exists() and (unlisted / ".spml-owner").exists()


# ----------------------------------------------------------------------------- tracebacks
@pytest.mark.parametrize("how", ["object", "duplicated", "float", "short"])
def test_index_arrays_go_through_the_checked_reader(yeast, tmp_path, capsys, how):
    b = copy_bundle(yeast, tmp_path)
    p = b / "test" / "index.npy"
    idx = np.load(p)
    if how == "object":
        with open(p, "wb") as fh:
            np.save(fh, np.array([None] * len(idx), dtype=object), allow_pickle=True)
    elif how == "duplicated":
        np.save(p, np.zeros_like(idx))
    elif how == "short":
        np.save(p, idx[:-1])
    else:
        np.save(p, idx.astype(np.float64))
    if how != "object":  # tampered consistently (checksum updated): the content checks refuse it
        meta = json.loads((b / "meta.json").read_text())
        meta["checksums"]["test/index.npy"] = hashlib.sha256(p.read_bytes()).hexdigest()
        (b / "meta.json").write_text(json.dumps(meta))
    code, _, err = run(capsys, "predict", yeast / "run", b, "-o", tmp_path / "p.csv")
    assert one_line_error(code, err) and "index.npy" in err, err
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("checksums", ["updated", "absent"])
def test_labels_that_are_not_bool_are_refused(yeast, tmp_path, capsys, checksums):
    b = copy_bundle(yeast, tmp_path)
    p = b / "test" / "Y.values.npy"  # full labels of 3 where 1 is stored (a bool matrix has no values)
    np.save(p, np.full(np.load(b / "test" / "Y.indices.npy").shape, 3.0))
    meta = json.loads((b / "meta.json").read_text())  # tampered consistently: the dtype check refuses it
    if checksums == "absent":
        meta.pop("checksums")
    else:
        meta["checksums"]["test/Y.values.npy"] = hashlib.sha256(p.read_bytes()).hexdigest()
    (b / "meta.json").write_text(json.dumps(meta))
    code, out, err = run(capsys, "evaluate", yeast / "run", b)
    # (without checksums the bundle is refused before any array is read: issue 33 made them mandatory)
    why = "test/Y." if checksums == "updated" else "records no checksums"
    assert one_line_error(code, err) and why in err and "mAP" not in out, err


def test_empty_separator_is_one_line(tmp_path, capsys):
    src = tmp_path / "d.csv"
    src.write_text("f1,tags\n" + "".join(f"{i},a;b\n" for i in range(30)))
    code, _, err = run(capsys, "prepare", src, "--label-set-column", "tags", "--separator", "", "-o", tmp_path / "o")
    assert one_line_error(code, err) and "--separator" in err, err
    from spmlkit.data.formats.tabular import read_table
    from spmlkit.errors import DataFormatError

    with pytest.raises(DataFormatError, match="separator"):
        read_table(src, label_set_column="tags", separator="")


MALFORMED = {"empty": {}, "list": [1, 2], "epoch_text": {"epoch": "abc"}, "tensor": torch.zeros(3),
             "no_learner": {"epoch": 1, "method": {}, "tracker": {}},
             "negative_epoch": {"epoch": -5, "learner": {}, "method": {}, "tracker": {}},
             "epoch_beyond": {"epoch": 9, "learner": {}, "method": {}, "tracker": {}}}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_checkpoints_on_resume_and_diagnose(yeast, tmp_path, capsys, name):
    r = tmp_path / "R"
    shutil.copytree(yeast / "run", r)
    (r / "result.json").unlink()  # unfinished: resuming reads last.pt
    torch.save(MALFORMED[name], r / "last.pt")
    set_checksum(r / "last.pt")
    code, out, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "2", "-o", r)
    assert one_line_error(code, err) and "last.pt" in err and "--no-resume" in err, err
    assert "epoch 8/3" not in out + err
    if name != "epoch_beyond":  # diagnose reads any run's checkpoint (no epoch count to compare with)
        code, _, err = run(capsys, "diagnose", yeast / "b", r, "-o", tmp_path / "d")
        assert one_line_error(code, err) and "last.pt" in err, err


def test_checkpoint_state_that_does_not_fit_the_run(yeast, tmp_path, capsys):
    r = tmp_path / "R"
    shutil.copytree(yeast / "run", r)
    (r / "result.json").unlink()
    state = torch.load(r / "last.pt", weights_only=True)
    state["learner"] = {"model": {}, "optimizer": {}}
    torch.save(state, r / "last.pt")
    set_checksum(r / "last.pt")
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "2", "-o", r)
    assert ends_in_one_error(code, err) and "does not fit this run" in err and "--no-resume" in err, err
    assert run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "2", "-o", r, "--no-resume")[0] == 0


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "B"
    assert main([str(a) for a in [*BENCH, "-o", out]]) == 0
    return out


@pytest.mark.parametrize("name", ["empty", "tensor", "negative_epoch"])
def test_malformed_bench_work_checkpoint(bench, tmp_path, capsys, name):
    b = tmp_path / "B"
    shutil.copytree(bench, b)
    (group,) = (b / "groups").glob("*.json")
    work = b / "work" / group.stem
    work.mkdir(parents=True)
    torch.save(MALFORMED[name], work / "last.pt")
    set_checksum(work / "last.pt")
    spmlkit_wrote(b, "bench", work / "last.pt", work / "last.pt.sha256")  # (someone else's would not be read)
    group.unlink()  # unfinished again: the bench resumes from its work folder
    code, _, err = run(capsys, *BENCH, "-o", b)
    assert ends_in_one_error(code, err) and "last.pt" in err and "--no-resume" in err, err


@pytest.mark.parametrize("content", [{"format": 1, "runs": "x"}, [], {"format": 1, "runs": [1]},
                                     {"format": 1, "runs": [{"dataset": "yeast"}]}, b"not gzip", b"\x1f\x8b\x08"])
def test_damaged_runs_json_is_one_line(bench, tmp_path, capsys, content):
    """The bench's record (``runs.json.gz``): wrong contents, bytes that are no gzip
    archive, a truncated archive: one line naming the file."""
    import gzip

    b = tmp_path / "B"
    shutil.copytree(bench, b)
    data = content if isinstance(content, bytes) else gzip.compress(json.dumps(content).encode())
    (b / "runs.json.gz").write_bytes(data)
    code, _, err = run(capsys, "figures", b)
    assert one_line_error(code, err) and "runs.json.gz" in err, err


@pytest.mark.parametrize("content", [[], {"key": 1, "runs": []}, {"key": {}, "runs": [{"lr": "x"}]}])
def test_damaged_group_record_is_trained_again(bench, tmp_path, capsys, content):
    b = tmp_path / "B"
    shutil.copytree(bench, b)
    (group,) = (b / "groups").glob("*.json")
    good = json.loads(group.read_text())
    group.write_text(json.dumps(content))
    code, _, err = run(capsys, *BENCH, "-o", b)
    assert code == 0 and "training this group again" in err, err
    assert json.loads(group.read_text())["runs"][0]["val_score"] == good["runs"][0]["val_score"]


# ----------------------------------------------------------------------- silent wrong accepts
def test_bench_refuses_a_folder_that_is_not_its_own_but_resumes_its_own(bench, tmp_path, capsys):
    b = tmp_path / "B"
    shutil.copytree(bench, b)
    (b / ".spml-output.json").unlink()  # a bench folder written before the marker: its groups/ tell
    assert run(capsys, *BENCH, "-o", b)[0] == 0


@pytest.mark.parametrize("command, target", [
    ("diagnose", "bench"), ("analyze", "bench"), ("bench", "diagnostics"), ("bench", "forged")])
def test_output_folders_of_another_kind_or_owner_are_refused(yeast, bench, tmp_path, capsys, command, target):
    """A folder spmlkit wrote for another command (its marker names another kind), or one
    whose marker spmlkit did not write, is not this command's: refused in one line before
    anything is written, every file as it was."""
    folder = tmp_path / "T"
    if target == "bench":
        shutil.copytree(bench, folder)
    elif target == "diagnostics":
        assert run(capsys, "diagnose", yeast / "b", yeast / "run", "-o", folder)[0] == 0
    else:  # the user's files, with a marker that names the right kind but not spmlkit as its writer
        user_folder(folder)
        (folder / ".spml-output.json").write_text(json.dumps({"written_by": "me", "kind": "bench"}))
    before = snapshot(folder)
    argv = {"bench": BENCH,
            "analyze": ["analyze", "li-confidence-histogram", yeast / "b", "--epochs", "1"],
            "diagnose": ["diagnose", yeast / "b", yeast / "run"]}[command]
    code, _, err = run(capsys, *argv, "-o", folder)
    assert one_line_error(code, err) and "refusing to write into" in err, err
    assert snapshot(folder) == before


@pytest.mark.parametrize("edit", ["nan", "int", "duplicate_label"])
def test_damaged_saved_models_are_refused(yeast, tmp_path, capsys, edit):
    r = tmp_path / "R"
    shutil.copytree(yeast / "run", r)
    m = r / "model"
    if edit == "duplicate_label":
        meta = json.loads((m / "model.json").read_text())
        meta["label_names"][1] = meta["label_names"][0]
        (m / "model.json").write_text(json.dumps(meta))
    else:
        w = torch.load(m / "weights.pt", weights_only=True)
        key = next(iter(w["state"]))
        w["state"][key] = (w["state"][key] * float("nan") if edit == "nan" else w["state"][key].to(torch.int64))
        torch.save(w, m / "weights.pt")
        set_checksum(m / "weights.pt")
    code, _, err = run(capsys, "predict", r, yeast / "b", "-o", tmp_path / "p.csv")
    assert one_line_error(code, err), err
    assert not (tmp_path / "p.csv").exists()


def _scores(yeast, tmp_path, dtype=np.float64):
    from spmlkit.data import Bundle

    b = Bundle(yeast / "b")
    S = np.random.default_rng(0).random((b.size("train"), b.n_labels)).astype(dtype)
    p = tmp_path / "scores.npy"
    np.save(p, S)
    return p


def test_complex_pseudo_scores_are_refused(yeast, tmp_path, capsys):
    p = _scores(yeast, tmp_path, np.complex128)
    code, _, err = run(capsys, "train", yeast / "b", "-m", "vlpl", "--pseudo-scores", p, "--epochs", "1",
                       "-o", tmp_path / "R")
    assert one_line_error(code, err) and "real numbers" in err, err


def test_a_csv_as_pseudo_scores_is_one_plain_line(yeast, tmp_path, capsys):
    p = tmp_path / "scores.csv"
    p.write_text("a,b\n1,2\n")
    code, _, err = run(capsys, "train", yeast / "b", "-m", "vlpl", "--pseudo-scores", p, "--epochs", "1",
                       "-o", tmp_path / "R")
    assert one_line_error(code, err) and "allow_pickle" not in err and "scores.csv" in err, err


def test_pseudo_scores_changed_in_place_make_another_run(yeast, tmp_path, capsys):
    p = _scores(yeast, tmp_path)
    argv = ["train", yeast / "b", "-m", "vlpl", "--pseudo-scores", p, "--epochs", "1", "-o", tmp_path / "R"]
    assert run(capsys, *argv)[0] == 0
    np.save(p, 1.0 - np.load(p))  # same path, other content
    code, out, err = run(capsys, *argv)
    assert code == 2 and "different configuration" in err, out + err  # not "already finished"


def test_estimator_refuses_one_class_and_too_few_rows(tmp_path):
    from spmlkit import SPMLClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    with pytest.raises(ValueError, match="one class"):
        SPMLClassifier("an", epochs=1).fit(X, np.array(["cat"] * 30))
    with pytest.raises(ValueError, match="at least 3"):
        SPMLClassifier("an", epochs=1).fit(X[:2], np.array(["cat", "dog"]))
    SPMLClassifier("an", epochs=1, classes=["cat", "dog"]).fit(X, np.array(["cat"] * 30))  # vocabulary given


def _write_csv(path, names, X):
    path.write_text(",".join(names) + "\n" + "".join(",".join(f"{v:.7g}" for v in row) + "\n" for row in X))


def test_predict_matches_csv_columns_by_name(yeast, tmp_path, capsys):
    meta = json.loads((yeast / "b" / "meta.json").read_text())
    names = meta["feature_names"]
    X = np.load(yeast / "b" / "test" / "X.npy")[:25]
    assert json.loads((yeast / "run" / "model" / "model.json").read_text())["input"]["feature_names"] == names
    _write_csv(tmp_path / "ok.csv", names, X)
    perm = np.random.default_rng(1).permutation(len(names))
    _write_csv(tmp_path / "perm.csv", [names[i] for i in perm], X[:, perm])
    assert run(capsys, "predict", yeast / "run", tmp_path / "ok.csv", "-o", tmp_path / "a.csv")[0] == 0
    assert run(capsys, "predict", yeast / "run", tmp_path / "perm.csv", "-o", tmp_path / "b.csv")[0] == 0
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()  # reordered: same predictions
    renamed = [*names[:-1], "other"]
    _write_csv(tmp_path / "renamed.csv", renamed, X)
    code, _, err = run(capsys, "predict", yeast / "run", tmp_path / "renamed.csv", "-o", tmp_path / "c.csv")
    assert one_line_error(code, err) and "renamed.csv" in err and repr(names[-1]) in err and "'other'" in err, err
    _write_csv(tmp_path / "missing.csv", names[:-1], X[:, :-1])
    code, _, err = run(capsys, "predict", yeast / "run", tmp_path / "missing.csv", "-o", tmp_path / "c.csv")
    assert one_line_error(code, err) and f"missing {names[-1]!r}" in err, err


def test_models_saved_without_feature_names_predict_by_position_with_a_note(yeast, tmp_path, capsys):
    r = tmp_path / "R"
    shutil.copytree(yeast / "run", r)
    meta = json.loads((r / "model" / "model.json").read_text())
    meta["input"].pop("feature_names")
    (r / "model" / "model.json").write_text(json.dumps(meta))
    names = json.loads((yeast / "b" / "meta.json").read_text())["feature_names"]
    _write_csv(tmp_path / "x.csv", [f"c{i}" for i in range(len(names))], np.load(yeast / "b" / "test" / "X.npy")[:5])
    code, _, err = run(capsys, "predict", r, tmp_path / "x.csv", "-o", tmp_path / "p.csv")
    assert code == 0 and "by position" in err, err


# ------------------------------------------------------------------------------------ other
def test_a_run_resumes_whatever_the_spelling_of_the_bundle_path(yeast, tmp_path, capsys, monkeypatch):
    r = tmp_path / "R"
    shutil.copytree(yeast / "run", r)
    monkeypatch.chdir(yeast)
    code, out, _ = run(capsys, "train", "b", "-m", "an", "--epochs", "2", "-o", r)
    assert code == 0 and "already finished" in out
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "train", os.path.relpath(yeast / "b"), "-m", "an", "--epochs", "2", "-o", "R")
    assert code == 0 and "already finished" in out


def test_a_bench_that_fails_validation_leaves_nothing(yeast, tmp_path, capsys):
    bad = tmp_path / "scores.npy"
    np.save(bad, np.zeros((3, 3)))  # the wrong shape: refused once the group starts
    out = tmp_path / "B"
    code, _, err = run(capsys, "bench", "--datasets", yeast / "b", "--methods", "vlpl", "--lrs", "1e-3",
                       "--batch-sizes", "64", "--seeds", "1", "--epochs", "1", "--no-figures",
                       "--pseudo-scores", bad, "-o", out)
    assert ends_in_one_error(code, err), err
    assert not out.exists()


def test_non_regular_sources_are_refused(tmp_path, capsys):
    code, _, err = run(capsys, "prepare", "/dev/zero", "--format", "csv", "--label-columns", "a", "-o", tmp_path / "o")
    assert one_line_error(code, err) and "/dev/zero" in err and "regular" in err, err
    from spmlkit.data.formats.tabular import read_table
    from spmlkit.errors import DataFormatError

    with pytest.raises(DataFormatError, match="not a regular file"):
        read_table("/dev/zero", label_columns=["a"])


def test_yaml_config_error_is_one_line(yeast, tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("lr: [1\nepochs: 2\n")
    code, _, err = run(capsys, "train", yeast / "b", "--config", cfg, "-o", tmp_path / "R")
    assert one_line_error(code, err) and "c.yaml, line" in err, err


def test_nan_in_a_feature_cache_names_the_file(yeast, tmp_path, capsys):
    b = copy_bundle(yeast, tmp_path)
    d = b / "features" / "fake"
    d.mkdir(parents=True)
    for s in ("train", "val", "test"):
        X = np.array(np.load(b / s / "X.npy"))
        if s == "train":
            X[3, 2] = np.nan
        np.save(d / f"{s}.npy", X)
    from tests.helpers.owned import seal_feature_cache

    seal_feature_cache(d)  # (the checksums spml features records: NaN is written, not a damage)
    code, _, err = run(capsys, "train", b, "-m", "an", "--epochs", "1", "--feature-set", "fake", "-o", tmp_path / "R")
    assert one_line_error(code, err) and "train.npy" in err and "row 4, column 3" in err, err


def test_dangling_output_symlink_is_named(tmp_path, capsys):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "nowhere")
    code, _, err = run(capsys, "prepare", "yeast", "-o", link)
    assert one_line_error(code, err) and str(link) in err and ".out." not in err, err


def test_a_full_disk_names_the_file(yeast, tmp_path, capsys, monkeypatch):
    import errno

    real = Path.write_bytes

    def full(self, data):
        if self.name.startswith(".config.json."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a real write: no file name
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "-o", tmp_path / "R")
    assert one_line_error(code, err) and "config.json" in err and "output:" not in err, err


def test_concurrent_features_runs_are_refused(tmp_path, capsys):
    from tests.helpers.image_fixtures import tiny_digits_bundle

    from spmlkit.io import FolderLock

    b = tiny_digits_bundle(tmp_path).path
    with FolderLock(b, what="bundle"):  # what a running 'spml features' holds
        code, _, err = run(capsys, "features", b, "--backbone", "tiny-random", "--image-size", "32")
    assert one_line_error(code, err) and "in use by another spml process" in err, err
    assert not (b / "features").exists()


def test_finetune_only_options_are_noted_in_the_linear_setting(yeast, tmp_path, capsys):
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "1", "--compile", "--freeze-bn",
                       "-o", tmp_path / "R")
    assert code == 0 and "--compile and --freeze-bn apply to fine-tuning" in err, err


@pytest.mark.parametrize("content", [[], {"best_epoch": "x"}, "text"])
def test_damaged_result_json_is_one_line(yeast, tmp_path, capsys, content):
    r = tmp_path / "R"
    shutil.copytree(yeast / "run", r)
    (r / "result.json").write_text(json.dumps(content))
    code, _, err = run(capsys, "train", yeast / "b", "-m", "an", "--epochs", "2", "-o", r)
    assert one_line_error(code, err) and "result.json" in err and "--no-resume" in err, err


def test_metrics_lines_that_are_not_records_are_ignored(tmp_path):
    from spmlkit.io import read_jsonl

    p = tmp_path / "m.jsonl"
    p.write_text('{"epoch": 1}\n[1, 2]\n{"epoch": 2}\n')
    assert read_jsonl(p) == [{"epoch": 1}]
