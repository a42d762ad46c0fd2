"""Shared fixtures.  ``../shared/data`` (next to the repository) holds real datasets;
tests that need it skip cleanly when it is absent (override with SPMLKIT_SHARED_DATA)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO
from tests.helpers.factories import make_presence_only_dataset, make_toy_dataset
from tests.helpers.trained import trained_models

os.environ.setdefault("SPML_NO_PROGRESS", "1")
# libgomp's threads spin while waiting for work; on a CPU shared with other processes the
# spinning threads steal the cores and small operations get ~10x slower (docs/scale.md).
# Set before torch is imported (libgomp reads it when it loads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

SHARED_DATA = Path(os.environ.get("SPMLKIT_SHARED_DATA", REPO.parent / "shared" / "data"))

if "mutmut" in sys.modules:  # under benchmarks/mutation.py (mutmut runs pytest in its own process)
    # a mutant is killed by the first failing example: shrinking it to a smaller one (tens of
    # seconds of re-runs per killed mutant on a loaded machine) changes no verdict.  Loaded before the test
    # modules import their settings (tests/twins/strategies.py), which then inherit it.
    from hypothesis import Phase, settings

    settings.register_profile("mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("mutation")


@pytest.fixture(autouse=True)
def _cpu_unless_marked_gpu(request, monkeypatch):
    """The ordinary suite runs on the CPU even on a machine with a GPU (issue 28, item 8):
    its equality tests compare with CPU-exact numbers, and ``device="auto"`` would pick
    CUDA there.  Only tests marked ``gpu`` (tests/devices/test_gpu.py) see CUDA.  In this process
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


@pytest.fixture
def presence_bundle(tmp_path):
    from spmlkit.data import prepare_bundle

    return prepare_bundle(make_presence_only_dataset(), tmp_path / "toy-po", log=lambda m: None)


@pytest.fixture
def toy_bundle(tmp_path):
    from spmlkit.data import prepare_bundle

    return prepare_bundle(make_toy_dataset(), tmp_path / "toy", log=lambda m: None)


@pytest.fixture
def small_registry(monkeypatch):
    """A dataset registry of one built-in set, one data-root set and one that fails to load
    (``spml datasets`` and ``data.registry.dataset_rows``)."""
    from spmlkit.data import registry as R
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.errors import ConfigError
    from spmlkit.registry import Registry

    def builtin(data_root=None):
        Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=bool)
        return MultiLabelDataset("tiny", ["a", "b", "c"], {"train": Split(X=np.zeros((4, 5)), Y=Y),
                                                           "test": Split(X=np.zeros((2, 5)), Y=Y[:2])},
                                 notes=["official split", "dropped 1 row without labels"])

    def broken(data_root=None):
        raise ConfigError("dataset 'gone' is not built in; looked for gone/ under " + "x" * 80)

    reg = Registry("dataset", package=None)
    reg.add("tiny", R.DatasetSpec("tiny", builtin, "features", True, "a tiny set"), owner=builtin)
    reg.add("gone", R.DatasetSpec("gone", broken, "images", False, "a data-root set"), owner=broken)
    monkeypatch.setattr(R, "DATASETS", reg)
    monkeypatch.delenv("SPMLKIT_DATA", raising=False)
    return R


@pytest.fixture(scope="session")
def trained():
    """A model trained on a toy bundle with full labels, and one on observed labels only
    (the tests of tests/practitioner read them and change nothing, so they are trained once;
    tests/cli/test_evaluate.py and test_predict.py have a ``trained`` run folder of their own).
    Cached per process (tests/helpers/trained.py), so mutation testing's forked children share them."""
    return trained_models()
