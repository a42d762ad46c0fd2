"""The tree objective's background pairing at its edges
(spmlkit.training.tree_objective): with more background rows than labelled rows (and not
a multiple of them), ⌈n_bg / n_labelled⌉ calls of every labelled row, so every background
row is paired, each as often as the others within one (the seeded permutation wrapped
around), and every background row's margins get a gradient."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.methods.base import TrainContext, build_method
from spmlkit.training.tree_objective import TreeObjective


@pytest.mark.parametrize("labelled, background", [(3, 7), (2, 9), (4, 4), (5, 2), (1, 1)])
@pytest.mark.parametrize("name", ["full-weighted", "an-full"])
def test_every_background_row_is_paired_evenly(name, labelled, background):
    L = 3
    n = labelled + background
    Z = np.zeros((n, L), dtype=np.int8)
    Z[np.arange(labelled), np.arange(labelled) % L] = 1
    m = build_method(name)
    ctx = TrainContext(n_train=n, n_labels=L, observed=Z, expected_positives=1.5)
    m.setup(ctx)
    torch.manual_seed(0)
    obj = TreeObjective(m, ctx, Z, seed=1)
    rows, order = obj.pairs
    assert sorted(rows.tolist()) == list(range(labelled))
    times = np.bincount(order.flatten().numpy(), minlength=n)[labelled:]
    slots = -(-background // labelled) * labelled  # ⌈n_bg / n_labelled⌉ calls of every labelled row
    assert order.shape == (slots // labelled, labelled)
    assert times.min() >= slots // background and times.max() <= -(-slots // background)  # the wrap-around: even
    assert times.min() >= 1  # every background row paired
    g = obj.gradient(np.random.default_rng(0).normal(size=(n, L)))
    assert (np.abs(g[labelled:]).sum(1) > 0).all()  # so every background row's margins move
