"""Refit after selection (spmlkit.practitioner.refit, ``spml train --refit``): the choices
read from a run, the merged training rows, and the refitted run end to end."""
from __future__ import annotations

import json

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.data.memory import ArrayBundle
from spmlkit.practitioner import refit
from tests.helpers.cli import one_line_error, run_cli


def test_chosen_members_keep_positive_weights_stacked_by_head_kind_as_the_recipe_stacks_them():
    record = {"lr": 1e-3, "best_epoch": 9, "notes": {"members": [
        {"method": "a", "head": "mlp", "lr": 0.01, "best_epoch": 4, "weight": 0.5},
        {"method": "b", "head": "linear", "lr": 0.001, "best_epoch": 7, "weight": 0.3},
        {"method": "c", "head": "mlp", "lr": 0.01, "best_epoch": 2, "weight": 0.0},
        {"method": "d", "head": "mlp", "lr": 0.001, "best_epoch": 25, "weight": 0.2}]}}
    got = refit.chosen_members(record, TrainConfig(method="auto"))
    assert [(m["method"], m["head"], m["lr"], m["epochs"], m["weight"]) for m in got] == [
        ("a", "mlp", 0.01, 4, 0.5), ("d", "mlp", 0.001, 25, 0.2), ("b", "linear", 0.001, 7, 0.3)]


def test_chosen_members_of_a_single_method_run_are_its_lr_and_best_epoch():
    cfg = TrainConfig(method="full-weighted", head="mlp", params={"lambda2": 0.5})
    (m,) = refit.chosen_members({"lr": 0.01, "best_epoch": 12, "notes": {}}, cfg)
    assert (m["method"], m["head"], m["lr"], m["epochs"], m["params"]) == ("full-weighted", "mlp", 0.01, 12,
                                                                           cfg.params)


def test_merged_training_is_training_then_validation_rows_with_their_background():
    rng = np.random.default_rng(0)
    Z = np.zeros((9, 2), dtype=np.int8)
    Z[[0, 3], 0] = 1
    Z[[1, 6], 1] = 1  # rows 2, 4, 5, 7, 8: background
    X = rng.normal(size=(9, 3)).astype(np.float32)
    b = ArrayBundle(X[:5], Z[:5], X_val=X[5:8], Z_val=Z[5:8], X_test=X[8:], Z_test=Z[8:])
    m = refit.merged_training(b)
    assert m.size("train") == 8 and m.size("val") == 0 and m.size("test") == 1
    np.testing.assert_array_equal(m.features("train"), X[:8])
    np.testing.assert_array_equal(np.asarray(m.observations("train").dense()), Z[:8])
    assert m.meta["background_rows"] == 4


@pytest.fixture
def po_bundle(tmp_path, capsys):
    pytest.importorskip("rasterio")
    from tests.helpers.rasters import located_records, make_stack, write_records

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", located_records(20))
    assert run_cli(capsys, "prepare", rec, "--rasters", env, "--background-points", "60", "-o", tmp_path / "b")[0] == 0
    return tmp_path / "b"


def test_presence_only_train_refits_by_default_on_train_and_val_and_keeps_the_validated_model(po_bundle, tmp_path,
                                                                                             capsys):
    from spmlkit.data import Bundle
    from spmlkit.practitioner.evaluation import model_features
    from spmlkit.practitioner.saved import load_model

    args = ("-m", "an", "--epochs", 3, "--lr", "0.01", "--seed", 3)
    code, out, err = run_cli(capsys, "train", po_bundle, *args, "-o", tmp_path / "run")
    assert code == 0, err
    run = tmp_path / "run"
    rec = json.loads((run / "refit.json").read_text())
    result = json.loads((run / "result.json").read_text())
    b = Bundle(po_bundle)
    assert rec["rows"] == {"train": b.size("train"), "val": b.size("val")}
    assert rec["members"] == [{"method": "an", "head": "linear", "lr": 0.01, "epochs": result["best_epoch"],
                               "weight": 1.0}]
    refitted, selected = load_model(run), load_model(run / "selected_model")
    X = model_features(refitted, b, "test")
    assert not np.allclose(refitted.decision_function(X), selected.decision_function(X))  # trained on more rows
    stored = json.loads((run / "sdm_metrics.json").read_text())
    assert stored["thresholds"]["Aus alpha"]["max_tss"]["on"] == "train+val" and "refit" in stored
    # the same choices trained again by hand on train + val: the refitted model (seeded)
    from spmlkit.training.run import train

    cfg = TrainConfig(method="an", epochs=result["best_epoch"], lr=0.01, seed=3, selection="last")
    (again,) = train(refit.merged_training(b), cfg, keep_state=True)
    for k, v in refitted.state.items():
        np.testing.assert_allclose(np.asarray(v), np.asarray(again.state["head"][k]), rtol=1e-6, atol=1e-7)
    # started again: nothing trains, nothing is refitted twice
    code, out, _ = run_cli(capsys, "train", po_bundle, *args, "-o", run)
    assert code == 0 and "already refitted" in out
    # evaluate scores validation with the validated model, as train stored it
    ev = json.loads(run_cli(capsys, "evaluate", run, po_bundle, "--json")[1])
    assert ev["sdm"]["species"] == stored["species"]


def test_no_refit_keeps_the_validated_model_and_refit_without_validation_is_one_line(po_bundle, tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", po_bundle, "-m", "an", "--epochs", 2, "--no-refit", "-o", tmp_path / "r")
    assert code == 0, err
    assert not (tmp_path / "r" / "refit.json").exists() and not (tmp_path / "r" / "selected_model").exists()
    from tests.helpers.rasters import located_records, write_records

    rec = write_records(tmp_path / "r2.csv", located_records(20))
    assert run_cli(capsys, "prepare", rec, "--rasters", tmp_path / "env", "--background-points", "60",
                   "--val-fraction", "0", "-o", tmp_path / "b0")[0] == 0
    code, _, err = run_cli(capsys, "train", tmp_path / "b0", "-m", "an", "--refit", "-o", tmp_path / "r0")
    assert code == 2 and "no validation split" in one_line_error(err) and not (tmp_path / "r0").exists()
