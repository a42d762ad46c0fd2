"""``mean_average_precision_members`` (every member of a stack scored at once, on the
scores' device) equals :func:`mean_average_precision` member by member, for both ways
of counting a class without positives (issue 26: ``empty="zero"`` behaving like
``exclude`` went unnoticed, as no test had an empty class)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.metrics import mean_average_precision, mean_average_precision_members


@pytest.fixture
def with_empty_class():
    rng = np.random.default_rng(3)
    Y = rng.random((40, 6)) < 0.3
    Y[:, 2] = False  # no positive: AP undefined
    Y[0, :] = True
    Y[0, 2] = False
    scores = torch.from_numpy(rng.normal(size=(3, 40, 6)).astype(np.float32))
    return Y, scores


@pytest.mark.parametrize("empty", ["exclude", "zero"])
def test_members_equal_the_reference_per_member(with_empty_class, empty):
    Y, scores = with_empty_class
    got = mean_average_precision_members(Y, scores, empty=empty)
    want = [mean_average_precision(Y, s.numpy(), empty=empty).map for s in scores]
    assert got == pytest.approx(want, rel=1e-5)


def test_zero_counts_the_empty_class_as_zero(with_empty_class):
    Y, scores = with_empty_class
    exclude = mean_average_precision_members(Y, scores, empty="exclude")
    zero = mean_average_precision_members(Y, scores, empty="zero")
    L, n_empty = Y.shape[1], 1
    assert zero == pytest.approx([e * (L - n_empty) / L for e in exclude], rel=1e-5)
    assert all(z < e for z, e in zip(zero, exclude))


def test_no_class_with_a_positive_is_nan_when_excluded():
    Y = np.zeros((5, 3), bool)
    scores = torch.zeros(2, 5, 3)
    assert all(np.isnan(v) for v in mean_average_precision_members(Y, scores, empty="exclude"))
    assert mean_average_precision_members(Y, scores, empty="zero") == [0.0, 0.0]
