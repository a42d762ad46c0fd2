"""Interruptions: a real `spml train` subprocess killed with SIGKILL mid-run resumes from
its checkpoint and ends bit for bit where an uninterrupted run ends; a finished run is
not retrained; global random generators are part of the checkpoint."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from spmlkit.cli import main
from spmlkit.config import TrainConfig
from spmlkit.data import MultiLabelDataset, Split, prepare_bundle
from spmlkit.training.checkpoint import load_checkpoint
from tests.helpers import SRC


def make_bundle(path, n=400, d=16, L=6):
    rng = np.random.default_rng(0)
    W = rng.normal(size=(d, L))
    X = rng.normal(size=(n, d)).astype(np.float32)
    Y = (X @ W + rng.normal(size=(n, L))) > 1.5
    Y[~Y.any(1), 0] = True
    return prepare_bundle(MultiLabelDataset("kr", [f"l{i}" for i in range(L)], {"train": Split(X=X, Y=Y)}), path,
                          log=lambda m: None)


def comparable(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "seconds"}  # wall-clock time is the only difference


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path):
    bundle = make_bundle(tmp_path / "b")
    args = ["train", str(bundle.path), "-m", "an", "--epochs", "6", "--lr", "0.01", "--batch-size", "4"]
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "SPML_NO_PROGRESS": "1"}
    killed = tmp_path / "killed"
    cmd = [sys.executable, "-m", "spmlkit.cli", *args, "-o", str(killed)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (killed / "last.pt.sha256").exists():  # a checkpoint exists: epoch 1 is done
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)  # the process is inside epoch 2 (or writing its files)
    proc.wait()
    proc.stderr.close()
    epochs_done = len((killed / "metrics.jsonl").read_text().splitlines())
    assert 1 <= epochs_done < 6 and not (killed / "result.json").exists()  # really killed mid-run

    assert main([*args, "-o", str(killed)]) == 0  # started again (in this process, to save a start-up)

    assert main([*args, "-o", str(tmp_path / "full")]) == 0  # uninterrupted, same seed
    full, resumed = (json.loads((d / "result.json").read_text()) for d in (tmp_path / "full", killed))
    assert comparable(resumed) == comparable(full)  # exact equality, floats included
    assert resumed["epochs_run"] == 6
    wf = load_checkpoint(tmp_path / "full" / "model" / "weights.pt")
    wk = load_checkpoint(killed / "model" / "weights.pt")
    assert all(torch.equal(wf["state"][k], wk["state"][k]) for k in wf["state"])  # bit for bit
    mf = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    mk = [json.loads(x) for x in (killed / "metrics.jsonl").read_text().splitlines()]
    assert [(r["epoch"], r["train_loss"], r["val_score"]) for r in mk] == \
        [(r["epoch"], r["train_loss"], r["val_score"]) for r in mf]


def test_finished_run_is_not_retrained(toy_bundle, tmp_path, capsys):
    args = ["train", str(toy_bundle.path), "--epochs", "2", "-o", str(tmp_path / "r")]
    assert main(args) == 0
    first = capsys.readouterr().out
    files = {p: p.stat().st_mtime_ns for p in (tmp_path / "r").rglob("*") if p.is_file()}
    assert main(args) == 0
    again = capsys.readouterr().out
    assert "already finished" in again and "not retraining" in again
    assert first.splitlines()[0] in again  # the same result reprinted
    assert {p: p.stat().st_mtime_ns for p in files} == files  # nothing rewritten
    assert main([*args, "--no-resume"]) == 0 and "already finished" not in capsys.readouterr().out
    assert main(["train", str(toy_bundle.path), "--epochs", "3", "-o", str(tmp_path / "r")]) == 2
    assert "different configuration" in capsys.readouterr().err


def test_global_random_state_is_checkpointed(toy_bundle, tmp_path, monkeypatch):
    """A component drawing from torch's global generator continues after a resume exactly
    as in an uninterrupted run (the random state is part of last.pt)."""
    import spmlkit.training.linear as linear
    import spmlkit.training.prepare as prepare
    from spmlkit.methods.base import Component, Method

    class Dropout(Component):  # randomly ignores entries: uses the global torch generator
        def modify_loss(self, loss, batch, logits, observed):
            return loss * (torch.rand(loss.shape) > 0.3)

    monkeypatch.setattr(prepare, "build_method", lambda name, **p: Method("an", "an", components=[Dropout()]))
    cfg = TrainConfig(method="an", epochs=5, lr=0.01)
    (full,) = linear.train_linear(toy_bundle, cfg, run_dir=tmp_path / "full")
    linear.train_linear(toy_bundle, cfg.replace(epochs=2), run_dir=tmp_path / "part")  # "killed" after epoch 2
    (resumed,) = linear.train_linear(toy_bundle, cfg, run_dir=tmp_path / "part")
    assert resumed.val_history == full.val_history and resumed.test_map == full.test_map


def test_kill_between_first_checkpoint_and_its_checksum_is_recoverable(tmp_path, monkeypatch):
    """The first checkpoint of a run: a kill right after the checkpoint is renamed into place
    (before the checksum file is finalised) must leave a loadable pair."""
    import spmlkit.ownership as sio
    import spmlkit.training.checkpoint as ck

    tmp_path = sio.claim(tmp_path / "run", "run")  # (spmlkit writes only into folders it made)
    real = sio.write_bytes

    def write_then_die(path, data):
        real(path, data)
        if str(path).endswith(".pt"):
            raise KeyboardInterrupt  # the process dies right after the checkpoint's rename

    p = tmp_path / "last.pt"
    monkeypatch.setattr(sio, "write_bytes", write_then_die)
    with pytest.raises(KeyboardInterrupt):
        ck.save_checkpoint({"epoch": 1}, p)
    monkeypatch.setattr(sio, "write_bytes", real)
    assert p.exists() and ck.load_checkpoint(p)["epoch"] == 1
