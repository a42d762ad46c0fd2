"""Fixtures of the command tests."""
import csv

import numpy as np
import pytest


@pytest.fixture
def toy_csv(tmp_path):
    """A small fully labelled CSV: 150 rows, features f1..f4, labels a, b, c (the last 3 columns)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    Y = (X[:, :3] + rng.normal(scale=0.3, size=(150, 3))) > 0
    Y[~Y.any(1), 0] = True
    p = tmp_path / "toy.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["f1", "f2", "f3", "f4", "a", "b", "c"])
        for x, y in zip(X, Y.astype(int)):
            w.writerow([*map(float, x), *y])
    return p
