"""benchmarks/disdat.py --val-block-folds: the validation rows are whole spatial blocks (fold 1
of the balanced block folds of spatial_splits), records and background alike; the rest
trains; the test split is untouched; bad input is one line, exit 2.  And auto_table.py
names the split a record was validated on."""
from __future__ import annotations

import argparse
import importlib.util
import sys

import numpy as np
import pytest

from spmlkit.data.dataset import MultiLabelDataset, Split
from spmlkit.data.spatial_splits import block_cells, block_folds
from tests.helpers import REPO


def _load(name: str, file: str):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / file)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return mod


disdat = _load("bench_disdat", "disdat.py")


def dataset(seed: int, n_rec: int, n_bg: int, L: int = 3) -> MultiLabelDataset:
    rng = np.random.default_rng(seed)
    n = n_rec + n_bg
    species = np.concatenate([rng.integers(0, L, n_rec), -np.ones(n_bg, dtype=np.int64)])
    Z = np.zeros((n, L), dtype=np.int8)
    Z[np.arange(n_rec), species[:n_rec]] = 1
    xy = rng.normal(size=(n, 2)) * np.array([3.0, 1.0])
    xy[: n_rec // 2] = np.round(xy[: n_rec // 2])  # ties: records on the same spots
    train = Split(X=rng.normal(size=(n, 2)).astype(np.float32), Z=Z, ids=[f"r{i}" for i in range(n)], xy=xy)
    test = Split(X=np.zeros((2, 2), dtype=np.float32), Y=np.eye(2, L, dtype=bool), ids=["t0", "t1"])
    return MultiLabelDataset(name="tiny", label_names=list("abc")[:L], splits={"train": train, "test": test},
                             notes=["read"], background=True)


@pytest.mark.parametrize("seed,n_rec,n_bg,blocks", [(0, 40, 60, 4), (1, 1, 0, 3), (2, 0, 5, 2), (3, 120, 30, 10),
                                                    (4, 7, 7, 1)])
def test_whole_blocks_validate_the_rest_trains(seed, n_rec, n_bg, blocks):
    ds = dataset(seed, n_rec, n_bg)
    tr = ds.splits["train"]
    out = disdat.block_fold_validation(ds, blocks)
    held = block_folds(tr.xy, disdat.record_species(tr.Z), 5, blocks, 0) == 0
    assert out.splits["val"].ids == [i for i, h in zip(tr.ids, held) if h]
    assert out.splits["train"].ids == [i for i, h in zip(tr.ids, held) if not h]
    # whole blocks: no grid cell has rows on both sides
    cx, cy = block_cells(tr.xy, blocks)
    cell = cx * blocks + cy
    assert not set(cell[held]) & set(cell[~held])
    # the rows keep their features, observations and places
    rows = np.flatnonzero(held)
    assert np.array_equal(out.splits["val"].Z, tr.Z[rows]) and np.array_equal(out.splits["val"].xy, tr.xy[rows])
    assert out.splits["test"] is ds.splits["test"]
    assert out.notes[:-1] == ["read"] and f"{blocks}x{blocks} grid" in out.notes[-1]
    assert set(ds.splits) == {"train", "test"}  # the input dataset is left as it was


def test_each_species_spread_over_the_folds():
    """Records clumped by species in space: fold 1 still holds some of every species."""
    ds = dataset(5, 300, 100)
    tr = ds.splits["train"]
    sp = disdat.record_species(tr.Z)
    tr.xy[sp >= 0] += sp[sp >= 0, None] * 10.0  # each species in its own area
    val = disdat.block_fold_validation(ds, 10).splits["val"]
    got = disdat.record_species(val.Z)
    assert set(got[got >= 0]) == {0, 1, 2}


def test_record_species_and_refusals():
    Z = np.array([[0, 1, 0], [0, 0, 0], [1, 0, 0]], dtype=np.int8)
    assert disdat.record_species(Z).tolist() == [1, -1, 0]
    with pytest.raises(SystemExit) as e:
        disdat.record_species(np.array([[1, 1, 0]], dtype=np.int8))
    assert e.value.code == 2
    ds = dataset(0, 10, 10)
    ds.splits["val"] = ds.splits["train"]
    with pytest.raises(SystemExit) as e:
        disdat.block_fold_validation(ds, 4)
    assert e.value.code == 2
    ds = dataset(0, 10, 10)
    ds.splits["train"].xy = None
    with pytest.raises(SystemExit) as e:
        disdat.block_fold_validation(ds, 4)
    assert e.value.code == 2


@pytest.mark.parametrize("vb,vf,expect", [(None, None, "random 20% of the rows"),
                                          (5, None, "spatial blocks (5x5, 20% of the occupied cells)"),
                                          (None, 10, "fold 1 of 5 balanced folds of whole blocks (10x10 grid)")])
def test_auto_table_names_the_split(vb, vf, expect):
    auto_table = _load("bench_auto_table", "auto_table.py")
    args = argparse.Namespace(lrs="1e-3", seeds="0", epochs=1, mlp_epochs=1, batch_size=8, hidden=4, view="records",
                              selection="target_group_auc", val_blocks=vb, val_block_folds=vf)
    assert auto_table.split_of(disdat.grid_line(args)) == expect
    assert auto_table.split_of(None) == "?"


def test_auto_table_shows_commands_as_typed_in_the_repository():
    auto_table = _load("bench_auto_table", "auto_table.py")
    run = f"{sys.executable} /elsewhere/wt/x/benchmarks/disdat.py --methods '' --out /elsewhere/wt/x/benchmarks/r/d"
    assert auto_table.rel(run) == "python benchmarks/disdat.py --methods '' --out benchmarks/r/d"
    assert auto_table.rel("python benchmarks/a.py --data /data/disdat") == "python benchmarks/a.py --data /data/disdat"
