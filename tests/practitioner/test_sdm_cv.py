"""Cross-validated per-species metrics (spmlkit.practitioner.sdm_cv, ``spml train --cv``):
seeded folds, per-fold values recomputed by hand, mean and sd, refusals."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers.cli import one_line_error, run_cli

pytest.importorskip("rasterio")


@pytest.fixture
def po_bundle(tmp_path, capsys):
    from tests.helpers.rasters import located_records, make_stack, write_records

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", located_records(20))
    assert run_cli(capsys, "prepare", rec, "--rasters", env, "--background-points", "80", "-o", tmp_path / "b")[0] == 0
    from spmlkit.data import Bundle

    return Bundle(tmp_path / "b")


def test_folds_are_seeded_and_spatial_folds_are_block_folds(po_bundle):
    from spmlkit.data.spatial_splits import block_folds
    from spmlkit.practitioner.sdm_cv import _first_label, cv_folds
    from spmlkit.sparse_labels import SparseLabels

    a, _ = cv_folds(po_bundle, 3, seed=4)
    b, _ = cv_folds(po_bundle, 3, seed=4)
    assert np.array_equal(a, b) and set(a) == {0, 1, 2} and len(a) == po_bundle.size("train") + po_bundle.size("val")
    f, how = cv_folds(po_bundle, 3, blocks=4, seed=1)
    Z = SparseLabels.vstack([po_bundle.observations(s) for s in ("train", "val")])
    xy = np.concatenate([po_bundle.xy("train"), po_bundle.xy("val")])
    assert np.array_equal(f, block_folds(xy, _first_label(Z), 3, 4, 1)) and "4 x 4" in how


def test_cv_per_fold_auc_is_the_fold_models_auc_and_the_mean_is_over_folds(po_bundle, tmp_path, capsys):
    from spmlkit.config import TrainConfig
    from spmlkit.practitioner.sdm_cv import _fold_bundle, cv_folds
    from spmlkit.practitioner.sdm_metrics import auc
    from spmlkit.sparse_labels import SparseLabels
    from spmlkit.training.run import train

    code, out, err = run_cli(capsys, "train", po_bundle.path, "-m", "an", "--epochs", 2, "--lr", "0.01", "--no-refit",
                             "--cv", 3, "-o", tmp_path / "run")
    assert code == 0, err and "cross-validated" in out
    cv = json.loads((tmp_path / "run" / "cv_metrics.json").read_text())
    assert cv["folds"] == 3 and cv["refit"] is False
    # fold 1 by hand: train on folds 3 (fold 2 validates), score fold 1's records against its background
    fold, _ = cv_folds(po_bundle, 3, seed=0)
    X = np.concatenate([np.asarray(po_bundle.features(s)) for s in ("train", "val")])
    Z = SparseLabels.vstack([po_bundle.observations(s) for s in ("train", "val")])
    data = _fold_bundle(X, Z, fold, 0, 3, po_bundle.label_names)
    (r,) = train(data, TrainConfig(method="an", epochs=2, lr=0.01), keep_state=True)
    logits = r.state["test_logits"]
    Zt = data.observations("test").dense()
    for k, name in enumerate(po_bundle.label_names):
        s = cv["species"][name]
        pos, bg = Zt[:, k] == 1, (Zt == 0).all(1)
        assert s["records_per_fold"][0] == int(pos.sum())
        assert s["auc"]["per_fold"][0] == pytest.approx(auc(logits[pos, k], logits[bg, k]), abs=1e-9)
        v = [x for x in s["auc"]["per_fold"] if x is not None]
        assert s["auc"]["mean"] == pytest.approx(np.mean(v)) and s["auc"]["sd"] == pytest.approx(np.std(v, ddof=1))


def test_cv_refuses_data_without_background_and_blocks_without_cv(po_bundle, toy_bundle, tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", toy_bundle.path, "-m", "an", "--cv", 3, "-o", tmp_path / "r1")
    assert code == 2 and "needs presence-only data" in one_line_error(err) and not (tmp_path / "r1").exists()
    code, _, err = run_cli(capsys, "train", po_bundle.path, "-m", "an", "--cv-blocks", 3, "-o", tmp_path / "r2")
    assert code == 2 and "goes with --cv" in one_line_error(err) and not (tmp_path / "r2").exists()
    code, _, err = run_cli(capsys, "train", po_bundle.path, "-m", "an", "--cv", 2, "-o", tmp_path / "r3")
    assert code == 2 and "at least 3 folds" in one_line_error(err) and not (tmp_path / "r3").exists()


def test_cv_of_a_refitted_run_refits_every_fold_and_spatial_folds_are_recorded(po_bundle, tmp_path, capsys):
    code, out, err = run_cli(capsys, "train", po_bundle.path, "-m", "an", "--epochs", 2, "--cv", 3, "--cv-blocks", 3,
                             "-o", tmp_path / "run")
    assert code == 0, err
    cv = json.loads((tmp_path / "run" / "cv_metrics.json").read_text())
    assert cv["refit"] is True and "3 x 3" in cv["split"] and "each refitted" in out
    for k, s in enumerate(cv["species"].values()):  # every record tests once
        n = int(po_bundle.observations("train").col_counts(1)[k] + po_bundle.observations("val").col_counts(1)[k])
        assert sum(s["records_per_fold"]) == n
        assert all(v is None or 0 <= v <= 1 for v in s["auc"]["per_fold"])
