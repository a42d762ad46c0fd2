"""What a new user trips over (issue 15, items 1 and 5): each check failed before its fix."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from spmlkit.cli import main

ENV = {**{k: v for k, v in os.environ.items() if k != "SPML_NO_PROGRESS"}, "OMP_NUM_THREADS": "1"}


def spml(*argv, cwd=None, env=ENV, timeout=300):
    return subprocess.run([sys.executable, "-m", "spmlkit", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_python_dash_m_and_help_without_torch():
    """``python -m spmlkit`` works, and --help/--version do not import torch (3.8 s before)."""
    code = ("import sys; from spmlkit.cli import build_parser; build_parser(); "
            "print('torch' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "False", p.stderr
    p = spml("--version")
    assert p.returncode == 0 and p.stdout.startswith("spmlkit ")


def test_progress_lines_and_resume_message_when_not_a_terminal(tmp_path):
    """stderr is a pipe here: a line per epoch (not a hidden bar), and a resumed run says so."""
    assert spml("prepare", "yeast", "-o", tmp_path / "b").returncode == 0
    p = spml("train", tmp_path / "b", "-m", "an", "--epochs", "3", "-o", tmp_path / "r")
    assert p.returncode == 0, p.stderr
    assert "an on yeast: epoch 1/3" in p.stderr and "epoch 3/3" in p.stderr
    (tmp_path / "r" / "result.json").unlink()  # as if killed after the last checkpoint
    p = spml("train", tmp_path / "b", "-m", "an", "--epochs", "3", "-o", tmp_path / "r")
    assert p.returncode == 0 and "resuming" in p.stderr and "after epoch 3" in p.stderr, p.stderr


def test_linear_training_uses_one_thread_by_default(toy_bundle, monkeypatch):
    import torch

    from spmlkit.config import TrainConfig
    from spmlkit.training import linear

    seen = []
    real = linear._train_linear

    def spy(*a, **k):
        seen.append(torch.get_num_threads())
        return real(*a, **k)

    monkeypatch.setattr(linear, "_train_linear", spy)
    before = torch.get_num_threads()
    linear.train_linear(toy_bundle, TrainConfig(epochs=1))
    linear.train_linear(toy_bundle, TrainConfig(epochs=1, threads=2))
    assert seen == [1, 2] and torch.get_num_threads() == before  # restored afterwards


def test_missing_model_says_not_found(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((1, 3), np.float32))
    code = main(["predict", str(tmp_path / "runs" / "nope"), str(tmp_path / "x.npy"), "-o", str(tmp_path / "p.csv")])
    assert code == 2 and "not found" in capsys.readouterr().err


def test_demo_takeaway_and_no_temp_folder_left(tmp_path, monkeypatch, capsys):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["demo", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "Takeaway:" in out and "Next:" in out and "held out as validation" in out
    assert list(tmp_path.iterdir()) == []  # the temporary folder is gone


def test_unknown_keywords_are_rejected():
    from spmlkit.features import extract_image_features

    with pytest.raises(TypeError, match="imagesize"):
        extract_image_features(["a.jpg"], imagesize=224)


def test_role_without_k_speaks_python_from_python(tmp_path):
    import torch

    from spmlkit.errors import ConfigError
    from spmlkit.methods import build_method
    from tests.helpers.factories import train_context

    m = build_method("role")
    with pytest.raises(ConfigError, match=r"SPMLClassifier\(expected_positives=") as e:
        m.setup(train_context(torch.zeros(4, 3)))
    assert "TrainConfig(expected_positives=" in str(e.value)


def test_table_lists_each_datasets_own_hyper_parameters():
    from spmlkit.experiments.tables import _params_lines

    runs = [{"method": "wan", "dataset": "yeast", "params": {"gamma": 1 / 13}},
            {"method": "wan", "dataset": "scene", "params": {"gamma": 0.2}},
            {"method": "an", "dataset": "yeast", "params": {}}, {"method": "an", "dataset": "scene", "params": {}}]
    text = _params_lines(runs, ["an", "wan"])
    assert "- an: none" in text
    assert "yeast: gamma=0.07692307692307693" in text and "scene: gamma=0.2" in text
