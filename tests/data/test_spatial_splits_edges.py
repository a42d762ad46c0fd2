"""Spatial splits at their edges (spmlkit.data.spatial_splits): the buffer keeps every
training row at least ``buffer`` away from every held-out row, the test rows included
(checked against all pairwise distances); and the seeded preference between folds, so
that the largest block does not always land in fold 0, the validation fold."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data import spatial_splits as S


def _records(seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 10, (260, 2))
    sp = np.where(rng.random(260) < 0.4, -1, rng.integers(0, 2, 260))
    return xy, sp


@pytest.mark.parametrize("seed, buffer", [(0, 0.7), (1, 1.3), (2, 0.25)])
def test_no_training_row_is_within_the_buffer_of_a_validation_or_test_row(seed, buffer):
    xy, sp = _records(seed)
    parts, _ = S.spatial_split(xy, sp, ["a", "b"], blocks=4, folds=4, seed=seed, spatial_test=True, buffer=buffer,
                               min_records=1)
    held = parts["val"] | parts["test"]
    d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))  # every pair (plain twin of the k-d tree)
    near = (d[:, held] < buffer).any(1) & ~held
    assert parts["test"].any() and parts["val"].any()
    assert not (parts["train"] & near).any()
    np.testing.assert_array_equal(parts["train"], ~held & ~near)  # and only those rows are left out
    np.testing.assert_array_equal(S.buffer_drop(xy, held, buffer), near)


def test_the_largest_block_goes_to_a_seeded_fold_not_always_the_validation_fold():
    """Blocks are dealt largest first; the first one ties every fold (all empty), and the
    tie goes to the first fold of a seeded order, not always to fold 0."""
    rng = np.random.default_rng(0)
    clump = rng.uniform(0.1, 0.9, (60, 2))  # one 3x3 block holds most records
    corners = np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    rest = np.concatenate([c + rng.uniform(0.1, 0.9, (6, 2)) for c in corners])  # 6 records in four blocks
    xy = np.concatenate([clump, rest, [[0.0, 0.0], [3.0, 3.0]]])
    sp = np.zeros(len(xy), dtype=np.int64)
    folds = {int(S.block_folds(xy, sp, 3, 3, seed=s)[0]) for s in range(8)}
    assert len(folds) > 1, folds


@pytest.mark.parametrize("seed", range(4))
def test_block_cells_and_checkerboard_equal_the_point_by_point_rule(seed):
    """Each place's cell: floor((x - lo) / span x G), the maximum in the last cell, a
    constant coordinate in cell 0; its colour (col + row) mod 2; points on the edges too."""
    rng = np.random.default_rng(seed)
    G = int(rng.integers(1, 6))
    xy = np.round(rng.uniform(0, 10, (40, 2)), 1)
    if seed == 3:
        xy[:, 1] = 4.2  # a constant coordinate
    xy[:3] = [[xy[:, 0].min(), xy[:, 1].max()], [xy[:, 0].max(), xy[:, 1].min()], [5.0, 5.0]]
    lo, hi = xy.min(0), xy.max(0)
    want = []
    for x, y in xy:
        cell = []
        for v, a, b in ((x, lo[0], hi[0]), (y, lo[1], hi[1])):
            c = int((v - a) / (b - a) * G) if b > a else 0
            cell.append(min(max(c, 0), G - 1))
        want.append(cell)
    cx, cy = S.block_cells(xy, G)
    np.testing.assert_array_equal(np.column_stack([cx, cy]), np.array(want))
    np.testing.assert_array_equal(S.checkerboard_folds(xy, G), (np.array(want).sum(1)) % 2)
    counts = S.species_counts(np.array([0, 1, -1, 0] * 10), ["a", "b"], {"train": cx == 0, "val": cx != 0})
    sp = np.array([0, 1, -1, 0] * 10)
    assert counts["a"] == {"train": int(((sp == 0) & (cx == 0)).sum()), "val": int(((sp == 0) & (cx != 0)).sum())}
    assert sum(counts["background"].values()) == 10
