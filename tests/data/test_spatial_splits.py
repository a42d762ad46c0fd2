"""Spatial folds of presence-only rows (spmlkit.data.spatial_splits): seeded and
reproducible, whole blocks, balanced counts per species, checkerboard colours, buffers,
and the one-line refusal of a split that leaves a species too few training records."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data import spatial_splits as S
from spmlkit.errors import ConfigError


def clumped(seed=0, n_bg=400):
    """Two species with clumped records (most of species 0 in one corner) and background."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([rng.normal([2, 2], 0.5, (60, 2)), rng.uniform(0, 10, (30, 2))])
    b = rng.uniform([5, 0], [10, 10], (50, 2))
    bg = rng.uniform(0, 10, (n_bg, 2))
    xy = np.concatenate([a, b, bg])
    sp = np.concatenate([np.zeros(len(a)), np.ones(len(b)), -np.ones(n_bg)]).astype(np.int64)
    return xy, sp


def test_block_cells():
    xy = np.array([[0.0, 0.0], [10.0, 10.0], [4.9, 5.1], [5.0, 0.0]])
    cx, cy = S.block_cells(xy, 2)
    assert cx.tolist() == [0, 1, 0, 1] and cy.tolist() == [0, 1, 1, 0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_folds_are_seeded_whole_blocks_and_balanced(seed):
    xy, sp = clumped(seed)
    f = S.block_folds(xy, sp, 5, 10, seed=seed)
    assert np.array_equal(f, S.block_folds(xy, sp, 5, 10, seed=seed))  # reproducible
    assert set(f.tolist()) <= set(range(5))
    cx, cy = S.block_cells(xy, 10)
    for cell in np.unique(cx * 10 + cy):  # a block is never split between folds
        assert len(set(f[cx * 10 + cy == cell].tolist())) == 1
    for k in (0, 1):  # every species spread: no fold holds more than 40% of its records
        share = np.bincount(f[sp == k], minlength=5) / (sp == k).sum()
        assert share.max() <= 0.4, share
    # background spread too
    assert (np.bincount(f[sp < 0], minlength=5) / (sp < 0).sum()).max() <= 0.3


def test_block_folds_beat_a_random_draw_of_blocks_on_clumped_records():
    """The old rule (20% of the blocks at random) can hold most of a clumped species."""
    xy, sp = clumped(0)
    worst = max((np.bincount(S.block_folds(xy, sp, 5, 5, seed=s)[sp == 0], minlength=5)).max() for s in range(5))
    assert worst / (sp == 0).sum() < 0.7  # the 5x5 block with the clump alone holds ~2/3


def test_block_folds_need_two_folds():
    with pytest.raises(ConfigError, match="at least 2 folds"):
        S.block_folds(np.zeros((3, 2)), np.zeros(3), 1, 5)


def test_checkerboard_colours():
    xy = np.array([[0.5, 0.5], [1.5, 0.5], [0.5, 1.5], [1.5, 1.5]])
    assert S.checkerboard_folds(xy, 2).tolist() == [0, 1, 1, 0]


def test_buffer_drops_training_rows_near_held_rows():
    xy = np.array([[0.0, 0.0], [0.5, 0.0], [3.0, 0.0], [0.0, 0.99], [10.0, 10.0]])
    held = np.array([True, False, False, False, True])
    assert S.buffer_drop(xy, held, 1.0).tolist() == [False, True, False, True, False]
    assert not S.buffer_drop(xy, held, 0.0).any()


def test_spatial_split_counts_and_lines():
    xy, sp = clumped(0)
    parts, lines = S.spatial_split(xy, sp, ["Aus a", "Bus b"], blocks=10, folds=5, seed=0, spatial_test=True)
    assert set(parts) == {"train", "val", "test"}
    assert not (parts["train"] & parts["val"]).any() and not (parts["val"] & parts["test"]).any()
    assert (parts["train"] | parts["val"] | parts["test"]).all()
    n_val = int((parts["val"] & (sp == 0)).sum())
    assert f"  Aus a: train {int((parts['train'] & (sp == 0)).sum())}, val {n_val}, " in "\n".join(lines)
    again, _ = S.spatial_split(xy, sp, ["Aus a", "Bus b"], blocks=10, folds=5, seed=0, spatial_test=True)
    assert all(np.array_equal(parts[k], again[k]) for k in parts)
    other, _ = S.spatial_split(xy, sp, ["Aus a", "Bus b"], blocks=10, folds=5, seed=1, spatial_test=True)
    assert not np.array_equal(parts["val"], other["val"])  # the seed matters
    buffered, blines = S.spatial_split(xy, sp, ["Aus a", "Bus b"], blocks=10, seed=0, buffer=0.5)
    assert (buffered["train"].sum() < (~buffered["val"]).sum()) and "(buffer)" in blines[0]


def test_spatial_split_refuses_too_few_training_records_naming_the_species():
    xy, sp = clumped(0)
    with pytest.raises(ConfigError, match=r"leaves species 'Aus a' with \d+ training records of 90 \(train \d+, "
                                          r"val \d+\); at least 500 are needed"):
        S.spatial_split(xy, sp, ["Aus a", "Bus b"], blocks=10, min_records=500)
    with pytest.raises(ConfigError, match="--spatial-test needs --split blocks"):
        S.spatial_split(xy, sp, ["Aus a", "Bus b"], kind="checkerboard", spatial_test=True)
    with pytest.raises(ConfigError, match="unknown spatial split"):
        S.spatial_split(xy, sp, ["Aus a", "Bus b"], kind="random")


def test_a_species_with_most_records_held_out_is_warned():
    xy = np.array([[0.1, 0.1]] * 12 + [[9.9, 9.9]] * 13 + [[5.0, 5.0]])
    sp = np.array([0] * 25 + [-1])
    counts = S.species_counts(sp, ["Aus a"], {"train": np.arange(26) < 12, "val": np.arange(26) >= 12})
    assert counts["Aus a"] == {"train": 12, "val": 13} and counts["background"] == {"train": 0, "val": 1}
    assert S.check_training_records(counts, 10, "x") == ["warning: species 'Aus a': 12 of its 25 records train, "
                                                         "13 are held out"]
