"""The two toy models behind the ``trained`` fixture (tests/conftest.py), built once per process.

:func:`trained_models` is cached at module level, not only in a session fixture: mutation
testing (benchmarks/mutation.py, mutmut 3) runs the covering tests once in its own process and
then forks a child per mutant, each starting a new pytest session; a session fixture would
train both models again in every child, a module-level cache is inherited by the fork.

What is cached must not depend on a module under mutation, or the cache would hide its
mutants: the bundles come from ``prepare_bundle`` and the models from the saved run folders
(weights from training, the label-set rule from ``practitioner/labelsets.py``).  Training
writes a report too (``practitioner/report.py`` and ``practitioner/evaluation.py``: the
label-set quality table); nothing here keeps or returns it.

The files live in a directory of their own (``tempfile``), not under pytest's
``tmp_path_factory``: pytest deletes all but its last three base directories when a session
starts, and every forked child starts one.  The directory is removed when the process that
made it exits (a forked child leaves it alone).
"""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import types
from pathlib import Path

import numpy as np

from tests.helpers.factories import make_toy_dataset


def _remove_if_mine(path: Path, pid: int) -> None:
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


@functools.cache
def trained_models() -> types.SimpleNamespace:
    """A model trained on a toy bundle with full labels (``full``, ``model_full``) and one on
    observed labels only (``own``, ``model_own``); read-only for the tests."""
    from spmlkit.config import TrainConfig
    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.practitioner.run_folder import run_training
    from spmlkit.practitioner.saved import load_model

    tmp = Path(tempfile.mkdtemp(prefix="spml-trained-"))
    atexit.register(_remove_if_mine, tmp, os.getpid())
    full = prepare_bundle(make_toy_dataset(), tmp / "full", log=lambda m: None)
    run_training(full, TrainConfig(method="an", epochs=2, threads=1), tmp / "run-full", log=lambda m: None)
    ds = make_toy_dataset(seed=1)
    rng = np.random.default_rng(0)
    splits = {}
    for name, s in ds.splits.items():  # one observed positive per row, no full labels
        Z = np.zeros(s.Y.shape, dtype=np.int8)
        Z[np.arange(len(Z)), [rng.choice(np.flatnonzero(y)) for y in s.Y]] = 1
        splits[name] = Split(X=s.X, Z=Z)
    own = prepare_bundle(MultiLabelDataset("own", ds.label_names, splits), tmp / "own", log=lambda m: None)
    run_training(own, TrainConfig(method="an", epochs=2, threads=1), tmp / "run-own", log=lambda m: None)
    return types.SimpleNamespace(full=full, own=own, model_full=load_model(tmp / "run-full"),
                                 model_own=load_model(tmp / "run-own"))
