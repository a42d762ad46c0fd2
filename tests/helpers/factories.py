"""Factories shared by the tests: small learnable datasets (the ``toy_bundle`` and
``presence_bundle`` fixtures of ``tests/conftest.py`` prepare them into bundles)."""
from __future__ import annotations

import numpy as np


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
