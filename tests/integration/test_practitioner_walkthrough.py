"""The walkthrough of docs/practitioner.md on the shared COCO images: a CSV of image paths
with one label each -> bundle -> features -> trained model -> label sets for new images.

``spml features`` (the images extension) is stood in for by a tiny PIL thumbnail
extractor with the same interface, written into the bundle the way ``spml features``
writes its cache; everything else is the real command line."""
import csv
import importlib.util

import numpy as np
import pytest

from spmlkit.cli import main
from tests.helpers import REPO


def thumbnails(paths, *, backbone, image_size, **options):
    """Stand-in extractor: a 4x4 RGB thumbnail and an 8-bin grey histogram."""
    from PIL import Image

    assert backbone == "thumbnail"
    out = []
    for p in paths:
        with Image.open(p) as im:
            im.draft("RGB", (image_size, image_size))
            im = im.convert("RGB").resize((4, 4))
            a = np.asarray(im, dtype=np.float32) / 255
        hist = np.histogram(a.mean(-1), bins=8, range=(0, 1))[0] / 16
        out.append(np.concatenate([a.ravel(), hist]))
    return np.stack(out).astype(np.float32)


@pytest.mark.slow
def test_walkthrough_on_shared_coco(shared_data, tmp_path, capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("make_csv", REPO / "examples" / "make_coco_single_label_csv.py")
    make_csv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_csv)
    own = tmp_path / "my_coco"
    assert make_csv.main(["--data-root", str(shared_data), "-o", str(own)]) == 0
    rows = list(csv.reader(open(own / "train.csv")))
    assert rows[0] == ["path", "label"] and len(rows) > 150 and all(len(r) == 2 for r in rows)

    def spml(*argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    out = spml("prepare", own / "train.csv", "--observed", "--path-column", "path", "--label-column", "label",
               "--label-names", own / "labels.txt", "--val-file", own / "val_full.csv", "-o", tmp_path / "bundle")
    assert "80 labels" in out and "full labels in: val" in out

    # what `spml features bundle` does: one cache per split + how it was made
    from spmlkit.data import Bundle
    from spmlkit.io import save_npy, write_json

    b = Bundle(tmp_path / "bundle")
    for split in ("train", "val", "test"):
        save_npy(b.path / "features" / "thumb" / f"{split}.npy",
                 thumbnails(b.paths(split), backbone="thumbnail", image_size=64))
    write_json(b.path / "features" / "thumb" / "meta.json", {"backbone": "thumbnail", "image_size": 64})
    from tests.helpers.owned import seal_feature_cache

    seal_feature_cache(b.path / "features" / "thumb")  # (the checksums spml features records)

    out = spml("train", tmp_path / "bundle", "--feature-set", "thumb", "-m", "an", "--epochs", 5, "--lr", "0.01",
               "-o", tmp_path / "run")
    assert "validation map" in out and "observed labels only" in out  # val file: mAP; test split: observed
    assert (tmp_path / "run" / "report.md").exists() and (tmp_path / "run" / "curves.png").exists()

    monkeypatch.setattr("spmlkit.features.extract_image_features", thumbnails)
    out = spml("predict", tmp_path / "run", own / "new_images.csv", "--labels", "--min-labels", 1,
               "-o", tmp_path / "labels.csv")
    got = list(csv.reader(open(tmp_path / "labels.csv")))
    new = [r[0] for r in list(csv.reader(open(own / "new_images.csv")))[1:]]
    names = set((own / "labels.txt").read_text().split("\n"))
    assert got[0] == ["id", "labels"] and [r[0] for r in got[1:]] == new
    assert all(r[1] and set(r[1].split(";")) <= names for r in got[1:])
    # the README's rule without full labels: k labels per new image
    spml("predict", tmp_path / "run", own / "new_images.csv", "--labels", "--threshold-rule", "expected_k",
         "--k", 3, "-o", tmp_path / "labels3.csv")
    got = list(csv.reader(open(tmp_path / "labels3.csv")))[1:]
    assert got and all(len(r[1].split(";")) == 3 and set(r[1].split(";")) <= names for r in got)
