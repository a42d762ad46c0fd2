import json
from pathlib import Path

import numpy as np
from PIL import Image

from tests.helpers.image_fixtures import tiny_digits


def test_labels_are_the_digits_present(tmp_path):
    from sklearn.datasets import load_digits

    ds = tiny_digits(tmp_path)
    folder = Path(ds.source)
    info = json.loads((folder / "labels.json").read_text())
    target = load_digits().target
    for split in ("train", "val", "test"):
        Y = ds.splits[split].Y
        rows = info["splits"][split]
        assert len(rows) == len(Y) == len(ds.splits[split].paths)
        for y, row in zip(Y, rows):
            assert 2 <= len(row["sources"]) <= 4
            assert set(np.flatnonzero(y)) == {int(target[s]) for s in row["sources"]}
    assert ds.label_names == [str(d) for d in range(10)]


def test_source_digits_disjoint_between_splits(tmp_path):
    ds = tiny_digits(tmp_path)
    info = json.loads((Path(ds.source) / "labels.json").read_text())
    used = {s: {src for row in info["splits"][s] for src in row["sources"]} for s in ("train", "val", "test")}
    pools = {s: set(info["pools"][s]) for s in used}
    assert not pools["train"] & pools["test"] and not pools["train"] & pools["val"] and not pools["val"] & pools["test"]
    assert sum(map(len, pools.values())) == 1797
    for s in used:
        assert used[s] <= pools[s]


def test_deterministic_and_cached(tmp_path):
    a = tiny_digits(tmp_path / "a")
    b = tiny_digits(tmp_path / "b")
    for pa, pb in zip(a.splits["train"].paths, b.splits["train"].paths):
        assert np.array_equal(np.asarray(Image.open(pa)), np.asarray(Image.open(pb)))
    assert np.array_equal(a.splits["test"].Y, b.splits["test"].Y)
    mtime = Path(a.splits["train"].paths[0]).stat().st_mtime_ns
    again = tiny_digits(tmp_path / "a")  # reused, not re-rendered
    assert again.splits["train"].paths == a.splits["train"].paths
    assert Path(a.splits["train"].paths[0]).stat().st_mtime_ns == mtime
    other = tiny_digits(tmp_path / "a", seed=1)  # other parameters: another folder
    assert other.source != a.source


def test_canvas_shows_the_digits(tmp_path):
    ds = tiny_digits(tmp_path)
    img = np.asarray(Image.open(ds.splits["train"].paths[0]))
    assert img.shape == (32, 32, 3) and img.dtype == np.uint8
    assert img.max() > 100 and np.median(img) < 60  # bright strokes on a dark background


def test_registered_as_builtin_image_dataset():
    from spmlkit.data import DATASETS

    spec = DATASETS["digits"]
    assert spec.builtin and spec.kind == "images"
