"""Shared fixtures.  ``../shared/data`` (next to the repository) holds real datasets;
tests that need it skip cleanly when it is absent (override with SPMLKIT_SHARED_DATA)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("SPML_NO_PROGRESS", "1")
# libgomp's threads spin while waiting for work; on a CPU shared with other processes the
# spinning threads steal the cores and small operations get ~10x slower (docs/scale.md).
# Set before torch is imported (libgomp reads it when it loads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SPMLKIT_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _cpu_unless_marked_gpu(request, monkeypatch):
    """The ordinary suite runs on the CPU even on a machine with a GPU (issue 28, item 8):
    its equality tests compare with CPU-exact numbers, and ``device="auto"`` would pick
    CUDA there.  Only tests marked ``gpu`` (tests/test_gpu.py) see CUDA.  In this process
    CUDA is reported absent (what ``device.resolve_device`` and the distributed helpers
    ask); subprocesses started by a test (the CLI, torchrun) inherit
    ``CUDA_VISIBLE_DEVICES=""`` and see no GPU either.  Tests that fake a GPU patch these
    functions again themselves."""
    if request.node.get_closest_marker("gpu") is not None:
        yield
        return
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    yield


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def yeast_bundle(tmp_path_factory):
    from spmlkit.data import load_dataset, prepare_bundle

    return prepare_bundle(load_dataset("yeast"), tmp_path_factory.mktemp("b") / "yeast", log=lambda m: None)


def make_toy_dataset(n=120, d=6, L=5, seed=0, with_test=True):
    """A small learnable multi-label problem: labels are thresholded linear functions."""
    from spmlkit.data import MultiLabelDataset, Split

    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d, L))

    def make(m):
        X = rng.normal(size=(m, d)).astype(np.float32)
        Y = (X @ W + rng.normal(scale=0.3, size=(m, L))) > 0.8
        Y[~Y.any(1), 0] = True
        return Split(X=X, Y=Y)

    splits = {"train": make(n)}
    if with_test:
        splits["test"] = make(n // 2)
    return MultiLabelDataset("toy", [f"l{i}" for i in range(L)], splits, source="toy")


def make_presence_only_dataset(n=120, n_background=80, d=6, L=5, seed=0):
    """The toy problem as presence-only data (issue 24): one observed positive per training
    example, ``n_background`` background rows (no observed label), a test split whose
    last label is surveyed on half of the examples only (a label mask)."""
    from spmlkit.data import MultiLabelDataset, Split

    toy = make_toy_dataset(n=n, d=d, L=L, seed=seed)
    rng = np.random.default_rng(seed + 1)
    tr, te = toy.splits["train"], toy.splits["test"]
    Z = np.zeros((n + n_background, L), np.int8)
    Z[np.arange(n), [rng.choice(np.flatnonzero(y)) for y in tr.Y]] = 1
    X = np.concatenate([tr.X, rng.normal(size=(n_background, d)).astype(np.float32)])
    mask = np.ones_like(te.Y)
    mask[: len(te.Y) // 2, -1] = False
    return MultiLabelDataset("toy-po", list(toy.label_names), {"train": Split(X=X, Z=Z),
                                                                "test": Split(X=te.X, Y=te.Y, mask=mask)},
                             source="toy-po", background=True)


@pytest.fixture
def presence_bundle(tmp_path):
    from spmlkit.data import prepare_bundle

    return prepare_bundle(make_presence_only_dataset(), tmp_path / "toy-po", log=lambda m: None)


@pytest.fixture
def toy_bundle(tmp_path):
    from spmlkit.data import prepare_bundle

    return prepare_bundle(make_toy_dataset(), tmp_path / "toy", log=lambda m: None)
