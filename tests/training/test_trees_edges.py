"""One booster's rounds at their edges (spmlkit.training.trees.train_booster): the
validation margins added tree by tree equal the whole booster's margins at every round
(the plain twin: predict with every tree so far), and the booster returned holds exactly
the rounds up to the best one, whose margins are the best round's."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.methods.base import TrainContext, build_method

pytest.importorskip("xgboost")

from spmlkit.training import trees  # noqa: E402
from spmlkit.training.tree_objective import TreeObjective  # noqa: E402


def _objective(n=60, L=3, D=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)).astype(np.float32)
    Z = np.zeros((n, L), dtype=np.int8)
    Z[np.arange(n), (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)] = 1
    m = build_method("an")
    ctx = TrainContext(n_train=n, n_labels=L, observed=Z)
    m.setup(ctx)
    return X, TreeObjective(m, ctx, Z, dtype=torch.float32)


@pytest.mark.parametrize("peak", [1, 3, 6])
def test_incremental_validation_margins_and_the_best_rounds_booster(peak):
    X, obj = _objective()
    X_val = np.random.default_rng(1).normal(size=(17, X.shape[1])).astype(np.float32)
    seen = []

    def evaluate(margins):  # a score that peaks at round `peak`, whatever the margins
        seen.append(margins[0].numpy().copy())
        r = len(seen)
        return [float(-abs(r - peak))]

    booster, icept, history, best = trees.train_booster(X, obj, X_val=X_val, evaluate=evaluate, seed=0, rounds=10,
                                                        patience=2)
    assert best == peak and len(history) == min(peak + 2, 10)
    assert booster.num_boosted_rounds() == peak
    # the twin: the same run without validation (deterministic under its seed) has the same trees;
    # each round's margins are those of every tree so far, predicted whole
    every, *_ = trees.train_booster(X, obj, X_val=None, evaluate=None, seed=0, rounds=len(seen))
    for r, got in enumerate(seen, 1):
        np.testing.assert_allclose(got, trees.predict_margins(every[:r], icept, X_val), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(trees.predict_margins(booster, icept, X_val), seen[peak - 1], rtol=1e-5, atol=1e-5)
