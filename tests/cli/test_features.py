"""The practitioner's image path through the CLI: a CSV of image paths with one label each ->
bundle -> features -> linear model / fine-tuned model -> label probabilities for new images."""
import csv
import json

import numpy as np
import pytest

from spmlkit.cli import main

from tests.helpers.image_fixtures import tiny_digits


@pytest.fixture
def csv_of_single_labels(tmp_path):
    ds = tiny_digits(tmp_path / "cache", n_train=40, n_val=4, n_test=10)
    rng = np.random.default_rng(0)
    path = tmp_path / "images.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["path", "label"])
        for p, y in zip(ds.splits["train"].paths, ds.splits["train"].Y):
            w.writerow([p, str(rng.choice(np.flatnonzero(y)))])  # one (true) label per image
    return path, ds.splits["test"].paths


@pytest.mark.slow
def test_csv_of_image_paths_to_label_probabilities(tmp_path, csv_of_single_labels, capsys):
    table, new_images = csv_of_single_labels
    b = tmp_path / "bundle"
    assert main(["prepare", str(table), "--path-column", "path", "--label-set-column", "label", "--observed",
                 "-o", str(b)]) == 0
    assert main(["features", str(b), "--backbone", "tiny-random", "--image-size", "32", "--batch-size", "8"]) == 0
    assert "tiny-random-32" in capsys.readouterr().out
    run = tmp_path / "run-linear"
    assert main(["train", str(b), "--feature-set", "tiny-random-32", "--epochs", "3", "-o", str(run)]) == 0
    # new images: a folder, predicted through the same backbone (the model remembers how features were made)
    folder = tmp_path / "new"
    folder.mkdir()
    for i, p in enumerate(new_images):
        (folder / f"img{i:02d}.png").write_bytes(open(p, "rb").read())
    out = tmp_path / "pred.csv"
    assert main(["predict", str(run), str(folder), "-o", str(out)]) == 0
    rows = list(csv.reader(open(out)))
    assert rows[0][0] == "id" and len(rows[0]) == 11 and len(rows) == 1 + len(new_images)
    assert all(0.0 <= float(v) <= 1.0 for r in rows[1:] for v in r[1:])
    # fine-tuning from the same bundle, then prediction from a .txt list of paths
    ft = tmp_path / "run-ft"
    assert main(["train", str(b), "--setting", "finetune", "--backbone", "tiny-random", "--image-size", "32",
                 "--finetune-epochs", "1", "--lr", "1e-3", "-o", str(ft)]) == 0
    meta = json.loads((ft / "model" / "model.json").read_text())
    assert meta["image"]["backbone"] == "tiny-random" and meta["info"]["selection"] == "observed_map"
    lst = tmp_path / "list.txt"
    lst.write_text("".join(f"{p}\n" for p in new_images))
    out2 = tmp_path / "pred2.csv"
    assert main(["predict", str(ft), str(lst), "-o", str(out2)]) == 0
    assert len(list(csv.reader(open(out2)))) == 1 + len(new_images)


def test_features_on_a_feature_bundle_is_a_clear_error(toy_bundle, capsys):
    assert main(["features", str(toy_bundle.path)]) == 2
    assert "feature vectors, not images" in capsys.readouterr().err


def test_resnet50_without_weights_via_cli(tmp_path, capsys):
    from tests.helpers.image_fixtures import tiny_digits_bundle

    b = tiny_digits_bundle(tmp_path)
    assert main(["features", str(b.path), "--backbone", "resnet50"]) == 2
    assert "--weights PATH" in capsys.readouterr().err
